/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the proxy's request-head handling: the llhttp-based
 * head parser, our framing checks and the absolute-form URL splitter. Beyond
 * not crashing: a head that parses lies inside the input, every span lies
 * inside the head, re-parsing exactly the head gives the same result, and a
 * URL that parses names a host and port the policy normaliser can judge.
 *
 * What follows the head is fed to the request body decoder, at once and in
 * three cuts: it must take the same bytes and give the same body either
 * way, never write past the room SL_HTTP_BODY_SLACK promises, and what it
 * sends the origin must be well-formed chunked framing of exactly the data
 * it took (checked by an independent strict reader), which fed to it again
 * comes out unchanged.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

#include "fuzz-idn.h"
#include "http.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1 << 17)

/* The body's bytes fed in pieces cut at a and b; what it sent out, how many
 * input bytes it took (-1: refused) and whether it ended. */
static ssize_t body_run(const char *head, size_t head_len, const char *p, size_t n, size_t a,
			size_t b, char *out, size_t *out_len, bool *done)
{
	struct sl_http_body body;
	size_t cuts[3] = {a, b, n}, at = 0, i;
	static char piece[OUT_MAX];

	*out_len = 0;
	if (sl_http_body_init(&body, head, head_len) < 0)
		abort(); /* the head parsed */
	for (i = 0; i < 3 && !sl_http_body_is_done(&body); i++) {
		size_t len = cuts[i] - at, olen = 0;
		ssize_t k;

		if (cuts[i] < at)
			continue;
		k = sl_http_body_feed(&body, p + at, len, piece, len + SL_HTTP_BODY_SLACK, &olen);
		if (k < 0) {
			if (!body.why || strstr(body.why, "no room"))
				abort(); /* the slack is a promise */
			return -1;
		}
		if ((size_t)k > len || olen > len + SL_HTTP_BODY_SLACK)
			abort();
		if ((size_t)k < len && !sl_http_body_is_done(&body))
			abort(); /* only the body's end stops it short */
		memcpy(out + *out_len, piece, olen);
		*out_len += olen;
		at += (size_t)k;
		if ((size_t)k < len)
			break;
	}
	*done = sl_http_body_is_done(&body);
	return (ssize_t)at;
}

/* Strict chunked framing, read independently: the data, or -1. */
static ssize_t dechunk(const char *in, size_t len, bool complete, char *data)
{
	size_t i = 0, o = 0;

	for (;;) {
		uint64_t size = 0;
		size_t digits = 0;

		while (i < len && ((in[i] >= '0' && in[i] <= '9') || (in[i] >= 'a' && in[i] <= 'f'))) {
			size = size * 16 + (uint64_t)(in[i] <= '9' ? in[i] - '0' : in[i] - 'a' + 10);
			digits++;
			i++;
		}
		if (i == len && !complete && digits == 0)
			return (ssize_t)o;
		if (digits == 0 || (digits > 1 && in[i - digits] == '0') || i + 2 > len ||
		    in[i] != '\r' || in[i + 1] != '\n')
			return -1;
		i += 2;
		if (size == 0)
			return complete && i + 2 == len && in[i] == '\r' && in[i + 1] == '\n'
				   ? (ssize_t)o
				   : -1;
		if (size > len - i || len - i - size < 2 || in[i + size] != '\r' ||
		    in[i + size + 1] != '\n')
			return -1;
		memcpy(data + o, in + i, size);
		o += size;
		i += size + 2;
	}
}

static void check_body(const char *buf, const struct sl_http_request *r, size_t size)
{
	static char out1[OUT_MAX], out3[OUT_MAX], again[OUT_MAX], d1[OUT_MAX], d3[OUT_MAX];
	const char *p = buf + r->head_len;
	size_t n = size - r->head_len, l1, l3, la;
	ssize_t u1, u3, k1, k3, ua;
	bool done1, done3, done_a;

	if (n > OUT_MAX / 2)
		return;
	u1 = body_run(buf, r->head_len, p, n, n, n, out1, &l1, &done1);
	u3 = body_run(buf, r->head_len, p, n, n / 3, 2 * n / 3, out3, &l3, &done3);
	if ((u1 < 0) != (u3 < 0))
		abort(); /* refused however it was cut */
	if (u1 < 0)
		return;
	if (u1 != u3 || done1 != done3)
		abort();
	if (!r->chunked) {
		/* Content-Length: the bytes themselves, no more. */
		if (l1 != (size_t)u1 || memcmp(out1, p, l1) || l3 != l1 || memcmp(out3, p, l3))
			abort();
		return;
	}
	k1 = dechunk(out1, l1, done1, d1);
	k3 = dechunk(out3, l3, done3, d3);
	if (k1 < 0 || k3 < 0 || k1 != k3 || memcmp(d1, d3, (size_t)k1))
		abort();
	if (!done1)
		return;
	/* Our framing, fed back: taken whole, and unchanged. */
	ua = body_run(buf, r->head_len, out1, l1, l1, l1, again, &la, &done_a);
	if (ua != (ssize_t)l1 || !done_a || la != l1 || memcmp(again, out1, l1))
		abort();
}

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
	check_body(buf, &r, size);
	(void)sl_http_auth_binds_connection(&r, "Authorization");

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
