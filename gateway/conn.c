/* SPDX-License-Identifier: MIT */
/*
 * One proxy connection, top to bottom:
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
#include "gateway-internal.h"
#include "http.h"
#include "macro.h"
#include "tls-hello.h"

#define READ_CHUNK 65536
#define HELLO_MAX (16384 + 5 + 4096)

enum state {
	ST_HEAD,       /* reading the request head */
	ST_RESOLVING,  /* waiting for the resolver */
	ST_CONNECTING, /* waiting for the upstream connect */
	ST_PEEK,       /* CONNECT: reading the ClientHello before relaying */
	ST_RELAY,      /* bytes flow both ways */
	ST_RESPONDING, /* writing an error response, then closing */
	ST_CLOSING,
};

struct conn {
	struct sl_gw *gw;
	struct conn *prev, *next;
	struct sl_gw_policy *pol;
	enum state state;

	uv_tcp_t client;
	uv_tcp_t upstream;
	uv_timer_t timer;
	uv_connect_t connect_req;
	uv_shutdown_t shutdown_client, shutdown_upstream;
	bool upstream_open;
	int open_handles;

	/* The head (and, for CONNECT, the peeked hello) as it arrives. */
	char *buf;
	size_t len;

	/* What was asked and decided, for the audit record. */
	bool is_connect;	 /* a CONNECT through the explicit proxy */
	bool captured;		 /* redirected to us by the sandbox's nftables */
	bool tunnel;		 /* bytes relayed opaque: CONNECT, or captured non-HTTP */
	bool tls_seen;		 /* a ClientHello was checked */
	struct sockaddr_in orig; /* captured: where the client was going */
	char orig_str[INET_ADDRSTRLEN];
	bool parsed;
	char method[16];
	char *path;
	uint16_t port;
	struct sl_decision dec;
	bool decided;
	const char *reason; /* overrides the decision's reason when set */
	bool refused;	    /* we refused it, whatever the policy said */
	char sni[256];
	int status;
	char client_addr[INET6_ADDRSTRLEN + 8];
	uint64_t start_wall_ms, start_loop_ms;
	uint64_t bytes_up, bytes_down;

	struct sl_gw_resolve_req *rreq;

	/* Plain HTTP: where the request body ends (no second request may
	 * follow it to the origin undecided). */
	struct sl_http_body body;
	bool body_active;
	bool body_done;

	/* Plain HTTP responses, and keep-alive to the client. */
	struct sl_http_response resp;
	char *rbuf; /* the response head as it arrives */
	size_t rlen;
	bool resp_head_done;
	bool head_request;
	bool client_keep_alive; /* the request allows it (HTTP/1.1's default) */
	bool keep_alive;        /* ... and the response's framing does too */
	char *pipelined;        /* client bytes after this request's body */
	size_t pipelined_len;
	unsigned n_exchanges;   /* finished and audited on this connection */
	bool audited;

	/* Relay state, per direction. */
	bool client_eof, upstream_eof;
	bool client_paused, upstream_paused;
	bool status_seen;
	bool state_was_relay; /* for the audit: the tunnel carried bytes */
};

/* ---- lifetime ---- */

static void conn_free(struct conn *c)
{
	struct sl_gw *gw = c->gw;

	if (c->prev)
		c->prev->next = c->next;
	else
		gw->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	gw->n_conns--;
	sl_gw_policy_unref(c->pol);
	free(c->buf);
	free(c->path);
	free(c->rbuf);
	free(c->pipelined);
	free(c);
	sl_gw_maybe_free(gw);
}

static void write_audit(struct conn *c)
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
	    .tls = (c->is_connect && c->state_was_relay) || c->tls_seen ? "passthrough" : NULL,
	    .sni = c->sni[0] ? c->sni : NULL,
	    .bytes_up = (int64_t)c->bytes_up,
	    .bytes_down = (int64_t)c->bytes_down,
	    .duration_ms = (int64_t)(uv_now(c->gw->loop) - c->start_loop_ms),
	};
	char rule[96];

	if (c->decided && c->dec.rule)
		r.rule = sl_rule_id(c->dec.rule, rule, sizeof(rule));
	if (c->gw->audit && sl_audit_write(c->gw->audit, &r) < 0)
		fprintf(stderr, "sluice gateway: cannot write the audit log: %m\n");
}

static void handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->open_handles == 0) {
		/* A kept-alive connection that closes between requests has
		 * nothing more to say: its exchanges were audited as each
		 * ended. */
		if (!c->audited && !(c->n_exchanges && !c->parsed && !c->len))
			write_audit(c);
		conn_free(c);
	}
}

static void close_handle(struct conn *c, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, handle_closed);
}

static void conn_close(struct conn *c)
{
	if (c->state == ST_CLOSING)
		return;
	c->state = ST_CLOSING;
	sl_gw_resolve_cancel(c->rreq);
	c->rreq = NULL;
	uv_timer_stop(&c->timer);
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

static void resume_reading(struct conn *c, bool client);

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
	resume_reading(c, !to_client);
}

/* Queue data (owned, malloc'd) to the client or the upstream. */
static int send_owned(struct conn *c, bool to_client, char *data, size_t len, bool close_after)
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

static int send_copy(struct conn *c, bool to_client, const char *data, size_t len, bool close_after)
{
	char *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	return send_owned(c, to_client, copy, len, close_after);
}

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
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

/* Answer with a one-line plain-text reason and close. */
static void respond_error(struct conn *c, int status, const char *reason, const char *why)
{
	char body[768], *msg;
	int blen, n;

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
	c->state = ST_RESPONDING;
	uv_read_stop((uv_stream_t *)&c->client);
	if (c->upstream_open)
		close_handle(c, (uv_handle_t *)&c->upstream);
	blen = snprintf(body, sizeof(body), "sluice: %s\n", why);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		blen = (int)strlen(body);
	n = asprintf(&msg,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\nConnection: close\r\n\r\n%.*s",
		     status, status_text(status), blen, blen, body);
	if (n < 0 || send_owned(c, true, msg, (size_t)n, true) < 0)
		conn_close(c);
}

/* ---- timers ---- */

static void decide_by_address(struct conn *c);
static int keep_pipelined(struct conn *c, const char *p, size_t n);
static bool hop_by_hop(const struct sl_http_request *r, const struct sl_http_span *name);
static void capture_classify(struct conn *c);
static void capture_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void timer_fired(uv_timer_t *t)
{
	struct conn *c = t->data;

	switch (c->state) {
	case ST_HEAD:
		if (c->captured && c->len == 0) {
			/* A protocol where the server speaks first (SMTP, a
			 * database): nothing to read, decide by address. */
			uv_read_stop((uv_stream_t *)&c->client);
			decide_by_address(c);
			break;
		}
		respond_error(c, 408, "header-timeout", "timed out waiting for the request head");
		break;
	case ST_RESOLVING:
	case ST_CONNECTING:
		respond_error(c, 504, "connect-timeout", "timed out connecting upstream");
		break;
	case ST_PEEK:
	case ST_RELAY:
		/* Allowed, relayed, then quiet for too long: not a refusal. */
		c->reason = "idle-timeout";
		conn_close(c);
		break;
	case ST_RESPONDING:
	case ST_CLOSING:
		conn_close(c);
		break;
	}
}

static void arm_timer(struct conn *c, unsigned ms)
{
	uv_timer_start(&c->timer, timer_fired, ms, 0);
}

/* ---- reading ---- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(READ_CHUNK);
	buf->len = buf->base ? READ_CHUNK : 0;
}

static void relay_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void relay_upstream_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void resume_reading(struct conn *c, bool client)
{
	uv_stream_t *dst = client ? (uv_stream_t *)&c->upstream : (uv_stream_t *)&c->client;

	if (c->state != ST_RELAY)
		return;
	if (uv_stream_get_write_queue_size(dst) > c->gw->cfg.max_buffered_bytes / 2)
		return;
	if (client && c->client_paused && !c->client_eof && !c->body_done) {
		c->client_paused = false;
		uv_read_start((uv_stream_t *)&c->client, alloc_cb, relay_client_read);
	} else if (!client && c->upstream_paused && !c->upstream_eof) {
		c->upstream_paused = false;
		uv_read_start((uv_stream_t *)&c->upstream, alloc_cb, relay_upstream_read);
	}
}

/* Pause the source when the destination's queue is over the cap: a slow
 * reader stalls its writer instead of growing our memory. */
static void maybe_pause(struct conn *c, bool client)
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
static void half_close(struct conn *c, bool from_client)
{
	uv_shutdown_t *req = from_client ? &c->shutdown_upstream : &c->shutdown_client;
	uv_stream_t *dst = from_client ? (uv_stream_t *)&c->upstream : (uv_stream_t *)&c->client;

	req->data = c;
	if (uv_shutdown(req, dst, shutdown_done) < 0)
		conn_close(c);
}

/* The request body's framing broke (a bad chunk size): refuse with 400 if
 * the origin's answer has not started reaching the client, else just end. */
static void body_error(struct conn *c)
{
	if (!c->bytes_down) {
		respond_error(c, 400, "bad-request", "bad framing in the request body");
		return;
	}
	c->refused = true;
	c->reason = "bad-request";
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
			half_close(c, true);
		return;
	}
	n = (size_t)nread;
	if (c->body_active) {
		/* Forward only the request's own body: whatever follows it
		 * would reach the origin as a request nobody decided. */
		ssize_t k = sl_http_body_feed(&c->body, buf->base, n);

		if (k < 0) {
			free(buf->base);
			body_error(c);
			return;
		}
		n = (size_t)k;
		if (sl_http_body_is_done(&c->body)) {
			c->body_done = true;
			uv_read_stop(s);
			/* The next request, pipelined: kept for when this
			 * exchange is over, to be decided on its own. */
			if (keep_pipelined(c, buf->base + n, (size_t)nread - n) < 0) {
				free(buf->base);
				conn_close(c);
				return;
			}
		}
		if (n == 0) {
			free(buf->base);
			return;
		}
	}
	uv_timer_again(&c->timer);
	c->bytes_up += n;
	if (send_owned(c, false, buf->base, n, false) < 0) {
		conn_close(c);
		return;
	}
	maybe_pause(c, true);
}

static void note_status(struct conn *c, const char *p, size_t n)
{
	/* "HTTP/1.1 200 ..." : the status, for the audit record. */
	if (c->status_seen || n < 12 || memcmp(p, "HTTP/1.", 7) != 0)
		return;
	c->status_seen = true;
	if (p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' &&
	    p[11] <= '9')
		c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
}

static int keep_pipelined(struct conn *c, const char *p, size_t n)
{
	char *grown;

	if (n == 0)
		return 0;
	if (c->pipelined_len + n > c->gw->cfg.max_header_bytes + 1)
		n = c->gw->cfg.max_header_bytes + 1 - c->pipelined_len; /* over the cap: 431 later */
	grown = realloc(c->pipelined, c->pipelined_len + n);
	if (!grown)
		return -ENOMEM;
	memcpy(grown + c->pipelined_len, p, n);
	c->pipelined = grown;
	c->pipelined_len += n;
	return 0;
}

static void next_request(struct conn *c);
static void process_head(struct conn *c);

/* A kept-alive exchange's upstream connection is closed: the next request
 * on the client's connection may begin (it needs the handle again). */
static void upstream_closed_next(uv_handle_t *h)
{
	struct conn *c = h->data;

	c->upstream_open = false;
	if (--c->open_handles == 0) {
		conn_free(c);
		return;
	}
	if (c->state != ST_CLOSING)
		next_request(c);
}

/* The response is complete. With keep-alive, audit this exchange and make
 * ready for the next request; without, end the connection once what we
 * queued for the client is written. */
static void end_exchange(struct conn *c)
{
	uv_read_stop((uv_stream_t *)&c->upstream);
	if (!c->keep_alive) {
		c->client_eof = c->upstream_eof = true;
		half_close(c, false);
		return;
	}
	write_audit(c);
	c->audited = true;
	c->n_exchanges++;
	c->state = ST_RESPONDING; /* nothing runs until the upstream is closed */
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->upstream, upstream_closed_next);
}

/* Headers the origin sent for its hop only: they must not reach the
 * client, which gets our own Connection header instead. */
static bool response_hop_by_hop(const struct sl_http_request *h, const struct sl_http_span *name)
{
	return sl_http_span_caseeq(name, "connection") || sl_http_span_caseeq(name, "keep-alive") ||
	       sl_http_span_caseeq(name, "proxy-connection") ||
	       sl_http_span_caseeq(name, "proxy-authenticate") || hop_by_hop(h, name);
}

static int forward_response_head(struct conn *c, const char *head, const struct sl_http_request *h)
{
	const char *eol = memchr(head, '\r', h->head_len);
	size_t cap = h->head_len + 64, len, i;
	char *out;

	if (!eol)
		return -EINVAL;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	len = (size_t)(eol - head) + 2;
	memcpy(out, head, len);
	for (i = 0; i < h->n_headers; i++) {
		const struct sl_http_header *hd = &h->headers[i];

		if (response_hop_by_hop(h, &hd->name) && !sl_http_span_caseeq(&hd->name, "trailer"))
			continue;
		memcpy(out + len, hd->name.p, hd->name.len);
		len += hd->name.len;
		memcpy(out + len, ": ", 2);
		len += 2;
		memcpy(out + len, hd->value.p, hd->value.len);
		len += hd->value.len;
		memcpy(out + len, "\r\n", 2);
		len += 2;
	}
	len += (size_t)snprintf(out + len, cap - len, "Connection: %s\r\n\r\n",
				c->keep_alive ? "keep-alive" : "close");
	c->bytes_down += len;
	return send_owned(c, true, out, len, false);
}

/* Plain HTTP: bytes from the origin. The head is parsed and rewritten, the
 * body relayed as it comes, and its end found, so that the client's
 * connection can carry another request. Returns false when c was closed. */
static bool response_bytes(struct conn *c, const char *p, size_t n)
{
	while (!c->resp_head_done) {
		struct sl_http_request h;
		char *grown;
		int k;

		grown = realloc(c->rbuf, c->rlen + n);
		if (!grown) {
			conn_close(c);
			return false;
		}
		memcpy(grown + c->rlen, p, n);
		c->rbuf = grown;
		c->rlen += n;
		n = 0;
		k = sl_http_response_begin(&c->resp, c->rbuf, c->rlen, 65536, c->head_request, &h);
		if (k == 0)
			return true;
		if (k < 0) {
			if (c->bytes_down == 0)
				respond_error(c, 502, "bad-response", "the origin's response was unreadable");
			else
				conn_close(c);
			return false;
		}
		c->status = c->resp.status;
		if (c->status >= 100 && c->status < 200 && c->status != 101) {
			/* An interim answer (100 Continue): pass it on as it is
			 * and read the final one. */
			c->bytes_down += (size_t)k;
			if (send_copy(c, true, c->rbuf, (size_t)k, false) < 0) {
				conn_close(c);
				return false;
			}
		} else {
			c->keep_alive = c->client_keep_alive && c->resp.self_delimited &&
					c->status != 101;
			if (forward_response_head(c, c->rbuf, &h) < 0) {
				conn_close(c);
				return false;
			}
			c->resp_head_done = true;
		}
		/* What followed the head is body (or the next head). */
		memmove(c->rbuf, c->rbuf + k, c->rlen - (size_t)k);
		c->rlen -= (size_t)k;
		if (c->resp_head_done) {
			p = c->rbuf;
			n = c->rlen;
			c->rlen = 0;
			if (!c->resp.done && n) {
				ssize_t b = sl_http_response_feed(&c->resp, p, n);

				if (b < 0) {
					conn_close(c);
					return false;
				}
				c->bytes_down += (size_t)b;
				if (b && send_copy(c, true, p, (size_t)b, false) < 0) {
					conn_close(c);
					return false;
				}
			}
			if (c->resp.done)
				end_exchange(c);
			return c->state != ST_CLOSING;
		}
		p = NULL;
	}
	{
		ssize_t b = sl_http_response_feed(&c->resp, p, n);

		if (b < 0) {
			conn_close(c);
			return false;
		}
		c->bytes_down += (size_t)b;
		if (b && send_copy(c, true, p, (size_t)b, false) < 0) {
			conn_close(c);
			return false;
		}
		if (c->resp.done)
			end_exchange(c);
	}
	return c->state != ST_CLOSING;
}

static void relay_upstream_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	if (nread == 0) {
		free(buf->base);
		return;
	}
	if (!c->tunnel) {
		if (nread < 0) {
			free(buf->base);
			c->upstream_eof = true;
			uv_read_stop(s);
			if (!c->resp_head_done && c->bytes_down == 0) {
				respond_error(c, 502, "bad-response",
					      "the origin closed without a response");
			} else if (c->resp_head_done && !c->resp.self_delimited) {
				/* The end of a close-delimited body. */
				c->keep_alive = false;
				end_exchange(c);
			} else if (!c->resp.done) {
				conn_close(c); /* cut short */
			}
			return;
		}
		uv_timer_again(&c->timer);
		(void)response_bytes(c, buf->base, (size_t)nread);
		free(buf->base);
		if (c->state == ST_RELAY)
			maybe_pause(c, false);
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
			half_close(c, false);
		} else if (c->client_eof) {
			conn_close(c);
		} else {
			half_close(c, false);
		}
		return;
	}
	if (!c->tunnel)
		note_status(c, buf->base, (size_t)nread);
	uv_timer_again(&c->timer);
	c->bytes_down += (size_t)nread;
	if (send_owned(c, true, buf->base, (size_t)nread, false) < 0) {
		conn_close(c);
		return;
	}
	maybe_pause(c, false);
}

static void start_relay(struct conn *c)
{
	c->state = ST_RELAY;
	c->state_was_relay = true;
	uv_timer_start(&c->timer, timer_fired, c->gw->cfg.idle_timeout_ms,
		       c->gw->cfg.idle_timeout_ms);
	if (!c->body_done)
		uv_read_start((uv_stream_t *)&c->client, alloc_cb, relay_client_read);
	uv_read_start((uv_stream_t *)&c->upstream, alloc_cb, relay_upstream_read);
}

/* ---- CONNECT: the ClientHello's SNI must name the host we decided on ---- */

static void peek_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* Check what the client sent first through the tunnel. A TLS ClientHello
 * whose SNI names another host is domain fronting: the CONNECT said one
 * host, the TLS session asks the (shared) front end for another. */
static void peek_check(struct conn *c)
{
	struct sl_tls_hello h;
	int r = sl_tls_parse_client_hello((const uint8_t *)c->buf, c->len, &h);

	if (r == -EAGAIN) {
		if (c->len >= HELLO_MAX) {
			c->refused = true;
			c->reason = "bad-client-hello";
			conn_close(c);
		}
		return; /* read on */
	}
	uv_read_stop((uv_stream_t *)&c->client);
	if (r == 0) {
		if (h.ech) {
			/* The outer SNI of an Encrypted ClientHello is not the
			 * real destination: nothing here can be decided. */
			c->refused = true;
			c->reason = "ech";
			conn_close(c);
			return;
		}
		c->tls_seen = true;
		snprintf(c->sni, sizeof(c->sni), "%s", h.sni);
		if (h.sni[0]) {
			char norm[SL_HOST_BUF];
			enum sl_host_kind kind;

			if (sl_host_normalize(h.sni, strlen(h.sni), norm, &kind, NULL) < 0 ||
			    strcmp(norm, c->dec.host) != 0) {
				c->refused = true;
				c->reason = "sni-mismatch";
				conn_close(c);
				return;
			}
		}
	} else if (r != -EINVAL) {
		/* It claimed to be TLS but is malformed. */
		c->refused = true;
		c->reason = "bad-client-hello";
		conn_close(c);
		return;
	}
	/* Not TLS at all (-EINVAL), or a hello for the right host: relay,
	 * starting with what we peeked. */
	if (c->len) {
		c->bytes_up += c->len;
		if (send_owned(c, false, c->buf, c->len, false) < 0) {
			c->buf = NULL;
			conn_close(c);
			return;
		}
		c->buf = NULL;
		c->len = 0;
	}
	start_relay(c);
}

static void peek_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	char *grown;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0)
			conn_close(c);
		return;
	}
	if (c->len + (size_t)nread > HELLO_MAX) {
		free(buf->base);
		c->refused = true;
		c->reason = "bad-client-hello";
		conn_close(c);
		return;
	}
	grown = realloc(c->buf, c->len + (size_t)nread);
	if (!grown) {
		free(buf->base);
		conn_close(c);
		return;
	}
	memcpy(grown + c->len, buf->base, (size_t)nread);
	free(buf->base);
	c->buf = grown;
	c->len += (size_t)nread;
	peek_check(c);
}

/* ---- connect ---- */

static bool hop_by_hop(const struct sl_http_request *r, const struct sl_http_span *name)
{
	static const char *const always[] = {
	    "connection",	  "keep-alive", "proxy-connection", "proxy-authorization",
	    "proxy-authenticate", "te",		"upgrade",	    "trailer"};
	const struct sl_http_span *conn_hdr;
	size_t i;

	for (i = 0; i < ELEMENTSOF(always); i++)
		if (sl_http_span_caseeq(name, always[i]))
			return true;
	/* Headers the client listed in Connection are hop-by-hop too. */
	conn_hdr = sl_http_header(r, "connection", NULL);
	if (conn_hdr) {
		const char *p = conn_hdr->p, *end = conn_hdr->p + conn_hdr->len;

		while (p < end) {
			const char *tok;

			while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
				p++;
			tok = p;
			while (p < end && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			if ((size_t)(p - tok) == name->len && !strncasecmp(tok, name->p, name->len))
				return true;
		}
	}
	return false;
}

/* The head we send to the origin: origin-form target, the client's end-to-
 * end headers, and "Connection: close" so the origin ends the exchange. */
static int build_forward_head(struct conn *c, const struct sl_http_request *r, char **ret,
			      size_t *ret_len)
{
	size_t cap = r->head_len + 256, len = 0, i;
	char *out = malloc(cap);
	int n;

	if (!out)
		return -ENOMEM;
	n = snprintf(out, cap, "%s %s HTTP/1.1\r\n", c->method, c->path);
	if (n < 0 || (size_t)n >= cap) {
		free(out);
		return -E2BIG;
	}
	len = (size_t)n;
	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (hop_by_hop(r, &h->name))
			continue;
		if (len + h->name.len + h->value.len + 4 >= cap) {
			free(out);
			return -E2BIG;
		}
		memcpy(out + len, h->name.p, h->name.len);
		len += h->name.len;
		memcpy(out + len, ": ", 2);
		len += 2;
		memcpy(out + len, h->value.p, h->value.len);
		len += h->value.len;
		memcpy(out + len, "\r\n", 2);
		len += 2;
	}
	if (!sl_http_header(r, "host", NULL)) {
		n = snprintf(out + len, cap - len, "Host: %s:%u\r\n", c->dec.host, c->port);
		if (n < 0 || (size_t)n >= cap - len) {
			free(out);
			return -E2BIG;
		}
		len += (size_t)n;
	}
	if (len + 21 >= cap) {
		free(out);
		return -E2BIG;
	}
	memcpy(out + len, "Connection: close\r\n\r\n", 21);
	len += 21;
	*ret = out;
	*ret_len = len;
	return 0;
}

static void connected(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	struct sl_http_request r;
	int st = 0;
	const char *why = NULL;
	char *head;
	size_t head_len, rest;

	if (c->state == ST_CLOSING)
		return;
	uv_timer_stop(&c->timer);
	if (status < 0) {
		char msg[SL_HOST_BUF + 128];

		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(status));
		respond_error(c, 502, "connect-failed", msg);
		return;
	}

	if (c->tunnel && c->captured) {
		/* What the client already sent (its hello, its banner) goes
		 * first, then the bytes flow. */
		if (c->len) {
			c->bytes_up += c->len;
			if (send_owned(c, false, c->buf, c->len, false) < 0) {
				c->buf = NULL;
				conn_close(c);
				return;
			}
			c->buf = NULL;
			c->len = 0;
		}
		start_relay(c);
		return;
	}

	if (c->is_connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		/* Anything the client sent after its CONNECT head already
		 * belongs to the tunnel. */
		size_t head_end;

		(void)sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &st,
					    &why);
		head_end = r.head_len;
		memmove(c->buf, c->buf + head_end, c->len - head_end);
		c->len -= head_end;
		c->status = 200;
		if (send_copy(c, true, ok, sizeof(ok) - 1, false) < 0) {
			conn_close(c);
			return;
		}
		c->state = ST_PEEK;
		arm_timer(c, c->gw->cfg.header_timeout_ms);
		if (c->len)
			peek_check(c);
		if (c->state == ST_PEEK)
			uv_read_start((uv_stream_t *)&c->client, alloc_cb, peek_read);
		return;
	}

	/* Plain HTTP: the rewritten head, then whatever part of the body
	 * came with it, then the relay. */
	if (sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &st, &why) <=
		0 ||
	    build_forward_head(c, &r, &head, &head_len) < 0) {
		respond_error(c, 400, "bad-request", "request head could not be forwarded");
		return;
	}
	c->bytes_up += head_len;
	if (send_owned(c, false, head, head_len, false) < 0) {
		conn_close(c);
		return;
	}
	if (sl_http_body_init(&c->body, c->buf, r.head_len) < 0) {
		conn_close(c);
		return;
	}
	c->body_active = true;
	c->body_done = sl_http_body_is_done(&c->body);
	rest = c->len - r.head_len;
	if (rest && !c->body_done) {
		ssize_t k = sl_http_body_feed(&c->body, c->buf + r.head_len, rest);

		if (k < 0) {
			body_error(c);
			return;
		}
		if (k > 0) {
			c->bytes_up += (size_t)k;
			if (send_copy(c, false, c->buf + r.head_len, (size_t)k, false) < 0) {
				conn_close(c);
				return;
			}
		}
		c->body_done = sl_http_body_is_done(&c->body);
		if (c->body_done &&
		    keep_pipelined(c, c->buf + r.head_len + k, rest - (size_t)k) < 0) {
			conn_close(c);
			return;
		}
	} else if (rest && keep_pipelined(c, c->buf + r.head_len, rest) < 0) {
		conn_close(c);
		return;
	}
	c->head_request = sl_http_span_eq(&r.method, "HEAD");
	c->client_keep_alive = r.keep_alive;
	free(c->buf);
	c->buf = NULL;
	c->len = 0;
	start_relay(c);
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

	c->state = ST_CONNECTING;
	r = uv_tcp_init(c->gw->loop, &c->upstream);
	if (r < 0) {
		respond_error(c, 502, "connect-failed", "cannot create a socket");
		return;
	}
	c->upstream.data = c;
	c->upstream_open = true;
	c->open_handles++;
	c->connect_req.data = c;
	arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = uv_tcp_connect(&c->connect_req, &c->upstream, (const struct sockaddr *)&to, connected);
	if (r < 0) {
		char msg[SL_HOST_BUF + 128];

		snprintf(msg, sizeof(msg), "cannot connect to %s:%u: %s", c->dec.host, c->port,
			 uv_strerror(r));
		respond_error(c, 502, "connect-failed", msg);
	}
}

/* The first address the policy lets us reach: never the gateway host's
 * own, never a special range unless private_addresses lists it (SSRF and
 * DNS rebinding: the name is the client's, the addresses are its DNS's). */
static void connect_first_permitted(struct conn *c, const struct sl_gw_addrs *a)
{
	const char *refused = NULL;
	size_t i;

	for (i = 0; i < a->n; i++) {
		const struct sockaddr *sa = (const struct sockaddr *)&a->addr[i];
		const uint8_t *bytes =
		    sa->sa_family == AF_INET
			? (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr
			: (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		const char *special = sl_gw_addr_special(sa->sa_family, bytes);

		if (sl_gw_is_local(c->gw, sa)) {
			refused = "the gateway host itself";
			continue;
		}
		if (special && !sl_policy_private_allowed(c->pol->p, sa->sa_family, bytes)) {
			refused = special;
			continue;
		}
		start_connect(c, sa);
		return;
	}
	{
		char msg[SL_HOST_BUF + 160];

		snprintf(msg, sizeof(msg),
			 "%s resolves only to addresses the policy does not allow (%s); list the "
			 "range under private_addresses to allow it",
			 c->dec.host, refused ? refused : "none");
		respond_error(c, 403, "private-address", msg);
	}
}

static void resolved(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct conn *c = data;
	char msg[SL_HOST_BUF + 96];

	c->rreq = NULL;
	if (c->state == ST_CLOSING)
		return;
	if (status < 0) {
		snprintf(msg, sizeof(msg), "cannot resolve %s: %s", c->dec.host,
			 status == -ENOENT	? "no such name"
			 : status == -ETIMEDOUT ? "timed out"
						: "resolver error");
		respond_error(c, 502, "resolve-failed", msg);
		return;
	}
	connect_first_permitted(c, addrs);
}

/* ---- decide ---- */

/* Build the one-address list for an IP literal the policy allowed. */
static void literal_addrs(const struct conn *c, struct sl_gw_addrs *a)
{
	memset(a, 0, sizeof(*a));
	if (c->dec.host_kind == SL_HOST_IPV4) {
		struct sockaddr_in *in = (struct sockaddr_in *)&a->addr[0];

		in->sin_family = AF_INET;
		a->n = inet_pton(AF_INET, c->dec.host, &in->sin_addr) == 1;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->addr[0];

		in6->sin6_family = AF_INET6;
		a->n = inet_pton(AF_INET6, c->dec.host, &in6->sin6_addr) == 1;
	}
}

static void decide_and_go(struct conn *c, const char *host, size_t host_len, const char *path,
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

	sl_policy_decide(c->pol->p, &q, &c->dec);
	c->decided = true;
	if (c->dec.verdict != SL_VERDICT_ALLOW) {
		respond_error(c, 403, NULL,
			      sl_policy_explain(c->pol->p, &q, &c->dec, why, sizeof(why)));
		return;
	}
	if (c->tunnel && c->dec.inspect) {
		/* Method, path and credential rules need the requests inside
		 * the tunnel; passing it through opaque would skip them. */
		snprintf(why, sizeof(why),
			 "%s:%u needs TLS inspection (its rules name methods, paths or a "
			 "credential), which this build of sluice does not do yet",
			 c->dec.host, c->port);
		respond_error(c, 403, "inspect-unsupported", why);
		return;
	}

	if (c->dec.host_kind != SL_HOST_NAME) {
		struct sl_gw_addrs a;

		literal_addrs(c, &a);
		connect_first_permitted(c, &a);
		return;
	}
	c->state = ST_RESOLVING;
	arm_timer(c, c->gw->cfg.connect_timeout_ms);
	r = sl_gw_resolve(c->gw->resolver, c->dec.host, resolved, c, &c->rreq);
	if (r < 0)
		respond_error(c, 502, "resolve-failed", "cannot start a DNS lookup");
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
			respond_error(c, 400, "bad-request", why ? why : "CONNECT needs host:port");
			return;
		}
		decide_and_go(c, host, host_len, NULL, 0);
		return;
	}

	{
		struct sl_http_url u;
		const struct sl_http_span *hh;
		size_t n_host;

		if (sl_http_parse_url(&r->target, &u, &why) < 0) {
			respond_error(c, 400, "bad-request", why);
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
				respond_error(c, 400, "host-mismatch",
					      "the Host header does not match the request target");
				return;
			}
		}
		decide_and_go(c, u.host.p, u.host.len, c->path, strlen(c->path));
	}
}

static void head_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t max = c->gw->cfg.max_header_bytes;
	char *grown;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0) {
			c->refused = true;
			c->reason = c->len ? "incomplete-request" : "no-request";
			conn_close(c);
		}
		return;
	}
	/* Keep at most one byte more than the cap: enough to know it is over. */
	if (c->len + (size_t)nread > max + 1)
		nread = (ssize_t)(max + 1 - c->len);
	grown = realloc(c->buf, c->len + (size_t)nread);
	if (!grown) {
		free(buf->base);
		conn_close(c);
		return;
	}
	memcpy(grown + c->len, buf->base, (size_t)nread);
	free(buf->base);
	c->buf = grown;
	c->len += (size_t)nread;
	if (c->n_exchanges)
		arm_timer(c, c->gw->cfg.header_timeout_ms); /* a head has begun */
	process_head(c);
}

/* Parse what we have of a request head; go on when it is complete. */
static void process_head(struct conn *c)
{
	struct sl_http_request r;
	const char *why = NULL;
	int status = 0, k;

	if (c->captured) {
		capture_classify(c);
		return;
	}
	k = sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &status, &why);
	if (k == 0)
		return;
	if (k < 0) {
		respond_error(c, status, status == 431 ? "header-too-large" : "bad-request", why);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->client);
	uv_timer_stop(&c->timer);
	handle_head(c, &r);
}

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
	c->resp_head_done = c->keep_alive = c->client_keep_alive = c->head_request = false;
	c->client_eof = c->upstream_eof = false;
	c->client_paused = c->upstream_paused = false;
	c->tunnel = c->tls_seen = false;
	c->sni[0] = '\0';
	memset(&c->resp, 0, sizeof(c->resp));
}

/* The next request on a kept-alive connection: decided on its own, from
 * scratch, starting with whatever the client had already pipelined. */
static void next_request(struct conn *c)
{
	reset_exchange(c);
	free(c->buf);
	c->buf = c->pipelined;
	c->len = c->pipelined_len;
	c->pipelined = NULL;
	c->pipelined_len = 0;
	c->state = ST_HEAD;
	/* Idle between requests is the idle limit; a started head has the
	 * head deadline. */
	arm_timer(c, c->len ? c->gw->cfg.header_timeout_ms : c->gw->cfg.idle_timeout_ms);
	if (c->len) {
		process_head(c);
		if (c->state != ST_HEAD)
			return;
	}
	uv_read_start((uv_stream_t *)&c->client, alloc_cb, c->captured ? capture_read : head_read);
}

/* ---- transparent capture: decide by SNI, else Host, else the address ---- */

/* Neither SNI nor Host: the name whose DNS answer (ours, to this sandbox)
 * gave out the original destination address decides; failing that, the
 * address itself, which only an address rule can allow. */
static void decide_by_address(struct conn *c)
{
	char name[SL_HOST_BUF];

	c->tunnel = true;
	if (sl_gw_dns_name_for(c->gw, (const struct sockaddr *)&c->orig, name, sizeof(name)) == 0) {
		decide_and_go(c, name, strlen(name), NULL, 0);
		return;
	}
	decide_and_go(c, c->orig_str, strlen(c->orig_str), NULL, 0);
}

/* A captured plain-HTTP request: origin-form target, Host names the host,
 * the port is where the client was really going. */
static void handle_captured_head(struct conn *c, const struct sl_http_request *r)
{
	const struct sl_http_span *hh;
	const char *host, *why = NULL;
	size_t host_len, n_host;
	uint16_t hport;

	c->parsed = true;
	snprintf(c->method, sizeof(c->method), "%.*s", (int)r->method.len, r->method.p);
	if (sl_http_span_eq(&r->method, "CONNECT")) {
		respond_error(c, 400, "bad-request", "CONNECT to a captured connection");
		return;
	}
	c->path = strndup(r->target.p, r->target.len);
	if (!c->path) {
		conn_close(c);
		return;
	}
	hh = sl_http_header(r, "host", &n_host);
	if (!hh || sl_host_split(hh->p, hh->len, &host, &host_len, &hport, &why) < 0) {
		respond_error(c, 400, "bad-request", why ? why : "a request without a Host header");
		return;
	}
	decide_and_go(c, host, host_len, c->path, strlen(c->path));
}

/* 1: the bytes so far start an HTTP request line; 0: too few to tell;
 * -1: not HTTP. */
static int looks_like_http(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len && i < 16; i++) {
		if (p[i] == ' ')
			return i > 0 ? 1 : -1;
		if (p[i] < 'A' || p[i] > 'Z')
			return -1;
	}
	return i == len ? 0 : -1;
}

static void capture_classify(struct conn *c)
{
	if ((unsigned char)c->buf[0] == 0x16) {
		struct sl_tls_hello h;
		int r = sl_tls_parse_client_hello((const uint8_t *)c->buf, c->len, &h);

		if (r == -EAGAIN) {
			if (c->len >= HELLO_MAX) {
				c->refused = true;
				c->reason = "bad-client-hello";
				conn_close(c);
			}
			return;
		}
		uv_read_stop((uv_stream_t *)&c->client);
		uv_timer_stop(&c->timer);
		c->tunnel = true;
		if (r < 0 || h.ech) {
			c->refused = true;
			c->reason = r < 0 ? "bad-client-hello" : "ech";
			conn_close(c);
			return;
		}
		c->tls_seen = true;
		snprintf(c->sni, sizeof(c->sni), "%s", h.sni);
		if (h.sni[0])
			decide_and_go(c, h.sni, strlen(h.sni), NULL, 0);
		else
			decide_by_address(c);
		return;
	}
	switch (looks_like_http(c->buf, c->len)) {
	case 0:
		return;
	case 1: {
		struct sl_http_request r;
		const char *why = NULL;
		int status = 0, k;

		k = sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &status,
					  &why);
		if (k == 0)
			return;
		if (k < 0) {
			respond_error(c, status, status == 431 ? "header-too-large" : "bad-request",
				      why);
			return;
		}
		uv_read_stop((uv_stream_t *)&c->client);
		uv_timer_stop(&c->timer);
		handle_captured_head(c, &r);
		return;
	}
	default:
		uv_read_stop((uv_stream_t *)&c->client);
		uv_timer_stop(&c->timer);
		decide_by_address(c);
		return;
	}
}

static void capture_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t cap = c->gw->cfg.max_header_bytes + 1 > HELLO_MAX ? c->gw->cfg.max_header_bytes + 1
								 : HELLO_MAX;
	char *grown;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0) {
			c->refused = true;
			c->reason = c->len ? "incomplete-request" : "no-request";
			conn_close(c);
		}
		return;
	}
	if (c->len + (size_t)nread > cap) {
		free(buf->base);
		respond_error(c, 431, "header-too-large", "request head too large");
		return;
	}
	grown = realloc(c->buf, c->len + (size_t)nread);
	if (!grown) {
		free(buf->base);
		conn_close(c);
		return;
	}
	memcpy(grown + c->len, buf->base, (size_t)nread);
	free(buf->base);
	c->buf = grown;
	c->len += (size_t)nread;
	capture_classify(c);
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
	if (gw->n_conns > gw->cfg.max_connections) {
		respond_error(c, 503, "too-many-connections",
			      "too many connections from this sandbox");
		return;
	}
	uv_tcp_nodelay(&c->client, 1);
	c->state = ST_HEAD;
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
		arm_timer(c, gw->cfg.capture_wait_ms);
		uv_read_start((uv_stream_t *)&c->client, alloc_cb, capture_read);
		return;
	}
	arm_timer(c, gw->cfg.header_timeout_ms);
	uv_read_start((uv_stream_t *)&c->client, alloc_cb, head_read);
}

void sl_gw_conn_close_all(struct sl_gw *gw)
{
	struct conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		conn_close(c);
	}
}
