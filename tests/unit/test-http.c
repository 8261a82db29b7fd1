/* SPDX-License-Identifier: MIT */
/* Request heads: parsed when plain, refused when two servers could frame
 * them differently (smuggling), refused with 431 when too large. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

static struct sl_http_request req;

static int parse(const char *head, size_t max, int *status, const char **why)
{
	return sl_http_parse_request(head, strlen(head), max, &req, status, why);
}

static void ok(const char *head)
{
	int status = 0;
	const char *why = NULL;
	int r = parse(head, 16384, &status, &why);

	if (r <= 0)
		fail_msg("refused (%d, %d %s): %s", r, status, why ? why : "", head);
	assert_int_equal(r, (int)strlen(head) - (int)(strlen(head) - req.head_len));
}

static void refused(const char *head, int want_status, const char *want_why)
{
	int status = 0;
	const char *why = NULL;
	int r = parse(head, 16384, &status, &why);

	if (r >= 0)
		fail_msg("accepted (%d): %s", r, head);
	if (want_status && status != want_status)
		fail_msg("status %d (%s), not %d: %s", status, why ? why : "", want_status, head);
	if (want_why && (!why || !strstr(why, want_why)))
		fail_msg("reason '%s' lacks '%s' for: %s", why ? why : "(none)", want_why, head);
}

static void test_plain_requests(void **state)
{
	const char *h = "GET http://a.example/x?y=1 HTTP/1.1\r\nHost: a.example\r\nUser-Agent: t\r\n"
			"X-Empty:\r\n\r\nBODY";
	const struct sl_http_span *v;
	size_t n;

	ok(h);
	assert_int_equal(req.head_len, strlen(h) - 4);
	assert_true(sl_http_span_eq(&req.method, "GET"));
	assert_true(sl_http_span_eq(&req.target, "http://a.example/x?y=1"));
	assert_int_equal(req.version_minor, 1);
	assert_int_equal(req.n_headers, 3);
	v = sl_http_header(&req, "HOST", &n);
	assert_int_equal(n, 1);
	assert_true(sl_http_span_eq(v, "a.example"));
	v = sl_http_header(&req, "x-empty", &n);
	assert_int_equal(v->len, 0);
	assert_true(req.keep_alive);
	assert_false(req.has_length);
	assert_false(req.chunked);

	ok("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n");
	assert_true(sl_http_span_eq(&req.method, "CONNECT"));
	assert_true(sl_http_span_eq(&req.target, "api.example.com:443"));

	ok("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello");
	assert_true(req.has_length);
	assert_int_equal(req.content_length, 5);

	ok("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_true(req.chunked);

	ok("GET http://a.example/ HTTP/1.0\r\n\r\n");
	assert_int_equal(req.version_minor, 0);
	assert_false(req.keep_alive);
	ok("GET http://a.example/ HTTP/1.1\r\nConnection: close\r\n\r\n");
	assert_false(req.keep_alive);
}

static void test_incomplete(void **state)
{
	int status = 0;
	const char *why = NULL;

	assert_int_equal(parse("GET http://a.example/ HTTP/1.1\r\nHost: a.ex", 16384, &status, &why),
			 0);
	assert_int_equal(parse("GET http://a.example/ HTTP/1.1\r\n\r", 16384, &status, &why), 0);
	assert_int_equal(parse("", 16384, &status, &why), 0);
}

static void test_smuggling(void **state)
{
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		400, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		400, NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
		NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
		NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400, NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
		"Transfer-Encoding");
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", 501, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
		"chunked\r\n\r\n",
		400, NULL);
	refused("GET http://a/ HTTP/1.1\nHost: a\n\n", 400, "bare LF");
	refused("GET http://a/ HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400, "bare LF");
	refused("GET http://a/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "folding");
	refused("GET http://a/ HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", 400, "folding");
	/* Empty lines before the request line are no end of the head: the
	 * checks still run over the head itself. */
	refused("\r\n\r\nGET http://a/ HTTP/1.1\nHost: a\r\n\r\n", 400, "bare LF");
	refused("\r\n\r\nGET http://a/ HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400, "bare LF");
	refused("\r\n\r\n\r\nGET http://a/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "folding");
	ok("\r\n\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n");
	refused("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "Host");
	/* A header the Connection header names is dropped by the next hop:
	 * never one that frames or routes the request. */
	refused("POST http://a/ HTTP/1.1\r\nConnection: content-length\r\nContent-Length: 5\r\n\r\n",
		400, "Connection");
	refused("POST http://a/ HTTP/1.1\r\nConnection: keep-alive, Transfer-Encoding\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
		400, "Connection");
	refused("GET http://a/ HTTP/1.1\r\nConnection: x\r\nConnection: HOST\r\nHost: a\r\n\r\n",
		400, "Connection");
	refused("GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n", 400, NULL);
	refused("GET http://a/ HTTP/1.1\r\nX\x01Y: a\r\n\r\n", 400, NULL);
	refused("GET http://a/ HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, NULL);
	refused("GET http://a/ HTTP/2.0\r\n\r\n", 400, NULL);
	refused("G@T http://a/ HTTP/1.1\r\n\r\n", 400, NULL);
	refused("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, NULL);
	{
		static const char nul[] = "GET http://a/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
		int status = 0;
		const char *why = NULL;

		assert_true(sl_http_parse_request(nul, sizeof(nul) - 1, 16384, &req, &status, &why) <
			    0);
		assert_int_equal(status, 400);
	}
}

static void test_limits(void **state)
{
	static char big[40000];
	int status = 0, i;
	const char *why = NULL;
	size_t n;

	/* A complete head over the cap. */
	n = (size_t)snprintf(big, sizeof(big), "GET http://a/ HTTP/1.1\r\nX: ");
	memset(big + n, 'a', 20000);
	memcpy(big + n + 20000, "\r\n\r\n", 5);
	assert_int_equal(parse(big, 16384, &status, &why), -E2BIG);
	assert_int_equal(status, 431);

	/* An incomplete one already over the cap: refused without waiting. */
	big[n + 20000] = '\0';
	status = 0;
	assert_int_equal(parse(big, 16384, &status, &why), -E2BIG);
	assert_int_equal(status, 431);

	/* Under the cap but with more fields than we keep. */
	n = (size_t)snprintf(big, sizeof(big), "GET http://a/ HTTP/1.1\r\n");
	for (i = 0; i < SL_HTTP_MAX_HEADERS + 1; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "X%d: y\r\n", i);
	snprintf(big + n, sizeof(big) - n, "\r\n");
	status = 0;
	assert_true(parse(big, 16384, &status, &why) < 0);
	assert_int_equal(status, 431);
}

static void url_ok(const char *target, const char *host, uint16_t port, const char *path)
{
	struct sl_http_span t = { target, strlen(target) };
	struct sl_http_url u;
	const char *why = NULL;

	if (sl_http_parse_url(&t, &u, &why) < 0)
		fail_msg("%s refused: %s", target, why);
	assert_int_equal(u.host.len, strlen(host));
	assert_memory_equal(u.host.p, host, u.host.len);
	assert_int_equal(u.port, port);
	assert_int_equal(u.path.len, strlen(path));
	assert_memory_equal(u.path.p, path, u.path.len);
}

static void url_bad(const char *target)
{
	struct sl_http_span t = { target, strlen(target) };
	struct sl_http_url u;
	const char *why = NULL;

	if (sl_http_parse_url(&t, &u, &why) == 0)
		fail_msg("%s accepted", target);
	assert_non_null(why);
}

/* A head rebuilt header by header ("Name: value\r\n") fits in the room
 * SL_HTTP_REBUILT_MAX gives, even written as tightly as HTTP allows. */
static void test_rebuilt_room(void **state)
{
	char head[8192], out[16384];
	struct sl_http_header hd = {{"X-Api-Key", 9}, {"abc", 3}};
	size_t len = 0, rebuilt, i;
	int status = 0, n;
	const char *why = NULL;

	(void)state;
	assert_int_equal(sl_http_put_header(out, &hd), 16);
	assert_memory_equal(out, "X-Api-Key: abc\r\n", 16);

	len += (size_t)sprintf(head, "GET http://a/ HTTP/1.1\r\n");
	for (i = 0; i < 120; i++)
		len += (size_t)sprintf(head + len, "X-%zu:v\r\n", i);
	len += (size_t)sprintf(head + len, "\r\n");
	n = sl_http_parse_request(head, len, sizeof(head), &req, &status, &why);
	assert_int_equal(n, (int)len);
	rebuilt = (size_t)(strstr(head, "\r\n") + 2 - head) + 2;
	for (i = 0; i < req.n_headers; i++)
		rebuilt += sl_http_put_header(out, &req.headers[i]);
	assert_true(rebuilt > len); /* it does grow */
	assert_true(rebuilt <= SL_HTTP_REBUILT_MAX(req.head_len, req.n_headers));
}

static void test_urls(void **state)
{
	url_ok("http://a.example/x?y", "a.example", 80, "/x?y");
	url_ok("HTTP://A.example:8080", "A.example", 8080, "/");
	url_ok("http://[2001:db8::1]:81/p", "[2001:db8::1]", 81, "/p");
	url_ok("http://203.0.113.7/", "203.0.113.7", 80, "/");
	url_bad("https://a.example/");
	url_bad("/relative");
	url_bad("a.example:443");
	url_bad("http://user@a.example/");
	url_bad("http://a.example@evil.example/");
	url_bad("http://a.example#@evil/");
	url_bad("http://a.example\\@evil/");
	url_bad("http://a.example:0/");
	url_bad("http://a.example:99999/");
	url_bad("http://a.example?x");
	url_bad("http:///x");
	url_bad("ftp://a.example/");
}

/* ---- request bodies: strict chunked framing, re-framed by us ---- */

#define CHUNKED_HEAD "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

/* Feed body to a fresh decoder in pieces of step bytes (0: at once).
 * Returns the bytes it took (or -1 when refused, with *why), with what
 * goes to the origin in out[0..*out_len). */
static ssize_t feed_body(const char *head, const char *body, size_t len, size_t step, char *out,
			 size_t *out_len, bool *done, const char **why)
{
	struct sl_http_body b;
	size_t at = 0;

	*out_len = 0;
	*why = NULL;
	assert_int_equal(sl_http_body_init(&b, head, strlen(head)), 0);
	while (at < len && !sl_http_body_is_done(&b)) {
		size_t n = step && len - at > step ? step : len - at, olen = 0;
		char piece[4096];
		ssize_t k;

		assert_true(n + SL_HTTP_BODY_SLACK <= sizeof(piece));
		k = sl_http_body_feed(&b, body + at, n, piece, n + SL_HTTP_BODY_SLACK, &olen);
		if (k < 0) {
			*why = b.why;
			return -1;
		}
		assert_true((size_t)k <= n);
		memcpy(out + *out_len, piece, olen);
		*out_len += olen;
		at += (size_t)k;
		if ((size_t)k < n)
			break;
	}
	*done = sl_http_body_is_done(&b);
	return (ssize_t)at;
}

/* Undo chunked framing the way any origin would (strict, as we make it). */
static size_t dechunk(const char *in, size_t len, char *out)
{
	size_t i = 0, o = 0;

	for (;;) {
		size_t size = 0;
		char *end;

		size = strtoul(in + i, &end, 16);
		assert_true(end > in + i);
		assert_memory_equal(end, "\r\n", 2);
		i = (size_t)(end - in) + 2;
		if (size == 0) {
			assert_memory_equal(in + i, "\r\n", 2);
			assert_int_equal(i + 2, len);
			return o;
		}
		memcpy(out + o, in + i, size);
		o += size;
		i += size;
		assert_memory_equal(in + i, "\r\n", 2);
		i += 2;
	}
}

static void body_ok(const char *body, const char *want_data, size_t want_used)
{
	size_t steps[] = {0, 1, 2, 3, 7}, i, len = strlen(body);

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char out[8192], data[8192];
		size_t olen;
		bool done = false;
		const char *why;
		ssize_t k = feed_body(CHUNKED_HEAD, body, len, steps[i], out, &olen, &done, &why);

		if (k < 0)
			fail_msg("refused (%s) in steps of %zu: %s", why, steps[i], body);
		assert_true(done);
		assert_int_equal(k, want_used);
		/* What the origin gets is our framing of the same bytes. */
		assert_int_equal(dechunk(out, olen, data), strlen(want_data));
		assert_memory_equal(data, want_data, strlen(want_data));
		if (steps[i] == 0)
			assert_true(olen <= len);
	}
}

static void body_refused(const char *body, const char *want_why)
{
	size_t steps[] = {0, 1, 4}, i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char out[8192];
		size_t olen;
		bool done = false;
		const char *why;

		if (feed_body(CHUNKED_HEAD, body, strlen(body), steps[i], out, &olen, &done, &why) >=
		    0)
			fail_msg("accepted in steps of %zu: %s", steps[i], body);
		assert_non_null(why);
		if (want_why && !strstr(why, want_why))
			fail_msg("reason '%s' lacks '%s' for: %s", why, want_why, body);
		/* Nothing of the client's framing went out with it. */
		assert_null(memmem(out, olen, ";", 1));
	}
}

static void test_chunked_strict(void **state)
{
	char out[256];
	size_t olen;
	bool done;
	const char *why;

	(void)state;
	body_ok("5\r\nhello\r\n0\r\n\r\n", "hello", 15);
	body_ok("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", 26);
	body_ok("A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20);
	/* The next request after the body is not the body's. */
	body_ok("3\r\nabc\r\n0\r\n\r\nGET http://b/ HTTP/1.1\r\n\r\n", "abc", 13);
	body_ok("0\r\n\r\n", "", 5);
	/* Leading zeros are no smuggling (16 digits hold any size); the
	 * origin gets "3", not them. */
	body_ok("0003\r\nabc\r\n0\r\n\r\n", "abc", 16);
	assert_int_equal(feed_body(CHUNKED_HEAD, "0003\r\nabc\r\n0\r\n\r\n", 16, 0, out, &olen,
				   &done, &why),
			 16);
	assert_int_equal(olen, 13);
	assert_memory_equal(out, "3\r\nabc\r\n0\r\n\r\n", 13);

	/* Each a way some server reads where the body ends differently. */
	body_refused("5\rhello\r\n0\r\n\r\n", "bare CR");
	body_refused("5\r\rhello\r\n0\r\n\r\n", "bare CR");
	body_refused("5\nhello\r\n0\r\n\r\n", "bare LF");
	body_refused("5;ext=1\r\nhello\r\n0\r\n\r\n", "extensions");
	body_refused("5;\r\nhello\r\n0\r\n\r\n", "extensions");
	body_refused("5 \r\nhello\r\n0\r\n\r\n", "whitespace");
	body_refused("5\t\r\nhello\r\n0\r\n\r\n", "whitespace");
	body_refused(" 5\r\nhello\r\n0\r\n\r\n", "whitespace");
	body_refused("5 ;a\r\nhello\r\n0\r\n\r\n", "whitespace");
	body_refused("5\r\nhelloXX0\r\n\r\n", "CRLF");
	body_refused("5\r\nhello\n0\r\n\r\n", "CRLF");
	body_refused("5\r\nhello\r0\r\n\r\n", "CRLF");
	body_refused("5\r\nhello\r\r\n0\r\n\r\n", "CRLF");
	body_refused("-5\r\nhello\r\n0\r\n\r\n", "invalid character");
	body_refused("0x5\r\nhello\r\n0\r\n\r\n", "invalid character");
	body_refused("+5\r\nhello\r\n0\r\n\r\n", "invalid character");
	body_refused("\r\nhello\r\n0\r\n\r\n", "invalid character");
	body_refused("10000000000000000\r\nx", "16 digits");
	body_refused("00000000000000005\r\nhello\r\n0\r\n\r\n", "16 digits");
	body_refused("5\r\nhello\r\n0\r\nX-Trailer: y\r\n\r\n", "trailer");
	body_refused("5\r\nhello\r\n0\r\n\n", "CRLF");
	body_refused("5\r\nhello\r\n0\r\n\rX", "CRLF");
	body_refused("5\r\nhello\r\n0\n\r\n", "bare LF");
	body_refused("5\r\nhello\r\n0;x\r\n\r\n", "extensions");
	/* A huge size is a size: the data streams as it comes, in chunks of
	 * our own, never the client's size line. */
	assert_int_equal(feed_body(CHUNKED_HEAD, "ffffffffffffffff\r\nhello", 23, 0, out, &olen, &done,
				   &why),
			 23);
	assert_false(done);
	assert_int_equal(olen, 10);
	assert_memory_equal(out, "5\r\nhello\r\n", 10);
}

static void test_length_body(void **state)
{
	const char *head = "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n";
	char out[64];
	size_t olen;
	bool done;
	const char *why;
	struct sl_http_body b;

	(void)state;
	/* Exactly the body; the rest is the next request's. */
	assert_int_equal(feed_body(head, "helloGET http://b/ HTTP/1.1\r\n\r\n", 31, 0, out, &olen, &done,
				   &why),
			 5);
	assert_true(done);
	assert_int_equal(olen, 5);
	assert_memory_equal(out, "hello", 5);
	assert_int_equal(feed_body(head, "hel", 3, 1, out, &olen, &done, &why), 3);
	assert_false(done);
	/* No framing header: no body, complete with the head. */
	{
		static const char *const none[] = {
		    "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
		    "POST http://a/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n"};
		static const char bad[] =
		    "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";

		assert_int_equal(sl_http_body_init(&b, none[0], strlen(none[0])), 0);
		assert_true(sl_http_body_is_done(&b));
		assert_int_equal(sl_http_body_init(&b, none[1], strlen(none[1])), 0);
		assert_true(sl_http_body_is_done(&b));
		/* A head that does not parse gives no body to forward. */
		assert_true(sl_http_body_init(&b, bad, strlen(bad)) < 0);
	}
}

/* The head shapes that frame a body two ways. */
static void test_framing_heads(void **state)
{
	(void)state;
	/* 0: refused with 400 or 501, by llhttp or by us. */
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked,\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked \r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
		"identity\r\n\r\n",
		0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0");
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400,
		NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length:\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n", 400,
		NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n Content-Length: 5\r\n\r\n",
		0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", 0, NULL);
	/* A CR that is not followed by LF ends no line (strict llhttp). */
	refused("POST http://a/ HTTP/1.1\r\nX: a\rTransfer-Encoding: chunked\r\n\r\n", 0, NULL);
	refused("POST http://a/ HTTP/1.1\r\nHost: a\r\n\rX", 0, NULL);
	refused("POST http://a/ HTTP/1.1\rHost: a\r\n\r\n", 0, NULL);
}

/* Responses are parsed by llhttp built strict: the shapes a lenient build
 * took for chunk framing are refused, in responses too. */
static int resp_sink(void *userdata, const char *p, size_t n)
{
	(void)userdata;
	(void)p;
	(void)n;
	return 0;
}

static ssize_t resp_body(const char *body)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct sl_http_response r;
	struct sl_http_request h;

	assert_int_equal(sl_http_response_begin(&r, head, sizeof(head) - 1, 4096, false, &h),
			 (int)sizeof(head) - 1);
	r.on_data = resp_sink;
	return sl_http_response_feed(&r, body, strlen(body));
}

static void test_response_strict(void **state)
{
	struct sl_http_response r;
	struct sl_http_request h;
	static const char cr_head[] = "HTTP/1.1 200 OK\r\nX: a\rContent-Length: 0\r\n\r\n";
	/* llhttp ends these heads at the bare LF; the "\r\n\r\n" comes later. */
	static const char lf_end[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\nHIDDEN\r\n\r\n";
	static const char lf_line[] = "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n";
	static const char nul_head[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\nContent-Length: 0\r\n\r\n";

	(void)state;
	assert_int_equal(resp_body("5\r\nhello\r\n0\r\n\r\n"), 15);
	assert_true(resp_body("5\rXhello\r\n0\r\n\r\n") < 0);
	assert_true(resp_body("5\rhello\r\n0\r\n\r\n") < 0);
	assert_true(resp_body("5\r\nhelloXX0\r\n\r\n") < 0);
	assert_true(resp_body("5\r\nhello\n0\r\n\r\n") < 0);
	assert_true(resp_body("5\r\nhello\r\n0\r\n\rX") < 0);
	assert_true(sl_http_response_begin(&r, cr_head, sizeof(cr_head) - 1, 4096, false, &h) < 0);
	assert_true(sl_http_response_begin(&r, lf_end, sizeof(lf_end) - 1, 4096, false, &h) < 0);
	assert_true(sl_http_response_begin(&r, lf_line, sizeof(lf_line) - 1, 4096, false, &h) < 0);
	assert_true(sl_http_response_begin(&r, nul_head, sizeof(nul_head) - 1, 4096, false, &h) < 0);
}

/* A token in a comma list, in any header of that name, whole words only. */
static void test_header_token(void **state)
{
	int status = 0;
	const char *why = NULL;

	(void)state;
	assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n"
			  "connection: X-Trace ,Upgrade\r\nUpgrade: websocket\r\n\r\n",
			  16384, &status, &why) > 0);
	assert_true(sl_http_header_has_token(&req, "connection", "upgrade", 7));
	assert_true(sl_http_header_has_token(&req, "Connection", "x-trace", 7));
	assert_true(sl_http_header_has_token(&req, "connection", "keep-alive", 10));
	assert_false(sl_http_header_has_token(&req, "connection", "upgr", 4));
	assert_false(sl_http_header_has_token(&req, "connection", "websocket", 9));
	assert_true(sl_http_header_has_token(&req, "upgrade", "WebSocket", 9));
	assert_false(sl_http_header_has_token(&req, "te", "trailers", 8));
}

/* Logins bound to the connection, by their scheme, in any word. */
static void test_auth_binds_connection(void **state)
{
	int status = 0;
	const char *why = NULL;

	(void)state;
	assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: ntlm TlRMTVNT\r\n"
			  "WWW-Authenticate: Basic realm=x,  Negotiate\r\nX: NTLM\r\n\r\n",
			  16384, &status, &why) > 0);
	assert_true(sl_http_auth_binds_connection(&req, "authorization"));
	assert_true(sl_http_auth_binds_connection(&req, "WWW-Authenticate"));
	assert_false(sl_http_auth_binds_connection(&req, "Proxy-Authenticate"));
	assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic TlRMTQ==\r\n"
			  "WWW-Authenticate: Bearer realm=NTLMish\r\n\r\n",
			  16384, &status, &why) > 0);
	assert_false(sl_http_auth_binds_connection(&req, "Authorization"));
	assert_false(sl_http_auth_binds_connection(&req, "WWW-Authenticate"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_requests),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_smuggling),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_rebuilt_room),
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_chunked_strict),
		cmocka_unit_test(test_length_body),
		cmocka_unit_test(test_framing_heads),
		cmocka_unit_test(test_response_strict),
		cmocka_unit_test(test_header_token),
		cmocka_unit_test(test_auth_binds_connection),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
