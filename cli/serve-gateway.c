/* SPDX-License-Identifier: MIT */
/*
 * The gateway's process of `sluice run` and `sluice attach` (forked by
 * sandbox-serve.c): it sets up what needs no byte of the sandbox's (the
 * sandbox's CA, when asked, its loop, the resolver, the gateway with its
 * listeners, TLS and secrets),
 * confines itself for good (confine.h: a uid of its own, no capability,
 * no_new_privs, chrooted into an empty directory, non-dumpable, a seccomp
 * allowlist), and only then serves: the proxy and DNS on the host end, the
 * capture listener inside, the blocked packets of the sandbox's NFLOG group
 * into the audit log. Everything it says to the supervisor is a fixed-size
 * message (serve-internal.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "control.h"
#include "gw-process.h"
#include "macro.h"
#include "serve-internal.h"
#include "trace.h"

/* A flood of blocked packets must not hold the loop: this many reads per
 * wakeup, then the other handles get their turn. What the kernel cannot
 * queue meanwhile it drops, and the sequence gaps count that. */
#define NFLOG_READS_PER_WAKEUP 64
/* At the end, what is still queued is read (the command has exited, so
 * every copy it caused is there), up to this many datagrams. */
#define NFLOG_READS_AT_STOP 4096
/* How often what the rate limit kept out of NFLOG is audited (as a count,
 * which the supervisor reads: it needs CAP_NET_ADMIN). */
#define UNLOGGED_EVERY_MS 5000

struct gw_proc {
	const char *prog;
	uv_loop_t loop;
	int events, commands;
	uv_poll_t commands_poll;
	struct sl_gw *gw;
	struct sl_gw_resolver *resolver;
	struct sl_audit *audit;
	const char *policy_path;
	struct sl_nft_nflog *nflog;
	uv_poll_t nflog_poll;
	bool nflog_polling;
	uint64_t nflog_overflows; /* seen, but not yet counted by a gap */
	const char *sandbox_name;
	uv_timer_t unlogged_timer;
	bool unlogged_timer_on;
	uint64_t unlogged_reported;
	bool stopping;
	struct sl_gw_control *ctl; /* the control socket's server; NULL: none */
};

static void tell(struct gw_proc *g, uint32_t type, int err, uint64_t value)
{
	struct sl_serve_msg m = {.type = type, .err = err, .value = value};

	if (sl_fd_send(g->events, &m, sizeof(m), -1) < 0 && !g->stopping)
		fprintf(stderr, "%s: gateway: cannot tell the supervisor: %m\n", g->prog);
}

/* ---- Blocked packets reach the audit log ---- */

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
	struct gw_proc *g = userdata;
	char client[INET6_ADDRSTRLEN + 8], num[4];
	bool ports = b->has_l4 && b->proto != IPPROTO_ICMP && b->proto != IPPROTO_ICMPV6;
	struct sl_audit_record rec = {
	    .ts_ms = sl_audit_now_ms(),
	    .sandbox = g->sandbox_name,
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
	(void)sl_audit_write(g->audit, &rec);
	if (g->gw)
		(void)sl_gw_audit_ok(g->gw);
}

/* Nothing is dropped silently: what the kernel could not queue for us is
 * audited as a count. An overflow is reported once the next copy's
 * sequence number says how much it cost, or at the end as such. */
static uint64_t audit_losses(struct gw_proc *g, bool final)
{
	struct sl_nft_nflog_losses l;

	sl_nft_nflog_take_losses(g->nflog, &l);
	g->nflog_overflows += l.overflows;
	if (l.packets)
		(void)sl_audit_write_summary(g->audit, g->sandbox_name, "blocked", -1,
					     "blocked-packets-lost: %llu",
					     (unsigned long long)l.packets);
	else if (final && g->nflog_overflows)
		(void)sl_audit_write_summary(g->audit, g->sandbox_name, "blocked", -1,
					     "blocked-packets-lost: unknown");
	else
		return l.overflows;
	g->nflog_overflows = 0;
	if (g->gw)
		(void)sl_gw_audit_ok(g->gw);
	return l.overflows;
}

/* The sandbox ruleset copies blocked packets to NFLOG under a rate limit
 * (nft.h); the rest are rejected all the same and only counted. The
 * supervisor reads the counters (blocked first, then logged: the count
 * can only lag) and sends how many were not logged so far; their number
 * since the last report is audited as one record, so the log says how
 * much it does not show: blocked = records + lost + not logged. The
 * supervisor's number is only ever a count: it cannot write records. */
static void audit_unlogged(struct gw_proc *g, uint64_t unlogged)
{
	if (!g->audit || unlogged <= g->unlogged_reported)
		return;
	(void)sl_audit_write_summary(g->audit, g->sandbox_name, "blocked", -1,
				     "blocked-packets-not-logged: %llu (rate limit)",
				     (unsigned long long)(unlogged - g->unlogged_reported));
	g->unlogged_reported = unlogged;
	if (g->gw)
		(void)sl_gw_audit_ok(g->gw);
}

static void unlogged_timer_cb(uv_timer_t *tm)
{
	tell(container_of(tm, struct gw_proc, unlogged_timer), SL_SERVE_MSG_COUNTERS, 0, 0);
}

static void nflog_poll_cb(uv_poll_t *p, int status, int events)
{
	struct gw_proc *g = container_of(p, struct gw_proc, nflog_poll);
	uint64_t overflows;
	int r;

	(void)events;
	r = sl_nft_nflog_read(g->nflog, NFLOG_READS_PER_WAKEUP, audit_blocked, g);
	overflows = audit_losses(g, false);
	/* An overflow sets the socket's error, which libuv reports as
	 * POLLERR (UV_EBADF) and stops the handle. Reading it cleared it:
	 * carry on. Any other error is not transient: stop rather than spin
	 * on it. (libuv's status is a negative errno on Linux too.) */
	if (r >= 0 && status < 0)
		r = r > 0 || overflows ? uv_poll_start(p, UV_READABLE, nflog_poll_cb) : status;
	if (r < 0) {
		fprintf(stderr, "%s: reading blocked packets: %s; no longer audited\n", g->prog,
			strerror(-r));
		uv_poll_stop(p);
	}
}

static void nflog_closed_cb(uv_handle_t *h)
{
	struct gw_proc *g = container_of((uv_poll_t *)h, struct gw_proc, nflog_poll);

	sl_nft_nflog_close(TAKE_PTR(g->nflog));
}

/* Audit what is still queued, then close. */
static void blocked_stop(struct gw_proc *g, uint64_t unlogged)
{
	if (!g->nflog_polling)
		return;
	g->nflog_polling = false;
	(void)sl_nft_nflog_read(g->nflog, NFLOG_READS_AT_STOP, audit_blocked, g);
	audit_losses(g, true);
	uv_close((uv_handle_t *)&g->nflog_poll, nflog_closed_cb);
	if (g->unlogged_timer_on) {
		g->unlogged_timer_on = false;
		uv_timer_stop(&g->unlogged_timer);
		uv_close((uv_handle_t *)&g->unlogged_timer, NULL);
	}
	audit_unlogged(g, unlogged);
}

static int blocked_start(struct gw_proc *g, char *err, size_t errlen)
{
	int ret;

	if (!g->nflog)
		return 0;
	ret = uv_poll_init(&g->loop, &g->nflog_poll, sl_nft_nflog_fd(g->nflog));
	if (ret < 0) {
		sl_nft_nflog_close(TAKE_PTR(g->nflog));
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	g->nflog_polling = true;
	uv_timer_init(&g->loop, &g->unlogged_timer);
	g->unlogged_timer_on = true;
	uv_timer_start(&g->unlogged_timer, unlogged_timer_cb, UNLOGGED_EVERY_MS, UNLOGGED_EVERY_MS);
	ret = uv_poll_start(&g->nflog_poll, UV_READABLE, nflog_poll_cb);
	if (ret < 0) {
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	return 0;
}

/* ---- The supervisor's commands ---- */

/* The policy file's bytes, as the supervisor read and checked them, from
 * the memfd it passed; parsed here again (the supervisor's parse stays
 * there), messages naming the file. */
static int reload_from(struct gw_proc *g, int fd)
{
	_cleanup_free_ char *buf = NULL;
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	struct stat st;
	size_t have = 0;
	int r;

	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (st.st_size < 0 || (uintmax_t)st.st_size > SL_POLICY_MAX_BYTES)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	/* From where the supervisor left the offset, its start: read is
	 * what the filter allows (neither pread nor lseek). */
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? negative_errno() : -EIO;
		have += (size_t)n;
	}
	r = sl_policy_load_buffer(g->policy_path, buf, have, &p, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.msgs[i]);
	sl_diags_clear(&d);
	if (r < 0)
		return r;
	sl_gw_set_policy(g->gw, p);
	return 0;
}

static void stop(struct gw_proc *g, uint64_t unlogged)
{
	if (g->stopping)
		return;
	g->stopping = true;
	sl_gw_control_stop(TAKE_PTR(g->ctl));
	uv_close((uv_handle_t *)&g->commands_poll, NULL);
	blocked_stop(g, unlogged);
	sl_gw_shutdown(TAKE_PTR(g->gw));
	sl_gw_resolver_free(TAKE_PTR(g->resolver));
}

static void commands_cb(uv_poll_t *p, int status, int events)
{
	struct gw_proc *g = container_of(p, struct gw_proc, commands_poll);
	struct sl_serve_msg_failed f;
	struct sl_serve_msg m;
	int fd = -1, r;
	ssize_t n;

	(void)status;
	(void)events;
	/* Each message is read whole at its own size: a CTL_RELOADED's is
	 * the one with a text. */
	n = recv(g->commands, &f, sizeof(f), MSG_PEEK | MSG_DONTWAIT);
	n = sl_fd_recv(g->commands, &f, n == (ssize_t)sizeof(f) ? sizeof(f) : sizeof(m), &fd);
	if (n == -EAGAIN)
		return;
	m = f.m;
	if (n == (ssize_t)sizeof(f) && m.type == SL_SERVE_MSG_CTL_RELOADED) {
		/* What the supervisor's reload said, for `sluice reload`. */
		f.text[sizeof(f.text) - 1] = '\0';
		sl_gw_control_reloaded(g->ctl, m.err == 0, f.text);
		sl_closep(&fd);
		return;
	}
	if (n != (ssize_t)sizeof(m)) {
		/* The supervisor is gone (EOF): so is the sandbox's fence
		 * keeper; serve nothing more. */
		sl_closep(&fd);
		stop(g, 0);
		return;
	}
	switch (m.type) {
	case SL_SERVE_MSG_RELOAD:
		r = fd >= 0 ? reload_from(g, fd) : -EBADF;
		m = (struct sl_serve_msg){
		    .type = SL_SERVE_MSG_RELOADED, .err = r, .value = m.value};
		if (sl_fd_send(g->commands, &m, sizeof(m), -1) < 0)
			fprintf(stderr, "%s: gateway: cannot answer the supervisor: %m\n", g->prog);
		break;
	case SL_SERVE_MSG_UNLOGGED:
		audit_unlogged(g, m.value);
		break;
	case SL_SERVE_MSG_STOP:
		stop(g, m.value);
		break;
	default:
		break;
	}
	sl_closep(&fd);
}

/* ---- Set up, confine, serve ---- */


static void audit_failed(void *data, int err)
{
	tell(data, SL_SERVE_MSG_AUDIT_FAILED, err, 0);
}

static _Noreturn void fail(struct gw_proc *g, const char *text)
{
	struct sl_serve_msg_failed f = {.m = {.type = SL_SERVE_MSG_FAILED}};

	snprintf(f.text, sizeof(f.text), "%s", text);
	if (sl_fd_send(g->events, &f, sizeof(f), -1) < 0)
		fprintf(stderr, "%s: %s\n", g->prog, text);
	_exit(1);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Nothing of the supervisor's stays open here (its netlink sockets, the
 * sandbox's namespace, the pty, the uid locks): only the kept fds, stdout
 * and stderr; stdin is /dev/null, so the operator's terminal is not read. */
static int close_others(const int *keep, size_t n_keep)
{
	int sorted[8], next = 3, null;
	size_t i, n = 0;

	for (i = 0; i < n_keep && n < ELEMENTSOF(sorted); i++)
		if (keep[i] >= 3)
			sorted[n++] = keep[i];
	qsort(sorted, n, sizeof(int), cmp_int);
	for (i = 0; i < n; i++) {
		if (sorted[i] > next && close_range((unsigned)next, (unsigned)sorted[i] - 1, 0) < 0)
			return negative_errno();
		next = sorted[i] + 1;
	}
	if (close_range((unsigned)next, ~0u, 0) < 0)
		return negative_errno();
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return negative_errno();
	if (null != STDIN_FILENO && dup2(null, STDIN_FILENO) < 0) {
		int r = negative_errno();

		close(null);
		return r;
	}
	if (null != STDIN_FILENO)
		close(null);
	return sl_cli_gateway_stdio();
}

/* The secrets' pages were locked in the supervisor; locks are not
 * inherited by fork (MADV_DONTDUMP is: a mark on the mapping). And a
 * secret read from sluice's environment is still in this process's copy
 * of it: wiped here, where nothing reads the environment any more. */
static void secrets_settle(const struct sl_tls_setup *tls)
{
	for (size_t i = 0; tls && i < tls->n_secrets; i++) {
		const struct sl_secret_value *v = tls->secrets[i].v;

		/* The system call itself: the sanitizers' runtime makes
		 * mlock() a no-op (for its shadow's sake), and the pages
		 * must be locked in that build too. */
		(void)syscall(SYS_mlock, v, v->map_len);
	}
	/* All of it, not only the policy's secrets: the operator's other
	 * tokens are in run's environment too, and the gateway needs none. */
	sl_cli_gateway_wipe_environ();
}

/* `sluice reload` on the control socket: the supervisor reads the
 * operator's file as on SIGHUP; all the gateway can ask is that. */
static void ask_reload(void *data)
{
	tell(data, SL_SERVE_MSG_CTL_RELOAD, 0, 0);
}

static void control_start(struct gw_proc *g, struct sl_serve_child *c)
{
	struct sl_gw_control_cfg k = {
	    .name = c->cfg.sandbox,
	    /* run without --policy denies everything: no file to name. */
	    .policy_path = g->policy_path && strcmp(g->policy_path, "(deny all)") ? g->policy_path
										   : NULL,
	    .pid = (long)getppid(),
	    .gateway_pid = (long)getpid(),
	    .started_s = (uint64_t)time(NULL),
	    .reload = ask_reload,
	    .data = g,
	};
	char err[128];
	int r;

	if (c->ctl_fd < 0)
		return;
	r = sl_gw_control_start(g->gw, c->ctl_fd, &k, &g->ctl);
	if (r < 0) {
		snprintf(err, sizeof(err), "gateway: the control socket: %s", strerror(-r));
		fail(g, err);
	}
}

/* The sandbox's CA, when the supervisor asked for it: made here, so its key
 * is only ever in this process; its certificate goes to the supervisor
 * first thing, for the bundle it writes while this process sets up. */
static void make_ca(struct gw_proc *g, struct sl_serve_child *c)
{
	struct sl_serve_msg_ca m = {.m = {.type = SL_SERVE_MSG_CA}};
	char why[384], err[480];
	const char *pem;
	size_t len;

	if (!c->make_ca || !c->tls)
		return;
	if (sl_ca_new(c->make_ca, SL_LEAF_CACHE, &c->tls->ca, why, sizeof(why)) < 0) {
		snprintf(err, sizeof(err), "gateway: making the sandbox's CA: %s", why);
		fail(g, err);
	}
	pem = sl_ca_cert_pem(c->tls->ca);
	len = strlen(pem);
	if (len > sizeof(m.pem))
		fail(g, "gateway: the sandbox's CA certificate is longer than its message");
	memcpy(m.pem, pem, len);
	m.m.value = len;
	if (sl_fd_send(g->events, &m, sizeof(m), -1) < 0)
		fail(g, "gateway: cannot hand the CA certificate to the supervisor");
	sl_trace("gw: CA made");
}

static void setup(struct gw_proc *g, struct sl_serve_child *c)
{
	char err[480], why[400];
	int r;

	if (uv_loop_init(&g->loop) < 0)
		fail(g, "gateway: cannot create its event loop");
	r = sl_gw_reserve_fds(c->cfg.max_connections, why, sizeof(why));
	if (r < 0) {
		snprintf(err, sizeof(err), "gateway: %s", why);
		fail(g, err);
	}
	sl_trace("gw: loop made");
	if (sl_gw_resolver_new(&g->loop, c->resolver, &g->resolver, err, sizeof(err)) < 0)
		fail(g, err);
	sl_trace("gw: resolver made");
	c->cfg.audit_failed = audit_failed;
	c->cfg.audit_failed_data = g;
	r = sl_gw_new(&g->loop, &c->cfg, TAKE_PTR(c->policy), g->resolver, g->audit, &g->gw);
	if (r < 0) {
		snprintf(err, sizeof(err), "gateway: %s", strerror(-r));
		fail(g, err);
	}
	sl_trace("gw: gateway made");
	/* The system's store whole now: once confined, nothing can be opened. */
	if (c->tls && sl_tls_apply(c->tls, g->gw, c->upstream_ca, err,
				   sizeof(err)) < 0)
		fail(g, err);
	sl_trace("gw: tls applied");
	if (sl_gw_listen_proxy(g->gw, c->listen_proxy, err, sizeof(err)) < 0 ||
	    sl_gw_listen_dns(g->gw, c->listen_dns, err, sizeof(err)) < 0 ||
	    sl_gw_listen_capture_fd(g->gw, c->capture_fd, err, sizeof(err)) < 0 ||
	    (c->listen_metrics &&
	     sl_gw_listen_metrics(g->gw, c->listen_metrics, err, sizeof(err)) < 0) ||
	    blocked_start(g, err, sizeof(err)) < 0)
		fail(g, err);
	control_start(g, c);
	uv_poll_init(&g->loop, &g->commands_poll, g->commands);
	uv_poll_start(&g->commands_poll, UV_READABLE | UV_DISCONNECT, commands_cb);
}

_Noreturn void sl_serve_child_main(struct sl_serve_child *c)
{
	struct gw_proc g = {.prog = c->prog,
			    .events = c->events,
			    .commands = c->commands,
			    .audit = c->audit,
			    .nflog = c->nflog,
			    .sandbox_name = c->cfg.sandbox,
			    /* Its own copy: the policy that named it is freed by
			     * the first reload, and the name serves every one. */
			    .policy_path = c->policy_path ? strdup(c->policy_path) : NULL};
	struct sl_gw_confine conf = {.uid = c->uid, .gid = c->gid, .empty_dir = c->empty_dir};
	bool idn;
	int keep[] = {c->events, c->commands, c->capture_fd,
		      c->nflog ? sl_nft_nflog_fd(c->nflog) : -1,
		      c->audit ? sl_audit_fd(c->audit) : -1, c->ctl_fd};
	sigset_t none;
	char err[400], text[480];

	/* Found by name under its supervisor (docs/architecture.md). */
	(void)prctl(PR_SET_NAME, "sluice-gateway", 0, 0, 0);
	/* A session of its own: the terminal's ^C, ^\ and hangup are the
	 * supervisor's to pass on, not this process's to die of. */
	(void)setsid();
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	/* A peer that goes away mid-write says EPIPE, not SIGPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (close_others(keep, ELEMENTSOF(keep)) < 0) {
		snprintf(text, sizeof(text), "gateway: closing the supervisor's files: %m");
		fail(&g, text);
	}
	sl_trace("gw: started");
	/* Whether a name in Unicode can matter (below), read while the
	 * policy is still ours: setup() hands it to the gateway. */
	idn = strcmp(c->policy->source, "(deny all)") || c->policy->mode == SL_MODE_OBSERVE;
	make_ca(&g, c);
	setup(&g, c);
	secrets_settle(c->tls);
	/* A reloaded policy, or a request, may name a host in Unicode: the
	 * library that reads it is opened now, not once confined (without it
	 * such names are refused, saying why). Not for run without --policy
	 * and without --observe: it allows nothing, and never reloads; the
	 * third of a millisecond is its start's. */
	if (idn)
		(void)sl_host_idn_load();
	sl_trace("gw: set up");
	if (sl_gw_confine(&conf, err, sizeof(err)) < 0) {
		snprintf(text, sizeof(text), "gateway: cannot confine: %s", err);
		fail(&g, text);
	}
	tell(&g, SL_SERVE_MSG_READY, 0, 0);
	uv_run(&g.loop, UV_RUN_DEFAULT);
	sl_audit_close(g.audit);
	fflush(NULL);
	/* Not exit(): the libraries' exit handlers may make calls the filter
	 * kills for. */
	_exit(0);
}
