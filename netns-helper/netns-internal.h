/* SPDX-License-Identifier: MIT */
/* Shared between the files of netns-helper, not part of its API. */
#pragma once

#include "netns.h"

/* Move the calling process into every group of `cg`. Called by the child
 * before it drops privileges; uses only fds opened beforehand. */
int sl_netns_cgroup_join(const struct sl_netns_cgroup *cg, char *err, size_t errlen);

/* Build the command's filesystem view (mounts.c) in the caller's mount
 * namespace, which must be a fresh one; the caller is root, already in the
 * sandbox's network namespace and the init of its pid namespace (/proc and
 * /sys are mounted anew for those). */
int sl_netns_fs_setup(const struct sl_netns_fs *fs, const struct sl_netns_user *u,
		      struct in_addr gateway, char *err, size_t errlen);

/* Load the command's system-call filter (seccomp.c) into the calling
 * process, which must have no_new_privs set; it is inherited by everything
 * the command forks and cannot be removed. */
int sl_netns_seccomp_command(char *err, size_t errlen);
