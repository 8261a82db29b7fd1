/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for origins' responses as the inspecting gateway reads
 * them: the head, then the body's bytes without their framing (what the
 * scrubber sees). Beyond not crashing: a head that parses lies inside the
 * input, every body byte handed out lies inside what was fed, no more body
 * bytes come out than went in, and cutting the body's bytes in two places
 * gives the same body and the same end as feeding them at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
	const char *lo, *hi; /* the bytes being fed */
	char out[1 << 16];
	size_t len;
};

static int collect(void *userdata, const char *p, size_t n)
{
	struct sink *k = userdata;

	if (p < k->lo || p + n > k->hi)
		abort();
	if (k->len + n > sizeof(k->out))
		return -1;
	memcpy(k->out + k->len, p, n);
	k->len += n;
	return 0;
}

/* Feed buf[0..len) cut at a and b; the body, whether it ended, and how
 * many bytes belonged to it (-1: broken framing). */
static ssize_t run(const char *buf, size_t size, size_t head, bool head_req, size_t a, size_t b,
		   struct sink *k, bool *done)
{
	struct sl_http_response r;
	struct sl_http_request h;
	size_t cuts[3] = {a, b, size}, at = head, i;
	ssize_t used = 0;

	if (sl_http_response_begin(&r, buf, size, 4096, head_req, &h) != (int)head)
		abort();
	r.on_data = collect;
	r.userdata = k;
	k->len = 0;
	for (i = 0; i < 3 && !r.done; i++) {
		ssize_t n;

		if (cuts[i] < at)
			continue;
		k->lo = buf + at;
		k->hi = buf + cuts[i];
		n = sl_http_response_feed(&r, buf + at, cuts[i] - at);
		if (n < 0)
			return -1;
		if ((size_t)n > cuts[i] - at)
			abort();
		used += n;
		at = cuts[i];
		if (r.done)
			break;
	}
	*done = r.done;
	if (k->len > (size_t)used)
		abort();
	return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sink one, three;
	struct sl_http_response r;
	struct sl_http_request h;
	const char *buf = (const char *)data;
	bool head_req, d1, d3;
	size_t i, a, b;
	ssize_t u1, u3;
	int n;

	if (size < 3)
		return 0;
	head_req = data[0] & 1;
	buf += 1;
	size -= 1;
	n = sl_http_response_begin(&r, buf, size, 4096, head_req, &h);
	if (n <= 0)
		return 0;
	if ((size_t)n > size || h.head_len != (size_t)n)
		abort();
	for (i = 0; i < h.n_headers; i++)
		if (h.headers[i].name.p < buf || h.headers[i].value.p + h.headers[i].value.len >
						     buf + h.head_len)
			abort();
	(void)sl_http_auth_binds_connection(&h, "WWW-Authenticate");
	if (r.no_body && !r.done)
		abort();
	a = (size_t)n + (size - (size_t)n) / 3;
	b = (size_t)n + 2 * (size - (size_t)n) / 3;
	u1 = run(buf, size, (size_t)n, head_req, size, size, &one, &d1);
	u3 = run(buf, size, (size_t)n, head_req, a, b, &three, &d3);
	/* Framing errors may surface at different cuts only if the body is
	 * broken; a body that is whole must come out the same. */
	if (u1 >= 0 && u3 >= 0 && d1 && d3 &&
	    (u1 != u3 || one.len != three.len || memcmp(one.out, three.out, one.len) != 0))
		abort();
	return 0;
}
