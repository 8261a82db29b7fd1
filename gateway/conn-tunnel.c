/* SPDX-License-Identifier: MIT */
/*
 * Tunnels: a CONNECT answered 200, then the ClientHello it carries checked
 * against the host the CONNECT named (fronting), then bytes relayed opaque;
 * and captured connections that are not HTTP, relayed once decided.
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

/* What was read to decide (c->buf) goes upstream first, then the bytes
 * flow both ways. */
static void relay_with_peeked(struct conn *c)
{
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

/* Check what the client sent first through the tunnel. A TLS ClientHello
 * whose SNI names another host is domain fronting: the CONNECT said one
 * host, the TLS session asks the (shared) front end for another. */
static void peek_check(struct conn *c)
{
	struct sl_tls_hello h;
	int r = sl_tls_parse_client_hello((const uint8_t *)c->buf, c->len, &h);

	if (r == -EAGAIN) {
		if (c->len >= HELLO_MAX) {
			c->refused = true;
			c->reason = "bad-client-hello";
			conn_close(c);
		}
		return; /* read on */
	}
	uv_read_stop((uv_stream_t *)&c->client);
	if (r == 0) {
		if (h.ech) {
			/* The outer SNI of an Encrypted ClientHello is not the
			 * real destination: nothing here can be decided. */
			c->refused = true;
			c->reason = "ech";
			conn_close(c);
			return;
		}
		c->tls_seen = true;
		snprintf(c->sni, sizeof(c->sni), "%s", h.sni);
		if (h.sni[0]) {
			char norm[SL_HOST_BUF];
			enum sl_host_kind kind;

			if (sl_host_normalize(h.sni, strlen(h.sni), norm, &kind, NULL) < 0 ||
			    strcmp(norm, c->dec.host) != 0) {
				c->refused = true;
				c->reason = "sni-mismatch";
				conn_close(c);
				return;
			}
		}
	} else if (r != -EINVAL) {
		/* It claimed to be TLS but is malformed. */
		c->refused = true;
		c->reason = "bad-client-hello";
		conn_close(c);
		return;
	}
	if (c->inspect) {
		if (r != 0) {
			/* Inspected hosts are spoken to over TLS only. */
			c->inspect = false;
			c->refused = true;
			c->reason = "inspect-needs-tls";
			conn_close(c);
			return;
		}
		conn_inspect_start(c);
		return;
	}
	/* Not TLS at all (-EINVAL), or a hello for the right host: relay,
	 * starting with what we peeked. */
	relay_with_peeked(c);
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
		c->refused = true;
		c->reason = "bad-client-hello";
		conn_close(c);
		return;
	}
	if (conn_buf_append(c, buf, (size_t)nread) < 0) {
		conn_close(c);
		return;
	}
	peek_check(c);
}

void conn_tunnel_start(struct conn *c)
{
	struct sl_http_request r;
	int st = 0;
	const char *why = NULL;

	if (c->tunnel && c->captured) {
		/* What the client already sent (its hello, its banner) goes
		 * first, then the bytes flow. */
		relay_with_peeked(c);
		return;
	}

	if (c->is_connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		/* Anything the client sent after its CONNECT head already
		 * belongs to the tunnel. */
		size_t head_end;

		(void)sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &st,
					    &why);
		head_end = r.head_len;
		memmove(c->buf, c->buf + head_end, c->len - head_end);
		c->len -= head_end;
		c->status = 200;
		if (conn_send_copy(c, true, ok, sizeof(ok) - 1, false) < 0) {
			conn_close(c);
			return;
		}
		c->state = ST_PEEK;
		conn_arm_timer(c, c->gw->cfg.header_timeout_ms);
		if (c->len)
			peek_check(c);
		if (c->state == ST_PEEK)
			uv_read_start((uv_stream_t *)&c->client, conn_alloc_cb, peek_read);
		return;
	}
}
