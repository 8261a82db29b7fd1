/* SPDX-License-Identifier: MIT */
/*
 * sluice run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N]
 *            [--cpu PERCENT] [--pool CIDR] -- CMD [ARG...]
 *
 * Runs CMD in a sandbox whose packets can reach only the gateway's ports on
 * the host end of its veth, and exits with CMD's status (128+N when a
 * signal N killed it). The gateway (an explicit proxy deciding by the
 * policy; without --policy it denies everything; plus DNS and transparent
 * capture) runs in a thread of its own on that address, with its own libuv
 * loop, while this thread supervises the command. The fence and the
 * gateway are shared with `sluice attach` (sandbox-serve.c).
 *
 * Order matters: the host's rules, then the sandbox's rules, and only then
 * the command, so it never runs a moment unfenced. Teardown is the reverse
 * and happens on every way out of here: normal exit, a forwarded signal,
 * or a setup step that failed halfway.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "macro.h"
#include "netns.h"
#include "policy.h"
#include "sandbox-serve.h"

/* Like env(1) and container runtimes: 125 when sluice itself failed, so
 * that it is told apart from the command's own statuses. */
#define RUN_EXIT_SETUP 125

extern char **environ;

/* Signals sluice takes and hands to the command. Terminal-generated ones
 * reach the command directly (it shares our process group), so only those
 * sent by a process are forwarded: Ctrl-C must not arrive twice. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2};

struct run {
	struct sl_netns_run_args args;
	struct sl_serve serve; /* the fence and the gateway (sandbox-serve.h) */
	struct sl_policy *policy;
	struct sl_netns_user user;
	struct sl_netns_cgroup *cgroup;
	struct sl_netns_sandbox *sandbox;
	char **env;
	char **env_drop; /* variables never passed on: env secrets */
	struct sl_tls_setup tls; /* secrets and the sandbox's CA */
};

/* What an SDK that insists on a key is given instead of the real one. */
#define PLACEHOLDER "sluice-placeholder-the-gateway-injects-the-key"

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
	      "                  [--cpu PERCENT] [--pool CIDR] [--audit FILE|-]\n"
	      "                  [--resolver ADDR[:PORT]] [--upstream-ca FILE] -- CMD [ARG...]\n"
	      "\n"
	      "Run CMD in a network sandbox that can reach only sluice's gateway, as USER\n"
	      "(default: nobody, or the sudo caller) without capabilities. Without --policy every\n"
	      "egress is denied. --memory takes K, M, G suffixes; --cpu is a percentage of one\n"
	      "CPU. --pool is where sandbox addresses come from (default " SL_NETNS_DEFAULT_POOL
	      ").\n"
	      "Exits with CMD's status, or 128+N if signal N killed it; 125 if sluice failed.\n"
	      "SIGINT, SIGTERM, SIGQUIT, SIGUSR1/2 are passed to CMD; SIGHUP reloads --policy.\n"
	      "--audit FILE|- writes one JSON line per decision; --resolver ADDR[:PORT] is the\n"
	      "DNS server the gateway asks (default: the host's resolv.conf).\n"
	      "Hosts whose rules name methods, paths or a credential are inspected: the sandbox\n"
	      "trusts a CA of its own (SSL_CERT_FILE and kin); --upstream-ca FILE verifies\n"
	      "origins against FILE instead of the system's trust store.\n",
	      f);
}

static void run_teardown(struct run *r)
{
	sl_serve_gateway_stop(&r->serve);

	/* The veth goes first: the sandbox is cut off before anything else. */
	sl_netns_sandbox_free(TAKE_PTR(r->sandbox));
	sl_serve_rules_remove(&r->serve);
	sl_netns_cgroup_free(TAKE_PTR(r->cgroup));
	sl_netns_env_free(TAKE_PTR(r->env));
	sl_netns_env_free(TAKE_PTR(r->env_drop));
	sl_policy_free(TAKE_PTR(r->policy));
	sl_tls_setup_done(&r->tls);
}

static int load_policy(struct run *r)
{
	struct sl_diags diags = {0};
	int ret;

	if (!r->args.policy)
		return sl_policy_new_deny_all(&r->policy) < 0 ? -ENOMEM : 0;
	ret = sl_policy_load_file(r->args.policy, &r->policy, &diags);
	for (size_t k = 0; k < diags.n; k++)
		fprintf(stderr, "%s\n", diags.msgs[k]);
	sl_diags_clear(&diags);
	if (ret == -ENOMEM)
		fprintf(stderr, "sluice run: %s: out of memory\n", r->args.policy);
	return ret;
}

/* 0, or the status to exit with: 125 when sluice failed, 127 or 126 when
 * CMD could not be executed (not found, or not executable), as shells do. */
static int setup(struct run *r, const sigset_t *child_mask, pid_t *ret_pid)
{
	struct sl_netns_sandbox_config cfg = {0};
	int ret, exec_errno = 0;
	char err[512];

	if (sl_netns_pool_parse(r->args.pool ? r->args.pool : SL_NETNS_DEFAULT_POOL, &cfg.pool) < 0)
		return RUN_EXIT_SETUP; /* cannot happen: the arguments were checked */
	if (r->args.limits.memory_bytes || r->args.limits.pids || r->args.limits.cpu_percent) {
		ret = sl_netns_cgroup_new(&r->args.limits, &r->cgroup, err, sizeof(err));
		if (ret < 0)
			goto fail;
	}
	ret = sl_netns_sandbox_new(&cfg, &r->sandbox, err, sizeof(err));
	if (ret < 0)
		goto fail;
	ret = sl_serve_rules_install(&r->serve, r->sandbox, err, sizeof(err));
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
	/* The sandbox's own CA, whose key stays in this process. */
	ret = sl_tls_make_ca(&r->tls, sl_netns_sandbox_host_ifname(r->sandbox), err, sizeof(err));
	if (ret < 0)
		goto fail;
	ret = sl_netns_env_build(environ, sl_netns_sandbox_host_addr(r->sandbox),
				 SL_SERVE_PORT_PROXY, &r->user, (const char *const *)r->env_drop,
				 NULL, &r->env);
	if (ret == 0) {
		env_drop_secret_values(r);
		ret = env_tls(r, r->policy);
	}
	if (ret < 0) {
		snprintf(err, sizeof(err), "building the environment: %s", strerror(-ret));
		goto fail;
	}
	r->serve.tls = &r->tls;
	r->serve.upstream_ca = r->args.upstream_ca;
	ret = sl_serve_gateway_start(&r->serve, r->sandbox, &r->policy, r->args.audit,
				     r->args.resolver, err, sizeof(err));
	if (ret < 0)
		goto fail;
	ret = sl_netns_spawn(&(struct sl_netns_spawn){.sandbox = r->sandbox,
						      .cgroup = r->cgroup,
						      .user = r->user,
						      .argv = r->args.argv,
						      .envp = r->env,
						      .sigmask = child_mask},
			     ret_pid, &exec_errno, err, sizeof(err));
	if (ret < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "sluice run: %s\n", err);
	if (exec_errno)
		return exec_errno == ENOENT ? 127 : 126;
	return RUN_EXIT_SETUP;
}

/* Wait for the command, forwarding signals (SIGHUP reloads the policy
 * instead); its wait status. */
static int supervise(struct run *r, pid_t child, const sigset_t *set)
{
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si), status;

		if (sig < 0)
			continue; /* EINTR: only a stop/continue can cause it */
		if (sig == SIGCHLD) {
			pid_t p;

			while ((p = waitpid(-1, &status, WNOHANG)) > 0)
				if (p == child)
					return status;
			continue;
		}
		if (sig == SIGHUP) {
			sl_serve_reload(&r->serve, r->args.policy);
			continue;
		}
		if (si.si_code != SI_KERNEL)
			(void)kill(child, sig);
	}
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return RUN_EXIT_SETUP;
}

int sl_cmd_run(int argc, char **argv)
{
	struct run r = {.serve = {.prog = "sluice run"}};
	sigset_t set, old;
	char err[256];
	pid_t child;
	int ret;

	if (sl_netns_run_args_parse(argc, argv, &r.args, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice run: %s\n", err);
		run_usage(stderr);
		return SL_EXIT_USAGE;
	}
	if (r.args.help) {
		run_usage(stdout);
		return SL_EXIT_OK;
	}
	if (load_policy(&r) < 0)
		return SL_EXIT_INVALID;
	if (sl_netns_user_resolve(r.args.user, &r.user, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice run: %s\n", err);
		sl_policy_free(r.policy);
		return SL_EXIT_USAGE;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "sluice run: must run as root (it creates namespaces, links and "
				"firewall rules, then drops to the user)\n");
		sl_policy_free(r.policy);
		return SL_EXIT_FAILURE;
	}
	/* Secrets are read now, as root, and refused if the sandbox's user
	 * could read them too; nothing of them reaches the sandbox. */
	{
		char serr[512];

		if (sl_tls_load_secrets(&r.tls, r.policy, r.user.uid, serr, sizeof(serr)) < 0) {
			fprintf(stderr, "sluice run: %s\n", serr);
			sl_tls_setup_done(&r.tls);
			sl_policy_free(r.policy);
			return RUN_EXIT_SETUP;
		}
	}

	/* Block before the child exists, so no signal meant for it is lost;
	 * the child gets our original mask back before it executes. */
	sigemptyset(&set);
	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0) {
		fprintf(stderr, "sluice run: blocking signals: %m\n");
		sl_policy_free(r.policy);
		return SL_EXIT_FAILURE;
	}

	ret = setup(&r, &old, &child);
	if (ret > 0) {
		run_teardown(&r);
		return ret;
	}
	ret = exit_status(supervise(&r, child, &set));
	run_teardown(&r);
	return ret;
}
