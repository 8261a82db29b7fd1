/* SPDX-License-Identifier: MIT */
/* Host normalisation: the spellings that have walked around other egress
 * filters must all reach one normal form, or be refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"

static void norm_ok(const char *in, const char *want, enum sl_host_kind want_kind)
{
	char out[SL_HOST_BUF];
	enum sl_host_kind kind;
	const char *why = NULL;
	int r = sl_host_normalize(in, strlen(in), out, &kind, &why);

	if (r < 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_string_equal(out, want);
	assert_int_equal(kind, want_kind);
}

static void norm_bad(const char *in, const char *want_why)
{
	char out[SL_HOST_BUF];
	enum sl_host_kind kind;
	const char *why = NULL;
	int r = sl_host_normalize(in, strlen(in), out, &kind, &why);

	if (r >= 0)
		fail_msg("'%s' accepted as '%s'", in, out);
	assert_int_equal(r, -EINVAL);
	assert_non_null(why);
	if (want_why && !strstr(why, want_why))
		fail_msg("'%s': reason '%s' lacks '%s'", in, why, want_why);
}

static void test_case_and_trailing_dot(void **state)
{
	norm_ok("Example.COM", "example.com", SL_HOST_NAME);
	norm_ok("example.com.", "example.com", SL_HOST_NAME);
	norm_ok("API.Anthropic.Com.", "api.anthropic.com", SL_HOST_NAME);
	norm_ok("localhost", "localhost", SL_HOST_NAME);
	norm_ok("_dmarc.example.com", "_dmarc.example.com", SL_HOST_NAME);
	norm_bad("example.com..", "empty label");
	norm_bad(".example.com", "empty label");
	norm_bad("a..b", "empty label");
	norm_bad(".", "empty");
	norm_bad("", "empty");
}

static void test_length_limits(void **state)
{
	char label63[64], label64[65], name[300];

	memset(label63, 'a', 63);
	label63[63] = '\0';
	memset(label64, 'a', 64);
	label64[64] = '\0';
	snprintf(name, sizeof(name), "%s.com", label63);
	norm_ok(name, name, SL_HOST_NAME);
	snprintf(name, sizeof(name), "%s.com", label64);
	norm_bad(name, "63 bytes");

	/* 4 * 63 + 3 dots = 255 > 253 */
	snprintf(name, sizeof(name), "%s.%s.%s.%s", label63, label63, label63, label63);
	norm_bad(name, "253 bytes");
	/* 3 * 63 + 61 + 3 dots = 253: the longest valid name */
	snprintf(name, sizeof(name), "%s.%s.%s.%.61s", label63, label63, label63, label63);
	norm_ok(name, name, SL_HOST_NAME);
}

static void test_bad_characters(void **state)
{
	norm_bad("exa mple.com", "character");
	norm_bad("example.com/evil", "character");
	norm_bad("ex%61mple.com", "character");
	norm_bad("user@example.com", "character");
	norm_bad("example.com\\", "character");
	norm_bad("*.example.com", "character");
	{
		const char nul[] = "example.com\0.evil.com";
		char out[SL_HOST_BUF];
		enum sl_host_kind kind;
		const char *why;

		assert_int_equal(sl_host_normalize(nul, sizeof(nul) - 1, out, &kind, &why),
				 -EINVAL);
		assert_non_null(strstr(why, "NUL"));
	}
}

static void test_idn(void **state)
{
	/* Unicode and its punycode are the same name. */
	norm_ok("b\xc3\xbc" "cher.de", "xn--bcher-kva.de", SL_HOST_NAME);
	norm_ok("B\xc3\x9c" "CHER.DE", "xn--bcher-kva.de", SL_HOST_NAME);
	norm_ok("XN--BCHER-KVA.de", "xn--bcher-kva.de", SL_HOST_NAME);
	/* Fullwidth letters and the ideographic full stop map to ASCII under
	 * UTS #46, as clients that resolve them do. */
	norm_ok("\xef\xbd\x85xample\xe3\x80\x82" "com", "example.com", SL_HOST_NAME);
	/* Fullwidth solidus maps to '/', which no name may hold. */
	norm_bad("a\xef\xbc\x8f" "b.com", NULL);
	/* Invalid UTF-8 is refused, not passed through. */
	norm_bad("ex\xff" "ample.com", NULL);
}

static void test_ipv4_literals(void **state)
{
	norm_ok("127.0.0.1", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("127.1", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("0x7f.0.0.1", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("0X7F.0.0.1", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("2130706433", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("0177.0.0.1", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("169.254.169.254.", "169.254.169.254", SL_HOST_IPV4);
	norm_ok("203.0.113.7", "203.0.113.7", SL_HOST_IPV4);
	/* A numeric last label makes the host an address or nothing. */
	norm_bad("1.2.3.256", "IPv4");
	norm_bad("example.123", "IPv4");
	norm_bad("1.2.3.4.5", "IPv4");
	norm_bad("0x", "IPv4");
	/* A numeric label elsewhere is fine in a name. */
	norm_ok("123.example.com", "123.example.com", SL_HOST_NAME);
	norm_ok("example.0xz", "example.0xz", SL_HOST_NAME);
}

static void test_ipv6_literals(void **state)
{
	norm_ok("[::1]", "::1", SL_HOST_IPV6);
	norm_ok("::1", "::1", SL_HOST_IPV6);
	norm_ok("[2001:DB8:0:0::1]", "2001:db8::1", SL_HOST_IPV6);
	norm_ok("[::ffff:127.0.0.1]", "127.0.0.1", SL_HOST_IPV4);
	norm_ok("[::ffff:7f00:1]", "127.0.0.1", SL_HOST_IPV4);
	norm_bad("[fe80::1%25eth0]", "brackets");
	norm_bad("fe80::1%eth0", "zone");
	norm_bad("[example.com]", "brackets must enclose an IPv6");
	norm_bad("[127.0.0.1]", "brackets must enclose an IPv6");
	norm_bad("[::1", "unbalanced");
	norm_bad("::1]", "bracket");
	norm_bad("ex[ample].com", "bracket");
	norm_bad("example.com:443", "IPv6");
}

static void split_ok(const char *in, const char *want_host, uint16_t want_port)
{
	const char *host, *why = NULL;
	size_t len;
	uint16_t port;

	if (sl_host_split(in, strlen(in), &host, &len, &port, &why) < 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_int_equal(len, strlen(want_host));
	assert_memory_equal(host, want_host, len);
	assert_int_equal(port, want_port);
}

static void split_bad(const char *in)
{
	const char *host, *why = NULL;
	size_t len;
	uint16_t port;

	if (sl_host_split(in, strlen(in), &host, &len, &port, &why) == 0)
		fail_msg("'%s' accepted", in);
	assert_non_null(why);
}

static void test_split(void **state)
{
	split_ok("example.com", "example.com", 0);
	split_ok("example.com:443", "example.com", 443);
	split_ok("[::1]:8443", "[::1]", 8443);
	split_ok("[::1]", "[::1]", 0);
	split_ok("a:65535", "a", 65535);
	split_bad("::1");
	split_bad("[::1]:");
	split_bad("example.com:");
	split_bad("example.com:0");
	split_bad("example.com:65536");
	split_bad("example.com:+443");
	split_bad("example.com:443x");
	split_bad("example.com:4 43");
	split_bad("[::1]x");
	split_bad(":443");
	split_bad("");
}

static void pattern_ok(const char *in, const char *want, bool want_wild)
{
	char out[SL_HOST_BUF];
	enum sl_host_kind kind;
	bool wild;
	const char *why = NULL;

	if (sl_host_pattern_parse(in, strlen(in), out, &wild, &kind, &why) < 0)
		fail_msg("pattern '%s' refused: %s", in, why);
	assert_string_equal(out, want);
	assert_int_equal(wild, want_wild);
}

static void pattern_bad(const char *in)
{
	char out[SL_HOST_BUF];
	enum sl_host_kind kind;
	bool wild;
	const char *why = NULL;

	if (sl_host_pattern_parse(in, strlen(in), out, &wild, &kind, &why) == 0)
		fail_msg("pattern '%s' accepted as '%s'", in, out);
	assert_non_null(why);
}

static void test_patterns(void **state)
{
	pattern_ok("*.example.com", "example.com", true);
	pattern_ok("*.Example.COM.", "example.com", true);
	pattern_ok("*.com", "com", true);
	pattern_ok("api.example.com", "api.example.com", false);
	pattern_ok("*.b\xc3\xbc" "cher.de", "xn--bcher-kva.de", true);
	pattern_ok("10.0.0.1", "10.0.0.1", false);
	pattern_bad("*");
	pattern_bad("*.");
	pattern_bad("*.*.x");
	pattern_bad("a.*.x");
	pattern_bad("*x.com");
	pattern_bad("x*.com");
	pattern_bad("**.com");
	pattern_bad("*.10.0.0.1");
	pattern_bad("*.[::1]");
	pattern_bad("*..com");
	pattern_bad("");
}

static void test_is_below(void **state)
{
	assert_true(sl_host_is_below("a.x.com", "x.com"));
	assert_true(sl_host_is_below("a.b.x.com", "x.com"));
	assert_false(sl_host_is_below("x.com", "x.com"));
	assert_false(sl_host_is_below("evilx.com", "x.com"));
	assert_false(sl_host_is_below("x.com.evil.com", "x.com"));
	assert_false(sl_host_is_below(".x.com", "x.com"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_case_and_trailing_dot),
		cmocka_unit_test(test_length_limits),
		cmocka_unit_test(test_bad_characters),
		cmocka_unit_test(test_idn),
		cmocka_unit_test(test_ipv4_literals),
		cmocka_unit_test(test_ipv6_literals),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_is_below),
	};
	return cmocka_run_group_tests_name("host", tests, NULL, NULL);
}
