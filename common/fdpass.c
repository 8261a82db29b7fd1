/* SPDX-License-Identifier: MIT */
/* One message with at most one fd (fdpass.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"
#include "macro.h"

static void drop(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

union fd_control {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

int sl_fd_send(int sock, const void *msg, size_t len, int fd)
{
	union fd_control u;
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negative_errno();
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/* Every fd in the control part, into *ret_fd when it is the only one;
 * false (all closed) when there are more. */
static bool take_fds(struct msghdr *mh, int *ret_fd)
{
	bool one = true;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*ret_fd < 0 && one) {
				*ret_fd = fd;
				continue;
			}
			one = false;
			close(fd);
		}
	}
	if (!one)
		drop(ret_fd);
	return one;
}

ssize_t sl_fd_recv(int sock, void *msg, size_t len, int *ret_fd)
{
	/* Room for more than one fd, so that extra ones arrive (and are
	 * closed) rather than being cut off unseen. */
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	bool one;

	*ret_fd = -1;
	n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN
										  : negative_errno();
	one = take_fds(&mh, ret_fd);
	if (n == 0 && *ret_fd < 0 && one)
		return 0;
	if ((size_t)n != len || !one || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
		drop(ret_fd);
		return -EPROTO;
	}
	return n;
}
