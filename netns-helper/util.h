/* SPDX-License-Identifier: MIT */
/* Small helpers internal to netns-helper. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "macro.h"

/* Write `s` to an existing file such as a sysctl or a cgroup knob, in one
 * write(2) as those files want. */
int sl_write_file(const char *path, const char *s);

/* Create `path` and each missing directory above it (mode 0755, like
 * `mkdir -p`); one that exists already is fine. -ENAMETOOLONG past
 * PATH_MAX. */
int sl_mkdir_p(const char *path);
/* mkdir -p of path's parents (mode), and of path itself when `last`;
 * existing directories are fine. */
int sl_mkdir_parents(const char *path, mode_t mode, bool last);
