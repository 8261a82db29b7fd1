/* SPDX-License-Identifier: MIT */
/*
 * Loading the policy file as every command that enforces one must (run,
 * attach, gateway; at start and at every reload): only from a place that
 * nobody but root, or the user sluice runs as when unprivileged, can
 * change (common/safe-file.h), and reloading only when a process asked.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "policy.h"

/*
 * Load the policy at path, refusing a file that root's and sluice's own
 * user's are not the only hands on, or that lies in one of
 * sandbox_writable (NULL-terminated, or NULL: the sandbox's --rw paths).
 * Whatever is wrong goes to stderr, each line "file:line:col: ..." or
 * "PROG: file: ... (fix)". Returns 0 and sets *ret, or a negative errno:
 * -EPERM (where it lies), -EINVAL (what it says), another (reading it).
 */
int sl_cli_policy_load(const char *prog, const char *path, const char *const *sandbox_writable,
		       struct sl_policy **ret);
/* The same, and the bytes it was parsed from (malloc'd, in *ret_buf,
 * *ret_len of them): what a reload hands to the gateway's process. */
int sl_cli_policy_load_bytes(const char *prog, const char *path,
			     const char *const *sandbox_writable, struct sl_policy **ret,
			     char **ret_buf, size_t *ret_len);

/* The same, for a file another process opened and checked as above (a
 * confined gateway cannot open files: gateway-reader.h). Takes fd. */
int sl_cli_policy_load_fd(const char *prog, int fd, const char *path, struct sl_policy **ret);

/*
 * Is a SIGHUP with this si_code a request to reload? Only when a process
 * sent it (kill, sigqueue, tgkill). The kernel sends SIGHUP too (si_code
 * SI_KERNEL) when a terminal hangs up or a process group is orphaned,
 * and whoever holds the other end of a terminal can cause that: it must
 * not be the way a sandbox gets its policy reread.
 */
bool sl_cli_hup_is_request(int si_code);
