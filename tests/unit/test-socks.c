/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5's bytes (socks-wire.h): greetings and requests as clients and
 * attackers send them, whole and in pieces, and the replies for each way a
 * CONNECT can be refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "socks-wire.h"

#define B(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void test_greeting(void **state)
{
	bool no_auth;

	(void)state;
	assert_int_equal(sl_socks_parse_greeting(B(5, 1, 0), &no_auth), 3);
	assert_true(no_auth);
	assert_int_equal(sl_socks_parse_greeting(B(5, 2, 2, 0), &no_auth), 4);
	assert_true(no_auth);
	/* Username/password only, GSSAPI only, nothing: none acceptable. */
	assert_int_equal(sl_socks_parse_greeting(B(5, 1, 2), &no_auth), 3);
	assert_false(no_auth);
	assert_int_equal(sl_socks_parse_greeting(B(5, 2, 1, 2), &no_auth), 4);
	assert_false(no_auth);
	assert_int_equal(sl_socks_parse_greeting(B(5, 0), &no_auth), 2);
	assert_false(no_auth);
	/* In pieces: wait. */
	assert_int_equal(sl_socks_parse_greeting((const uint8_t *)"", 0, &no_auth), 0);
	assert_int_equal(sl_socks_parse_greeting(B(5), &no_auth), 0);
	assert_int_equal(sl_socks_parse_greeting(B(5, 3, 0, 1), &no_auth), 0);
	assert_false(no_auth);
	/* Trailing bytes are the request's: only the greeting is counted. */
	assert_int_equal(sl_socks_parse_greeting(B(5, 1, 0, 5, 1, 0), &no_auth), 3);
	/* SOCKS4, or anything else. */
	assert_int_equal(sl_socks_parse_greeting(B(4, 1, 0), &no_auth), -EPROTO);
	assert_int_equal(sl_socks_parse_greeting(B('G', 'E', 'T'), &no_auth), -EPROTO);
}

static int req(const uint8_t *p, size_t n, struct sl_socks_request *q, enum sl_socks_reply *rep)
{
	int whole = sl_socks_parse_request(p, n, q, rep);

	/* Every prefix asks for more, or is already the request (when
	 * bytes follow it). */
	for (size_t i = 0; i < n; i++) {
		struct sl_socks_request t;
		enum sl_socks_reply r;
		int k = sl_socks_parse_request(p, i, &t, &r);

		assert_true(k == 0 || k == whole);
	}
	return whole;
}

static void test_request_connect(void **state)
{
	struct sl_socks_request q;
	enum sl_socks_reply rep;
	static const uint8_t name[] = {5, 1, 0, 3, 12, 'a', 'l', 'l', 'o', 'w', 'e', 'd',
				       '.', 't', 'e', 's', 't', 0x01, 0xbb, 'X', 'Y'};
	static const uint8_t v4[] = {5, 1, 0, 1, 203, 0, 113, 7, 0, 80};
	static const uint8_t v6[] = {5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 1, 0x1f, 0x90};

	(void)state;
	/* The trailing XY is the tunnel's first flight: not counted. */
	assert_int_equal(req(name, sizeof(name), &q, &rep), (int)sizeof(name) - 2);
	assert_string_equal(q.host, "allowed.test");
	assert_int_equal(q.host_len, 12);
	assert_int_equal(q.port, 443);
	assert_int_equal(q.atyp, SL_SOCKS_ATYP_DOMAIN);
	assert_int_equal(req(v4, sizeof(v4), &q, &rep), (int)sizeof(v4));
	assert_string_equal(q.host, "203.0.113.7");
	assert_int_equal(q.port, 80);
	/* IPv6 as a CONNECT target spells it, so it is decided the same. */
	assert_int_equal(req(v6, sizeof(v6), &q, &rep), (int)sizeof(v6));
	assert_string_equal(q.host, "[2001:db8::1]");
	assert_int_equal(q.port, 8080);
}

static void test_request_refused(void **state)
{
	struct sl_socks_request q;
	enum sl_socks_reply rep;
	uint8_t longname[5 + 254 + 2] = {5, 1, 0, 3, 254};

	(void)state;
	/* BIND and UDP ASSOCIATE: refused as soon as the command is read. */
	assert_int_equal(sl_socks_parse_request(B(5, 2), &q, &rep), -ENOTSUP);
	assert_int_equal(rep, SL_SOCKS_CMD_UNSUPPORTED);
	assert_int_equal(sl_socks_parse_request(B(5, 3, 0, 1), &q, &rep), -ENOTSUP);
	assert_int_equal(rep, SL_SOCKS_CMD_UNSUPPORTED);
	assert_int_equal(sl_socks_parse_request(B(5, 9), &q, &rep), -ENOTSUP);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 2), &q, &rep), -EAFNOSUPPORT);
	assert_int_equal(rep, SL_SOCKS_ATYP_UNSUPPORTED);
	/* General failures: version, reserved byte, names, port 0. */
	assert_int_equal(sl_socks_parse_request(B(4), &q, &rep), -EINVAL);
	assert_int_equal(rep, SL_SOCKS_GENERAL_FAILURE);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 1, 1), &q, &rep), -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 0), &q, &rep), -EINVAL);
	memset(longname + 5, 'a', 254);
	assert_int_equal(sl_socks_parse_request(longname, 5, &q, &rep), -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80), &q, &rep),
			 -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 3, 'a', ':', '1', 0, 80), &q, &rep),
			 -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80), &q, &rep),
			 -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 3, '[', '1', ']', 0, 80), &q, &rep),
			 -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 1, 0xc3, 0, 80), &q, &rep), -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 3, 1, 'a', 0, 0), &q, &rep), -EINVAL);
	assert_int_equal(sl_socks_parse_request(B(5, 1, 0, 1, 1, 2, 3, 4, 0, 0), &q, &rep),
			 -EINVAL);
	/* The longest name taken: 253 bytes. */
	longname[4] = 253;
	longname[5 + 253] = 0;
	longname[5 + 254] = 80;
	assert_int_equal(sl_socks_parse_request(longname, 5 + 253 + 2, &q, &rep), 5 + 253 + 2);
	assert_int_equal(q.host_len, 253);
}

static void test_replies(void **state)
{
	uint8_t out[SL_SOCKS_REPLY_LEN];

	(void)state;
	sl_socks_reply(SL_SOCKS_NOT_ALLOWED, out);
	assert_memory_equal(out, ((const uint8_t[]){5, 2, 0, 1, 0, 0, 0, 0, 0, 0}), 10);
	assert_int_equal(sl_socks_reply_for(403, "no-rule", 0), SL_SOCKS_NOT_ALLOWED);
	assert_int_equal(sl_socks_reply_for(403, "private-address", 0), SL_SOCKS_NOT_ALLOWED);
	assert_int_equal(sl_socks_reply_for(429, "dns-budget", 0), SL_SOCKS_NOT_ALLOWED);
	assert_int_equal(sl_socks_reply_for(502, "connect-failed", -ECONNREFUSED),
			 SL_SOCKS_REFUSED);
	assert_int_equal(sl_socks_reply_for(502, "connect-failed", -ENETUNREACH),
			 SL_SOCKS_NET_UNREACHABLE);
	assert_int_equal(sl_socks_reply_for(502, "connect-failed", -EHOSTUNREACH),
			 SL_SOCKS_HOST_UNREACHABLE);
	assert_int_equal(sl_socks_reply_for(502, "resolve-failed", 0), SL_SOCKS_HOST_UNREACHABLE);
	assert_int_equal(sl_socks_reply_for(504, "connect-timeout", 0), SL_SOCKS_HOST_UNREACHABLE);
	assert_int_equal(sl_socks_reply_for(400, "bad-request", 0), SL_SOCKS_GENERAL_FAILURE);
	assert_int_equal(sl_socks_reply_for(502, "connect-failed", -ENOMEM),
			 SL_SOCKS_GENERAL_FAILURE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greeting),
		cmocka_unit_test(test_request_connect),
		cmocka_unit_test(test_request_refused),
		cmocka_unit_test(test_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
