/* SPDX-License-Identifier: MIT */
/* Small helpers internal to netns-helper. */
#pragma once

#include <stddef.h>

#include "macro.h"

/* Fill `err` (when not NULL) from the format and return r, a negative errno,
 * so that a failure reads `return sl_err(err, errlen, r, "what");`. */
int sl_err(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);

/* Write `s` to an existing file such as a sysctl or a cgroup knob, in one
 * write(2) as those files want. */
int sl_write_file(const char *path, const char *s);
