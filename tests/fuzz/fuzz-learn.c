/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for sluice learn: any bytes, read as an audit log (one
 * record a line), must give a policy that the loader accepts, that allows
 * every request learned, and whose rules come only from the log's valid
 * records: never a crash, never a policy `sluice check` refuses.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "learn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *buf = malloc(size + 1), *out = NULL, what[1024];
	struct sl_policy *pol = NULL;
	struct sl_learn l;
	size_t len = 0;

	if (!buf)
		return 0;
	sl_learn_init(&l, NULL);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct sl_learn_record r;
		const char *why = NULL;

		if (sl_learn_parse_line(p, n, buf, &r, &why) == 0)
			(void)sl_learn_add(&l, &r);
		else if (!why)
			abort(); /* a refusal always says why */
		p += n + 1;
	}
	if (sl_learn_emit(&l, "fuzz.log", NULL, NULL, 0, &out, &len) == 0) {
		if (sl_policy_load_buffer("learned", out, len, &pol, NULL) < 0)
			abort();
		/* Every request learned, each path with each method, as
		 * `sluice learn` checks before it prints (a ";param" path once
		 * failed it). */
		if (!sl_learn_allows(&l, pol, what, sizeof(what)))
			abort();
		sl_policy_free(pol);
		free(out);
	}
	sl_learn_done(&l);
	free(buf);
	return 0;
}
