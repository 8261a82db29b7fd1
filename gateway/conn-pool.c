/* SPDX-License-Identifier: MIT */
/*
 * The plain-HTTP upstream pool (conn-pool.h). What makes a connection
 * safe to hand to another exchange, perhaps another client's:
 * - it is reused only for the same decided host, port and address (a
 *   connection opened for one name never carries another name's request,
 *   even where both resolve alike), and only under the policy it was
 *   opened under (a reload flushes the pool);
 * - it enters the pool only when the response ended where its framing
 *   said, with nothing after it (conn-http.c checks), so that no byte of
 *   one exchange can be read as another's answer;
 * - in the pool it is read: any byte (an origin talking out of turn) or
 *   its end closes it;
 * - bounded: POOL_PER_HOST for one host and port, POOL_MAX in all, each
 *   idle at most POOL_IDLE_MS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn-pool.h"
#include "gateway-internal.h"
#include "macro.h"

#define POOL_MAX 64 /* limits.c's FD_RESERVE counts them */
#define POOL_PER_HOST 64
#define POOL_IDLE_MS 30000

struct conn_up *conn_up_new(struct sl_gw *gw, struct conn *c)
{
	struct conn_up *up = calloc(1, sizeof(*up));

	if (!up)
		return NULL;
	if (uv_tcp_init(gw->loop, &up->tcp) < 0) {
		free(up);
		return NULL;
	}
	up->gw = gw;
	up->c = c;
	up->tcp.data = c;
	gw->n_ups++;
	return up;
}

void conn_up_free(struct conn_up *up)
{
	struct sl_gw *gw = up->gw;

	gw->n_ups--;
	free(up);
	sl_gw_maybe_free(gw);
}

static void unlink_up(struct conn_up *up)
{
	struct sl_gw *gw = up->gw;

	if (!up->pooled)
		return;
	if (up->prev)
		up->prev->next = up->next;
	else
		gw->pool = up->next;
	if (up->next)
		up->next->prev = up->prev;
	up->prev = up->next = NULL;
	up->pooled = false;
	gw->n_pool--;
	if (!gw->pool && gw->pool_timer_open)
		uv_timer_stop(&gw->pool_timer);
}

static void pooled_closed(uv_handle_t *h)
{
	conn_up_free(container_of((uv_tcp_t *)h, struct conn_up, tcp));
}

static void close_pooled(struct conn_up *up)
{
	unlink_up(up);
	if (!uv_is_closing((uv_handle_t *)&up->tcp))
		uv_close((uv_handle_t *)&up->tcp, pooled_closed);
}

/* In the pool nothing is expected: whatever is read is dropped, with the
 * connection. */
void conn_pool_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char sink[64];

	(void)h;
	(void)suggested;
	buf->base = sink;
	buf->len = sizeof(sink);
}

void conn_pool_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	if (nread != 0)
		close_pooled(container_of((uv_tcp_t *)s, struct conn_up, tcp));
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			       &((const struct sockaddr_in *)b)->sin_addr, 4);
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* Nothing has come since the pool's last read: bytes that came in the
 * loop turn now running (the pool's read has not seen them yet) would be
 * read as the next exchange's answer. */
static bool still_quiet(struct conn_up *up)
{
	uv_os_fd_t fd;
	char b;

	if (uv_fileno((uv_handle_t *)&up->tcp, &fd) < 0)
		return false;
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	       (errno == EAGAIN || errno == EWOULDBLOCK);
}

struct conn_up *conn_pool_take(struct sl_gw *gw, struct conn *c, const char *host,
			       uint16_t port, const struct sockaddr *sa)
{
	uint64_t now = uv_now(gw->loop);
	struct conn_up *up, *next;

	for (up = gw->pool; up; up = next) {
		next = up->next;
		if (now - up->idle_since_ms >= POOL_IDLE_MS) {
			close_pooled(up);
			continue;
		}
		if (up->gen != gw->pool_gen || up->port != port || !same_addr(&up->addr, sa) ||
		    strcmp(up->host, host) != 0)
			continue;
		if (!still_quiet(up)) {
			close_pooled(up);
			continue;
		}
		unlink_up(up);
		up->c = c;
		up->tcp.data = c;
		up->reused = true;
		return up;
	}
	return NULL;
}

static void pool_timer_fired(uv_timer_t *t)
{
	struct sl_gw *gw = t->data;
	uint64_t now = uv_now(gw->loop);
	struct conn_up *up, *next;

	for (up = gw->pool; up; up = next) {
		next = up->next;
		if (now - up->idle_since_ms >= POOL_IDLE_MS)
			close_pooled(up);
	}
}

bool conn_pool_put(struct conn_up *up)
{
	struct sl_gw *gw = up->gw;
	struct conn_up *o, *oldest = NULL;
	unsigned same = 0;

	if (gw->shutting_down || up->gen != gw->pool_gen || !gw->pool_timer_open)
		return false;
	for (o = gw->pool; o; o = o->next)
		if (o->port == up->port && !strcmp(o->host, up->host))
			same++;
	if (same >= POOL_PER_HOST)
		return false;
	/* Full: the longest idle goes (the list is newest first). */
	if (gw->n_pool >= POOL_MAX) {
		for (o = gw->pool; o; o = o->next)
			oldest = o;
		close_pooled(oldest);
	}
	up->c = NULL;
	up->tcp.data = NULL;
	up->reused = false;
	up->idle_since_ms = uv_now(gw->loop);
	up->prev = NULL;
	up->next = gw->pool;
	if (gw->pool)
		gw->pool->prev = up;
	gw->pool = up;
	up->pooled = true;
	gw->n_pool++;
	if (!uv_is_active((uv_handle_t *)&gw->pool_timer))
		uv_timer_start(&gw->pool_timer, pool_timer_fired, POOL_IDLE_MS / 2,
			       POOL_IDLE_MS / 2);
	return true;
}

void conn_pool_flush(struct sl_gw *gw)
{
	gw->pool_gen++;
	while (gw->pool)
		close_pooled(gw->pool);
}

void conn_pool_init(struct sl_gw *gw)
{
	uv_timer_init(gw->loop, &gw->pool_timer);
	gw->pool_timer.data = gw;
	/* An idle pool does not keep the loop alive. */
	uv_unref((uv_handle_t *)&gw->pool_timer);
	gw->pool_timer_open = true;
}

static void pool_timer_closed(uv_handle_t *h)
{
	struct sl_gw *gw = h->data;

	gw->pool_timer_open = false;
	sl_gw_maybe_free(gw);
}

void conn_pool_close(struct sl_gw *gw)
{
	conn_pool_flush(gw);
	if (gw->pool_timer_open && !uv_is_closing((uv_handle_t *)&gw->pool_timer))
		uv_close((uv_handle_t *)&gw->pool_timer, pool_timer_closed);
}

bool conn_pool_busy(const struct sl_gw *gw)
{
	return gw->n_ups || gw->pool_timer_open;
}
