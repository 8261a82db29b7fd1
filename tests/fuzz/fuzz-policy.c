/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the policy loader: any bytes must either load into a
 * policy that decides without crashing, or be refused with located messages.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-idn.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = { "a.com", "x.a.com", "127.0.0.1", "[::1]", "B.COM." };
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };
	size_t i;
	int r;

	r = sl_policy_load_buffer("fuzz.yaml", (const char *)data, size, &p, &d);
	if (r < 0) {
		/* A refusal must say why, unless memory ran out. */
		if (r == -EINVAL && d.n == 0)
			abort();
		for (i = 0; i < d.n; i++)
			if (strncmp(d.msgs[i], "fuzz.yaml:", 10) != 0)
				abort();
		sl_diags_clear(&d);
		return 0;
	}
	if (d.n != 0)
		abort();
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct sl_request req = { .host = hosts[i], .host_len = strlen(hosts[i]), .port = 443 };
		struct sl_decision dec;

		sl_policy_decide(p, &req, &dec);
		req.method = "POST";
		req.path = "/v1/messages";
		req.path_len = strlen(req.path);
		sl_policy_decide(p, &req, &dec);
		if (dec.verdict == SL_VERDICT_ALLOW && !dec.rule)
			abort();
	}
	sl_policy_free(p);
	return 0;
}
