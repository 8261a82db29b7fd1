/* SPDX-License-Identifier: MIT */
/* A rule's approval hold as the loader reads it (approve-policy.c):
 * approve, approve_timeout and their errors, each with file:line:col. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static struct sl_policy *load_ok(const char *yaml)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	int r = sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d);

	if (r < 0)
		fail_msg("refused (%d): %s", r, d.n ? d.msgs[0] : "(no message)");
	assert_int_equal(d.n, 0);
	return p;
}

static void expect_error(const char *yaml, const char *want)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	int r = sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d);

	if (r >= 0)
		fail_msg("accepted, expected: %s", want);
	assert_null(p);
	assert_int_equal(d.n, 1);
	if (strncmp(d.msgs[0], want, strlen(want)))
		fail_msg("got  %s\nwant %s", d.msgs[0], want);
	sl_diags_clear(&d);
}

#define RULE "version: 1\nallow:\n  - host: a.com\n"

static void test_approve(void **state)
{
	struct sl_policy *p;

	(void)state;
	p = load_ok(RULE "    approve: true\n  - host: b.com\n    approve: true\n"
			 "    approve_timeout: 5\n  - host: c.com\n  - host: d.com\n"
			 "    approve: false\n");
	assert_true(p->rules[0].approve);
	assert_int_equal(p->rules[0].approve_timeout_ms, 60000);
	assert_true(p->rules[1].approve);
	assert_int_equal(p->rules[1].approve_timeout_ms, 5000);
	assert_false(p->rules[2].approve);
	assert_false(p->rules[3].approve);
	/* A hold is no reason to inspect: host-only rules hold the CONNECT. */
	assert_false(p->rules[0].inspect);
	sl_policy_free(p);

	p = load_ok(RULE "    approve: true\n    approve_timeout: 3600\n    paths: [\"/x\"]\n");
	assert_int_equal(p->rules[0].approve_timeout_ms, 3600000);
	assert_true(p->rules[0].inspect);
	sl_policy_free(p);
}

static void test_approve_errors(void **state)
{
	(void)state;
	expect_error(RULE "    approve: yes\n", "t.yaml:4:14: 'approve' must be true or false");
	expect_error(RULE "    approve: \"true\"\n", "t.yaml:4:14: 'approve' must be true or false");
	expect_error(RULE "    approve: [true]\n", "t.yaml:4:14: 'approve' must be true or false");
	expect_error(RULE "    approve_timeout: 5\n",
		     "t.yaml:4:22: 'approve_timeout' needs 'approve: true' on the same rule");
	expect_error(RULE "    approve: false\n    approve_timeout: 5\n",
		     "t.yaml:5:22: 'approve_timeout' needs 'approve: true'");
	expect_error(RULE "    approve: true\n    approve_timeout: 0\n",
		     "t.yaml:5:22: 'approve_timeout' (seconds) must be a number from 1 to 3600, not '0'");
	expect_error(RULE "    approve: true\n    approve_timeout: 3601\n",
		     "t.yaml:5:22: 'approve_timeout' (seconds) must be a number from 1 to 3600");
	expect_error(RULE "    approve: true\n    approve_timeout: 10s\n",
		     "t.yaml:5:22: 'approve_timeout' (seconds) must be a number from 1 to 3600, not '10s'");
	expect_error(RULE "    approve: true\n    approve_timeout: -1\n",
		     "t.yaml:5:22: 'approve_timeout' (seconds) must be a number");
	expect_error("version: 1\ndeny:\n  - host: a.com\n    approve: true\n",
		     "t.yaml:4:5: unknown key 'approve' in a deny rule");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_approve),
	    cmocka_unit_test(test_approve_errors),
	};
	return cmocka_run_group_tests_name("approve-policy", tests, NULL, NULL);
}
