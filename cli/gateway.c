/* SPDX-License-Identifier: MIT */
/*
 * sluice gateway --policy FILE --listen ADDR:PORT [--audit FILE|-]
 *                [--dns ADDR:PORT] [--resolver ADDR[:PORT]] [--sandbox NAME]
 *                [--ca-dir DIR] [--upstream-ca FILE] [limits...]
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
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <uv.h>

#include "cli.h"
#include "gateway.h"
#include "macro.h"
#include "policy-file.h"
#include "tls-setup.h"

struct gw_cli {
	const char *policy_path;
	struct sl_gw *gw;
	struct sl_audit *audit;
	struct sl_gw_resolver *resolver;
	struct sl_tls_setup tls;
	uv_signal_t sig_usr1, sig_int, sig_term;
	/* SIGHUP comes through a signalfd, not uv_signal: only its siginfo
	 * says who sent it (policy-file.h, sl_cli_hup_is_request). */
	int hup_fd;
	uv_poll_t hup_poll;
	bool hup_polling;
};

static void gateway_usage(FILE *f)
{
	fputs("usage: sluice gateway --policy FILE --listen ADDR:PORT [--audit FILE|-]\n"
	      "                      [--dns ADDR:PORT] [--resolver ADDR[:PORT]] [--sandbox NAME]\n"
	      "                      [--connect-timeout MS] [--idle-timeout MS]\n"
	      "                      [--header-timeout MS] [--max-header-bytes N]\n"
	      "                      [--max-connections N] [--ca-dir DIR] [--upstream-ca FILE]\n"
	      "\n"
	      "Hosts whose rules name methods, paths or a credential are inspected: give\n"
	      "--ca-dir DIR, where sluice keeps its CA (ca.key, mode 0600; ca.crt and\n"
	      "ca-bundle.crt for clients to trust). --upstream-ca FILE verifies origins\n"
	      "against FILE instead of the system's trust store.\n",
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

static void reload(struct gw_cli *g)
{
	struct sl_policy *p = NULL;
	char err[512];

	if (load_policy(g->policy_path, &p) < 0 || !policy_ok(g, p, true, err, sizeof(err)) ||
	    sl_tls_reloaded(&g->tls, p) < 0) {
		if (p)
			fprintf(stderr, "%s\n", err);
		fprintf(stderr, "sluice gateway: %s: not reloaded; the running policy "
				"stays in force\n",
			g->policy_path);
		sl_policy_free(p);
		return;
	}
	sl_gw_set_policy(g->gw, p);
	fprintf(stderr, "sluice gateway: %s: reloaded\n", g->policy_path);
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

static void hup_closed(uv_handle_t *h)
{
	struct gw_cli *g = h->data;

	sl_closep(&g->hup_fd);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct gw_cli *g = s->data;

	if (signum == SIGUSR1) {
		if (g->audit && sl_audit_reopen(g->audit) < 0)
			fprintf(stderr, "sluice gateway: cannot reopen the audit log: %m\n");
		return;
	}
	/* SIGINT, SIGTERM: stop accepting, close everything, let the loop
	 * run dry. */
	sl_gw_shutdown(g->gw);
	sl_gw_resolver_free(g->resolver);
	if (g->hup_polling) {
		uv_close((uv_handle_t *)&g->hup_poll, hup_closed);
		g->hup_polling = false;
	}
	uv_close((uv_handle_t *)&g->sig_usr1, NULL);
	uv_close((uv_handle_t *)&g->sig_int, NULL);
	uv_close((uv_handle_t *)&g->sig_term, NULL);
}

/* Setup failed once the gateway existed: tidy up as a signal would (the
 * secrets are wiped), let the loop run dry, then close the rest. */
static void stop_after_setup(struct gw_cli *g, uv_loop_t *loop)
{
	sl_gw_shutdown(g->gw);
	sl_gw_resolver_free(g->resolver);
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
		O_DNS,
		O_CA_DIR
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
		{ "connect-timeout", required_argument, NULL, O_CT },
		{ "idle-timeout", required_argument, NULL, O_IT },
		{ "header-timeout", required_argument, NULL, O_HT },
		{ "max-header-bytes", required_argument, NULL, O_MHB },
		{ "max-connections", required_argument, NULL, O_MC },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gw_cli g = { .hup_fd = -1 };
	struct sl_gw_config cfg;
	struct sl_policy *policy = NULL;
	const char *listen = NULL, *audit_path = NULL, *resolver = NULL, *dns = NULL;
	const char *ca_dir = NULL, *upstream_ca = NULL;
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
			listen = optarg;
			break;
		case 'a':
			audit_path = optarg;
			break;
		case O_DNS:
			dns = optarg;
			break;
		case O_RESOLVER:
			resolver = optarg;
			break;
		case O_UPSTREAM_CA:
			upstream_ca = optarg;
			break;
		case O_CA_DIR:
			ca_dir = optarg;
			break;
		case O_SANDBOX:
			cfg.sandbox = optarg;
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
	if (!g.policy_path || !listen) {
		fprintf(stderr, "sluice gateway: --policy and --listen are required\n");
		gateway_usage(stderr);
		return SL_EXIT_USAGE;
	}

	if (sl_gw_reserve_fds(cfg.max_connections, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice gateway: --max-connections %u: %s\n", cfg.max_connections,
			err);
		return SL_EXIT_USAGE;
	}
	if (load_policy(g.policy_path, &policy) < 0)
		return SL_EXIT_INVALID;
	g.tls.prog = "sluice gateway";
	if (ca_dir) {
		r = sl_tls_open_ca_dir(&g.tls, ca_dir, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "sluice gateway: %s\n", err);
			sl_tls_setup_done(&g.tls);
			sl_policy_free(policy);
			return SL_EXIT_FAILURE;
		}
	}
	/* No sandbox user here: a secret file must still be root's (or
	 * ours) alone. */
	if (!policy_ok(&g, policy, false, err, sizeof(err)) ||
	    sl_tls_load_secrets(&g.tls, policy, (uid_t)-1, err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		sl_tls_setup_done(&g.tls);
		sl_policy_free(policy);
		return SL_EXIT_INVALID;
	}
	if (audit_path) {
		r = sl_audit_open(audit_path, &g.audit);
		if (r < 0) {
			fprintf(stderr, "sluice gateway: --audit '%s': %s\n", audit_path, strerror(-r));
			sl_tls_setup_done(&g.tls);
			sl_policy_free(policy);
			return SL_EXIT_FAILURE;
		}
	}
	r = sl_gw_resolver_new(loop, resolver, &g.resolver, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		sl_policy_free(policy);
		sl_audit_close(g.audit);
		sl_tls_setup_done(&g.tls);
		return r == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAILURE;
	}
	r = sl_gw_new(loop, &cfg, policy, g.resolver, g.audit, &g.gw);
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", strerror(-r));
		sl_policy_free(policy);
		sl_gw_resolver_free(g.resolver);
		uv_run(loop, UV_RUN_DEFAULT);
		sl_audit_close(g.audit);
		sl_tls_setup_done(&g.tls);
		return SL_EXIT_FAILURE;
	}
	r = sl_tls_apply(&g.tls, g.gw, upstream_ca, err, sizeof(err));
	if (r < 0)
		r = -EIO; /* SL_EXIT_FAILURE, as before */
	if (r >= 0)
		r = sl_gw_listen_proxy(g.gw, listen, err, sizeof(err));
	if (r >= 0 && dns)
		r = sl_gw_listen_dns(g.gw, dns, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice gateway: %s\n", err);
		stop_after_setup(&g, loop);
		return r == -EINVAL ? SL_EXIT_USAGE : SL_EXIT_FAILURE;
	}

	/* Without it, SIGHUP would stay blocked and never reload: refuse to
	 * run rather than ignore the operator. */
	g.hup_fd = signalfd(-1, &hup, SFD_CLOEXEC | SFD_NONBLOCK);
	if (g.hup_fd < 0 || uv_poll_init(loop, &g.hup_poll, g.hup_fd) < 0) {
		fprintf(stderr, "sluice gateway: a signalfd for SIGHUP: %s\n",
			g.hup_fd < 0 ? strerror(errno) : "uv_poll_init failed");
		sl_closep(&g.hup_fd);
		stop_after_setup(&g, loop);
		return SL_EXIT_FAILURE;
	}
	g.hup_poll.data = &g;
	g.hup_polling = true;
	uv_poll_start(&g.hup_poll, UV_READABLE, on_hup);
	uv_signal_init(loop, &g.sig_usr1);
	uv_signal_init(loop, &g.sig_int);
	uv_signal_init(loop, &g.sig_term);
	g.sig_usr1.data = g.sig_int.data = g.sig_term.data = &g;
	uv_signal_start(&g.sig_usr1, on_signal, SIGUSR1);
	uv_signal_start(&g.sig_int, on_signal, SIGINT);
	uv_signal_start(&g.sig_term, on_signal, SIGTERM);
	signal(SIGPIPE, SIG_IGN);

	fprintf(stderr, "sluice gateway: proxy on %s, policy %s\n", listen, g.policy_path);
	if (g.tls.ca)
		fprintf(stderr, "sluice gateway: inspecting TLS with the CA in %s (clients trust %s)\n",
			ca_dir, g.tls.bundle);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	sl_audit_close(g.audit);
	sl_tls_setup_done(&g.tls);
	return SL_EXIT_OK;
}
