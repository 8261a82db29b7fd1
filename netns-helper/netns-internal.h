/* SPDX-License-Identifier: MIT */
/* Shared between the files of netns-helper, not part of its API. */
#pragma once

#include "netns.h"

/* Move the calling process into every group of `cg`. Called by the child
 * before it drops privileges; uses only fds opened beforehand. */
int sl_netns_cgroup_join(const struct sl_netns_cgroup *cg, char *err, size_t errlen);
