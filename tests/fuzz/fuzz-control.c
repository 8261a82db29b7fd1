/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the control socket's request parser and its
 * escaping (control-proto.c). The socket is root's, but its bytes still
 * reach a parser in the process the sandbox talks to, and the escaping
 * is what stands between the sandbox's bytes (a path, a body) and the
 * operator's terminal. Beyond not crashing: a parsed ID is 12 hex digits;
 * every escape is printable ASCII, NUL-terminated within its buffer, and
 * without a space when spaces are escaped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_ctl_request q;
	const char *why = NULL;
	char out[97];
	size_t n;

	if (sl_ctl_parse((const char *)data, size, &q, &why) == 0) {
		if ((q.verb == SL_CTL_APPROVE || q.verb == SL_CTL_DENY) &&
		    strspn(q.id, "0123456789abcdef") != SL_CTL_ID_LEN)
			abort();
	} else if (!why) {
		abort();
	}
	for (int spaces = 0; spaces < 2; spaces++) {
		/* Every size of buffer, up to its whole. */
		size_t cap = size % (sizeof(out) - 1) + 1;

		memset(out, 'X', sizeof(out));
		sl_ctl_escape((const char *)data, size, spaces, out, cap);
		n = strnlen(out, cap);
		if (n >= cap || !sl_ctl_printable(out, n) || out[cap] != 'X')
			abort();
		if (!spaces && memchr(out, ' ', n))
			abort();
	}
	return 0;
}
