/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: the sandbox's TLS ends here, each request inside it is
 * decided on its own, and allowed requests go on over TLS that we verify.
 *
 *   client TLS (leaf from the sandbox's CA) -> request head -> Host must
 *   name the host the connection was decided for -> decide method and
 *   path -> rewrite the head (hop-by-hop headers out, the rule's
 *   credential in, replacing the agent's) -> an upstream TLS connection
 *   to that host (kept alive and reused, sessions resumed) -> request
 *   body by its own framing -> response head and body back, scrubbed of
 *   every secret -> audit -> the next request on the same connection
 *
 * OpenSSL runs over memory BIOs on both sides; libuv moves the bytes. The
 * client side belongs to a struct conn (conn.c): the TCP handle, the
 * timer, the audit fields. An upstream connection (struct up) lives on its
 * own, because it outlives the client connection in the pool.
 *
 * Responses are decoded from their framing (chunk sizes out), scrubbed
 * with same-length markers and framed again (chunked stays chunked,
 * Content-Length stays true), so a secret that straddles two chunks or
 * two reads is still found. Nothing is buffered beyond what framing and
 * the scrubber need: a streamed event reaches the sandbox as it arrives.
 *
 * This file is the client connection and the exchange's driver, the top
 * of inspection's layers: its handshake, reading its plaintext, the
 * request body on its way up, the upstream connection made ready for the
 * head, the end of each exchange, and conn.c's entry points (through
 * conn-inspect.c). The rest of the way is in files under it, each one
 * step a reader can follow alone (inspect-internal.h has the map): a
 * request decided and rewritten (inspect-request.c), the response back
 * (inspect-response.c), writing to the client (inspect-io.c), upstream
 * connections (inspect-upstream.c), the TLS contexts (inspect-tls.c).
 * Those call nothing up here by name: what they must report comes back
 * through in->ops (insp_ops, above conn.c's entry points).
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca.h"
#include "conn-internal.h"
#include "inspect-internal.h"
#include "scrub.h"

#define CBUF_MIN (64 * 1024)

static size_t cbuf_cap(const struct sl_gw *gw)
{
	return gw->cfg.max_header_bytes + 1 > CBUF_MIN ? gw->cfg.max_header_bytes + 1 : CBUF_MIN;
}

static void forward_body(struct insp *in)
{
	struct conn *c = in->c;
	ssize_t k;

	if (in->body_done || !in->clen)
		return;
	{
		/* The origin gets the body framed by us, never the client's
		 * framing: on a kept-alive upstream connection, bytes it read
		 * another way would be a request nobody decided. */
		size_t cap = in->clen + SL_HTTP_BODY_SLACK, olen = 0;
		char *out = malloc(cap);
		int w;

		if (!out) {
			conn_close(c);
			return;
		}
		k = sl_http_body_feed(&in->body, in->cbuf, in->clen, out, cap, &olen);
		if (k < 0) {
			char why[160];

			free(out);
			snprintf(why, sizeof(why), "bad framing in the request body: %s",
				 in->body.why ? in->body.why : "broken");
			insp_respond(in, 400, "bad-framing", why);
			return;
		}
		w = insp_up_write(in->up, out, olen);
		free(out);
		if (w < 0) {
			conn_close(c);
			return;
		}
		c->bytes_up += olen;
	}
	if (k > 0) {
		memmove(in->cbuf, in->cbuf + k, in->clen - (size_t)k);
		in->clen -= (size_t)k;
	}
	if (sl_http_body_is_done(&in->body)) {
		in->body_done = true;
		if (in->resp.done && in->resp_head_done)
			insp_end_exchange(in, true);
	}
}

/* The exchange is over: audit it; keep or close each side. */
void insp_end_exchange(struct insp *in, bool reusable)
{
	struct conn *c = in->c;
	struct up *up = in->up;

	/* The response's last records go before the record of it. */
	if (insp_client_flush(in, false) < 0) {
		conn_close(c);
		return;
	}
	conn_write_audit(c);
	c->n_exchanges++;
	in->up = NULL;
	insp_wipe_uhead(in);
	in->reused = false;
	if (up) {
		bool keep = reusable && in->resp_ka && !in->auth_bound && in->st == I_EXCHANGE;

		if (keep && !in->req_body) {
			insp_pool_put(up);
		} else {
			/* One that carried a body is closed (inspect-internal.h,
			 * req_body), and a new one, that carried nothing, takes
			 * its place in the pool (made already if the answer
			 * took more than one read, insp_drive_upstream, unless
			 * that one is gone, taken or near its end). */
			if (keep && !(in->spare_id && in->spare_id != INSP_SPARE_NONE &&
				      insp_spare_holds(up->t, in->spare_id)))
				(void)insp_up_spare(in, up);
			insp_up_close(up);
		}
	}
	if (in->close_after || in->client_eof) {
		in->st = I_CLOSING;
		uv_read_stop((uv_stream_t *)&c->client);
		insp_client_shutdown(in);
		return;
	}
	/* Ready for the next request, decided from scratch. */
	free(c->path);
	c->path = NULL;
	c->parsed = c->decided = c->refused = c->audited = false;
	c->reason = NULL;
	c->credential = NULL;
	c->status = 0;
	c->bytes_up = c->bytes_down = 0;
	free(in->rbuf);
	in->rbuf = NULL;
	in->rlen = 0;
	memset(&in->resp, 0, sizeof(in->resp));
	in->resp_head_done = in->resp_started = in->resp_ka = in->close_after = false;
	in->body_done = in->head_req = in->ws_req = in->client_ka = in->req_body = false;
	in->spare_id = 0;
	in->up_paused = in->auth_bound = false;
	in->st = I_HEAD;
	conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	insp_drive_client(in);
}

/* Bytes from the client after a websocket upgrade, before its 101: a
 * client waits for the 101 (RFC 6455 4.1), and an origin that answers 101
 * and reads on as HTTP would take them for a request nobody decided. */
static void ws_early(struct insp *in)
{
	insp_respond(in, 400, "bad-request",
		     "a websocket client sends nothing before the 101 (RFC 6455 4.1)");
}

/* The client's frames are only checked (ws-frame.h): passed on as they came. */
static int ws_up_head(void *userdata, const struct sl_ws_head *h)
{
	(void)userdata, (void)h;
	return 0;
}

static int ws_up_payload(void *userdata, const void *p, size_t len, int end)
{
	(void)userdata, (void)p, (void)len, (void)end;
	return 0;
}

/* Consume what the client sent, as far as the state allows. */
static void process_client(struct insp *in)
{
	struct conn *c = in->c;

	switch (in->st) {
	case I_HEAD: {
		struct sl_http_request r;
		const char *why = NULL;
		int status = 0, k;

		if (!in->clen)
			return;
		/* A head has begun: it has the head's deadline, which bytes
		 * trickling in do not push back (slowloris). */
		if (!in->head_started) {
			in->head_started = true;
			conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
		}
		k = sl_http_parse_request(in->cbuf, in->clen, c->gw->cfg.max_header_bytes, &r,
					  &status, &why);
		if (k == 0)
			return;
		if (k < 0) {
			c->tunnel = false;
			c->parsed = false;
			insp_respond(in, status, status == 431 ? "header-too-large" : "bad-request",
				     why);
			return;
		}
		insp_begin_exchange(in, &r);
		return;
	}
	case I_EXCHANGE:
		if (in->ws_req && in->clen && !in->resp_started) {
			ws_early(in);
			return;
		}
		forward_body(in);
		return;
	case I_WS:
		if (in->clen) {
			/* Frames only, as they came: an origin that answered 101
			 * must not read the agent's plain HTTP (or anything that is
			 * not a client's frame) as a request nobody decided. What
			 * the cutter took before a refused byte is a valid start;
			 * the read that holds it goes nowhere. */
			if (sl_ws_frames_feed(&in->ws_up, in->cbuf, in->clen, ws_up_head,
					      ws_up_payload, in) < 0) {
				c->refused = true;
				c->reason = "ws-bad-frame";
				conn_close(c);
				return;
			}
			if (insp_up_write(in->up, in->cbuf, in->clen) < 0) {
				conn_close(c);
				return;
			}
			c->bytes_up += in->clen;
			in->clen = 0;
		}
		return;
	case I_HANDSHAKE:
	case I_UPSTREAM:
	case I_CLOSING:
		return;
	}
}

static bool client_must_wait(const struct insp *in)
{
	if (in->clen == in->ccap)
		return true;
	return in->up && in->up->tcp_open &&
	       uv_stream_get_write_queue_size((const uv_stream_t *)&in->up->tcp) >
		   in->c->gw->cfg.max_buffered_bytes;
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* The client's handshake, as far as its records allow: true once it is
 * done and requests may be read. */
static bool client_handshake(struct insp *in)
{
	struct conn *c = in->c;
	int r = SSL_do_handshake(in->ssl);

	if (r == 1) {
		/* The session tickets it leaves wait for the next flush (in
		 * drive_client_once, or the first response's). */
		in->st = I_HEAD;
		conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
		return true;
	}
	if (insp_client_flush(in, false) < 0) {
		conn_close(c);
		return false;
	}
	if (SSL_get_error(in->ssl, r) == SSL_ERROR_WANT_READ)
		return false;
	/* Most often: the client does not trust our CA. */
	c->refused = true;
	c->reason = "client-tls-failed";
	ERR_clear_error();
	conn_close(c);
	return false;
}

static void drive_client_once(struct insp *in)
{
	struct conn *c = in->c;
	unsigned round;

	if (in->st == I_HANDSHAKE && !client_handshake(in))
		return;
	for (round = 0; round < DRIVE_ROUNDS; round++) {
		int n, e;

		process_client(in);
		if (insp_closing(in))
			return;
		if (client_must_wait(in)) {
			if (!in->client_paused) {
				in->client_paused = true;
				uv_read_stop((uv_stream_t *)&c->client);
			}
			return;
		}
		n = SSL_read(in->ssl, in->cbuf + in->clen, (int)(in->ccap - in->clen));
		if (n > 0) {
			in->clen += (size_t)n;
			continue;
		}
		e = SSL_get_error(in->ssl, n);
		/* With an exchange in flight, what the SSL made meanwhile (the
		 * tickets after a handshake) goes out with its response, which
		 * is flushed: one write less per new connection. */
		if (!(e == SSL_ERROR_WANT_READ && (in->st == I_UPSTREAM || in->st == I_EXCHANGE)) &&
		    insp_client_flush(in, false) < 0) {
			conn_close(c);
			return;
		}
		if (e == SSL_ERROR_WANT_READ) {
			if (in->client_paused && !in->client_eof) {
				in->client_paused = false;
				uv_read_start((uv_stream_t *)&c->client, insp_client_alloc,
					      client_read);
			}
			return;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			/* close_notify: no more requests. An exchange in
			 * flight may finish. */
			in->client_eof = true;
			if (in->st == I_HEAD || in->st == I_WS) {
				if (in->st == I_HEAD && in->clen)
					c->reason = "incomplete-request";
				conn_close(c);
			} else if (!in->body_done) {
				c->reason = "incomplete-request";
				conn_close(c);
			}
			return;
		}
		c->reason = "client-tls-failed";
		ERR_clear_error();
		conn_close(c);
		return;
	}
}

void insp_drive_client(struct insp *in)
{
	unsigned round;

	if (in->in_drive) {
		in->redrive = true;
		return;
	}
	in->in_drive = true;
	for (round = 0; round < 64; round++) {
		in->redrive = false;
		drive_client_once(in);
		if (!in->redrive || insp_closing(in))
			break;
	}
	in->in_drive = false;
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	struct insp *in = c->insp;

	(void)buf; /* the free tail of in->rq (insp_client_alloc) */
	if (nread == 0)
		return;
	if (nread < 0) {
		in->client_eof = true;
		uv_read_stop(s);
		if (in->st == I_HANDSHAKE) {
			/* Some clients that do not trust the CA just hang up. */
			c->refused = true;
			c->reason = "client-tls-failed";
			conn_close(c);
			return;
		}
		/* Between requests, or before any: just close. Mid-exchange
		 * the response may still go out (insp_end_exchange closes), unless
		 * the body can no longer come or the client reset. */
		if (in->st != I_EXCHANGE && in->st != I_UPSTREAM) {
			conn_close(c);
		} else if (!in->body_done || nread != UV_EOF) {
			c->reason = !in->body_done ? "incomplete-request" : "client-closed";
			conn_close(c);
		}
		return;
	}
	in->rq.len += (size_t)nread;
	if (in->st == I_HEAD && !in->head_started) {
		/* A head begins with its first TLS record's first byte, not
		 * once a record decrypts: one record trickled a byte at a
		 * time would otherwise hold the idle limit off for ever. */
		in->head_started = true;
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	} else if (in->st != I_HANDSHAKE && in->st != I_HEAD) {
		conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	}
	insp_drive_client(in);
	if (!insp_closing(in))
		insp_q_release(&in->rq); /* unless a record is still partial */
}

/* The upstream connection is ready: the head goes, then the body. */
static void up_ready(struct insp *in)
{
	struct up *up = in->up;
	int r;

	if (in->ws_req && in->clen) {
		/* Came while it waited for the connection (or an approval). */
		ws_early(in);
		return;
	}
	r = insp_up_write(up, in->uhead, in->uhead_len);
	if (!in->reused)
		insp_wipe_uhead(in);
	if (r < 0) {
		insp_respond(in, 502, "connect-failed", "cannot write to the origin");
		return;
	}
	in->st = I_EXCHANGE;
	if (up->paused) {
		up->paused = false;
		uv_read_start((uv_stream_t *)&up->tcp, insp_up_alloc, insp_up_read);
	}
	insp_drive_client(in);
	/* A pooled connection may already hold records. */
	if (!insp_closing(in) && in->up == up)
		insp_drive_upstream(in);
}

/* What the layers below tell the exchange's driver (inspect-internal.h). */
static const struct insp_ops insp_ops = {
	.up_ready = up_ready,
	.up_readable = insp_drive_upstream,
	.up_drained = insp_drive_client,
	.up_failed = insp_respond,
	.end_exchange = insp_end_exchange,
	.drive_client = insp_drive_client,
};

/* ---- the conn's side ---- */

void conn_inspect_start(struct conn *c)
{
	struct sl_gw_tls *t = c->gw->tls;
	struct insp *in = calloc(1, sizeof(*in));

	if (!in) {
		conn_close(c);
		return;
	}
	c->insp = in;
	c->inspect = true;
	in->c = c;
	in->ops = &insp_ops;
	in->st = I_HANDSHAKE;
	snprintf(in->host, sizeof(in->host), "%s", c->dec.host);
	in->kind = c->dec.host_kind;
	in->ccap = cbuf_cap(c->gw);
	in->cbuf = malloc(in->ccap);
	in->ssl = SSL_new(t->server);
	/* Records for the client gather up to FLUSH_AT before a write. */
	in->wq.min_cap = FLUSH_AT + 2 * (OBUF_CAP + 256);
	if (!in->cbuf || !in->ssl) {
		conn_close(c);
		return;
	}
	{
		BIO *rb = insp_q_bio(&in->rq), *wb = insp_q_bio(&in->wq);

		if (!rb || !wb) {
			BIO_free(rb);
			BIO_free(wb);
			conn_close(c);
			return;
		}
		SSL_set_bio(in->ssl, rb, wb);
	}
	SSL_set_accept_state(in->ssl);
	if (sl_ca_use_leaf(t->ca, in->ssl, in->host) < 0) {
		/* The record says leaf-failed for this host; the operator
		 * hears why the CA could not serve it. */
		fprintf(stderr, "sluice gateway: cannot make a certificate for %s\n", in->host);
		c->refused = true;
		c->reason = "leaf-failed";
		conn_close(c);
		return;
	}
	if (t->n_secrets && t->n_spare) {
		/* The secrets are the same for the gateway's life. */
		in->scrub = t->spare[--t->n_spare];
		explicit_bzero(&t->spare[t->n_spare], sizeof(t->spare[0]));
		in->scrub_on = true;
	} else if (t->n_secrets) {
		struct sl_scrub_secret sec[SL_SCRUB_MAX_SECRETS];
		size_t i;

		for (i = 0; i < t->n_secrets; i++)
			sec[i] = (struct sl_scrub_secret){t->secrets[i].v->value, t->secrets[i].v->len};
		if (sl_scrub_init(&in->scrub, sec, t->n_secrets, NULL) < 0) {
			conn_close(c);
			return;
		}
		in->scrub_on = true;
	}
	/* The ClientHello we peeked at starts the handshake. */
	if (c->len) {
		if (insp_q_reserve(&in->rq, c->len) < 0) {
			conn_close(c);
			return;
		}
		memcpy(in->rq.p, c->buf, c->len);
		in->rq.len = c->len;
	}
	free(c->buf);
	c->buf = NULL;
	c->len = 0;
	conn_set_state(c, ST_INSPECT);
	conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	uv_read_start((uv_stream_t *)&c->client, insp_client_alloc, client_read);
	insp_drive_client(in);
}

void conn_inspect_timer(struct conn *c)
{
	struct insp *in = c->insp;

	if (in && in->st == I_HANDSHAKE) {
		c->refused = true;
		c->reason = "tls-timeout";
	} else if (in && in->st == I_HEAD && in->head_started) {
		c->tunnel = false;
		c->parsed = false;
		insp_respond(in, 408, "header-timeout", "timed out waiting for the request head");
		return;
	} else if (!c->n_exchanges && c->tunnel) {
		c->reason = "no-request";
	} else if (c->parsed) {
		c->reason = "idle-timeout";
	}
	/* Quiet between requests says nothing: those were audited. */
	conn_close(c);
}

void conn_inspect_written(struct conn *c)
{
	struct insp *in = c->insp;

	if (!in || insp_closing(in) || !in->up_paused || !in->up)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) >
	    c->gw->cfg.max_buffered_bytes / 2)
		return;
	in->up_paused = false;
	in->up->paused = false;
	if (!in->up->eof)
		uv_read_start((uv_stream_t *)&in->up->tcp, insp_up_alloc, insp_up_read);
	insp_drive_upstream(in);
}

void conn_inspect_close(struct conn *c)
{
	struct insp *in = c->insp;

	if (!in)
		return;
	if (in->st == I_HEAD && in->clen && c->n_exchanges) {
		/* A later request's head, cut short: a record of its own. */
		c->tunnel = c->parsed = false;
		c->refused = true;
		if (!c->reason)
			c->reason = "incomplete-request";
		insp_audit_now(c);
	}
	in->st = I_CLOSING;
	insp_held_unlist(in);
	if (in->up) {
		insp_up_close(in->up);
		in->up = NULL;
	}
}

void conn_inspect_free(struct conn *c)
{
	struct insp *in = c->insp;

	if (!in)
		return;
	insp_held_unlist(in);
	SSL_free(in->ssl); /* and its BIOs; their queues are ours */
	insp_q_free(&in->rq);
	insp_q_free(&in->wq);
	free(in->obuf);
	free(in->cbuf);
	free(in->rbuf);
	/* Its buffers hold the origin's bytes, unscrubbed. */
	sl_ws_scrub_free(&in->ws);
	if (in->uhead) {
		explicit_bzero(in->uhead, in->uhead_len);
		free(in->uhead);
	}
	if (in->scrub_on && c->gw->tls && c->gw->tls->n_spare < SCRUB_SPARE) {
		struct sl_gw_tls *t = c->gw->tls;

		sl_scrub_reset(&in->scrub);
		t->spare[t->n_spare++] = in->scrub;
		explicit_bzero(&in->scrub, sizeof(in->scrub));
	}
	sl_scrub_free(&in->scrub);
	free(in);
	c->insp = NULL;
}
