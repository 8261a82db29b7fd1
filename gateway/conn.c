/* SPDX-License-Identifier: MIT */
/*
 * One proxy connection, top to bottom (the plain-HTTP, tunnel and capture
 * parts live in conn-http.c, conn-tunnel.c and conn-capture.c):
 *
 *   accept -> read the request head -> parse -> decide -> resolve ->
 *   connect -> (CONNECT: answer 200, peek the ClientHello's SNI) ->
 *   relay both ways with backpressure -> close -> audit
 *
 * Every connection has a hard cap on buffered bytes (the head, the peeked
 * hello, each direction's write queue) and on time (the head deadline, the
 * connect timeout, the idle timeout). The struct is freed only when its last
 * libuv handle has closed, and writes its audit record then.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "conn-headers.h"
#include "conn-internal.h"
#include "http.h"
#include "macro.h"
#include "tls-hello.h"

static void resume_reading(struct conn *c, bool client);
static void relay_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void relay_upstream_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* ---- lifetime ---- */

void conn_free(struct conn *c)
{
	struct sl_gw *gw = c->gw;

	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	gw->n_conns--;
	conn_inspect_free(c);
	sl_gw_policy_unref(c->pol);
	free(c->buf);
	free(c->path);
	free(c->rbuf);
	free(c->pipelined);
	free(c);
	sl_gw_maybe_free(gw);
}

/* The record of the exchange under way, unless it has one: the one
 * writer. conn_set_state() calls it when an exchange ends (DONE) and when
 * the connection does (CLOSED); inspect.c for each exchange inside its
 * TLS. A path cannot skip the record (every connection ends in CLOSED) nor
 * write it twice (c->audited says it is written). */
void conn_write_audit(struct conn *c)
{
	struct sl_audit_record r = {
	    .ts_ms = c->start_wall_ms,
	    .sandbox = c->gw->cfg.sandbox,
	    .event = c->tunnel ? "connect" : "http",
	    .client = c->client_addr,
	    .method = c->parsed ? c->method : NULL,
	    .host = c->decided && c->dec.host[0] ? c->dec.host
		    : c->captured		 ? c->orig_str
						 : NULL,
	    .port = c->parsed || c->captured ? c->port : -1,
	    .path = c->path,
	    .status = c->status ? c->status : -1,
	    .decision =
		c->decided && c->dec.verdict == SL_VERDICT_ALLOW && !c->refused ? "allow" : "deny",
	    .reason = c->reason	   ? c->reason
		      : c->decided ? sl_reason_to_string(c->dec.reason)
				   : NULL,
	    .tls = c->inspect ? "inspect"
		   : (c->is_connect && c->state_was_relay) || c->tls_seen ? "passthrough"
									  : NULL,
	    .credential = c->credential,
	    .sni = c->sni[0] ? c->sni : NULL,
	    .bytes_up = (int64_t)c->bytes_up,
	    .bytes_down = (int64_t)c->bytes_down,
	    .duration_ms = (int64_t)(uv_now(c->gw->loop) - c->start_loop_ms),
	};
	char rule[96];

	if (c->audited)
		return;
	c->audited = true;
	if (c->decided && c->dec.rule)
		r.rule = sl_rule_id(c->dec.rule, rule, sizeof(rule));
	if (c->gw->audit)
		(void)sl_audit_write(c->gw->audit, &r);
	(void)sl_gw_audit_ok(c->gw);
}

void conn_set_state(struct conn *c, enum state to)
{
	conn_state_check(c->state, to);
	c->state = to;
	if (to == ST_DONE) {
		conn_write_audit(c);
	} else if (to == ST_CLOSED) {
		/* A kept-alive connection that closes between requests has
		 * nothing more to say: its exchanges were audited as each
		 * ended. */
		if (!(c->n_exchanges && !c->parsed && !c->len))
			conn_write_audit(c);
	}
}

void conn_close_unaudited(struct conn *c)
{
	c->audited = true;
	conn_close(c);
}

void conn_last_handle_closed(struct conn *c)
{
	conn_set_state(c, ST_CLOSED);
	conn_free(c);
}

static void handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->open_handles == 0)
		conn_last_handle_closed(c);
}

static void close_handle(struct conn *c, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, handle_closed);
}

void conn_close(struct conn *c)
{
	if (c->state == ST_CLOSING)
		return;
	conn_set_state(c, ST_CLOSING);
	sl_gw_resolve_cancel(c->rreq);
	c->rreq = NULL;
	uv_timer_stop(&c->timer);
	conn_inspect_close(c);
	close_handle(c, (uv_handle_t *)&c->timer);
	close_handle(c, (uv_handle_t *)&c->client);
	if (c->upstream_open)
		close_handle(c, (uv_handle_t *)&c->upstream);
	if (c->body_active)
		sl_http_body_done(&c->body);
	c->body_active = false;
}

/* ---- writing ---- */

struct wreq {
	uv_write_t req;
	struct conn *c;
	char *data; /* owned: freed when written */
	bool to_client;
	bool close_after;
};

static void write_done(uv_write_t *req, int status)
{
	struct wreq *w = container_of(req, struct wreq, req);
	struct conn *c = w->c;
	bool close_after = w->close_after;
	bool to_client = w->to_client;

	free(w->data);
	free(w);
	if (c->state == ST_CLOSING)
		return;
	if (status < 0 || close_after) {
		conn_close(c);
		return;
	}
	/* The other side paused because this queue was full: let it go on
	 * once the queue has drained to half. */
	if (c->insp && to_client)
		conn_inspect_written(c);
	else
		resume_reading(c, !to_client);
}

/* Queue data (owned, malloc'd) to the client or the upstream. */
int conn_send_owned(struct conn *c, bool to_client, char *data, size_t len, bool close_after)
{
	uv_stream_t *dst = to_client ? (uv_stream_t *)&c->client : (uv_stream_t *)&c->upstream;
	struct wreq *w = calloc(1, sizeof(*w));
	uv_buf_t b = uv_buf_init(data, (unsigned)len);
	int r;

	if (!w) {
		free(data);
		return -ENOMEM;
	}
	w->c = c;
	w->data = data;
	w->to_client = to_client;
	w->close_after = close_after;
	r = uv_write(&w->req, dst, &b, 1, write_done);
	if (r < 0) {
		free(data);
		free(w);
	}
	return r;
}

int conn_send_copy(struct conn *c, bool to_client, const char *data, size_t len, bool close_after)
{
	char *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	return conn_send_owned(c, to_client, copy, len, close_after);
}

const char *conn_status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 421:
		return "Misdirected Request";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

int conn_error_response(int status, const char *why, char **ret)
{
	char body[768];
	int blen, n;

	blen = snprintf(body, sizeof(body), "sluice: %s\n", why);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		blen = (int)strlen(body);
	n = asprintf(ret,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\nConnection: close\r\n\r\n%.*s",
		     status, conn_status_text(status), blen, blen, body);
	if (n < 0)
		*ret = NULL;
	return n;
}

/* Answer with a one-line plain-text reason and close. */
void conn_respond_error(struct conn *c, int status, const char *reason, const char *why)
{
	char *msg;
	int n;

	if (c->state == ST_CLOSING || c->state == ST_RESPONDING)
		return;
	c->status = status;
	c->refused = true;
	if (reason)
		c->reason = reason;
	if (c->captured && c->tunnel) {
		/* The client speaks TLS or something else, not HTTP: an HTTP
		 * answer would be garbage to it. The audit log has the why. */
		conn_close(c);
		return;
	}
	conn_set_state(c, ST_RESPONDING);
	/* A lookup still running (the connect timeout fired while resolving)
	 * must not connect once it completes: the answer is already sent. */
	sl_gw_resolve_cancel(c->rreq);
	c->rreq = NULL;
	uv_read_stop((uv_stream_t *)&c->client);
	if (c->upstream_open)
		close_handle(c, (uv_handle_t *)&c->upstream);
	n = conn_error_response(status, why, &msg);
	if (n < 0 || conn_send_owned(c, true, msg, (size_t)n, true) < 0)
		conn_close(c);
}

static void timer_fired(uv_timer_t *t)
{
	struct conn *c = t->data;

	switch (c->state) {
	case ST_IDLE:
	case ST_HEAD:
		if (c->captured && c->len == 0 && !c->n_exchanges) {
			/* A protocol where the server speaks first (SMTP, a
			 * database): nothing to read, decide by address. Not
			 * a kept-alive HTTP connection between requests: it
			 * said what it carries, and goes as plain HTTP does. */
			uv_read_stop((uv_stream_t *)&c->client);
			conn_decide_by_address(c);
			break;
		}
		conn_respond_error(c, 408, "header-timeout",
				   "timed out waiting for the request head");
		break;
	case ST_RESOLVING:
	case ST_CONNECTING:
		conn_respond_error(c, 504, "connect-timeout", "timed out connecting upstream");
		break;
	case ST_INSPECT:
		conn_inspect_timer(c);
		break;
	case ST_PEEK:
		/* A tunnel whose first bytes never came: nothing was decided
		 * to relay (a server-first protocol needs protocol: tcp). */
		c->refused = true;
		c->reason = "header-timeout";
		conn_close(c);
		break;
	case ST_RELAY:
		/* Allowed, relayed, then quiet for too long: not a refusal. */
		c->reason = "idle-timeout";
		conn_close(c);
		break;
	case ST_NEW:
	case ST_DONE:
	case ST_RESPONDING:
	case ST_CLOSING:
	case ST_CLOSED:
		conn_close(c);
		break;
	}
}

void conn_arm_timer(struct conn *c, unsigned ms)
{
	uv_timer_start(&c->timer, timer_fired, ms, 0);
}

/* ---- reading ---- */

void conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(READ_CHUNK);
	buf->len = buf->base ? READ_CHUNK : 0;
}

/* Append n bytes of a read to c->buf (the head or hello being gathered).
 * Takes the read buffer. Returns 0, or -ENOMEM (the caller closes). */
int conn_buf_append(struct conn *c, const uv_buf_t *buf, size_t n)
{
	char *grown = realloc(c->buf, c->len + n);

	if (!grown) {
		free(buf->base);
		return -ENOMEM;
	}
	memcpy(grown + c->len, buf->base, n);
	free(buf->base);
	c->buf = grown;
	c->len += n;
	return 0;
}

static void resume_reading(struct conn *c, bool client)
{
	uv_stream_t *dst = client ? (uv_stream_t *)&c->upstream : (uv_stream_t *)&c->client;

	if (c->state != ST_RELAY)
		return;
	if (uv_stream_get_write_queue_size(dst) > c->gw->cfg.max_buffered_bytes / 2)
		return;
	if (client && c->client_paused && !c->client_eof && !c->body_done) {
		c->client_paused = false;
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, relay_client_read);
	} else if (!client && c->upstream_paused && !c->upstream_eof) {
		c->upstream_paused = false;
		uv_read_start((uv_stream_t *)&c->upstream, conn_alloc_cb, relay_upstream_read);
	}
}

/* Pause the source when the destination's queue is over the cap: a slow
 * reader stalls its writer instead of growing our memory. */
void conn_maybe_pause(struct conn *c, bool client)
{
	uv_stream_t *dst = client ? (uv_stream_t *)&c->upstream : (uv_stream_t *)&c->client;

	if (uv_stream_get_write_queue_size(dst) <= c->gw->cfg.max_buffered_bytes)
		return;
	if (client) {
		c->client_paused = true;
		uv_read_stop((uv_stream_t *)&c->client);
	} else {
		c->upstream_paused = true;
		uv_read_stop((uv_stream_t *)&c->upstream);
	}
}

static void shutdown_done(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;

	if (c->state == ST_CLOSING)
		return;
	if (status < 0 || (c->client_eof && c->upstream_eof))
		conn_close(c);
}

/* One side said EOF: pass the half-close on to the other. */
void conn_half_close(struct conn *c, bool from_client)
{
	uv_shutdown_t *req = from_client ? &c->shutdown_upstream : &c->shutdown_client;
	uv_stream_t *dst = from_client ? (uv_stream_t *)&c->upstream : (uv_stream_t *)&c->client;

	req->data = c;
	if (uv_shutdown(req, dst, shutdown_done) < 0)
		conn_close(c);
}

static void relay_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t n;

	if (nread == 0) {
		free(buf->base);
		return;
	}
	if (nread < 0) {
		free(buf->base);
		if (nread != UV_EOF) {
			conn_close(c);
			return;
		}
		c->client_eof = true;
		uv_read_stop(s);
		if (c->upstream_eof)
			conn_close(c);
		else if (c->tunnel)
			conn_half_close(c, true);
		return;
	}
	n = (size_t)nread;
	if (c->body_active) {
		/* Forward only the request's own body, framed by us: whatever
		 * follows it would reach the origin as a request nobody
		 * decided, and the client's framing is the client's to bend. */
		ssize_t k;

		uv_timer_again(&c->timer);
		k = conn_body_forward(c, buf->base, n);
		if (k < 0) {
			free(buf->base);
			return;
		}
		if (c->body_done) {
			uv_read_stop(s);
			/* The next request, pipelined: kept for when this
			 * exchange is over, to be decided on its own. */
			if (conn_keep_pipelined(c, buf->base + k, n - (size_t)k) < 0) {
				free(buf->base);
				conn_close(c);
				return;
			}
		}
		free(buf->base);
		if (c->state == ST_RELAY)
			conn_maybe_pause(c, true);
		return;
	}
	uv_timer_again(&c->timer);
	c->bytes_up += n;
	if (conn_send_owned(c, false, buf->base, n, false) < 0) {
		conn_close(c);
		return;
	}
	conn_maybe_pause(c, true);
}

static void relay_upstream_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	if (nread == 0) {
		free(buf->base);
		return;
	}
	if (!c->tunnel) {
		conn_http_upstream_read(c, nread, buf);
		return;
	}
	if (nread < 0) {
		free(buf->base);
		if (nread != UV_EOF) {
			conn_close(c);
			return;
		}
		c->upstream_eof = true;
		uv_read_stop(s);
		/* Plain HTTP: the origin closed after its one response (we
		 * asked for that), so the exchange is over. */
		if (!c->tunnel) {
			c->client_eof = true;
			conn_half_close(c, false);
		} else if (c->client_eof) {
			conn_close(c);
		} else {
			conn_half_close(c, false);
		}
		return;
	}
	uv_timer_again(&c->timer);
	c->bytes_down += (size_t)nread;
	if (conn_send_owned(c, true, buf->base, (size_t)nread, false) < 0) {
		conn_close(c);
		return;
	}
	conn_maybe_pause(c, false);
}

void conn_start_relay(struct conn *c)
{
	conn_set_state(c, ST_RELAY);
	c->state_was_relay = true;
	uv_timer_start(&c->timer, timer_fired, c->gw->cfg.idle_timeout_ms,
		       c->gw->cfg.idle_timeout_ms);
	if (!c->body_done)
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, relay_client_read);
	uv_read_start((uv_stream_t *)&c->upstream, conn_alloc_cb, relay_upstream_read);
}

static void connected(uv_connect_t *req, int status)
{
	struct conn *c = req->data;

	if (c->state == ST_CLOSING)
		return;
	uv_timer_stop(&c->timer);
	if (status < 0) {
		char msg[SL_HOST_BUF + 128];

		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(status));
		conn_respond_error(c, 502, "connect-failed", msg);
		return;
	}
	if (c->tunnel)
		conn_tunnel_start(c);
	else
		conn_http_start(c);
}

static void start_connect(struct conn *c, const struct sockaddr *sa)
{
	struct sockaddr_storage to;
	int r;

	memcpy(&to, sa,
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	if (to.ss_family == AF_INET)
		((struct sockaddr_in *)&to)->sin_port = htons(c->port);
	else
		((struct sockaddr_in6 *)&to)->sin6_port = htons(c->port);

	conn_set_state(c, ST_CONNECTING);
	r = uv_tcp_init(c->gw->loop, &c->upstream);
	if (r < 0) {
		conn_respond_error(c, 502, "connect-failed", "cannot create a socket");
		return;
	}
	c->upstream.data = c;
	c->upstream_open = true;
	/* Relayed writes go out as they come: a request head and its body
	 * in two writes must not wait out the origin's delayed ACK. */
	uv_tcp_nodelay(&c->upstream, 1);
	c->open_handles++;
	c->connect_req.data = c;
	conn_arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = uv_tcp_connect(&c->connect_req, &c->upstream, (const struct sockaddr *)&to, connected);
	if (r < 0) {
		char msg[SL_HOST_BUF + 128];

		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(r));
		conn_respond_error(c, 502, "connect-failed", msg);
	}
}

const struct sockaddr *conn_pick_address(const struct conn *c, const struct sl_gw_addrs *a,
					 const char **ret_refused)
{
	size_t i;

	*ret_refused = NULL;
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

/* The first address the policy lets us reach: never the gateway host's
 * own, never a special range unless private_addresses lists it (SSRF and
 * DNS rebinding: the name is the client's, the addresses are its DNS's). */
static void connect_first_permitted(struct conn *c, const struct sl_gw_addrs *a)
{
	const char *refused;
	const struct sockaddr *sa = conn_pick_address(c, a, &refused);
	char msg[SL_HOST_BUF + 160];

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

static void resolved(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct conn *c = data;
	char msg[SL_HOST_BUF + 96];

	c->rreq = NULL;
	if (c->state != ST_RESOLVING)
		return;
	if (status < 0) {
		snprintf(msg, sizeof(msg), "cannot resolve %s: %s", c->dec.host,
			 status == -ENOENT	? "no such name"
			 : status == -ETIMEDOUT ? "timed out"
			 : status == -EDQUOT	? SL_GW_DNS_BUDGET_WHY
						: "resolver error");
		if (status == -EDQUOT)
			conn_respond_error(c, 429, "dns-budget", msg);
		else
			conn_respond_error(c, 502, "resolve-failed", msg);
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
	int r;

	if (!sl_gw_audit_ok(c->gw)) {
		conn_close_unaudited(c);
		return;
	}
	conn_policy_refresh(c);
	sl_policy_decide(c->pol->p, &q, &c->dec);
	c->decided = true;
	if (c->dec.verdict != SL_VERDICT_ALLOW) {
		conn_respond_error(c, 403, NULL,
				   sl_policy_explain(c->pol->p, &q, &c->dec, why, sizeof(why)));
		return;
	}
	if (c->tunnel && c->dec.inspect) {
		/* Method, path and credential rules need the requests inside
		 * the tunnel; passing it through opaque would skip them. */
		if (!c->gw->tls) {
			snprintf(why, sizeof(why),
				 "%s:%u needs TLS inspection (its rules name methods, paths or a "
				 "credential), which is not enabled here (sluice gateway needs "
				 "--ca-dir)",
				 c->dec.host, c->port);
			conn_respond_error(c, 403, "inspect-unavailable", why);
			return;
		}
		c->inspect = true;
		if (c->is_connect) {
			/* 200, then the ClientHello is checked against the
			 * CONNECT's host before TLS is ended here. */
			conn_tunnel_start(c);
			return;
		}
		if (!c->tls_seen) {
			c->inspect = false;
			snprintf(why, sizeof(why),
				 "%s:%u is inspected, and this connection is not TLS", c->dec.host,
				 c->port);
			conn_respond_error(c, 403, "inspect-needs-tls", why);
			return;
		}
		conn_inspect_start(c);
		return;
	}
	if (c->captured && c->tunnel && !conn_capture_may_relay(c))
		return;
	if (!c->tunnel && c->dec.rule && c->dec.rule->has_inject) {
		/* A credential goes only over TLS that we verify. */
		snprintf(why, sizeof(why),
			 "%s carries a credential, which is only sent over TLS: use https://",
			 c->dec.host);
		conn_respond_error(c, 403, "credential-needs-tls", why);
		return;
	}
	if (!c->tunnel && conn_plain_head_check(c) < 0)
		return;

	if (c->dec.host_kind != SL_HOST_NAME) {
		struct sl_gw_addrs a;

		conn_literal_addrs(c->dec.host_kind, c->dec.host, &a);
		connect_first_permitted(c, &a);
		return;
	}
	conn_set_state(c, ST_RESOLVING);
	conn_arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = sl_gw_resolve(c->gw->resolver, c->dec.host, resolved, c, &c->rreq);
	if (r < 0)
		conn_respond_error(c, 502, "resolve-failed", "cannot start a DNS lookup");
}

/* ---- the request head ---- */

static void handle_head(struct conn *c, const struct sl_http_request *r)
{
	const char *why = NULL;

	c->parsed = true;
	snprintf(c->method, sizeof(c->method), "%.*s", (int)r->method.len, r->method.p);
	c->is_connect = sl_http_span_eq(&r->method, "CONNECT");
	c->tunnel = c->is_connect;

	if (c->is_connect) {
		const char *host;
		size_t host_len;

		if (sl_host_split(r->target.p, r->target.len, &host, &host_len, &c->port, &why) <
			0 ||
		    c->port == 0) {
			conn_respond_error(c, 400, "bad-request",
					   why ? why : "CONNECT needs host:port");
			return;
		}
		conn_decide_and_go(c, host, host_len, NULL, 0);
		return;
	}

	{
		struct sl_http_url u;
		const struct sl_http_span *hh;
		size_t n_host;

		if (sl_http_parse_url(&r->target, &u, &why) < 0) {
			conn_respond_error(c, 400, "bad-request", why);
			return;
		}
		c->port = u.port;
		c->path = strndup(u.path.p, u.path.len);
		if (!c->path) {
			conn_close(c);
			return;
		}
		/* A Host header that names another host than the URL is
		 * virtual-host fronting: the origin would serve the Host. */
		hh = sl_http_header(r, "host", &n_host);
		if (hh) {
			const char *h1, *h2;
			size_t l1, l2;
			uint16_t p1, p2;
			char n1[SL_HOST_BUF], n2[SL_HOST_BUF];
			enum sl_host_kind k1, k2;

			if (sl_host_split(hh->p, hh->len, &h1, &l1, &p1, &why) < 0 ||
			    sl_host_split(u.host.p, u.host.len, &h2, &l2, &p2, &why) < 0 ||
			    sl_host_normalize(h1, l1, n1, &k1, NULL) < 0 ||
			    sl_host_normalize(h2, l2, n2, &k2, NULL) < 0 || strcmp(n1, n2) != 0 ||
			    (p1 ? p1 : 80) != u.port) {
				conn_respond_error(
				    c, 400, "host-mismatch",
				    "the Host header does not match the request target");
				return;
			}
		}
		conn_decide_and_go(c, u.host.p, u.host.len, c->path, strlen(c->path));
	}
}

void conn_head_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t max = c->gw->cfg.max_header_bytes;
	bool began;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0) {
			c->refused = true;
			c->reason = c->len ? "incomplete-request" : "no-request";
			conn_close(c);
		}
		return;
	}
	/* Only the head is capped (the parser refuses one over max with
	 * 431): a read may bring the head and the start of its body, which
	 * must reach the origin whole. One read past the cap is the most
	 * ever kept. */
	if (c->len > max) {
		free(buf->base);
		conn_respond_error(c, 431, "header-too-large", "request head too large");
		return;
	}
	began = c->len == 0;
	if (conn_buf_append(c, buf, (size_t)nread) < 0) {
		conn_close(c);
		return;
	}
	/* A head has begun: its deadline runs from now, and bytes trickling
	 * in do not push it back (slowloris). The first request's runs from
	 * the accept. */
	if (began && c->n_exchanges)
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	if (c->state == ST_IDLE)
		conn_set_state(c, ST_HEAD);
	conn_process_head(c);
}

/* Parse what we have of a request head; go on when it is complete. */
void conn_process_head(struct conn *c)
{
	struct sl_http_request r;
	const char *why = NULL;
	int status = 0, k;

	if (c->captured) {
		conn_capture_classify(c);
		return;
	}
	k = sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &status, &why);
	if (k == 0)
		return;
	if (k < 0) {
		conn_respond_error(c, status, status == 431 ? "header-too-large" : "bad-request",
				   why);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->client);
	uv_timer_stop(&c->timer);
	if (c->pinned)
		conn_tunnel_http_head(c, &r); /* plain HTTP inside a CONNECT */
	else
		handle_head(c, &r);
}

/* ---- accept ---- */

void sl_gw_conn_accept(struct sl_gw *gw, uv_stream_t *server, bool captured)
{
	struct sockaddr_storage peer;
	int peer_len = sizeof(peer);
	struct conn *c = calloc(1, sizeof(*c));
	char ip[INET6_ADDRSTRLEN] = "?";

	if (!c)
		return;
	c->gw = gw;
	c->start_wall_ms = sl_audit_now_ms();
	c->start_loop_ms = uv_now(gw->loop);
	uv_tcp_init(gw->loop, &c->client);
	c->client.data = c;
	uv_timer_init(gw->loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 2;
	c->pol = sl_gw_policy_ref(gw->policy);
	c->next = gw->conns;
	if (gw->conns)
		gw->conns->prev = c;
	gw->conns = c;
	gw->n_conns++;

	if (uv_accept(server, (uv_stream_t *)&c->client) < 0) {
		c->refused = true;
		c->reason = "accept-failed";
		conn_close(c);
		return;
	}
	peer.ss_family = AF_UNSPEC;
	if (uv_tcp_getpeername(&c->client, (struct sockaddr *)&peer, &peer_len) == 0) {
		uint16_t port = 0;

		if (peer.ss_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, ip,
				  sizeof(ip));
			port = ntohs(((struct sockaddr_in *)&peer)->sin_port);
			snprintf(c->client_addr, sizeof(c->client_addr), "%s:%u", ip, port);
		} else {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, ip,
				  sizeof(ip));
			port = ntohs(((struct sockaddr_in6 *)&peer)->sin6_port);
			snprintf(c->client_addr, sizeof(c->client_addr), "[%s]:%u", ip, port);
		}
	}
	/* Only the sandbox is served: another uid on the host, or a
	 * neighbour that routes the pool here, would have the operator's
	 * credentials injected for it. The host's rules drop such peers
	 * before they get here; this holds if those rules are gone. Closed
	 * without a word, audited (rate-limited) as one record. */
	if (!captured && !sl_gw_peer_allowed(gw, peer.ss_family == AF_UNSPEC
							 ? NULL
							 : (const struct sockaddr *)&peer)) {
		sl_gw_audit_refused_peer(gw, "connect", c->client_addr[0] ? c->client_addr : "?");
		conn_close_unaudited(c);
		return;
	}
	/* The audit log cannot be written: nothing new is decided. Closed at
	 * once, with no record (there is nowhere to write it). */
	if (!sl_gw_audit_ok(gw)) {
		conn_close_unaudited(c);
		return;
	}
	if (gw->n_conns > gw->cfg.max_connections) {
		conn_respond_error(c, 503, "too-many-connections",
				   "too many connections from this sandbox");
		return;
	}
	uv_tcp_nodelay(&c->client, 1);
	conn_set_state(c, ST_HEAD);
	if (captured) {
		uv_os_fd_t fd;
		socklen_t len = sizeof(c->orig);

		/* The destination the sandbox's nftables redirected away from;
		 * this socket lives in the sandbox's namespace, where the NAT
		 * happened, so its conntrack can answer. */
		c->captured = true;
		if (uv_fileno((uv_handle_t *)&c->client, &fd) < 0 ||
		    getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &c->orig, &len) < 0 ||
		    c->orig.sin_family != AF_INET) {
			c->refused = true;
			c->reason = "no-original-destination";
			conn_close(c);
			return;
		}
		inet_ntop(AF_INET, &c->orig.sin_addr, c->orig_str, sizeof(c->orig_str));
		c->port = ntohs(c->orig.sin_port);
		if (conn_capture_decide_at_once(c))
			return;
		conn_arm_timer(c, gw->cfg.capture_wait_ms);
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_capture_read);
		return;
	}
	conn_arm_timer(c, gw->cfg.header_timeout_ms);
	uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_head_read);
}

void sl_gw_conn_close_all(struct sl_gw *gw)
{
	struct conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		conn_close(c);
	}
}
