/* SPDX-License-Identifier: MIT */
/* The gateway process's root directory (gw-root.c). */
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
