/* SPDX-License-Identifier: MIT */
/*
 * sluice attach (--pid PID | --netns PATH) --policy FILE [--audit FILE|-]
 *               [--resolver ADDR[:PORT]] [--pool CIDR]
 *
 * The fence of `sluice run`, put around a network namespace that exists
 * already (a running container's): a veth into it, its IPv4 default route
 * through the host end, table inet sluice inside (the same ruleset: output
 * to anything but the gateway's ports is dropped whatever the route and
 * whichever interface), the host side's rules for the veth, and the gateway
 * (proxy, DNS, transparent capture) served until SIGINT or SIGTERM, or
 * until the process given by --pid exits. Then everything it added goes
 * and the container's routes come back: the container is left as it was.
 *
 * The processes inside are not ours: no privileges are dropped, no cgroup
 * is made, and their /etc/resolv.conf (in a mount namespace that is not
 * ours either) is not changed. Programs that read it ask the container's
 * resolver, and their queries to port 53 are sent to the gateway's DNS by
 * the sandbox ruleset anyway.
 *
 * Order matters as in run: the veth exists but is down until both rulesets
 * are in place; only then is it brought up and the routes swapped.
 * Teardown: the gateway, the veth (with our route) and the container's
 * routes put back while its table still fences it, then its table, then
 * the host's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "macro.h"
#include "netns.h"
#include "nft.h"
#include "policy-file.h"
#include "policy.h"
#include "sandbox-serve.h"

#define PROG "sluice attach"

struct attach {
	const char *pid_arg, *netns, *policy_path, *audit, *resolver, *pool;
	const char *upstream_ca, *ca_dir;
	struct sl_tls_setup tls; /* secrets and the CA the container must trust */
	pid_t pid;
	int pidfd;    /* -1: not watching the process (--netns, or no pidfd) */
	int netns_fd; /* the target */
	struct sl_policy *policy;
	struct sl_serve serve;
	struct sl_netns_sandbox *sandbox;
	bool sandbox_rules; /* table inet sluice may be in the target */
};

static void attach_usage(FILE *f)
{
	fputs("usage: sluice attach (--pid PID | --netns PATH) --policy FILE [--audit FILE|-]\n"
	      "                     [--resolver ADDR[:PORT]] [--pool CIDR]\n"
	      "                     [--ca-dir DIR] [--upstream-ca FILE]\n"
	      "\n"
	      "Fence an existing network namespace (a container's: that of process PID, or the\n"
	      "namespace file PATH) so that it can reach only sluice's gateway, which enforces\n"
	      "the policy, until SIGINT or SIGTERM (or until PID exits); then remove everything\n"
	      "added and put the namespace's routes back. The container's resolv.conf is not\n"
	      "changed: its DNS queries are sent to the gateway's DNS instead.\n"
	      "--pool is where the veth's addresses come from (default " SL_NETNS_DEFAULT_POOL
	      ").\n"
	      "Hosts whose rules name methods, paths or a credential are inspected: the\n"
	      "container must trust sluice's CA (printed at start; --ca-dir DIR keeps one across\n"
	      "runs, so that it can be built into the image). --upstream-ca FILE verifies\n"
	      "origins against FILE instead of the system's trust store.\n"
	      "Exits 0 after a clean detach, 1 for an invalid policy, 2 for a bad command line\n"
	      "or target, 4 when the system refused.\n",
	      f);
}

static int parse_args(struct attach *a, int argc, char **argv)
{
	enum { O_PID = 256, O_NETNS, O_POLICY, O_AUDIT, O_RESOLVER, O_POOL, O_UPCA, O_CADIR };
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, O_PID},
	    {"netns", required_argument, NULL, O_NETNS},
	    {"policy", required_argument, NULL, O_POLICY},
	    {"audit", required_argument, NULL, O_AUDIT},
	    {"resolver", required_argument, NULL, O_RESOLVER},
	    {"pool", required_argument, NULL, O_POOL},
	    {"upstream-ca", required_argument, NULL, O_UPCA},
	    {"ca-dir", required_argument, NULL, O_CADIR},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char **slot;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case O_PID:
			slot = &a->pid_arg;
			break;
		case O_NETNS:
			slot = &a->netns;
			break;
		case O_POLICY:
			slot = &a->policy_path;
			break;
		case O_AUDIT:
			slot = &a->audit;
			break;
		case O_RESOLVER:
			slot = &a->resolver;
			break;
		case O_POOL:
			slot = &a->pool;
			break;
		case O_UPCA:
			slot = &a->upstream_ca;
			break;
		case O_CADIR:
			slot = &a->ca_dir;
			break;
		case 'h':
			attach_usage(stdout);
			return 1;
		default:
			fprintf(stderr, PROG ": unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			return -EINVAL;
		}
		if (*slot) {
			fprintf(stderr, PROG ": %s given twice\n", argv[optind - 2]);
			return -EINVAL;
		}
		if (!*optarg) {
			fprintf(stderr, PROG ": %s: empty value\n", argv[optind - 2]);
			return -EINVAL;
		}
		*slot = optarg;
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!a->pid_arg == !a->netns) {
		fprintf(stderr, PROG ": give exactly one of --pid and --netns\n");
		return -EINVAL;
	}
	if (!a->policy_path) {
		fprintf(stderr, PROG ": --policy is required\n");
		return -EINVAL;
	}
	if (a->pool && sl_netns_pool_parse(a->pool, &(struct sl_netns_pool){0}) < 0) {
		fprintf(stderr,
			PROG ": --pool '%s': expected an IPv4 network A.B.C.D/P, P in 8..30\n",
			a->pool);
		return -EINVAL;
	}
	return 0;
}

/* The target namespace, and (with --pid) a pidfd to notice the process
 * exit. The pidfd is taken first: if the pid is reused between the two
 * opens, the pidfd says the process we meant is gone. */
static int open_target(struct attach *a)
{
	char path[64], err[256];
	uint64_t pid;
	int r;

	if (a->pid_arg) {
		if (sl_netns_parse_uint(a->pid_arg, 1, 4194304, &pid) < 0) {
			fprintf(stderr, PROG ": --pid '%s': expected a process id\n", a->pid_arg);
			return -EINVAL;
		}
		a->pid = (pid_t)pid;
#ifdef SYS_pidfd_open
		a->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
		if (a->pidfd < 0 && errno == ESRCH) {
			fprintf(stderr, PROG ": --pid %s: no such process\n", a->pid_arg);
			return -ESRCH;
		}
#endif
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)a->pid);
	} else {
		snprintf(path, sizeof(path), "%s", a->netns);
	}
	a->netns_fd = open(a->netns ? a->netns : path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (a->netns_fd < 0) {
		r = negative_errno();
		if (a->pid_arg && r == -ENOENT)
			fprintf(stderr, PROG ": --pid %s: no such process\n", a->pid_arg);
		else
			fprintf(stderr, PROG ": %s: %s\n", a->netns ? a->netns : path,
				strerror(-r));
		return r;
	}
	r = sl_netns_check_attachable(a->netns_fd, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, PROG ": %s: %s\n", a->netns ? a->netns : path, err);
		return r;
	}
	if (a->pidfd >= 0 && poll(&(struct pollfd){.fd = a->pidfd, .events = POLLIN}, 1, 0) > 0) {
		fprintf(stderr, PROG ": --pid %s: the process exited\n", a->pid_arg);
		return -ESRCH;
	}
	return 0;
}

/* Only from where root alone can change it. The container's own binds are
 * not ours to see: a policy bound into it is for the operator to avoid
 * (docs/policy.md). */
static int load_policy(struct attach *a)
{
	return sl_cli_policy_load(PROG, a->policy_path, NULL, &a->policy);
}

static int setup(struct attach *a, char *err, size_t errlen)
{
	struct sl_netns_sandbox_config cfg = {0};
	struct in_addr gw;
	char ip[INET_ADDRSTRLEN];
	int r;

	if (sl_netns_pool_parse(a->pool ? a->pool : SL_NETNS_DEFAULT_POOL, &cfg.pool) < 0)
		return -EINVAL; /* cannot happen: parse_args checked it */
	r = sl_netns_sandbox_attach(&cfg, a->netns_fd, &a->sandbox, err, errlen);
	if (r < 0)
		return r;
	a->sandbox_rules = true;
	r = sl_serve_rules_install(&a->serve, a->sandbox, err, errlen);
	if (r < 0)
		return r;
	if (!a->ca_dir) {
		r = sl_tls_make_ca(&a->tls, sl_netns_sandbox_host_ifname(a->sandbox), err, errlen);
		if (r < 0)
			return r;
	}
	a->serve.tls = &a->tls;
	a->serve.upstream_ca = a->upstream_ca;
	r = sl_serve_gateway_start(&a->serve, a->sandbox, &a->policy, a->audit, a->resolver, err,
				   errlen);
	if (r < 0)
		return r;
	r = sl_netns_sandbox_attach_activate(a->sandbox, err, errlen);
	if (r < 0)
		return r;
	gw = sl_netns_sandbox_host_addr(a->sandbox);
	inet_ntop(AF_INET, &gw, ip, sizeof(ip));
	fprintf(stderr,
		PROG ": attached through %s; gateway %s (proxy :%u, dns :%u); SIGINT or SIGTERM "
		     "detaches\n",
		sl_netns_sandbox_host_ifname(a->sandbox), ip, SL_SERVE_PORT_PROXY,
		SL_SERVE_PORT_DNS);
	fprintf(stderr,
		PROG ": inspected hosts are served with certificates from a CA the container "
		     "must trust: %s (the system's roots plus it)\n",
		a->tls.bundle);
	return 0;
}

static int delete_sandbox_rules(void *userdata)
{
	return sl_nft_sandbox_delete(userdata, 512);
}

/* Everything added goes, in the order that keeps the container fenced
 * until its routes are back. false when something could not be undone. */
static bool teardown(struct attach *a)
{
	char err[512];
	bool clean = true;
	int r;

	sl_serve_gateway_stop(&a->serve);
	if (a->sandbox) {
		r = sl_netns_sandbox_detach(a->sandbox, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, PROG ": %s\n", err);
			clean = false;
		}
		if (a->sandbox_rules) {
			r = sl_netns_sandbox_run_inside(a->sandbox, delete_sandbox_rules, err);
			if (r < 0 && r != -ENOENT) {
				fprintf(stderr, PROG ": removing table inet %s: %s\n",
					SL_NFT_SANDBOX_TABLE, err);
				clean = false;
			}
		}
	}
	sl_serve_rules_remove(&a->serve);
	sl_netns_sandbox_free(TAKE_PTR(a->sandbox));
	sl_policy_free(TAKE_PTR(a->policy));
	sl_tls_setup_done(&a->tls);
	sl_closep(&a->netns_fd);
	sl_closep(&a->pidfd);
	return clean;
}

/* Until SIGINT or SIGTERM, or the --pid process's exit. */
static void wait_for_the_end(struct attach *a, const sigset_t *set)
{
	const struct timespec tick = {.tv_sec = 1};

	for (;;) {
		siginfo_t si;
		int sig = a->pidfd >= 0 ? sigtimedwait(set, &si, &tick) : sigwaitinfo(set, &si);

		if (sig == SIGINT || sig == SIGTERM)
			return;
		if (a->pidfd >= 0 &&
		    poll(&(struct pollfd){.fd = a->pidfd, .events = POLLIN}, 1, 0) > 0) {
			fprintf(stderr, PROG ": process %d exited; detaching\n", (int)a->pid);
			return;
		}
		if (sig == SIGHUP && sl_cli_hup_is_request(si.si_code))
			sl_serve_reload(&a->serve, a->policy_path);
		else if (sig == SIGHUP)
			fprintf(stderr, PROG ": SIGHUP from the kernel (a terminal hangup): not a "
					     "reload; send SIGHUP with kill(1) to reload\n");
		/* EINTR, EAGAIN (the tick): wait on. */
	}
}

int sl_cmd_attach(int argc, char **argv)
{
	struct attach a = {.pidfd = -1, .netns_fd = -1, .serve = {.prog = PROG}};
	sigset_t set;
	char err[512];
	int r;

	r = parse_args(&a, argc, argv);
	if (r != 0) {
		if (r < 0)
			attach_usage(stderr);
		return r < 0 ? SL_EXIT_USAGE : SL_EXIT_OK;
	}
	if (geteuid() != 0) {
		fprintf(stderr, PROG ": must run as root (it adds links, routes and firewall rules "
				     "to another namespace)\n");
		return SL_EXIT_FAILURE;
	}
	if (open_target(&a) < 0) {
		teardown(&a);
		return SL_EXIT_USAGE;
	}
	if (load_policy(&a) < 0) {
		teardown(&a);
		return SL_EXIT_INVALID;
	}
	/* The container's users are not ours to know: a secret file must be
	 * readable by its owner (root, or us) alone. */
	if (sl_tls_load_secrets(&a.tls, a.policy, (uid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		teardown(&a);
		return SL_EXIT_FAILURE;
	}

	/* A CA kept in files is checked before the container is touched. */
	if (a.ca_dir && sl_tls_open_ca_dir(&a.tls, a.ca_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		teardown(&a);
		return SL_EXIT_FAILURE;
	}

	/* Blocked before the gateway's thread exists, so that it inherits
	 * the mask and the signals come to sigwaitinfo here. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		fprintf(stderr, PROG ": blocking signals: %m\n");
		teardown(&a);
		return SL_EXIT_FAILURE;
	}
	r = setup(&a, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		teardown(&a);
		/* Someone else's sluice there is a matter of the command line. */
		return r == -EBUSY ? SL_EXIT_USAGE : SL_EXIT_FAILURE;
	}
	wait_for_the_end(&a, &set);
	return teardown(&a) ? SL_EXIT_OK : SL_EXIT_FAILURE;
}
