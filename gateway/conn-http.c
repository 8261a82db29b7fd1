/* SPDX-License-Identifier: MIT */
/*
 * Plain HTTP through the gateway, the explicit proxy's way in: the request
 * head parsed (a CONNECT handed to the tunnel handler; inside a tunnel
 * that carries plain HTTP, held to its host), the request forwarded with
 * only its own body (nothing after it reaches the origin undecided), the
 * response head rewritten for our hop, its end found, so that the core can
 * read the next request on a kept-alive connection, decided from scratch.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-headers.h"
#include "conn-internal.h"
#include "macro.h"
#include "reqhead.h"

/* The request body's framing broke (a bad chunk size): refuse with 400 if
 * the origin's answer has not started reaching the client, else just end. */
static void body_error(struct conn *c)
{
	if (!c->bytes_down) {
		char why[160];

		snprintf(why, sizeof(why), "bad framing in the request body: %s",
			 c->body.why ? c->body.why : "broken");
		conn_respond_error(c, 400, "bad-framing", why);
		return;
	}
	c->refused = true;
	c->reason = "bad-framing";
	conn_close(c);
}

/* Feed the request body's bytes in p[0..n): what belongs to the body goes
 * to the origin framed by us, never as the client framed it. Returns how
 * many of the n bytes were the body's, or -1 when c was refused or closed. */
static ssize_t body_forward(struct conn *c, const char *p, size_t n)
{
	size_t cap = n + SL_HTTP_BODY_SLACK, olen = 0;
	char *out = malloc(cap);
	ssize_t k;

	if (!out) {
		conn_close(c);
		return -1;
	}
	k = sl_http_body_feed(&c->body, p, n, out, cap, &olen);
	if (k < 0) {
		free(out);
		body_error(c);
		return -1;
	}
	c->body_done = sl_http_body_is_done(&c->body);
	if (olen == 0) {
		free(out);
		return k;
	}
	c->bytes_up += olen;
	if (conn_send_owned(c, false, out, olen, false) < 0) {
		conn_close(c);
		return -1;
	}
	return k;
}


/* The response is complete. With keep-alive, audit this exchange and make
 * ready for the next request; without, end the connection once what we
 * queued for the client is written. */
static void end_exchange(struct conn *c)
{
	/* The upstream goes to the pool only with nothing of this exchange
	 * left on it either way: the request and its body all written (a
	 * write's callback may still be due: conn.c's write_done lets it go
	 * by), the response ended where its framing said with nothing after
	 * it, and the origin keeps the connection. */
	bool reuse = c->origin_keep_alive && c->resp.self_delimited && !c->up_dirty && !c->auth_bound &&
		     c->body_done && !uv_stream_get_write_queue_size(conn_upstream(c)) &&
		     !c->upstream_eof && !c->upstream_paused && c->status != 101;

	/* Pooled, it goes on reading for the pool; else it reads no more. */
	if (!(reuse && conn_release_upstream(c)))
		uv_read_stop(conn_upstream(c));
	if (!c->body_done) {
		/* The origin answered before the body was all here: the
		 * exchange is over, and what the client still sends is the
		 * rest of a body nobody will read, not a request. */
		uv_read_stop((uv_stream_t *)&c->client);
		c->body_done = true;
	}
	if (!c->keep_alive) {
		c->client_eof = c->upstream_eof = true;
		conn_half_close(c, false);
		return;
	}
	conn_set_state(c, ST_DONE); /* audited; the next request once the upstream is gone */
	c->n_exchanges++;
	uv_timer_stop(&c->timer);
	conn_next_after_upstream(c);
}

/* Headers the origin sent for its hop only: they must not reach the
 * client, which gets our own Connection header instead. */
static bool response_hop_by_hop(const struct sl_http_request *h, const struct sl_http_span *name)
{
	return sl_http_span_caseeq(name, "connection") || sl_http_span_caseeq(name, "keep-alive") ||
	       sl_http_span_caseeq(name, "proxy-connection") ||
	       sl_http_span_caseeq(name, "proxy-authenticate") || conn_http_hop_by_hop(h, name);
}

/* A response body's bytes as the client gets them: the origin's framing
 * taken out, ours put in (chunked stays chunked, in chunks of our own;
 * chunk extensions and trailers are not passed on). */
struct resp_out {
	char *p;
	size_t len, cap;
	size_t head_len; /* of which the head (counted already) */
	bool chunked;
};

static int resp_out_put(struct resp_out *o, const char *p, size_t n)
{
	if (n > o->cap - o->len) {
		size_t cap = o->len + n + 64;
		char *grown = realloc(o->p, cap);

		if (!grown)
			return -ENOMEM;
		o->p = grown;
		o->cap = cap;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
	return 0;
}

static int resp_out_data(void *userdata, const char *p, size_t n)
{
	struct resp_out *o = userdata;
	char line[24];
	int k;

	if (!o->chunked)
		return resp_out_put(o, p, n);
	k = snprintf(line, sizeof(line), "%zx\r\n", n);
	if (resp_out_put(o, line, (size_t)k) < 0 || resp_out_put(o, p, n) < 0 ||
	    resp_out_put(o, "\r\n", 2) < 0)
		return -ENOMEM;
	return 0;
}

/* The response head, rewritten for our hop, into o (sent with the first
 * of the body: one write). */
static int forward_response_head(struct conn *c, const char *head, const struct sl_http_request *h,
				 struct resp_out *o)
{
	const char *eol = memchr(head, '\r', h->head_len);
	/* The rebuilt headers (see SL_HTTP_REBUILT_MAX), our Connection line. */
	size_t cap = SL_HTTP_REBUILT_MAX(h->head_len, h->n_headers) + 64, len, i;
	char *out;

	if (!eol)
		return -EINVAL;
	/* A login the origin binds to the connection: whoever takes it next
	 * would be served as this client (never pooled, end_exchange). */
	c->auth_bound |= sl_http_auth_binds_connection(h, "WWW-Authenticate");
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	len = (size_t)(eol - head) + 2;
	memcpy(out, head, len);
	for (i = 0; i < h->n_headers; i++) {
		const struct sl_http_header *hd = &h->headers[i];

		/* Trailer too: the trailers it announces are not passed on. */
		if (response_hop_by_hop(h, &hd->name))
			continue;
		len += sl_http_put_header(out + len, hd);
	}
	len += (size_t)snprintf(out + len, cap - len, "Connection: %s\r\n\r\n",
				c->keep_alive ? "keep-alive" : "close");
	c->bytes_down += len;
	o->p = out;
	o->len = len;
	o->cap = cap;
	return 0;
}

/* Relay what belongs to the response body, framed by us; end the
 * exchange with it. Returns false when c was closed. */
static bool response_body(struct conn *c, const char *p, size_t n, struct resp_out o)
{
	bool was_done = c->resp.done;
	ssize_t b = 0;

	if (n && !c->resp.done) {
		c->resp.on_data = resp_out_data;
		c->resp.userdata = &o;
		b = sl_http_response_feed(&c->resp, p, n);
		c->resp.on_data = NULL;
		c->resp.userdata = NULL;
	}
	if (b >= 0 && !was_done && c->resp.done && c->resp.chunked && resp_out_put(&o, "0\r\n\r\n", 5) < 0)
		b = -ENOMEM;
	if (b < 0) {
		free(o.p);
		conn_close(c);
		return false;
	}
	/* Bytes after the response's end: the origin frames otherwise than
	 * we read it, so nothing more of that connection can be trusted. */
	if (c->resp.done && (size_t)b < n)
		c->up_dirty = true;
	c->bytes_down += o.len - o.head_len;
	if (o.len && conn_send_owned(c, true, o.p, o.len, false) < 0) {
		conn_close(c);
		return false;
	}
	if (!o.len)
		free(o.p);
	if (c->resp.done)
		end_exchange(c);
	return c->state != ST_CLOSING;
}

/* Plain HTTP: bytes from the origin. The head is parsed and rewritten, the
 * body relayed as it comes, and its end found, so that the client's
 * connection can carry another request. Returns false when c was closed. */
static bool response_bytes(struct conn *c, const char *p, size_t n)
{
	struct resp_out o = {0};

	while (!c->resp_head_done) {
		struct sl_http_request h;
		char *grown;
		int k;

		/* After an interim answer nothing is added (n == 0): a
		 * realloc to 0 bytes would free rbuf and return NULL. */
		if (n) {
			grown = realloc(c->rbuf, c->rlen + n);
			if (!grown) {
				conn_close(c);
				return false;
			}
			memcpy(grown + c->rlen, p, n);
			c->rbuf = grown;
			c->rlen += n;
			n = 0;
		}
		k = sl_http_response_begin(&c->resp, c->rbuf, c->rlen, 65536, c->head_request, &h);
		if (k == 0)
			return true;
		if (k < 0) {
			if (c->bytes_down == 0)
				conn_respond_error(c, 502, "bad-response",
						   "the origin's response was unreadable");
			else
				conn_close(c);
			return false;
		}
		c->status = c->resp.status;
		if (c->status >= 100 && c->status < 200 && c->status != 101) {
			/* An interim answer (100 Continue): pass it on as it is
			 * and read the final one. */
			c->bytes_down += (size_t)k;
			if (conn_send_copy(c, true, c->rbuf, (size_t)k, false) < 0) {
				conn_close(c);
				return false;
			}
		} else {
			/* An origin that answers before the request's body is
			 * all here leaves the rest unread: those bytes must not
			 * be read as the next request's head. Close, and say so. */
			c->keep_alive = c->client_keep_alive && c->resp.self_delimited &&
					c->status != 101 && c->body_done;
			c->origin_keep_alive = h.keep_alive;
			if (forward_response_head(c, c->rbuf, &h, &o) < 0) {
				conn_close(c);
				return false;
			}
			o.head_len = o.len;
			c->resp_head_done = true;
		}
		/* What followed the head is body (or the next head). */
		memmove(c->rbuf, c->rbuf + k, c->rlen - (size_t)k);
		c->rlen -= (size_t)k;
		if (c->resp_head_done) {
			p = c->rbuf;
			n = c->rlen;
			c->rlen = 0;
			o.chunked = c->resp.chunked;
			return response_body(c, p, n, o);
		}
		p = NULL;
	}
	o.chunked = c->resp.chunked;
	return response_body(c, p, n, o);
}

/* The head we send to the origin: origin-form target and the client's end-
 * to-end headers. No Connection header: HTTP/1.1's default, keep-alive, is
 * what lets the connection go to the pool (conn-pool.h) afterwards. */
static int build_forward_head(struct conn *c, const struct sl_http_request *r, char **ret,
			      size_t *ret_len)
{
	/* The rebuilt headers (see SL_HTTP_REBUILT_MAX); the request line and
	 * Host are bounded. */
	size_t cap = SL_HTTP_REBUILT_MAX(r->head_len, r->n_headers) + 256, len = 0, i;
	char *out = malloc(cap);
	int n;

	if (!out)
		return -ENOMEM;
	c->auth_bound = sl_http_auth_binds_connection(r, "Authorization");
	n = snprintf(out, cap, "%s %s HTTP/1.1\r\n", c->method, c->path);
	if (n < 0 || (size_t)n >= cap) {
		free(out);
		return -E2BIG;
	}
	len = (size_t)n;
	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (conn_http_hop_by_hop(r, &h->name))
			continue;
		/* Another rule for the host injects: the agent's own key, for
		 * an account it controls, goes no more in clear text than it
		 * does over TLS (inspect.c build_upstream_head). */
		if (c->dec.host_injects && sl_reqhead_is_host_credential(c->pol->p, &h->name))
			continue;
		if (len + h->name.len + h->value.len + 4 >= cap) {
			free(out);
			return -E2BIG;
		}
		len += sl_http_put_header(out + len, h);
	}
	if (!sl_http_header(r, "host", NULL)) {
		n = snprintf(out + len, cap - len, "Host: %s:%u\r\n", c->dec.host, c->port);
		if (n < 0 || (size_t)n >= cap - len) {
			free(out);
			return -E2BIG;
		}
		len += (size_t)n;
	}
	if (len + 2 >= cap) {
		free(out);
		return -E2BIG;
	}
	memcpy(out + len, "\r\n", 2);
	len += 2;
	*ret = out;
	*ret_len = len;
	return 0;
}

/* Plain HTTP: bytes (or the end) from the origin. */
static void http_upstream_read(struct conn *c, ssize_t nread, const uv_buf_t *buf)
{
	uv_stream_t *s = conn_upstream(c);

	if (nread < 0) {
		free(buf->base);
		if (c->retry_ok && !c->rlen && !c->resp_head_done) {
			/* The pooled connection was closed before any answer:
			 * the origin never read this request, or it may read it
			 * again without harm. Once, on a new connection. */
			c->retry_ok = false;
			free(c->buf); /* NULL: what the client sent since is pipelined */
			c->buf = c->retry_head;
			c->len = c->retry_len;
			c->retry_head = NULL;
			conn_connect_again(c);
			return;
		}
		c->upstream_eof = true;
		uv_read_stop(s);
		if (!c->resp_head_done) {
			/* Nothing, or only interim answers (100 Continue,
			 * whose c->resp is done): no final response yet. */
			conn_respond_error(c, 502, "bad-response",
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
	if (c->retry_ok) {
		/* An answer began: the request is not sent again. */
		c->retry_ok = false;
		free(c->retry_head);
		c->retry_head = NULL;
	}
	(void)response_bytes(c, buf->base, (size_t)nread);
	free(buf->base);
	if (c->state == ST_RELAY)
		conn_maybe_pause(c, false);
}

/* RFC 9110 9.2.2 */
static bool idempotent(const struct sl_http_span *m)
{
	return sl_http_span_eq(m, "GET") || sl_http_span_eq(m, "HEAD") ||
	       sl_http_span_eq(m, "OPTIONS") || sl_http_span_eq(m, "TRACE") ||
	       sl_http_span_eq(m, "PUT") || sl_http_span_eq(m, "DELETE");
}

static void http_connected(struct conn *c)
{
	struct sl_http_request r;
	int st = 0;
	const char *why = NULL;
	char *head;
	size_t head_len, rest;
	bool no_body;

	/* Plain HTTP: the rewritten head, then whatever part of the body
	 * came with it, then the relay. */
	if (sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &st, &why) <=
		0 ||
	    build_forward_head(c, &r, &head, &head_len) < 0) {
		conn_respond_error(c, 400, "bad-request", "request head could not be forwarded");
		return;
	}
	c->bytes_up += head_len;
	if (conn_send_owned(c, false, head, head_len, false) < 0) {
		conn_close(c);
		return;
	}
	sl_http_body_init_request(&c->body, &r);
	c->body_active = true;
	c->body_done = no_body = sl_http_body_is_done(&c->body);
	/* A request with a body never leaves its connection to the pool: an
	 * origin that reads less of the body than was sent (a handler that
	 * ignores Content-Length, the "CL.0" flaw) reads the rest as a
	 * request nobody decided, and its answer, coming late, would be read
	 * as the answer to whichever exchange took the connection next. A
	 * request without one is our head alone: nothing in it for the
	 * origin to read otherwise. */
	if (!no_body)
		c->up_dirty = true;
	rest = c->len - r.head_len;
	if (rest && !c->body_done) {
		ssize_t k = body_forward(c, c->buf + r.head_len, rest);

		if (k < 0)
			return;
		if (c->body_done &&
		    conn_keep_pipelined(c, c->buf + r.head_len + k, rest - (size_t)k) < 0) {
			conn_close(c);
			return;
		}
	} else if (rest && conn_keep_pipelined(c, c->buf + r.head_len, rest) < 0) {
		conn_close(c);
		return;
	}
	c->head_request = sl_http_span_eq(&r.method, "HEAD");
	c->client_keep_alive = r.keep_alive;
	/* On a pooled connection, an idempotent request with no body keeps
	 * its head, to be sent once more should that connection turn out
	 * closed by its origin before it answers (http_upstream_read). Only
	 * the head: what came after it is the next request's, pipelined
	 * already (a request the client sent in the same write must not
	 * cost this one its retry, nor be kept twice). */
	c->retry_ok = c->up->reused && !c->retried && no_body && idempotent(&r.method);
	if (c->retry_ok) {
		c->retry_head = c->buf;
		c->retry_len = r.head_len;
	} else {
		free(c->buf);
	}
	c->buf = NULL;
	c->len = 0;
	conn_start_relay(c);
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
		conn_use(c, CONN_TUNNEL);
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

/* A request inside a tunnel that carries plain HTTP: origin-form, or
 * absolute-form naming the tunnel's host; its Host must name that host
 * (and port, if it gives one). Then it is decided with its method and
 * path, as plain HTTP is. */
static void pinned_head(struct conn *c, const struct sl_http_request *r)
{
	const struct sl_http_span *hh;
	const char *host, *why = NULL;
	size_t host_len, n_host;
	uint16_t hport;
	char norm[SL_HOST_BUF], msg[SL_HOST_BUF + 128];
	enum sl_host_kind kind;

	c->parsed = true;
	c->port = c->pin_port;
	snprintf(c->method, sizeof(c->method), "%.*s", (int)r->method.len, r->method.p);
	if (sl_http_span_eq(&r->method, "CONNECT")) {
		conn_respond_error(c, 400, "bad-request", "CONNECT inside a tunnel");
		return;
	}
	if (r->target.len && r->target.p[0] == '/') {
		c->path = strndup(r->target.p, r->target.len);
	} else {
		struct sl_http_url u;

		if (sl_http_parse_url(&r->target, &u, &why) < 0) {
			conn_respond_error(c, 400, "bad-request", why);
			return;
		}
		if (sl_host_normalize(u.host.p, u.host.len, norm, &kind, NULL) < 0 ||
		    strcmp(norm, c->pin_host) != 0 || u.port != c->pin_port) {
			snprintf(msg, sizeof(msg),
				 "the request target names another host than the tunnel's %s:%u",
				 c->pin_host, c->pin_port);
			conn_respond_error(c, 400, "host-mismatch", msg);
			return;
		}
		c->path = strndup(u.path.p, u.path.len);
	}
	if (!c->path) {
		conn_close(c);
		return;
	}
	hh = sl_http_header(r, "host", &n_host);
	if (!hh || n_host != 1 ||
	    sl_host_split(hh->p, hh->len, &host, &host_len, &hport, &why) < 0) {
		conn_respond_error(c, 400, "bad-request",
				   why ? why : "a request without exactly one Host header");
		return;
	}
	if (sl_host_normalize(host, host_len, norm, &kind, NULL) < 0)
		norm[0] = '\0';
	if (strcmp(norm, c->pin_host) != 0 || (hport && hport != c->pin_port)) {
		/* Audited with the host it named: refused before any rule. */
		memset(&c->dec, 0, sizeof(c->dec));
		snprintf(c->dec.host, sizeof(c->dec.host), "%s", norm);
		c->decided = norm[0] != '\0';
		snprintf(msg, sizeof(msg), "the Host header names another host than the tunnel's %s:%u",
			 c->pin_host, c->pin_port);
		conn_respond_error(c, 403, "host-mismatch", msg);
		return;
	}
	conn_decide_and_go(c, c->pin_host, strlen(c->pin_host), c->path, strlen(c->path));
}

/* The explicit proxy's request head, as it arrives in c->buf. */
static void http_head(struct conn *c)
{
	struct sl_http_request r;
	const char *why = NULL;
	int status = 0, k;

	/* SOCKS5's greeting (no HTTP request begins with 0x05): served on
	 * the same port (socks.c), so no other needs opening in the fence. */
	if (!c->pinned && !c->n_exchanges && c->len && (uint8_t)c->buf[0] == 0x05) {
		conn_hand_to(c, CONN_SOCKS);
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
	uv_timer_stop(&c->timer);
	/* A request without a body leaves the client reading: what it sends
	 * meanwhile is kept as the next request (conn_head_read), and the
	 * next exchange costs no read stop and start (two epoll_ctl). A body
	 * is read by the relay, a CONNECT by the tunnel: stopped for them. */
	if (r.chunked || (r.has_length && r.content_length) || sl_http_span_eq(&r.method, "CONNECT"))
		uv_read_stop((uv_stream_t *)&c->client);
	if (c->pinned)
		pinned_head(c, &r); /* plain HTTP inside a CONNECT */
	else
		handle_head(c, &r);
	if (c->state == ST_HEAD)
		uv_read_stop((uv_stream_t *)&c->client); /* undecided: nothing more yet */
}

/* Accepted on the proxy's listener: the head's deadline runs from now. */
static void http_start(struct conn *c)
{
	conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_head_read);
}

/* Allowed: what only a plain request's head can say. */
static bool http_decided(struct conn *c)
{
	char why[SL_HOST_BUF + 96];

	if (c->dec.rule && c->dec.rule->has_inject) {
		/* A credential goes only over TLS that we verify. */
		snprintf(why, sizeof(why),
			 "%s carries a credential, which is only sent over TLS: use https://",
			 c->dec.host);
		conn_respond_error(c, 403, "credential-needs-tls", why);
		return false;
	}
	return conn_plain_head_check(c) == 0;
}

/* Relayed bytes from the client: only the request's own body goes on,
 * framed by us: whatever follows it would reach the origin as a request
 * nobody decided, and the client's framing is the client's to bend. */
static bool http_client_bytes(struct conn *c, char *p, size_t n)
{
	ssize_t k;

	if (!c->body_active)
		return false;
	k = body_forward(c, p, n);
	if (k < 0) {
		free(p);
		return true;
	}
	if (c->body_done) {
		uv_read_stop((uv_stream_t *)&c->client);
		/* The next request, pipelined: kept for when this exchange
		 * is over, to be decided on its own. */
		if (conn_keep_pipelined(c, p + k, n - (size_t)k) < 0) {
			free(p);
			conn_close(c);
			return true;
		}
	}
	free(p);
	if (c->state == ST_RELAY)
		conn_maybe_pause(c, true);
	return true;
}

const struct conn_handler conn_http_handler = {
	.name = "http",
	.pooled = true,
	.start = http_start,
	.head = http_head,
	.decided = http_decided,
	.connected = http_connected,
	.client_bytes = http_client_bytes,
	.upstream_read = http_upstream_read,
};
