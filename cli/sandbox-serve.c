/* SPDX-License-Identifier: MIT */
/*
 * The fence and the gateway of one sandbox, shared by `sluice run` and
 * `sluice attach` (sandbox-serve.h). The gateway runs in a thread of its
 * own with its own libuv loop, so that the main thread can supervise the
 * command (run) or wait for a signal (attach).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "macro.h"
#include "policy-file.h"
#include "sandbox-serve.h"

/* ---- Blocked packets reach the audit log ---- */

/* A flood of blocked packets must not hold the loop: this many reads per
 * wakeup, then the other handles get their turn. What the kernel cannot
 * queue meanwhile it drops, and the sequence gaps count that. */
#define NFLOG_READS_PER_WAKEUP 64
/* At the end, what is still queued is read (the command has exited, so
 * every copy it caused is there), up to this many datagrams. */
#define NFLOG_READS_AT_STOP 4096
/* How often what the rate limit kept out of NFLOG is audited (as a count). */
#define UNLOGGED_EVERY_MS 5000

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
	struct sl_serve *t = userdata;
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
	if (t->gw)
		(void)sl_gw_audit_ok(t->gw);
}

/* Nothing is dropped silently: what the kernel could not queue for us is
 * audited as a count. An overflow is reported once the next copy's
 * sequence number says how much it cost, or at the end as such. */
static uint64_t audit_losses(struct sl_serve *t, bool final)
{
	struct sl_nft_nflog_losses l;

	sl_nft_nflog_take_losses(t->nflog, &l);
	t->nflog_overflows += l.overflows;
	if (l.packets)
		(void)sl_audit_write_summary(t->audit, t->sandbox_name, "blocked", -1,
					     "blocked-packets-lost: %llu",
					     (unsigned long long)l.packets);
	else if (final && t->nflog_overflows)
		(void)sl_audit_write_summary(t->audit, t->sandbox_name, "blocked", -1,
					     "blocked-packets-lost: unknown");
	else
		return l.overflows;
	t->nflog_overflows = 0;
	if (t->gw)
		(void)sl_gw_audit_ok(t->gw);
	return l.overflows;
}

/* The sandbox ruleset copies blocked packets to NFLOG under a rate limit
 * (nft.h); the rest are rejected all the same and only counted. Their
 * number since the last report is audited as one record, so the log says
 * how much it does not show: blocked = records + lost + not logged. The
 * counters are read blocked first, then logged, so that a packet between
 * the two rules is never counted as unlogged: the count can only lag, and
 * the final read, once nothing is sent any more, is exact. */
static void audit_unlogged(struct sl_serve *t)
{
	uint64_t blocked, logged, unlogged;
	char err[256];

	if (!t->nft_inside || !t->audit)
		return;
	if (sl_nft_sandbox_counters(t->nft_inside, &blocked, &logged, err, sizeof(err)) < 0)
		return; /* the table went with an attached namespace's teardown */
	unlogged = blocked > logged ? blocked - logged : 0;
	if (unlogged <= t->unlogged_reported)
		return;
	(void)sl_audit_write_summary(t->audit, t->sandbox_name, "blocked", -1,
				     "blocked-packets-not-logged: %llu (rate limit)",
				     (unsigned long long)(unlogged - t->unlogged_reported));
	t->unlogged_reported = unlogged;
	if (t->gw)
		(void)sl_gw_audit_ok(t->gw);
}

static void unlogged_timer_cb(uv_timer_t *tm)
{
	audit_unlogged(container_of(tm, struct sl_serve, unlogged_timer));
}

static void nflog_poll_cb(uv_poll_t *p, int status, int events)
{
	struct sl_serve *t = container_of(p, struct sl_serve, nflog_poll);
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
		fprintf(stderr, "%s: reading blocked packets: %s; no longer audited\n", t->prog,
			strerror(-r));
		uv_poll_stop(p);
	}
}

static void nflog_closed_cb(uv_handle_t *h)
{
	struct sl_serve *t = container_of((uv_poll_t *)h, struct sl_serve, nflog_poll);

	sl_nft_nflog_close(TAKE_PTR(t->nflog));
}

/* Audit what is still queued, then close. Runs on the loop's thread. */
static void blocked_stop(struct sl_serve *t)
{
	if (!t->nflog_polling)
		return;
	t->nflog_polling = false;
	(void)sl_nft_nflog_read(t->nflog, NFLOG_READS_AT_STOP, audit_blocked, t);
	audit_losses(t, true);
	uv_close((uv_handle_t *)&t->nflog_poll, nflog_closed_cb);
	if (t->unlogged_timer_on) {
		t->unlogged_timer_on = false;
		uv_timer_stop(&t->unlogged_timer);
		uv_close((uv_handle_t *)&t->unlogged_timer, NULL);
	}
	audit_unlogged(t);
	sl_nft_close(TAKE_PTR(t->nft_inside));
}

struct nflog_open {
	struct sl_nft_nflog **ret;
	struct sl_nft **ret_nft;
	char *err;
	size_t errlen;
};

/* Both sockets are made in the sandbox's namespace and stay bound to it. */
static int nflog_open_inside(void *userdata)
{
	struct nflog_open *o = userdata;
	int r;

	r = sl_nft_nflog_open(SL_SERVE_NFLOG_GROUP, o->ret, o->err, o->errlen);
	if (r < 0)
		return r;
	r = sl_nft_open(o->ret_nft, o->err, o->errlen);
	if (r < 0)
		sl_nft_nflog_close(TAKE_PTR(*o->ret));
	return r;
}

/* Subscribe to the sandbox's NFLOG group (NFLOG is per namespace, so the
 * socket is made in there; it stays bound to it) and poll it on the
 * gateway's loop. Called after the sandbox's rules are in place. */
static int blocked_start(struct sl_serve *t, const struct sl_netns_sandbox *sb, char *err,
			 size_t errlen)
{
	struct nflog_open o = {.ret = &t->nflog, .ret_nft = &t->nft_inside, .err = err,
			       .errlen = errlen};
	int ret;

	if (!t->audit)
		return 0;
	t->sandbox_name = sl_netns_sandbox_host_ifname(sb);
	ret = sl_netns_sandbox_run_inside(sb, nflog_open_inside, &o);
	if (ret < 0)
		return ret;
	ret = uv_poll_init(&t->loop, &t->nflog_poll, sl_nft_nflog_fd(t->nflog));
	if (ret < 0) {
		sl_nft_nflog_close(TAKE_PTR(t->nflog));
		sl_nft_close(TAKE_PTR(t->nft_inside));
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	t->nflog_polling = true;
	uv_timer_init(&t->loop, &t->unlogged_timer);
	t->unlogged_timer_on = true;
	uv_timer_start(&t->unlogged_timer, unlogged_timer_cb, UNLOGGED_EVERY_MS, UNLOGGED_EVERY_MS);
	ret = uv_poll_start(&t->nflog_poll, UV_READABLE, nflog_poll_cb);
	if (ret < 0) {
		blocked_stop(t);
		snprintf(err, errlen, "polling the blocked packets: %s", uv_strerror(ret));
		return ret;
	}
	return 0;
}

static void reload_cb(uv_async_t *a)
{
	struct sl_serve *t = a->data;
	struct sl_policy *p;

	uv_mutex_lock(&t->lock);
	p = TAKE_PTR(t->pending);
	uv_mutex_unlock(&t->lock);
	if (p && t->gw)
		sl_gw_set_policy(t->gw, p);
	else
		sl_policy_free(p);
}

static void gw_stop_cb(uv_async_t *a)
{
	struct sl_serve *t = a->data;

	uv_close((uv_handle_t *)&t->reload, NULL);
	blocked_stop(t);
	sl_gw_shutdown(t->gw);
	t->gw = NULL;
	sl_gw_resolver_free(t->resolver);
	t->resolver = NULL;
	uv_close((uv_handle_t *)a, NULL);
}

static void gw_thread_main(void *arg)
{
	struct sl_serve *t = arg;
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
	    .sin_port = htons(SL_SERVE_PORT_CAPTURE),
	    .sin_addr = {htonl(INADDR_LOOPBACK)},
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
static int capture_start(struct sl_serve *t, const struct sl_netns_sandbox *sb, char *err,
			 size_t errlen)
{
	int fd = -1, ret;

	ret = sl_netns_sandbox_run_inside(sb, make_capture_socket, &fd);
	if (ret < 0) {
		/* 127.0.0.1 is missing only where lo is down: a namespace made
		 * by `ip netns add` and never configured, for attach. */
		snprintf(err, errlen, "capture listener in the sandbox: %s%s", strerror(-ret),
			 ret == -EADDRNOTAVAIL ? " (is lo down in the namespace? bring it up first: "
						 "ip link set lo up)"
					       : "");
		return ret;
	}
	return sl_gw_listen_capture_fd(t->gw, fd, err, errlen);
}

/* On the gateway's thread: wake the supervisor. */
static void audit_failed(void *data, int err)
{
	struct sl_serve *t = data;
	uint64_t one = 1;

	__atomic_store_n(&t->audit_err, err, __ATOMIC_SEQ_CST);
	if (write(t->audit_failed_fd, &one, sizeof(one)) < 0)
		fprintf(stderr, "%s: cannot tell the supervisor: %m\n", t->prog);
}

static void owned_add(struct sl_gw_config *cfg, const struct sl_netns_pool *p)
{
	struct sl_cidr *c;
	uint32_t base = htonl(p->base);
	size_t i;

	if (!p->prefix || cfg->n_owned >= SL_GW_MAX_OWNED)
		return;
	for (i = 0; i < cfg->n_owned; i++)
		if (cfg->owned[i].prefix == p->prefix && !memcmp(cfg->owned[i].addr, &base, 4))
			return;
	c = &cfg->owned[cfg->n_owned++];
	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	memcpy(c->addr, &base, 4);
	c->prefix = p->prefix;
}

/* Sandbox addresses are never a destination: ours (the pool we took the
 * veth from, both its ends), and the default pool's, where the other
 * sandboxes on this host most likely are. */
static void owned_ranges(const struct sl_serve *t, struct sl_gw_config *cfg)
{
	struct sl_netns_pool def;

	owned_add(cfg, &t->pool);
	if (sl_netns_pool_parse(SL_NETNS_DEFAULT_POOL, &def) == 0)
		owned_add(cfg, &def);
}

int sl_serve_gateway_start(struct sl_serve *t, const struct sl_netns_sandbox *sb,
			   struct sl_policy **policy, const char *audit, const char *resolver,
			   char *err, size_t errlen)
{
	struct sl_gw_config cfg;
	char listen[INET_ADDRSTRLEN + 8], ip[INET_ADDRSTRLEN];
	struct in_addr host = sl_netns_sandbox_host_addr(sb);
	int ret;

	if (uv_loop_init(&t->loop) < 0) {
		snprintf(err, errlen, "gateway: cannot create its event loop");
		return -ENOMEM;
	}
	t->loop_ready = true;
	uv_mutex_init(&t->lock);
	if (audit) {
		ret = sl_audit_open(audit, &t->audit);
		if (ret < 0) {
			snprintf(err, errlen, "--audit '%s': %s", audit, strerror(-ret));
			return ret;
		}
	}
	sl_gw_config_defaults(&cfg);
	{
		char why[320];

		ret = sl_gw_reserve_fds(cfg.max_connections, why, sizeof(why));
		if (ret < 0) {
			snprintf(err, errlen, "gateway: %s", why);
			return ret;
		}
	}
	ret = sl_gw_resolver_new(&t->loop, resolver, &t->resolver, err, errlen);
	if (ret < 0)
		return ret;
	cfg.sandbox = sl_netns_sandbox_host_ifname(sb);
	/* Only the sandbox's own address is served (the host's rules say
	 * the same; this holds if they are flushed). */
	((struct sockaddr_in *)&cfg.allowed_peer)->sin_family = AF_INET;
	((struct sockaddr_in *)&cfg.allowed_peer)->sin_addr = sl_netns_sandbox_peer_addr(sb);
	owned_ranges(t, &cfg);
	t->audit_failed_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->audit_failed_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "gateway: eventfd: %s", strerror(-ret));
		return ret;
	}
	cfg.audit_failed = audit_failed;
	cfg.audit_failed_data = t;
	ret = sl_gw_new(&t->loop, &cfg, TAKE_PTR(*policy), t->resolver, t->audit, &t->gw);
	if (ret < 0) {
		snprintf(err, errlen, "gateway: %s", strerror(-ret));
		return ret;
	}
	if (t->tls) {
		ret = sl_tls_apply(t->tls, t->gw, t->upstream_ca, err, errlen);
		if (ret < 0)
			return ret;
	}
	inet_ntop(AF_INET, &host, ip, sizeof(ip));
	snprintf(listen, sizeof(listen), "%s:%u", ip, SL_SERVE_PORT_PROXY);
	ret = sl_gw_listen_proxy(t->gw, listen, err, errlen);
	if (ret < 0)
		return ret;
	snprintf(listen, sizeof(listen), "%s:%u", ip, SL_SERVE_PORT_DNS);
	ret = sl_gw_listen_dns(t->gw, listen, err, errlen);
	if (ret < 0)
		return ret;
	ret = capture_start(t, sb, err, errlen);
	if (ret < 0)
		return ret;
	ret = blocked_start(t, sb, err, errlen);
	if (ret < 0)
		return ret;
	uv_async_init(&t->loop, &t->stop, gw_stop_cb);
	t->stop.data = t;
	uv_async_init(&t->loop, &t->reload, reload_cb);
	t->reload.data = t;
	ret = uv_thread_create(&t->tid, gw_thread_main, t);
	if (ret < 0) {
		snprintf(err, errlen, "gateway: cannot start its thread: %s", uv_strerror(ret));
		/* sl_serve_gateway_stop runs the loop to tidy up: no handle may stay
		 * active or that would never return. */
		blocked_stop(t);
		uv_close((uv_handle_t *)&t->stop, NULL);
		uv_close((uv_handle_t *)&t->reload, NULL);
		return ret;
	}
	t->running = true;
	return 0;
}

void sl_serve_gateway_stop(struct sl_serve *t)
{

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
		uv_mutex_destroy(&t->lock);
		t->loop_ready = false;
	}
	sl_policy_free(TAKE_PTR(t->pending));
	sl_audit_close(TAKE_PTR(t->audit));
	if (t->audit_failed_fd >= 0)
		sl_closep(&t->audit_failed_fd);
	t->audit_failed_fd = -1;
}

void sl_serve_set_policy(struct sl_serve *t, struct sl_policy *p)
{
	struct sl_policy *old;

	if (!t->running) {
		sl_policy_free(p);
		return;
	}
	uv_mutex_lock(&t->lock);
	old = t->pending;
	t->pending = p;
	uv_mutex_unlock(&t->lock);
	sl_policy_free(old);
	uv_async_send(&t->reload);
}

void sl_serve_reload(struct sl_serve *t, const char *policy_path)
{
	struct sl_policy *p = NULL;
	char err[512];

	if (!policy_path) {
		fprintf(stderr, "%s: SIGHUP: no --policy to reload; still denying everything\n",
			t->prog);
		return;
	}
	/* Checked again at every reload: where the file lies may have
	 * changed since the start. */
	if (sl_cli_policy_load(t->prog, policy_path, t->sandbox_writable, &p) < 0) {
		fprintf(stderr, "%s: %s: not reloaded; the running policy stays in force\n", t->prog,
			policy_path);
		return;
	}
	/* New secrets, or a loaded one sent somewhere new, need a restart;
	 * the note of where secrets go is updated before the gateway has p. */
	if (t->tls) {
		bool ok = sl_tls_covers(t->tls, p, err, sizeof(err));

		if (ok && sl_tls_reloaded(t->tls, p) < 0) {
			snprintf(err, sizeof(err), "%s: out of memory", policy_path);
			ok = false;
		}
		if (!ok) {
			fprintf(stderr,
				"%s\n%s: %s: not reloaded; the running policy stays in force\n",
				err, t->prog, policy_path);
			sl_policy_free(p);
			return;
		}
	}
	sl_serve_set_policy(t, p);
	fprintf(stderr, "%s: %s: reloaded\n", t->prog, policy_path);
}

/* ---- The fence ---- */

static int apply_sandbox_rules(void *userdata)
{
	const struct sl_netns_sandbox *sb = ((void **)userdata)[0];
	char *err = ((void **)userdata)[1];
	struct sl_nft_sandbox cfg = {
	    .gateway = sl_netns_sandbox_host_addr(sb),
	    .tcp_ports = {SL_SERVE_PORT_PROXY, SL_SERVE_PORT_DNS},
	    .n_tcp_ports = 2,
	    .udp_ports = {SL_SERVE_PORT_DNS},
	    .n_udp_ports = 1,
	    .nflog_group = SL_SERVE_NFLOG_GROUP,
	    .capture_port = SL_SERVE_PORT_CAPTURE,
	    .dns_port = SL_SERVE_PORT_DNS,
	};

	return sl_nft_sandbox_apply(&cfg, err, 512);
}

int sl_serve_rules_install(struct sl_serve *s, const struct sl_netns_sandbox *sb, char *err,
			   size_t errlen)
{
	const char *ifname = sl_netns_sandbox_host_ifname(sb);
	struct sl_nft_host host = {
	    .name = ifname,
	    .ifname = ifname,
	    .addr = sl_netns_sandbox_host_addr(sb),
	    .peer = sl_netns_sandbox_peer_addr(sb),
	    .tcp_ports = {SL_SERVE_PORT_PROXY, SL_SERVE_PORT_DNS},
	    .n_tcp_ports = 2,
	    .udp_ports = {SL_SERVE_PORT_DNS},
	    .n_udp_ports = 1,
	};
	void *inside[2] = {(void *)sb, err};
	int ret;

	if (errlen < 512)
		return -EINVAL;
	ret = sl_nft_open(&s->nft, err, errlen);
	if (ret < 0)
		return ret;
	ret = sl_nft_host_apply(s->nft, &host, &s->host_rules_owned, err, errlen);
	if (ret < 0)
		return ret;
	s->host_rules = true;
	snprintf(s->host_table, sizeof(s->host_table), "%s", ifname);
	return sl_netns_sandbox_run_inside(sb, apply_sandbox_rules, inside);
}

void sl_serve_rules_remove(struct sl_serve *s)
{
	char err[512];

	if (s->host_rules && !s->host_rules_owned && s->nft)
		(void)sl_nft_host_delete(s->nft, s->host_table, err, sizeof(err));
	s->host_rules = false;
	/* Owned tables vanish with the socket. */
	sl_nft_close(TAKE_PTR(s->nft));
}
