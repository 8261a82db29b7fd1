/* SPDX-License-Identifier: MIT */
#pragma once

/* Exit codes shared by every command. */
enum {
	SL_EXIT_OK = 0,
	SL_EXIT_INVALID = 1, /* the policy (or other input file) is invalid */
	SL_EXIT_USAGE = 2,   /* bad command line */
	SL_EXIT_DENIED = 3,  /* `check --decide`: the request would be denied */
	SL_EXIT_FAILURE = 4, /* the system refused (netlink, permissions, resources) */
};

int sl_cmd_attach(int argc, char **argv);
int sl_cmd_check(int argc, char **argv);
/* ps, reload, pending, approve, deny (control.c): argv[0] names which. */
int sl_cmd_control(int argc, char **argv);
int sl_cmd_gateway(int argc, char **argv);
int sl_cmd_guard(int argc, char **argv);
int sl_cmd_learn(int argc, char **argv);
int sl_cmd_probe(int argc, char **argv);
int sl_cmd_run(int argc, char **argv);
