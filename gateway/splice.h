/* SPDX-License-Identifier: MIT */
/*
 * An opaque tunnel relayed with splice(2): the bytes go from one socket
 * into a pipe and from the pipe into the other socket, never through user
 * space. Only for a tunnel that is plain byte relay in both directions
 * from now on (conn-tunnel.c: a ClientHello decided by its SNI, a port a
 * rule says carries another protocol); never for plain HTTP in a tunnel,
 * whose requests are parsed, nor for an inspected connection.
 *
 * libuv owns the fds of its uv_tcp_t handles, so the tunnel takes copies
 * of them (fcntl F_DUPFD_CLOEXEC), closes the uv_tcp_t handles, and polls
 * its own fds with a uv_poll_t each (libuv's handle for fds it does not
 * own). The pipes are a pool per gateway, SL_SPLICE_PIPES_MAX made at
 * start, before the process is confined (its filter has no pipe2: a
 * gateway taken over cannot make pipes), each held by a direction only
 * while bytes are in it: an idle tunnel holds no pipe and no buffer. Where
 * no pipe is free or splice refuses the fds (EINVAL), the direction
 * copies through a buffer instead, held as briefly. Not part of the
 * gateway's API.
 */
#pragma once

#include <stdbool.h>

struct conn;
struct sl_gw;

/* The pipes a gateway makes at start: two descriptors each, out of the
 * reserve limits.c keeps beyond the connections'. A direction holds one
 * only while its bytes wait for a full socket: 16 are a busy gateway's
 * stalled downloads; past them a tunnel copies, as it did before. */
#define SL_SPLICE_PIPES_MAX 16

/* Make the pool (sl_gw_new, before confinement); fewer pipes where no
 * more can be made. -ENOMEM, or 0. */
int sl_gw_splice_init(struct sl_gw *gw);
/* Close them (the gateway is freed: no tunnel is left). */
void sl_gw_splice_free(struct sl_gw *gw);

/* Relay c (decided, connected, and now opaque both ways) by splice from
 * here on, starting with the bytes in c->buf, which it takes, and enter
 * RELAY with the idle timeout. 0: c is the splice relay's, and any error
 * from here on closes it. A negative errno: nothing changed (a write still
 * queued on a handle, no descriptor left): relay c by copy
 * (conn_start_relay). */
int conn_splice_start(struct conn *c);
/* c is spliced (conn_splice_start took it). */
bool conn_spliced(const struct conn *c);
/* conn_close() is under way: close the poll handles, give back the pipes. */
void conn_splice_close(struct conn *c);
/* conn_free() is. */
void conn_splice_free(struct conn *c);
