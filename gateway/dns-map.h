/* SPDX-License-Identifier: MIT */
/*
 * What the gateway's DNS server told the sandbox: address -> name, so that
 * transparent capture can decide a connection that names no host (no SNI,
 * no Host header) by the name whose answer led the client to the address.
 *
 * Bounded: at most `max` entries; a new address beyond that pushes out the
 * one answered longest ago. An entry expires at the time its answer gave;
 * an address answered for several names keeps each of them (up to
 * SL_DNS_MAP_NAMES, the least recently answered going first), each with
 * its own expiry. Pure
 * data structure: time comes from the caller, nothing here does I/O. Not
 * thread-safe: the gateway's loop owns it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "dns-wire.h"

#define SL_DNS_MAP_NAMES 8

struct sl_dns_map;

/* max: at least 1. */
int sl_dns_map_new(size_t max, struct sl_dns_map **ret);
void sl_dns_map_free(struct sl_dns_map *m);

/* Remember that addr (AF_INET: 4 bytes, AF_INET6: 16) was answered for
 * name until expires_ms. -ENOMEM (the map is unchanged), -EINVAL. */
int sl_dns_map_put(struct sl_dns_map *m, int family, const uint8_t *addr, const char *name,
		   uint64_t expires_ms);

/* The name addr was last answered for, if that has not expired by now_ms.
 * 0, -ENOENT, -ENOBUFS (name does not fit in size), -EAFNOSUPPORT. */
int sl_dns_map_get(const struct sl_dns_map *m, int family, const uint8_t *addr, uint64_t now_ms,
		   char *name, size_t size);

/* Every name addr was answered for that has not expired by now_ms, the
 * most recently answered first, at most max of them: how many (0 for
 * none), or -EAFNOSUPPORT. */
int sl_dns_map_get_all(const struct sl_dns_map *m, int family, const uint8_t *addr,
		       uint64_t now_ms, char (*names)[SL_DNS_NAME_BUF], size_t max);

size_t sl_dns_map_size(const struct sl_dns_map *m);
