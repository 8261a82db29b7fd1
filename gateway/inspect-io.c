/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: writing to the client, the layer under the exchange.
 * Plaintext through the client's SSL and out on its socket, and the
 * refusal (or failure) it reads as an HTTP response inside its TLS
 * session. A file of its own so that deciding a request
 * (inspect-request.c) and relaying a response (inspect-response.c) can
 * write to the client without naming inspect.c, which drives them.
 */
#include <errno.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "inspect-internal.h"

/* The upstream head holds the secret: wiped once it is no longer needed
 * (sent, and no retry can need it). */
void insp_wipe_uhead(struct insp *in)
{
	if (in->uhead) {
		explicit_bzero(in->uhead, in->uhead_len);
		free(in->uhead);
		in->uhead = NULL;
	}
}

bool insp_closing(const struct insp *in)
{
	return in->c->state == ST_CLOSING || in->st == I_CLOSING;
}

/* ---- writing ---- */

/* The plaintext gathered, made a record. */
static int seal(struct insp *in)
{
	int n = (int)in->olen;

	if (n && SSL_write(in->ssl, in->obuf, n) != n)
		return -EIO;
	in->olen = 0;
	return 0;
}

/* Whatever TLS records the client's SSL has made go out on its socket:
 * written now if the socket takes them (no write request, no callback, no
 * epoll change), the rest queued behind whatever is still queued. */
int insp_client_flush(struct insp *in, bool close_after)
{
	struct conn *c = in->c;
	struct insp_q *q = &in->wq;
	uv_buf_t b;
	char *rest;
	size_t n;
	int k;

	if (seal(in) < 0)
		return -EIO;
	if (q->len) {
		b = uv_buf_init(q->p + q->off, (unsigned)q->len);
		k = uv_try_write((uv_stream_t *)&c->client, &b, 1);
		if (k < 0 && k != UV_EAGAIN)
			return k;
		if (k > 0)
			insp_q_consume(q, (size_t)k);
	}
	/* Buffers only while bytes wait in them: with many connections,
	 * one at a time holds them, and the heap reuses the same ones. */
	free(in->obuf);
	in->obuf = NULL;
	if (q->len == 0) {
		insp_q_release(q);
		if (close_after)
			conn_close(c);
		return 0;
	}
	rest = insp_q_take(q, &n);
	return conn_send_owned(c, true, rest, n, close_after);
}

int insp_client_write(struct insp *in, const void *p, size_t n)
{
	const char *s = p;

	if (!in->olen && n >= OBUF_CAP) {
		/* Whole records straight from the caller's bytes. */
		int w = (int)(n / OBUF_CAP * OBUF_CAP);

		if (SSL_write(in->ssl, s, w) != w)
			return -EIO;
		s += w;
		n -= (size_t)w;
	}
	while (n) {
		size_t k = OBUF_CAP - in->olen;

		if (!in->obuf && !(in->obuf = malloc(OBUF_CAP)))
			return -ENOMEM;
		if (k > n)
			k = n;
		memcpy(in->obuf + in->olen, s, k);
		in->olen += k;
		s += k;
		n -= k;
		if (in->olen == OBUF_CAP && seal(in) < 0)
			return -EIO;
	}
	/* Bounded: a long run of records goes out as it grows. */
	if (in->wq.len >= FLUSH_AT)
		return insp_client_flush(in, false);
	return 0;
}

void insp_client_shutdown(struct insp *in)
{
	if (seal(in) < 0) {
		conn_close(in->c);
		return;
	}
	SSL_shutdown(in->ssl);
	if (insp_client_flush(in, true) < 0)
		conn_close(in->c);
}

void insp_client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;
	struct insp_q *q = &c->insp->rq;

	(void)suggested;
	if (insp_q_reserve(q, INSP_READ) < 0) {
		*buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
		return;
	}
	*buf = uv_buf_init(q->p + q->off + q->len, INSP_READ);
}

/* ---- answering inside the tunnel ---- */

/* Write the record of a refused request now: after the first exchange, a
 * request whose head never parsed would have none at close (conn.c takes
 * such a connection for one that ended between requests). */
void insp_audit_now(struct conn *c)
{
	if (c->audited)
		return;
	if (!c->decided) {
		c->dec.rule = NULL;
		c->dec.observed_rule = NULL;
		c->decided = true; /* for the host; refused says deny */
	}
	conn_write_audit(c);
}

/* A refusal (or failure) the client reads as an HTTP response inside its
 * TLS session; then the connection ends. */
void insp_respond(struct insp *in, int status, const char *reason, const char *why)
{
	struct conn *c = in->c;
	char *msg;
	int n;

	if (insp_closing(in))
		return;
	c->status = status;
	c->refused = true;
	if (reason)
		c->reason = reason;
	insp_audit_now(c);
	in->st = I_CLOSING;
	if (in->up) {
		insp_up_close(in->up);
		in->up = NULL;
	}
	if (in->resp_started || !SSL_is_init_finished(in->ssl)) {
		conn_close(c);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->client);
	n = conn_error_response(status, conn_reason(c), why, &msg);
	if (n < 0 || insp_client_write(in, msg, (size_t)n) < 0) {
		free(msg);
		conn_close(c);
		return;
	}
	free(msg);
	insp_client_shutdown(in);
}
