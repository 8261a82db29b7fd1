/* SPDX-License-Identifier: MIT */
/* One message with at most one fd: what a hostile peer attaches beyond it
 * is closed, and a message of another size is refused. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdpass.h"

struct msg {
	unsigned type;
	int value;
};

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Send a message with n fds attached, as a hostile peer may. */
static void send_fds(int sock, const void *msg, size_t len, const int *fds, size_t n)
{
	char buf[CMSG_SPACE(8 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	if (n) {
		mh.msg_control = buf;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)len);
}

static void test_round_trip(void **state)
{
	struct msg m = {.type = 7, .value = -3}, got;
	int sv[2], p[2], fd;

	(void)state;
	pair(sv);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), -EAGAIN);
	assert_int_equal(fd, -1);
	assert_int_equal(sl_fd_send(sv[0], &m, sizeof(m), p[1]), 0);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), sizeof(got));
	assert_int_equal(got.type, 7);
	assert_int_equal(got.value, -3);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(fd, "x", 1), 1); /* the pipe's write end */
	close(fd);
	/* Without an fd. */
	assert_int_equal(sl_fd_send(sv[0], &m, sizeof(m), -1), 0);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), sizeof(got));
	assert_int_equal(fd, -1);
	/* The end of the stream. */
	close(sv[0]);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), 0);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void test_extra_fds_closed(void **state)
{
	struct msg m = {0}, got;
	int sv[2], fds[3], fd, before;

	(void)state;
	pair(sv);
	for (int i = 0; i < 3; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	before = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(before); /* the lowest free number now */
	send_fds(sv[0], &m, sizeof(m), fds, 3);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), -EPROTO);
	assert_int_equal(fd, -1);
	/* None of the three copies stayed open in the receiver: the next
	 * open gets the same number as before. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(fd, before);
	assert_false(fd_open(before + 1));
	assert_false(fd_open(before + 2));
	close(fd);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
}

static void test_wrong_size(void **state)
{
	char small[3] = "ab", big[64] = {0};
	struct msg got;
	int sv[2], fd, null_fd, before;

	(void)state;
	pair(sv);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	before = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(before);
	send_fds(sv[0], small, sizeof(small), &null_fd, 1);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), -EPROTO);
	assert_int_equal(fd, -1);
	send_fds(sv[0], big, sizeof(big), &null_fd, 1);
	assert_int_equal(sl_fd_recv(sv[1], &got, sizeof(got), &fd), -EPROTO);
	assert_int_equal(fd, -1);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(fd, before);
	assert_false(fd_open(fd + 1));
	close(fd);
	close(null_fd);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_extra_fds_closed),
	    cmocka_unit_test(test_wrong_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
