/* SPDX-License-Identifier: MIT */
/*
 * The releaser: a child of `sluice run` that takes the waiting out of the
 * teardown (netns.h).
 *
 * Some releases make whoever asks for them wait in the kernel for an RCU
 * grace period (tens of milliseconds on a busy machine), though what they
 * release has stopped being visible before the wait begins:
 *  - deleting a device: it leaves the list of links (and RTM_DELLINK goes
 *    out) at once, then netdev_run_todo() waits in rcu_barrier();
 *  - closing an nftables socket: the namespace's pending destroy work (each
 *    commit leaves one, for a grace period) is flushed first, and an owned
 *    table is freed only after synchronize_rcu();
 *  - the last reference to a namespace: it goes a grace period after its
 *    last socket, since sockets are freed through RCU.
 * So the releaser holds a copy of those fds (the supervisor's own closes
 * are then only a reference dropped) and sends the deletion of the veth,
 * while the supervisor waits only for what can be seen: the link's
 * RTM_DELLINK, a table deleted in a commit of its own. When the supervisor
 * is gone (EOF on their socket, even after a SIGKILL) the releaser exits,
 * and its exit does the closing and the waiting, after sluice has
 * returned. It is forked before anything secret is in memory (no policy
 * secret, no CA key), holds nothing else, and has a session of its own, so
 * the terminal's signals meant for the command do not end it early (if
 * something does, the supervisor deletes the veth itself).
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netns.h"
#include "nl.h"
#include "util.h"

/* One message from the supervisor: a fd to hold (attached), or, with an
 * index, the link to delete (by index: if we are so late that the
 * supervisor deleted it itself and a new sandbox took its name, that one is
 * not touched), or with a uid, that uid to release once the supervisor is
 * gone (its lock attached). */
struct release_msg {
	int ifindex;  /* the link to delete; 0: none */
	uint32_t uid; /* 0: none */
};

/* The uids to release at the end: a run has two (the command's and its
 * gateway's). */
#define MAX_UIDS 4

/* The child: hold what comes, delete what is named, exit at EOF. */
static _Noreturn void releaser_main(int sock)
{
	extern char **environ;

	(void)prctl(PR_SET_NAME, "sluice-release", 0, 0, 0);
	(void)setsid();
	/* A secret a policy reads from sluice's environment is no business of
	 * ours: wiped from our copy, as the gateway wipes its own. */
	for (char **e = environ; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
	/* Nothing of the supervisor's but the socket, stdio included: a reader
	 * of sluice's output sees its end when sluice exits. */
	if (sock > 0 && close_range(0, (unsigned)sock - 1, 0) < 0)
		_exit(1);
	if (close_range((unsigned)sock + 1, ~0u, 0) < 0)
		_exit(1);
	struct {
		uid_t uid;
		int lock;
	} uids[MAX_UIDS];
	size_t n_uids = 0;

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct release_msg m = {0};
		struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
		struct msghdr mh = {
		    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
		struct sl_nl *nl = NULL;
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The supervisor is gone: what we hold goes now. */
			for (size_t i = 0; i < n_uids; i++)
				sl_netns_user_release(NULL, uids[i].uid, uids[i].lock);
			_exit(0);
		}
		/* An attached fd is simply kept: it is closed when we exit. */
		if (m.uid && n_uids < MAX_UIDS && (mh.msg_flags & MSG_CTRUNC) == 0) {
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

			if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
				memcpy(&uids[n_uids].lock, CMSG_DATA(c), sizeof(int));
				uids[n_uids++].uid = m.uid;
			}
		}
		if (m.ifindex > 0 && sl_nl_open(&nl, NULL, 0) == 0) {
			(void)sl_nl_link_del_index(nl, m.ifindex, NULL, 0);
			sl_nl_close(nl);
		}
	}
}

int sl_netns_releaser_start(struct sl_netns_releaser *r)
{
	int sv[2];
	pid_t pid;

	r->pid = -1;
	r->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return negative_errno();
	pid = fork();
	if (pid < 0) {
		int e = negative_errno();

		close(sv[0]);
		close(sv[1]);
		return e;
	}
	if (pid == 0) {
		close(sv[0]);
		releaser_main(sv[1]);
	}
	close(sv[1]);
	r->pid = pid;
	r->sock = sv[0];
	return 0;
}

static int send_msg(const struct sl_netns_releaser *r, const struct release_msg *m, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (!r || r->sock < 0)
		return -ESRCH;
	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(r->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negative_errno();
	return n == (ssize_t)sizeof(*m) ? 0 : -EMSGSIZE;
}

int sl_netns_releaser_hold(const struct sl_netns_releaser *r, int fd)
{
	struct release_msg m = {0};

	if (fd < 0)
		return -EBADF;
	return send_msg(r, &m, fd);
}

int sl_netns_releaser_user(const struct sl_netns_releaser *r, uid_t uid, int lock_fd)
{
	struct release_msg m = {.uid = uid};

	if (!uid || lock_fd < 0)
		return -EINVAL;
	return send_msg(r, &m, lock_fd);
}

int sl_netns_releaser_del_link(const struct sl_netns_releaser *r, int ifindex)
{
	struct release_msg m = {.ifindex = ifindex};

	if (ifindex <= 0)
		return -EINVAL;
	return send_msg(r, &m, -1);
}
