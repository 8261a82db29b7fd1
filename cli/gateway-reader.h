/* SPDX-License-Identifier: MIT */
/*
 * The files a confined `sluice gateway` still needs after it has lost the
 * right to open any (confine.h): the policy, reread on SIGHUP, and the
 * audit log, reopened on SIGUSR1.
 *
 * Why a process of its own. Operators replace a policy as editors and
 * `mv` do: a new inode under the same name. An fd kept open on the old
 * file would go on rereading the old policy and say "reloaded": a silent
 * lie. A directory fd with openat() would need openat in the filter, and
 * openat reaches every file the gateway's uid can read. So the gateway
 * forks this reader before it loads anything secret (its memory holds no
 * key and no secret): it keeps sluice's original ids, opens the path by
 * name with the same trust checks as at start (policy-file.h,
 * safe-file.h), and hands the gateway the checked fd (SCM_RIGHTS), which
 * the gateway parses itself. The reader parses nothing; all the gateway
 * can ask it, over a socket only the two share, is one byte: "the policy"
 * or "the audit log", paths fixed before the gateway started serving.
 *
 * The reader ends when the gateway does (end of file on the socket, which
 * the kernel gives on any death of the gateway, SIGKILL included), and then
 * releases the gateway's allocated uid (netns.h), which needs root and so
 * cannot be done by the gateway itself. SIGINT and SIGTERM, which a
 * terminal or a service manager sends to the whole group, are ignored by
 * the reader: it outlives the gateway by that one step, never more.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum sl_reader_what {
	SL_READER_POLICY = 'P',
	SL_READER_AUDIT = 'A',
};

struct sl_gw_reader {
	pid_t pid;
	int fd; /* the gateway's end of the socket; -1: none */
};

/*
 * Fork the reader. audit_path may be NULL or "-" (nothing to reopen).
 * release_uid and lock_fd: an allocated uid to release when the gateway
 * is gone ((uid_t)-1: none); the reader takes its own copy of lock_fd.
 */
int sl_gw_reader_start(struct sl_gw_reader *r, const char *prog, const char *policy_path,
		       const char *audit_path, uid_t release_uid, int lock_fd, char *err,
		       size_t errlen);

/* Ask for one file; the answer comes on r->fd (readable). */
int sl_gw_reader_ask(struct sl_gw_reader *r, enum sl_reader_what what);

/* Take the answer: an fd (the caller owns it), or a negative errno (the
 * reader said why on stderr already; -EPIPE: the reader is gone; -EAGAIN:
 * nothing yet). *ret_what says which question it answers. */
int sl_gw_reader_answer(struct sl_gw_reader *r, enum sl_reader_what *ret_what);

/* Close the gateway's end: the reader releases the uid and exits. */
void sl_gw_reader_stop(struct sl_gw_reader *r);
