/* SPDX-License-Identifier: MIT */
/*
 * Which addresses the gateway refuses to connect to unless the policy's
 * private_addresses allows them: the ranges an agent would aim at to reach
 * the host, its neighbours or the cloud's metadata service through a name it
 * controls (SSRF, DNS rebinding). IPv6 addresses that embed an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) are judged by the IPv4
 * address inside as well, since a translator on the path would deliver them
 * there.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Classify an address (family AF_INET with 4 bytes, or AF_INET6 with 16).
 * Returns NULL for an ordinary public address, or a short static name of
 * the special range it lies in ("loopback", "private", "link-local",
 * "metadata", ...).
 */
const char *sl_gw_addr_special(int family, const uint8_t *addr);

/*
 * The IPv4 addresses an IPv6 address carries (IPv4-mapped, SIIT, IPv4-
 * compatible, NAT64 64:ff9b::/96 and every RFC 6052 place inside
 * 64:ff9b:1::/48, 6to4, both of Teredo's): a translator or tunnel on the
 * path would deliver a packet to them. Writes at most max of them to ret;
 * returns how many it wrote (0: none embedded).
 */
size_t sl_gw_addr_embedded_v4(const uint8_t *addr16, uint8_t ret[][4], size_t max);
