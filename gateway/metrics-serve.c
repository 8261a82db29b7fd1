// SPDX-License-Identifier: MIT
/*
 * --metrics ADDR:PORT: the gateway's counters (metrics.h) as Prometheus
 * text, to whoever scrapes the operator's address. Bound before the
 * gateway confines itself, in the host's namespace; never an address of
 * the sandbox's side (the pool's, a wildcard that would include the veth's
 * host end), and a peer from the pool is closed unread. It serves only
 * `GET /metrics` (HEAD too): anything else is 404 or 405, a head past
 * SL_METRICS_REQ_MAX 400; at most MAX_SCRAPERS at once (the rest closed),
 * each given SCRAPE_TIMEOUT_MS for its whole exchange, reading and
 * writing, then closed (408 if its head was not in by then). The sandbox's
 * bytes never reach this code: it answers the operator's scraper.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway-internal.h"
#include "macro.h"
#include "metrics.h"

#define MAX_SCRAPERS 8
#define SCRAPE_TIMEOUT_MS 5000

struct scraper {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wr;
	struct sl_gw_metrics_srv *srv;
	struct scraper *next;
	char head[SL_METRICS_REQ_MAX];
	size_t len;
	char status_head[256];
	char *body;
	unsigned open_handles;
	bool answered;
};

struct sl_gw_metrics_srv {
	struct sl_gw *gw;
	uv_tcp_t listener;
	bool listening;
	struct scraper *scrapers;
	unsigned n;
};

static void scraper_closed(uv_handle_t *h)
{
	struct scraper *s = h->data;
	struct sl_gw_metrics_srv *srv = s->srv;
	struct scraper **pp;

	if (--s->open_handles)
		return;
	for (pp = &srv->scrapers; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	srv->n--;
	free(s->body);
	free(s);
	sl_gw_maybe_free(srv->gw);
}

static void scraper_close(struct scraper *s)
{
	if (!uv_is_closing((uv_handle_t *)&s->tcp))
		uv_close((uv_handle_t *)&s->tcp, scraper_closed);
	if (!uv_is_closing((uv_handle_t *)&s->timer))
		uv_close((uv_handle_t *)&s->timer, scraper_closed);
}

static void written(uv_write_t *w, int status)
{
	(void)status;
	scraper_close(w->data);
}

static void answer(struct scraper *s, int code, enum sl_metrics_req req)
{
	static const char *const reasons[] = {[200] = "OK",
					      [400] = "Bad Request",
					      [404] = "Not Found",
					      [405] = "Method Not Allowed",
					      [408] = "Request Timeout"};
	struct sl_metrics *m = s->srv->gw->metrics;
	const char *type = "text/plain; charset=utf-8";
	size_t n = 0;
	uv_buf_t bufs[2];
	int hl;

	s->answered = true;
	uv_read_stop((uv_stream_t *)&s->tcp);
	sl_metrics_scraped(m, code);
	if (code == 200) {
		n = sl_metrics_render(m, NULL, 0);
		s->body = malloc(n + 1);
		if (s->body)
			n = sl_metrics_render(m, s->body, n + 1);
		else
			code = 500, n = 0;
		type = SL_METRICS_CONTENT_TYPE;
	} else {
		s->body = malloc(64);
		if (s->body)
			n = (size_t)snprintf(s->body, 64, "%s\n", reasons[code]);
	}
	hl = snprintf(s->status_head, sizeof(s->status_head),
		      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		      "Connection: close\r\n\r\n",
		      code, code == 500 ? "Internal Server Error" : reasons[code], type, n,
		      code == 405 ? "Allow: GET, HEAD\r\n" : "");
	bufs[0] = uv_buf_init(s->status_head, (unsigned)hl);
	bufs[1] = uv_buf_init(s->body ? s->body : "", req == SL_METRICS_REQ_HEAD ? 0 : (unsigned)n);
	s->wr.data = s;
	if (uv_write(&s->wr, (uv_stream_t *)&s->tcp, bufs, 2, written) < 0)
		scraper_close(s);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct scraper *s = h->data;

	(void)suggested;
	*buf = uv_buf_init(s->head + s->len, (unsigned)(sizeof(s->head) - s->len));
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct scraper *s = st->data;
	enum sl_metrics_req req;

	(void)buf;
	if (nread == 0 || s->answered)
		return;
	if (nread < 0) {
		scraper_close(s);
		return;
	}
	s->len += (size_t)nread;
	req = sl_metrics_parse_request(s->head, s->len);
	if (req == SL_METRICS_REQ_MORE && s->len >= sizeof(s->head))
		req = SL_METRICS_REQ_BAD;
	switch (req) {
	case SL_METRICS_REQ_MORE:
		return;
	case SL_METRICS_REQ_METRICS:
	case SL_METRICS_REQ_HEAD:
		answer(s, 200, req);
		return;
	case SL_METRICS_REQ_NOT_FOUND:
		answer(s, 404, req);
		return;
	case SL_METRICS_REQ_BAD_METHOD:
		answer(s, 405, req);
		return;
	case SL_METRICS_REQ_BAD:
	default:
		answer(s, 400, req);
		return;
	}
}

static void timer_cb(uv_timer_t *t)
{
	struct scraper *s = t->data;

	if (!s->answered) {
		answer(s, 408, SL_METRICS_REQ_BAD);
		uv_timer_start(&s->timer, timer_cb, SCRAPE_TIMEOUT_MS, 0);
		return;
	}
	scraper_close(s); /* the answer was not taken in time either */
}

/* A peer on the sandbox's side: its own address or the pool's. */
static bool peer_is_sandbox(const struct sl_gw *gw, uv_tcp_t *tcp)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) < 0)
		return true;
	if (gw->cfg.allowed_peer.ss_family != AF_UNSPEC &&
	    sl_gw_peer_allowed(gw, (const struct sockaddr *)&ss))
		return true;
	return sl_gw_is_owned(gw, (const struct sockaddr *)&ss);
}

static void on_scraper(uv_stream_t *server, int status)
{
	struct sl_gw_metrics_srv *srv = server->data;
	struct scraper *s;

	if (status < 0 || srv->gw->shutting_down)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->srv = srv;
	s->tcp.data = s->timer.data = s;
	uv_tcp_init(srv->gw->loop, &s->tcp);
	uv_timer_init(srv->gw->loop, &s->timer);
	s->open_handles = 2;
	s->next = srv->scrapers;
	srv->scrapers = s;
	srv->n++;
	if (uv_accept(server, (uv_stream_t *)&s->tcp) < 0) {
		scraper_close(s);
		return;
	}
	if (srv->n > MAX_SCRAPERS || peer_is_sandbox(srv->gw, &s->tcp)) {
		sl_metrics_scraped(srv->gw->metrics, 0);
		scraper_close(s);
		return;
	}
	uv_timer_start(&s->timer, timer_cb, SCRAPE_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)&s->tcp, alloc_cb, read_cb) < 0)
		scraper_close(s);
}

static const char *wildcard(const struct sockaddr_storage *ss)
{
	static const uint8_t any6[16];

	if ((ss->ss_family == AF_INET &&
	     ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY)) ||
	    (ss->ss_family == AF_INET6 &&
	     !memcmp(((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr, any6, 16)))
		return "is a wildcard, which includes the sandbox's gateway address (the veth's "
		       "host end); give one address of the host's, e.g. 127.0.0.1:9464";
	return NULL;
}

/* Would a scraper on the sandbox's side reach this address? Its own
 * ranges (every veth end), and, for a sandbox's gateway, the wildcard,
 * which includes the veth's host end. */
static const char *refused_address(const struct sl_gw *gw, const struct sockaddr_storage *ss)
{
	bool sandboxed = gw->cfg.n_owned || gw->cfg.allowed_peer.ss_family != AF_UNSPEC;

	if (sl_gw_is_owned(gw, (const struct sockaddr *)ss))
		return "is in sluice's own address pool, the sandboxes' side of the fence";
	if (gw->cfg.allowed_peer.ss_family != AF_UNSPEC &&
	    sl_gw_peer_allowed(gw, (const struct sockaddr *)ss))
		return "is the sandbox's own address";
	return sandboxed ? wildcard(ss) : NULL;
}

int sl_gw_metrics_addr_check(const char *addr_port, bool sandboxed, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	const char *why;
	int r = sl_gw_parse_listen("--metrics", addr_port, &ss, err, errlen);

	if (r < 0)
		return r;
	why = sandboxed ? wildcard(&ss) : NULL;
	if (why) {
		snprintf(err, errlen, "--metrics '%s': %s", addr_port, why);
		return -EINVAL;
	}
	return 0;
}

int sl_gw_listen_metrics(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen)
{
	struct sl_gw_metrics_srv *srv;
	struct sockaddr_storage ss;
	const char *why;
	int r;

	r = sl_gw_parse_listen("--metrics", addr_port, &ss, err, errlen);
	if (r < 0)
		return r;
	why = refused_address(gw, &ss);
	if (why) {
		snprintf(err, errlen, "--metrics '%s': %s", addr_port, why);
		return -EINVAL;
	}
	if (gw->metrics_srv) {
		snprintf(err, errlen, "--metrics '%s': metrics are already served", addr_port);
		return -EEXIST;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->gw = gw;
	gw->metrics_srv = srv;
	uv_tcp_init(gw->loop, &srv->listener);
	srv->listener.data = srv;
	srv->listening = true;
	r = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&ss, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&srv->listener, 16, on_scraper);
	if (r < 0) {
		snprintf(err, errlen, "--metrics '%s': %s", addr_port, uv_strerror(r));
		return r;
	}
	return 0;
}

static void listener_closed(uv_handle_t *h)
{
	struct sl_gw_metrics_srv *srv = h->data;

	srv->listening = false;
	sl_gw_maybe_free(srv->gw);
}

void sl_gw_metrics_close(struct sl_gw *gw)
{
	struct sl_gw_metrics_srv *srv = gw->metrics_srv;

	if (!srv)
		return;
	if (srv->listening && !uv_is_closing((uv_handle_t *)&srv->listener))
		uv_close((uv_handle_t *)&srv->listener, listener_closed);
	for (struct scraper *s = srv->scrapers; s; s = s->next)
		scraper_close(s);
}

bool sl_gw_metrics_open(const struct sl_gw *gw)
{
	return gw->metrics_srv && (gw->metrics_srv->listening || gw->metrics_srv->scrapers);
}

void sl_gw_metrics_free(struct sl_gw *gw)
{
	if (gw->audit)
		sl_audit_set_observer(gw->audit, NULL, NULL);
	free(gw->metrics_srv);
	sl_metrics_free(gw->metrics);
	gw->metrics_srv = NULL;
	gw->metrics = NULL;
}

static void gauges(void *data, struct sl_metrics_gauges *g)
{
	const struct sl_gw *gw = data;

	g->open_connections = gw->n_conns;
}

int sl_gw_metrics_init(struct sl_gw *gw)
{
	int r = sl_metrics_new(&gw->metrics);

	if (r < 0)
		return r;
	sl_metrics_set_gauges(gw->metrics, gauges, gw);
	if (gw->audit)
		sl_audit_set_observer(gw->audit, sl_metrics_audit_record, gw->metrics);
	return 0;
}

/* A connection's record: to the log, whose observer counts it, or, with
 * no log, straight to the counters, so `sluice ps` counts all the same. */
void sl_gw_audit_record(struct sl_gw *gw, const struct sl_audit_record *r)
{
	if (gw->audit)
		(void)sl_audit_write(gw->audit, r);
	else
		sl_metrics_audit_record(gw->metrics, r);
}

struct sl_metrics *sl_gw_metrics(struct sl_gw *gw)
{
	return gw->metrics;
}
