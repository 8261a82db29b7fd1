/* SPDX-License-Identifier: MIT */
/*
 * Tunnels: a CONNECT answered 200, then what it carries checked: a
 * ClientHello against the host the CONNECT named (fronting), then relayed
 * opaque; plain HTTP decided request by request, its Host held to that
 * host; anything else only where the rule says `protocol: tcp`. And
 * captured connections that are not HTTP, relayed once decided.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-internal.h"
#include "macro.h"
#include "first-flight.h"
#include "socks-wire.h"
#include "splice.h"
#include "tls-hello.h"

/* What was read to decide (c->buf) goes upstream first, then the bytes
 * flow both ways: opaque from here on, so by splice(2) where it can be
 * (splice.c), else copied by the core's relay. */
static void relay_with_peeked(struct conn *c)
{
	if (conn_splice_start(c) == 0)
		return;
	if (c->len) {
		c->bytes_up += c->len;
		if (conn_send_owned(c, false, c->buf, c->len, false) < 0) {
			c->buf = NULL;
			conn_close(c);
			return;
		}
		c->buf = NULL;
		c->len = 0;
	}
	conn_start_relay(c);
}

/* ---- the server's answer to a checked ClientHello ---- */

static void peek_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void peek_refuse(struct conn *c, const char *reason);
static void peek_check(struct conn *c);
static const struct conn_handler tunnel_hello_handler;

/* What the server sent first, to the client; then what the client sent
 * after its hello, held till now (hello_then_relay): upstream, and the
 * relay, or (after a HelloRetryRequest) the start of what is peeked for
 * the second hello, checked from the very byte the server reads next. */
static void server_first_done(struct conn *c, bool retry)
{
	uv_read_stop(conn_upstream(c));
	c->handler = &conn_tunnel_handler;
	c->bytes_down += c->len;
	if (c->len && conn_send_owned(c, true, c->buf, c->len, false) < 0) {
		c->buf = NULL;
		conn_close(c);
		return;
	}
	c->buf = c->tls_rest;
	c->len = c->tls_rest_len;
	c->tls_rest = NULL;
	c->tls_rest_len = 0;
	if (!retry) {
		relay_with_peeked(c);
		return;
	}
	c->tls_retried = true;
	conn_set_state(c, ST_PEEK);
	conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	if (c->len)
		peek_check(c);
	if (c->state == ST_PEEK)
		uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, peek_read);
}

static void hello_upstream_read(struct conn *c, ssize_t nread, const uv_buf_t *buf)
{
	int r;

	if (nread < 0) {
		free(buf->base);
		c->reason = "upstream-closed";
		conn_close(c); /* the origin left before it answered the hello */
		return;
	}
	/* Bounded: 43 bytes decide, and a read that brings them ends it. */
	if (conn_buf_append(c, buf, (size_t)nread) < 0) {
		conn_close(c);
		return;
	}
	r = sl_tls_server_first((const uint8_t *)c->buf, c->len);
	if (r == -EAGAIN)
		return;
	if (r == 1 && c->tls_retried) {
		/* TLS allows one: a second would let a third hello through. */
		peek_refuse(c, "bad-server-hello");
		return;
	}
	server_first_done(c, r == 1);
}

/* The checked hello goes upstream, and nothing more flows until the
 * server's first record says what it is: a HelloRetryRequest makes the
 * client send a second ClientHello, in the clear as the first, whose
 * server name a front end takes anew (OpenSSL's servername callback runs
 * again), so it is held to the decided host too. Only the hello's own
 * records go now: what the client sent behind them is held
 * (c->tls_rest), so that the second hello is checked from where the
 * server will read it. Were it sent on, the agent could begin a hello for
 * another site behind the first, and finish it with bytes that read as a
 * hello for the decided host from the start of the next peek (domain
 * fronting: helper 60's hrr-split-hello). Opaque rules (protocol: tcp)
 * and what was not TLS relay at once. */
static void hello_then_relay(struct conn *c)
{
	size_t n = c->hello_len < c->len ? c->hello_len : c->len;

	if (!c->tls_seen || (c->dec.rule && c->dec.rule->opaque)) {
		relay_with_peeked(c);
		return;
	}
	if (n < c->len) {
		c->tls_rest = malloc(c->len - n);
		if (!c->tls_rest) {
			conn_close(c);
			return;
		}
		memcpy(c->tls_rest, c->buf + n, c->len - n);
		c->tls_rest_len = c->len - n;
	}
	c->bytes_up += n;
	if (n && conn_send_owned(c, false, c->buf, n, false) < 0) {
		c->buf = NULL;
		conn_close(c);
		return;
	}
	c->buf = NULL;
	c->len = 0;
	conn_set_state(c, ST_SERVER_HELLO);
	c->handler = &tunnel_hello_handler;
	conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
	conn_read_upstream(c);
}

/* The CONNECT's tunnel carries plain HTTP: each request in it is decided
 * like a plain-HTTP request through the proxy, with its Host held to the
 * host the CONNECT named (or a front end shared by many sites would serve
 * whichever the Host says). The CONNECT itself is audited now; the
 * upstream it opened is closed, and each request gets its own, as plain
 * HTTP does. */
static void tunnel_to_http(struct conn *c)
{
	uv_read_stop((uv_stream_t *)&c->client);
	uv_timer_stop(&c->timer);
	snprintf(c->pin_host, sizeof(c->pin_host), "%s", c->dec.host);
	c->pin_port = c->port;
	c->pinned = true;
	conn_set_way_in(c, CONN_HTTP); /* its requests are read as the proxy's */
	conn_set_state(c, ST_DONE); /* audited; nothing runs until the upstream is closed */
	c->n_exchanges++;
	c->is_connect = false;
	c->inspect = false;
	/* What was peeked is the first request's head (or its start). */
	free(c->pipelined);
	c->pipelined = c->buf;
	c->pipelined_len = c->len;
	c->buf = NULL;
	c->len = 0;
	conn_next_after_upstream(c);
}

/* Refuse what the client sent first through the tunnel, and why. */
static void peek_refuse(struct conn *c, const char *reason)
{
	c->inspect = false;
	c->refused = true;
	c->reason = reason;
	conn_close(c);
}

/* Check what the client sent first through the tunnel. A TLS ClientHello
 * whose SNI names another host is domain fronting: the CONNECT said one
 * host, the TLS session asks the (shared) front end for another; one with
 * no SNI leaves the front end to pick by the Host inside, so it is refused
 * unless TLS is ended here (then that Host is decided). An Encrypted
 * ClientHello is checked by its outer SNI, the only name we can see: the
 * sandbox's DNS hands out no ECH configurations, so a real inner hello
 * can only come from keys the agent brought (docs/gateway.md). Plain HTTP
 * is decided request by request; anything else is refused, unless the
 * rule says the port carries another protocol (then it never got here). */
static void peek_check(struct conn *c)
{
	struct sl_tls_hello h;
	size_t skip = 0;
	int r;

	if (c->tls_retried) {
		/* The second hello, maybe behind a ChangeCipherSpec record
		 * (RFC 8446 D.4) or the first flight's early data, which the
		 * server skips as we do, record by record. */
		r = sl_tls_skip_before_retry((const uint8_t *)c->buf, c->len, &skip);
		if (r == 0)
			r = sl_tls_parse_client_hello((const uint8_t *)c->buf + skip, c->len - skip,
						      &h);
		goto parsed;
	}
	switch (sl_first_flight(c->buf, c->len, &skip)) {
	case SL_FLIGHT_MORE:
		return; /* read on */
	case SL_FLIGHT_HTTP:
		if (skip) {
			memmove(c->buf, c->buf + skip, c->len - skip);
			c->len -= skip;
		}
		tunnel_to_http(c);
		return;
	case SL_FLIGHT_OTHER:
		uv_read_stop((uv_stream_t *)&c->client);
		peek_refuse(c, c->inspect ? "inspect-needs-tls" : "not-http");
		return;
	case SL_FLIGHT_TLS:
		skip = 0; /* the hello begins at the first byte */
		break;
	}
	r = sl_tls_parse_client_hello((const uint8_t *)c->buf, c->len, &h);
parsed:
	if (r == -EAGAIN) {
		if (c->len >= HELLO_MAX)
			peek_refuse(c, "bad-client-hello");
		return; /* read on */
	}
	uv_read_stop((uv_stream_t *)&c->client);
	if (r < 0) {
		/* It claimed to be TLS but is malformed. */
		peek_refuse(c, "bad-client-hello");
		return;
	}
	c->tls_seen = true;
	c->hello_len = skip + h.consumed;
	snprintf(c->sni, sizeof(c->sni), "%s", h.sni);
	if (h.sni[0]) {
		char norm[SL_HOST_BUF];
		enum sl_host_kind kind;

		if (sl_host_normalize(h.sni, strlen(h.sni), norm, &kind, NULL) < 0 ||
		    strcmp(norm, c->dec.host) != 0) {
			peek_refuse(c, "sni-mismatch");
			return;
		}
	} else if (!c->inspect) {
		peek_refuse(c, "no-sni");
		return;
	}
	if (c->inspect) {
		conn_hand_to(c, CONN_INSPECT);
		return;
	}
	/* A hello for the right host: it goes, then the server's answer. */
	hello_then_relay(c);
}

static void peek_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	if (nread <= 0) {
		free(buf->base);
		if (nread < 0)
			conn_close(c);
		return;
	}
	if (c->len + (size_t)nread > HELLO_MAX) {
		free(buf->base);
		peek_refuse(c, "bad-client-hello");
		return;
	}
	if (conn_buf_append(c, buf, (size_t)nread) < 0) {
		conn_close(c);
		return;
	}
	peek_check(c);
}

static void tunnel_connected(struct conn *c)
{
	struct sl_http_request r;
	int st = 0;
	const char *why = NULL;

	if (c->tunnel && c->captured) {
		/* What the client already sent (its hello, its banner) goes
		 * first, then the bytes flow. */
		hello_then_relay(c);
		return;
	}

	if (c->is_connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		uint8_t socks_ok[SL_SOCKS_REPLY_LEN];
		/* Anything the client sent after its CONNECT head already
		 * belongs to the tunnel. */
		size_t head_end;

		if (c->socks) {
			/* SOCKS5's success (socks.c took its request off). */
			sl_socks_reply(SL_SOCKS_SUCCEEDED, socks_ok);
			c->socks = CONN_SOCKS_ANSWERED;
		} else {
			(void)sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes,
						    &r, &st, &why);
			head_end = r.head_len;
			memmove(c->buf, c->buf + head_end, c->len - head_end);
			c->len -= head_end;
		}
		c->status = 200;
		if (conn_send_copy(c, true, c->socks ? (const char *)socks_ok : ok,
				   c->socks ? sizeof(socks_ok) : sizeof(ok) - 1, false) < 0) {
			conn_close(c);
			return;
		}
		if (c->dec.rule && c->dec.rule->opaque && !c->inspect) {
			/* protocol: tcp: any bytes, from either side first
			 * (ssh, a database), relayed opaque. */
			relay_with_peeked(c);
			return;
		}
		conn_set_state(c, ST_PEEK);
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
		if (c->len)
			peek_check(c);
		if (c->state == ST_PEEK)
			uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, peek_read);
		return;
	}
}

/* Captured, and not inspected: may the decided connection carry what the
 * client sent (or will send)? Refuses it (and returns false) if not. */
static bool capture_may_relay(struct conn *c)
{
	char why[SL_HOST_BUF + 200];
	const char *reason = "not-http";

	if (c->dec.rule && c->dec.rule->opaque)
		return true; /* protocol: tcp */
	if (c->tls_seen && c->sni[0])
		return true; /* a hello whose SNI was decided */
	if (c->tls_seen) {
		/* The front end would pick the site by the Host inside, which
		 * nobody decided. */
		reason = "no-sni";
		snprintf(why, sizeof(why),
			 "%s:%u: a TLS ClientHello without a server name is refused (it could "
			 "reach any site behind the address)",
			 c->dec.host, c->port);
	} else {
		snprintf(why, sizeof(why),
			 "%s:%u carries HTTP or TLS only: %s; a rule with 'protocol: tcp' for the "
			 "port relays other protocols",
			 c->dec.host, c->port,
			 c->len ? "this is neither" : "the client sent nothing (server-first)");
	}
	conn_respond_error(c, 403, reason, why);
	return false;
}

/* Allowed: a host whose rules need the requests inside is inspected (a
 * CONNECT first answered 200 and its ClientHello checked); a captured
 * connection relays only what may be relayed opaque. */
static bool tunnel_decided(struct conn *c)
{
	char why[SL_HOST_BUF + 256];

	if (!c->dec.inspect)
		return !c->captured || capture_may_relay(c);
	/* Method, path and credential rules need the requests inside the
	 * tunnel; passing it through opaque would skip them. */
	if (!c->gw->tls) {
		snprintf(why, sizeof(why),
			 "%s:%u needs TLS inspection (its rules name methods, paths or a "
			 "credential), which is not enabled here (sluice gateway needs "
			 "--ca-dir)",
			 c->dec.host, c->port);
		conn_respond_error(c, 403, "inspect-unavailable", why);
		return false;
	}
	c->inspect = true;
	if (c->is_connect) {
		/* 200, then the ClientHello is checked against the CONNECT's
		 * host before TLS is ended here. */
		tunnel_connected(c);
		return false;
	}
	if (!c->tls_seen) {
		c->inspect = false;
		snprintf(why, sizeof(why), "%s:%u is inspected, and this connection is not TLS",
			 c->dec.host, c->port);
		conn_respond_error(c, 403, "inspect-needs-tls", why);
		return false;
	}
	conn_hand_to(c, CONN_INSPECT);
	return false;
}

static void tunnel_close(struct conn *c)
{
	if (conn_spliced(c))
		conn_splice_close(c);
}

static void tunnel_free(struct conn *c)
{
	if (conn_spliced(c))
		conn_splice_free(c);
}

const struct conn_handler conn_tunnel_handler = {
	.name = "tunnel",
	.decided = tunnel_decided,
	.connected = tunnel_connected,
	.close = tunnel_close,
	.free = tunnel_free,
};

/* The same while the server's first record is read (hello_then_relay). */
static const struct conn_handler tunnel_hello_handler = {
	.name = "tunnel",
	.decided = tunnel_decided,
	.connected = tunnel_connected,
	.upstream_read = hello_upstream_read,
	.close = tunnel_close,
	.free = tunnel_free,
};
