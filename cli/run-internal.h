/* SPDX-License-Identifier: MIT */
/*
 * Between the two files of `sluice run`: run.c, which checks the command
 * line, sets the sandbox up and tears it down, and run-supervise.c, which
 * waits for the command in between. Both work on one struct run.
 */
#pragma once

#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "netns.h"
#include "policy.h"
#include "pty.h"
#include "sandbox-serve.h"

/* Like env(1) and container runtimes: 125 whenever sluice itself failed
 * (a bad command line, an invalid policy, not root, setup, the audit log
 * or the gateway failing while the command ran), so that it is told apart
 * from the command's own statuses; what failed goes to stderr. */
#define RUN_EXIT_SETUP 125
/* The audit log could not be written: the gateway stopped deciding, and
 * the command was ended (docs/sandbox.md). A failure of sluice's too. */
#define RUN_EXIT_AUDIT RUN_EXIT_SETUP

struct run;

/* Work a thread of its own does while the main one makes the namespace,
 * the veth and the rules. Joined (join_job()) before anything forks (the
 * spawn and the gateway fork a single-threaded process), and by the
 * teardown in any case. Where no thread can be had, it runs when joined. */
struct job {
	pthread_t thread;
	bool started, joined;
	int ret; /* 1: not run yet */
	struct run *run;
	int (*fn)(struct run *r, char *err, size_t errlen);
	char err[512];
};

struct run {
	struct sl_netns_run_args args;
	struct sl_serve serve; /* the fence and the gateway (sandbox-serve.h) */
	struct sl_policy *policy;
	struct sl_netns_user user;
	int uid_lock; /* the allocated uid's lock; -1 with --user */
	/* --rw and --ro, canonical (realpath), owned here. */
	struct sl_netns_bind binds[SL_NETNS_MAX_BINDS];
	size_t n_binds;
	/* The --rw paths, NULL-terminated: no policy or secret file may lie
	 * there (the sandbox could rewrite it and have it reloaded). */
	const char *writable[SL_NETNS_MAX_BINDS + 1];
	struct sl_pty pty; /* fds -1 unless one of fds 0-2 is a terminal */
	unsigned stops;	   /* SIGINT/SIGTERM passed on so far */
	bool audit_failed; /* the gateway could not write the audit log */
	bool gateway_died; /* the gateway's process is gone: RUN_EXIT_SETUP */
	struct sl_netns_proc proc;
	struct sl_netns_cgroup *cgroup;
	struct sl_netns_sandbox *sandbox;
	char **env;
	char **env_drop; /* variables never passed on: env secrets */
	struct sl_tls_setup tls; /* secrets and the sandbox's CA */
	struct sl_netns_releaser releaser; /* the teardown's waiting, after us */
	/* Made by threads of their own (start_job()): the sandbox's CA, and
	 * the uids. */
	struct job users, warm, filter_job;
	struct sl_netns_filter filter; /* the command's, built by filter_job */
	bool tls_needed; /* a CA and its bundle (not without --policy and --trust) */
	char ca_name[IF_NAMESIZE]; /* the sandbox's host end */
};

/* run-supervise.c: the command's wait status, once it is gone (its pty
 * relayed and the signals in `set`, blocked, forwarded meanwhile). */
int sl_run_supervise(struct run *r, const sigset_t *set);
/* The status to exit with for a wait status: the command's own, 128+N
 * for a signal N, else RUN_EXIT_SETUP. */
int sl_run_exit_status(int status);
