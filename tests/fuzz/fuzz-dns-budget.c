/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the DNS budget's bookkeeping. The fuzzer chooses
 * the names (the agent does), the suffixes, the clock's steps and the
 * limit (a reload); a simple model (every name admitted as new, with its
 * time) checks each answer: a name is new only when it is not in the last
 * window and fewer than `limit` are; "seen" only when it is; a refusal only
 * when the window is full; never more than `limit` names held per suffix.
 * Bugs show as abort(); ASan catches what the bookkeeping frees wrongly.
 *
 * Input, one operation per record: a byte whose low 2 bits pick one of 4
 * suffixes and the rest a clock step (0..63 s, in ms steps of 1000 + b), a
 * limit byte (1 + b % 16), a length byte (b % 12) and that many name bytes
 * (mapped to [a-p], so names repeat often enough to exercise "seen").
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns-budget.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SUFFIXES 4
#define TRACKED 3 /* fewer than SUFFIXES: -ENOSPC is reachable */
#define OPS_MAX 4096

struct model_entry {
	char name[64];
	uint64_t at;
	unsigned suffix;
};

static struct model_entry model[OPS_MAX];

static const char *const suffixes[SUFFIXES] = {"a.test", "b.test", "c.a.test", "d.test"};

/* Names the model holds for suffix s that are still in the window. */
static size_t live(size_t n_model, unsigned s, uint64_t now, const char *name, bool *found)
{
	size_t i, n = 0;

	*found = false;
	for (i = 0; i < n_model; i++) {
		if (model[i].suffix != s || model[i].at + SL_DNS_BUDGET_WINDOW_MS <= now)
			continue;
		n++;
		if (name && !strcmp(model[i].name, name))
			*found = true;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_dns_budget *b = NULL;
	size_t off = 0, n_model = 0;
	uint64_t now = 0;

	if (sl_dns_budget_new(TRACKED, &b) < 0)
		return 0;
	while (off + 3 <= size && n_model < OPS_MAX) {
		struct sl_dns_budget_refusal ref = {0};
		unsigned s = data[off] & 3, limit = 1 + data[off + 1] % 16;
		size_t len = data[off + 2] % 12, i, n;
		char name[64];
		bool found;
		int r;

		now += (uint64_t)(data[off] >> 2) * (1000 + data[off + 1]);
		off += 3;
		if (off + len > size)
			break;
		for (i = 0; i < len; i++)
			name[i] = (char)('a' + (data[off + i] & 15));
		off += len;
		snprintf(name + len, sizeof(name) - len, ".%s", suffixes[s]);

		n = live(n_model, s, now, name, &found);
		r = sl_dns_budget_charge(b, suffixes[s], name, limit, now, &ref);
		switch (r) {
		case 1:
			if (found || n >= limit)
				abort();
			snprintf(model[n_model].name, sizeof(model[n_model].name), "%s", name);
			model[n_model].at = now;
			model[n_model].suffix = s;
			n_model++;
			break;
		case 0:
			if (!found)
				abort();
			break;
		case -EDQUOT:
			if (found || n < limit)
				abort();
			break;
		case -ENOSPC:
			/* Only a suffix not tracked, and holding nothing. */
			if (n != 0)
				abort();
			break;
		case -ENOMEM:
			break;
		default:
			abort();
		}
		if (sl_dns_budget_count(b, suffixes[s], now) != live(n_model, s, now, NULL, &found))
			abort();
		if (sl_dns_budget_count(b, suffixes[s], now) > 16)
			abort();
	}
	sl_dns_budget_free(b);
	return 0;
}
