/* SPDX-License-Identifier: MIT */
/* Request heads: parsed when plain, refused when two servers could frame
 * them differently (smuggling), refused with 431 when too large. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
	assert_int_equal(status, want_status);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_requests),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_smuggling),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_rebuilt_room),
		cmocka_unit_test(test_urls),
	};
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
