/* SPDX-License-Identifier: MIT */
/*
 * How the kernel would route an address: to the host itself or not. The
 * host's interface addresses are not all it answers for: a local route
 * ("ip route add local 198.51.100.0/24 dev lo", AnyIP) delivers a whole
 * range to its own sockets, and getifaddrs() lists none of it.
 */
#pragma once

#include <stdint.h>

/* A NETLINK_ROUTE socket for sl_gw_route_local() (no privilege needed):
 * the fd, or a negative errno. */
int sl_gw_route_open(void);

/* 1: the kernel delivers addr (family AF_INET: 4 bytes, AF_INET6: 16) to
 * the host itself (a local, broadcast or anycast route); 0: it does not,
 * or has no route at all (connect() fails then); a negative errno: the
 * kernel could not be asked, which the caller must take as "local". */
int sl_gw_route_local(int fd, int family, const uint8_t *addr);
