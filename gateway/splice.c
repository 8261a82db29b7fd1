/* SPDX-License-Identifier: MIT */
/*
 * An opaque tunnel relayed with splice(2) (splice.h says when, and how the
 * fds come to be ours). Each direction (client to upstream, upstream to
 * client) is one small machine:
 *
 *   fill: splice(in -> pipe), or read(in -> buffer) without a pipe
 *   drain: splice(pipe -> out), or write(buffer -> out)
 *   EOF from in, all drained: shutdown(out, SHUT_WR) (the half-close)
 *
 * A socket's poll handle waits for what its two directions need: readable
 * while the direction it feeds has nothing pending (and no EOF), writable
 * while the direction it is written by has bytes it could not take. So a
 * full socket stops the other side's reads (backpressure, the kernel's
 * windows do the rest), and nothing is polled that would fire for
 * nothing (no busy loop). Any error closes both sides (conn_close); the
 * idle timer is conn.c's, pushed back by every fill.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn-internal.h"
#include "macro.h"
#include "splice.h"

/* A pipe this size takes a few round trips' worth of a fast download per
 * splice; the kernel allots its pages only as bytes come in. */
#define PIPE_BYTES (256 * 1024)
/* Without a pipe: the copy's buffer, malloc'd for the chunk only. */
#define COPY_BYTES 65536
/* Chunks one direction moves per wake-up before the loop serves others
 * (the poll is level-triggered: what is left wakes it again). */
#define ROUNDS 4

struct splice_pipe {
	int r, w;
	int size;
	struct splice_pipe *next;
};

/* The gateway's pipes (gw->splice_pool), all made at start: a confined
 * gateway cannot make one (pipe2 is not in its filter). */
struct sl_splice_pool {
	struct splice_pipe *idle;
	unsigned n_open;
};

enum { SIDE_CLIENT, SIDE_UPSTREAM };
enum { UP, DOWN }; /* client -> upstream, upstream -> client */

struct splice_dir {
	int in, out;		 /* SIDE_* */
	struct splice_pipe *pipe; /* while bytes are in it */
	char *copy;		 /* the copy's buffer, while bytes are in it */
	size_t off, pending;	 /* copy: where they start; both: how many */
	bool eof;		 /* in said EOF */
	bool shut;		 /* out shut for writing: this direction is over */
	bool no_splice;		 /* splice refused these fds: copy from now on */
	uint64_t *bytes;	 /* c->bytes_up or bytes_down, as delivered */
};

struct conn_splice {
	struct conn *c;
	uv_poll_t poll[2];
	int fd[2];
	int events[2]; /* what each poll handle waits for now */
	bool closing;
	struct splice_dir dir[2];
};

/* ---- the pool ---- */

int sl_gw_splice_init(struct sl_gw *gw)
{
	struct sl_splice_pool *pool = calloc(1, sizeof(*pool));
	int fds[2];

	if (!pool)
		return -ENOMEM;
	while (pool->n_open < SL_SPLICE_PIPES_MAX) {
		struct splice_pipe *p = malloc(sizeof(*p));

		if (!p || pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
			free(p);
			break; /* fewer pipes: the rest of the tunnels copy */
		}
		p->r = fds[0];
		p->w = fds[1];
		/* Larger than the default 64 KiB where the user's pipe
		 * budget allows (fs.pipe-user-pages-soft); the kernel allots
		 * the pages only as bytes come in. */
		(void)fcntl(p->w, F_SETPIPE_SZ, PIPE_BYTES);
		p->size = fcntl(p->w, F_GETPIPE_SZ);
		if (p->size <= 0)
			p->size = 65536;
		p->next = pool->idle;
		pool->idle = p;
		pool->n_open++;
	}
	gw->splice_pool = pool;
	return 0;
}

void sl_gw_splice_free(struct sl_gw *gw)
{
	struct sl_splice_pool *pool = gw->splice_pool;

	while (pool && pool->idle) {
		struct splice_pipe *p = pool->idle;

		pool->idle = p->next;
		close(p->r);
		close(p->w);
		free(p);
	}
	free(pool);
	gw->splice_pool = NULL;
}

static struct splice_pipe *pipe_get(struct sl_splice_pool *pool)
{
	struct splice_pipe *p = pool->idle;

	if (p)
		pool->idle = p->next;
	return p;
}

/* Back to the pool, empty: the bytes a closed tunnel left in it are read
 * out and dropped, and the kernel is asked that none is left, so that no
 * byte of one tunnel can reach another. A pipe that cannot be shown empty
 * is closed instead (one fewer in the pool). */
static void pipe_put(struct sl_splice_pool *pool, struct splice_pipe *p, bool empty)
{
	char scrap[4096];
	int left = 0;

	while (!empty && read(p->r, scrap, sizeof(scrap)) > 0)
		;
	if (ioctl(p->r, FIONREAD, &left) < 0 || left != 0) {
		close(p->r);
		close(p->w);
		free(p);
		pool->n_open--;
		return;
	}
	p->next = pool->idle;
	pool->idle = p;
}

/* ---- one direction ---- */

static void dir_settle(struct conn_splice *sp, struct splice_dir *d)
{
	if (d->pending)
		return;
	if (d->pipe) {
		pipe_put(sp->c->gw->splice_pool, d->pipe, true);
		d->pipe = NULL;
	}
	free(d->copy);
	d->copy = NULL;
	d->off = 0;
}

/* Move what is pending to out: 0 all of it, -EAGAIN out is full, or an
 * error. */
static int dir_drain(struct conn_splice *sp, struct splice_dir *d)
{
	int out = sp->fd[d->out];
	ssize_t n;

	while (d->pending) {
		if (d->pipe)
			n = splice(d->pipe->r, NULL, out, NULL, d->pending,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		else
			n = write(out, d->copy + d->off, d->pending);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && d->pipe && (errno == EINVAL || errno == ENOSYS)) {
			/* The socket takes no splice: what the pipe holds
			 * goes on by copy, and so does the rest. */
			d->no_splice = true;
			d->off = 0;
			d->copy = malloc(d->pending);
			if (!d->copy || read(d->pipe->r, d->copy, d->pending) != (ssize_t)d->pending)
				return -EIO;
			pipe_put(sp->c->gw->splice_pool, d->pipe, true);
			d->pipe = NULL;
			continue;
		}
		if (n < 0)
			return errno == EAGAIN ? -EAGAIN : -errno;
		d->pending -= (size_t)n;
		d->off += (size_t)n;
		*d->bytes += (uint64_t)n;
	}
	dir_settle(sp, d);
	return 0;
}

/* Take what in has into a pipe (or a buffer): the bytes taken, 0 at EOF,
 * -EAGAIN for none, or an error. *ret_short: fewer than asked for (in is
 * likely empty now). */
static ssize_t dir_fill(struct conn_splice *sp, struct splice_dir *d, bool *ret_short)
{
	int in = sp->fd[d->in];
	size_t want;
	ssize_t n;

	if (!d->no_splice && !d->pipe)
		d->pipe = pipe_get(sp->c->gw->splice_pool);
	if (!d->pipe && !d->copy) {
		d->copy = malloc(COPY_BYTES);
		if (!d->copy)
			return -ENOMEM;
	}
	for (;;) {
		want = d->pipe ? (size_t)d->pipe->size : COPY_BYTES;
		if (d->pipe)
			n = splice(in, NULL, d->pipe->w, NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		else
			n = read(in, d->copy, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && d->pipe && (errno == EINVAL || errno == ENOSYS)) {
			d->no_splice = true; /* nothing moved: copy instead */
			pipe_put(sp->c->gw->splice_pool, d->pipe, true);
			d->pipe = NULL;
			return dir_fill(sp, d, ret_short);
		}
		break;
	}
	if (n <= 0) {
		int err = n < 0 ? errno : 0; /* before the pipe goes back */

		dir_settle(sp, d);
		return err ? -err : 0;
	}
	d->off = 0;
	d->pending = (size_t)n;
	*ret_short = (size_t)n < want;
	return n;
}

/* Everything this direction can do now, up to ROUNDS chunks; fill only
 * when in may have bytes (it was readable, or a drain made room). 0, or
 * an error (the caller closes). */
static int dir_run(struct conn_splice *sp, struct splice_dir *d, bool readable)
{
	struct conn *c = sp->c;
	bool short_read = false;
	ssize_t n;
	int r;

	for (int round = 0; round < ROUNDS && !d->shut; round++) {
		if (d->pending) {
			r = dir_drain(sp, d);
			if (r == -EAGAIN)
				return 0; /* out is full: wait until it is writable */
			if (r < 0)
				return r;
		}
		if (d->eof) {
			/* All delivered: pass the half-close on. */
			if (shutdown(sp->fd[d->out], SHUT_WR) < 0 && errno != ENOTCONN)
				return -errno;
			d->shut = true;
			break;
		}
		if (!readable || short_read)
			break;
		n = dir_fill(sp, d, &short_read);
		if (n == -EAGAIN)
			break;
		if (n < 0)
			return (int)n;
		if (n == 0) {
			d->eof = true;
			if (d->in == SIDE_CLIENT)
				c->client_eof = true;
			else
				c->upstream_eof = true;
			round--; /* the half-close is this round's */
			continue;
		}
		uv_timer_again(&c->timer);
	}
	return 0;
}

/* ---- the poll handles ---- */

static void poll_cb(uv_poll_t *h, int status, int events);

/* Wait on each socket for what its directions need now; only a change
 * touches the poll (uv_poll_start re-registers the fd). */
static int update_polls(struct conn_splice *sp)
{
	for (int s = 0; s < 2; s++) {
		const struct splice_dir *feeds = &sp->dir[s == SIDE_CLIENT ? UP : DOWN];
		const struct splice_dir *fed = &sp->dir[s == SIDE_CLIENT ? DOWN : UP];
		int ev = 0, r;

		if (!feeds->eof && !feeds->pending)
			ev |= UV_READABLE;
		if (fed->pending && !fed->shut)
			ev |= UV_WRITABLE;
		if (ev == sp->events[s])
			continue;
		r = ev ? uv_poll_start(&sp->poll[s], ev, poll_cb) : uv_poll_stop(&sp->poll[s]);
		if (r < 0)
			return r;
		sp->events[s] = ev;
	}
	return 0;
}

/* Run the directions side's events concern (side < 0: both, only to
 * drain what they hold), then either close (an error, or both over) or
 * wait for what they need. A direction whose out became writable may fill
 * again: in is likely to have more by then. */
static void step(struct conn_splice *sp, int side, int events)
{
	struct conn *c = sp->c;
	int r = 0;

	for (int i = UP; i <= DOWN && r == 0; i++) {
		struct splice_dir *d = &sp->dir[i];
		bool may_fill = side >= 0 && ((d->in == side && (events & UV_READABLE)) ||
					      (d->out == side && (events & UV_WRITABLE)));

		if (side < 0 || may_fill)
			r = dir_run(sp, d, may_fill);
	}
	if (r == 0 && sp->dir[UP].shut && sp->dir[DOWN].shut)
		r = 1; /* both directions over: done */
	if (r == 0)
		r = update_polls(sp);
	if (r != 0)
		conn_close(c);
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct conn_splice *sp = h->data;

	if (sp->closing)
		return;
	if (status < 0) {
		/* POLLERR: a reset, a failed socket. Both sides close. */
		conn_close(sp->c);
		return;
	}
	step(sp, h == &sp->poll[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_UPSTREAM, events);
}

/* ---- start and end ---- */

static void client_tcp_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->open_handles == 0)
		conn_last_handle_closed(c);
}

static void poll_closed(uv_handle_t *h)
{
	struct conn_splice *sp = h->data;
	struct conn *c = sp->c;
	int s = h == (uv_handle_t *)&sp->poll[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_UPSTREAM;

	close(sp->fd[s]);
	sp->fd[s] = -1;
	if (--c->open_handles == 0)
		conn_last_handle_closed(c); /* frees sp (conn_splice_free) */
}

/* A poll handle that never served a connection (the start failed half
 * way): its fd and, with the last, the struct go. */
static void unused_poll_closed(uv_handle_t *h)
{
	struct conn_splice *sp = h->data;

	close(sp->fd[h == (uv_handle_t *)&sp->poll[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_UPSTREAM]);
	free(sp);
}

/* Our own copies of the two sockets, each with its poll handle: 0, or a
 * negative errno with sp freed (or left to a close callback to free). */
static int take_fds(struct conn *c, struct conn_splice *sp)
{
	uv_handle_t *h[2] = { (uv_handle_t *)&c->client, (uv_handle_t *)conn_upstream(c) };
	uv_os_fd_t ofd;
	int r, s;

	for (s = 0; s < 2; s++) {
		r = uv_fileno(h[s], &ofd);
		if (r == 0) {
			sp->fd[s] = fcntl(ofd, F_DUPFD_CLOEXEC, 3);
			r = sp->fd[s] < 0 ? -errno : 0;
		}
		if (r < 0) {
			if (s)
				close(sp->fd[0]);
			free(sp);
			return r;
		}
	}
	for (s = 0; s < 2; s++) {
		r = uv_poll_init_socket(c->gw->loop, &sp->poll[s], sp->fd[s]);
		if (r < 0)
			break;
		sp->poll[s].data = sp;
	}
	if (s == 2)
		return 0;
	close(sp->fd[1]);
	if (s == 1)
		uv_close((uv_handle_t *)&sp->poll[0], unused_poll_closed); /* frees sp */
	else {
		close(sp->fd[0]);
		free(sp);
	}
	return r;
}

int conn_splice_start(struct conn *c)
{
	struct conn_splice *sp;
	int r;

	/* Closing a uv_tcp_t drops what it has queued: the 200, the peeked
	 * bytes, were they still being written. */
	if (!c->upstream_open || uv_stream_get_write_queue_size((uv_stream_t *)&c->client) ||
	    uv_stream_get_write_queue_size(conn_upstream(c)))
		return -EBUSY;
	if (!c->gw->splice_pool || !c->gw->splice_pool->n_open)
		return -ENOTSUP; /* no pipe was made at start */
	sp = calloc(1, sizeof(*sp));
	r = sp ? take_fds(c, sp) : -ENOMEM;
	if (r < 0)
		return r;
	/* From here on c is ours. libuv's handles go; ours count instead. */
	sp->c = c;
	c->splice = sp;
	c->open_handles += 2;
	uv_close((uv_handle_t *)&c->client, client_tcp_closed);
	conn_drop_upstream(c); /* never pooled: a tunnel's upstream is its own */
	sp->dir[UP] = (struct splice_dir){ .in = SIDE_CLIENT, .out = SIDE_UPSTREAM,
					   .bytes = &c->bytes_up };
	sp->dir[DOWN] = (struct splice_dir){ .in = SIDE_UPSTREAM, .out = SIDE_CLIENT,
					     .bytes = &c->bytes_down };
	/* What was read to decide goes upstream first. */
	if (c->len) {
		sp->dir[UP].copy = c->buf;
		sp->dir[UP].pending = c->len;
	} else {
		free(c->buf);
	}
	c->buf = NULL;
	c->len = 0;
	conn_set_state(c, ST_RELAY);
	c->state_was_relay = true;
	conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	uv_timer_set_repeat(&c->timer, c->gw->cfg.idle_timeout_ms);
	/* The peeked bytes go now; bytes already waiting on either socket
	 * make its poll fire at once. */
	step(sp, -1, 0);
	return 0;
}

bool conn_spliced(const struct conn *c)
{
	return c->splice != NULL;
}

void conn_splice_close(struct conn *c)
{
	struct conn_splice *sp = c->splice;

	if (!sp || sp->closing)
		return;
	sp->closing = true;
	for (int i = UP; i <= DOWN; i++) {
		struct splice_dir *d = &sp->dir[i];

		if (d->pipe)
			pipe_put(c->gw->splice_pool, d->pipe, d->pending == 0);
		d->pipe = NULL;
		free(d->copy);
		d->copy = NULL;
	}
	for (int s = 0; s < 2; s++)
		uv_close((uv_handle_t *)&sp->poll[s], poll_closed);
}

void conn_splice_free(struct conn *c)
{
	free(c->splice);
	c->splice = NULL;
}
