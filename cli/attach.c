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
 * until nothing but sluice holds the namespace any more (no process in it,
 * no open file or bind mount of it: the --pid process exiting is not
 * enough, another may live on in there). Then everything it added goes
 * and the container's routes come back: the container is left as it was.
 *
 * The container's other ways out (docs/fence.md): every interface of its
 * own (all but lo and our veth) drops every frame at the netdev egress
 * hook, so that raw AF_PACKET frames, which no inet hook sees, cannot
 * leave either; interfaces added or renamed later are fenced as soon as
 * rtnetlink says so (a thread watches). A namespace that another user
 * namespace owns, or with a process in it holding CAP_NET_ADMIN, is
 * refused: either could delete the rules and route around the gateway.
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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "attach-watch.h"
#include "cli.h"
#include "err.h"
#include "macro.h"
#include "netns.h"
#include "nft.h"
#include "observe.h"
#include "policy-file.h"
#include "policy.h"
#include "sandbox-serve.h"

#define PROG "sluice attach"

struct attach {
	const char *pid_arg, *netns, *policy_path, *audit, *resolver, *pool;
	const char *upstream_ca, *ca_dir, *metrics;
	bool observe; /* --observe */
	struct sl_tls_setup tls; /* secrets and the CA the container must trust */
	pid_t pid;
	int pidfd;    /* -1: not watching the process (--netns, or no pidfd) */
	int netns_fd; /* the target */
	struct sl_policy *policy;
	struct sl_serve serve;
	struct sl_netns_sandbox *sandbox;
	bool sandbox_rules; /* table inet sluice may be in the target */
	/* The container's own links: watched, and their egress dropped
	 * (table netdev sluice, through a socket made in the namespace). */
	struct sl_netns_link_watch *links;
	struct sl_nft *nft_inside;
	bool egress_rules;
	pthread_t watcher;
	bool watching;
	int stop_pipe[2];
};

static void attach_usage(FILE *f)
{
	fputs("usage: sluice attach (--pid PID | --netns PATH) --policy FILE [--audit FILE|-]\n"
	      "                     [--resolver ADDR[:PORT]] [--pool CIDR]\n"
	      "                     [--ca-dir DIR] [--upstream-ca FILE] [--metrics ADDR:PORT]\n"
	      "                     [--observe]\n"
	      "\n"
	      "Fence an existing network namespace (a container's: that of process PID, or the\n"
	      "namespace file PATH) so that it can reach only sluice's gateway, which enforces\n"
	      "the policy, until SIGINT or SIGTERM (or until nothing holds the namespace any\n"
	      "more: PID and every other process in it exited, no bind mount of it); then\n"
	      "remove everything added and put the namespace's routes back. The container's\n"
	      "resolv.conf is not changed: its DNS queries are sent to the gateway's DNS.\n"
	      "Its own interfaces send nothing while attached (raw frames included). Refused:\n"
	      "a namespace of a rootless container, or one where a process holds CAP_NET_ADMIN,\n"
	      "CAP_SYS_ADMIN, CAP_SYS_MODULE or CAP_SYS_PTRACE (each could undo the fence).\n"
	      "--pool is where the veth's addresses come from (default " SL_NETNS_DEFAULT_POOL
	      ").\n"
	      "Hosts whose rules name methods, paths or a credential are inspected: the\n"
	      "container must trust sluice's CA (printed at start; --ca-dir DIR keeps one across\n"
	      "runs, so that it can be built into the image). --upstream-ca FILE verifies\n"
	      "origins against FILE instead of the system's trust store.\n"
	      "--metrics ADDR:PORT serves Prometheus metrics on the host's ADDR:PORT (not a\n"
	      "wildcard, which would include the container's side; docs/metrics.md).\n"
	      "--observe lets through what the rules deny, audited as observe-deny (the fence,\n"
	      "SSRF refusals and credential rules still hold; docs/observe.md).\n"
	      "Exits 0 after a clean detach, 1 for an invalid policy, 2 for a bad command line\n"
	      "or target, 4 when the system refused.\n",
	      f);
}

static int parse_args(struct attach *a, int argc, char **argv)
{
	enum {
		O_PID = 256, O_NETNS, O_POLICY, O_AUDIT, O_RESOLVER, O_POOL, O_UPCA, O_CADIR,
		O_METRICS, O_OBSERVE
	};
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, O_PID},
	    {"netns", required_argument, NULL, O_NETNS},
	    {"policy", required_argument, NULL, O_POLICY},
	    {"audit", required_argument, NULL, O_AUDIT},
	    {"resolver", required_argument, NULL, O_RESOLVER},
	    {"pool", required_argument, NULL, O_POOL},
	    {"upstream-ca", required_argument, NULL, O_UPCA},
	    {"ca-dir", required_argument, NULL, O_CADIR},
	    {"metrics", required_argument, NULL, O_METRICS},
	    {"observe", no_argument, NULL, O_OBSERVE},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char **slot;
	char err[256];
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
		case O_METRICS:
			slot = &a->metrics;
			break;
		case O_OBSERVE:
			a->observe = true;
			continue;
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
	if (a->metrics && sl_gw_metrics_addr_check(a->metrics, true, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
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
/* Could anything in the target undo the fence? Asked last before the
 * container is touched (after the command line and its files, whose
 * errors come first), and only read: /proc and the namespace file. */
static int check_fenceable(struct attach *a)
{
	char err[768];
	int r;

	r = sl_netns_check_fenceable(a->netns_fd, a->pid_arg ? a->pid : 0, err, sizeof(err));
	if (r < 0 && a->netns)
		fprintf(stderr, PROG ": %s: refused: %s\n", a->netns, err);
	else if (r < 0)
		fprintf(stderr, PROG ": --pid %s: refused: %s\n", a->pid_arg, err);
	return r;
}

static int load_policy(struct attach *a)
{
	return sl_cli_policy_load(PROG, a->policy_path, NULL, &a->policy);
}

static int open_nft_inside(void *userdata)
{
	return sl_nft_open(userdata, NULL, 0);
}

/* Drop every frame the container's own links would send (all but lo and
 * our veth), replacing what was there: one batch. */
static int fence_links(struct attach *a, char *err, size_t errlen)
{
	char names[SL_NETNS_MAX_LINKS][IFNAMSIZ];
	const char *devs[SL_NETNS_MAX_LINKS];
	struct sl_nft_egress cfg = {.devices = devs};
	int r;

	r = sl_netns_link_watch_list(a->links, names, ELEMENTSOF(names), &cfg.n_devices, err,
				     errlen);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cfg.n_devices; i++)
		devs[i] = names[i];
	a->egress_rules = true;
	r = sl_nft_egress_apply(a->nft_inside, &cfg, err, errlen);
	if (r == -EOPNOTSUPP && cfg.n_devices) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l,
			 "; refusing: the namespace has interfaces of its own (%s%s), whose raw "
			 "frames would get past the fence",
			 names[0], cfg.n_devices > 1 ? ", ..." : "");
	}
	return r == -EOPNOTSUPP && !cfg.n_devices ? 0 : r;
}

/* Links can be added to the namespace, or renamed, while attached (by its
 * owner: no process in it has CAP_NET_ADMIN). Each change is fenced as
 * soon as rtnetlink reports it; between the two a new link may send a
 * few frames (it comes up only when someone brings it up). */
static void *watch_links(void *userdata)
{
	struct attach *a = userdata;
	struct pollfd p[2] = {
	    {.fd = sl_netns_link_watch_fd(a->links), .events = POLLIN},
	    {.fd = a->stop_pipe[0], .events = POLLIN},
	};
	char err[512];

	for (;;) {
		int r = poll(p, ELEMENTSOF(p), -1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || p[1].revents)
			break;
		r = sl_netns_link_watch_read(a->links);
		/* A link named while we listed may be gone by the time the
		 * batch arrives (older kernels refuse a missing device). */
		for (int i = 0; r > 0 && i < 3; i++) {
			r = fence_links(a, err, sizeof(err));
			if (r != -ENOENT && r != -ENODEV)
				break;
		}
		if (r < 0) {
			fprintf(stderr,
				PROG ": WARNING: a link of the namespace may not be fenced: %s; "
				     "links are no longer watched\n",
				err);
			break;
		}
	}
	return NULL;
}

static int links_start(struct attach *a, char *err, size_t errlen)
{
	int r;

	r = sl_netns_link_watch_open(a->sandbox, &a->links, err, errlen);
	if (r < 0)
		return r;
	r = sl_netns_sandbox_run_inside(a->sandbox, open_nft_inside, &a->nft_inside);
	if (r < 0)
		return sl_err(err, errlen, r, "nftables in the namespace: %s", strerror(-r));
	r = fence_links(a, err, errlen);
	if (r < 0)
		return r;
	if (pipe2(a->stop_pipe, O_CLOEXEC) < 0)
		return sl_err(err, errlen, negative_errno(), "watching links: %m");
	r = -pthread_create(&a->watcher, NULL, watch_links, a);
	if (r < 0)
		return sl_err(err, errlen, r, "watching links: %s", strerror(-r));
	a->watching = true;
	return 0;
}

static void links_stop(struct attach *a)
{
	if (a->watching) {
		(void)!write(a->stop_pipe[1], "x", 1);
		pthread_join(a->watcher, NULL);
		a->watching = false;
	}
	sl_closep(&a->stop_pipe[0]);
	sl_closep(&a->stop_pipe[1]);
}

static int setup(struct attach *a, char *err, size_t errlen)
{
	struct sl_netns_sandbox_config cfg = {0};
	struct in_addr gw;
	char ip[INET_ADDRSTRLEN];
	int r;

	if (sl_netns_pool_parse(a->pool ? a->pool : SL_NETNS_DEFAULT_POOL, &cfg.pool) < 0)
		return -EINVAL; /* cannot happen: parse_args checked it */
	a->serve.pool = cfg.pool;
	r = sl_netns_sandbox_attach(&cfg, a->netns_fd, &a->sandbox, err, errlen);
	if (r < 0)
		return r;
	a->sandbox_rules = true;
	a->serve.fence_policy = a->policy; /* its ports are captured */
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
	a->serve.metrics = a->metrics;
	/* The gateway's process is forked before the link watcher's thread
	 * exists: nothing another thread holds is half-taken in it. The veth
	 * is still down: nothing reaches either yet. */
	r = sl_serve_gateway_start(&a->serve, a->sandbox, &a->policy, a->audit, a->resolver, err,
				   errlen);
	if (r < 0)
		return r;
	r = links_start(a, err, errlen);
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
	links_stop(a);
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
		/* The routes are back: the container's links may send again. */
		if (a->egress_rules && a->nft_inside) {
			r = sl_nft_egress_delete(a->nft_inside, err, sizeof(err));
			if (r < 0 && r != -ENOENT) {
				fprintf(stderr, PROG ": removing table netdev %s: %s\n",
					SL_NFT_EGRESS_TABLE, err);
				clean = false;
			}
		}
	}
	sl_nft_close(TAKE_PTR(a->nft_inside));
	sl_netns_link_watch_free(TAKE_PTR(a->links));
	sl_serve_rules_remove(&a->serve);
	sl_netns_sandbox_free(TAKE_PTR(a->sandbox));
	sl_policy_free(TAKE_PTR(a->policy));
	sl_tls_setup_done(&a->tls);
	sl_closep(&a->netns_fd);
	sl_closep(&a->pidfd);
	return clean;
}

/* Whether the namespace can be left: nothing but us holds it any more.
 * With --pid, that process is watched first (cheaply, through its pidfd);
 * once it is gone, or with --netns, the namespace itself: a pause
 * container, a sibling sharing it (--network container:), a child the
 * process forked, a bind mount or an open file keep it, and so the fence,
 * alive. Polled once a tick: one pass over /proc, which stops at the first
 * holder (the first process in it, while the container runs). */
static bool namespace_done(struct attach *a, bool *pid_exited)
{
	char what[128];
	int r;

	if (a->pidfd >= 0 && !*pid_exited &&
	    poll(&(struct pollfd){.fd = a->pidfd, .events = POLLIN}, 1, 0) > 0) {
		*pid_exited = true;
		fprintf(stderr,
			PROG ": process %d exited; the fence stays until nothing holds the "
			     "namespace\n",
			(int)a->pid);
	}
	if (a->pidfd >= 0 && !*pid_exited)
		return false;
	r = sl_netns_in_use(a->netns_fd, what, sizeof(what));
	if (r != 0)
		return false; /* held, or cannot tell: stay */
	fprintf(stderr, PROG ": nothing holds the namespace any more; detaching\n");
	return true;
}

/* The gateway's process died: nothing serves the container, which stays
 * fenced (the port is closed) until the teardown has put its routes back.
 * false then: attach ends, as after a failure. */
static bool gateway_alive(struct attach *a)
{
	char how[64];

	if (sl_serve_gateway_event(&a->serve) != SL_SERVE_GATEWAY_DIED)
		return true; /* an audit failure: it said so, and denies all */
	sl_serve_gateway_death(&a->serve, how, sizeof(how));
	fprintf(stderr, PROG ": the gateway (pid %d) died (%s): detaching\n", (int)a->serve.gw_pid,
		how);
	return false;
}

/* Until SIGINT or SIGTERM, or until the namespace is left to us alone (true),
 * or until the gateway dies (false). */
static bool wait_for_the_end(struct attach *a, const sigset_t *set)
{
	_cleanup_close_ int sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	bool pid_exited = false;

	if (sfd < 0) {
		fprintf(stderr, PROG ": signalfd: %m; detaching\n");
		return false;
	}
	for (;;) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
				      {.fd = sl_serve_gateway_fd(&a->serve), .events = POLLIN}};
		struct signalfd_siginfo si;
		int sig = 0;

		/* The tick: namespace_done() is polled once a second. */
		if (poll(p, ELEMENTSOF(p), 1000) < 0 && errno != EINTR)
			return false;
		if (p[1].revents && !gateway_alive(a))
			return false;
		if ((p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			sig = (int)si.ssi_signo;
		if (sig == SIGINT || sig == SIGTERM)
			return true;
		if (namespace_done(a, &pid_exited))
			return true;
		if (sig == SIGHUP && sl_cli_hup_is_request((int)si.ssi_code))
			sl_serve_reload(&a->serve, a->policy_path);
		else if (sig == SIGHUP)
			fprintf(stderr, PROG ": SIGHUP from the kernel (a terminal hangup): not a "
					     "reload; send SIGHUP with kill(1) to reload\n");
	}
}

int sl_cmd_attach(int argc, char **argv)
{
	struct attach a = {
	    .pidfd = -1,
	    .netns_fd = -1,
	    .stop_pipe = {-1, -1},
	    .serve = SL_SERVE_INIT(PROG)};
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
	sl_cli_observe_force(a.policy, a.observe);
	a.serve.observe = a.observe;
	sl_cli_observe_banner(stderr, PROG, a.policy);
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

	if (check_fenceable(&a) < 0) {
		teardown(&a);
		return SL_EXIT_USAGE;
	}

	/* Blocked before the link watcher's thread exists, so that it
	 * inherits the mask and the signals come to the signalfd here. */
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
	r = wait_for_the_end(&a, &set) ? SL_EXIT_OK : SL_EXIT_FAILURE;
	return teardown(&a) ? r : SL_EXIT_FAILURE;
}
