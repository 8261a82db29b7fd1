/* SPDX-License-Identifier: MIT */
/*
 * A proxy connection begins: accepted on the proxy's or the capture's
 * listener, its peer checked (only the sandbox is served), then handed to
 * its way in, and later, it may be, to another handler (conn_hand_to).
 * Above conn.c, which it calls; below gateway.c.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "conn-internal.h"

/* ---- accept ---- */

static struct conn *conn_new(struct sl_gw *gw, enum conn_way way)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->gw = gw;
	c->way_in = way;
	c->handler = gw->conn_ways[way];
	c->start_wall_ms = sl_audit_now_ms();
	c->start_loop_ms = uv_now(gw->loop);
	uv_tcp_init(gw->loop, &c->client);
	c->client.data = c;
	uv_timer_init(gw->loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 2;
	c->pol = sl_gw_policy_ref(gw->policy);
	c->next = gw->conns;
	if (gw->conns)
		gw->conns->prev = c;
	gw->conns = c;
	gw->n_conns++;
	return c;
}

/* The client's "ADDR:PORT" (IPv6 in brackets) into c->client_addr, and
 * its address into *peer (AF_UNSPEC when the kernel cannot say). */
static void peer_name(struct conn *c, struct sockaddr_storage *peer)
{
	int peer_len = sizeof(*peer);
	char ip[INET6_ADDRSTRLEN] = "?";

	peer->ss_family = AF_UNSPEC;
	if (uv_tcp_getpeername(&c->client, (struct sockaddr *)peer, &peer_len) != 0)
		return;
	if (peer->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)peer)->sin_addr, ip, sizeof(ip));
		snprintf(c->client_addr, sizeof(c->client_addr), "%s:%u", ip,
			 ntohs(((struct sockaddr_in *)peer)->sin_port));
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)peer)->sin6_addr, ip, sizeof(ip));
		snprintf(c->client_addr, sizeof(c->client_addr), "[%s]:%u", ip,
			 ntohs(((struct sockaddr_in6 *)peer)->sin6_port));
	}
}

void sl_gw_conn_accept(struct sl_gw *gw, uv_stream_t *server, bool captured)
{
	struct sockaddr_storage peer;
	struct conn *c = conn_new(gw, captured ? CONN_CAPTURE : CONN_HTTP);

	if (!c)
		return;
	if (uv_accept(server, (uv_stream_t *)&c->client) < 0) {
		c->refused = true;
		c->reason = "accept-failed";
		conn_close(c);
		return;
	}
	peer_name(c, &peer);
	/* Only the sandbox is served: another uid on the host, or a
	 * neighbour that routes the pool here, would have the operator's
	 * credentials injected for it. The host's rules drop such peers
	 * before they get here; this holds if those rules are gone. Closed
	 * without a word, audited (rate-limited) as one record. */
	if (!captured && !sl_gw_peer_allowed(gw, peer.ss_family == AF_UNSPEC
							 ? NULL
							 : (const struct sockaddr *)&peer)) {
		sl_gw_audit_refused_peer(gw, "connect", c->client_addr[0] ? c->client_addr : "?");
		conn_close_unaudited(c);
		return;
	}
	/* The audit log cannot be written: nothing new is decided. Closed at
	 * once, with no record (there is nowhere to write it). */
	if (!sl_gw_audit_ok(gw)) {
		conn_close_unaudited(c);
		return;
	}
	if (gw->n_conns > gw->cfg.max_connections) {
		conn_respond_error(c, 503, "too-many-connections",
				   "too many connections from this sandbox");
		return;
	}
	uv_tcp_nodelay(&c->client, 1);
	conn_set_state(c, ST_HEAD);
	c->handler->start(c);
}

void sl_gw_conn_close_all(struct sl_gw *gw)
{
	struct conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		conn_close(c);
	}
}

void sl_gw_conn_close_observed(struct sl_gw *gw)
{
	struct conn *c, *next;

	for (c = gw->conns; c; c = next) {
		next = c->next;
		if (c->decided && c->dec.verdict == SL_VERDICT_OBSERVE)
			conn_close(c);
	}
}

/* ---- handlers ---- */

void conn_use(struct conn *c, enum conn_way way)
{
	c->handler = c->gw->conn_ways[way];
}

void conn_hand_to(struct conn *c, enum conn_way way)
{
	conn_use(c, way);
	if (c->handler->start)
		c->handler->start(c);
	else
		conn_close(c); /* a handler that cannot be handed to: a bug, closed */
}

void conn_set_way_in(struct conn *c, enum conn_way way)
{
	c->way_in = way;
}
