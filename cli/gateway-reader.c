/* SPDX-License-Identifier: MIT */
/* The policy and audit log reader of a confined gateway (gateway-reader.h). */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"
#include "fdpass.h"
#include "control-sock.h"
#include "gateway-reader.h"
#include "macro.h"
#include "netns.h"
#include "safe-file.h"

struct answer {
	char what;
	int32_t error; /* 0: an fd comes with it */
};

static int send_answer(int sock, char what, int fd, int error)
{
	struct answer a = { .what = what, .error = error };

	/* Never SIGPIPE: a gateway gone in between must not kill us before
	 * the uid is released. */
	return sl_fd_send(sock, &a, sizeof(a), fd);
}

/* One file, opened as at start: the policy with the trust checks of
 * policy-file.c (root trusts root; an unprivileged sluice its own user),
 * the audit log as audit.c opens it. */
static int open_one(const char *prog, char what, const char *policy_path, const char *audit_path,
		    bool audit_was_link)
{
	char err[1024];
	int fd = -1, r;

	if (what == SL_READER_POLICY) {
		r = sl_safe_file_open(policy_path, geteuid(), NULL, 0, &fd, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return r;
		}
		return fd;
	}
	if (what == SL_READER_AUDIT && audit_path) {
		fd = sl_audit_open_again(audit_path, audit_was_link);
		if (fd < 0)
			fprintf(stderr, "%s: --audit '%s': not reopened (the records go on to the file "
				"open until now): %s\n",
				prog, audit_path,
				fd == -EPERM ? "it is a file of another user's, made since the start"
				: fd == -ELOOP ? "it is a symbolic link now, and was none at the start"
					       : strerror(-fd));
		return fd;
	}
	return -EINVAL;
}

/* Every fd but stdio, the socket and the lock: nothing of the gateway's
 * (its listeners, its epoll) stays open here. */
static void close_others(int keep_a, int keep_b)
{
	int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;

	if (lo < 3)
		lo = hi; /* one of them is -1 */
	if (lo > 3)
		close_range(3, lo - 1, 0);
	if (hi > lo + 1)
		close_range(lo + 1, hi - 1, 0);
	close_range(hi + 1, ~0u, 0);
}

/* The gateway (our parent) has exited: its socket's end closing is not
 * enough, a gateway taken over could close it and live on as the uid. */
static bool gateway_gone(int pidfd, pid_t gateway)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	if (getppid() != gateway)
		return true;
	return pidfd >= 0 && poll(&p, 1, 2000) == 1 && (p.revents & POLLIN);
}

__attribute__((noreturn)) static void reader_main(int sock, const char *prog,
						   const char *policy_path, const char *audit_path,
						   uid_t release_uid, int lock_fd, pid_t gateway)
{
	bool was_link;
	int pidfd;

	close_others(sock, lock_fd);
	pidfd = (int)syscall(SYS_pidfd_open, gateway, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	if (audit_path && !strcmp(audit_path, "-"))
		audit_path = NULL;
	/* What the path was at the start (the gateway opened it a moment
	 * ago): only then may a reopen follow a link there. */
	was_link = audit_path && sl_audit_path_is_link(audit_path);
	for (;;) {
		char what;
		ssize_t n = recv(sock, &what, 1, 0);
		int fd;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the gateway is gone */
		fd = open_one(prog, what, policy_path, audit_path, was_link);
		if (send_answer(sock, what, fd, fd < 0 ? -fd : 0) < 0) {
			if (fd >= 0)
				close(fd);
			break;
		}
		if (fd >= 0)
			close(fd);
	}
	/* The gateway served the control socket; chrooted, it cannot
	 * remove it: this process, which outlives it, does. */
	sl_cli_ctl_remove();
	/* Released clean only once no process of the uid is left; else the
	 * lock file stays, and the uid's next holder walks /proc for it. */
	if (release_uid != (uid_t)-1 && gateway_gone(pidfd, gateway))
		sl_netns_user_release(NULL, release_uid, lock_fd);
	_exit(0);
}

int sl_gw_reader_start(struct sl_gw_reader *r, const char *prog, const char *policy_path,
		       const char *audit_path, uid_t release_uid, int lock_fd, char *err,
		       size_t errlen)
{
	const pid_t gateway = getpid();
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "a socket for the policy reader: %s", strerror(errno));
		return -errno;
	}
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		snprintf(err, errlen, "forking the policy reader: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		reader_main(sv[1], prog, policy_path, audit_path, release_uid, lock_fd, gateway);
	}
	close(sv[1]);
	r->pid = pid;
	r->fd = sv[0];
	return 0;
}

int sl_gw_reader_ask(struct sl_gw_reader *r, enum sl_reader_what what)
{
	char c = (char)what;

	if (r->fd < 0)
		return -EPIPE;
	return send(r->fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1 ? 0 : -errno;
}

int sl_gw_reader_answer(struct sl_gw_reader *r, enum sl_reader_what *ret_what)
{
	struct answer a;
	int fd = -1;
	ssize_t n;

	if (r->fd < 0)
		return -EPIPE;
	n = sl_fd_recv(r->fd, &a, sizeof(a), &fd);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return (int)n;
	if ((a.error == 0) != (fd >= 0)) {
		sl_closep(&fd);
		return -EPROTO;
	}
	*ret_what = (enum sl_reader_what)a.what;
	return a.error ? -a.error : fd;
}

void sl_gw_reader_stop(struct sl_gw_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
