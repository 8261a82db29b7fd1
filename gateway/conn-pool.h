/* SPDX-License-Identifier: MIT */
/*
 * Upstream TCP connections of the proxy's plain HTTP, and the pool that
 * keeps them alive between exchanges (conn-pool.c). A connection belongs
 * to one proxy connection (struct conn) while an exchange uses it; when
 * the origin's response ended cleanly it goes to the pool, and a later
 * exchange decided for the same host, port and address (from any client
 * connection) takes it instead of connecting. Below conn.c: it calls
 * nothing of the connection's. Not the gateway's API.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "policy.h"

struct sl_gw;
struct conn;

struct conn_up {
	uv_tcp_t tcp; /* .data: the owner while it has one */
	struct sl_gw *gw;
	struct conn *c; /* the owner; NULL in the pool, or closing on its own */
	struct conn_up *prev, *next; /* in gw->pool */
	bool pooled;
	bool reused; /* taken from the pool for the exchange under way */
	/* What it was connected for: reused only for exactly this. */
	uint64_t gen; /* gw->pool_gen then: a reload flushes the pool */
	uint16_t port;
	struct sockaddr_storage addr;
	char host[SL_HOST_BUF];
	uint64_t idle_since_ms; /* uv_now() when pooled */
};

/* A new upstream handle for c (uv_tcp_init'd, tcp.data = c), counted in
 * gw->n_ups until its close callback frees it; NULL on failure. */
struct conn_up *conn_up_new(struct sl_gw *gw, struct conn *c);
/* Free up from its close callback (the caller has settled its owner). */
void conn_up_free(struct conn_up *up);

/* An idle connection for host, port and address sa, now c's (tcp.data =
 * c, reading stopped, reused set), or NULL: connect a new one. */
struct conn_up *conn_pool_take(struct sl_gw *gw, struct conn *c, const char *host,
			       uint16_t port, const struct sockaddr *sa);
/* The exchange on up ended cleanly (nothing unread, nothing unwritten,
 * the origin keeps it open) and up is reading (conn.c's read callbacks
 * call conn_pool_read for it from now on): into the pool, no owner. false
 * when the pool will not have it (full for its host, or shut down): the
 * caller closes it as it would have. */
bool conn_pool_put(struct conn_up *up);
/* An upstream's reads while it is pooled: nothing is expected, so
 * whatever comes (an origin talking out of turn, its end) closes it. */
void conn_pool_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void conn_pool_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
/* Close every idle connection (a reload: they were chosen under the old
 * policy; shutdown). */
void conn_pool_flush(struct sl_gw *gw);
/* The pool's idle timer, and whether anything of the pool is allocated. */
void conn_pool_init(struct sl_gw *gw);
void conn_pool_close(struct sl_gw *gw);
bool conn_pool_busy(const struct sl_gw *gw);
