/* SPDX-License-Identifier: MIT */
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

void sl_gw_config_defaults(struct sl_gw_config *c)
{
	*c = (struct sl_gw_config){
		.sandbox = "sluice",
		.connect_timeout_ms = 10000,
		.idle_timeout_ms = 300000,
		.header_timeout_ms = 10000,
		.max_header_bytes = 16384,
		.max_connections = 512,
		.max_buffered_bytes = 1 << 20,
		.capture_wait_ms = 2000,
	};
}

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

static struct sl_gw_policy *policy_wrap(struct sl_policy *p)
{
	struct sl_gw_policy *gp = calloc(1, sizeof(*gp));

	if (!gp)
		return NULL;
	gp->p = p;
	gp->refs = 1;
	return gp;
}

/* Every address of every interface of the host (in the gateway's
 * namespace, the host's: the gateway never moves into the sandbox's):
 * none of them is ever a destination for the sandbox. The list is
 * replaced whole, and only once the new one is complete: a failure keeps
 * the old one rather than none. */
static int load_local_addresses(struct sl_gw *gw)
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
	r = load_local_addresses(gw);
	if (r < 0)
		fprintf(stderr,
			"sluice gateway: the host's addresses changed and cannot be read again: %s; "
			"the previous list stays in force\n",
			strerror(-r));
}

static void local_watch_cb(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	sl_gw_local_sync(p->data);
}

/* The socket first, subscribed; the poll once the list is read. */
static int local_watch_open(struct sl_gw *gw)
{
	struct sockaddr_nl sa = {
	    .nl_family = AF_NETLINK,
	    .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	int r;

	gw->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (gw->nl_fd < 0)
		return negative_errno();
	if (bind(gw->nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = negative_errno();
		sl_closep(&gw->nl_fd);
		gw->nl_fd = -1;
		return r;
	}
	return 0;
}

static int local_watch_start(struct sl_gw *gw)
{
	int r = uv_poll_init(gw->loop, &gw->nl_poll, gw->nl_fd);

	if (r < 0)
		return r;
	gw->nl_poll.data = gw;
	gw->nl_open = true;
	uv_poll_start(&gw->nl_poll, UV_READABLE, local_watch_cb);
	return 0;
}

static void local_watch_closed(uv_handle_t *h)
{
	struct sl_gw *gw = h->data;

	sl_closep(&gw->nl_fd);
	gw->nl_fd = -1;
	gw->nl_open = false;
	sl_gw_maybe_free(gw);
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
static bool route_local(const struct sl_gw *gw, int family, const uint8_t *addr)
{
	int r = sl_gw_route_local(gw->rt_fd, family, addr);

	if (r < 0)
		fprintf(stderr, "sluice gateway: cannot ask the kernel how it routes an address: %s; "
				"refused\n",
			strerror(-r));
	return r != 0;
}

bool sl_gw_is_local(const struct sl_gw *gw, const struct sockaddr *sa)
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
static void audit_refused_suppressed(struct sl_gw *gw, const char *event)
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
			audit_refused_suppressed(gw, event);
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

/* Every connection still open is closed: a tunnel decided before the log
 * broke must not go on relaying unaudited. From a timer, not from where
 * the failure was seen (inside a connection's own close, perhaps). */
static void fail_close_all(uv_timer_t *t)
{
	struct sl_gw *gw = t->data;

	if (!gw->shutting_down)
		sl_gw_conn_close_all(gw);
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
		uv_timer_start(&gw->fail_timer, fail_close_all, 0, 0);
	if (gw->cfg.audit_failed)
		gw->cfg.audit_failed(gw->cfg.audit_failed_data, err);
	return false;
}

int sl_gw_new(uv_loop_t *loop, const struct sl_gw_config *cfg, struct sl_policy *policy,
	      struct sl_gw_resolver *resolver, struct sl_audit *audit, struct sl_gw **ret)
{
	struct sl_gw *gw = calloc(1, sizeof(*gw));
	int r;

	if (!gw)
		return -ENOMEM;
	gw->loop = loop;
	gw->cfg = *cfg;
	gw->resolver = resolver;
	gw->audit = audit;
	gw->policy = policy_wrap(policy);
	if (!gw->policy) {
		free(gw);
		return -ENOMEM;
	}
	/* Subscribed first, read second: a change in between is not lost. */
	gw->nl_fd = -1;
	gw->rt_fd = sl_gw_route_open();
	r = gw->rt_fd < 0 ? gw->rt_fd : local_watch_open(gw);
	if (r >= 0)
		r = load_local_addresses(gw);
	if (r >= 0)
		r = sl_gw_budget_init(gw);
	if (r >= 0) {
		r = local_watch_start(gw);
		if (r < 0) {
			/* The resolver's gate must not point at a freed gw. */
			sl_gw_budget_stop(gw);
			sl_gw_budget_free(gw);
		}
	}
	if (r < 0) {
		free(gw->local);
		sl_gw_policy_unref(gw->policy);
		sl_closep(&gw->nl_fd);
		if (gw->rt_fd >= 0)
			sl_closep(&gw->rt_fd);
		free(gw);
		return r;
	}
	uv_timer_init(loop, &gw->fail_timer);
	gw->fail_timer.data = gw;
	gw->fail_timer_open = true;
	*ret = gw;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct sl_gw *gw = server->data;

	if (status < 0 || gw->shutting_down)
		return;
	sl_gw_conn_accept(gw, server, (uv_tcp_t *)server == &gw->capture);
}

int sl_gw_listen_capture_fd(struct sl_gw *gw, int fd, char *err, size_t errlen)
{
	int r;

	uv_tcp_init(gw->loop, &gw->capture);
	gw->capture.data = gw;
	gw->capture_open = true;
	r = uv_tcp_open(&gw->capture, fd);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&gw->capture, 256, on_connection);
	if (r < 0) {
		snprintf(err, errlen, "capture listener: %s", uv_strerror(r));
		return r;
	}
	return 0;
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

int sl_gw_listen_proxy(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int r;

	r = sl_gw_parse_listen("--listen", addr_port, &ss, err, errlen);
	if (r < 0)
		return r;
	uv_tcp_init(gw->loop, &gw->proxy);
	gw->proxy.data = gw;
	gw->proxy_open = true;
	r = uv_tcp_bind(&gw->proxy, (const struct sockaddr *)&ss, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&gw->proxy, 256, on_connection);
	if (r < 0) {
		snprintf(err, errlen, "--listen '%s': %s", addr_port, uv_strerror(r));
		return r;
	}
	return 0;
}

void sl_gw_set_policy(struct sl_gw *gw, struct sl_policy *p)
{
	struct sl_gw_policy *gp = policy_wrap(p);

	if (!gp) {
		sl_policy_free(p);
		return;
	}
	sl_gw_policy_unref(gw->policy);
	gw->policy = gp;
	/* Kept-alive origin connections were chosen under the old policy
	 * (its private ranges): start afresh. */
	sl_gw_tls_flush_pool(gw);
	/* Interfaces may have changed as well. */
	(void)load_local_addresses(gw);
}

static void proxy_closed(uv_handle_t *h)
{
	struct sl_gw *gw = h->data;

	if (h == (uv_handle_t *)&gw->capture)
		gw->capture_open = false;
	else
		gw->proxy_open = false;
	sl_gw_maybe_free(gw);
}

void sl_gw_maybe_free(struct sl_gw *gw)
{
	if (!gw->shutting_down || gw->proxy_open || gw->capture_open || gw->nl_open || gw->conns ||
	    sl_gw_dns_open(gw) || sl_gw_tls_busy(gw) || gw->fail_timer_open)
		return;
	/* What the last window kept out of the log is said at the end. */
	if (gw->refused_suppressed && gw->audit)
		audit_refused_suppressed(gw, "connect");
	sl_gw_dns_free(gw);
	sl_gw_tls_free(gw);
	sl_gw_budget_free(gw);
	sl_gw_policy_unref(gw->policy);
	sl_closep(&gw->rt_fd);
	free(gw->local);
	free(gw);
}

static void fail_timer_closed(uv_handle_t *h)
{
	struct sl_gw *gw = h->data;

	gw->fail_timer_open = false;
	sl_gw_maybe_free(gw);
}

void sl_gw_shutdown(struct sl_gw *gw)
{
	gw->shutting_down = true;
	sl_gw_budget_stop(gw);
	sl_gw_conn_close_all(gw);
	sl_gw_tls_flush_pool(gw);
	sl_gw_dns_close(gw);
	if (gw->capture_open && !uv_is_closing((uv_handle_t *)&gw->capture))
		uv_close((uv_handle_t *)&gw->capture, proxy_closed);
	if (gw->proxy_open && !uv_is_closing((uv_handle_t *)&gw->proxy))
		uv_close((uv_handle_t *)&gw->proxy, proxy_closed);
	if (gw->nl_open && !uv_is_closing((uv_handle_t *)&gw->nl_poll))
		uv_close((uv_handle_t *)&gw->nl_poll, local_watch_closed);
	if (gw->fail_timer_open && !uv_is_closing((uv_handle_t *)&gw->fail_timer))
		uv_close((uv_handle_t *)&gw->fail_timer, fail_timer_closed);
	sl_gw_maybe_free(gw);
}
