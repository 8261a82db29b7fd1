/* SPDX-License-Identifier: MIT */
/* What the gateway process keeps of the process that started it, made
 * ready before it is confined (gw-process.c): its root directory, stdio,
 * environment and inherited fds. */
#pragma once

#include <stddef.h>

#define SL_GW_ROOT "/run/sluice/empty"

/*
 * Make SL_GW_ROOT if missing, and check it: a directory (not a symlink)
 * of root:root, mode 0555, with nothing in it, in a /run/sluice that only
 * root can change. Whoever could put something there would give the
 * confined gateway a file system again, so anything else is refused, never
 * repaired. 0, or a negative errno with err naming what is wrong.
 */
int sl_cli_gateway_root(char *err, size_t errlen);

/*
 * What the gateway process keeps of its starter, made harmless before it
 * is confined (read(2) stays allowed there): stdin /dev/null; stdout and
 * stderr, where they are a terminal (a shell's are the tty open for
 * reading too), reopened write-only, so that a gateway the sandbox took
 * over cannot read what the operator types. 0 or a negative errno.
 */
int sl_cli_gateway_stdio(void);

/* Every string of the process's environment wiped: the gateway reads none
 * once set up, and an operator's tokens (or the policy's secrets, read
 * from it) must not stay in its memory and /proc/PID/environ. */
void sl_cli_gateway_wipe_environ(void);

/*
 * The fds above stderr that whoever started sluice gateway left open (a
 * launcher's leak: a socket to a daemon, a file), found before sluice opens
 * any, closed just before it is confined: the filter restricts making
 * sockets, not using one it was handed.
 */
struct sl_cli_inherited {
	int *fd;
	size_t n;
};
int sl_cli_inherited_find(struct sl_cli_inherited *ret);
void sl_cli_inherited_close(struct sl_cli_inherited *in);
