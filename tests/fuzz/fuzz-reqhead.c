/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for what the gateway reads in a parsed request head
 * after the decision (reqhead.c): header-name folding and credential
 * classification, method overrides, the placeholder check and the target
 * it forwards. Beyond not crashing: the forwarded target is never longer
 * than the one sent, its path is its own normal form (normalising it again
 * changes nothing), and its query is the one sent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "path.h"
#include "policy.h"
#include "reqhead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_http_request r;
	static char again[SL_PATH_BUF];
	struct sl_inject inj = {.header = "x-api-key", .prefix = "Bearer "};
	const char *buf = (const char *)data, *why = NULL, *q;
	char *t = NULL;
	int status = 0, n;
	size_t i;

	n = sl_http_parse_request(buf, size, 4096, &r, &status, &why);
	if (n <= 0)
		return 0;
	for (i = 0; i < r.n_headers; i++) {
		bool cred = sl_reqhead_is_credential(&r.headers[i].name, inj.header);

		/* The injected header's own name is always a credential. */
		if (sl_reqhead_name_is(&r.headers[i].name, inj.header) && !cred)
			abort();
	}
	(void)sl_reqhead_has_method_override(&r);
	(void)sl_reqhead_underscore_credential(&r, inj.header);
	{
		struct sl_rule rule = {.has_inject = true, .inject = inj};
		struct sl_policy p = {.rules = &rule, .n_rules = 1};

		/* Whatever the deciding rule, its policy's inject headers go. */
		for (i = 0; i < r.n_headers; i++)
			if (sl_reqhead_name_is(&r.headers[i].name, inj.header) &&
			    !sl_reqhead_is_host_credential(&p, &r.headers[i].name))
				abort();
		(void)sl_reqhead_underscore_host_credential(&r, &p);
	}
	(void)sl_reqhead_placeholder_ok(&r, &inj);

	if (sl_reqhead_forward_target(r.target.p, r.target.len, &t, &why) == 0) {
		size_t tl = strlen(t);
		const char *tq = strchr(t, '?');
		int k;

		if (tl > r.target.len)
			abort();
		q = memchr(r.target.p, '?', r.target.len);
		if (!q != !tq)
			abort();
		if (q && (strlen(tq) != r.target.len - (size_t)(q - r.target.p) ||
			  memcmp(tq, q, strlen(tq)) != 0))
			abort();
		k = sl_path_normalize(t, tq ? (size_t)(tq - t) : tl, again, sizeof(again), &why);
		if (k < 0 || (size_t)k != (tq ? (size_t)(tq - t) : tl) || memcmp(again, t, (size_t)k))
			abort();
		free(t);
	} else if (!why) {
		abort();
	}
	return 0;
}
