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
#include <stdint.h>

/*
 * Classify an address (family AF_INET with 4 bytes, or AF_INET6 with 16).
 * Returns NULL for an ordinary public address, or a short static name of
 * the special range it lies in ("loopback", "private", "link-local",
 * "metadata", ...).
 */
const char *sl_gw_addr_special(int family, const uint8_t *addr);
