/* SPDX-License-Identifier: MIT */
/* Error messages into a caller's buffer. */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

/* Fill `err` (when not NULL) from the format and return r, a negative errno,
 * so that a failure reads `return sl_err(err, errlen, r, "what");`. */
_printf_(4, 5) static inline int sl_err(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}
