/* SPDX-License-Identifier: MIT */
/*
 * sluice guard --uid UID --gateway ADDR:PORT [--remove]
 * sluice guard --check --uid UID [--gateway ADDR:PORT]
 *
 * For agents that run as a dedicated user without a namespace (a systemd
 * unit with User=): per-uid nftables rules in the current (host) namespace
 * that let that uid reach only the gateway. The rules persist on purpose:
 * a crashed sluice must not take the boundary with it. They live only in
 * kernel memory, though, so --check reads them back and says whether they
 * are still the ones guard installs (examples/systemd/ runs it on a timer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "macro.h"
#include "nft.h"
#include "nft-query.h"

static void guard_usage(FILE *f)
{
	fputs("usage: sluice guard --uid UID --gateway ADDR:PORT\n"
	      "       sluice guard --uid UID --remove\n"
	      "       sluice guard --check --uid UID [--gateway ADDR:PORT]\n"
	      "\n"
	      "Let processes of uid UID reach only ADDR:PORT over TCP (ADDR is IPv4, or IPv6 in\n"
	      "brackets: [::1]:3128); everything else they send is refused. The rules stay until\n"
	      "--remove, also after sluice exits. Run again to replace them.\n"
	      "\n"
	      "They live in kernel memory only: `nft flush ruleset`, a firewall reload or a\n"
	      "reboot removes them. --check reads them back and exits 0 only when table inet\n"
	      "sluice-guard, the uid's chain and its rules are exactly what guard installs (for\n"
	      "ADDR:PORT when given, else for the gateway the rules name); otherwise it says\n"
	      "what is missing or changed and exits 1 (4 when the rules cannot be read).\n"
	      "examples/systemd/ has units that install them at boot and put them back.\n",
	      f);
}

/* A uid in decimal; (uid_t)-1 is "no uid" to the kernel, so not one. */
static int parse_uid(const char *s, uid_t *ret)
{
	unsigned long v;
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= (unsigned long)(uid_t)-1)
		return -EINVAL;
	*ret = (uid_t)v;
	return 0;
}

static int parse_port(const char *s, uint16_t *ret)
{
	unsigned long v;
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* ADDR:PORT or [ADDR6]:PORT into cfg; *why names what is wrong. */
static int parse_gateway(const char *s, struct sl_nft_guard *cfg, const char **why)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port;
	size_t len;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':') {
			*why = "an IPv6 address needs the form [ADDR]:PORT";
			return -EINVAL;
		}
		len = (size_t)(close - s - 1);
		port = close + 2;
		if (len >= sizeof(host)) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		memcpy(host, s + 1, len);
		host[len] = '\0';
		if (inet_pton(AF_INET6, host, &cfg->addr6) != 1) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		cfg->family = AF_INET6;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon) {
			*why = "no port (the form is ADDR:PORT, or [ADDR]:PORT for IPv6)";
			return -EINVAL;
		}
		if (strchr(s, ':') != colon) {
			*why = "an IPv6 address must be in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
		len = (size_t)(colon - s);
		port = colon + 1;
		if (len >= sizeof(host)) {
			*why = "not an IPv4 address";
			return -EINVAL;
		}
		memcpy(host, s, len);
		host[len] = '\0';
		if (inet_pton(AF_INET, host, &cfg->addr4) != 1) {
			*why = "not an IPv4 address (names are not resolved here)";
			return -EINVAL;
		}
		cfg->family = AF_INET;
	}
	if (parse_port(port, &cfg->port) < 0) {
		*why = "the port must be a number from 1 to 65535";
		return -EINVAL;
	}
	return 0;
}

/* One option's value: "--flag VALUE" or "--flag=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *flag)
{
	size_t n = strlen(flag);

	if (!strncmp(argv[*i], flag, n) && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "sluice guard: %s needs a value\n", flag);
		return NULL;
	}
	return argv[++*i];
}

static bool is_flag(const char *arg, const char *flag)
{
	size_t n = strlen(flag);

	return !strncmp(arg, flag, n) && (arg[n] == '\0' || arg[n] == '=');
}

/* "127.0.0.1:3128" or "[::1]:3128". */
static void format_gateway(const struct sl_nft_guard *g, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(g->family, g->family == AF_INET ? (const void *)&g->addr4 : (const void *)&g->addr6,
		  a, sizeof(a));
	snprintf(buf, len, g->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, g->port);
}

/* --check: 0 intact, 1 missing or changed (and why), 4 unreadable. The
 * message on failure is one line, for the journal of a unit that runs this
 * on a timer. */
static int guard_check(const struct sl_nft_guard *cfg, const char *gateway_arg)
{
	struct sl_nft_guard_report rep;
	char err[512] = "", gw[INET6_ADDRSTRLEN + 16], again[INET6_ADDRSTRLEN + 96];
	int r;

	r = sl_nft_guard_check(cfg, &rep, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice guard: --check --uid %u: %s%s\n", (unsigned)cfg->uid,
			err[0] ? err : strerror(-r),
			r == -EPERM ? " (reading nftables needs root or CAP_NET_ADMIN)" : "");
		return SL_EXIT_FAILURE;
	}
	if (rep.state == SL_NFT_GUARD_INTACT) {
		format_gateway(&rep.checked, gw, sizeof(gw));
		printf("sluice guard: uid %u is guarded: it may reach only %s (tcp); table inet %s, "
		       "chain uid-%u, %zu rules as guard installs them\n",
		       (unsigned)cfg->uid, gw, SL_NFT_GUARD_TABLE, (unsigned)cfg->uid, rep.n_rules);
		return SL_EXIT_OK;
	}
	if (gateway_arg) {
		snprintf(again, sizeof(again), "sluice guard --uid %u --gateway %s", (unsigned)cfg->uid,
			 gateway_arg);
	} else if (rep.checked.family != AF_UNSPEC) {
		format_gateway(&rep.checked, gw, sizeof(gw));
		snprintf(again, sizeof(again), "sluice guard --uid %u --gateway %s", (unsigned)cfg->uid,
			 gw);
	} else {
		snprintf(again, sizeof(again), "sluice guard --uid %u --gateway ADDR:PORT",
			 (unsigned)cfg->uid);
	}
	fprintf(stderr, "sluice guard: --check: uid %u %s: %s; `%s` puts them back\n",
		(unsigned)cfg->uid,
		rep.state == SL_NFT_GUARD_CHANGED ? "has rules, but not the ones guard installs"
						  : "is NOT guarded",
		rep.why, again);
	return SL_EXIT_INVALID;
}

int sl_cmd_guard(int argc, char **argv)
{
	struct sl_nft_guard cfg = { .family = AF_UNSPEC };
	const char *uid_arg = NULL, *gateway_arg = NULL;
	char err[512] = "", shown[INET6_ADDRSTRLEN];
	bool remove = false, check = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if (is_flag(argv[i], "--uid")) {
			if (!(uid_arg = option_value(argc, argv, &i, "--uid")))
				return SL_EXIT_USAGE;
		} else if (is_flag(argv[i], "--gateway")) {
			if (!(gateway_arg = option_value(argc, argv, &i, "--gateway")))
				return SL_EXIT_USAGE;
		} else if (!strcmp(argv[i], "--remove")) {
			remove = true;
		} else if (!strcmp(argv[i], "--check")) {
			check = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			guard_usage(stdout);
			return SL_EXIT_OK;
		} else {
			fprintf(stderr, "sluice guard: unknown argument '%s'\n", argv[i]);
			guard_usage(stderr);
			return SL_EXIT_USAGE;
		}
	}

	if (!uid_arg) {
		fprintf(stderr, "sluice guard: --uid UID is required\n");
		guard_usage(stderr);
		return SL_EXIT_USAGE;
	}
	if (parse_uid(uid_arg, &cfg.uid) < 0) {
		fprintf(stderr, "sluice guard: --uid '%s': not a uid (a number, as `id -u` prints)\n",
			uid_arg);
		return SL_EXIT_USAGE;
	}
	/* Root can delete any rule, so guarding it protects nothing, and it
	 * would cut off every root daemon, sluice's gateway included. */
	if (cfg.uid == 0) {
		fprintf(stderr, "sluice guard: --uid 0: root cannot be guarded (it can remove the "
				"rules, and they would cut off the host's own daemons)\n");
		return SL_EXIT_USAGE;
	}

	if (check && remove) {
		fprintf(stderr, "sluice guard: --check and --remove do not go together\n");
		guard_usage(stderr);
		return SL_EXIT_USAGE;
	}

	if (remove) {
		r = sl_nft_guard_remove(cfg.uid, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "sluice guard: --remove --uid %u: %s\n", (unsigned)cfg.uid,
				err[0] ? err : strerror(-r));
			return r == -ENOENT ? SL_EXIT_INVALID : SL_EXIT_FAILURE;
		}
		printf("sluice guard: removed the rules for uid %u\n", (unsigned)cfg.uid);
		return SL_EXIT_OK;
	}

	if (!gateway_arg && check)
		return guard_check(&cfg, NULL);
	if (!gateway_arg) {
		fprintf(stderr, "sluice guard: --gateway ADDR:PORT is required (or --remove)\n");
		guard_usage(stderr);
		return SL_EXIT_USAGE;
	}
	{
		const char *why = NULL;

		if (parse_gateway(gateway_arg, &cfg, &why) < 0) {
			fprintf(stderr, "sluice guard: --gateway '%s': %s\n", gateway_arg, why);
			return SL_EXIT_USAGE;
		}
	}

	if (check)
		return guard_check(&cfg, gateway_arg);

	r = sl_nft_guard_apply(&cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "sluice guard: --uid %u --gateway %s: %s%s\n", (unsigned)cfg.uid,
			gateway_arg, err[0] ? err : strerror(-r),
			r == -EPERM ? " (changing nftables needs root or CAP_NET_ADMIN)" : "");
		return SL_EXIT_FAILURE;
	}
	inet_ntop(cfg.family, cfg.family == AF_INET ? (const void *)&cfg.addr4
						    : (const void *)&cfg.addr6,
		  shown, sizeof(shown));
	printf("sluice guard: uid %u may reach only %s%s%s:%u (tcp); rules in table inet %s, "
	       "chain uid-%u\n",
	       (unsigned)cfg.uid, cfg.family == AF_INET6 ? "[" : "", shown,
	       cfg.family == AF_INET6 ? "]" : "", cfg.port, SL_NFT_GUARD_TABLE,
	       (unsigned)cfg.uid);
	return SL_EXIT_OK;
}
