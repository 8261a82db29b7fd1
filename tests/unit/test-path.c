/* SPDX-License-Identifier: MIT */
/* Path normalisation: one spelling per path, and the ambiguous ones refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "path.h"

static void path_ok(const char *in, const char *want)
{
	char out[SL_PATH_BUF];
	const char *why = NULL;
	int r = sl_path_normalize(in, strlen(in), out, sizeof(out), &why);

	if (r < 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_string_equal(out, want);
	assert_int_equal(r, (int)strlen(want));
}

static void path_bad(const char *in, const char *want_why)
{
	char out[SL_PATH_BUF];
	const char *why = NULL;
	int r = sl_path_normalize(in, strlen(in), out, sizeof(out), &why);

	if (r >= 0)
		fail_msg("'%s' accepted as '%s'", in, out);
	assert_non_null(why);
	if (!strstr(why, want_why))
		fail_msg("'%s': reason '%s' lacks '%s'", in, why, want_why);
}

static void test_plain(void **state)
{
	path_ok("/", "/");
	path_ok("/v1/messages", "/v1/messages");
	path_ok("/v1/messages/", "/v1/messages/");
	path_ok("/v1/messages?beta=true", "/v1/messages");
	path_bad("/v1/messages#frag", "'#'");
	path_bad("/public/#/../secret", "'#'");
	path_ok("/a/b;c=d", "/a/b;c=d");
	path_ok("/.well-known/x", "/.well-known/x");
	path_ok("/a/...", "/a/...");
	path_ok("/a/.b", "/a/.b");
}

static void test_encoding(void **state)
{
	path_ok("/%61dmin", "/admin");
	path_ok("/%7e/x", "/~/x");
	path_ok("/a%20b", "/a%20b");
	/* Escapes of printable ASCII are decoded, as servers decode them
	 * before routing; those that would change structure here stay. */
	path_ok("/a%2bb", "/a+b");
	path_ok("/v1/foo%3adelete", "/v1/foo:delete");
	path_ok("/me%40x.com", "/me@x.com");
	path_ok("/a%3fb", "/a%3Fb");
	path_ok("/a%23b", "/a%23b");
	path_ok("/a%3bb", "/a%3Bb");
	path_ok("/a%25b", "/a%25b");
	path_ok("/a%252e%252e/b", "/a%252e%252e/b");
	path_ok("/%e2%82%ac", "/%E2%82%AC");
	path_bad("/a%2fb", "encoded '/'");
	path_bad("/a%2Fb", "encoded '/'");
	path_bad("/a%5cb", "encoded '/' or '\\'");
	path_bad("/a%00b", "control");
	path_bad("/a%0d%0ab", "control");
	path_bad("/a%", "percent");
	path_bad("/a%4", "percent");
	path_bad("/a%zz", "percent");
}

static void test_dot_segments(void **state)
{
	path_bad("/v1/messages/../admin", "dot segment");
	path_bad("/v1/./messages", "dot segment");
	path_bad("/v1/..", "dot segment");
	path_bad("/v1/.", "dot segment");
	path_bad("/v1/%2e%2e/admin", "dot segment");
	path_bad("/v1/%2E./admin", "dot segment");
	path_bad("/v1/..;/admin", "dot segment");
	path_bad("/v1/.;x/admin", "dot segment");
	/* "%3B" stays escaped, but a server that decodes before it strips
	 * parameters sees "..;": a dot segment all the same. */
	path_bad("/v1/..%3B/admin", "dot segment");
	path_bad("/v1/..%3bx/admin", "dot segment");
	path_bad("/v1/.%3B", "dot segment");
	path_ok("/v1/...%3B/x", "/v1/...%3B/x");
	path_ok("/v1/a..%3B/x", "/v1/a..%3B/x");
	path_bad("/..", "dot segment");
}

static void test_slashes_and_bytes(void **state)
{
	path_ok("//admin", "/admin");
	path_ok("/v1//messages///x", "/v1/messages/x");
	path_bad("/a\\b", "backslash");
	path_bad("/a b", "space");
	path_bad("/a\tb", "space");
	path_bad("/caf\xc3\xa9", "non-ASCII");
	path_bad("v1/messages", "start with '/'");
	path_bad("*", "start with '/'");
	path_bad("http://x/y", "start with '/'");
	path_bad("", "start with '/'");
}

static void test_too_long(void **state)
{
	static char big[SL_PATH_BUF + 10];
	char small[8];
	const char *why;

	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	path_bad(big, "too long");
	assert_int_equal(sl_path_normalize("/abcdefgh", 9, small, sizeof(small), &why), -EINVAL);
	assert_int_equal(sl_path_normalize("/abcdefg", 8, small, sizeof(small), &why), -EINVAL);
	assert_int_equal(sl_path_normalize("/abcdef", 7, small, sizeof(small), &why), 7);
}

static void test_patterns(void **state)
{
	char out[SL_PATH_BUF];
	const char *why;
	bool prefix;

	assert_int_equal(sl_path_pattern_parse("/v1/*", 5, out, sizeof(out), &prefix, &why), 0);
	assert_string_equal(out, "/v1/");
	assert_true(prefix);
	assert_true(sl_path_match(out, prefix, "/v1/messages"));
	assert_true(sl_path_match(out, prefix, "/v1/"));
	assert_false(sl_path_match(out, prefix, "/v1"));
	assert_false(sl_path_match(out, prefix, "/v2/x"));

	assert_int_equal(sl_path_pattern_parse("/v1/messages", 12, out, sizeof(out), &prefix, &why),
			 0);
	assert_false(prefix);
	assert_true(sl_path_match(out, prefix, "/v1/messages"));
	assert_false(sl_path_match(out, prefix, "/v1/messages/"));
	assert_false(sl_path_match(out, prefix, "/v1/Messages"));

	assert_int_equal(sl_path_pattern_parse("/*", 2, out, sizeof(out), &prefix, &why), 0);
	assert_true(sl_path_match(out, prefix, "/anything/at/all"));

	assert_int_equal(sl_path_pattern_parse("/%61pi/*", 8, out, sizeof(out), &prefix, &why), 0);
	assert_string_equal(out, "/api/");

	assert_int_equal(sl_path_pattern_parse("/v1/*/x", 7, out, sizeof(out), &prefix, &why),
			 -EINVAL);
	assert_int_equal(sl_path_pattern_parse("/v1?x=1", 7, out, sizeof(out), &prefix, &why),
			 -EINVAL);
	assert_int_equal(sl_path_pattern_parse("*", 1, out, sizeof(out), &prefix, &why), -EINVAL);
	assert_int_equal(sl_path_pattern_parse("/a/../b", 7, out, sizeof(out), &prefix, &why),
			 -EINVAL);
	assert_int_equal(sl_path_pattern_parse("", 0, out, sizeof(out), &prefix, &why), -EINVAL);
}

static void strip_ok(const char *in, const char *want)
{
	char out[SL_PATH_BUF];
	size_t n = sl_path_strip_params(in, out, sizeof(out));

	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
}

static void test_strip_params(void **state)
{
	strip_ok("/admin", "/admin");
	strip_ok("/admin;", "/admin");
	strip_ok("/admin;x=1", "/admin");
	strip_ok("/admin;jsessionid=1/users", "/admin/users");
	strip_ok("/a;x/;y/b", "/a/b");
	/* An escaped ';' is a parameter to a server that decodes first. */
	strip_ok("/a%3Bb", "/a");
	strip_ok("/admin%3Bx/users", "/admin/users");
	strip_ok("/a%3", "/a%3");
	strip_ok("/", "/");
}

static void test_deny_match(void **state)
{
	/* Deny patterns are generous: case, one trailing slash, and a
	 * prefix's own directory. */
	assert_true(sl_path_match_deny("/admin", false, "/Admin"));
	assert_true(sl_path_match_deny("/admin", false, "/admin/"));
	assert_true(sl_path_match_deny("/admin/", false, "/admin"));
	assert_false(sl_path_match_deny("/admin", false, "/admin/x"));
	assert_false(sl_path_match_deny("/admin", false, "/administrator"));
	assert_true(sl_path_match_deny("/admin/", true, "/ADMIN/users"));
	assert_true(sl_path_match_deny("/admin/", true, "/admin"));
	assert_false(sl_path_match_deny("/admin/", true, "/administrator"));
	assert_true(sl_path_match_deny("/", false, "/"));
	assert_true(sl_path_match_deny("/", true, "/anything"));
	/* A format suffix (Rails' "(.:format)", Spring's suffix patterns). */
	assert_true(sl_path_match_deny("/admin", false, "/admin.json"));
	assert_true(sl_path_match_deny("/admin", false, "/ADMIN.Json/"));
	assert_true(sl_path_match_deny("/admin/", false, "/admin.xml"));
	assert_true(sl_path_match_deny("/admin", false, "/admin.tar.gz"));
	assert_true(sl_path_match_deny("/admin/", true, "/admin.json"));
	assert_false(sl_path_match_deny("/admin", false, "/admin.json/x"));
	assert_false(sl_path_match_deny("/admin", false, "/adminx.json"));
	assert_false(sl_path_match_deny("/admin/", true, "/admin.d/x"));
	assert_false(sl_path_match_deny("/", false, "/.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_encoding),
		cmocka_unit_test(test_dot_segments),
		cmocka_unit_test(test_slashes_and_bytes),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_strip_params),
		cmocka_unit_test(test_deny_match),
	};
	return cmocka_run_group_tests_name("path", tests, NULL, NULL);
}
