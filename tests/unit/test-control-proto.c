/* SPDX-License-Identifier: MIT */
/* The control socket's lines (control-proto.c): requests parsed strictly,
 * fields escaped so that nothing the sandbox sent reaches a terminal raw. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "control-proto.h"

static int parse(const char *s, struct sl_ctl_request *q)
{
	const char *why = NULL;
	int r = sl_ctl_parse(s, strlen(s), q, &why);

	if (r < 0)
		assert_non_null(why);
	return r;
}

static void test_parse(void **state)
{
	struct sl_ctl_request q;

	(void)state;
	assert_int_equal(parse("info", &q), 0);
	assert_int_equal(q.verb, SL_CTL_INFO);
	assert_int_equal(parse("pending\r", &q), 0);
	assert_int_equal(q.verb, SL_CTL_PENDING);
	assert_int_equal(parse("reload", &q), 0);
	assert_int_equal(q.verb, SL_CTL_RELOAD);
	assert_int_equal(parse("approve 0123456789ab", &q), 0);
	assert_int_equal(q.verb, SL_CTL_APPROVE);
	assert_string_equal(q.id, "0123456789ab");
	assert_int_equal(parse("deny abcdefabcdef", &q), 0);
	assert_int_equal(q.verb, SL_CTL_DENY);

	static const char *const bad[] = {
	    "", "\r", "INFO", "info ", "info x", "reload now", "approve", "approve ",
	    "approve 0123456789a", "approve 0123456789abc", "approve 0123456789AB",
	    "approve 0123456789ab ", "approve  0123456789ab", "deny ../../../../x",
	    "approve 0123456789a\x01", "pending\x1b[2J", "info\tx", "ps", "approve\n0123456789ab",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &q) != -EINVAL)
			fail_msg("accepted: '%s'", bad[i]);
	/* NUL inside the line: refused, not cut there. */
	{
		const char *why;

		assert_int_equal(sl_ctl_parse("info\0x", 6, &q, &why), -EINVAL);
	}
	{
		char longl[SL_CTL_LINE_MAX + 2];
		const char *why;

		memset(longl, 'a', sizeof(longl));
		assert_int_equal(sl_ctl_parse(longl, sizeof(longl), &q, &why), -EINVAL);
	}
}

static void test_escape(void **state)
{
	char out[64];

	(void)state;
	assert_string_equal(sl_ctl_escape("abc", 3, false, out, sizeof(out)), "abc");
	assert_string_equal(sl_ctl_escape("", 0, false, out, sizeof(out)), "-");
	assert_string_equal(sl_ctl_escape("a b", 3, false, out, sizeof(out)), "a\\x20b");
	assert_string_equal(sl_ctl_escape("a b", 3, true, out, sizeof(out)), "a b");
	assert_string_equal(sl_ctl_escape("\x1b[2J\r\n\x7f\\", 8, false, out, sizeof(out)),
			    "\\x1b[2J\\x0d\\x0a\\x7f\\x5c");
	assert_string_equal(sl_ctl_escape("\xc3\xa9", 2, true, out, sizeof(out)), "\\xc3\\xa9");
	assert_string_equal(sl_ctl_escape("a\0b", 3, false, out, sizeof(out)), "a\\x00b");
	/* Cut at a whole escape, marked. */
	{
		char small[12];

		sl_ctl_escape("\x01\x02\x03\x04", 4, false, small, sizeof(small));
		assert_string_equal(small, "\\x01\\x02...");
		assert_true(sl_ctl_printable(small, strlen(small)));
	}
	assert_true(sl_ctl_printable("a b~", 4));
	assert_false(sl_ctl_printable("a\nb", 3));
	assert_false(sl_ctl_printable("\x9b", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests_name("control-proto", tests, NULL, NULL);
}
