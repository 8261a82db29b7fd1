/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: the connections to origins. A struct up lives on its
 * own, apart from any client connection, because it outlives one in the
 * pool: resolve, connect, the TLS handshake that verifies the origin,
 * writes and reads, and the pool of kept-alive connections (bounded,
 * idle limit, flushed by a reload); sessions to resume come from
 * inspect-tls.c's cache. A file because these are the lifetimes that are
 * not a struct conn's. What its owner must hear (ready, readable,
 * drained, failed) goes through the owner's in->ops: this file names
 * nothing above it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "inspect-internal.h"
#include "macro.h"

#define POOL_MAX 32
#define POOL_PER_HOST 4
#define POOL_IDLE_MS 30000
/* A spare waits less: an origin that closes idle connections sooner than
 * the pool lets them go would close one under a POST, which is never
 * sent twice (a connection reused after a GET is no different, but a
 * spare is what POSTs take). Four seconds is under the shortest idle
 * limit origins commonly keep (Apache's five). */
#define SPARE_IDLE_MS 4000

void sl_gw_tls_flush_pool(struct sl_gw *gw)
{
	if (gw->tls)
		gw->tls->gen++;
	while (gw->tls && gw->tls->pool)
		insp_up_close(gw->tls->pool);
}

bool sl_gw_tls_busy(const struct sl_gw *gw)
{
	return gw->tls && (gw->tls->n_ups > 0 || gw->tls->held_timer_open);
}

/* ---- writing ---- */

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
			insp_up_close(up);
		}
		return;
	}
	/* The client paused because this queue was full. */
	if (in && in->client_paused &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&up->tcp) <=
		in->c->gw->cfg.max_buffered_bytes / 2)
		in->ops->up_drained(in);
}

/* The records up's SSL made, out on its socket: written now if it takes
 * them (no write request, no callback, no epoll change), the rest queued
 * behind whatever is queued still. */
static int up_flush(struct up *up)
{
	struct insp_q *q = &up->wq;
	struct up_wreq *w;
	uv_buf_t b;
	size_t n;
	int r;

	if (q->len == 0)
		return 0;
	b = uv_buf_init(q->p + q->off, (unsigned)q->len);
	r = uv_try_write((uv_stream_t *)&up->tcp, &b, 1);
	if (r < 0 && r != UV_EAGAIN)
		return r;
	if (r > 0)
		insp_q_consume(q, (size_t)r);
	if (q->len == 0) {
		insp_q_release(q); /* a pooled connection holds no buffer */
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->up = up;
	w->data = insp_q_take(q, &n);
	b = uv_buf_init(w->data, (unsigned)n);
	r = uv_write(&w->req, (uv_stream_t *)&up->tcp, &b, 1, up_written);
	if (r < 0) {
		free(w->data);
		free(w);
	}
	return r;
}

int insp_up_write(struct up *up, const void *p, size_t n)
{
	if (n && SSL_write(up->ssl, p, (int)n) != (int)n)
		return -EIO;
	return up_flush(up);
}

/* ---- upstream connections ---- */

static void up_timer_fired(uv_timer_t *tm);

static void up_handle_closed(uv_handle_t *h)
{
	struct up *up = h->data;
	struct sl_gw_tls *t = up->t;

	if (--up->open_handles > 0)
		return;
	SSL_free(up->ssl); /* and its BIOs; their queues are ours */
	insp_q_free(&up->rq);
	insp_q_free(&up->wq);
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

void insp_up_close(struct up *up)
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

/* libuv reads straight into the free tail of up->rq. */
void insp_up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct up *up = h->data;

	(void)suggested;
	if (insp_q_reserve(&up->rq, INSP_READ) < 0) {
		*buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
		return;
	}
	*buf = uv_buf_init(up->rq.p + up->rq.off + up->rq.len, INSP_READ);
}

static void up_fail(struct up *up, int status, const char *reason, const char *why)
{
	struct insp *in = up->owner;
	bool again = in && up->spare && !up->ready;

	insp_up_close(up);
	if (again) /* a spare taken mid-handshake: nothing went on it */
		insp_get_upstream(in, true);
	else if (in)
		in->ops->up_failed(in, status, reason, why);
}

/* An idle connection spoke: a session ticket is fine, anything else (or
 * an error) makes it unusable. false when it was closed. */
static bool idle_probe(struct up *up)
{
	char b[64];
	int n = SSL_read(up->ssl, b, sizeof(b));

	if (n > 0 || SSL_get_error(up->ssl, n) != SSL_ERROR_WANT_READ) {
		ERR_clear_error();
		insp_up_close(up);
		return false;
	}
	return true;
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
		up->ready_at = uv_now(up->t->gw->loop);
		uv_timer_stop(&up->timer);
		if (up->owner) {
			up->spare = false; /* its request goes now */
			up->owner->ops->up_ready(up->owner);
		} else if (up->pooled) {
			/* A spare, ready before anyone took it: what came with
			 * the handshake's end is checked as on any idle one. */
			if ((up->rq.len > 0 || SSL_pending(up->ssl) > 0) && !idle_probe(up))
				return;
			uv_timer_start(&up->timer, up_timer_fired, SPARE_IDLE_MS, 0);
		}
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
			 up->port, insp_tls_error());
	ERR_clear_error();
	up_fail(up, 502, "upstream-tls-failed", why);
}

void insp_up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct up *up = s->data;
	struct insp *in = up->owner;

	(void)buf; /* the free tail of up->rq (insp_up_alloc) */
	if (nread == 0)
		return;
	if (nread < 0) {
		if (!in || !up->ready) {
			if (in)
				up_fail(up, 502, "upstream-closed", "the origin closed the connection");
			else
				insp_up_close(up);
			return;
		}
		/* Records already here are drained first; insp_drive_upstream
		 * reports the end once they are (also after a pause). */
		up->eof = true;
		in->ops->up_readable(in);
		return;
	}
	up->rq.len += (size_t)nread;
	if (!up->ready) {
		up_handshake(up);
		insp_q_release(&up->rq);
		return;
	}
	if (!in) {
		/* An idle connection spoke (or sent a ticket). */
		if (idle_probe(up))
			insp_q_release(&up->rq);
		return;
	}
	in->ops->up_readable(in);
	/* up may be closing, but is freed only once its handles are. */
	insp_q_release(&up->rq); /* unless a record is still partial */
}

static void up_timer_fired(uv_timer_t *tm)
{
	struct up *up = tm->data;

	if (up->owner)
		up_fail(up, 504, "connect-timeout", "timed out connecting to the origin");
	else
		insp_up_close(up);
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
	if (insp_trust_pending_load(up->t, why, sizeof(why)) < 0) {
		up_fail(up, 502, "upstream-tls-failed", why);
		return;
	}
	up->ssl = SSL_new(up->t->client);
	{
		BIO *rb = up->ssl ? insp_q_bio(&up->rq) : NULL, *wb = rb ? insp_q_bio(&up->wq) : NULL;

		if (!wb) {
			BIO_free(rb);
			up_fail(up, 502, "connect-failed", "out of memory");
			return;
		}
		SSL_set_bio(up->ssl, rb, wb);
	}
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
	uv_read_start((uv_stream_t *)&up->tcp, insp_up_alloc, insp_up_read);
	up_handshake(up);
}

/* c: the client connection whose policy picks the address (a spare has
 * no owner yet, but is made while the exchange that asks for it is). */
static void up_connect(struct up *up, const struct conn *c, const struct sl_gw_addrs *a)
{
	const char *refused = NULL;
	const struct sockaddr *sa = conn_pick_address(c, a, &refused);
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
	conn_addr_with_port(&to, sa, up->port);
	r = uv_tcp_init(c->gw->loop, &up->tcp);
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
	int http;

	up->rreq = NULL;
	if (up->closing || !up->owner)
		return;
	if (status < 0) {
		const char *reason, *what = sl_gw_resolve_failure(status, &http, &reason);

		snprintf(why, sizeof(why), "cannot resolve %s: %s", up->host, what);
		up_fail(up, http, reason, why);
		return;
	}
	up_connect(up, up->owner->c, addrs);
}

/* A connection to this host from the pool, or NULL: an idle one first,
 * else a spare still making its handshake (its connect deadline keeps
 * running; its owner hears up_ready when the handshake is done). */
static struct up *pool_take(struct sl_gw_tls *t, const char *host, uint16_t port)
{
	struct up *up, *spare = NULL;

	for (up = t->pool; up; up = up->next)
		if (up->port == port && strcmp(up->host, host) == 0) {
			if (!up->ready) {
				spare = up; /* the last: the oldest, nearest ready */
				continue;
			}
			pool_unlink(up);
			uv_timer_stop(&up->timer);
			return up;
		}
	if (spare)
		pool_unlink(spare);
	return spare;
}

/* Whether one more connection to up's host may wait in the pool: not
 * from before a flush (a reload: its address was chosen under the old
 * policy), and within the bounds. */
static bool pool_has_room(const struct up *up)
{
	const struct sl_gw_tls *t = up->t;
	const struct up *o;
	unsigned same = 0;

	for (o = t->pool; o; o = o->next)
		same += o->port == up->port && strcmp(o->host, up->host) == 0;
	return !t->gw->shutting_down && up->gen == t->gen && t->n_pool < POOL_MAX &&
	       same < POOL_PER_HOST;
}

static void pool_link(struct up *up)
{
	struct sl_gw_tls *t = up->t;

	up->next = t->pool;
	if (t->pool)
		t->pool->prev = up;
	t->pool = up;
	up->prev = NULL;
	up->pooled = true;
	t->n_pool++;
}

void insp_pool_put(struct up *up)
{
	up->owner = NULL;
	if (!pool_has_room(up) || SSL_pending(up->ssl) > 0 || up->rq.len > 0) {
		insp_up_close(up);
		return;
	}
	pool_link(up);
	if (up->paused) {
		up->paused = false;
		uv_read_start((uv_stream_t *)&up->tcp, insp_up_alloc, insp_up_read);
	}
	uv_timer_start(&up->timer, up_timer_fired, POOL_IDLE_MS, 0);
}

/* A new connection to up's host (not yet resolved or connected), owned
 * by in or, for a spare, by nobody; NULL when out of memory. */
static struct up *up_new(struct sl_gw_tls *t, struct insp *in, const struct up *like)
{
	struct conn *c = in->c;
	struct up *up = calloc(1, sizeof(*up));

	if (!up)
		return NULL;
	up->t = t;
	up->gen = t->gen;
	up->id = ++t->n_made;
	t->n_ups++;
	snprintf(up->host, sizeof(up->host), "%s", like ? like->host : in->host);
	up->kind = like ? like->kind : in->kind;
	up->port = like ? like->port : c->port;
	uv_timer_init(c->gw->loop, &up->timer);
	up->timer.data = up;
	up->open_handles = 1;
	uv_timer_start(&up->timer, up_timer_fired, c->gw->cfg.connect_timeout_ms, 0);
	return up;
}

bool insp_spare_holds(struct sl_gw_tls *t, uint64_t id)
{
	struct up *up;

	for (up = t->pool; up; up = up->next) {
		if (up->id != id)
			continue;
		if (up->spare && up->ready &&
		    uv_now(t->gw->loop) - up->ready_at > SPARE_IDLE_MS / 2) {
			/* Made early, under a long answer: its wait would end
			 * soon after the next request could come. */
			insp_up_close(up);
			return false;
		}
		return true;
	}
	return false;
}

uint64_t insp_up_spare(struct insp *in, struct up *old)
{
	struct sl_gw_tls *t = old->t;
	struct sl_gw_addrs a = {.n = 1};
	int len = (int)sizeof(a.addr[0]);
	struct up *up;
	uint64_t id;

	/* Its address is checked under the policy in force: not a request's
	 * older one (a reload since it began). */
	if (!old->ready || !old->tcp_open || old->closing || !pool_has_room(old) ||
	    in->c->pol != in->c->gw->policy ||
	    uv_tcp_getpeername(&old->tcp, (struct sockaddr *)&a.addr[0], &len) < 0)
		return 0;
	up = up_new(t, in, old);
	if (!up)
		return INSP_SPARE_NONE;
	up->spare = true;
	pool_link(up);
	id = up->id;
	/* The address old was connected to, checked again as any is (a
	 * refusal closes the spare at once: then it is not in the pool). */
	up_connect(up, in->c, &a);
	for (up = t->pool; up; up = up->next)
		if (up->id == id)
			return id;
	return INSP_SPARE_NONE;
}

void insp_get_upstream(struct insp *in, bool fresh)
{
	struct conn *c = in->c;
	struct sl_gw_tls *t = c->gw->tls;
	struct up *up = fresh ? NULL : pool_take(t, in->host, c->port);
	int r;

	if (up) {
		/* A spare still on its way is new: nothing to retry on. */
		in->reused = up->ready && (in->head_req || strcmp(c->method, "GET") == 0);
		up->owner = in;
		in->up = up;
		if (up->ready) {
			up->spare = false;
			in->ops->up_ready(in);
		}
		return;
	}
	in->reused = false;
	up = up_new(t, in, NULL);
	if (!up) {
		in->ops->up_failed(in, 502, "connect-failed", "out of memory");
		return;
	}
	up->owner = in;
	in->up = up;
	if (in->kind != SL_HOST_NAME) {
		struct sl_gw_addrs a;

		conn_literal_addrs(in->kind, in->host, &a);
		up_connect(up, c, &a);
		return;
	}
	r = sl_gw_resolve(c->gw->resolver, up->host, up_resolved, up, &up->rreq);
	if (r < 0)
		up_fail(up, 502, "resolve-failed", "cannot start a DNS lookup");
}
