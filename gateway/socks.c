/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5 on the explicit proxy's port (docs/gateway.md, "SOCKS5"): a
 * connection whose first byte is 0x05 (no HTTP request begins so) is
 * handed here by conn-http.c. The greeting is answered (no
 * authentication, or none acceptable), the request parsed
 * (socks-wire.c), and a CONNECT goes on exactly as `CONNECT host:port`
 * does: the tunnel handler decides it with the same policy, resolver,
 * address checks and first-flight checks; only the answers are SOCKS5's
 * (the success reply in conn-tunnel.c, refusals in conn_respond_error).
 * Everything arrives under the head's deadline, armed at the accept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "socks-wire.h"

/* Drop the n bytes parsed from the front of c->buf: what follows is the
 * next message's (the request, or the tunnel's first flight). */
static void consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Answer with `bytes` and close: a refusal the policy was never asked. */
static void refuse(struct conn *c, const uint8_t *bytes, size_t n, const char *reason)
{
	c->refused = true;
	c->reason = reason;
	conn_set_state(c, ST_RESPONDING);
	uv_read_stop((uv_stream_t *)&c->client);
	uv_timer_stop(&c->timer);
	if (conn_send_copy(c, true, (const char *)bytes, n, true) < 0)
		conn_close(c);
}

static void refuse_request(struct conn *c, enum sl_socks_reply rep, const char *reason)
{
	uint8_t out[SL_SOCKS_REPLY_LEN];

	sl_socks_reply(rep, out);
	refuse(c, out, sizeof(out), reason);
}

/* The greeting: true once it is answered with method 0x00. */
static bool greeting(struct conn *c)
{
	static const uint8_t none[] = {SL_SOCKS_VERSION, SL_SOCKS_METHOD_NONE};
	static const uint8_t ok[] = {SL_SOCKS_VERSION, SL_SOCKS_METHOD_NO_AUTH};
	bool no_auth;
	int k = sl_socks_parse_greeting((const uint8_t *)c->buf, c->len, &no_auth);

	if (k == 0)
		return false;
	if (k < 0) {
		c->refused = true;
		c->reason = "socks-bad-greeting";
		conn_close(c);
		return false;
	}
	consume(c, (size_t)k);
	if (!no_auth) {
		/* Only no-auth is served: the sandbox has nothing to prove,
		 * its peer address was checked at the accept. */
		refuse(c, none, sizeof(none), "socks-no-method");
		return false;
	}
	if (conn_send_copy(c, true, (const char *)ok, sizeof(ok), false) < 0) {
		conn_close(c);
		return false;
	}
	c->socks = CONN_SOCKS_REQUEST;
	return true;
}

static void request(struct conn *c)
{
	struct sl_socks_request q;
	enum sl_socks_reply rep;
	int k = sl_socks_parse_request((const uint8_t *)c->buf, c->len, &q, &rep);

	if (k == 0)
		return;
	uv_read_stop((uv_stream_t *)&c->client);
	uv_timer_stop(&c->timer);
	if (k < 0) {
		/* Audited without method, host or port: none was asked for
		 * that could be decided; the reason says what was wrong. */
		refuse_request(c, rep,
			       rep == SL_SOCKS_CMD_UNSUPPORTED	   ? "socks-command-not-supported"
			       : rep == SL_SOCKS_ATYP_UNSUPPORTED ? "socks-address-type"
								  : "socks-bad-request");
		return;
	}
	c->parsed = true;
	snprintf(c->method, sizeof(c->method), "CONNECT");
	/* What follows the request is the tunnel's first flight: kept in
	 * c->buf, checked there as a CONNECT's is. */
	consume(c, (size_t)k);
	c->port = q.port;
	c->is_connect = true;
	conn_use(c, CONN_TUNNEL);
	conn_decide_and_go(c, q.host, q.host_len, NULL, 0);
}

static void socks_head(struct conn *c)
{
	if (c->socks == CONN_SOCKS_GREETING && !greeting(c))
		return;
	if (c->len)
		request(c);
}

/* Handed over by conn-http.c with the first bytes in c->buf. */
static void socks_start(struct conn *c)
{
	c->socks = CONN_SOCKS_GREETING;
	c->tunnel = true; /* audited as event "connect", whatever comes */
	socks_head(c);
}

const struct conn_handler conn_socks_handler = {
	.name = "socks",
	.start = socks_start,
	.head = socks_head,
};
