/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: the origin's response, back to the client. Plaintext
 * read from the upstream TLS connection; the head parsed (interim
 * responses passed on, 101 turns the connection into a websocket relay),
 * its hop-by-hop headers dropped; the body decoded from its framing,
 * scrubbed of every secret and framed again. A file because it is the
 * one direction of the exchange that carries what the origin wrote.
 */
#include <errno.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "inspect-internal.h"
#include "macro.h"
#include "scrub.h"

/* ---- the response, back to the client ---- */

static int sink_raw(void *userdata, const void *p, size_t n)
{
	return insp_client_write(userdata, p, n);
}

/* Body bytes after scrubbing: framed again as chunks when the origin
 * chunked them (sizes may differ from the origin's; chunk extensions and
 * trailers are not passed on). */
static int sink_body(void *userdata, const void *p, size_t n)
{
	struct insp *in = userdata;
	char size[24];
	int k;

	if (!in->resp.chunked)
		return insp_client_write(in, p, n);
	k = snprintf(size, sizeof(size), "%zx\r\n", n);
	if (insp_client_write(in, size, (size_t)k) < 0 || insp_client_write(in, p, n) < 0)
		return -EIO;
	return insp_client_write(in, "\r\n", 2);
}

/* A scrubbed websocket's frames, to the client (ws-scrub.h). */
static int ws_write(void *userdata, const void *p, size_t n)
{
	return insp_client_write(userdata, p, n);
}

static int on_body_data(void *userdata, const char *p, size_t n)
{
	struct insp *in = userdata;

	if (in->scrub_on)
		return sl_scrub_feed(&in->scrub, p, n, sink_body, in);
	return sink_body(in, p, n);
}

/* ---- a response that pauses: what the scrubber held, passed on ---- */

void insp_held_unlist(struct insp *in)
{
	struct sl_gw_tls *t = in->c->gw->tls;

	if (!in->held_listed)
		return;
	if (in->held_prev)
		in->held_prev->held_next = in->held_next;
	else
		t->held_first = in->held_next;
	if (in->held_next)
		in->held_next->held_prev = in->held_prev;
	else
		t->held_last = in->held_prev;
	in->held_prev = in->held_next = NULL;
	in->held_listed = false;
}

static void held_timer_fired(uv_timer_t *tm);

static void held_arm(struct sl_gw_tls *t)
{
	uint64_t now = uv_now(t->gw->loop);

	if (!t->held_first || !t->held_timer_open || uv_is_closing((uv_handle_t *)&t->held_timer))
		return;
	uv_timer_start(&t->held_timer, held_timer_fired,
		       t->held_first->held_due > now ? t->held_first->held_due - now : 0, 0);
}

/* After a read: due SCRUB_PAUSE_MS from now if the scrubber holds a tail
 * short enough to pass on (sl_scrub_flushable), at the list's end (every
 * entry is due a fixed time after its last read, so the list stays in
 * order). */
void insp_held_update(struct insp *in)
{
	struct sl_gw_tls *t = in->c->gw->tls;
	bool first;

	insp_held_unlist(in);
	if (!in->scrub_on || !sl_scrub_flushable(&in->scrub) || insp_closing(in))
		return;
	first = !t->held_first;
	in->held_due = uv_now(in->c->gw->loop) + SCRUB_PAUSE_MS;
	in->held_prev = t->held_last;
	if (t->held_last)
		t->held_last->held_next = in;
	else
		t->held_first = in;
	t->held_last = in;
	in->held_listed = true;
	if (first)
		held_arm(t);
}

/* Nothing came for SCRUB_PAUSE_MS after a short word the scrubber held:
 * passed on as it is (sl_scrub_flush: should the next bytes complete a
 * secret begun in it, the rest is still replaced). */
static void held_timer_fired(uv_timer_t *tm)
{
	struct sl_gw_tls *t = tm->data;
	uint64_t now = uv_now(t->gw->loop);
	unsigned n;

	for (n = 0; n < 4096 && t->held_first && t->held_first->held_due <= now; n++) {
		struct insp *in = t->held_first;
		int r;

		insp_held_unlist(in);
		if (insp_closing(in))
			continue;
		r = in->st == I_WS ? sl_ws_scrub_flush(&in->ws, false)
				     : sl_scrub_flush(&in->scrub, sink_body, in);
		if (r == 0)
			r = insp_client_flush(in, false);
		if (r < 0)
			conn_close(in->c);
	}
	held_arm(t);
}

static bool resp_hop_by_hop(const struct sl_http_request *h, const struct sl_http_span *name,
			    bool upgrade)
{
	if (upgrade && (sl_http_span_caseeq(name, "upgrade") ||
			sl_http_span_caseeq(name, "connection")))
		return false;
	return conn_http_hop_by_hop(h, name);
}

/* The response head, rewritten for our hop, through the scrubber. */
static int send_response_head(struct insp *in, const char *head, const struct sl_http_request *h)
{
	const char *eol = memchr(head, '\n', h->head_len);
	bool upgrade = in->resp.status == 101;
	/* The rebuilt headers (see SL_HTTP_REBUILT_MAX), our Connection line. */
	size_t cap = SL_HTTP_REBUILT_MAX(h->head_len, h->n_headers) + 64, len, i;
	char *out;
	int r;

	if (!eol)
		return -EINVAL;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	len = (size_t)(eol + 1 - head);
	memcpy(out, head, len);
	for (i = 0; i < h->n_headers; i++) {
		const struct sl_http_header *hd = &h->headers[i];

		if (resp_hop_by_hop(h, &hd->name, upgrade))
			continue;
		len += sl_http_put_header(out + len, hd);
	}
	if (in->close_after && in->resp.status >= 200) {
		memcpy(out + len, "Connection: close\r\n", 19);
		len += 19;
	}
	memcpy(out + len, "\r\n", 2);
	len += 2;
	if (in->scrub_on) {
		r = sl_scrub_feed(&in->scrub, out, len, sink_raw, in);
		if (r == 0)
			r = sl_scrub_finish(&in->scrub, sink_raw, in);
	} else {
		r = insp_client_write(in, out, len);
	}
	free(out);
	return r;
}


static void response_complete(struct insp *in)
{
	int r = 0;

	if (in->scrub_on)
		r = sl_scrub_finish(&in->scrub, sink_body, in);
	if (r == 0 && in->resp.chunked)
		r = insp_client_write(in, "0\r\n\r\n", 5);
	if (r < 0) {
		conn_close(in->c);
		return;
	}
	if (!in->body_done) {
		/* The origin answered before the request's body was all
		 * sent: neither connection can carry another exchange. */
		in->close_after = true;
		in->ops->end_exchange(in, false);
		return;
	}
	in->ops->end_exchange(in, true);
}

/* Whether a 101's Sec-WebSocket-Accept answers the request's key (RFC 6455
 * 4.2.2): a front that never switched protocols, answering 101 and reading
 * on as HTTP, does not. One of them, exactly. */
static bool ws_accept_ok(const struct insp *in, const struct sl_http_request *h)
{
	size_t n, len;
	const struct sl_http_span *acc = sl_http_header(h, "sec-websocket-accept", &n);

	if (!acc || n != 1)
		return false;
	/* Trailing whitespace is no part of a field's value (RFC 9110 5.5). */
	for (len = acc->len; len && (acc->p[len - 1] == ' ' || acc->p[len - 1] == '\t'); len--)
		;
	return len == SL_WS_ACCEPT_LEN && memcmp(acc->p, in->ws_accept, SL_WS_ACCEPT_LEN) == 0;
}

/* Does each comma-separated coding in v name one of ok[0..n)? */
static bool codings_only(const struct sl_http_span *v, const char *const *ok, size_t n)
{
	const char *p = v->p, *end = v->p + v->len;

	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		struct sl_http_span t;
		bool found = false;

		if (!e)
			e = end;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		t.p = p;
		t.len = (size_t)(e - p);
		while (t.len && (t.p[t.len - 1] == ' ' || t.p[t.len - 1] == '\t'))
			t.len--;
		for (size_t i = 0; i < n && t.len; i++)
			found |= sl_http_span_caseeq(&t, ok[i]);
		if (t.len && !found)
			return false;
		p = e + 1;
	}
	return true;
}

/* Asked for identity (scrub_hides), an origin that compresses anyway
 * would send the scrubber bytes it cannot read: an echoed key, gzipped,
 * passes it whole. So a body in any coding but identity (and chunked, as
 * a transfer coding) is refused, whoever asked for it. The header that
 * says so, or NULL. */
static const char *scrub_unreadable(const struct insp *in, const struct sl_http_request *h)
{
	/* "none" is no registered coding, but what servers of streamed
	 * answers send to keep proxies from compressing them (Next.js and
	 * the examples built on it): it says the body is plain. */
	static const char *const ce_ok[] = {"identity", "none"},
				 *const te_ok[] = {"chunked", "identity"};
	int status = in->resp.status;

	if (!in->scrub_on || in->head_req || status == 204 || status == 304)
		return NULL; /* no body */
	for (size_t i = 0; i < h->n_headers; i++) {
		const struct sl_http_header *x = &h->headers[i];

		if (sl_http_span_caseeq(&x->name, "content-encoding") &&
		    !codings_only(&x->value, ce_ok, ELEMENTSOF(ce_ok)))
			return "Content-Encoding";
		if (sl_http_span_caseeq(&x->name, "transfer-encoding") &&
		    !codings_only(&x->value, te_ok, ELEMENTSOF(te_ok)))
			return "Transfer-Encoding";
	}
	return NULL;
}

/* A response head is complete in rbuf[0..k). 0, -EIO (the client is
 * gone), or -EPROTO with *why. */
static int response_head(struct insp *in, const struct sl_http_request *h, const char **why)
{
	struct conn *c = in->c;
	int status = in->resp.status;

	if (status == 101) {
		size_t i;

		if (!in->ws_req)
			return -EPROTO;
		if (!ws_accept_ok(in, h)) {
			*why = "the origin's 101 does not answer the Sec-WebSocket-Key "
			       "(Sec-WebSocket-Accept wrong or missing)";
			return -EPROTO;
		}
		/* None was offered (scrub_hides): an origin that compresses
		 * anyway would send what the scrubber cannot read. */
		for (i = 0; in->scrub_on && i < h->n_headers; i++)
			if (sl_http_span_caseeq(&h->headers[i].name, "sec-websocket-extensions"))
				return -EPROTO;
		in->close_after = false;
		c->status = 101;
		in->resp_started = true;
		if (send_response_head(in, in->rbuf, h) < 0)
			return -EIO;
		in->st = I_WS;
		sl_ws_frames_init(&in->ws_up, 1);
		sl_ws_scrub_free(&in->ws);
		sl_ws_scrub_init(&in->ws, &in->scrub, ws_write, in);
		return 0;
	}
	if (status >= 100 && status < 200) {
		/* Interim (100 Continue): passed on; the real one follows. */
		return send_response_head(in, in->rbuf, h);
	}
	if (scrub_unreadable(in, h)) {
		*why = "the origin compressed its answer although sluice asked for identity "
		       "(Accept-Encoding: identity): the scrubber cannot read a compressed body";
		return -EPROTO;
	}
	c->status = status;
	in->resp_started = true;
	in->resp_ka = in->resp.self_delimited && h->keep_alive;
	in->auth_bound |= sl_http_auth_binds_connection(h, "WWW-Authenticate");
	/* An origin that answers before the request's body is all here
	 * leaves the rest of the body unread: this connection cannot carry
	 * another request, and the client must be told so now. */
	if (!in->client_ka || !in->resp_ka || in->client_eof || !in->body_done)
		in->close_after = true;
	if (send_response_head(in, in->rbuf, h) < 0)
		return -EIO;
	in->resp.on_data = on_body_data;
	in->resp.userdata = in;
	return 0;
}

/* The response heads in rbuf, as far as they are complete: interim ones
 * (1xx) passed on, then the real one, or a 101. 1 once it is done, 0 for
 * more bytes, -1 when the exchange was ended. */
static int parse_response_heads(struct insp *in)
{
	struct conn *c = in->c;
	size_t max = c->gw->cfg.max_header_bytes * 4;

	for (unsigned round = 0; round < 16 && !in->resp_head_done; round++) {
		struct sl_http_request h;
		const char *why = "the origin's response could not be parsed";
		int k = sl_http_response_begin(&in->resp, in->rbuf, in->rlen, max, in->head_req,
					       &h),
		    k2;

		if (k == 0)
			return 0;
		if (k < 0) {
			insp_respond(in, 502, "bad-response",
				     "the origin's response could not be parsed");
			return -1;
		}
		k2 = response_head(in, &h, &why);
		if (k2 == -EIO) {
			c->reason = "client-closed"; /* the origin did nothing wrong */
			conn_close(c);
			return -1;
		}
		if (k2 < 0) {
			insp_respond(in, 502, "bad-response", why);
			return -1;
		}
		if (insp_closing(in))
			return -1;
		memmove(in->rbuf, in->rbuf + k, in->rlen - (size_t)k);
		in->rlen -= (size_t)k;
		if (in->resp.status >= 100 && in->resp.status < 200 && in->st != I_WS)
			continue; /* the next head */
		in->resp_head_done = true;
	}
	if (!in->resp_head_done) {
		insp_respond(in, 502, "bad-response", "too many interim responses");
		return -1;
	}
	return 1;
}

/* Body bytes of the response, through its framing. */
static void feed_response_body(struct insp *in, const char *p, size_t n)
{
	struct conn *c = in->c;
	ssize_t k = sl_http_response_feed(&in->resp, p, n);

	if (k < 0) {
		c->reason = in->resp.sink_failed ? NULL : "bad-response";
		conn_close(c);
		return;
	}
	if (in->resp.done) {
		if ((size_t)k < n)
			in->resp_ka = false; /* more than one response */
		response_complete(in);
	}
	if (!insp_closing(in))
		insp_held_update(in);
}

/* Plaintext from the origin. */
static void upstream_plain(struct insp *in, const char *p, size_t n)
{
	struct conn *c = in->c;

	c->bytes_down += n;
	insp_wipe_uhead(in); /* the origin answers: no retry */
	if (in->st == I_WS) {
		int r = in->scrub_on ? sl_ws_scrub_feed(&in->ws, p, n) : insp_client_write(in, p, n);
		if (r < 0) {
			if (r == -EPROTO)
				c->reason = "bad-response";
			conn_close(c);
		} else {
			insp_held_update(in);
		}
		return;
	}
	if (in->st != I_EXCHANGE) {
		/* Bytes nobody asked for: this connection is not reusable. */
		conn_close(c);
		return;
	}
	if (!in->resp_head_done) {
		char *grown = realloc(in->rbuf, in->rlen + n);

		if (!grown) {
			conn_close(c);
			return;
		}
		memcpy(grown + in->rlen, p, n);
		in->rbuf = grown;
		in->rlen += n;
		if (parse_response_heads(in) <= 0)
			return;
		/* What followed the head is body (or, after 101, the other
		 * protocol's bytes). */
		p = in->rbuf;
		n = in->rlen;
		if (in->st == I_WS) {
			in->rlen = 0;
			if (n)
				upstream_plain(in, p, n);
			c->bytes_down -= n;
			in->ops->drive_client(in);
			return;
		}
		if (in->resp.done) {
			if (n)
				in->resp_ka = false;
			in->rlen = 0;
			response_complete(in);
			return;
		}
		in->rlen = 0;
	}
	if (n)
		feed_response_body(in, p, n);
}

static void upstream_eof(struct insp *in)
{
	struct conn *c = in->c;

	if (in->st == I_WS || (in->resp_head_done && !in->resp.self_delimited)) {
		/* The end of a response framed by the close. */
		int r = 0;

		if (in->scrub_on)
			r = in->st == I_WS ? sl_ws_scrub_flush(&in->ws, true)
					     : sl_scrub_finish(&in->scrub, sink_body, in);
		in->st = I_CLOSING;
		if (in->up) {
			insp_up_close(in->up);
			in->up = NULL;
		}
		if (r < 0) {
			conn_close(c);
			return;
		}
		conn_write_audit(c); /* unless this exchange has its record */
		insp_client_shutdown(in);
		return;
	}
	if (!in->resp_started && in->reused && in->uhead && !in->rlen && !c->bytes_up) {
		/* A kept-alive connection the origin closed as we reused it:
		 * once more, on a new one. */
		insp_up_close(in->up);
		in->up = NULL;
		in->reused = false;
		in->st = I_UPSTREAM;
		insp_get_upstream(in, true);
		return;
	}
	if (!in->resp_started) {
		insp_respond(in, 502, "upstream-closed",
			     "the origin closed the connection without an answer");
		return;
	}
	c->reason = "upstream-closed";
	conn_close(c);
}

/* Whether it read anything: then it made something for the client. */
static bool drive_upstream(struct insp *in)
{
	struct conn *c = in->c;
	struct up *up = in->up;
	char buf[TLS_CHUNK];
	unsigned round;
	bool got = false;

	for (round = 0; round < DRIVE_ROUNDS && up && in->up == up && !insp_closing(in); round++) {
		int n, e;

		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) >
		    c->gw->cfg.max_buffered_bytes) {
			if (!in->up_paused) {
				in->up_paused = true;
				up->paused = true;
				uv_read_stop((uv_stream_t *)&up->tcp);
			}
			return got;
		}
		n = SSL_read(up->ssl, buf, sizeof(buf));
		if (n > 0) {
			got = true;
			conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
			upstream_plain(in, buf, (size_t)n);
			continue;
		}
		e = SSL_get_error(up->ssl, n);
		if (e == SSL_ERROR_WANT_READ) {
			if (up->eof)
				upstream_eof(in);
			return got;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			upstream_eof(in);
			return got;
		}
		up->failed = true;
		c->reason = "upstream-tls-failed";
		conn_close(c);
		return got;
	}
	return got;
}

/* Read what the origin sent, as far as the client's write queue allows;
 * what it made for the client goes out once, at the end. */
void insp_drive_upstream(struct insp *in)
{
	if (drive_upstream(in) && !insp_closing(in) && insp_client_flush(in, false) < 0) {
		conn_close(in->c);
		return;
	}
	/* The answer to a request with a body has begun and goes on past this
	 * read (a model's, streamed for seconds): the spare to take its
	 * connection's place (insp_end_exchange) is made now, so that its
	 * handshake, two round trips to an origin across the internet, is
	 * done by the time the next such request comes. Not as the request
	 * goes: the origin's work on the handshake would then delay the
	 * answer (an origin on one core answers a POST 0.8 ms later). Only
	 * where the exchange's end would make one: a kept-alive answer, the
	 * body all sent, no websocket; tried again on later reads while the
	 * pool has no room (not after a failure: INSP_SPARE_NONE). */
	if (in->up && in->req_body && in->resp_head_done && in->resp_ka && in->body_done &&
	    in->st == I_EXCHANGE && !in->spare_id && !insp_closing(in))
		in->spare_id = insp_up_spare(in, in->up);
}
