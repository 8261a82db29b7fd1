/* SPDX-License-Identifier: MIT */
/*
 * Where the control sockets live (docs/control.md): SL_CTL_DIR, root's,
 * mode 0700, one socket per sandbox or standalone gateway, named by the
 * pid of the process that made it (the supervisor of `run` or `attach`,
 * or `sluice gateway` itself): sandbox names are not unique across
 * network namespaces, pids are unique among live processes. A path, not
 * an abstract socket: abstract names are per network namespace, and the
 * sandbox's would be its own, but a path is reached only through a file
 * system, and the sandbox's /run is its own tmpfs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SL_CTL_DIR "/run/sluice/ctl"

/*
 * Check SL_CTL_DIR (make it, with /run/sluice, when create): a directory,
 * not a link, root's, mode 0700; anything else is refused, never
 * repaired. 0, or a negative errno with err saying what is wrong.
 */
int sl_cli_ctl_dir(bool create, char *err, size_t errlen);

/*
 * Bind and listen on SL_CTL_DIR/<getpid()>.sock, mode 0600 (a stale one,
 * nobody listening, is replaced; a live one refused). The listening fd
 * (close-on-exec), or a negative errno with err. The path is kept for
 * sl_cli_ctl_remove().
 */
int sl_cli_ctl_listen(char *err, size_t errlen);

/* Remove the socket sl_cli_ctl_listen() made, if any (every way out of
 * whoever made it, or of the process left to clean up after it). */
void sl_cli_ctl_remove(void);
