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

/* Whatever TLS records the client's SSL has made go out on its socket. */
int insp_client_flush(struct insp *in, bool close_after)
{
	size_t n = (size_t)BIO_ctrl_pending(in->wb);
	char *buf;

	if (n == 0) {
		if (close_after)
			conn_close(in->c);
		return 0;
	}
	buf = malloc(n);
	if (!buf || BIO_read(in->wb, buf, (int)n) != (int)n) {
		free(buf);
		return -ENOMEM;
	}
	return conn_send_owned(in->c, true, buf, n, close_after);
}

int insp_client_write(struct insp *in, const void *p, size_t n)
{
	if (n && SSL_write(in->ssl, p, (int)n) != (int)n)
		return -EIO;
	return insp_client_flush(in, false);
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
	n = conn_error_response(status, why, &msg);
	if (n < 0 || SSL_write(in->ssl, msg, n) != n) {
		free(msg);
		conn_close(c);
		return;
	}
	free(msg);
	SSL_shutdown(in->ssl);
	if (insp_client_flush(in, true) < 0)
		conn_close(c);
}
