/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the proxy's request-head handling: the llhttp-based
 * head parser, our framing checks and the absolute-form URL splitter. Beyond
 * not crashing: a head that parses lies inside the input, every span lies
 * inside the head, re-parsing exactly the head gives the same result, and a
 * URL that parses names a host and port the policy normaliser can judge.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const struct sl_http_span *s, const char *buf, size_t head_len)
{
	if (s->len && (s->p < buf || s->p + s->len > buf + head_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_http_request r, again;
	const char *buf = (const char *)data, *why = NULL;
	int status = 0, n, m;
	size_t i;

	n = sl_http_parse_request(buf, size, 4096, &r, &status, &why);
	if (n < 0) {
		if (!why || (status != 400 && status != 431 && status != 501))
			abort();
		return 0;
	}
	if (n == 0)
		return 0;
	if ((size_t)n > size || (size_t)n > 4096 || r.head_len != (size_t)n)
		abort();
	inside(&r.method, buf, r.head_len);
	inside(&r.target, buf, r.head_len);
	for (i = 0; i < r.n_headers; i++) {
		inside(&r.headers[i].name, buf, r.head_len);
		inside(&r.headers[i].value, buf, r.head_len);
	}
	m = sl_http_parse_request(buf, r.head_len, 4096, &again, &status, &why);
	if (m != n || again.n_headers != r.n_headers || again.chunked != r.chunked ||
	    again.content_length != r.content_length)
		abort();

	{
		struct sl_http_url u;

		if (sl_http_parse_url(&r.target, &u, &why) == 0) {
			char host[SL_HOST_BUF];
			enum sl_host_kind kind;

			if (u.port == 0 || u.path.len == 0 || u.path.p[0] != '/')
				abort();
			inside(&u.host, buf, r.head_len);
			(void)sl_host_normalize(u.host.p, u.host.len, host, &kind, &why);
		}
	}
	return 0;
}
