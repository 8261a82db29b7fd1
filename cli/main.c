/* SPDX-License-Identifier: MIT */
/*
 * sluice: an egress-filtering gateway for AI agents. This file only
 * dispatches to the commands; each lives in its own file.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "openssl-shim.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "unknown"
#endif

static void usage(FILE *f)
{
	fputs("usage: sluice COMMAND [ARG...]\n"
	      "\n"
	      "commands (every flag; `sluice COMMAND --help` says what each does):\n"
	      "  attach (--pid PID | --netns PATH) --policy FILE [--audit FILE|-]\n"
	      "         [--resolver ADDR[:PORT]] [--pool CIDR] [--ca-dir DIR] [--upstream-ca FILE]\n"
	      "         [--metrics ADDR:PORT] [--observe]\n"
	      "                 fence an existing namespace (a container's) behind the gateway\n"
	      "  approve ID | deny ID\n"
	      "                 answer a request held for approval (see pending)\n"
	      "  check FILE [--decide HOST[:PORT] [METHOD PATH]]\n"
	      "                 validate a policy; with --decide, show how it decides a request\n"
	      "  gateway --policy FILE --listen ADDR:PORT [--audit FILE|-] [--dns ADDR:PORT]\n"
	      "          [--resolver ADDR[:PORT]] [--sandbox NAME] [--connect-timeout MS]\n"
	      "          [--idle-timeout MS] [--header-timeout MS] [--max-header-bytes N]\n"
	      "          [--max-connections N] [--ca-dir DIR] [--upstream-ca FILE]\n"
	      "          [--gateway-user USER|UID] [--metrics ADDR:PORT] [--observe]\n"
	      "                 serve an explicit proxy that enforces the policy\n"
	      "  guard --uid UID --gateway ADDR:PORT | --uid UID --remove\n"
	      "        | --check --uid UID [--gateway ADDR:PORT]\n"
	      "                 let uid UID reach only ADDR:PORT (persistent nftables rules)\n"
	      "  learn AUDIT.log [--policy BASE]\n"
	      "                 print a policy that would have allowed what the audit log shows\n"
	      "  pending        the requests held for approval (approve: true), one a line\n"
	      "  probe [--outside ADDR]... [--outside-pid PID] [--allow-write PATH]...\n"
	      "        [--secret-file PATH]... [--denied-name NAME] [--timeout MS]\n"
	      "        [--only KIND[,KIND...]] [TARGET...]\n"
	      "                 try every way out of the sandbox it runs in; report each\n"
	      "  ps             the running sandboxes and gateways, from their control sockets\n"
	      "  reload NAME|PID\n"
	      "                 reload one sandbox's policy as SIGHUP does; errors say file:line\n"
	      "  run [--policy FILE] [--user USER|UID] [--memory BYTES] [--pids N] [--cpu PERCENT]\n"
	      "      [--pool CIDR] [--audit FILE] [--rw PATH]... [--ro PATH]... [--trust FILE]...\n"
	      "      [--env NAME[=VALUE]]... [--resolver ADDR[:PORT]] [--upstream-ca FILE]\n"
	      "      [--metrics ADDR:PORT] [--observe]\n"
	      "      -- CMD [ARG...]  run CMD in a sandbox that can reach only the gateway\n"
	      "\n"
	      "  sluice --help | --version\n",
	      f);
}

int main(int argc, char **argv)
{
	char err[256];

	if (argc < 2) {
		usage(stderr);
		return SL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return SL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("sluice %s\n", SLUICE_VERSION);
		return SL_EXIT_OK;
	}
	if (!strcmp(argv[1], "run"))
		return sl_cmd_run(argc - 1, argv + 1); /* loads OpenSSL if it needs it */
	/* Every other command as if OpenSSL were linked (few need it, and
	 * none is started as often as run). */
	if (sl_ossl_load(err, sizeof(err)) < 0) {
		fprintf(stderr, "sluice: %s\n", err);
		return SL_EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "attach"))
		return sl_cmd_attach(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return sl_cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gateway"))
		return sl_cmd_gateway(argc - 1, argv + 1);
	if (!strcmp(argv[1], "guard"))
		return sl_cmd_guard(argc - 1, argv + 1);
	if (!strcmp(argv[1], "learn"))
		return sl_cmd_learn(argc - 1, argv + 1);
	if (!strcmp(argv[1], "probe"))
		return sl_cmd_probe(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ps") || !strcmp(argv[1], "reload") || !strcmp(argv[1], "pending") ||
	    !strcmp(argv[1], "approve") || !strcmp(argv[1], "deny"))
		return sl_cmd_control(argc - 1, argv + 1);

	fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return SL_EXIT_USAGE;
}
