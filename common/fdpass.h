/* SPDX-License-Identifier: MIT */
/*
 * One message with at most one file descriptor, over a Unix socket
 * (fdpass.c): the supervisor and its gateway process, the gateway and its
 * reader. Every peer is treated as hostile: what it attaches beyond the one
 * fd expected is closed, never kept.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Send len bytes as one message, with fd attached when fd >= 0, never
 * blocking and never raising SIGPIPE. 0, or a negative errno (-EMSGSIZE
 * when not all of it went). */
int sl_fd_send(int sock, const void *msg, size_t len, int fd);

/*
 * Receive one message into msg (len bytes) and the fd that came with it
 * (CLOEXEC) into *ret_fd, or -1 when none did. Never blocks. len (the
 * message), 0 at the end of the stream, -EAGAIN when nothing is there yet,
 * another negative errno, or -EPROTO for a message of another size, a cut
 * control part, or more than one fd: whatever came with it is closed then.
 */
ssize_t sl_fd_recv(int sock, void *msg, size_t len, int *ret_fd);
