// SPDX-License-Identifier: MIT
/*
 * Ranges sluice owns (cfg.owned): the sandboxes' address pool. With a
 * broad private_addresses (10.0.0.0/8) the pool is a private range the
 * policy allows, and one sandbox could reach another's listeners, or the
 * host end of any veth, through the gateway. Whatever the policy says,
 * none of them is a destination.
 */
#include <netinet/in.h>
#include <string.h>

#include "addr.h"
#include "gateway-internal.h"

static bool cidr_has(const struct sl_cidr *c, int family, const uint8_t *a)
{
	unsigned full = c->prefix / 8, rest = c->prefix % 8;

	if (c->family != family)
		return false;
	if (memcmp(c->addr, a, full) != 0)
		return false;
	return !rest || !((c->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest)));
}

static bool owned_has(const struct sl_gw *gw, int family, const uint8_t *a)
{
	size_t i;

	for (i = 0; i < gw->cfg.n_owned; i++)
		if (cidr_has(&gw->cfg.owned[i], family, a))
			return true;
	return false;
}

bool sl_gw_is_owned(const struct sl_gw *gw, const struct sockaddr *sa)
{
	const uint8_t *a6;
	uint8_t v4[8][4];
	size_t i, n;

	if (sa->sa_family == AF_INET)
		return owned_has(gw, AF_INET,
				 (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family != AF_INET6)
		return false;
	a6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (owned_has(gw, AF_INET6, a6))
		return true;
	/* ::ffff:10.231.0.2 is 10.231.0.2 to the kernel (and a NAT64 or
	 * 6to4 form is once a translator is on the path). */
	n = sl_gw_addr_embedded_v4(a6, v4, sizeof(v4) / sizeof(v4[0]));
	for (i = 0; i < n; i++)
		if (owned_has(gw, AF_INET, v4[i]))
			return true;
	return false;
}
