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
#include "conn-internal.h"
#include "gateway-internal.h"
#include "macro.h"
#include "route.h"
#include "splice.h"

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

static struct sl_gw_policy *policy_wrap(struct sl_policy *p)
{
	struct sl_gw_policy *gp = calloc(1, sizeof(*gp));

	if (!gp)
		return NULL;
	gp->p = p;
	gp->refs = 1;
	return gp;
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
	    /* Routes too: what sl_gw_is_local asked the kernel is kept
	     * until one changes (gateway-internal.h, route_cache). And
	     * links: one that goes down takes its IPv4 routes with it
	     * without a word of them (only the link's own message says
	     * so), and the address may then go to a local route. */
	    .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
			 RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE,
	};
	int rule_groups[] = {RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE};
	size_t i;
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
	/* ... and policy-routing rules, which can send an address to a table
	 * with a local route. Joined after the bind: bind sets the first 32
	 * groups to nl_groups, and the rules' (8, 19) are among them, so a
	 * membership added before it is silently dropped. */
	for (i = 0; i < sizeof(rule_groups) / sizeof(rule_groups[0]); i++) {
		if (setsockopt(gw->nl_fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &rule_groups[i],
			       sizeof(rule_groups[i])) < 0) {
			r = negative_errno();
			sl_closep(&gw->nl_fd);
			gw->nl_fd = -1;
			return r;
		}
	}
#ifdef RTNLGRP_NEXTHOP
	/* ... and nexthop objects: deleting one takes the routes that use it
	 * with it, again without a word of those routes. A kernel without
	 * them (before 5.3) refuses the group, and has no such routes. */
	{
		int nh = RTNLGRP_NEXTHOP;

		(void)setsockopt(gw->nl_fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &nh, sizeof(nh));
	}
#endif
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

/* Every connection still open is closed: a tunnel decided before the log
 * broke must not go on relaying unaudited. From a timer, not from where
 * the failure was seen (inside a connection's own close, perhaps). */
static void gw_maybe_free(struct sl_gw *gw);

static void fail_close_all(uv_timer_t *t)
{
	struct sl_gw *gw = t->data;

	if (!gw->shutting_down)
		sl_gw_conn_close_all(gw);
}

/* Once per turn of the loop, before it waits: this turn's audit lines in
 * one write. A failure is the log's failure, as a single write's was. */
static void audit_flush_cb(uv_prepare_t *h)
{
	struct sl_gw *gw = h->data;

	if (sl_audit_flush(gw->audit) < 0)
		(void)sl_gw_audit_ok(gw);
}

static void audit_flush_closed(uv_handle_t *h)
{
	struct sl_gw *gw = h->data;

	gw->audit_flush_open = false;
	sl_gw_maybe_free(gw);
}

int sl_gw_new(uv_loop_t *loop, const struct sl_gw_config *cfg, struct sl_policy *policy,
	      struct sl_gw_resolver *resolver, struct sl_audit *audit, struct sl_gw **ret)
{
	struct sl_gw *gw = calloc(1, sizeof(*gw));
	int r;

	if (!gw)
		return -ENOMEM;
	gw->loop = loop;
	gw->maybe_free = gw_maybe_free;
	gw->on_audit_failed = fail_close_all;
	gw->conn_ways[CONN_HTTP] = &conn_http_handler;
	gw->conn_ways[CONN_TUNNEL] = &conn_tunnel_handler;
	gw->conn_ways[CONN_CAPTURE] = &conn_capture_handler;
	gw->conn_ways[CONN_INSPECT] = &conn_inspect_handler;
	gw->conn_ways[CONN_SOCKS] = &conn_socks_handler;
	gw->cfg = *cfg;
	gw->resolver = resolver;
	gw->audit = audit;
	if (cfg->observe)
		policy->mode = SL_MODE_OBSERVE;
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
		r = sl_gw_local_load(gw);
	if (r >= 0)
		r = sl_gw_metrics_init(gw);
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
		sl_gw_metrics_free(gw);
		free(gw->local);
		sl_gw_policy_unref(gw->policy);
		sl_closep(&gw->nl_fd);
		if (gw->rt_fd >= 0)
			sl_closep(&gw->rt_fd);
		free(gw);
		return r;
	}
	conn_pool_init(gw);
	if (gw->audit && sl_audit_batch(gw->audit) == 0) {
		uv_prepare_init(loop, &gw->audit_flush);
		gw->audit_flush.data = gw;
		uv_prepare_start(&gw->audit_flush, audit_flush_cb);
		uv_unref((uv_handle_t *)&gw->audit_flush);
		gw->audit_flush_open = true;
	}
	(void)sl_gw_splice_init(gw); /* before confinement; without, tunnels copy */
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
	struct sl_gw_policy *gp;

	if (gw->cfg.observe)
		p->mode = SL_MODE_OBSERVE;
	gp = policy_wrap(p);

	if (!gp) {
		sl_policy_free(p);
		return;
	}
	sl_gw_policy_unref(gw->policy);
	gw->policy = gp;
	/* Leaving observe mode: what it let through and is still open (an
	 * opaque tunnel to any host, an observed exchange under way) would
	 * otherwise go on unenforced. Closed, each with its record. */
	if (gp->p->mode != SL_MODE_OBSERVE)
		sl_gw_conn_close_observed(gw);
	/* Requests held for approval were held under the old one. */
	sl_gw_holds_refuse_all(gw);
	/* Kept-alive origin connections were chosen under the old policy
	 * (its private ranges): start afresh. */
	sl_gw_tls_flush_pool(gw);
	conn_pool_flush(gw);
	/* Interfaces may have changed as well. */
	(void)sl_gw_local_load(gw);
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

/* Freed once shut down and nothing is left open: the callback behind
 * sl_gw_maybe_free(), which the parts below call as their handles close. */
static void gw_maybe_free(struct sl_gw *gw)
{
	if (!gw->shutting_down || gw->proxy_open || gw->capture_open || gw->nl_open || gw->conns ||
	    sl_gw_dns_open(gw) || sl_gw_tls_busy(gw) || gw->fail_timer_open || conn_pool_busy(gw) ||
	    gw->audit_flush_open || sl_gw_metrics_open(gw))
		return;
	/* What the last window kept out of the log is said at the end. */
	if (gw->refused_suppressed && gw->audit)
		sl_gw_audit_refused_flush(gw, "connect");
	sl_gw_dns_audit_flush(gw);
	(void)sl_audit_flush(gw->audit);
	sl_gw_dns_free(gw);
	sl_gw_tls_free(gw);
	sl_gw_budget_free(gw);
	sl_gw_splice_free(gw);
	sl_gw_metrics_free(gw);
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
	sl_gw_tls_close(gw);
	conn_pool_close(gw);
	sl_gw_dns_close(gw);
	sl_gw_metrics_close(gw);
	if (gw->capture_open && !uv_is_closing((uv_handle_t *)&gw->capture))
		uv_close((uv_handle_t *)&gw->capture, proxy_closed);
	if (gw->proxy_open && !uv_is_closing((uv_handle_t *)&gw->proxy))
		uv_close((uv_handle_t *)&gw->proxy, proxy_closed);
	if (gw->nl_open && !uv_is_closing((uv_handle_t *)&gw->nl_poll))
		uv_close((uv_handle_t *)&gw->nl_poll, local_watch_closed);
	if (gw->fail_timer_open && !uv_is_closing((uv_handle_t *)&gw->fail_timer))
		uv_close((uv_handle_t *)&gw->fail_timer, fail_timer_closed);
	if (gw->audit_flush_open && !uv_is_closing((uv_handle_t *)&gw->audit_flush))
		uv_close((uv_handle_t *)&gw->audit_flush, audit_flush_closed);
	sl_gw_maybe_free(gw);
}
