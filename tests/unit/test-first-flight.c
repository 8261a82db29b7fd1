/* SPDX-License-Identifier: MIT */
/*
 * The first-flight classifier: what decides whether a tunnel's or a
 * captured connection's first bytes are parsed as TLS, as HTTP, or refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "first-flight.h"

static enum sl_flight cls(const char *s, size_t *skip)
{
	return sl_first_flight(s, strlen(s), skip);
}

static void test_kinds(void **state)
{
	size_t skip = 99;

	assert_int_equal(sl_first_flight("", 0, &skip), SL_FLIGHT_MORE);
	assert_int_equal(sl_first_flight("\x16\x03\x01", 3, &skip), SL_FLIGHT_TLS);
	assert_int_equal(cls("GET / HTTP/1.1\r\n", &skip), SL_FLIGHT_HTTP);
	assert_int_equal(skip, 0);
	assert_int_equal(cls("GE", &skip), SL_FLIGHT_MORE);
	assert_int_equal(cls("SSH-2.0-x\r\n", &skip), SL_FLIGHT_OTHER);
	assert_int_equal(sl_first_flight("\0opaque", 7, &skip), SL_FLIGHT_OTHER);
	assert_int_equal(cls("get / HTTP/1.1\r\n", &skip), SL_FLIGHT_OTHER);
	assert_int_equal(cls(" GET /", &skip), SL_FLIGHT_OTHER);
	/* 15 letters is the longest method; 16 is not HTTP. */
	assert_int_equal(cls("ABCDEFGHIJKLMNO /", &skip), SL_FLIGHT_HTTP);
	assert_int_equal(cls("ABCDEFGHIJKLMNOP /", &skip), SL_FLIGHT_OTHER);
}

/* Servers skip empty lines before a request line, so a leading CRLF must
 * not make a request look like something else (it would be relayed). */
static void test_leading_empty_lines(void **state)
{
	size_t skip = 0;

	assert_int_equal(cls("\r\nGET / HTTP/1.1\r\n", &skip), SL_FLIGHT_HTTP);
	assert_int_equal(skip, 2);
	assert_int_equal(cls("\r\n\n\r\nPOST /", &skip), SL_FLIGHT_HTTP);
	assert_int_equal(skip, 5);
	assert_int_equal(cls("\r", &skip), SL_FLIGHT_MORE);
	assert_int_equal(cls("\r\n", &skip), SL_FLIGHT_MORE);
	assert_int_equal(cls("\rGET /", &skip), SL_FLIGHT_OTHER);
	assert_int_equal(skip, 0);
	/* A bounded number: endless empty lines are not HTTP. */
	assert_int_equal(cls("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET /", &skip), SL_FLIGHT_HTTP);
	assert_int_equal(cls("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET /", &skip), SL_FLIGHT_OTHER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_leading_empty_lines),
	};
	return cmocka_run_group_tests_name("first-flight", tests, NULL, NULL);
}
