/* SPDX-License-Identifier: MIT */
/* The policy's DNS settings: `dns: new_names_per_minute`, a rule's
 * `exact_dns`, and which wildcard rule's budget a name spends. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static struct sl_policy *load(const char *yaml, const char *want_error)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	int r = sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d);

	if (want_error) {
		if (r >= 0)
			fail_msg("accepted, expected: %s", want_error);
		assert_true(d.n >= 1);
		if (strncmp(d.msgs[0], want_error, strlen(want_error)) != 0)
			fail_msg("got  %s\nwant %s", d.msgs[0], want_error);
		sl_diags_clear(&d);
		return NULL;
	}
	if (r < 0)
		fail_msg("refused (%d): %s", r, d.n ? d.msgs[0] : "(no message)");
	return p;
}

static void test_new_names(void **state)
{
	struct sl_policy *p;

	(void)state;
	p = load("version: 1\n", NULL);
	assert_int_equal(sl_policy_dns_new_names(p), SL_POLICY_DNS_NEW_NAMES_DEFAULT);
	sl_policy_free(p);
	p = load("version: 1\ndns:\n  new_names_per_minute: 5\n", NULL);
	assert_int_equal(sl_policy_dns_new_names(p), 5);
	sl_policy_free(p);
	p = load("version: 1\ndns: {}\n", NULL);
	assert_int_equal(sl_policy_dns_new_names(p), SL_POLICY_DNS_NEW_NAMES_DEFAULT);
	sl_policy_free(p);
	load("version: 1\ndns:\n  new_names_per_minute: 0\n",
	     "t.yaml:3:25: 'new_names_per_minute' must be a number from 1 to 10000, not '0'");
	load("version: 1\ndns:\n  new_names_per_minute: 10001\n",
	     "t.yaml:3:25: 'new_names_per_minute' must be a number from 1 to 10000");
	load("version: 1\ndns:\n  new_names: 5\n", "t.yaml:3:3: unknown key 'new_names' in 'dns'");
	load("version: 1\ndns: 60\n", "t.yaml:2:6: 'dns' must be a mapping, not a scalar");
}

static void test_exact_dns(void **state)
{
	struct sl_policy *p;

	(void)state;
	p = load("version: 1\nallow:\n  - host: \"*.a.test\"\n    exact_dns: true\n"
		 "  - host: \"*.b.test\"\n    exact_dns: false\n",
		 NULL);
	assert_true(p->rules[0].exact_dns);
	assert_false(p->rules[1].exact_dns);
	sl_policy_free(p);
	load("version: 1\nallow:\n  - host: a.test\n    exact_dns: true\n",
	     "t.yaml:4:16: 'exact_dns' applies to a wildcard host");
	load("version: 1\nallow:\n  - host: \"*.a.test\"\n    exact_dns: yes\n",
	     "t.yaml:4:16: 'exact_dns' must be true or false");
	load("version: 1\nallow:\n  - host: \"*.a.test\"\n    exact_dns: \"true\"\n",
	     "t.yaml:4:16: 'exact_dns' must be true or false");
	load("version: 1\ndeny:\n  - host: \"*.a.test\"\n    exact_dns: true\n",
	     "t.yaml:4:5: unknown key 'exact_dns' in a deny rule");
}

/* A name spends the budget of the most specific wildcard allow rule that
 * matches it, and none when an allow rule lists it exactly. */
static void test_name_wildcard(void **state)
{
	struct sl_policy *p;
	const struct sl_rule *r;

	(void)state;
	p = load("version: 1\nallow:\n  - host: \"*.a.test\"\n  - host: \"*.b.a.test\"\n"
		 "  - host: x.b.a.test\n    ports: [22]\n  - host: plain.test\n"
		 "deny:\n  - host: \"*.d.a.test\"\n",
		 NULL);
	r = sl_policy_name_wildcard(p, "q.a.test", 8);
	assert_non_null(r);
	assert_string_equal(r->host, "a.test");
	r = sl_policy_name_wildcard(p, "Q.B.A.TEST.", 11);
	assert_non_null(r);
	assert_string_equal(r->host, "b.a.test");
	/* Listed exactly (on another port): the policy's name, not the agent's. */
	assert_null(sl_policy_name_wildcard(p, "x.b.a.test", 10));
	assert_null(sl_policy_name_wildcard(p, "plain.test", 10));
	assert_null(sl_policy_name_wildcard(p, "other.test", 10));
	assert_null(sl_policy_name_wildcard(p, "a.test", 6));
	assert_null(sl_policy_name_wildcard(p, "203.0.113.1", 11));
	/* Under a deny-only suffix, the allow wildcard above still counts
	 * (the DNS server never asks for a denied name anyway). */
	r = sl_policy_name_wildcard(p, "z.d.a.test", 10);
	assert_non_null(r);
	assert_string_equal(r->host, "a.test");
	sl_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_names),
	    cmocka_unit_test(test_exact_dns),
	    cmocka_unit_test(test_name_wildcard),
	};
	return cmocka_run_group_tests_name("dns-policy", tests, NULL, NULL);
}
