/* SPDX-License-Identifier: MIT */
/*
 * What the gateway's parts share below the connections and the DNS
 * server: the policy's references, the host's own addresses, which peer
 * is the sandbox, the audit log's health and its refused-peer records,
 * listener addresses. It calls nothing above it: freeing the gateway and
 * closing every connection when the log fails are callbacks the top
 * (gateway.c) registers in struct sl_gw.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "gateway-internal.h"
#include "macro.h"
#include "route.h"

struct sl_gw_policy *sl_gw_policy_ref(struct sl_gw_policy *gp)
{
	gp->refs++;
	return gp;
}

void sl_gw_policy_unref(struct sl_gw_policy *gp)
{
	if (!gp || --gp->refs > 0)
		return;
	sl_policy_free(gp->p);
	free(gp);
}

/* Every address of every interface of the host (in the gateway's
 * namespace, the host's: the gateway never moves into the sandbox's):
 * none of them is ever a destination for the sandbox. The list is
 * replaced whole, and only once the new one is complete: a failure keeps
 * the old one rather than none. */
int sl_gw_local_load(struct sl_gw *gw)
{
	struct sockaddr_storage *local;
	struct ifaddrs *ifa, *i;
	size_t n = 0;

	if (getifaddrs(&ifa) < 0)
		return negative_errno();
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET ||
				    i->ifa_addr->sa_family == AF_INET6))
			n++;
	local = calloc(n ? n : 1, sizeof(*local));
	if (!local) {
		freeifaddrs(ifa);
		return -ENOMEM;
	}
	n = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			memcpy(&local[n++], i->ifa_addr, sizeof(struct sockaddr_in));
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(&local[n++], i->ifa_addr, sizeof(struct sockaddr_in6));
	}
	freeifaddrs(ifa);
	free(gw->local);
	gw->local = local;
	gw->n_local = n;
	return 0;
}

/*
 * Addresses come and go after start (DHCP, a new interface, a VPN): the
 * kernel tells a NETLINK_ROUTE socket subscribed to the address groups,
 * which needs no privilege, so this works in an unprivileged gateway
 * process too. The messages are not parsed: any of them (or an overrun,
 * ENOBUFS) means "read the list again". The kernel queues the message
 * before `ip addr add` returns, so draining the socket right before
 * choosing an address (sl_gw_local_sync) leaves no window in which a new
 * address is not yet known.
 */
#define NL_READS_PER_SYNC 64

void sl_gw_local_sync(struct sl_gw *gw)
{
	char buf[8192];
	bool changed = false;
	int k, r;

	if (gw->nl_fd < 0)
		return;
	for (k = 0; k < NL_READS_PER_SYNC; k++) {
		struct sockaddr_nl from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(gw->nl_fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &fl);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) {
			changed = true; /* lost some: read the whole list anyway */
			continue;
		}
		if (n <= 0)
			break;
		/* Only the kernel (port 0) speaks for the addresses. */
		if (fl == sizeof(from) && from.nl_pid == 0)
			changed = true;
	}
	/* Still more queued after NL_READS_PER_SYNC: read the list now, and
	 * the poll comes back for the rest. */
	if (!changed)
		return;
	gw->n_route_cache = 0; /* a route may have changed too */
	r = sl_gw_local_load(gw);
	if (r < 0)
		fprintf(stderr,
			"sluice gateway: the host's addresses changed and cannot be read again: %s; "
			"the previous list stays in force\n",
			strerror(-r));
}

static bool local_has(const struct sl_gw *gw, int family, const void *addr)
{
	size_t i;

	for (i = 0; i < gw->n_local; i++) {
		const struct sockaddr *l = (const struct sockaddr *)&gw->local[i];

		if (l->sa_family != family)
			continue;
		if (family == AF_INET &&
		    !memcmp(&((const struct sockaddr_in *)l)->sin_addr, addr, 4))
			return true;
		if (family == AF_INET6 &&
		    !memcmp(&((const struct sockaddr_in6 *)l)->sin6_addr, addr, 16))
			return true;
	}
	return false;
}

/* Beyond the interfaces' addresses: what the kernel itself delivers to
 * the host (a local route, AnyIP). Asked as connect() would route it; an
 * address that cannot be judged is the host's. */
static bool route_local(struct sl_gw *gw, int family, const uint8_t *addr)
{
	size_t len = family == AF_INET ? 4 : 16, i;
	int r;

	/* Asked before, since the kernel last said a route, rule or address
	 * changed (sl_gw_local_sync, which runs before every choice of an
	 * address for a new connection)? */
	for (i = 0; gw->nl_open && i < gw->n_route_cache; i++)
		if (gw->route_cache[i].family == family &&
		    !memcmp(gw->route_cache[i].addr, addr, len))
			return gw->route_cache[i].local;
	r = sl_gw_route_local(gw->rt_fd, family, addr);
	if (r < 0) {
		fprintf(stderr, "sluice gateway: cannot ask the kernel how it routes an address: %s; "
				"refused\n",
			strerror(-r));
		return true;
	}
	if (gw->nl_open) {
		/* Full: start again (the set of origins is small). */
		if (gw->n_route_cache == SL_GW_ROUTE_CACHE)
			gw->n_route_cache = 0;
		i = gw->n_route_cache++;
		gw->route_cache[i].family = family;
		memcpy(gw->route_cache[i].addr, addr, len);
		gw->route_cache[i].local = r != 0;
	}
	return r != 0;
}

bool sl_gw_is_local(struct sl_gw *gw, const struct sockaddr *sa)
{
	const uint8_t *a6;
	uint8_t v4[8][4];
	size_t i, n;

	if (sa->sa_family == AF_INET)
		return local_has(gw, AF_INET, &((const struct sockaddr_in *)sa)->sin_addr) ||
		       route_local(gw, AF_INET,
				   (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family != AF_INET6)
		return false;
	a6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	if (local_has(gw, AF_INET6, a6))
		return true;
	/* ::ffff:203.0.113.1 is 203.0.113.1 to the kernel, and a NAT64 or
	 * 6to4 form of it is too once a translator is on the path: an AAAA
	 * record written so must not reach the host. */
	n = sl_gw_addr_embedded_v4(a6, v4, sizeof(v4) / sizeof(v4[0]));
	for (i = 0; i < n; i++)
		if (local_has(gw, AF_INET, v4[i]) || route_local(gw, AF_INET, v4[i]))
			return true;
	return route_local(gw, AF_INET6, a6);
}

#define REFUSED_PER_SECOND 10

/* The IPv4 address an AF_INET peer, or an IPv4-mapped AF_INET6 one, has. */
static bool peer_v4(const struct sockaddr *sa, struct in_addr *ret)
{
	if (sa->sa_family == AF_INET) {
		*ret = ((const struct sockaddr_in *)sa)->sin_addr;
		return true;
	}
	if (sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
		memcpy(ret, &((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr[12], 4);
		return true;
	}
	return false;
}

bool sl_gw_peer_allowed(const struct sl_gw *gw, const struct sockaddr *sa)
{
	const struct sockaddr *want = (const struct sockaddr *)&gw->cfg.allowed_peer;
	struct in_addr a, b;

	if (want->sa_family == AF_UNSPEC)
		return true;
	if (!sa)
		return false;
	if (peer_v4(want, &a))
		return peer_v4(sa, &b) && a.s_addr == b.s_addr;
	return want->sa_family == AF_INET6 && sa->sa_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)want)->sin6_addr,
		       &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

/* What the rate limit kept out of the log since it was last said, as one
 * record (with the refusals' own duration, 0). */
void sl_gw_audit_refused_flush(struct sl_gw *gw, const char *event)
{
	(void)sl_audit_write_summary(gw->audit, gw->cfg.sandbox, event, 0,
				     "not-the-sandbox: %llu more not logged",
				     (unsigned long long)gw->refused_suppressed);
	gw->refused_suppressed = 0;
	(void)sl_gw_audit_ok(gw);
}

void sl_gw_audit_refused_peer(struct sl_gw *gw, const char *event, const char *client)
{
	uint64_t now = sl_audit_now_ms();
	struct sl_audit_record r = {
	    .ts_ms = now,
	    .sandbox = gw->cfg.sandbox,
	    .event = event,
	    .client = client,
	    .port = -1,
	    .status = -1,
	    .decision = "deny",
	    .reason = "not-the-sandbox",
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = 0,
	};

	if (!gw->audit)
		return;
	if (now - gw->refused_window_ms >= 1000) {
		if (gw->refused_suppressed)
			sl_gw_audit_refused_flush(gw, event);
		gw->refused_window_ms = now;
		gw->refused_in_window = 0;
	}
	if (gw->refused_in_window >= REFUSED_PER_SECOND) {
		gw->refused_suppressed++;
		return;
	}
	gw->refused_in_window++;
	(void)sl_audit_write(gw->audit, &r);
	(void)sl_gw_audit_ok(gw);
}

bool sl_gw_audit_ok(struct sl_gw *gw)
{
	int err;

	if (gw->audit_failed)
		return false;
	err = sl_audit_error(gw->audit);
	if (!err)
		return true;
	gw->audit_failed = true;
	fprintf(stderr,
		"sluice gateway: cannot write the audit log %s: %s; deciding nothing more "
		"(every connection closed, DNS refused)\n",
		sl_audit_name(gw->audit), strerror(-err));
	if (gw->fail_timer_open)
		uv_timer_start(&gw->fail_timer, gw->on_audit_failed, 0, 0);
	if (gw->cfg.audit_failed)
		gw->cfg.audit_failed(gw->cfg.audit_failed_data, err);
	return false;
}

int sl_gw_parse_listen(const char *flag, const char *addr_port, struct sockaddr_storage *ret,
		       char *err, size_t errlen)
{
	const char *host, *why = NULL;
	char ip[INET6_ADDRSTRLEN + 2];
	size_t host_len;
	uint16_t port;

	if (sl_host_split(addr_port, strlen(addr_port), &host, &host_len, &port, &why) < 0 ||
	    port == 0) {
		snprintf(err, errlen, "%s '%s': %s", flag, addr_port, why ? why : "needs ADDR:PORT");
		return -EINVAL;
	}
	if (host[0] == '[') {
		host++;
		host_len -= 2;
	}
	if (host_len >= sizeof(ip)) {
		snprintf(err, errlen, "%s '%s': not an address", flag, addr_port);
		return -EINVAL;
	}
	memcpy(ip, host, host_len);
	ip[host_len] = '\0';
	if (uv_ip4_addr(ip, port, (struct sockaddr_in *)ret) < 0 &&
	    uv_ip6_addr(ip, port, (struct sockaddr_in6 *)ret) < 0) {
		snprintf(err, errlen, "%s '%s': '%s' is not an IP address", flag, addr_port, ip);
		return -EINVAL;
	}
	return 0;
}

void sl_gw_maybe_free(struct sl_gw *gw)
{
	if (gw->maybe_free)
		gw->maybe_free(gw);
}
