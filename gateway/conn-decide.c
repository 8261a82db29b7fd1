/* SPDX-License-Identifier: MIT */
/*
 * decide -> resolve -> connect: a request (or tunnel, or captured
 * connection) is decided by the policy, its handler has its say
 * (conn_handler.decided), its name is resolved, the first address the
 * policy lets us reach is connected, and the handler takes over
 * (conn_handler.connected). Above conn.c, below the handlers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "approve.h"
#include "conn-headers.h"
#include "conn-internal.h"
#include "macro.h"

static void connected(uv_connect_t *req, int status)
{
	struct conn *c = req->data;

	if (c->state == ST_CLOSING)
		return;
	uv_timer_stop(&c->timer);
	c->up_status = status;
	if (status < 0) {
		char msg[SL_HOST_BUF + 128];

		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(status));
		conn_respond_error(c, 502, "connect-failed", msg);
		return;
	}
	if (c->handler->connected)
		c->handler->connected(c);
	else
		conn_close(c); /* a handler that never connects: a bug, closed */
}

void conn_addr_with_port(struct sockaddr_storage *to, const struct sockaddr *sa, uint16_t port)
{
	memcpy(to, sa,
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	if (to->ss_family == AF_INET)
		((struct sockaddr_in *)to)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)to)->sin6_port = htons(port);
}

/* A kept-alive connection for exactly this host, port and address
 * (conn-pool.h), where the way in may use one: true when c has it and
 * goes on with it. */
static bool take_pooled(struct conn *c, const struct sockaddr *sa)
{
	struct sockaddr_storage to;

	if (!c->handler->pooled || c->retried)
		return false;
	conn_addr_with_port(&to, sa, c->port);
	c->up = conn_pool_take(c->gw, c, c->dec.host, c->port, (const struct sockaddr *)&to);
	if (!c->up)
		return false;
	conn_set_state(c, ST_CONNECTING);
	c->upstream_open = true;
	c->open_handles++;
	uv_timer_stop(&c->timer);
	c->handler->connected(c);
	return true;
}

static void start_connect(struct conn *c, const struct sockaddr *sa)
{
	struct sockaddr_storage to;
	int r;

	if (take_pooled(c, sa))
		return;
	conn_addr_with_port(&to, sa, c->port);
	conn_set_state(c, ST_CONNECTING);
	c->up = conn_up_new(c->gw, c);
	if (!c->up) {
		conn_respond_error(c, 502, "connect-failed", "cannot create a socket");
		return;
	}
	memcpy(&c->up->addr, &to, sizeof(to));
	c->up->port = c->port;
	c->up->gen = c->gw->pool_gen;
	snprintf(c->up->host, sizeof(c->up->host), "%s", c->dec.host);
	c->upstream_open = true;
	/* Relayed writes go out as they come: a request head and its body
	 * in two writes must not wait out the origin's delayed ACK. */
	uv_tcp_nodelay(&c->up->tcp, 1);
	c->open_handles++;
	c->connect_req.data = c;
	conn_arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = uv_tcp_connect(&c->connect_req, &c->up->tcp, (const struct sockaddr *)&to, connected);
	if (r < 0) {
		char msg[SL_HOST_BUF + 128];

		c->up_status = r;
		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(r));
		conn_respond_error(c, 502, "connect-failed", msg);
	}
}

/* sync: read the host's address changes first (a netlink read, what
 * choosing an address for a new connection needs); without, the list
 * as last read. */
static const struct sockaddr *pick_address(const struct conn *c, const struct sl_gw_addrs *a,
					   const char **ret_refused, bool sync)
{
	size_t i;

	*ret_refused = NULL;
	if (sync)
		sl_gw_local_sync(c->gw);
	for (i = 0; i < a->n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&a->addr[i];
		const uint8_t *bytes =
		    sa->sa_family == AF_INET
			? (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr
			: (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		const char *special = sl_gw_addr_special(sa->sa_family, bytes);

		if (sl_gw_is_local(c->gw, sa)) {
			*ret_refused = "the gateway host itself";
			continue;
		}
		if (sl_gw_is_owned(c->gw, sa)) {
			*ret_refused = "a sandbox address of sluice's pool";
			continue;
		}
		if (special && !sl_policy_private_allowed(c->pol->p, sa->sa_family, bytes)) {
			*ret_refused = special;
			continue;
		}
		return sa;
	}
	return NULL;
}

const struct sockaddr *conn_pick_address(const struct conn *c, const struct sl_gw_addrs *a,
					 const char **ret_refused)
{
	return pick_address(c, a, ret_refused, true);
}

/* The first address the policy lets us reach: never the gateway host's
 * own, never a special range unless private_addresses lists it (SSRF and
 * DNS rebinding: the name is the client's, the addresses are its DNS's).
 * A kept-alive connection to it is taken before the host's address
 * changes are read: the addresses decide where a new connection goes, and
 * an open one goes where it went (it was checked when it was opened,
 * under this policy: a reload empties the pool). That read is a system
 * call per request otherwise. When the pool has none, the choice is made
 * again on the list read afresh. */
static void connect_first_permitted(struct conn *c, const struct sl_gw_addrs *a)
{
	const char *refused;
	const struct sockaddr *sa;
	char msg[SL_HOST_BUF + 160];

	if (c->handler->pooled && !c->retried) {
		sa = pick_address(c, a, &refused, false);
		if (sa && take_pooled(c, sa))
			return;
	}
	sa = conn_pick_address(c, a, &refused);
	if (sa) {
		start_connect(c, sa);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "%s resolves only to addresses the policy does not allow (%s); list the "
		 "range under private_addresses to allow it",
		 c->dec.host, refused ? refused : "none");
	conn_respond_error(c, 403, "private-address", msg);
}

/* The same address again, on a new connection (the pooled one closed
 * under the request): chosen again as any new connection's is, on the
 * host's addresses read afresh, since the pooled one was taken without. */
void conn_connect_again(struct conn *c)
{
	struct sl_gw_addrs a = {.n = 1};

	memcpy(&a.addr[0], &c->up->addr, sizeof(a.addr[0]));
	conn_drop_upstream(c);
	c->retried = true;
	c->bytes_up = 0; /* counted again as it is sent again */
	connect_first_permitted(c, &a);
}

static void resolved(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct conn *c = data;
	char msg[SL_HOST_BUF + 96];
	int http;

	c->rreq = NULL;
	if (c->state != ST_RESOLVING)
		return;
	if (status < 0) {
		const char *reason, *why = sl_gw_resolve_failure(status, &http, &reason);

		snprintf(msg, sizeof(msg), "cannot resolve %s: %s", c->dec.host, why);
		conn_respond_error(c, http, reason, msg);
		return;
	}
	connect_first_permitted(c, addrs);
}

/* ---- decide ---- */

/* The one-address list for an IP literal the policy allowed. */
void conn_literal_addrs(enum sl_host_kind kind, const char *host, struct sl_gw_addrs *a)
{
	memset(a, 0, sizeof(*a));
	if (kind == SL_HOST_IPV4) {
		struct sockaddr_in *in = (struct sockaddr_in *)&a->addr[0];

		in->sin_family = AF_INET;
		a->n = inet_pton(AF_INET, host, &in->sin_addr) == 1;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->addr[0];

		in6->sin6_family = AF_INET6;
		a->n = inet_pton(AF_INET6, host, &in6->sin6_addr) == 1;
	}
}

/* Allowed (and approved, where the rule asks): resolve and connect. */
static void go_on(struct conn *c)
{
	int r;

	if (c->dec.host_kind != SL_HOST_NAME) {
		struct sl_gw_addrs a;

		conn_literal_addrs(c->dec.host_kind, c->dec.host, &a);
		connect_first_permitted(c, &a);
		return;
	}
	{
		struct sl_gw_addrs a;

		if (sl_gw_resolve_cached(c->gw->resolver, c->dec.host, &a) == 0) {
			connect_first_permitted(c, &a);
			return;
		}
	}
	/* A held request waited in RESOLVING already. */
	if (c->state != ST_RESOLVING)
		conn_set_state(c, ST_RESOLVING);
	conn_arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = sl_gw_resolve(c->gw->resolver, c->dec.host, resolved, c, &c->rreq);
	if (r < 0)
		conn_respond_error(c, 502, "resolve-failed", "cannot start a DNS lookup");
}

/* ---- held for approval (approve.h) ---- */

static void held_go(void *owner)
{
	struct conn *c = owner;

	c->hold = NULL;
	go_on(c);
}

static void held_refuse(void *owner, const char *reason, const char *why)
{
	struct conn *c = owner;

	c->hold = NULL;
	conn_respond_error(c, 403, reason, why);
}

static void held_gone(void *owner)
{
	struct conn *c = owner;

	c->hold = NULL;
	c->reason = "client-closed";
	conn_close(c);
}

static const struct sl_gw_hold_ops held_ops = {
    .go = held_go, .refuse = held_refuse, .gone = held_gone};

/* The rule asks a person first: c waits in RESOLVING (its bytes kept,
 * bounded, by conn.c's hold_read) with no timer of its own but the
 * hold's. True when held or refused; false to go on now. A CONNECT to an
 * inspected host is held request by request inside instead. */
static bool hold_for_approval(struct conn *c, const char *path)
{
	struct sl_gw_hold_what w = {
	    .method = c->tunnel ? (c->is_connect ? "CONNECT" : NULL) : c->method,
	    .host = c->dec.host,
	    .port = c->port,
	    .path = c->tunnel ? NULL : path,
	};
	uv_os_fd_t fd;
	int r;

	if (!c->dec.rule || !c->dec.rule->approve || c->dec.inspect)
		return false;
	conn_set_state(c, ST_RESOLVING);
	uv_timer_stop(&c->timer);
	if (uv_fileno((uv_handle_t *)&c->client, &fd) < 0)
		r = -EBADF;
	else
		r = sl_gw_hold_start(c->gw, c, &held_ops, fd, c->dec.rule->approve_timeout_ms, &w,
				     &c->approval, &c->hold);
	if (r < 0)
		conn_respond_error(c, 403, "approval-busy",
				   r == -EBUSY ? "too many requests are waiting for approval"
					       : "cannot hold this request for approval");
	return true;
}

void conn_decide_and_go(struct conn *c, const char *host, size_t host_len, const char *path,
			size_t path_len)
{
	struct sl_request q = {
	    .host = host,
	    .host_len = host_len,
	    .port = c->port,
	    .method = c->tunnel ? NULL : c->method,
	    .path = c->tunnel ? NULL : path,
	    .path_len = c->tunnel ? 0 : path_len,
	};
	char why[512];

	if (!sl_gw_audit_ok(c->gw)) {
		conn_close_unaudited(c);
		return;
	}
	conn_policy_refresh(c);
	sl_policy_decide(c->pol->p, &q, &c->dec);
	c->decided = true;
	/* SL_VERDICT_OBSERVE goes on, as an allow with no rule's rights. */
	if (c->dec.verdict != SL_VERDICT_ALLOW && c->dec.verdict != SL_VERDICT_OBSERVE) {
		conn_respond_error(c, 403, NULL,
				   sl_policy_explain(c->pol->p, &q, &c->dec, why, sizeof(why)));
		return;
	}
	/* The way in checks what it alone knows (a tunnel's TLS, a plain
	 * request's head), and may take the connection on itself. */
	if (c->handler->decided && !c->handler->decided(c))
		return;
	if (hold_for_approval(c, c->tunnel ? NULL : c->path))
		return;
	go_on(c);
}
