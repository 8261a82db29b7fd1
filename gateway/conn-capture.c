/* SPDX-License-Identifier: MIT */
/*
 * Transparent capture: a connection the sandbox's nftables redirected to
 * us is decided by its ClientHello's SNI, else its HTTP Host, else the name
 * our DNS gave out its address for, else the address itself. Only TLS with
 * a server name and HTTP are relayed, unless a `protocol: tcp` rule
 * declares the port carries something else; then it is decided at once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-internal.h"
#include "macro.h"
#include "first-flight.h"
#include "tls-hello.h"

/* ---- transparent capture: decide by SNI, else Host, else the address ---- */

/* Whether a name decides a connection to this port: allowed at all, or
 * (opaque_only) allowed by a protocol: tcp rule that needs no bytes. */
static bool name_decides(struct conn *c, const char *name, bool opaque_only)
{
	struct sl_request q = { .host = name, .host_len = strlen(name), .port = c->port };
	struct sl_decision dec;

	sl_policy_decide(c->pol->p, &q, &dec);
	if (dec.verdict == SL_VERDICT_OBSERVE)
		return !opaque_only; /* observe mode: never opaque at once */
	if (dec.verdict != SL_VERDICT_ALLOW)
		return false;
	return !opaque_only || (!dec.inspect && dec.rule && dec.rule->opaque);
}

/* The names whose DNS answers (ours, to this sandbox) gave out the
 * original destination address; failing those, the address itself, which
 * only an address rule can allow. Every name the sandbox was given this
 * address for is a name it may have meant (a CDN serves several from one
 * address): the first that decides (name_decides) is the connection's
 * host (and the audit's). Taking only the name answered last would make
 * the verdict depend on what else the sandbox happened to resolve
 * meanwhile. None decides: the most recent is named, or NULL when
 * opaque_only. The one place that asks the DNS map. */
static const char *address_host(struct conn *c, char buf[static SL_DNS_NAME_BUF], bool opaque_only)
{
	char names[SL_DNS_MAP_NAMES][SL_DNS_NAME_BUF];
	int n, i;

	n = sl_gw_dns_names_for(c->gw, (const struct sockaddr *)&c->orig, names, SL_DNS_MAP_NAMES);
	for (i = 0; i < n; i++)
		if (name_decides(c, names[i], opaque_only)) {
			memcpy(buf, names[i], SL_DNS_NAME_BUF);
			return buf;
		}
	if (n > 0) {
		memcpy(buf, names[0], SL_DNS_NAME_BUF);
		return opaque_only ? NULL : buf;
	}
	if (opaque_only && !name_decides(c, c->orig_str, true))
		return NULL;
	return c->orig_str;
}

/* Neither SNI nor Host: the address's names decide. */
static void decide_by_address(struct conn *c)
{
	char name[SL_DNS_NAME_BUF];
	const char *host = address_host(c, name, false);

	c->tunnel = true;
	conn_use(c, CONN_TUNNEL);
	conn_decide_and_go(c, host, strlen(host), NULL, 0);
}

/* Decide at once, before the client's first bytes, when the address's
 * name is allowed on this port by a `protocol: tcp` rule (a server-first
 * protocol need not wait out capture_wait_ms). */
static bool decide_at_once(struct conn *c)
{
	char name[SL_DNS_NAME_BUF];
	/* Only a protocol: tcp rule relays without looking at the bytes;
	 * for any other the client's first bytes (SNI, Host) decide. */
	const char *host = address_host(c, name, true);

	if (!host)
		return false;
	c->tunnel = true;
	conn_use(c, CONN_TUNNEL);
	conn_decide_and_go(c, host, strlen(host), NULL, 0);
	return true;
}

/* A captured plain-HTTP request: origin-form target, Host names the host,
 * the port is where the client was really going. */
static void handle_captured_head(struct conn *c, const struct sl_http_request *r)
{
	const struct sl_http_span *hh;
	const char *host, *why = NULL;
	size_t host_len, n_host;
	uint16_t hport;

	conn_use(c, CONN_HTTP); /* forwarded, and kept alive, as plain HTTP */
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

/* What the client sent first, as it arrives in c->buf: a ClientHello is
 * decided by its SNI, HTTP by its Host, anything else by the address. */
static void capture_head(struct conn *c)
{
	size_t skip;
	enum sl_flight f = sl_first_flight(c->buf, c->len, &skip);

	if (f == SL_FLIGHT_TLS) {
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
		conn_use(c, CONN_TUNNEL);
		if (r < 0) {
			c->refused = true;
			c->reason = "bad-client-hello";
			conn_close(c);
			return;
		}
		/* An Encrypted ClientHello is decided by its outer SNI, as in a
		 * tunnel (conn-tunnel.c says why). No SNI: decided by address,
		 * then refused unless inspected (conn_capture_may_relay). */
		c->tls_seen = true;
		c->hello_len = h.consumed;
		snprintf(c->sni, sizeof(c->sni), "%s", h.sni);
		if (h.sni[0])
			conn_decide_and_go(c, h.sni, strlen(h.sni), NULL, 0);
		else
			decide_by_address(c);
		return;
	}
	switch (f) {
	case SL_FLIGHT_MORE:
		return;
	case SL_FLIGHT_HTTP: {
		struct sl_http_request r;
		const char *why = NULL;
		int status = 0, k;

		/* Empty lines before the request line, which servers skip:
		 * skipped here, so the request is still decided by its Host. */
		if (skip) {
			memmove(c->buf, c->buf + skip, c->len - skip);
			c->len -= skip;
		}
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
	case SL_FLIGHT_TLS: /* handled above */
	case SL_FLIGHT_OTHER:
		/* Neither TLS nor HTTP: only a protocol: tcp rule for the
		 * address's name carries it (conn_capture_may_relay). */
		uv_read_stop((uv_stream_t *)&c->client);
		uv_timer_stop(&c->timer);
		decide_by_address(c);
		return;
	}
}

/* Accepted on the capture listener: where was the client going? */
static void capture_start(struct conn *c)
{
	uv_os_fd_t fd;
	socklen_t len = sizeof(c->orig);

	/* The destination the sandbox's nftables redirected away from; this
	 * socket lives in the sandbox's namespace, where the NAT happened,
	 * so its conntrack can answer. */
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
	if (decide_at_once(c))
		return;
	conn_arm_timer(c, c->gw->cfg.capture_wait_ms);
	uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, conn_head_read);
}

/* Nothing came within capture_wait_ms: a protocol where the server speaks
 * first (SMTP, a database), decided by address. Not a kept-alive HTTP
 * connection between requests: it said what it carries, and goes as plain
 * HTTP does. */
static bool capture_timer(struct conn *c)
{
	if (c->state != ST_HEAD || c->len || c->n_exchanges)
		return false;
	uv_read_stop((uv_stream_t *)&c->client);
	decide_by_address(c);
	return true;
}

const struct conn_handler conn_capture_handler = {
	.name = "capture",
	.start = capture_start,
	.head = capture_head,
	.timer = capture_timer,
};
