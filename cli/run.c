/* SPDX-License-Identifier: MIT */
/*
 * sluice run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N]
 *            [--cpu PERCENT] [--pool CIDR] [--rw PATH] [--ro PATH]
 *            [--trust FILE] [--env NAME[=VALUE]] -- CMD [ARG...]
 *
 * Runs CMD in a sandbox that is an execution boundary, not only a network
 * namespace: a uid of its own (allocated per sandbox unless --user names
 * one), its own pid and mount namespaces (a read-only view of the host with
 * private /tmp, /var/tmp, /dev/shm and /run, the --rw and --ro binds, a
 * writable HOME, the sandbox's CA bundle in the system's place), a session
 * of its own with a pty when stdin is a terminal, an allowlisted
 * environment, and always a cgroup. Its packets can reach only the
 * gateway's ports on the host end of its veth. Exits with CMD's status
 * (128+N when a signal N killed it). The gateway (an explicit proxy
 * deciding by the policy; without --policy it denies everything; plus DNS
 * and transparent capture) runs in a process of its own on that address,
 * confined (a uid of its own, no capability, a seccomp allowlist), while
 * this one supervises the command; if the gateway dies, the command is
 * ended (the fence stays until it is gone). The fence and the gateway are
 * shared with `sluice attach` (sandbox-serve.c).
 *
 * Order matters: the host's rules, then the sandbox's rules, the sandbox
 * made ready to run (while this process is still single-threaded), the
 * gateway, and only then the command executes, so it never runs a moment
 * unfenced or before the gateway answers. Teardown is the reverse and
 * happens on every way out of here: normal exit, a forwarded signal, or a
 * setup step that failed halfway.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "err.h"
#include "macro.h"
#include "netns.h"
#include "policy-file.h"
#include "policy.h"
#include "pty.h"
#include "observe.h"
#include "openssl-shim.h"
#include "run-internal.h"
#include "sandbox-serve.h"
#include "trace.h"

extern char **environ;

/* Signals sluice takes and hands to the command (through its init). The
 * command has a session of its own, so none reaches it from the terminal
 * directly: a ^C typed while sluice is in the foreground comes to sluice
 * and is passed on. With a pty, the terminal is raw and ^C travels as a
 * byte to the command's own line discipline instead. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2};

/* The command's HOME when the user's own is not bound writable: on the
 * sandbox's private /tmp, gone with it. */
#define SANDBOX_HOME "/tmp/home"

/* What an SDK that insists on a key is given instead of the real one. */
#define PLACEHOLDER SL_PLACEHOLDER

/* A variable that holds a secret's value never reaches the sandbox,
 * whatever its name (the policy may read the key from a file while the
 * same key also sits in sluice's environment). */
static void env_drop_secret_values(struct run *r)
{
	size_t i, j, k;

	for (i = 0, k = 0; r->env[i]; i++) {
		const char *eq = strchr(r->env[i], '=');
		bool holds = false;

		for (j = 0; eq && j < r->tls.n_secrets && !holds; j++)
			holds = memmem(eq + 1, strlen(eq + 1), r->tls.secrets[j].v->value,
				       r->tls.secrets[j].v->len) != NULL;
		if (holds) {
			fprintf(stderr,
				"sluice run: %.*s holds the value of secret '%s': not passed to "
				"the command\n",
				(int)(eq - r->env[i]), r->env[i], r->tls.secrets[j - 1].name);
			explicit_bzero(r->env[i], strlen(r->env[i]));
			free(r->env[i]);
			continue;
		}
		r->env[k++] = r->env[i];
	}
	r->env[k] = NULL;
}

/* The sandbox trusts its CA (the bundle holds the system's roots too) and
 * gets a placeholder where the policy names one. */
static int env_tls(struct run *r, const struct sl_policy *p)
{
	size_t i;
	int ret;

	for (i = 0; r->tls.bundle && sl_ca_env_vars[i]; i++) {
		ret = sl_netns_env_set(&r->env, sl_ca_env_vars[i], r->tls.bundle);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < p->n_allow; i++) {
		const struct sl_rule *rule = &p->rules[i];

		if (!rule->has_inject || !rule->inject.placeholder_env)
			continue;
		ret = sl_netns_env_set(&r->env, rule->inject.placeholder_env, PLACEHOLDER);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int env_secret_names(struct run *r)
{
	size_t i, k = 0;

	r->env_drop = calloc(r->policy->n_secrets + 1, sizeof(char *));
	if (!r->env_drop)
		return -ENOMEM;
	for (i = 0; i < r->policy->n_secrets; i++)
		if (r->policy->secrets[i].source == SL_SECRET_ENV &&
		    !(r->env_drop[k++] = strdup(r->policy->secrets[i].ref)))
			return -ENOMEM;
	return 0;
}

static void run_usage(FILE *f)
{
	fputs("usage: sluice run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N]\n"
	      "                  [--cpu PERCENT] [--pool CIDR] [--audit FILE] [--rw PATH]...\n"
	      "                  [--ro PATH]... [--trust FILE]... [--env NAME[=VALUE]]...\n"
	      "                  [--resolver ADDR[:PORT]] [--upstream-ca FILE]\n"
	      "                  [--metrics ADDR:PORT] [--observe] -- CMD [ARG...]\n"
	      "\n"
	      "Run CMD in a sandbox whose only way out is sluice's gateway. Without --policy every\n"
	      "egress is denied.\n"
	      "\n"
	      "  --user USER|UID   run as USER (not root) instead of a uid of the sandbox's own\n"
	      "                    (allocated per sandbox, used by no other process)\n"
	      "  --rw PATH         bind PATH (a host directory or file) writable at the same place;\n"
	      "                    everything else is read-only, /tmp, /var/tmp, /dev/shm and /run\n"
	      "                    are private, HOME is " SANDBOX_HOME " unless the user's own is --rw\n"
	      "  --ro PATH         bind PATH read-only (over a --rw parent, say)\n"
	      "  --trust FILE      add the CA certificates in FILE (PEM) to the bundle the sandbox\n"
	      "                    trusts (for origins behind a private CA)\n"
	      "  --env NAME[=VALUE]  pass NAME from sluice's environment, or set it; otherwise\n"
	      "                    only PATH, LANG, LC_*, TERM, TZ, SHELL and the like pass\n"
	      "  --memory BYTES    memory limit (K, M, G suffixes); --pids N: process limit;\n"
	      "  --cpu PERCENT     CPU limit, a percentage of one CPU\n"
	      "  --pool CIDR       where sandbox addresses come from (default " SL_NETNS_DEFAULT_POOL
	      ")\n"
	      "  --audit FILE      one JSON line per decision (not '-': the command shares stdout)\n"
	      "  --resolver ADDR[:PORT]  the DNS server the gateway asks (default: resolv.conf)\n"
	      "  --upstream-ca FILE  verify inspected origins against FILE, not the system store\n"
	      "  --metrics ADDR:PORT  serve Prometheus metrics on the host's ADDR:PORT (never the\n"
	      "                    sandbox's side: not a wildcard; docs/metrics.md)\n"
	      "  --observe         observe mode: let through what the rules deny, audited as\n"
	      "                    observe-deny (docs/observe.md; never for long with secrets)\n"
	      "\n"
	      "Exits with CMD's status, or 128+N if signal N killed it; 125 if sluice itself\n"
	      "failed (bad flags, an invalid policy, not root, setup, the audit log or the\n"
	      "gateway failing: stderr says which), 126/127 if CMD could not be executed. SIGINT, SIGTERM, SIGQUIT, SIGUSR1/2 are passed\n"
	      "to CMD (a second SIGINT or SIGTERM ends the sandbox); SIGHUP sent by a process\n"
	      "reloads --policy (a terminal hangup is passed on). When one of fds 0-2 is a\n"
	      "terminal, CMD gets a pty of its own. Hosts whose rules name methods, paths or a\n"
	      "credential are inspected: the sandbox trusts a CA of its own. docs/sandbox.md\n"
	      "says what the sandbox isolates and how to get each convenience back safely.\n",
	      f);
}

static void *job_main(void *arg)
{
	struct job *j = arg;

	j->ret = j->fn(j->run, j->err, sizeof(j->err));
	return NULL;
}

static void start_job(struct run *r, struct job *j,
		      int (*fn)(struct run *r, char *err, size_t errlen))
{
	*j = (struct job){.run = r, .fn = fn, .ret = 1};
	j->started = pthread_create(&j->thread, NULL, job_main, j) == 0;
}

/* Once the thread is gone: its result (err only on failure, if given). */
static int join_job(struct job *j, char *err, size_t errlen)
{
	if (!j->joined && j->started)
		(void)pthread_join(j->thread, NULL);
	else if (!j->joined && j->fn && j->ret == 1)
		(void)job_main(j);
	j->joined = true;
	if (j->ret < 0 && err)
		snprintf(err, errlen, "%s", j->err);
	return j->ret;
}

static int warm_up(struct run *r, char *err, size_t errlen)
{
	/* OpenSSL itself first: loaded here, off the main thread's path
	 * (openssl-shim.h). The random generator is seeded next; the
	 * gateway's process, forked from us, reseeds its own before it makes
	 * the CA's key (OpenSSL notices the fork). No core dump of us from
	 * here on: the secrets come next. */
	int ret = sl_ossl_load(err, errlen);

	if (ret < 0)
		return ret;
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	sl_tls_warm_up();
	return 0;
}

static int build_filter(struct run *r, char *err, size_t errlen)
{
	return sl_netns_filter_build(&r->filter, err, errlen);
}

/* The sandbox's CA is made by the gateway's process, the only one to hold
 * its key (serve-internal.h, CA): this one writes the bundle the sandbox
 * trusts, named after the host end, known as soon as the slot is taken. */
static void name_ca(void *data, const char *ifname)
{
	struct run *r = data;

	snprintf(r->ca_name, sizeof(r->ca_name), "%s", ifname);
}

static void run_teardown(struct run *r)
{
	sl_trace("teardown");
	(void)join_job(&r->warm, NULL, 0);
	(void)join_job(&r->users, NULL, 0);
	(void)join_job(&r->filter_job, NULL, 0);
	sl_netns_filter_free(&r->filter);
	sl_serve_gateway_stop(&r->serve);
	sl_trace("gateway stopped");

	/* The veth goes first: the sandbox is cut off before anything else. */
	sl_netns_sandbox_release(TAKE_PTR(r->sandbox), &r->releaser);
	sl_trace("sandbox freed");
	sl_serve_rules_remove(&r->serve);
	sl_trace("rules removed");
	/* Whatever is left of the sandbox dies here, before its uid is free.
	 * If something may still live, the uid's lock file stays as it is
	 * (marked): its next holder walks /proc and scrubs before using it. */
	if (sl_netns_cgroup_free(TAKE_PTR(r->cgroup)) < 0 && r->uid_lock >= 0)
		close(TAKE_FD(r->uid_lock));
	sl_trace("cgroup freed");
	sl_netns_proc_close(&r->proc);
	sl_pty_close(&r->pty);
	/* Released after us (the releaser empties its keyrings), or now. */
	if (r->uid_lock >= 0 && sl_netns_releaser_user(&r->releaser, r->user.uid, r->uid_lock) == 0)
		close(TAKE_FD(r->uid_lock));
	if (r->uid_lock >= 0)
		sl_netns_user_release(NULL, r->user.uid, TAKE_FD(r->uid_lock));
	sl_netns_env_free(TAKE_PTR(r->env));
	sl_netns_env_free(TAKE_PTR(r->env_drop));
	sl_policy_free(TAKE_PTR(r->policy));
	sl_tls_setup_done(&r->tls);
	for (size_t i = 0; i < r->n_binds; i++)
		free((char *)r->binds[i].path);
	r->n_binds = 0;
	sl_trace("teardown done");
}

/* --upstream-ca is read by the gateway's process as it sets up: a FIFO or a
 * device there would hold it until the setup bound kills it, 30 s later. */
static int check_upstream_ca(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (!path)
		return 0;
	if (stat(path, &st) < 0)
		return sl_err(err, errlen, -errno, "--upstream-ca %s: %m", path);
	if (!S_ISREG(st.st_mode))
		return sl_err(err, errlen, -EINVAL, "--upstream-ca %s: not a regular file", path);
	return 0;
}

static int load_policy(struct run *r)
{
	if (!r->args.policy)
		return sl_policy_new_deny_all(&r->policy) < 0 ? -ENOMEM : 0;
	return sl_cli_policy_load("sluice run", r->args.policy, r->writable, &r->policy);
}

/* --rw and --ro as real paths: what the kernel binds is what was checked
 * (a link in PATH is followed now, not later inside). The same path twice
 * is refused: which of the two would win is not obvious. */
static int canonical_binds(struct run *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < r->args.n_binds; i++) {
		const struct sl_netns_bind *b = &r->args.binds[i];
		const char *opt = b->writable ? "--rw" : "--ro", *why;
		char *real = realpath(b->path, NULL);

		if (!real)
			return sl_err(err, errlen, -errno, "%s %s: %m", opt, b->path);
		why = sl_netns_bind_refused(real);
		for (size_t k = 0; !why && k < r->n_binds; k++)
			if (!strcmp(r->binds[k].path, real))
				why = "given twice";
		if (why) {
			snprintf(err, errlen, "%s %s: refused: %s", opt, b->path, why);
			free(real);
			return -EINVAL;
		}
		if (b->writable) {
			size_t n = 0;

			while (r->writable[n])
				n++;
			r->writable[n] = real;
		}
		r->binds[r->n_binds++] = (struct sl_netns_bind){.path = real, .writable = b->writable};
	}
	return 0;
}

/* Is `path` inside a --rw bind? */
static bool under_rw(const struct run *r, const char *path)
{
	for (size_t i = 0; i < r->n_binds; i++) {
		size_t n = strlen(r->binds[i].path);

		if (r->binds[i].writable && !strncmp(path, r->binds[i].path, n) &&
		    (path[n] == '\0' || path[n] == '/' || n == 1))
			return true;
	}
	return false;
}

/* `--audit -` is refused (args.c) because the command shares our stdout
 * and could print lines that read like records; /dev/stdout, /dev/fd/1,
 * /proc/self/fd/2 or the terminal's own /dev/pts/N are the same stream by
 * another name. Whatever the path opens, if it is one of the files on
 * fds 0-2 (which the command gets, or reaches through its pty), the log
 * is refused. */
static int check_audit_not_shared(const char *path, char *err, size_t errlen)
{
	struct stat a, s;

	if (stat(path, &a) < 0)
		return 0; /* made by the open: no fd of ours is it */
	if (S_ISCHR(a.st_mode) && a.st_rdev == makedev(1, 3))
		return 0; /* /dev/null: nothing read there */
	for (int fd = 0; fd <= 2; fd++)
		if (fstat(fd, &s) == 0 && s.st_dev == a.st_dev && s.st_ino == a.st_ino)
			return sl_err(err, errlen, -EPERM,
				      "--audit %s: it is this sluice's fd %d, which the command "
				      "shares and could print records on that look like sluice's; "
				      "give a file (--audit FILE, or --audit /dev/fd/3 3>FILE)",
				      path, fd);
	return 0;
}

/* The audit log must not lie where the command can write: it could cut
 * records out or add its own. The file may not exist yet: its directory
 * decides. */
static int check_audit_path(const struct run *r, char *err, size_t errlen)
{
	char dir[PATH_MAX], real[PATH_MAX];
	char *slash;

	if (!r->args.audit)
		return 0;
	snprintf(dir, sizeof(dir), "%s", r->args.audit);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (!realpath(dir, real))
		return sl_err(err, errlen, -errno, "--audit %s: %s: %m", r->args.audit, dir);
	if (under_rw(r, real))
		return sl_err(err, errlen, -EPERM,
			      "--audit %s: it lies under a --rw path, where the command could rewrite "
			      "the log; write it outside what the sandbox can change",
			      r->args.audit);
	return check_audit_not_shared(r->args.audit, err, errlen);
}

/* The user's own HOME only when it is bound writable (the operator chose to
 * hand it over); otherwise a fresh one on the private /tmp. A home that
 * sluice's view would show read-only would break every tool that caches. */
static void choose_home(struct run *r)
{
	char real[PATH_MAX];

	if (r->user.home[0] && realpath(r->user.home, real) && under_rw(r, real))
		return;
	snprintf(r->user.home, sizeof(r->user.home), "%s", SANDBOX_HOME);
}

/* Who the command runs as: --user, or a uid of its own; and the gateway's
 * uid, allocated in the same walk of /proc. */
static int pick_user(struct run *r, char *err, size_t errlen)
{
	struct sl_netns_user u[2];
	int fds[2], ret;

	if (r->args.user)
		return sl_netns_user_resolve(r->args.user, &r->user, err, errlen);
	ret = sl_netns_user_allocate_n(NULL, 2, u, fds, err, errlen);
	if (ret < 0)
		return ret;
	r->user = u[0];
	r->uid_lock = fds[0];
	r->serve.gw_user = u[1];
	r->serve.gw_uid_lock = fds[1];
	return 0;
}

/* The sandbox's network, its cgroup and both sides' rules, first: the
 * rules' commit leaves the kernel a grace period of work that the rest of
 * the start then overlaps. 0, or RUN_EXIT_SETUP (it said why). */
static int setup_net(struct run *r)
{
	struct sl_netns_sandbox_config cfg = {.slot_taken = name_ca, .slot_data = r};
	char err[512];
	int ret;

	if (sl_netns_pool_parse(r->args.pool ? r->args.pool : SL_NETNS_DEFAULT_POOL, &cfg.pool) < 0)
		return RUN_EXIT_SETUP; /* cannot happen: the arguments were checked */
	r->serve.pool = cfg.pool;
	/* Always a cgroup: nothing the command forks escapes the teardown. */
	sl_trace("setup");
	ret = sl_netns_cgroup_new(&r->args.limits, &r->cgroup, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("cgroup made");
	ret = sl_netns_sandbox_new(&cfg, &r->sandbox, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("sandbox network made");
	r->serve.fence_policy = r->policy; /* its ports are captured */
	ret = sl_serve_rules_install(&r->serve, r->sandbox, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("rules installed");
	return 0;
fail:
	fprintf(stderr, "sluice run: %s\n", err);
	return RUN_EXIT_SETUP;
}

/* 0, or the status to exit with: 125 when sluice failed, 127 or 126 when
 * CMD could not be executed (not found, or not executable), as shells do. */
static int setup(struct run *r, const sigset_t *child_mask)
{
	int ret, exec_errno = 0;
	char err[512], ca_pem[SL_CA_PEM_MAX + 1];

	ret = sl_serve_gateway_user(&r->serve, err, sizeof(err));
	if (ret < 0)
		goto fail;
	/* Secrets the policy reads from sluice's own environment are names we
	 * must keep out of the sandbox's: noted before the gateway takes the
	 * policy. */
	ret = env_secret_names(r);
	if (ret < 0) {
		snprintf(err, sizeof(err), "building the environment: %s", strerror(-ret));
		goto fail;
	}
	for (size_t i = 0; i < r->args.n_env; i++) {
		size_t n = strcspn(r->args.env[i], "=");

		for (size_t k = 0; r->env_drop[k]; k++)
			if (strlen(r->env_drop[k]) == n && !strncmp(r->env_drop[k], r->args.env[i], n)) {
				snprintf(err, sizeof(err),
					 "--env %s: the policy reads a secret from that variable; it "
					 "never reaches the sandbox",
					 r->args.env[i]);
				ret = -EPERM;
				goto fail;
			}
	}
	/* The gateway's process inherits OpenSSL warmed up (the fork is
	 * made without threads): its CA and TLS setup are then fractions of a
	 * millisecond, while the sandbox is made. */
	ret = join_job(&r->warm, err, sizeof(err));
	/* And no thread is left at the fork (libseccomp's, say). */
	if (ret == 0)
		ret = join_job(&r->filter_job, err, sizeof(err));
	else
		(void)join_job(&r->filter_job, NULL, 0);
	if (ret == 0 && r->tls_needed)
		ret = sl_tls_bundle_prepare(&r->tls, r->ca_name, err, sizeof(err));
	if (ret < 0)
		goto fail;
	for (size_t i = 0; i < r->args.n_trust; i++) {
		ret = sl_tls_add_trust(&r->tls, r->args.trust[i], err, sizeof(err));
		if (ret < 0)
			goto fail;
	}
	ret = sl_netns_env_build(environ, sl_netns_sandbox_host_addr(r->sandbox),
				 SL_SERVE_PORT_PROXY, &r->user, (const char *const *)r->env_drop,
				 r->args.env, &r->env);
	if (ret == 0) {
		env_drop_secret_values(r);
		ret = env_tls(r, r->policy);
	}
	if (ret < 0) {
		snprintf(err, sizeof(err), "building the environment: %s", strerror(-ret));
		goto fail;
	}
	/* The gateway first: its setup (a loop, the resolver, TLS with the
	 * system's store, its confinement) runs while the sandbox's init
	 * builds the command's view; the command waits for both. */
	r->serve.tls = &r->tls;
	r->serve.make_ca = r->tls_needed ? r->ca_name : NULL;
	r->serve.upstream_ca = r->args.upstream_ca;
	r->serve.metrics = r->args.metrics;
	r->serve.sandbox_writable = r->writable;
	ret = sl_serve_gateway_fork(&r->serve, r->sandbox, &r->policy, r->args.audit,
				    r->args.resolver, err, sizeof(err));
	if (ret < 0)
		goto fail;
	/* A pty whenever one of fds 0-2 is a terminal: the command must never
	 * hold the operator's (it could read what they type, and change its
	 * modes and size for after). Input is relayed only from a terminal. */
	if (isatty(STDIN_FILENO) || isatty(STDOUT_FILENO) || isatty(STDERR_FILENO)) {
		ret = sl_pty_open(&r->pty,
				  isatty(STDIN_FILENO)	  ? STDIN_FILENO
				  : isatty(STDOUT_FILENO) ? STDOUT_FILENO
							  : STDERR_FILENO,
				  err, sizeof(err));
		if (ret < 0)
			goto fail;
	}
	/* The sandbox is made while this process is still single-threaded
	 * (sl_netns_spawn needs that); the command waits for the gateway's
	 * READY and our word. */
	ret = sl_netns_spawn_start(
	    &(struct sl_netns_spawn){.sandbox = r->sandbox,
				     .cgroup = r->cgroup,
				     .user = r->user,
				     .fs = {.binds = r->binds,
					    .n_binds = r->n_binds,
					    .ca_bundle = r->tls.bundle,
					    .home = r->user.home,
					    .user_name = r->uid_lock >= 0 ? r->user.name : NULL},
				     .pty = r->pty.slave,
				     .argv = r->args.argv,
				     .envp = r->env,
				     .sigmask = child_mask,
				     .filter = &r->filter},
	    &r->proc, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("sandbox spawned");
	sl_closep(&r->pty.slave);
	r->pty.slave = -1;
	/* The bundle's text, while the sandbox's init builds the view (that
	 * binds the file, empty until now): the command starts only after. */
	if (r->tls_needed) {
		ret = sl_serve_gateway_ca(&r->serve, ca_pem, err, sizeof(err));
		if (ret == 0)
			ret = sl_tls_bundle_fill(&r->tls, ca_pem, err, sizeof(err));
		if (ret < 0)
			goto fail;
		sl_trace("CA bundle written");
	}
	ret = sl_netns_spawn_ready(&r->proc, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("command waits");
	ret = sl_serve_gateway_ready(&r->serve, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("gateway ready");
	ret = sl_netns_spawn_go(&r->proc, &exec_errno, err, sizeof(err));
	if (ret < 0)
		goto fail;
	sl_trace("command executed");
	return 0;
fail:
	fprintf(stderr, "sluice run: %s\n", err);
	(void)join_job(&r->warm, NULL, 0);
	(void)join_job(&r->filter_job, NULL, 0);
	if (r->proc.pid > 0) {
		/* A sandbox made but not run: it exits once its pipes close. */
		sl_netns_proc_close(&r->proc);
		(void)kill(r->proc.pid, SIGKILL);
		while (waitpid(r->proc.pid, NULL, 0) < 0 && errno == EINTR)
			;
		r->proc.pid = 0;
	}
	if (exec_errno)
		return exec_errno == ENOENT ? 127 : 126;
	return RUN_EXIT_SETUP;
}

int sl_cmd_run(int argc, char **argv)
{
	struct run r = {.serve = SL_SERVE_INIT("sluice run"),
			.uid_lock = -1,
			.pty = {.master = -1, .slave = -1},
			.proc = {.efd = -1, .go = -1, .alive = -1},
			.releaser = {.pid = -1, .sock = -1}};
	sigset_t set, old;
	char err[512];
	int ret;

	sl_trace("start");
	if (sl_netns_run_args_parse(argc, argv, &r.args, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice run: %s\n", err);
		run_usage(stderr);
		return RUN_EXIT_SETUP;
	}
	if (r.args.help) {
		run_usage(stdout);
		return SL_EXIT_OK;
	}
	if (canonical_binds(&r, err, sizeof(err)) < 0 ||
	    check_audit_path(&r, err, sizeof(err)) < 0 ||
	    check_upstream_ca(r.args.upstream_ca, err, sizeof(err)) < 0 ||
	    (r.args.metrics &&
	     sl_gw_metrics_addr_check(r.args.metrics, true, err, sizeof(err)) < 0)) {
		fprintf(stderr, "sluice run: %s\n", err);
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}
	if (load_policy(&r) < 0) {
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}
	sl_cli_observe_force(r.policy, r.args.observe);
	r.serve.observe = r.args.observe;
	sl_cli_observe_banner(stderr, "sluice run", r.policy);
	if (geteuid() != 0) {
		fprintf(stderr, "sluice run: must run as root (it creates namespaces, links and "
				"firewall rules, then drops to the user)\n");
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}
	/* Block before the child exists, so no signal meant for it is lost
	 * (the child gets our original mask back before it executes), and
	 * before anything is set up, so that a signal cannot end us before
	 * the teardown (nor the CA's thread, which inherits the mask, take
	 * one for the process). */
	sigemptyset(&set);
	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0) {
		fprintf(stderr, "sluice run: blocking signals: %m\n");
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}

	/* Before anything secret is read: it keeps a copy of our memory. A
	 * run without one is only slower to end. */
	if (sl_netns_releaser_start(&r.releaser) == 0)
		r.serve.releaser = &r.releaser;
	/* OpenSSL's first use, for the CA, and the uids (their passwd and
	 * group lookups are a millisecond or two) while the network is made. */
	/* Without --policy nothing is allowed, now or after a reload (there is
	 * no file to reload): no host is inspected, and no CA is needed, nor a
	 * bundle (the sandbox trusts the system's roots, as it would anyway).
	 * --trust still makes a bundle, and --upstream-ca is still checked. */
	r.tls_needed = r.args.policy || r.args.n_trust || r.args.upstream_ca;
	if (r.tls_needed)
		start_job(&r, &r.warm, warm_up);
	start_job(&r, &r.users, pick_user);
	start_job(&r, &r.filter_job, build_filter);
	ret = setup_net(&r);
	if (ret > 0) {
		run_teardown(&r);
		return ret;
	}
	if (join_job(&r.users, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice run: %s\n", err);
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}
	sl_trace("user picked");
	choose_home(&r);
	/* Secrets are read now, as root, and refused if the sandbox's user
	 * could read them too; nothing of them reaches the sandbox. */
	r.tls.sandbox_writable = r.writable;
	if (sl_tls_load_secrets(&r.tls, r.policy, r.user.uid, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice run: %s\n", err);
		run_teardown(&r);
		return RUN_EXIT_SETUP;
	}

	ret = setup(&r, &old);
	if (ret > 0) {
		run_teardown(&r);
		return ret;
	}
	ret = sl_run_exit_status(sl_run_supervise(&r, &set));
	sl_trace("command exited");
	if (r.audit_failed)
		ret = RUN_EXIT_AUDIT;
	else if (r.gateway_died)
		ret = RUN_EXIT_SETUP;
	run_teardown(&r);
#ifndef __SANITIZE_ADDRESS__
	/* Everything is released (the secrets and the key wiped): the
	 * libraries' exit handlers (OpenSSL's cleanup, a millisecond) would
	 * only free memory the exit frees anyway. The sanitizers' build
	 * exits, for the leak check. */
	fflush(NULL);
	_exit(ret);
#endif
	return ret;
}
