/* SPDX-License-Identifier: MIT */
/*
 * sluice run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N]
 *            [--cpu PERCENT] [--pool CIDR] -- CMD [ARG...]
 *
 * Runs CMD in a sandbox whose packets can reach only the gateway's ports on
 * the host end of its veth, and exits with CMD's status (128+N when a
 * signal N killed it). The gateway (an explicit proxy deciding by the
 * policy; without --policy it denies everything) runs in a thread of its
 * own on that address, with its own libuv loop, while this thread
 * supervises the command; transparent capture and DNS are not served yet,
 * so connections that go around the proxy are refused.
 *
 * Order matters: the host's rules, then the sandbox's rules, and only then
 * the command, so it never runs a moment unfenced. Teardown is the reverse
 * and happens on every way out of here: normal exit, a forwarded signal,
 * or a setup step that failed halfway.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "gateway.h"
#include "macro.h"
#include "netns.h"
#include "nft.h"
#include "policy.h"

/* Like env(1) and container runtimes: 125 when sluice itself failed, so
 * that it is told apart from the command's own statuses. */
#define RUN_EXIT_SETUP 125

/* The gateway's ports on the host end (DESIGN.md). */
#define PORT_PROXY 3128
#define PORT_CAPTURE 3129
#define PORT_DNS 53
/* The NFLOG group the gateway will read blocked packets from. */
#define RUN_NFLOG_GROUP 7

extern char **environ;

/* Signals sluice takes and hands to the command. Terminal-generated ones
 * reach the command directly (it shares our process group), so only those
 * sent by a process are forwarded: Ctrl-C must not arrive twice. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* The gateway's thread: its own loop, stopped through an async handle. */
struct gw_thread {
	uv_loop_t loop;
	uv_async_t stop;
	uv_thread_t tid;
	bool loop_ready, running;
	struct sl_gw *gw;
	struct sl_gw_resolver *resolver;
	struct sl_audit *audit;
	/* Blocked packets, read from the sandbox's NFLOG group on this loop
	 * (only with an audit log: they go nowhere else). */
	struct sl_nft_nflog *nflog;
	uv_poll_t nflog_poll;
	bool nflog_polling;
	uint64_t nflog_overflows; /* seen, but not yet counted by a gap */
	const char *sandbox_name;
};

struct run {
	struct sl_netns_run_args args;
	struct gw_thread gwt;
	struct sl_policy *policy;
	struct sl_netns_user user;
	struct sl_netns_cgroup *cgroup;
	struct sl_netns_sandbox *sandbox;
	struct sl_nft *nft;
	char host_table[32]; /* the name the host rules were installed under */
	bool host_rules_owned;
	bool host_rules;
	char **env;
};

static void run_usage(FILE *f)
{
	fputs("usage: sluice run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N]\n"
	      "                  [--cpu PERCENT] [--pool CIDR] -- CMD [ARG...]\n"
	      "\n"
	      "Run CMD in a network sandbox that can reach only sluice's gateway, as USER\n"
	      "(default: nobody, or the sudo caller) without capabilities. Without --policy every\n"
	      "egress is denied. --memory takes K, M, G suffixes; --cpu is a percentage of one\n"
	      "CPU. --pool is where sandbox addresses come from (default " SL_NETNS_DEFAULT_POOL
	      ").\n"
	      "Exits with CMD's status, or 128+N if signal N killed it; 125 if sluice failed.\n"
	      "--audit FILE|- writes one JSON line per decision; --resolver ADDR[:PORT] is the\n"
	      "DNS server the gateway asks (default: the host's resolv.conf).\n"
	      "Not supported yet: --upstream-ca (it needs TLS inspection).\n",
	      f);
}

/* ---- Blocked packets reach the audit log ---- */

/* A flood of blocked packets must not hold the loop: this many reads per
 * wakeup, then the other handles get their turn. What the kernel cannot
 * queue meanwhile it drops, and the sequence gaps count that. */
#define NFLOG_READS_PER_WAKEUP 64
/* At the end, what is still queued is read (the command has exited, so
 * every copy it caused is there), up to this many datagrams. */
#define NFLOG_READS_AT_STOP 4096

static const char *proto_name(const struct sl_nft_blocked *b, char *buf, size_t len)
{
	switch (b->proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	default:
		snprintf(buf, len, "%u", b->proto);
		return buf;
	}
}

static void audit_blocked(const struct sl_nft_blocked *b, void *userdata)
{
	struct gw_thread *t = userdata;
	char client[INET6_ADDRSTRLEN + 8], num[4];
	bool ports = b->has_l4 && b->proto != IPPROTO_ICMP && b->proto != IPPROTO_ICMPV6;
	struct sl_audit_record rec = {
	    .ts_ms = sl_audit_now_ms(),
	    .sandbox = t->sandbox_name,
	    .event = "blocked",
	    .client = client,
	    .method = proto_name(b, num, sizeof(num)),
	    .host = b->dst,
	    .port = ports ? b->dport : -1,
	    .status = -1,
	    .decision = "deny",
	    .reason = "blocked-packet",
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = -1,
	};

	if (!ports)
		snprintf(client, sizeof(client), "%s", b->src);
	else if (b->family == AF_INET6)
		snprintf(client, sizeof(client), "[%s]:%u", b->src, b->sport);
	else
		snprintf(client, sizeof(client), "%s:%u", b->src, b->sport);
	(void)sl_audit_write(t->audit, &rec);
}

/* Nothing is dropped silently: what the kernel could not queue for us is
 * audited as a count. An overflow is reported once the next copy's
 * sequence number says how much it cost, or at the end as such. */
static uint64_t audit_losses(struct gw_thread *t, bool final)
{
	struct sl_nft_nflog_losses l;
	char reason[96];
	struct sl_audit_record rec = {
	    .sandbox = t->sandbox_name,
	    .event = "blocked",
	    .port = -1,
	    .status = -1,
	    .decision = "deny",
	    .reason = reason,
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = -1,
	};

	sl_nft_nflog_take_losses(t->nflog, &l);
	t->nflog_overflows += l.overflows;
	if (l.packets)
		snprintf(reason, sizeof(reason), "blocked-packets-lost: %llu",
			 (unsigned long long)l.packets);
	else if (final && t->nflog_overflows)
		snprintf(reason, sizeof(reason), "blocked-packets-lost: unknown");
	else
		return l.overflows;
	t->nflog_overflows = 0;
	rec.ts_ms = sl_audit_now_ms();
	(void)sl_audit_write(t->audit, &rec);
	return l.overflows;
}

static void nflog_poll_cb(uv_poll_t *p, int status, int events)
{
	struct gw_thread *t = container_of(p, struct gw_thread, nflog_poll);
	uint64_t overflows;
	int r;

	r = sl_nft_nflog_read(t->nflog, NFLOG_READS_PER_WAKEUP, audit_blocked, t);
	overflows = audit_losses(t, false);
	/* An overflow sets the socket's error, which libuv reports as
	 * POLLERR (UV_EBADF) and stops the handle. Reading it cleared it:
	 * carry on. Any other error is not transient: stop rather than spin
	 * on it. (libuv's status is a negative errno on Linux too.) */
	if (r >= 0 && status < 0)
		r = r > 0 || overflows ? uv_poll_start(p, UV_READABLE, nflog_poll_cb) : status;
	if (r < 0) {
		fprintf(stderr, "sluice run: reading blocked packets: %s; no longer audited\n",
			strerror(-r));
		uv_poll_stop(p);
	}
}

static void nflog_closed_cb(uv_handle_t *h)
{
	struct gw_thread *t = container_of((uv_poll_t *)h, struct gw_thread, nflog_poll);

	sl_nft_nflog_close(TAKE_PTR(t->nflog));
}

/* Audit what is still queued, then close. Runs on the loop's thread. */
static void blocked_stop(struct gw_thread *t)
{
	if (!t->nflog_polling)
		return;
	t->nflog_polling = false;
	(void)sl_nft_nflog_read(t->nflog, NFLOG_READS_AT_STOP, audit_blocked, t);
	audit_losses(t, true);
	uv_close((uv_handle_t *)&t->nflog_poll, nflog_closed_cb);
}

struct nflog_open {
	struct sl_nft_nflog **ret;
	char *err;
	size_t errlen;
};

static int nflog_open_inside(void *userdata)
{
	struct nflog_open *o = userdata;

	return sl_nft_nflog_open(RUN_NFLOG_GROUP, o->ret, o->err, o->errlen);
}

/* Subscribe to the sandbox's NFLOG group (NFLOG is per namespace, so the
 * socket is made in there; it stays bound to it) and poll it on the
 * gateway's loop. Called after the sandbox's rules are in place. */
static int blocked_start(struct run *r, char *err, size_t errlen)
{
	struct gw_thread *t = &r->gwt;
	struct nflog_open o = {.ret = &t->nflog, .err = err, .errlen = errlen};
	int ret;

	if (!t->audit)
		return 0;
	t->sandbox_name = sl_netns_sandbox_host_ifname(r->sandbox);
	ret = sl_netns_sandbox_run_inside(r->sandbox, nflog_open_inside, &o);
	if (ret < 0)
		return ret;
	ret = uv_poll_init(&t->loop, &t->nflog_poll, sl_nft_nflog_fd(t->nflog));
	if (ret < 0) {
		sl_nft_nflog_close(TAKE_PTR(t->nflog));
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	t->nflog_polling = true;
	ret = uv_poll_start(&t->nflog_poll, UV_READABLE, nflog_poll_cb);
	if (ret < 0) {
		blocked_stop(t);
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	return 0;
}

static void gw_stop_cb(uv_async_t *a)
{
	struct gw_thread *t = a->data;

	blocked_stop(t);
	sl_gw_shutdown(t->gw);
	t->gw = NULL;
	sl_gw_resolver_free(t->resolver);
	t->resolver = NULL;
	uv_close((uv_handle_t *)a, NULL);
}

static void gw_thread_main(void *arg)
{
	struct gw_thread *t = arg;
	sigset_t pipe;

	/* A peer that goes away mid-write must not kill sluice: SIGPIPE from
	 * this thread's writes stays pending here and the write says EPIPE.
	 * (Ignoring it process-wide would be inherited by the command.) */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
}

/* Runs inside the sandbox's namespace: the capture listener on its own
 * loopback, where the redirect rule sends every other TCP connection. */
static int make_capture_socket(void *userdata)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(PORT_CAPTURE),
		.sin_addr = { htonl(INADDR_LOOPBACK) },
	};
	int one = 1, fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return negative_errno();
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 256) < 0) {
		int r = negative_errno();

		close(fd);
		return r;
	}
	*(int *)userdata = fd;
	return 0;
}

/* Transparent capture: a socket made in the sandbox's namespace stays there,
 * and the gateway's loop in ours polls it. When sluice is gone the port is
 * closed and captured connections are refused: fail closed. */
static int capture_start(struct run *r, char *err, size_t errlen)
{
	int fd = -1, ret;

	ret = sl_netns_sandbox_run_inside(r->sandbox, make_capture_socket, &fd);
	if (ret < 0) {
		snprintf(err, errlen, "capture listener in the sandbox: %s", strerror(-ret));
		return ret;
	}
	return sl_gw_listen_capture_fd(r->gwt.gw, fd, err, errlen);
}

/* Serve the proxy on the host end of the veth. The policy is handed over. */
static int gateway_start(struct run *r, char *err, size_t errlen)
{
	struct gw_thread *t = &r->gwt;
	struct sl_gw_config cfg;
	char listen[INET_ADDRSTRLEN + 8], ip[INET_ADDRSTRLEN];
	struct in_addr host = sl_netns_sandbox_host_addr(r->sandbox);
	int ret;

	if (uv_loop_init(&t->loop) < 0) {
		snprintf(err, errlen, "gateway: cannot create its event loop");
		return -ENOMEM;
	}
	t->loop_ready = true;
	if (r->args.audit) {
		ret = sl_audit_open(r->args.audit, &t->audit);
		if (ret < 0) {
			snprintf(err, errlen, "--audit '%s': %s", r->args.audit, strerror(-ret));
			return ret;
		}
	}
	ret = sl_gw_resolver_new(&t->loop, r->args.resolver, &t->resolver, err, errlen);
	if (ret < 0)
		return ret;
	sl_gw_config_defaults(&cfg);
	cfg.sandbox = sl_netns_sandbox_host_ifname(r->sandbox);
	ret = sl_gw_new(&t->loop, &cfg, TAKE_PTR(r->policy), t->resolver, t->audit, &t->gw);
	if (ret < 0) {
		snprintf(err, errlen, "gateway: %s", strerror(-ret));
		return ret;
	}
	inet_ntop(AF_INET, &host, ip, sizeof(ip));
	snprintf(listen, sizeof(listen), "%s:%u", ip, PORT_PROXY);
	ret = sl_gw_listen_proxy(t->gw, listen, err, errlen);
	if (ret < 0)
		return ret;
	snprintf(listen, sizeof(listen), "%s:%u", ip, PORT_DNS);
	ret = sl_gw_listen_dns(t->gw, listen, err, errlen);
	if (ret < 0)
		return ret;
	ret = capture_start(r, err, errlen);
	if (ret < 0)
		return ret;
	ret = blocked_start(r, err, errlen);
	if (ret < 0)
		return ret;
	uv_async_init(&t->loop, &t->stop, gw_stop_cb);
	t->stop.data = t;
	ret = uv_thread_create(&t->tid, gw_thread_main, t);
	if (ret < 0) {
		snprintf(err, errlen, "gateway: cannot start its thread: %s", uv_strerror(ret));
		/* gateway_stop runs the loop to tidy up: no handle may stay
		 * active or that would never return. */
		blocked_stop(t);
		uv_close((uv_handle_t *)&t->stop, NULL);
		return ret;
	}
	t->running = true;
	return 0;
}

/* Close every connection (each writes its audit record) and the loop. */
static void gateway_stop(struct run *r)
{
	struct gw_thread *t = &r->gwt;

	if (t->running) {
		uv_async_send(&t->stop);
		uv_thread_join(&t->tid);
		t->running = false;
	} else if (t->loop_ready) {
		/* Setup failed before the thread started: tidy up here. */
		if (t->gw)
			sl_gw_shutdown(t->gw);
		if (t->resolver)
			sl_gw_resolver_free(t->resolver);
		uv_run(&t->loop, UV_RUN_DEFAULT);
	}
	if (t->loop_ready) {
		uv_loop_close(&t->loop);
		t->loop_ready = false;
	}
	sl_audit_close(TAKE_PTR(t->audit));
}

static void run_teardown(struct run *r)
{
	char err[512];

	gateway_stop(r);

	/* The veth goes first: the sandbox is cut off before anything else. */
	sl_netns_sandbox_free(TAKE_PTR(r->sandbox));
	if (r->host_rules && !r->host_rules_owned && r->nft)
		(void)sl_nft_host_delete(r->nft, r->host_table, err, sizeof(err));
	/* Owned tables vanish with the socket. */
	sl_nft_close(TAKE_PTR(r->nft));
	sl_netns_cgroup_free(TAKE_PTR(r->cgroup));
	sl_netns_env_free(TAKE_PTR(r->env));
	sl_policy_free(TAKE_PTR(r->policy));
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

static int apply_sandbox_rules(void *userdata)
{
	const struct sl_netns_sandbox *sb = ((void **)userdata)[0];
	char *err = ((void **)userdata)[1];
	struct sl_nft_sandbox cfg = {
	    .gateway = sl_netns_sandbox_host_addr(sb),
	    .tcp_ports = {PORT_PROXY, PORT_DNS},
	    .n_tcp_ports = 2,
	    .udp_ports = {PORT_DNS},
	    .n_udp_ports = 1,
	    .nflog_group = RUN_NFLOG_GROUP,
	    .capture_port = PORT_CAPTURE,
	    .dns_port = PORT_DNS,
	};

	return sl_nft_sandbox_apply(&cfg, err, 512);
}

/* The fence, both sides of the veth. */
static int install_rules(struct run *r, char *err, size_t errlen)
{
	const char *ifname = sl_netns_sandbox_host_ifname(r->sandbox);
	struct sl_nft_host host = {
	    .name = ifname,
	    .ifname = ifname,
	    .addr = sl_netns_sandbox_host_addr(r->sandbox),
	    .tcp_ports = {PORT_PROXY, PORT_DNS},
	    .n_tcp_ports = 2,
	    .udp_ports = {PORT_DNS},
	    .n_udp_ports = 1,
	};
	void *inside[2] = {r->sandbox, err};
	int ret;

	if (errlen < 512)
		return -EINVAL;
	ret = sl_nft_open(&r->nft, err, errlen);
	if (ret < 0)
		return ret;
	ret = sl_nft_host_apply(r->nft, &host, &r->host_rules_owned, err, errlen);
	if (ret < 0)
		return ret;
	r->host_rules = true;
	snprintf(r->host_table, sizeof(r->host_table), "%s", ifname);
	return sl_netns_sandbox_run_inside(r->sandbox, apply_sandbox_rules, inside);
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
	ret = install_rules(r, err, sizeof(err));
	if (ret < 0)
		goto fail;
	ret = gateway_start(r, err, sizeof(err));
	if (ret < 0)
		goto fail;
	ret = sl_netns_env_build(environ, sl_netns_sandbox_host_addr(r->sandbox), PORT_PROXY,
				 &r->user, &r->env);
	if (ret < 0) {
		snprintf(err, sizeof(err), "building the environment: %s", strerror(-ret));
		goto fail;
	}
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

/* Wait for the command, forwarding signals; its wait status. */
static int supervise(pid_t child, const sigset_t *set)
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
	struct run r = {0};
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
	if (r.args.upstream_ca) {
		fprintf(stderr, "sluice run: --upstream-ca is not supported yet (it needs TLS "
				"inspection)\n");
		return SL_EXIT_USAGE;
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

	/* Block before the child exists, so no signal meant for it is lost;
	 * the child gets our original mask back before it executes. */
	sigemptyset(&set);
	for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
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
	ret = exit_status(supervise(child, &set));
	run_teardown(&r);
	return ret;
}
