/* SPDX-License-Identifier: MIT */
/*
 * The core of one proxy connection:
 *
 *   accept -> read the request head (the handler parses it) -> decide ->
 *   resolve -> connect (conn-decide.c) -> the handler starts the relay ->
 *   relay both ways with backpressure -> DONE or CLOSED: the audit record
 *
 * The core names no handler: it calls c->handler (conn-internal.h), and every state
 * change goes through conn_set_state(). Every connection has a hard cap on buffered
 * bytes (the head, the peeked hello, each direction's write queue) and on time (the
 * head deadline, the connect timeout, the idle timeout). The struct is freed only when
 * its last libuv handle has closed (CLOSED), and its exchange's record is written then.
 */
#include <arpa/inet.h>
#include <errno.h>
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
static void up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void relay_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

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
	if (c->handler->free)
		c->handler->free(c);
	sl_gw_policy_unref(c->pol);
	free(c->buf);
	free(c->path);
	free(c->rbuf);
	free(c->pipelined);
	free(c->tls_rest);
	free(c->retry_head);
	free(c);
	sl_gw_maybe_free(gw);
}

/* The record of the exchange under way, unless it has one: the one
 * writer. conn_set_state() calls it when an exchange ends (DONE) and when
 * the connection does (CLOSED); inspect.c for each exchange inside its
 * TLS. A path cannot skip the record (every connection ends in CLOSED) nor
 * write it twice (c->audited says it is written). */
const char *conn_reason(const struct conn *c)
{
	return c->reason ? c->reason : c->decided ? sl_reason_to_string(c->dec.reason) : NULL;
}

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
	    .decision = c->decided && !c->refused ? sl_verdict_to_string(c->dec.verdict) : "deny",
	    .reason = conn_reason(c),
	    .tls = c->inspect ? "inspect"
		   : (c->is_connect && c->state_was_relay) || c->tls_seen ? "passthrough"
									  : NULL,
	    .credential = c->credential,
	    .sni = c->sni[0] ? c->sni : NULL,
	    .bytes_up = (int64_t)c->bytes_up,
	    .bytes_down = (int64_t)c->bytes_down,
	    .duration_ms = (int64_t)(uv_now(c->gw->loop) - c->start_loop_ms),
	    .proto = c->socks ? "socks5" : NULL,
	    .approval = c->approval.outcome,
	    .approved_by = c->approval.uid, .wait_ms = (int64_t)c->approval.wait_ms,
	};
	char rule[96];

	if (c->audited)
		return;
	c->audited = true;
	if (c->decided)
		r.rule = sl_decision_rule_id(&c->dec, rule, sizeof(rule));
	sl_gw_audit_record(c->gw, &r);
	(void)sl_gw_audit_ok(c->gw);
	c->approval = (struct sl_gw_approval){0};
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

/* An upstream handle of c's has closed: freed, and no longer c's. */
static struct conn *up_closed(uv_handle_t *h)
{
	struct conn_up *up = container_of((uv_tcp_t *)h, struct conn_up, tcp);
	struct conn *c = up->c;

	if (c->up == up) {
		c->up = NULL;
		c->upstream_open = false;
	}
	conn_up_free(up);
	return c;
}

static void upstream_closed(uv_handle_t *h)
{
	struct conn *c = up_closed(h);

	if (--c->open_handles == 0)
		conn_last_handle_closed(c);
}

static void close_upstream(struct conn *c)
{
	if (c->upstream_open && !uv_is_closing((uv_handle_t *)&c->up->tcp))
		uv_close((uv_handle_t *)&c->up->tcp, upstream_closed);
}

void conn_drop_upstream(struct conn *c)
{
	close_upstream(c);
	c->up = NULL;
	c->upstream_open = false;
}

void conn_close(struct conn *c)
{
	if (c->state == ST_CLOSING)
		return;
	conn_set_state(c, ST_CLOSING);
	sl_gw_hold_cancel(TAKE_PTR(c->hold));
	sl_gw_resolve_cancel(c->rreq);
	c->rreq = NULL;
	uv_timer_stop(&c->timer);
	if (c->handler->close)
		c->handler->close(c);
	close_handle(c, (uv_handle_t *)&c->timer);
	close_handle(c, (uv_handle_t *)&c->client);
	close_upstream(c);
	if (c->body_active)
		sl_http_body_done(&c->body);
	c->body_active = false;
}

/* ---- writing ---- */

struct wreq {
	uv_write_t req;
	struct conn *c;
	struct conn_up *up; /* written to this upstream; NULL: to the client */
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
	/* Written to an upstream c has let go of (to the pool, where another
	 * connection may have taken it since, or dropped for a retry): c may
	 * be gone, and it is nothing of c's exchange anyway. */
	if (w->up && (w->up->c != c || c->up != w->up)) {
		free(w);
		return;
	}
	free(w);
	if (c->state == ST_CLOSING)
		return;
	/* An upstream taken from the pool may have been closed by its
	 * origin in the meantime: the handler may send the request again
	 * (conn-http.c), as it does when the read says so. */
	if (status < 0 && !to_client && c->up->reused && c->handler->upstream_read) {
		uv_buf_t none = uv_buf_init(NULL, 0);

		c->handler->upstream_read(c, status, &none);
		return;
	}
	if (status < 0 || close_after) {
		conn_close(c);
		return;
	}
	/* The other side paused because this queue was full: let it go on
	 * once the queue has drained to half. */
	if (to_client && c->handler->written)
		c->handler->written(c);
	else
		resume_reading(c, !to_client);
}

/* Queue data (owned, malloc'd) to the client or the upstream. */
int conn_send_owned(struct conn *c, bool to_client, char *data, size_t len, bool close_after)
{
	uv_stream_t *dst = to_client ? (uv_stream_t *)&c->client : conn_upstream(c);
	uv_buf_t b = uv_buf_init(data, (unsigned)len);
	struct wreq *w;
	int r;

	/* Written at once where the socket has room (nothing queued before
	 * it: uv_try_write says EAGAIN otherwise), the usual case: no
	 * request, no callback, and none of the epoll_ctl libuv makes after
	 * each queued write. What is done then needs no callback either:
	 * nothing waited on this queue. The rest, if any, is queued. */
	if (!close_after && len) {
		r = uv_try_write(dst, &b, 1);
		if (r == (int)len) {
			free(data);
			return 0;
		}
		if (r < 0 && r != UV_EAGAIN) {
			free(data);
			return r;
		}
		if (r > 0)
			b = uv_buf_init(data + r, (unsigned)(len - (size_t)r));
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(data);
		return -ENOMEM;
	}
	w->c = c;
	w->data = data;
	w->to_client = to_client;
	w->close_after = close_after;
	if (!to_client)
		w->up = c->up;
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
	close_upstream(c);
	n = conn_refusal(c, status, conn_reason(c), why, &msg);
	if (n < 0 || conn_send_owned(c, true, msg, (size_t)n, true) < 0)
		conn_close(c);
}

static void timer_fired(uv_timer_t *t)
{
	struct conn *c = t->data;

	/* The handler first: the deadline may mean its own (a server-first capture, inspect.c). */
	if (c->handler->timer && c->handler->timer(c))
		return;
	switch (c->state) {
	case ST_IDLE:
	case ST_HEAD:
		conn_respond_error(c, 408, "header-timeout",
				   "timed out waiting for the request head");
		break;
	case ST_RESOLVING:
	case ST_CONNECTING:
		conn_respond_error(c, 504, "connect-timeout", "timed out connecting upstream");
		break;
	case ST_PEEK:
		/* A tunnel whose first bytes never came: nothing was decided
		 * to relay (a server-first protocol needs protocol: tcp). */
		c->refused = true;
		c->reason = "header-timeout";
		conn_close(c);
		break;
	case ST_SERVER_HELLO:
	case ST_RELAY:
		/* Allowed, relayed, then quiet for too long: not a refusal. */
		c->reason = "idle-timeout";
		conn_close(c);
		break;
	case ST_NEW:
	case ST_INSPECT:
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
	if (c->hold)
		return; /* held: the hold's deadline is the only one */
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
	uv_stream_t *dst;

	/* No upstream of c's (see conn_maybe_pause): nothing to resume. */
	if (c->state != ST_RELAY || !c->upstream_open)
		return;
	dst = client ? conn_upstream(c) : (uv_stream_t *)&c->client;
	if (uv_stream_get_write_queue_size(dst) > c->gw->cfg.max_buffered_bytes / 2)
		return;
	if (client && c->client_paused && !c->client_eof && !c->body_done) {
		c->client_paused = false;
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, relay_client_read);
	} else if (!client && c->upstream_paused && !c->upstream_eof) {
		c->upstream_paused = false;
		uv_read_start(conn_upstream(c), up_alloc, up_read);
	}
}

/* Pause the source when the destination's queue is over the cap: a slow
 * reader stalls its writer instead of growing our memory. An upstream c
 * has let go of (the read that ended a response gave it to the pool, or
 * it was dropped) is neither: c->up is NULL, and another exchange may
 * hold it by now. */
void conn_maybe_pause(struct conn *c, bool client)
{
	uv_stream_t *dst;

	if (!c->upstream_open)
		return;
	dst = client ? conn_upstream(c) : (uv_stream_t *)&c->client;
	if (uv_stream_get_write_queue_size(dst) <= c->gw->cfg.max_buffered_bytes)
		return;
	if (client) {
		c->client_paused = true;
		uv_read_stop((uv_stream_t *)&c->client);
	} else {
		c->upstream_paused = true;
		uv_read_stop(conn_upstream(c));
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
	uv_stream_t *dst = from_client ? conn_upstream(c) : (uv_stream_t *)&c->client;

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
	uv_timer_again(&c->timer);
	/* Plain HTTP forwards only the request's own body, framed anew. */
	if (c->handler->client_bytes && c->handler->client_bytes(c, buf->base, n))
		return;
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
	/* Plain HTTP reads the response for its end (keep-alive). */
	if (c->handler->upstream_read) {
		c->handler->upstream_read(c, nread, buf);
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
		if (c->client_eof) {
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

/* An upstream handle reads with these from its first read to its close,
 * whoever has it: c's relay while c has it, the pool's watch while it is
 * pooled (conn-pool.h). Going to the pool and back changes no callback,
 * so it costs the kernel nothing (a stop and a start are two epoll_ctl). */
static void up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn_up *up = container_of((uv_tcp_t *)h, struct conn_up, tcp);

	if (up->c)
		conn_alloc_cb(h, suggested, buf);
	else
		conn_pool_alloc(h, suggested, buf);
}

static void up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn_up *up = container_of((uv_tcp_t *)s, struct conn_up, tcp);

	if (up->c)
		relay_upstream_read(s, nread, buf);
	else
		conn_pool_read(s, nread, buf);
}

void conn_start_relay(struct conn *c)
{
	conn_set_state(c, ST_RELAY);
	c->state_was_relay = true;
	uv_timer_start(&c->timer, timer_fired, c->gw->cfg.idle_timeout_ms,
		       c->gw->cfg.idle_timeout_ms);
	if (!c->body_done) {
		uv_read_stop((uv_stream_t *)&c->client); /* it may be held */
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, relay_client_read);
	}
	/* One taken from the pool is reading already, and goes on. */
	if (!c->up->reused)
		conn_read_upstream(c);
}

void conn_read_upstream(struct conn *c)
{
	uv_read_start(conn_upstream(c), up_alloc, up_read);
}

/* ---- the request head ---- */

/* The client's bytes after this request's body: the next request, kept
 * whole (a head and part of its body can come in one read); the head's
 * own cap applies when it is parsed. */
int conn_keep_pipelined(struct conn *c, const char *p, size_t n)
{
	char *grown;

	if (n == 0)
		return 0;
	grown = realloc(c->pipelined, c->pipelined_len + n);
	if (!grown)
		return -ENOMEM;
	memcpy(grown + c->pipelined_len, p, n);
	c->pipelined = grown;
	c->pipelined_len += n;
	return 0;
}

/* The client's bytes while its request is decided, connected or answered
 * (conn_head_read still reading: it had no body): the next request's,
 * kept after what came with the head (c->buf, until the handler took it)
 * or after the pipelined bytes. Past a head's worth, reading stops until
 * the next request (conn_next_request). The client's end (EOF) stops it
 * too, and this exchange goes on: the next request's read sees the end
 * again. */
static void hold_read(struct conn *c, ssize_t nread, const uv_buf_t *buf)
{
	uv_stream_t *s = (uv_stream_t *)&c->client;
	int r;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0 && nread != UV_EOF)
			conn_close(c);
		return;
	}
	if (c->buf) {
		r = conn_buf_append(c, buf, (size_t)nread);
	} else {
		r = conn_keep_pipelined(c, buf->base, (size_t)nread);
		free(buf->base);
	}
	if (r < 0) {
		conn_close(c);
		return;
	}
	if (c->len + c->pipelined_len > c->gw->cfg.max_header_bytes)
		uv_read_stop(s);
}

void conn_head_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t max = c->gw->cfg.max_header_bytes;
	bool began;

	if (c->state != ST_HEAD && c->state != ST_IDLE) {
		hold_read(c, nread, buf);
		return;
	}

	/* Captured, the first bytes may be a ClientHello, not a head. */
	if (c->captured)
		max = max + 1 > HELLO_MAX ? max + 1 : HELLO_MAX;
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
	 * the accept (captured: from its first byte, after capture_wait). */
	if (began && (c->n_exchanges || c->captured))
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	if (c->state == ST_IDLE)
		conn_set_state(c, ST_HEAD);
	conn_process_head(c);
}

void conn_process_head(struct conn *c)
{
	if (c->handler->head)
		c->handler->head(c);
	else
		conn_close(c); /* a handler that reads no heads: a bug, closed */
}

/* ---- the next request ---- */

/* Forget the finished exchange; keep the connection's own state. */
static void reset_exchange(struct conn *c)
{
	free(c->path);
	c->path = NULL;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rlen = 0;
	c->parsed = c->decided = c->refused = c->audited = false;
	c->reason = NULL;
	c->status = 0;
	c->status_seen = false;
	c->bytes_up = c->bytes_down = 0;
	c->start_wall_ms = sl_audit_now_ms();
	c->start_loop_ms = uv_now(c->gw->loop);
	c->body_active = c->body_done = false;
	c->origin_keep_alive = c->up_dirty = c->auth_bound = c->retry_ok = c->retried = false;
	free(c->retry_head);
	c->retry_head = NULL;
	c->resp_head_done = c->keep_alive = c->client_keep_alive = c->head_request = false;
	c->client_eof = c->upstream_eof = false;
	c->client_paused = c->upstream_paused = false;
	c->tunnel = c->tls_seen = false;
	c->sni[0] = '\0';
	memset(&c->resp, 0, sizeof(c->resp));
}

/* The next request on a kept-alive connection: decided on its own, from
 * scratch, starting with whatever the client had already pipelined. */
void conn_next_request(struct conn *c)
{
	int r;

	reset_exchange(c);
	free(c->buf);
	c->buf = c->pipelined;
	c->len = c->pipelined_len;
	c->pipelined = NULL;
	c->pipelined_len = 0;
	c->handler = c->gw->conn_ways[c->way_in];
	conn_set_state(c, c->len ? ST_HEAD : ST_IDLE);
	/* Idle between requests is the idle limit; a started head has the
	 * head deadline. */
	conn_arm_timer(c, c->len ? c->gw->cfg.header_timeout_ms : c->gw->cfg.idle_timeout_ms);
	if (c->len) {
		conn_process_head(c);
		if (c->state != ST_HEAD)
			return;
	}
	/* Still reading (hold_read) or started again: either way, the same
	 * callbacks (a second start is refused, UV_EALREADY). */
	r = uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_head_read);
	if (r < 0 && r != UV_EALREADY)
		conn_close(c);
}

/* A kept-alive exchange's upstream connection is closed: the next request
 * on the client's connection may begin (it needs the handle again). */
static void upstream_closed_next(uv_handle_t *h)
{
	struct conn *c = up_closed(h);

	if (--c->open_handles == 0) {
		conn_last_handle_closed(c);
		return;
	}
	if (c->state != ST_CLOSING)
		conn_next_request(c);
}

bool conn_release_upstream(struct conn *c)
{
	if (!c->upstream_open || !conn_pool_put(c->up))
		return false;
	/* The pool's now; the handle stays open. */
	c->up = NULL;
	c->upstream_open = false;
	c->open_handles--;
	return true;
}

void conn_next_after_upstream(struct conn *c)
{
	if (c->upstream_open)
		uv_close((uv_handle_t *)&c->up->tcp, upstream_closed_next);
	else
		conn_next_request(c);
}
