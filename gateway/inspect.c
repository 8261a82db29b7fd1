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
 */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ca.h"
#include "conn-headers.h"
#include "conn-internal.h"
#include "macro.h"
#include "reqhead.h"
#include "scrub.h"
#include "secret.h"

#define TLS_CHUNK 16384
#define CBUF_MIN (64 * 1024)
#define POOL_MAX 32
#define POOL_PER_HOST 4
#define POOL_IDLE_MS 30000
#define SESS_CACHE 64
#define DRIVE_ROUNDS 4096

struct up;

struct sl_gw_tls {
	struct sl_gw *gw;
	SSL_CTX *server; /* faces the sandbox; the leaf is set per connection */
	SSL_CTX *client; /* faces origins; verifies them */
	struct sl_ca *ca;
	struct {
		char *name;
		const struct sl_secret_value *v;
	} secrets[SL_SCRUB_MAX_SECRETS];
	size_t n_secrets;
	struct up *pool; /* idle upstream connections, most recent first */
	unsigned n_pool;
	unsigned gen; /* bumped by every flush: older connections are not pooled again */
	bool default_paths_pending; /* the system's trust store is not loaded yet */
	unsigned n_ups; /* every struct up still allocated */
	struct {
		char host[SL_HOST_BUF];
		uint16_t port;
		SSL_SESSION *s;
	} sess[SESS_CACHE];
	unsigned sess_next;
};

enum ist {
	I_HANDSHAKE, /* the client's TLS handshake */
	I_HEAD,	     /* reading a request head */
	I_UPSTREAM,  /* waiting for an upstream connection */
	I_EXCHANGE,  /* the head went upstream; body and response flow */
	I_WS,	     /* after 101: bytes both ways */
	I_CLOSING,
};

struct up {
	struct sl_gw_tls *t;
	struct up *prev, *next; /* in the pool */
	bool pooled;
	struct insp *owner; /* NULL in the pool */
	uv_tcp_t tcp;
	uv_timer_t timer; /* connect deadline; idle limit in the pool */
	uv_connect_t creq;
	bool tcp_open;
	int open_handles;
	bool closing;
	SSL *ssl;
	BIO *rb, *wb; /* network side: rb takes what arrives, wb holds what to send */
	bool ready;   /* handshake done */
	bool paused;
	bool eof;    /* the origin closed its side */
	bool failed; /* TLS failed: its session is not to be resumed */
	char host[SL_HOST_BUF];
	enum sl_host_kind kind;
	uint16_t port;
	unsigned gen;
	struct sl_gw_resolve_req *rreq;
};

struct insp {
	struct conn *c;
	enum ist st;
	SSL *ssl;
	BIO *rb, *wb;
	char host[SL_HOST_BUF]; /* what the connection was decided for */
	enum sl_host_kind kind;
	bool in_drive, redrive;
	bool head_started; /* the request head's deadline is running */

	/* Plaintext from the client not consumed yet: a head, a body's
	 * bytes, the next (pipelined) request. */
	char *cbuf;
	size_t clen, ccap;
	bool client_paused;
	bool client_eof;

	/* The exchange. */
	struct up *up;
	char *uhead; /* the head for upstream; holds the secret: wiped */
	size_t uhead_len;
	struct sl_http_body body;
	bool body_done;
	bool head_req, ws_req, client_ka;
	bool reused; /* in->up came from the pool; uhead is kept for a retry */

	/* Its response. */
	struct sl_http_response resp;
	char *rbuf;
	size_t rlen;
	bool resp_head_done, resp_started, resp_ka, close_after;
	bool up_paused;
	struct sl_scrub scrub;
	bool scrub_on;
};

static void drive_client(struct insp *in);
static void drive_upstream(struct insp *in);
static void up_close(struct up *up);
static void end_exchange(struct insp *in, bool reusable);
static void get_upstream(struct insp *in, bool fresh);

/* The upstream head holds the secret: wiped once it is no longer needed
 * (sent, and no retry can need it). */
static void wipe_uhead(struct insp *in)
{
	if (in->uhead) {
		explicit_bzero(in->uhead, in->uhead_len);
		free(in->uhead);
		in->uhead = NULL;
	}
}

static size_t cbuf_cap(const struct sl_gw *gw)
{
	return gw->cfg.max_header_bytes + 1 > CBUF_MIN ? gw->cfg.max_header_bytes + 1 : CBUF_MIN;
}

static bool closing(const struct insp *in)
{
	return in->c->state == ST_CLOSING || in->st == I_CLOSING;
}

static const char *tls_error(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *s = e ? ERR_reason_error_string(e) : NULL;

	return s ? s : "TLS failed";
}

/* ---- the gateway's part ---- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";
	unsigned i;

	(void)ssl;
	(void)arg;
	/* Only HTTP/1.1 is inspected; a client that offers nothing else
	 * must not get a protocol it would then speak past us. */
	for (i = 0; i < inlen; i += 1u + in[i]) {
		if (in[i] == 8 && i + 9 <= inlen && memcmp(in + i, h11, 9) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	}
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct up *up = SSL_get_app_data(ssl);
	struct sl_gw_tls *t;
	unsigned i, slot;

	if (!up)
		return 0;
	t = up->t;
	slot = t->sess_next;
	for (i = 0; i < SESS_CACHE; i++)
		if (t->sess[i].s && t->sess[i].port == up->port &&
		    strcmp(t->sess[i].host, up->host) == 0) {
			slot = i;
			break;
		}
	if (i == SESS_CACHE)
		t->sess_next = (t->sess_next + 1) % SESS_CACHE;
	if (t->sess[slot].s)
		SSL_SESSION_free(t->sess[slot].s);
	snprintf(t->sess[slot].host, sizeof(t->sess[slot].host), "%s", up->host);
	t->sess[slot].port = up->port;
	t->sess[slot].s = sess;
	return 1; /* we keep the reference */
}

int sl_gw_enable_inspection(struct sl_gw *gw, struct sl_ca *ca, const char *upstream_ca,
			    char *err, size_t errlen)
{
	static const unsigned char h11[] = "\x08http/1.1";
	struct sl_gw_tls *t;

	if (gw->tls) {
		snprintf(err, errlen, "inspection is already enabled");
		return -EEXIST;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->gw = gw;
	t->ca = ca;
	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->server || !t->client)
		goto fail_ssl;
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	SSL_CTX_set_options(t->server, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_options(t->client, SSL_OP_NO_RENEGOTIATION);

	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (upstream_ca) {
		if (SSL_CTX_load_verify_locations(t->client, upstream_ca, NULL) != 1) {
			snprintf(err, errlen, "--upstream-ca %s: cannot load it: %s", upstream_ca,
				 tls_error());
			goto fail;
		}
	} else {
		/* The system's store is parsed whole (some 150 certificates,
		 * tens of milliseconds): at the first upstream connection, not
		 * on every sandbox's way up. */
		t->default_paths_pending = true;
	}
	if (SSL_CTX_set_alpn_protos(t->client, h11, sizeof(h11) - 1) != 0)
		goto fail_ssl;
	SSL_CTX_set_session_cache_mode(t->client,
				       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(t->client, new_session);
	gw->tls = t;
	return 0;

fail_ssl:
	snprintf(err, errlen, "cannot set up TLS: %s", tls_error());
fail:
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t);
	return -EINVAL;
}

int sl_gw_add_secret(struct sl_gw *gw, const char *name, const struct sl_secret_value *v)
{
	struct sl_gw_tls *t = gw->tls;

	if (!t)
		return -EINVAL;
	if (t->n_secrets >= SL_SCRUB_MAX_SECRETS)
		return -E2BIG;
	t->secrets[t->n_secrets].name = strdup(name);
	if (!t->secrets[t->n_secrets].name)
		return -ENOMEM;
	t->secrets[t->n_secrets++].v = v;
	return 0;
}

static const struct sl_secret_value *secret_by_name(const struct sl_gw_tls *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n_secrets; i++)
		if (strcmp(t->secrets[i].name, name) == 0)
			return t->secrets[i].v;
	return NULL;
}

void sl_gw_tls_flush_pool(struct sl_gw *gw)
{
	if (gw->tls)
		gw->tls->gen++;
	while (gw->tls && gw->tls->pool)
		up_close(gw->tls->pool);
}

bool sl_gw_tls_busy(const struct sl_gw *gw)
{
	return gw->tls && gw->tls->n_ups > 0;
}

void sl_gw_tls_free(struct sl_gw *gw)
{
	struct sl_gw_tls *t = gw->tls;
	size_t i;

	if (!t)
		return;
	for (i = 0; i < SESS_CACHE; i++)
		if (t->sess[i].s)
			SSL_SESSION_free(t->sess[i].s);
	for (i = 0; i < t->n_secrets; i++)
		free(t->secrets[i].name);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t);
	gw->tls = NULL;
}

/* ---- writing ---- */

/* Whatever TLS records the client's SSL has made go out on its socket. */
static int client_flush(struct insp *in, bool close_after)
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

static int client_write(struct insp *in, const void *p, size_t n)
{
	if (n && SSL_write(in->ssl, p, (int)n) != (int)n)
		return -EIO;
	return client_flush(in, false);
}

struct up_wreq {
	uv_write_t req;
	struct up *up;
	char *data;
};

static void up_written(uv_write_t *req, int status)
{
	struct up_wreq *w = container_of(req, struct up_wreq, req);
	struct up *up = w->up;
	struct insp *in = up->owner;

	free(w->data);
	free(w);
	if (up->closing)
		return;
	if (status < 0) {
		if (in) {
			in->c->reason = "upstream-write-failed";
			conn_close(in->c);
		} else {
			up_close(up);
		}
		return;
	}
	/* The client paused because this queue was full. */
	if (in && in->client_paused &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&up->tcp) <=
		in->c->gw->cfg.max_buffered_bytes / 2)
		drive_client(in);
}

static int up_flush(struct up *up)
{
	size_t n = (size_t)BIO_ctrl_pending(up->wb);
	struct up_wreq *w;
	uv_buf_t b;
	int r;

	if (n == 0)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->up = up;
	w->data = malloc(n);
	if (!w->data || BIO_read(up->wb, w->data, (int)n) != (int)n) {
		free(w->data);
		free(w);
		return -ENOMEM;
	}
	b = uv_buf_init(w->data, (unsigned)n);
	r = uv_write(&w->req, (uv_stream_t *)&up->tcp, &b, 1, up_written);
	if (r < 0) {
		free(w->data);
		free(w);
	}
	return r;
}

static int up_write(struct up *up, const void *p, size_t n)
{
	if (n && SSL_write(up->ssl, p, (int)n) != (int)n)
		return -EIO;
	return up_flush(up);
}

/* ---- answering inside the tunnel ---- */

/* Write the record of a refused request now: after the first exchange, a
 * request whose head never parsed would have none at close (conn.c takes
 * such a connection for one that ended between requests). */
static void audit_now(struct conn *c)
{
	if (c->audited)
		return;
	if (!c->decided) {
		c->dec.rule = NULL;
		c->decided = true; /* for the host; refused says deny */
	}
	conn_write_audit(c);
	c->audited = true;
}

/* A refusal (or failure) the client reads as an HTTP response inside its
 * TLS session; then the connection ends. */
static void respond(struct insp *in, int status, const char *reason, const char *why)
{
	struct conn *c = in->c;
	char *msg;
	int n;

	if (closing(in))
		return;
	c->status = status;
	c->refused = true;
	if (reason)
		c->reason = reason;
	audit_now(c);
	in->st = I_CLOSING;
	if (in->up) {
		up_close(in->up);
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
	if (client_flush(in, true) < 0)
		conn_close(c);
}

/* ---- the response, back to the client ---- */

static int sink_raw(void *userdata, const void *p, size_t n)
{
	return client_write(userdata, p, n);
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
		return client_write(in, p, n);
	k = snprintf(size, sizeof(size), "%zx\r\n", n);
	if (SSL_write(in->ssl, size, k) != k || SSL_write(in->ssl, p, (int)n) != (int)n ||
	    SSL_write(in->ssl, "\r\n", 2) != 2)
		return -EIO;
	return client_flush(in, false);
}

static int on_body_data(void *userdata, const char *p, size_t n)
{
	struct insp *in = userdata;

	if (in->scrub_on)
		return sl_scrub_feed(&in->scrub, p, n, sink_body, in);
	return sink_body(in, p, n);
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
		r = client_write(in, out, len);
	}
	free(out);
	return r;
}

static bool header_has_token(const struct sl_http_request *h, const char *name, const char *tok)
{
	size_t i, tl = strlen(tok);

	for (i = 0; i < h->n_headers; i++) {
		const char *p, *end;

		if (!sl_http_span_caseeq(&h->headers[i].name, name))
			continue;
		p = h->headers[i].value.p;
		end = p + h->headers[i].value.len;
		while (p < end) {
			const char *t;

			while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
				p++;
			t = p;
			while (p < end && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			if ((size_t)(p - t) == tl && !strncasecmp(t, tok, tl))
				return true;
		}
	}
	return false;
}

static void response_complete(struct insp *in)
{
	int r = 0;

	if (in->scrub_on)
		r = sl_scrub_finish(&in->scrub, sink_body, in);
	if (r == 0 && in->resp.chunked)
		r = client_write(in, "0\r\n\r\n", 5);
	if (r < 0) {
		conn_close(in->c);
		return;
	}
	if (!in->body_done) {
		/* The origin answered before the request's body was all
		 * sent: neither connection can carry another exchange. */
		in->close_after = true;
		end_exchange(in, false);
		return;
	}
	end_exchange(in, true);
}

/* A response head is complete in rbuf[0..k). */
static int response_head(struct insp *in, const struct sl_http_request *h)
{
	struct conn *c = in->c;
	int status = in->resp.status;

	if (status == 101) {
		if (!in->ws_req)
			return -EPROTO;
		in->close_after = false;
		c->status = 101;
		in->resp_started = true;
		if (send_response_head(in, in->rbuf, h) < 0)
			return -EIO;
		in->st = I_WS;
		return 0;
	}
	if (status >= 100 && status < 200) {
		/* Interim (100 Continue): passed on; the real one follows. */
		return send_response_head(in, in->rbuf, h);
	}
	c->status = status;
	in->resp_started = true;
	in->resp_ka = in->resp.self_delimited && h->keep_alive;
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

/* Plaintext from the origin. */
static void upstream_plain(struct insp *in, const char *p, size_t n)
{
	struct conn *c = in->c;
	size_t max = c->gw->cfg.max_header_bytes * 4;

	c->bytes_down += n;
	wipe_uhead(in); /* the origin answers: no retry */
	if (in->st == I_WS) {
		int r = in->scrub_on ? sl_scrub_feed(&in->scrub, p, n, sink_raw, in)
				     : client_write(in, p, n);
		if (r < 0)
			conn_close(c);
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
		for (unsigned round = 0; round < 16 && !in->resp_head_done; round++) {
			struct sl_http_request h;
			int k = sl_http_response_begin(&in->resp, in->rbuf, in->rlen, max,
						       in->head_req, &h), k2;

			if (k == 0)
				return;
			if (k < 0) {
				respond(in, 502, "bad-response",
					"the origin's response could not be parsed");
				return;
			}
			k2 = response_head(in, &h);
			if (k2 == -EIO) {
				c->reason = "client-closed"; /* the origin did nothing wrong */
				conn_close(c);
				return;
			}
			if (k2 < 0) {
				respond(in, 502, "bad-response",
					"the origin's response could not be parsed");
				return;
			}
			if (closing(in))
				return;
			memmove(in->rbuf, in->rbuf + k, in->rlen - (size_t)k);
			in->rlen -= (size_t)k;
			if (in->resp.status >= 100 && in->resp.status < 200 && in->st != I_WS)
				continue; /* the next head */
			in->resp_head_done = true;
		}
		if (!in->resp_head_done) {
			respond(in, 502, "bad-response", "too many interim responses");
			return;
		}
		/* What followed the head is body (or, after 101, the other
		 * protocol's bytes). */
		p = in->rbuf;
		n = in->rlen;
		if (in->st == I_WS) {
			in->rlen = 0;
			if (n)
				upstream_plain(in, p, n);
			c->bytes_down -= n;
			drive_client(in);
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
	if (n) {
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
	}
}

static void upstream_eof(struct insp *in)
{
	struct conn *c = in->c;

	if (in->st == I_WS || (in->resp_head_done && !in->resp.self_delimited)) {
		/* The end of a response framed by the close. */
		int r = in->scrub_on ? sl_scrub_finish(&in->scrub, in->st == I_WS ? sink_raw
										: sink_body,
						       in)
				     : 0;

		in->st = I_CLOSING;
		if (in->up) {
			up_close(in->up);
			in->up = NULL;
		}
		if (r < 0) {
			conn_close(c);
			return;
		}
		if (!c->audited) {
			conn_write_audit(c);
			c->audited = true;
		}
		SSL_shutdown(in->ssl);
		if (client_flush(in, true) < 0)
			conn_close(c);
		return;
	}
	if (!in->resp_started && in->reused && in->uhead && !in->rlen && !c->bytes_up) {
		/* A kept-alive connection the origin closed as we reused it:
		 * once more, on a new one. */
		up_close(in->up);
		in->up = NULL;
		in->reused = false;
		in->st = I_UPSTREAM;
		get_upstream(in, true);
		return;
	}
	if (!in->resp_started) {
		respond(in, 502, "upstream-closed", "the origin closed the connection without an answer");
		return;
	}
	c->reason = "upstream-closed";
	conn_close(c);
}

static void drive_upstream(struct insp *in)
{
	struct conn *c = in->c;
	struct up *up = in->up;
	char buf[TLS_CHUNK];
	unsigned round;

	for (round = 0; round < DRIVE_ROUNDS && up && in->up == up && !closing(in); round++) {
		int n, e;

		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) >
		    c->gw->cfg.max_buffered_bytes) {
			if (!in->up_paused) {
				in->up_paused = true;
				up->paused = true;
				uv_read_stop((uv_stream_t *)&up->tcp);
			}
			return;
		}
		n = SSL_read(up->ssl, buf, sizeof(buf));
		if (n > 0) {
			conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
			upstream_plain(in, buf, (size_t)n);
			continue;
		}
		e = SSL_get_error(up->ssl, n);
		if (e == SSL_ERROR_WANT_READ) {
			if (up->eof)
				upstream_eof(in);
			return;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			upstream_eof(in);
			return;
		}
		up->failed = true;
		c->reason = "upstream-tls-failed";
		conn_close(c);
		return;
	}
}

/* ---- upstream connections ---- */

static void up_handle_closed(uv_handle_t *h)
{
	struct up *up = h->data;
	struct sl_gw_tls *t = up->t;

	if (--up->open_handles > 0)
		return;
	SSL_free(up->ssl);
	free(up);
	t->n_ups--;
	sl_gw_maybe_free(t->gw);
}

static void pool_unlink(struct up *up)
{
	struct sl_gw_tls *t = up->t;

	if (!up->pooled)
		return;
	if (up->prev)
		up->prev->next = up->next;
	else
		t->pool = up->next;
	if (up->next)
		up->next->prev = up->prev;
	up->prev = up->next = NULL;
	up->pooled = false;
	t->n_pool--;
}

static void up_close(struct up *up)
{
	if (up->closing)
		return;
	up->closing = true;
	/* A connection that ends without our close_notify marks its session
	 * "bad" when freed, and the next connection would not resume it. A
	 * healthy one says goodbye (a failed one keeps that mark). */
	if (up->ssl && up->ready && !up->failed)
		(void)SSL_shutdown(up->ssl);
	sl_gw_resolve_cancel(up->rreq);
	up->rreq = NULL;
	pool_unlink(up);
	if (up->owner && up->owner->up == up)
		up->owner->up = NULL;
	up->owner = NULL;
	uv_close((uv_handle_t *)&up->timer, up_handle_closed);
	if (up->tcp_open)
		uv_close((uv_handle_t *)&up->tcp, up_handle_closed);
}

static void up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = malloc(TLS_CHUNK);
	buf->len = buf->base ? TLS_CHUNK : 0;
}

static void up_ready(struct insp *in);

static void up_fail(struct up *up, int status, const char *reason, const char *why)
{
	struct insp *in = up->owner;

	up_close(up);
	if (in)
		respond(in, status, reason, why);
}

static void up_handshake(struct up *up)
{
	int r = SSL_do_handshake(up->ssl), e;
	char why[SL_HOST_BUF + 256];

	if (up_flush(up) < 0) {
		up_fail(up, 502, "connect-failed", "cannot write upstream");
		return;
	}
	if (r == 1) {
		up->ready = true;
		uv_timer_stop(&up->timer);
		if (up->owner)
			up_ready(up->owner);
		return;
	}
	e = SSL_get_error(up->ssl, r);
	if (e == SSL_ERROR_WANT_READ)
		return;
	if (SSL_get_verify_result(up->ssl) != X509_V_OK)
		snprintf(why, sizeof(why), "%s:%u: the origin's certificate is not trusted: %s",
			 up->host, up->port,
			 X509_verify_cert_error_string(SSL_get_verify_result(up->ssl)));
	else
		snprintf(why, sizeof(why), "%s:%u: TLS with the origin failed: %s", up->host,
			 up->port, tls_error());
	ERR_clear_error();
	up_fail(up, 502, "upstream-tls-failed", why);
}

static void up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct up *up = s->data;
	struct insp *in = up->owner;

	if (nread == 0) {
		free(buf->base);
		return;
	}
	if (nread < 0) {
		free(buf->base);
		if (!in || !up->ready) {
			if (in)
				up_fail(up, 502, "upstream-closed", "the origin closed the connection");
			else
				up_close(up);
			return;
		}
		/* Records already here are drained first; drive_upstream
		 * reports the end once they are (also after a pause). */
		up->eof = true;
		drive_upstream(in);
		return;
	}
	BIO_write(up->rb, buf->base, (int)nread);
	free(buf->base);
	if (!up->ready) {
		up_handshake(up);
		return;
	}
	if (!in) {
		/* An idle connection spoke (or sent a ticket): a ticket is
		 * fine, anything else makes it unusable. */
		char b[64];
		int n = SSL_read(up->ssl, b, sizeof(b));

		if (n > 0 || SSL_get_error(up->ssl, n) != SSL_ERROR_WANT_READ)
			up_close(up);
		return;
	}
	drive_upstream(in);
}

static void up_timer_fired(uv_timer_t *tm)
{
	struct up *up = tm->data;

	if (up->owner)
		up_fail(up, 504, "connect-timeout", "timed out connecting to the origin");
	else
		up_close(up);
}

static void up_connected(uv_connect_t *req, int status)
{
	struct up *up = req->data;
	char why[SL_HOST_BUF + 128];
	size_t i;

	if (up->closing)
		return;
	if (status < 0) {
		snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", up->host, up->port,
			 uv_strerror(status));
		up_fail(up, 502, "connect-failed", why);
		return;
	}
	uv_tcp_nodelay(&up->tcp, 1);
	if (up->t->default_paths_pending) {
		if (SSL_CTX_set_default_verify_paths(up->t->client) != 1) {
			snprintf(why, sizeof(why), "cannot load the system's trust store: %s",
				 tls_error());
			ERR_clear_error();
			up_fail(up, 502, "upstream-tls-failed", why);
			return;
		}
		up->t->default_paths_pending = false;
	}
	up->ssl = SSL_new(up->t->client);
	up->rb = BIO_new(BIO_s_mem());
	up->wb = BIO_new(BIO_s_mem());
	if (!up->ssl || !up->rb || !up->wb) {
		BIO_free(up->rb);
		BIO_free(up->wb);
		up->rb = up->wb = NULL;
		up_fail(up, 502, "connect-failed", "out of memory");
		return;
	}
	SSL_set_bio(up->ssl, up->rb, up->wb);
	SSL_set_app_data(up->ssl, up);
	SSL_set_connect_state(up->ssl);
	if (up->kind == SL_HOST_NAME) {
		SSL_set_tlsext_host_name(up->ssl, up->host);
		SSL_set1_host(up->ssl, up->host);
	} else {
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(up->ssl), up->host);
	}
	for (i = 0; i < SESS_CACHE; i++)
		if (up->t->sess[i].s && up->t->sess[i].port == up->port &&
		    strcmp(up->t->sess[i].host, up->host) == 0) {
			SSL_set_session(up->ssl, up->t->sess[i].s);
			break;
		}
	uv_read_start((uv_stream_t *)&up->tcp, up_alloc, up_read);
	up_handshake(up);
}

static void up_connect(struct up *up, const struct sl_gw_addrs *a)
{
	struct insp *in = up->owner;
	const char *refused = NULL;
	const struct sockaddr *sa = conn_pick_address(in->c, a, &refused);
	struct sockaddr_storage to;
	char why[SL_HOST_BUF + 160];
	int r;

	if (!sa) {
		snprintf(why, sizeof(why),
			 "%s resolves only to addresses the policy does not allow (%s); list the "
			 "range under private_addresses to allow it",
			 up->host, refused ? refused : "none");
		up_fail(up, 403, "private-address", why);
		return;
	}
	memcpy(&to, sa,
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	if (to.ss_family == AF_INET)
		((struct sockaddr_in *)&to)->sin_port = htons(up->port);
	else
		((struct sockaddr_in6 *)&to)->sin6_port = htons(up->port);
	r = uv_tcp_init(in->c->gw->loop, &up->tcp);
	if (r < 0) {
		up_fail(up, 502, "connect-failed", "cannot create a socket");
		return;
	}
	up->tcp.data = up;
	up->tcp_open = true;
	up->open_handles++;
	up->creq.data = up;
	r = uv_tcp_connect(&up->creq, &up->tcp, (const struct sockaddr *)&to, up_connected);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", up->host, up->port,
			 uv_strerror(r));
		up_fail(up, 502, "connect-failed", why);
	}
}

static void up_resolved(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct up *up = data;
	char why[SL_HOST_BUF + 96];

	up->rreq = NULL;
	if (up->closing || !up->owner)
		return;
	if (status < 0) {
		snprintf(why, sizeof(why), "cannot resolve %s: %s", up->host,
			 status == -ENOENT	? "no such name"
			 : status == -ETIMEDOUT ? "timed out"
			 : status == -EDQUOT	? SL_GW_DNS_BUDGET_WHY
						: "resolver error");
		if (status == -EDQUOT)
			up_fail(up, 429, "dns-budget", why);
		else
			up_fail(up, 502, "resolve-failed", why);
		return;
	}
	up_connect(up, addrs);
}

/* An idle connection to this host from the pool, or NULL. */
static struct up *pool_take(struct sl_gw_tls *t, const char *host, uint16_t port)
{
	struct up *up;

	for (up = t->pool; up; up = up->next)
		if (up->port == port && strcmp(up->host, host) == 0) {
			pool_unlink(up);
			uv_timer_stop(&up->timer);
			return up;
		}
	return NULL;
}

static void pool_put(struct up *up)
{
	struct sl_gw_tls *t = up->t;
	struct up *o;
	unsigned same = 0;

	up->owner = NULL;
	for (o = t->pool; o; o = o->next)
		same += o->port == up->port && strcmp(o->host, up->host) == 0;
	/* Not from before a flush (a reload: its address was chosen under
	 * the old policy), and within the bounds. */
	if (t->gw->shutting_down || up->gen != t->gen || t->n_pool >= POOL_MAX ||
	    same >= POOL_PER_HOST || SSL_pending(up->ssl) > 0 || BIO_ctrl_pending(up->rb) > 0) {
		up_close(up);
		return;
	}
	up->next = t->pool;
	if (t->pool)
		t->pool->prev = up;
	t->pool = up;
	up->prev = NULL;
	up->pooled = true;
	t->n_pool++;
	if (up->paused) {
		up->paused = false;
		uv_read_start((uv_stream_t *)&up->tcp, up_alloc, up_read);
	}
	uv_timer_start(&up->timer, up_timer_fired, POOL_IDLE_MS, 0);
}

static void get_upstream(struct insp *in, bool fresh)
{
	struct conn *c = in->c;
	struct sl_gw_tls *t = c->gw->tls;
	struct up *up = fresh ? NULL : pool_take(t, in->host, c->port);
	int r;

	in->reused = up && (in->head_req || strcmp(c->method, "GET") == 0);
	if (up) {
		up->owner = in;
		in->up = up;
		up_ready(in);
		return;
	}
	up = calloc(1, sizeof(*up));
	if (!up) {
		respond(in, 502, "connect-failed", "out of memory");
		return;
	}
	up->t = t;
	up->gen = t->gen;
	t->n_ups++;
	up->owner = in;
	in->up = up;
	snprintf(up->host, sizeof(up->host), "%s", in->host);
	up->kind = in->kind;
	up->port = c->port;
	uv_timer_init(c->gw->loop, &up->timer);
	up->timer.data = up;
	up->open_handles = 1;
	uv_timer_start(&up->timer, up_timer_fired, c->gw->cfg.connect_timeout_ms, 0);
	if (in->kind != SL_HOST_NAME) {
		struct sl_gw_addrs a;

		conn_literal_addrs(in->kind, in->host, &a);
		up_connect(up, &a);
		return;
	}
	r = sl_gw_resolve(c->gw->resolver, up->host, up_resolved, up, &up->rreq);
	if (r < 0)
		up_fail(up, 502, "resolve-failed", "cannot start a DNS lookup");
}

/* The upstream connection is ready: the head goes, then the body. */
static void up_ready(struct insp *in)
{
	struct up *up = in->up;
	int r;

	r = up_write(up, in->uhead, in->uhead_len);
	if (!in->reused)
		wipe_uhead(in);
	if (r < 0) {
		respond(in, 502, "connect-failed", "cannot write to the origin");
		return;
	}
	in->st = I_EXCHANGE;
	if (up->paused) {
		up->paused = false;
		uv_read_start((uv_stream_t *)&up->tcp, up_alloc, up_read);
	}
	drive_client(in);
	/* A pooled connection may already hold records. */
	if (!closing(in) && in->up == up)
		drive_upstream(in);
}

/* ---- requests ---- */

/* The head we send upstream: the request line with the target that was
 * decided (origin-form), the client's end-to-end headers, the credential
 * in place of every credential header the client sent, and identity
 * encoding where responses must be scrubbed. */
static int build_upstream_head(struct insp *in, const struct sl_http_request *r,
			       const char *target, const struct sl_inject *inj,
			       const struct sl_secret_value *v)
{
	/* The rebuilt headers (see SL_HTTP_REBUILT_MAX), then the lines we add. */
	size_t cap = SL_HTTP_REBUILT_MAX(r->head_len, r->n_headers) + 128 + SL_HOST_BUF + 16 +
		     (inj ? strlen(inj->header) + strlen(inj->prefix) + v->len + 4 : 0);
	const char *eol = memchr(r->method.p, '\n', r->head_len - (size_t)(r->method.p - in->cbuf));
	char *out;
	size_t len, i;

	if (!eol)
		return -EINVAL;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	/* "METHOD SP", the target, then " HTTP/1.x" as it came. */
	len = (size_t)(r->target.p - r->method.p);
	memcpy(out, r->method.p, len);
	memcpy(out + len, target, strlen(target));
	len += strlen(target);
	memcpy(out + len, r->target.p + r->target.len,
	       (size_t)(eol + 1 - (r->target.p + r->target.len)));
	len += (size_t)(eol + 1 - (r->target.p + r->target.len));
	if (in->kind == SL_HOST_IPV6)
		len += (size_t)sprintf(out + len, "Host: [%s]", in->host);
	else
		len += (size_t)sprintf(out + len, "Host: %s", in->host);
	if (in->c->port != 443)
		len += (size_t)sprintf(out + len, ":%u", in->c->port);
	memcpy(out + len, "\r\n", 2);
	len += 2;
	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (in->ws_req && (sl_http_span_caseeq(&h->name, "upgrade") ||
				   sl_http_span_caseeq(&h->name, "connection")))
			continue;
		if (conn_http_hop_by_hop(r, &h->name))
			continue;
		/* Not only the injected header: an origin may take any key it
		 * finds, and the agent's own would spend its own account. */
		if (in->c->dec.host_injects &&
		    sl_reqhead_is_host_credential(in->c->pol->p, &h->name))
			continue;
		/* Ours, in the one spelling the decision was made for. */
		if (sl_http_span_caseeq(&h->name, "host"))
			continue;
		if (in->scrub_on && sl_http_span_caseeq(&h->name, "accept-encoding"))
			continue;
		len += sl_http_put_header(out + len, h);
	}
	if (in->ws_req) {
		memcpy(out + len, "Connection: Upgrade\r\nUpgrade: websocket\r\n", 41);
		len += 41;
	}
	if (in->scrub_on) {
		memcpy(out + len, "Accept-Encoding: identity\r\n", 27);
		len += 27;
	}
	if (inj) {
		len += (size_t)sprintf(out + len, "%s: %s", inj->header, inj->prefix);
		memcpy(out + len, v->value, v->len);
		len += v->len;
		memcpy(out + len, "\r\n", 2);
		len += 2;
	}
	memcpy(out + len, "\r\n", 2);
	len += 2;
	in->uhead = out;
	in->uhead_len = len;
	return 0;
}

static void begin_exchange(struct insp *in, const struct sl_http_request *r)
{
	struct conn *c = in->c;
	struct sl_request q = {0};
	const struct sl_http_span *hh, *up_hdr;
	const struct sl_inject *inj = NULL;
	const struct sl_secret_value *v = NULL;
	const char *host, *why = NULL;
	size_t host_len, n_host;
	uint16_t hport;
	char norm[SL_HOST_BUF], msg[512];
	enum sl_host_kind kind;

	c->tunnel = false;
	c->parsed = true;
	/* The CONNECT's 200 is not this request's. */
	c->status = 0;
	/* Until this request is decided, no rule speaks for it. */
	c->dec.rule = NULL;
	conn_policy_refresh(c);
	c->start_wall_ms = sl_audit_now_ms();
	c->start_loop_ms = uv_now(c->gw->loop);
	snprintf(c->method, sizeof(c->method), "%.*s", (int)r->method.len, r->method.p);
	free(c->path);
	c->path = strndup(r->target.p, r->target.len);
	if (!c->path) {
		conn_close(c);
		return;
	}
	if (r->target.len == 0 || r->target.p[0] != '/') {
		respond(in, 400, "bad-request",
			"inside an inspected connection, a request names a path (origin-form)");
		return;
	}
	/* The Host must be the host the connection was decided (and the
	 * leaf minted) for: anything else is fronting inside the tunnel. */
	hh = sl_http_header(r, "host", &n_host);
	if (!hh || n_host != 1 || sl_host_split(hh->p, hh->len, &host, &host_len, &hport, &why) < 0 ||
	    sl_host_normalize(host, host_len, norm, &kind, NULL) < 0 ||
	    strcmp(norm, in->host) != 0 || (hport ? hport : 443) != c->port) {
		snprintf(msg, sizeof(msg),
			 "the Host header must name %s, the host this TLS connection is for", in->host);
		respond(in, 421, "host-mismatch", msg);
		return;
	}
	if (!sl_gw_audit_ok(c->gw)) {
		c->audited = true;
		conn_close(c);
		return;
	}
	q.host = in->host;
	q.host_len = strlen(in->host);
	q.port = c->port;
	q.method = c->method;
	q.path = c->path;
	q.path_len = strlen(c->path);
	sl_policy_decide(c->pol->p, &q, &c->dec);
	c->decided = true;
	if (c->dec.verdict != SL_VERDICT_ALLOW) {
		respond(in, 403, NULL, sl_policy_explain(c->pol->p, &q, &c->dec, msg, sizeof(msg)));
		return;
	}
	if (c->dec.rule && c->dec.rule->has_inject) {
		const char *name = c->pol->p->secrets[c->dec.rule->inject.secret].name;

		inj = &c->dec.rule->inject;
		v = secret_by_name(c->gw->tls, name);
		if (!v) {
			snprintf(msg, sizeof(msg),
				 "the secret '%s' is not loaded (a reload cannot add secrets; "
				 "restart sluice)",
				 name);
			respond(in, 502, "credential-unavailable", msg);
			return;
		}
	}
	if (c->dec.methods_named && sl_reqhead_has_method_override(r)) {
		/* Many origins run the method such a header names: the rules'
		 * methods (an allow rule's or a deny rule's) would not hold. */
		respond(in, 400, "method-override",
			"a method-override header (X-HTTP-Method-Override, X-HTTP-Method, "
			"X-Method-Override, or a _method query parameter) is refused where a rule "
			"for this host names methods");
		return;
	}
	if (c->dec.host_injects) {
		const struct sl_http_header *u =
		    sl_reqhead_underscore_host_credential(r, c->pol->p);

		if (u) {
			snprintf(msg, sizeof(msg),
				 "header '%.*s': a credential header spelled with '_' is refused on "
				 "a host whose rule injects a credential",
				 (int)(u->name.len > 64 ? 64 : u->name.len), u->name.p);
			respond(in, 400, "credential-header", msg);
			return;
		}
		if (inj && inj->require_placeholder && !sl_reqhead_placeholder_ok(r, inj)) {
			snprintf(msg, sizeof(msg),
				 "this rule requires the placeholder: send '%s: %s%s' (the value "
				 "of the sandbox's placeholder variable) once",
				 inj->header, inj->prefix, SL_PLACEHOLDER);
			respond(in, 403, "placeholder-missing", msg);
			return;
		}
	}
	if (c->dec.path_checked) {
		/* The origin gets the path that was decided, not another
		 * spelling of it ("//v1/x") that it might route elsewhere. */
		char *target;
		int e = sl_reqhead_forward_target(c->path, strlen(c->path), &target, &why);

		if (e < 0) {
			respond(in, 400, "invalid-path", e == -EINVAL ? why : "out of memory");
			return;
		}
		free(c->path);
		c->path = target;
	}
	in->head_req = sl_http_span_eq(&r->method, "HEAD");
	if ((in->head_req || sl_http_span_eq(&r->method, "GET")) &&
	    (r->chunked || (r->has_length && r->content_length > 0))) {
		/* Some origins read no body after a GET: its bytes would be
		 * a request nobody decided, on a connection we keep. */
		respond(in, 400, "bad-request", "a GET or HEAD request with a body");
		return;
	}
	up_hdr = sl_http_header(r, "upgrade", NULL);
	in->ws_req = up_hdr && sl_http_span_caseeq(up_hdr, "websocket") &&
		     sl_http_span_eq(&r->method, "GET") && header_has_token(r, "connection", "upgrade");
	if (up_hdr && !in->ws_req) {
		respond(in, 400, "bad-request", "only websocket upgrades are relayed");
		return;
	}
	in->client_ka = r->keep_alive && !in->ws_req;
	if (sl_http_body_init(&in->body, in->cbuf, r->head_len) < 0) {
		respond(in, 400, "bad-request", "bad framing in the request head");
		return;
	}
	in->body_done = sl_http_body_is_done(&in->body);
	if (build_upstream_head(in, r, c->path, inj, v) < 0) {
		conn_close(c);
		return;
	}
	memmove(in->cbuf, in->cbuf + r->head_len, in->clen - r->head_len);
	in->clen -= r->head_len;
	in->head_started = false;
	conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	/* The audit names the secret only once it goes with the request. */
	if (inj)
		c->credential = c->pol->p->secrets[inj->secret].name;
	in->st = I_UPSTREAM;
	get_upstream(in, false);
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
			respond(in, 400, "bad-framing", why);
			return;
		}
		w = up_write(in->up, out, olen);
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
			end_exchange(in, true);
	}
}

/* The exchange is over: audit it; keep or close each side. */
static void end_exchange(struct insp *in, bool reusable)
{
	struct conn *c = in->c;
	struct up *up = in->up;

	conn_write_audit(c);
	c->n_exchanges++;
	c->audited = true;
	in->up = NULL;
	wipe_uhead(in);
	in->reused = false;
	if (up) {
		if (reusable && in->resp_ka && in->st == I_EXCHANGE)
			pool_put(up);
		else
			up_close(up);
	}
	if (in->close_after || in->client_eof) {
		in->st = I_CLOSING;
		uv_read_stop((uv_stream_t *)&c->client);
		SSL_shutdown(in->ssl);
		if (client_flush(in, true) < 0)
			conn_close(c);
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
	in->body_done = in->head_req = in->ws_req = in->client_ka = false;
	in->up_paused = false;
	in->st = I_HEAD;
	conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	drive_client(in);
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
			respond(in, status, status == 431 ? "header-too-large" : "bad-request", why);
			return;
		}
		begin_exchange(in, &r);
		return;
	}
	case I_EXCHANGE:
		forward_body(in);
		return;
	case I_WS:
		if (in->clen) {
			if (up_write(in->up, in->cbuf, in->clen) < 0) {
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

static void drive_client_once(struct insp *in)
{
	struct conn *c = in->c;
	unsigned round;

	if (in->st == I_HANDSHAKE) {
		int r = SSL_do_handshake(in->ssl);

		if (client_flush(in, false) < 0) {
			conn_close(c);
			return;
		}
		if (r != 1) {
			if (SSL_get_error(in->ssl, r) == SSL_ERROR_WANT_READ)
				return;
			/* Most often: the client does not trust our CA. */
			c->refused = true;
			c->reason = "client-tls-failed";
			ERR_clear_error();
			conn_close(c);
			return;
		}
		in->st = I_HEAD;
		conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	}
	for (round = 0; round < DRIVE_ROUNDS; round++) {
		int n, e;

		process_client(in);
		if (closing(in))
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
		if (client_flush(in, false) < 0) {
			conn_close(c);
			return;
		}
		if (e == SSL_ERROR_WANT_READ) {
			if (in->client_paused && !in->client_eof) {
				in->client_paused = false;
				uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, client_read);
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

static void drive_client(struct insp *in)
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
		if (!in->redrive || closing(in))
			break;
	}
	in->in_drive = false;
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	struct insp *in = c->insp;

	if (nread == 0) {
		free(buf->base);
		return;
	}
	if (nread < 0) {
		free(buf->base);
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
		 * the response may still go out (end_exchange closes), unless
		 * the body can no longer come or the client reset. */
		if (in->st != I_EXCHANGE && in->st != I_UPSTREAM) {
			conn_close(c);
		} else if (!in->body_done || nread != UV_EOF) {
			c->reason = !in->body_done ? "incomplete-request" : "client-closed";
			conn_close(c);
		}
		return;
	}
	BIO_write(in->rb, buf->base, (int)nread);
	free(buf->base);
	if (in->st == I_HEAD && !in->head_started) {
		/* A head begins with its first TLS record's first byte, not
		 * once a record decrypts: one record trickled a byte at a
		 * time would otherwise hold the idle limit off for ever. */
		in->head_started = true;
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	} else if (in->st != I_HANDSHAKE && in->st != I_HEAD) {
		conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	}
	drive_client(in);
}

/* ---- the conn's side ---- */

void conn_inspect_start(struct conn *c)
{
	struct sl_gw_tls *t = c->gw->tls;
	struct insp *in = calloc(1, sizeof(*in));
	char why[SL_HOST_BUF + 64];

	if (!in) {
		conn_close(c);
		return;
	}
	c->insp = in;
	c->inspect = true;
	in->c = c;
	in->st = I_HANDSHAKE;
	snprintf(in->host, sizeof(in->host), "%s", c->dec.host);
	in->kind = c->dec.host_kind;
	in->ccap = cbuf_cap(c->gw);
	in->cbuf = malloc(in->ccap);
	in->ssl = SSL_new(t->server);
	in->rb = BIO_new(BIO_s_mem());
	in->wb = BIO_new(BIO_s_mem());
	if (!in->cbuf || !in->ssl || !in->rb || !in->wb) {
		BIO_free(in->rb);
		BIO_free(in->wb);
		in->rb = in->wb = NULL;
		conn_close(c);
		return;
	}
	SSL_set_bio(in->ssl, in->rb, in->wb);
	SSL_set_accept_state(in->ssl);
	if (sl_ca_use_leaf(t->ca, in->ssl, in->host) < 0) {
		snprintf(why, sizeof(why), "cannot make a certificate for %s", in->host);
		c->refused = true;
		c->reason = "leaf-failed";
		conn_close(c);
		return;
	}
	if (t->n_secrets) {
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
	if (c->len)
		BIO_write(in->rb, c->buf, (int)c->len);
	free(c->buf);
	c->buf = NULL;
	c->len = 0;
	c->state = ST_INSPECT;
	conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, client_read);
	drive_client(in);
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
		respond(in, 408, "header-timeout", "timed out waiting for the request head");
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

	if (!in || closing(in) || !in->up_paused || !in->up)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->client) >
	    c->gw->cfg.max_buffered_bytes / 2)
		return;
	in->up_paused = false;
	in->up->paused = false;
	if (!in->up->eof)
		uv_read_start((uv_stream_t *)&in->up->tcp, up_alloc, up_read);
	drive_upstream(in);
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
		audit_now(c);
	}
	in->st = I_CLOSING;
	if (in->up) {
		up_close(in->up);
		in->up = NULL;
	}
}

void conn_inspect_free(struct conn *c)
{
	struct insp *in = c->insp;

	if (!in)
		return;
	SSL_free(in->ssl);
	free(in->cbuf);
	free(in->rbuf);
	if (in->uhead) {
		explicit_bzero(in->uhead, in->uhead_len);
		free(in->uhead);
	}
	sl_scrub_free(&in->scrub);
	free(in);
	c->insp = NULL;
}
