/* SPDX-License-Identifier: MIT */
/*
 * Transparent capture: a connection the sandbox's nftables redirected to
 * us is decided by its ClientHello's SNI, else its HTTP Host, else the name
 * our DNS gave out its address for, else the address itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-internal.h"
#include "macro.h"
#include "tls-hello.h"

/* ---- transparent capture: decide by SNI, else Host, else the address ---- */

/* Neither SNI nor Host: the names whose DNS answers (ours, to this
 * sandbox) gave out the original destination address decide; failing
 * that, the address itself, which only an address rule can allow. */
void conn_decide_by_address(struct conn *c)
{
	char names[SL_DNS_MAP_NAMES][SL_DNS_NAME_BUF];
	int n, i;

	c->tunnel = true;
	/* Every name the sandbox was given this address for is a name it
	 * may have meant (a CDN serves several from one address): the
	 * connection goes if one of them allows it, and that name decides
	 * (and is the audit's host). Taking only the name answered last
	 * would make the verdict depend on what else the sandbox happened
	 * to resolve meanwhile. None allows it: the most recent is named. */
	n = sl_gw_dns_names_for(c->gw, (const struct sockaddr *)&c->orig, names, SL_DNS_MAP_NAMES);
	for (i = 0; i < n; i++) {
		struct sl_request q = { .host = names[i], .host_len = strlen(names[i]),
					.port = c->port };
		struct sl_decision dec;

		sl_policy_decide(c->pol->p, &q, &dec);
		if (dec.verdict == SL_VERDICT_ALLOW) {
			conn_decide_and_go(c, names[i], strlen(names[i]), NULL, 0);
			return;
		}
	}
	if (n > 0) {
		conn_decide_and_go(c, names[0], strlen(names[0]), NULL, 0);
		return;
	}
	conn_decide_and_go(c, c->orig_str, strlen(c->orig_str), NULL, 0);
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
		conn_respond_error(c, 400, "bad-request", "CONNECT to a captured connection");
		return;
	}
	c->path = strndup(r->target.p, r->target.len);
	if (!c->path) {
		conn_close(c);
		return;
	}
	hh = sl_http_header(r, "host", &n_host);
	if (!hh || sl_host_split(hh->p, hh->len, &host, &host_len, &hport, &why) < 0) {
		conn_respond_error(c, 400, "bad-request",
				   why ? why : "a request without a Host header");
		return;
	}
	conn_decide_and_go(c, host, host_len, c->path, strlen(c->path));
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

void conn_capture_classify(struct conn *c)
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
			conn_decide_and_go(c, h.sni, strlen(h.sni), NULL, 0);
		else
			conn_decide_by_address(c);
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
			conn_respond_error(c, status,
					   status == 431 ? "header-too-large" : "bad-request", why);
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
		conn_decide_by_address(c);
		return;
	}
}

void conn_capture_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	size_t cap = c->gw->cfg.max_header_bytes + 1 > HELLO_MAX ? c->gw->cfg.max_header_bytes + 1
								 : HELLO_MAX;
	bool began;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0) {
			c->refused = true;
			c->reason = c->len ? "incomplete-request" : "no-request";
			conn_close(c);
		}
		return;
	}
	/* Only the head (or hello) is capped: a read may bring a head and
	 * the start of its body, which must reach the origin whole. */
	if (c->len > cap) {
		free(buf->base);
		conn_respond_error(c, 431, "header-too-large", "request head too large");
		return;
	}
	began = c->len == 0;
	if (conn_buf_append(c, buf, (size_t)nread) < 0) {
		conn_close(c);
		return;
	}
	/* A head has begun: its deadline, once, from now (slowloris). */
	if (began)
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	conn_capture_classify(c);
}
