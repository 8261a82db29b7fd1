/* SPDX-License-Identifier: MIT */
/* Shared between the files of netns-helper, not part of its API. */
#pragma once

#include "netns.h"

/* The directory fd of the v2 group of `cg`, for clone3(CLONE_INTO_CGROUP),
 * or -1 when it has none. A child born there with that flag is a member
 * from its first instruction, and nothing migrates it: writing a pid to
 * cgroup.procs takes cgroup_threadgroup_rwsem for writing, which waits out
 * an RCU grace period (tens of milliseconds on a busy machine). */
int sl_netns_cgroup_v2_fd(const struct sl_netns_cgroup *cg);
/* Move the calling process into every group of `cg` (but the v2 one when
 * `born_in_v2`: clone3 put it there). Called by the child before it drops
 * privileges; uses only fds opened beforehand. */
int sl_netns_cgroup_join(const struct sl_netns_cgroup *cg, bool born_in_v2, char *err,
			 size_t errlen);

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
/* Load f (sl_netns_filter_build) the same way. */
int sl_netns_filter_load(const struct sl_netns_filter *f, char *err, size_t errlen);
