/* SPDX-License-Identifier: MIT */
/*
 * sluice gateway --policy FILE --listen ADDR:PORT [--audit FILE|-]
 *                [--dns ADDR:PORT] [--resolver ADDR[:PORT]] [--sandbox NAME]
 *                [--metrics ADDR:PORT]
 *                [--ca-dir DIR] [--upstream-ca FILE] [--gateway-user USER|UID]
 *                [--observe] [limits...]
 *
 * Runs the gateway on its own: an explicit proxy (CONNECT and absolute-form
 * HTTP/1.1) that lets through exactly what the policy allows, resolving
 * names itself and refusing private addresses. With --dns it also answers
 * DNS for the names the policy allows (NXDOMAIN for every other name).
 * Hosts whose rules name methods, paths or a credential are inspected with
 * the CA kept in --ca-dir (its clients must trust DIR/ca.crt); without it,
 * TLS to those hosts is refused (and a warning says so at start).
 * SIGHUP reloads the policy (a policy that fails to load, lies where others
 * could change it, or sends a secret somewhere new leaves the running one in
 * force; a SIGHUP the kernel sends for a terminal hangup is ignored),
 * SIGUSR1 reopens the audit log, SIGINT and SIGTERM stop it.
 *
 * Once everything it needs is open and loaded, and before it reads a byte
 * from a client, the process confines itself (confine.h): as root, to a uid
 * of its own (allocated, or --gateway-user), chrooted into an empty
 * directory; always without capabilities, with no_new_privs and a seccomp
 * allowlist. The policy and the audit log are then reopened for it by a
 * reader process forked early (gateway-reader.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <openssl/x509.h>

#include "cli.h"
#include "confine.h"
#include "control-sock.h"
#include "control.h"
#include "err.h"
#include "gateway-reader.h"
#include "gw-process.h"
#include "gateway.h"
#include "macro.h"
#include "netns.h"
#include "observe.h"
#include "policy-file.h"
#include "tls-setup.h"

/* Where a gateway started as root is chrooted: empty, root's, not
 * writable by anyone (made if missing). */

/* What sluice gateway was started with, closed before confinement (a
 * static: still reachable, not a leak, when it exits before that). */
static struct sl_cli_inherited inherited;

struct gw_cli {
	const char *policy_path;
	bool observe;	/* --observe */
	bool observing; /* the running policy is in observe mode */
	struct sl_gw *gw;
	struct sl_audit *audit;
	struct sl_gw_resolver *resolver_h;
	struct sl_tls_setup tls;
	uv_signal_t sig_usr1, sig_int, sig_term;
	/* SIGHUP comes through a signalfd, not uv_signal: only its siginfo
	 * says who sent it (policy-file.h, sl_cli_hup_is_request). */
	int hup_fd;
	uv_poll_t hup_poll;
	bool hup_polling;
	/* The options the setup reads. */
	const char *listen, *audit_path, *resolver, *dns, *ca_dir, *upstream_ca, *metrics;
	const char *gateway_user;
	/* Who the gateway becomes (confine.h), and the uid's lock when it
	 * was allocated (-1 otherwise). */
	struct sl_gw_confine confine;
	int uid_lock;
	/* Reopens the policy and the audit log once the gateway can no
	 * longer (gateway-reader.h). */
	struct sl_gw_reader reader;
	uv_poll_t reader_poll;
	bool reader_polling;
	/* The control socket (docs/control.md), as root only: listening
	 * until served, its server, and a reload it asked for under way. */
	int ctl_fd;
	struct sl_gw_control *ctl;
	bool ctl_reload;
	const char *sandbox;
};

static void gateway_usage(FILE *f)
{
	fputs("usage: sluice gateway --policy FILE --listen ADDR:PORT [--audit FILE|-]\n"
	      "                      [--dns ADDR:PORT] [--resolver ADDR[:PORT]] [--sandbox NAME]\n"
	      "                      [--connect-timeout MS] [--idle-timeout MS]\n"
	      "                      [--header-timeout MS] [--max-header-bytes N]\n"
	      "                      [--max-connections N] [--ca-dir DIR] [--upstream-ca FILE]\n"
	      "                      [--gateway-user USER|UID] [--metrics ADDR:PORT]\n"
	      "                      [--observe]\n"
	      "\n"
	      "--observe lets through what the policy's rules deny, audited as observe-deny\n"
	      "(SSRF refusals, protocol checks and credential rules still hold; every reload\n"
	      "stays in observe mode; docs/observe.md). `mode: observe` in the policy does\n"
	      "the same until a reload without it.\n"
	      "\n"
	      "Hosts whose rules name methods, paths or a credential are inspected: give\n"
	      "--ca-dir DIR, where sluice keeps its CA (ca.key, mode 0600; ca.crt and\n"
	      "ca-bundle.crt for clients to trust). --upstream-ca FILE verifies origins\n"
	      "against FILE instead of the system's trust store.\n"
	      "\n"
	      "--metrics ADDR:PORT serves Prometheus metrics (GET /metrics) there: an address\n"
	      "only the operator's scraper can reach, not one the agents can (docs/metrics.md).\n"
	      "\n"
	      "Before serving, the gateway confines itself: started as root, it runs as a\n"
	      "uid of its own (allocated, or --gateway-user USER|UID), chrooted into an\n"
	      "empty " SL_GW_ROOT "; always without capabilities, with no_new_privs,\n"
	      "and allowed only the system calls serving needs (sockets it has or makes to\n"
	      "the Internet, its event loop, memory, time, randomness): any other call\n"
	      "kills it, opening a file fails. A reader process forked at start reopens\n"
	      "the policy (SIGHUP) and the audit log (SIGUSR1) for it.\n",
	      f);
}

/* Without a sandbox there are no --rw paths; the file must still be
 * root's, or ours when we run unprivileged, in directories no one else can
 * write. */
static int load_policy(const char *path, struct sl_policy **ret)
{
	return sl_cli_policy_load("sluice gateway", path, NULL, ret);
}

/* A new policy must not need secrets this gateway was not started with.
 * Rules that need inspection without a CA are said once: TLS to their
 * hosts is refused (plain HTTP to them is still decided per request). */
static bool policy_ok(const struct gw_cli *g, const struct sl_policy *p, bool reload, char *err,
		      size_t errlen)
{
	unsigned line = sl_tls_first_inspected(p);

	if (line && !g->tls.ca)
		fprintf(stderr,
			"sluice gateway: %s:%u: this rule needs TLS inspection, which is off "
			"without --ca-dir DIR: CONNECT to its host is refused\n",
			p->source, line);
	return !reload || sl_tls_covers(&g->tls, p, err, errlen);
}

/* The outcome of a reload the control socket asked for, with what it
 * said (text, or NULL). */
static void ctl_answer(struct gw_cli *g, bool ok, const char *text)
{
	if (!g->ctl_reload)
		return;
	g->ctl_reload = false;
	sl_gw_control_reloaded(g->ctl, ok, text);
}

static void not_reloaded(struct gw_cli *g)
{
	fprintf(stderr, "sluice gateway: %s: not reloaded; the running policy stays in force\n",
		g->policy_path);
	ctl_answer(g, false, "the policy reader could not open it: see sluice gateway's stderr");
}

/* SIGHUP: the reader opens the file by its name, so a policy replaced by
 * an editor or `mv` is the one read (gateway-reader.h); its answer comes
 * to on_reader(). */
static void reload(struct gw_cli *g)
{
	int r = sl_gw_reader_ask(&g->reader, SL_READER_POLICY);

	if (r < 0) {
		fprintf(stderr, "sluice gateway: asking the policy reader for %s: %s\n",
			g->policy_path, r == -EPIPE ? "it is gone" : strerror(-r));
		not_reloaded(g);
	}
}

/* The loader's messages, each on stderr and kept (text, len bytes) for
 * the control socket's caller. */
static int load_fd_said(struct gw_cli *g, int fd, struct sl_policy **ret, char *text, size_t len)
{
	struct sl_diags d = {0};
	size_t have = 0;
	int r = sl_policy_load_fd(fd, g->policy_path, ret, &d);

	close(fd);
	text[0] = '\0';
	for (size_t i = 0; i < d.n; i++) {
		fprintf(stderr, "%s\n", d.msgs[i]);
		if (have < len)
			have += (size_t)snprintf(text + have, len - have, "%s\n", d.msgs[i]);
	}
	sl_diags_clear(&d);
	if (r < 0 && r != -EINVAL)
		snprintf(text, len, "%s: %s", g->policy_path, strerror(-r));
	return r;
}

/* The reader's fd of the policy, opened and checked as at start. */
static void reload_fd(struct gw_cli *g, int fd)
{
	struct sl_policy *p = NULL;
	char err[512], said[1024];

	if (load_fd_said(g, fd, &p, said, sizeof(said)) < 0 ||
	    !policy_ok(g, p, true, err, sizeof(err)) ||
	    sl_tls_reloaded(&g->tls, p) < 0) {
		if (p) {
			fprintf(stderr, "%s\n", err);
			snprintf(said, sizeof(said), "%s", err);
		}
		fprintf(stderr, "sluice gateway: %s: not reloaded; the running policy stays in force\n",
			g->policy_path);
		ctl_answer(g, false, said);
		sl_policy_free(p);
		return;
	}
	sl_cli_observe_force(p, g->observe);
	/* Said when it is observe mode, or leaves it. */
	fprintf(stderr, "sluice gateway: %s: reloaded%s\n", g->policy_path,
		p->mode == SL_MODE_OBSERVE ? " (observe mode)"
		: g->observing		   ? " (enforce mode)"
					   : "");
	g->observing = p->mode == SL_MODE_OBSERVE;
	sl_cli_observe_banner(stderr, "sluice gateway", p);
	sl_gw_set_policy(g->gw, p);
	ctl_answer(g, true, NULL);
}

/* Every SIGHUP queued since the last wakeup; one reload for all those a
 * process sent. */
static void on_hup(uv_poll_t *h, int status, int events)
{
	struct gw_cli *g = h->data;
	struct signalfd_siginfo si;
	bool requested = false;
	unsigned n = 0;

	(void)status;
	(void)events;
	/* Bounded: at most one standard signal is pending at a time, so this
	 * ends at once; the bound is for a kernel that would not. */
	while (n++ < 64 && read(g->hup_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (sl_cli_hup_is_request(si.ssi_code)) {
			requested = true;
			continue;
		}
		fprintf(stderr,
			"sluice gateway: SIGHUP from the kernel (a terminal hangup): not a "
			"reload; send SIGHUP with kill(1) to reload %s\n",
			g->policy_path);
	}
	if (requested)
		reload(g);
}

static void stop_reader_poll(struct gw_cli *g)
{
	if (g->reader_polling) {
		uv_close((uv_handle_t *)&g->reader_poll, NULL);
		g->reader_polling = false;
	}
}

/* Every answer the reader has sent (one per question). */
static void on_reader(uv_poll_t *h, int status, int events)
{
	struct gw_cli *g = h->data;
	enum sl_reader_what what;
	unsigned n = 0;
	int fd;

	(void)status;
	(void)events;
	/* Bounded: one answer per SIGHUP or SIGUSR1 asked. */
	while (n++ < 64 && (fd = sl_gw_reader_answer(&g->reader, &what)) != -EAGAIN) {
		if (fd == -EPIPE || fd == -EPROTO) {
			fprintf(stderr,
				"sluice gateway: the policy reader is gone: the policy and the "
				"audit log can no longer be reopened (restart sluice gateway)\n");
			stop_reader_poll(g);
			sl_gw_reader_stop(&g->reader);
			return;
		}
		if (what == SL_READER_POLICY) {
			if (fd < 0)
				not_reloaded(g);
			else
				reload_fd(g, fd);
		} else if (what == SL_READER_AUDIT && fd >= 0 && g->audit) {
			sl_audit_reopen_fd(g->audit, fd);
		} else if (fd >= 0) {
			close(fd);
		}
	}
}

static void hup_closed(uv_handle_t *h)
{
	struct gw_cli *g = h->data;

	sl_closep(&g->hup_fd);
}

static void stop_serving(struct gw_cli *g);

static void on_signal(uv_signal_t *s, int signum)
{
	struct gw_cli *g = s->data;

	if (signum == SIGUSR1) {
		/* The reader opens it (it says why when it cannot: the old file
		 * is written to meanwhile); stdout is not reopened. */
		if (g->audit && g->audit_path && strcmp(g->audit_path, "-") &&
		    sl_gw_reader_ask(&g->reader, SL_READER_AUDIT) < 0)
			fprintf(stderr, "sluice gateway: cannot reopen the audit log: the "
					"policy reader is gone\n");
		return;
	}
	stop_serving(g);
}

/* SIGINT, SIGTERM, or confinement failed: stop accepting, close
 * everything, let the loop run dry. */
static void stop_serving(struct gw_cli *g)
{
	sl_gw_control_stop(TAKE_PTR(g->ctl));
	sl_gw_shutdown(g->gw);
	sl_gw_resolver_free(g->resolver_h);
	if (g->hup_polling) {
		uv_close((uv_handle_t *)&g->hup_poll, hup_closed);
		g->hup_polling = false;
	}
	stop_reader_poll(g);
	uv_close((uv_handle_t *)&g->sig_usr1, NULL);
	uv_close((uv_handle_t *)&g->sig_int, NULL);
	uv_close((uv_handle_t *)&g->sig_term, NULL);
}

/* Setup failed once the gateway existed: tidy up as a signal would (the
 * secrets are wiped), let the loop run dry, then close the rest. */
static void stop_after_setup(struct gw_cli *g, uv_loop_t *loop)
{
	sl_gw_shutdown(g->gw);
	sl_gw_resolver_free(g->resolver_h);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	sl_audit_close(g->audit);
	sl_tls_setup_done(&g->tls);
}

static int parse_num(const char *flag, const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v == 0 || v > max || s[0] == '-' || s[0] == '+') {
		fprintf(stderr, "sluice gateway: %s '%s': expected a number from 1 to %lu\n", flag, s,
			max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* Who the gateway becomes, before anything secret is loaded: as root, a
 * uid of its own (allocated, or --gateway-user), chrooted; unprivileged,
 * its own ids. Then the reader, forked now so that its memory never holds
 * the CA key or a secret. */
static int prepare_confinement(struct gw_cli *g, char *err, size_t errlen)
{
	struct sl_netns_user u;
	int r;

	g->confine = (struct sl_gw_confine){ .uid = (uid_t)-1, .gid = (gid_t)-1 };
	if (geteuid() != 0) {
		if (g->gateway_user)
			return sl_err(err, errlen, -EPERM,
				      "--gateway-user %s: only root can change users "
				      "(unprivileged, the gateway keeps its own)",
				      g->gateway_user);
	} else {
		if (g->gateway_user) {
			r = sl_netns_user_resolve(g->gateway_user, &u, err, errlen);
			if (r < 0) {
				char why[256];

				snprintf(why, sizeof(why), "%s", err);
				return sl_err(err, errlen, r, "--gateway-user %s: %s",
					      g->gateway_user, why);
			}
		} else {
			r = sl_netns_user_allocate(NULL, &u, &g->uid_lock, err, errlen);
			if (r < 0)
				return r;
		}
		g->confine.uid = u.uid;
		g->confine.gid = u.gid;
		r = sl_cli_gateway_root(err, errlen);
		if (r < 0)
			return r;
		g->confine.empty_dir = SL_GW_ROOT;
		/* Before the reader: it removes the socket once we are gone. */
		g->ctl_fd = sl_cli_ctl_listen(err, errlen);
		if (g->ctl_fd < 0)
			return g->ctl_fd;
	}
	r = sl_gw_reader_start(&g->reader, "sluice gateway", g->policy_path, g->audit_path,
			       g->uid_lock >= 0 ? g->confine.uid : (uid_t)-1, g->uid_lock, err,
			       errlen);
	/* The reader holds the uid's lock (the same open file: the flock
	 * stays) and releases it: the gateway keeps no fd into /run/sluice. */
	if (r == 0 && g->uid_lock >= 0) {
		close(g->uid_lock);
		g->uid_lock = -1;
	}
	return r;
}

/* `sluice reload`: what SIGHUP does, its outcome to the caller. */
static void ctl_reload(void *data)
{
	struct gw_cli *g = data;

	g->ctl_reload = true;
	reload(g);
}

/* The control socket made before the reader, served from here on. */
static int control_start(struct gw_cli *g)
{
	struct sl_gw_control_cfg k = {
	    .name = g->sandbox ? g->sandbox : "gateway",
	    .policy_path = g->policy_path,
	    .pid = (long)getpid(),
	    .gateway_pid = (long)getpid(),
	    .started_s = (uint64_t)time(NULL),
	    .reload = ctl_reload,
	    .data = g,
	};
	int fd = g->ctl_fd;

	if (fd < 0)
		return 0;
	g->ctl_fd = -1;
	return sl_gw_control_start(g->gw, fd, &k, &g->ctl);
}

/* Setup done, sockets listening: confine, then serve until a signal. */
static int confine_and_serve(struct gw_cli *g, uv_loop_t *loop)
{
	char err[512] = "";
	uid_t uid = getuid(); /* once confined, not even that can be asked */
	int r;

	r = control_start(g);
	if (r < 0) {
		sl_err(err, sizeof(err), r, "serving the control socket: %s", strerror(-r));
	} else if (g->reader.fd >= 0 && uv_poll_init(loop, &g->reader_poll, g->reader.fd) == 0) {
		g->reader_poll.data = g;
		g->reader_polling = true;
		uv_poll_start(&g->reader_poll, UV_READABLE, on_reader);
		r = sl_cli_gateway_stdio();
		if (r < 0)
			sl_err(err, sizeof(err), r, "making stdin /dev/null, a terminal "
						    "write-only: %m");
		sl_cli_gateway_wipe_environ();
		sl_cli_inherited_close(&inherited);
		/* Opened before the confinement: a reloaded policy or a
		 * request may name a host in Unicode (host.c). */
		(void)sl_host_idn_load();
		r = r ?: sl_gw_confine(&g->confine, err, sizeof(err));
	} else {
		r = sl_err(err, sizeof(err), -EIO, "polling the policy reader failed");
	}
	if (r < 0) {
		fprintf(stderr, "sluice gateway: cannot confine the gateway: %s; not serving\n",
			err);
		/* Nothing was read from a client: close it all as a signal
		 * would, in whatever state the process was left. */
		stop_serving(g);
		uv_run(loop, UV_RUN_DEFAULT);
		uv_loop_close(loop);
		sl_audit_close(g->audit);
		sl_tls_setup_done(&g->tls);
		return SL_EXIT_FAILURE;
	}
	if (g->confine.uid != (uid_t)-1)
		fprintf(stderr, "sluice gateway: confined: uid %u, gid %u, in %s, no capabilities, "
				"seccomp allowlist\n",
			(unsigned)g->confine.uid, (unsigned)g->confine.gid, g->confine.empty_dir);
	else
		fprintf(stderr, "sluice gateway: confined: uid %u (unprivileged), no capabilities, "
				"seccomp allowlist\n",
			(unsigned)uid);
	fprintf(stderr, "sluice gateway: proxy on %s, policy %s\n", g->listen, g->policy_path);
	if (g->metrics)
		fprintf(stderr, "sluice gateway: metrics on http://%s/metrics\n", g->metrics);
	if (g->tls.ca)
		fprintf(stderr, "sluice gateway: inspecting TLS with the CA in %s (clients trust %s)\n",
			g->ca_dir, g->tls.bundle);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	sl_audit_close(g->audit);
	sl_tls_setup_done(&g->tls);
	return SL_EXIT_OK;
}

/* Load, open and bind everything; an SL_EXIT_ code. */
static int setup_and_serve(struct gw_cli *g, struct sl_gw_config *cfg, uv_loop_t *loop,
			   sigset_t *hup)
{
	struct sl_policy *policy = NULL;
	char err[512] = "";
	int r;

	if (load_policy(g->policy_path, &policy) < 0)
		return SL_EXIT_INVALID;
	g->observe = cfg->observe;
	sl_cli_observe_force(policy, g->observe);
	g->observing = policy->mode == SL_MODE_OBSERVE;
	sl_cli_observe_banner(stderr, "sluice gateway", policy);
	g->tls.prog = "sluice gateway";
	if (g->ca_dir) {
		r = sl_tls_open_ca_dir(&g->tls, g->ca_dir, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "sluice gateway: %s\n", err);
			sl_tls_setup_done(&g->tls);
			sl_policy_free(policy);
			return SL_EXIT_FAILURE;
		}
	}
	/* No sandbox user here: a secret file must still be root's (or
	 * ours) alone. */
	if (!policy_ok(g, policy, false, err, sizeof(err)) ||
	    sl_tls_load_secrets(&g->tls, policy, (uid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		sl_tls_setup_done(&g->tls);
		sl_policy_free(policy);
		return SL_EXIT_INVALID;
	}
	if (g->audit_path) {
		r = sl_audit_open(g->audit_path, &g->audit);
		if (r < 0) {
			fprintf(stderr, "sluice gateway: --audit '%s': %s\n", g->audit_path,
				strerror(-r));
			sl_tls_setup_done(&g->tls);
			sl_policy_free(policy);
			return SL_EXIT_FAILURE;
		}
	}
	r = sl_gw_resolver_new(loop, g->resolver, &g->resolver_h, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		sl_policy_free(policy);
		sl_audit_close(g->audit);
		sl_tls_setup_done(&g->tls);
		return r == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAILURE;
	}
	r = sl_gw_new(loop, cfg, policy, g->resolver_h, g->audit, &g->gw);
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", strerror(-r));
		sl_policy_free(policy);
		sl_gw_resolver_free(g->resolver_h);
		uv_run(loop, UV_RUN_DEFAULT);
		sl_audit_close(g->audit);
		sl_tls_setup_done(&g->tls);
		return SL_EXIT_FAILURE;
	}
	r = sl_tls_apply(&g->tls, g->gw, g->upstream_ca, err, sizeof(err));
	if (r < 0)
		r = -EIO; /* SL_EXIT_FAILURE, as before */
	if (r >= 0)
		r = sl_gw_listen_proxy(g->gw, g->listen, err, sizeof(err));
	if (r >= 0 && g->dns)
		r = sl_gw_listen_dns(g->gw, g->dns, err, sizeof(err));
	if (r >= 0 && g->metrics)
		r = sl_gw_listen_metrics(g->gw, g->metrics, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		stop_after_setup(g, loop);
		return r == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAILURE;
	}

	/* Without it, SIGHUP would stay blocked and never reload: refuse to
	 * run rather than ignore the operator. */
	g->hup_fd = signalfd(-1, hup, SFD_CLOEXEC | SFD_NONBLOCK);
	if (g->hup_fd < 0 || uv_poll_init(loop, &g->hup_poll, g->hup_fd) < 0) {
		fprintf(stderr, "sluice gateway: a signalfd for SIGHUP: %s\n",
			g->hup_fd < 0 ? strerror(errno) : "uv_poll_init failed");
		sl_closep(&g->hup_fd);
		stop_after_setup(g, loop);
		return SL_EXIT_FAILURE;
	}
	g->hup_poll.data = g;
	g->hup_polling = true;
	uv_poll_start(&g->hup_poll, UV_READABLE, on_hup);
	uv_signal_init(loop, &g->sig_usr1);
	uv_signal_init(loop, &g->sig_int);
	uv_signal_init(loop, &g->sig_term);
	g->sig_usr1.data = g->sig_int.data = g->sig_term.data = g;
	uv_signal_start(&g->sig_usr1, on_signal, SIGUSR1);
	uv_signal_start(&g->sig_int, on_signal, SIGINT);
	uv_signal_start(&g->sig_term, on_signal, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	return confine_and_serve(g, loop);
}

int sl_cmd_gateway(int argc, char **argv)
{
	enum {
		O_RESOLVER = 256,
		O_UPSTREAM_CA,
		O_SANDBOX,
		O_CT,
		O_IT,
		O_HT,
		O_MHB,
		O_MC,
		O_OBSERVE,
		O_DNS,
		O_CA_DIR,
		O_GW_USER,
		O_METRICS
	};
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "dns", required_argument, NULL, O_DNS },
		{ "audit", required_argument, NULL, 'a' },
		{ "resolver", required_argument, NULL, O_RESOLVER },
		{ "upstream-ca", required_argument, NULL, O_UPSTREAM_CA },
		{ "ca-dir", required_argument, NULL, O_CA_DIR },
		{ "sandbox", required_argument, NULL, O_SANDBOX },
		{ "gateway-user", required_argument, NULL, O_GW_USER },
		{ "connect-timeout", required_argument, NULL, O_CT },
		{ "idle-timeout", required_argument, NULL, O_IT },
		{ "header-timeout", required_argument, NULL, O_HT },
		{ "max-header-bytes", required_argument, NULL, O_MHB },
		{ "max-connections", required_argument, NULL, O_MC },
		{ "metrics", required_argument, NULL, O_METRICS },
		{ "observe", no_argument, NULL, O_OBSERVE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gw_cli g = { .hup_fd = -1, .uid_lock = -1, .reader = { .fd = -1 }, .ctl_fd = -1 };
	struct sl_gw_config cfg;
	uv_loop_t *loop;
	unsigned long v;
	char err[512] = "";
	sigset_t hup;
	int c, r;

	/* SIGHUP is blocked before any thread exists (libuv's and c-ares'
	 * inherit the mask), so it can only be read from the signalfd below:
	 * never delivered, never the default action (exit), never lost. */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &hup, NULL) < 0) {
		fprintf(stderr, "sluice gateway: blocking SIGHUP: %m\n");
		return SL_EXIT_FAILURE;
	}
	/* Before sluice opens anything of its own. */
	r = sl_cli_inherited_find(&inherited);
	if (r < 0) {
		fprintf(stderr, "sluice gateway: listing the fds it was started with: %s\n",
			strerror(-r));
		return SL_EXIT_FAILURE;
	}
	loop = uv_default_loop();
	sl_gw_config_defaults(&cfg);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			g.policy_path = optarg;
			break;
		case 'l':
			g.listen = optarg;
			break;
		case 'a':
			g.audit_path = optarg;
			break;
		case O_DNS:
			g.dns = optarg;
			break;
		case O_RESOLVER:
			g.resolver = optarg;
			break;
		case O_UPSTREAM_CA:
			g.upstream_ca = optarg;
			break;
		case O_CA_DIR:
			g.ca_dir = optarg;
			break;
		case O_SANDBOX:
			cfg.sandbox = g.sandbox = optarg;
			break;
		case O_GW_USER:
			g.gateway_user = optarg;
			break;
		case O_METRICS:
			if (sl_gw_metrics_addr_check(optarg, false, err, sizeof(err)) < 0) {
				fprintf(stderr, "sluice gateway: %s\n", err);
				return SL_EXIT_USAGE;
			}
			g.metrics = optarg;
			break;
		case O_CT:
		case O_IT:
		case O_HT:
			if (parse_num(argv[optind - 2], optarg, 24UL * 3600 * 1000, &v) < 0)
				return SL_EXIT_USAGE;
			if (c == O_CT)
				cfg.connect_timeout_ms = (unsigned)v;
			else if (c == O_IT)
				cfg.idle_timeout_ms = (unsigned)v;
			else
				cfg.header_timeout_ms = (unsigned)v;
			break;
		case O_MHB:
			if (parse_num("--max-header-bytes", optarg, 1 << 20, &v) < 0)
				return SL_EXIT_USAGE;
			cfg.max_header_bytes = v;
			break;
		case O_MC:
			if (parse_num("--max-connections", optarg, 1 << 20, &v) < 0)
				return SL_EXIT_USAGE;
			cfg.max_connections = (unsigned)v;
			break;
		case O_OBSERVE:
			cfg.observe = true;
			break;
		case 'h':
			gateway_usage(stdout);
			return SL_EXIT_OK;
		default:
			fprintf(stderr, "sluice gateway: unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			gateway_usage(stderr);
			return SL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sluice gateway: unexpected argument '%s'\n", argv[optind]);
		return SL_EXIT_USAGE;
	}
	/* The counters are the records counted (metrics.h): with --metrics
	 * and no log, the records are made, and thrown away. */
	if (!g.audit_path && g.metrics)
		g.audit_path = "/dev/null";
	if (!g.policy_path || !g.listen) {
		fprintf(stderr, "sluice gateway: --policy and --listen are required\n");
		gateway_usage(stderr);
		return SL_EXIT_USAGE;
	}

	if (sl_gw_reserve_fds(cfg.max_connections, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice gateway: --max-connections %u: %s\n", cfg.max_connections,
			err);
		return SL_EXIT_USAGE;
	}
	r = prepare_confinement(&g, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s; not serving\n", err);
		r = r == -EPERM && g.gateway_user && geteuid() != 0 ? SL_EXIT_USAGE
								     : SL_EXIT_FAILURE;
	} else {
		r = setup_and_serve(&g, &cfg, loop, &hup);
	}
	/* The reader releases an allocated uid once we are gone; without a
	 * reader, we still hold the ids and release it ourselves. */
	if (g.reader.fd >= 0)
		sl_gw_reader_stop(&g.reader);
	else if (g.uid_lock >= 0)
		sl_netns_user_release(NULL, g.confine.uid, TAKE_FD(g.uid_lock));
	/* Unconfined (setup failed): ours to remove; confined, the reader's. */
	sl_closep(&g.ctl_fd);
	sl_cli_ctl_remove();
	return r;
}
