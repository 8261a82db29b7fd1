/* SPDX-License-Identifier: MIT */
/*
 * Confining the gateway's process (confine.c): the code that parses what
 * the sandbox sends holds no power. Called once, after the process has
 * everything it will ever need (its listening sockets, the audit log's
 * fd, the resolver's configuration, TLS material and secrets loaded) and
 * before it reads a single byte from the sandbox.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sl_gw_confine {
	/* Become this uid and gid (and no supplementary groups). (uid_t)-1:
	 * keep the current ids, allowed only when they are not root's. */
	uid_t uid;
	gid_t gid;
	/* An empty directory, owned by root and not writable by uid, to
	 * chroot into before the ids change: no filesystem is left to reach.
	 * NULL: none (the seccomp filter still refuses every open). */
	const char *empty_dir;
};

/*
 * For good, in this order: chroot to empty_dir; setgroups(0), setresgid,
 * setresuid (and a check that none of the ids can be got back); every
 * capability dropped (effective, permitted, inheritable, ambient and the
 * bounding set); PR_SET_NO_NEW_PRIVS; PR_SET_DUMPABLE 0 (no ptrace by the
 * same uid, no core); RLIMIT_CORE 0; then a seccomp filter that allows
 * only the system calls the gateway makes while serving, in every thread
 * (TSYNC). Any other call kills the whole process (SECCOMP_RET_KILL_PROCESS);
 * opening a file fails with EACCES instead, so a library that probes a
 * file gets an error, never the file. The list, and who needs each call,
 * is in confine.c (docs/gateway.md, "What the process may do"); a
 * sanitizer build differs there, for its reports only.
 *
 * 0, or a negative errno with err saying which step failed. On failure
 * the process may be half confined: the caller must exit, never serve.
 */
int sl_gw_confine(const struct sl_gw_confine *c, char *err, size_t errlen);
