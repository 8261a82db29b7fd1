/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by every module: scope-bound cleanup (systemd's
 * _cleanup_ idiom), ownership transfer, and array sizing. Header only, so
 * the policy library keeps depending on nothing of ours but this.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* The struct that holds member at ptr (libuv handles live inside ours). */
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _fallthrough_ __attribute__((fallthrough))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

static inline void sl_freep(void *p)
{
	free(*(void **)p);
}

/* Closes *fd and leaves it -1, so that a later close of the same variable
 * (an error path's, a cleanup's) cannot close a number another thread has
 * been given meanwhile. */
static inline void sl_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}

#define _cleanup_free_ _cleanup_(sl_freep)
#define _cleanup_close_ _cleanup_(sl_closep)

/* Hand ownership out of a _cleanup_ variable: returns the value and leaves
 * the variable empty so its cleanup does nothing. */
#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _tp = (p);                                       \
		(p) = NULL;                                                    \
		_tp;                                                           \
	})

#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _tf = (fd);                                                \
		(fd) = -1;                                                     \
		_tf;                                                           \
	})

/* Define a cleanup function `name##p` for a type whose destructor accepts
 * NULL, so `_cleanup_(sl_policy_freep) struct sl_policy *p = NULL;` works. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                \
	static inline void func##p(type *p)                                    \
	{                                                                      \
		if (*p)                                                        \
			func(*p);                                              \
	}

static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* The value of one hex digit, or -1: for the percent-escapes and chunk
 * sizes that every parser of untrusted bytes here reads. */
static inline int sl_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
