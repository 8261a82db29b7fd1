/* SPDX-License-Identifier: MIT */
/*
 * The fence and the gateway of one sandbox, shared by `sluice run` and
 * `sluice attach` (sandbox-serve.h). This is the supervisor's side: it
 * makes what needs privilege (the sockets inside the sandbox's namespace,
 * the audit log's fd, the gateway's uid and its empty root), forks the
 * gateway's process (serve-gateway.c), which confines itself before it
 * serves, and from then on speaks to it only in fixed-size messages
 * (serve-internal.h): it never reads a byte the sandbox sent.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control-sock.h"
#include "err.h"
#include "gw-process.h"
#include "macro.h"
#include "observe.h"
#include "policy-file.h"
#include "serve-internal.h"
#include "trace.h"

/* Where the gateway's process is chrooted: empty, root's, not writable. */
/* How long the gateway may take to set up, to answer a reload, and to
 * close its connections (each writing its audit record) at the end,
 * before it is killed. Bounds on a process that may be wedged, not
 * timings anything relies on. */
#define GW_SETUP_MS 30000
#define GW_RELOAD_MS 10000
#define GW_STOP_MS 10000
/* The gateway asks for the counters every few seconds; a gateway that
 * asks more often is not answered more often. */
#define COUNTERS_MIN_MS 1000

/* ---- What the gateway's process is given ---- */

struct inside {
	int capture_fd;
	struct sl_nft_nflog *nflog;
	bool blocked; /* the NFLOG group and the counters too (with an audit log) */
	char *err;
	size_t errlen;
};

/* Runs inside the sandbox's namespace: the capture listener on its own
 * loopback, where the redirect rule sends every other TCP connection,
 * and (with an audit log) the NFLOG subscription (NFLOG is per namespace)
 * and the socket the table's counters are read through. Each stays bound
 * to the namespace it was made in. */
static int make_inside(void *userdata)
{
	struct inside *in = userdata;
	struct sockaddr_in sin = {
	    .sin_family = AF_INET,
	    .sin_port = htons(SL_SERVE_PORT_CAPTURE),
	    .sin_addr = {htonl(INADDR_LOOPBACK)},
	};
	int one = 1, fd, r;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return negative_errno();
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 256) < 0) {
		r = negative_errno();
		close(fd);
		/* 127.0.0.1 is missing only where lo is down: a namespace made
		 * by `ip netns add` and never configured, for attach. */
		snprintf(in->err, in->errlen, "capture listener in the sandbox: %s%s", strerror(-r),
			 r == -EADDRNOTAVAIL ? " (is lo down in the namespace? bring it up first: "
					       "ip link set lo up)"
					     : "");
		return r;
	}
	in->capture_fd = fd;
	if (!in->blocked)
		return 0;
	return sl_nft_nflog_open(SL_SERVE_NFLOG_GROUP, &in->nflog, in->err, in->errlen);
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

/* Our copy of an nftables socket goes; with a releaser, its copy goes
 * after we are gone (release.c says why). */
static void nft_let_go(const struct sl_serve *t, struct sl_nft *nft)
{
	if (nft && t->releaser)
		(void)sl_netns_releaser_hold(t->releaser, sl_nft_fd(nft));
	sl_nft_close(nft);
}

/* ---- The gateway's process, from the supervisor's side ---- */

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Block until the gateway is gone, and keep how it went. */
static void reap(struct sl_serve *t)
{
	pid_t p;
	int st;

	if (t->gw_pid <= 0 || t->gw_reaped)
		return;
	while ((p = waitpid(t->gw_pid, &st, 0)) < 0 && errno == EINTR)
		;
	t->gw_reaped = true;
	t->gw_status = p == t->gw_pid ? st : -1;
}

/* A gateway that must not go on (gone, wedged, or saying what it must
 * not): killed and reaped. */
static void kill_gateway(struct sl_serve *t)
{
	if (t->gw_pid > 0 && !t->gw_reaped)
		(void)kill(t->gw_pid, SIGKILL);
	reap(t);
	t->gw_gone = true;
}

static bool wait_readable(int fd, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left < 0)
			left = 0;
		r = poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, (int)left);
		if (r > 0)
			return true;
		if (r == 0 || (r < 0 && errno != EINTR))
			return false;
	}
}

void sl_serve_gateway_death(const struct sl_serve *t, char *buf, size_t len)
{
	int st = t->gw_status;

	if (!t->gw_reaped || st < 0)
		snprintf(buf, len, "gone");
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %s",
			 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "gone");
}

/* The gateway's next message before it serves, into u (any of the kinds
 * sent then): its length, or -1 (nothing in time, or the channel gone). */
union setup_msg {
	struct sl_serve_msg m;
	struct sl_serve_msg_failed f;
	struct sl_serve_msg_ca ca;
};

static ssize_t setup_msg(struct sl_serve *t, union setup_msg *u)
{
	if (!wait_readable(t->gw_events, now_ms() + GW_SETUP_MS))
		return -1;
	return recv(t->gw_events, u, sizeof(*u), MSG_DONTWAIT);
}

/* n bytes of u are not `want`: say why the gateway did not get there
 * (its FAILED text, or how it went), and kill it. */
static int setup_failed(struct sl_serve *t, union setup_msg *u, ssize_t n, const char *want,
			char *err, size_t errlen)
{
	/* Asked before it is killed and reaped below: nothing within the
	 * bound, while it still lived, is no answer (we kill it), not gone. */
	bool silent = n < 0 && !t->gw_reaped;
	char how[64];

	if (n == (ssize_t)sizeof(u->f) && u->m.type == SL_SERVE_MSG_FAILED) {
		u->f.text[sizeof(u->f.text) - 1] = '\0';
		snprintf(err, errlen, "%s", u->f.text);
		kill_gateway(t);
		return -EPERM;
	}
	kill_gateway(t);
	if (n > 0) {
		snprintf(err, errlen, "gateway: a message of type %u and %zd bytes where %s was due",
			 (unsigned)u->m.type, n, want);
		return -EPROTO;
	}
	sl_serve_gateway_death(t, how, sizeof(how));
	snprintf(err, errlen, "gateway: %s before it served (%s)", silent ? "no answer" : "gone",
		 how);
	return -EIO;
}

/* Until it says READY, or why it cannot serve (its only text, read
 * before it has seen a byte of the sandbox's). */
static int wait_ready(struct sl_serve *t, char *err, size_t errlen)
{
	union setup_msg u;
	ssize_t n = setup_msg(t, &u);

	if (n == (ssize_t)sizeof(u.m) && u.m.type == SL_SERVE_MSG_READY)
		return 0;
	return setup_failed(t, &u, n, "READY", err, errlen);
}

int sl_serve_gateway_ca(struct sl_serve *t, char *pem, char *err, size_t errlen)
{
	union setup_msg u;
	ssize_t n = setup_msg(t, &u);

	if (n != (ssize_t)sizeof(u.ca) || u.m.type != SL_SERVE_MSG_CA)
		return setup_failed(t, &u, n, "the CA certificate", err, errlen);
	if (u.m.value > sizeof(u.ca.pem) ||
	    !sl_ca_pem_is_one_cert(u.ca.pem, (size_t)u.m.value)) {
		kill_gateway(t);
		snprintf(err, errlen, "gateway: what it sent as the CA certificate is not one");
		return -EPROTO;
	}
	memcpy(pem, u.ca.pem, (size_t)u.m.value);
	pem[u.m.value] = '\0';
	return 0;
}

static int fork_gateway(struct sl_serve *t, struct sl_serve_child *c, char *err, size_t errlen)
{
	int ev[2], cmd[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ev) < 0)
		return sl_err(err, errlen, negative_errno(), "gateway: socketpair: %m");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cmd) < 0) {
		close(ev[0]);
		close(ev[1]);
		return sl_err(err, errlen, negative_errno(), "gateway: socketpair: %m");
	}
	/* Nothing buffered is written twice. */
	fflush(NULL);
	t->gw_pid = fork();
	if (t->gw_pid < 0) {
		int r = negative_errno();

		close(ev[0]), close(ev[1]), close(cmd[0]), close(cmd[1]);
		t->gw_pid = 0;
		return sl_err(err, errlen, r, "gateway: fork: %m");
	}
	if (t->gw_pid == 0) {
		close(ev[0]);
		close(cmd[0]);
		c->events = ev[1];
		c->commands = cmd[1];
		sl_serve_child_main(c);
	}
	close(ev[1]);
	close(cmd[1]);
	t->gw_events = ev[0];
	t->gw_commands = cmd[0];
	t->gw_pidfd = pidfd_of(t->gw_pid);
	return 0;
}

int sl_serve_gateway_user(struct sl_serve *t, char *err, size_t errlen)
{
	/* A uid of its own: not root, not the command's, not another
	 * sandbox's gateway's. */
	if (t->gw_uid_lock >= 0)
		return 0;
	return sl_netns_user_allocate(NULL, &t->gw_user, &t->gw_uid_lock, err, errlen);
}

int sl_serve_gateway_fork(struct sl_serve *t, const struct sl_netns_sandbox *sb,
			  struct sl_policy **policy, const char *audit, const char *resolver,
			  char *err, size_t errlen)
{
	struct sl_serve_child c = {.prog = t->prog,
				   .resolver = resolver,
				   .tls = t->tls,
				   .make_ca = t->make_ca,
				   .upstream_ca = t->upstream_ca,
				   .listen_metrics = t->metrics,
				   .empty_dir = SL_GW_ROOT};
	struct inside in = {
	    .capture_fd = -1, .blocked = audit != NULL, .err = err, .errlen = errlen};
	struct in_addr host = sl_netns_sandbox_host_addr(sb);
	char ip[INET_ADDRSTRLEN];
	int ret;

	/* The counters are the records counted (metrics.h): with --metrics
	 * and no log, the records are made, and thrown away. */
	if (!audit && t->metrics) {
		audit = "/dev/null";
		in.blocked = true;
	}
	if (audit) {
		ret = sl_audit_open(audit, &c.audit);
		if (ret < 0) {
			snprintf(err, errlen, "--audit '%s': %s", audit, strerror(-ret));
			return ret;
		}
	}
	sl_gw_config_defaults(&c.cfg);
	c.cfg.sandbox = sl_netns_sandbox_host_ifname(sb);
	/* Only the sandbox's own address is served (the host's rules say
	 * the same; this holds if they are flushed). */
	((struct sockaddr_in *)&c.cfg.allowed_peer)->sin_family = AF_INET;
	((struct sockaddr_in *)&c.cfg.allowed_peer)->sin_addr = sl_netns_sandbox_peer_addr(sb);
	owned_ranges(t, &c.cfg);
	c.cfg.observe = t->observe;
	inet_ntop(AF_INET, &host, ip, sizeof(ip));
	snprintf(c.listen_proxy, sizeof(c.listen_proxy), "%s:%u", ip, SL_SERVE_PORT_PROXY);
	snprintf(c.listen_dns, sizeof(c.listen_dns), "%s:%u", ip, SL_SERVE_PORT_DNS);

	ret = sl_netns_sandbox_run_inside(sb, make_inside, &in);
	sl_trace("gateway sockets made");
	if (ret >= 0)
		ret = sl_cli_gateway_root(err, errlen);
	if (ret >= 0)
		ret = sl_serve_gateway_user(t, err, errlen);
	sl_trace("gateway uid allocated");
	c.ctl_fd = -1;
	if (ret >= 0) {
		/* The control socket, made here (root's, under /run/sluice)
		 * and served by the gateway (docs/control.md). */
		c.ctl_fd = sl_cli_ctl_listen(err, errlen);
		ret = c.ctl_fd < 0 ? c.ctl_fd : 0;
		free(t->ctl_policy);
		t->ctl_policy = NULL;
		if (ret >= 0 && strcmp((*policy)->source, "(deny all)") &&
		    !(t->ctl_policy = strdup((*policy)->source)))
			ret = -ENOMEM;
	}
	if (ret >= 0) {
		c.capture_fd = in.capture_fd;
		c.nflog = in.nflog;
		c.policy = *policy;
		c.policy_path = (*policy)->source;
		t->observing = (*policy)->mode == SL_MODE_OBSERVE;
		c.uid = t->gw_user.uid;
		c.gid = t->gw_user.gid;
		ret = fork_gateway(t, &c, err, errlen);
	}
	/* The gateway's now (or nobody's): none of it stays open here. */
	sl_closep(&in.capture_fd);
	sl_closep(&c.ctl_fd);
	if (ret < 0)
		sl_cli_ctl_remove();
	sl_nft_nflog_close(in.nflog);
	sl_audit_close(c.audit);
	t->audit_on = audit != NULL;
	if (ret < 0)
		return ret;
	sl_policy_free(TAKE_PTR(*policy));
	sl_trace("gateway forked");
	return 0;
}

int sl_serve_gateway_ready(struct sl_serve *t, char *err, size_t errlen)
{
	return wait_ready(t, err, errlen);
}

int sl_serve_gateway_start(struct sl_serve *t, const struct sl_netns_sandbox *sb,
			   struct sl_policy **policy, const char *audit, const char *resolver,
			   char *err, size_t errlen)
{
	int r = sl_serve_gateway_fork(t, sb, policy, audit, resolver, err, errlen);

	return r < 0 ? r : sl_serve_gateway_ready(t, err, errlen);
}

/* The sandbox table's count of blocked packets the rate limit kept out
 * of NFLOG (blocked first, then logged: it can only lag). */
static uint64_t unlogged_now(struct sl_serve *t)
{
	uint64_t blocked, logged;
	char err[256];

	if (!t->nft_inside ||
	    sl_nft_sandbox_counters(t->nft_inside, &blocked, &logged, err, sizeof(err)) < 0)
		return 0; /* the table went with an attached namespace's teardown */
	return blocked > logged ? blocked - logged : 0;
}

static int command(struct sl_serve *t, uint32_t type, uint64_t value, int fd)
{
	struct sl_serve_msg m = {.type = type, .value = value};

	if (t->gw_commands < 0 || t->gw_gone)
		return -ESRCH;
	return sl_fd_send(t->gw_commands, &m, sizeof(m), fd);
}

void sl_serve_gateway_stop(struct sl_serve *t)
{
	if (t->gw_pid > 0 && !t->gw_gone) {
		/* The command has exited (or is being ended): the count is
		 * final. Read only for an audit log (or --metrics), the one
		 * use the gateway has for it: two netlink round trips. */
		if (command(t, SL_SERVE_MSG_STOP, t->audit_on ? unlogged_now(t) : 0, -1) < 0 ||
		    !wait_readable(t->gw_pidfd, now_ms() + GW_STOP_MS))
			(void)kill(t->gw_pid, SIGKILL);
		reap(t);
		t->gw_gone = true;
	}
	/* Nobody serves it now. */
	sl_cli_ctl_remove();
	free(t->ctl_policy);
	t->ctl_policy = NULL;
	sl_closep(&t->gw_events);
	sl_closep(&t->gw_commands);
	sl_closep(&t->gw_pidfd);
	t->gw_events = t->gw_commands = t->gw_pidfd = -1;
	sl_trace("gateway reaped");
	nft_let_go(t, TAKE_PTR(t->nft_inside));
	/* Every process of the uid is gone: it can go. */
	if (t->gw_uid_lock >= 0 && t->releaser &&
	    sl_netns_releaser_user(t->releaser, t->gw_user.uid, t->gw_uid_lock) == 0)
		close(TAKE_FD(t->gw_uid_lock));
	else if (t->gw_uid_lock >= 0)
		sl_netns_user_release(NULL, t->gw_user.uid, TAKE_FD(t->gw_uid_lock));
	t->gw_uid_lock = -1;
}

int sl_serve_gateway_fd(const struct sl_serve *t)
{
	return t->gw_gone ? -1 : t->gw_events;
}

bool sl_serve_gateway_reaped(struct sl_serve *t, pid_t pid, int status)
{
	if (t->gw_pid <= 0 || pid != t->gw_pid || t->gw_reaped)
		return false;
	t->gw_reaped = true;
	t->gw_status = status;
	return true;
}

/* The counters, for the gateway's record of what NFLOG did not show. */
static void answer_counters(struct sl_serve *t)
{
	int64_t now = now_ms();

	if (!t->audit_on || (t->counters_ms && now - t->counters_ms < COUNTERS_MIN_MS))
		return;
	t->counters_ms = now;
	(void)command(t, SL_SERVE_MSG_UNLOGGED, unlogged_now(t), -1);
}

static int ctl_reload_captured(struct sl_serve *t, char *text, size_t len);

/* `sluice reload` through the gateway's control socket: the reload SIGHUP
 * does, of the file given at start (never one the gateway names: all it
 * can ask for is this), and what it said sent back for the caller. The
 * gateway asks; it must not get to hold the supervisor: one that does not
 * read its commands is not reloaded (nor answered, never waited on), and
 * one that does not take the bytes within GW_RELOAD_MS is as one that
 * sent a message it must not (killed: false returned). */
static bool ctl_reload(struct sl_serve *t)
{
	struct sl_serve_msg_failed f = {.m = {.type = SL_SERVE_MSG_CTL_RELOADED}};
	struct pollfd p = {.fd = t->gw_commands, .events = POLLOUT};

	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return true;
	f.m.err = ctl_reload_captured(t, f.text, sizeof(f.text));
	if (f.m.err == -ETIMEDOUT) {
		kill_gateway(t);
		return false;
	}
	(void)send(t->gw_commands, &f, sizeof(f), MSG_DONTWAIT | MSG_NOSIGNAL);
	return true;
}

enum sl_serve_event sl_serve_gateway_event(struct sl_serve *t)
{
	struct sl_serve_msg_failed f;
	ssize_t n;

	if (t->gw_gone || t->gw_events < 0)
		return SL_SERVE_NOTHING;
	/* A bounded number: a gateway that floods must not hold us (the
	 * rest stays queued, and the fd readable). */
	for (int i = 0; i < 64; i++) {
		n = recv(t->gw_events, &f, sizeof(f), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return SL_SERVE_NOTHING;
		/* Only the fixed-size messages it may send while serving;
		 * EOF (it is gone, or closed its end: as good as gone) or
		 * anything else ends it. */
		if (n != (ssize_t)sizeof(f.m) ||
		    (f.m.type != SL_SERVE_MSG_COUNTERS && f.m.type != SL_SERVE_MSG_AUDIT_FAILED &&
		     f.m.type != SL_SERVE_MSG_CTL_RELOAD)) {
			kill_gateway(t);
			return SL_SERVE_GATEWAY_DIED;
		}
		if (f.m.type == SL_SERVE_MSG_CTL_RELOAD) {
			if (!ctl_reload(t))
				return SL_SERVE_GATEWAY_DIED;
		} else if (f.m.type == SL_SERVE_MSG_COUNTERS) {
			answer_counters(t);
		} else if (!t->audit_err) {
			t->audit_err = f.m.err < 0 && f.m.err > -4096 ? f.m.err : -EIO;
			return SL_SERVE_AUDIT_FAILED;
		}
	}
	return SL_SERVE_NOTHING;
}

/* The file's bytes, for the gateway, in a sealed memfd. */
static int policy_memfd(const char *buf, size_t len)
{
	_cleanup_close_ int fd = memfd_create("sluice-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return negative_errno();
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? negative_errno() : -EIO;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return negative_errno();
	/* The gateway reads it from the start (the offset is shared). */
	if (lseek(fd, 0, SEEK_SET) < 0)
		return negative_errno();
	return TAKE_FD(fd);
}

/* Hand the bytes over and wait (bounded) until the gateway took them. */
static int hand_over(struct sl_serve *t, const char *buf, size_t len)
{
	_cleanup_close_ int fd = policy_memfd(buf, len);
	int64_t deadline = now_ms() + GW_RELOAD_MS;
	struct sl_serve_msg m;
	uint64_t seq = ++t->reload_seq;
	int r;

	if (fd < 0)
		return fd;
	r = command(t, SL_SERVE_MSG_RELOAD, seq, fd);
	if (r < 0)
		return r;
	while (wait_readable(t->gw_commands, deadline)) {
		ssize_t n = recv(t->gw_commands, &m, sizeof(m), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return -ESRCH;
		/* An answer to an earlier reload that timed out: not ours. */
		if (n == (ssize_t)sizeof(m) && m.type == SL_SERVE_MSG_RELOADED && m.value == seq)
			return m.err < 0 && m.err > -4096 ? m.err : (m.err ? -EIO : 0);
	}
	return -ETIMEDOUT;
}

static void fence_reload(struct sl_serve *t, const struct sl_policy_ports *ports);

int sl_serve_reload(struct sl_serve *t, const char *policy_path)
{
	_cleanup_(sl_policy_ports_done) struct sl_policy_ports ports = {0};
	_cleanup_free_ char *buf = NULL;
	struct sl_policy *p = NULL;
	char err[512];
	size_t len = 0;
	bool observe;
	int r;

	if (!policy_path) {
		fprintf(stderr, "%s: SIGHUP: no --policy to reload; still denying everything\n",
			t->prog);
		return -1;
	}
	/* Checked again at every reload: where the file lies may have
	 * changed since the start. */
	if (sl_cli_policy_load_bytes(t->prog, policy_path, t->sandbox_writable, &p, &buf, &len) <
	    0) {
		fprintf(stderr, "%s: %s: not reloaded; the running policy stays in force\n",
			t->prog, policy_path);
		return -1;
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
			return -1;
		}
	}
	sl_cli_observe_force(p, t->observe);
	observe = p->mode == SL_MODE_OBSERVE;
	/* Its ports, known before the gateway has it: applied only once it
	 * took it, so a failed reload changes nothing. (In observe mode,
	 * every port: sl_policy_allowed_tcp_ports.) */
	r = sl_policy_allowed_tcp_ports(p, &ports);
	sl_policy_free(p);
	if (r < 0) {
		fprintf(stderr, "%s: %s: out of memory; the running policy stays in force\n",
			t->prog, policy_path);
		return -1;
	}
	r = hand_over(t, buf, len);
	if (r < 0) {
		fprintf(stderr,
			"%s: %s: the gateway did not take it (%s); the running policy "
			"stays in force\n",
			t->prog, policy_path, strerror(-r));
		return r == -ETIMEDOUT ? r : -1;
	}
	fence_reload(t, &ports);
	/* Said when it is observe mode, or leaves it; a plain reload in
	 * enforce mode says what it always said. */
	fprintf(stderr, "%s: %s: reloaded%s\n", t->prog, policy_path,
		observe ? " (observe mode)" : t->observing ? " (enforce mode)" : "");
	t->observing = observe;
	if (observe) {
		struct sl_policy shown = {.mode = SL_MODE_OBSERVE};

		sl_cli_observe_banner(stderr, t->prog, &shown);
	}
	return 0;
}

/* sl_serve_reload() with what it says on stderr kept, the start of it in
 * text (len bytes, NUL-terminated), and said on stderr as well. */
static int ctl_reload_captured(struct sl_serve *t, char *text, size_t len)
{
	_cleanup_close_ int mem = memfd_create("sluice-reload", MFD_CLOEXEC);
	_cleanup_close_ int saved = -1;
	char buf[4096];
	size_t have = 0;
	ssize_t n;
	int r;

	text[0] = '\0';
	fflush(stderr);
	if (mem >= 0)
		saved = dup(STDERR_FILENO);
	if (mem < 0 || saved < 0 || dup2(mem, STDERR_FILENO) < 0) {
		snprintf(text, len, "%s: cannot keep what the reload says: %m", t->prog);
		return -EIO;
	}
	r = sl_serve_reload(t, t->ctl_policy);
	fflush(stderr);
	(void)dup2(saved, STDERR_FILENO);
	if (lseek(mem, 0, SEEK_SET) == 0)
		while ((n = read(mem, buf, sizeof(buf))) > 0) {
			size_t k = (size_t)n < len - 1 - have ? (size_t)n : len - 1 - have;

			memcpy(text + have, buf, k);
			have += k;
			(void)!write(STDERR_FILENO, buf, (size_t)n);
		}
	text[have] = '\0';
	return r;
}


/* ---- The fence ---- */

/* The sandbox's rules for the gateway at gw, capturing the TCP ports of
 * *ports (NULL: every port); with more than the rules take, every port
 * too (the gateway decides each connection all the same). */
static struct sl_nft_sandbox fence_config(struct in_addr gw, const struct sl_policy_ports *ports)
{
	struct sl_nft_sandbox cfg = {
	    .gateway = gw,
	    .tcp_ports = {SL_SERVE_PORT_PROXY, SL_SERVE_PORT_DNS},
	    .n_tcp_ports = 2,
	    .udp_ports = {SL_SERVE_PORT_DNS},
	    .n_udp_ports = 1,
	    .nflog_group = SL_SERVE_NFLOG_GROUP,
	    .capture_port = SL_SERVE_PORT_CAPTURE,
	    .dns_port = SL_SERVE_PORT_DNS,
	};

	if (ports && !ports->all && ports->n <= SL_NFT_MAX_CAPTURE_PORTS) {
		cfg.capture_listed = true;
		cfg.capture_tcp_ports = ports->ports;
		cfg.n_capture_tcp_ports = ports->n;
	}
	return cfg;
}

/* A reload the gateway took: the new policy's ports are captured from
 * now on (one batch). Failing that, the old ports stay captured, which
 * the gateway decides as ever: said, not fatal. */
static void fence_reload(struct sl_serve *t, const struct sl_policy_ports *ports)
{
	struct sl_nft_sandbox cfg = fence_config(t->fence_gateway, ports);
	char err[512];

	if (!t->nft_inside)
		return;
	if (sl_nft_sandbox_capture_update(t->nft_inside, &cfg, err, sizeof(err)) < 0)
		fprintf(stderr,
			"%s: %s; the ports captured stay the old policy's (connections to a new "
			"port are refused at once until the sandbox restarts)\n",
			t->prog, err);
}

/* The socket it is sent through stays open (sl_nft_sandbox_apply_nft says
 * why), for the counters; it goes in sl_serve_gateway_stop(). */
static int apply_sandbox_rules(void *userdata)
{
	const struct sl_netns_sandbox *sb = ((void **)userdata)[0];
	char *err = ((void **)userdata)[1];
	struct sl_serve *s = ((void **)userdata)[2];
	_cleanup_(sl_policy_ports_done) struct sl_policy_ports ports = {0};
	struct sl_nft_sandbox cfg;
	int r;

	if (s->fence_policy && sl_policy_allowed_tcp_ports(s->fence_policy, &ports) < 0) {
		snprintf(err, 512, "the policy's ports: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	cfg = fence_config(sl_netns_sandbox_host_addr(sb), s->fence_policy ? &ports : NULL);
	if (!s->nft_inside) {
		r = sl_nft_open(&s->nft_inside, err, 512);
		if (r < 0)
			return r;
	}
	return sl_nft_sandbox_apply_nft(s->nft_inside, &cfg, err, 512);
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
	void *inside[3] = {(void *)sb, err, s};
	int ret;

	if (errlen < 512)
		return -EINVAL;
	s->fence_gateway = sl_netns_sandbox_host_addr(sb);
	ret = sl_nft_open(&s->nft, err, errlen);
	if (ret < 0)
		return ret;
	ret = sl_nft_host_apply(s->nft, &host, &s->host_rules_owned, err, errlen);
	if (ret < 0)
		return ret;
	sl_trace("host rules applied");
	s->host_rules = true;
	snprintf(s->host_table, sizeof(s->host_table), "%s", ifname);
	return sl_netns_sandbox_run_inside(sb, apply_sandbox_rules, inside);
}

void sl_serve_rules_remove(struct sl_serve *s)
{
	char err[512];

	/* Owned tables vanish with the socket, but a releaser keeps it. */
	if (s->host_rules && (!s->host_rules_owned || s->releaser) && s->nft)
		(void)sl_nft_host_delete(s->nft, s->host_table, err, sizeof(err));
	s->host_rules = false;
	/* Made with the sandbox's rules, if the gateway never took over. */
	nft_let_go(s, TAKE_PTR(s->nft_inside));
	nft_let_go(s, TAKE_PTR(s->nft));
	sl_trace("host nft socket closed");
}
