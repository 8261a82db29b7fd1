/* SPDX-License-Identifier: MIT */
/*
 * The TCP ports a policy can allow (sl_policy_allowed_tcp_ports): what the
 * sandbox captures, every other port refused at its SYN. A port missing
 * here would refuse what a rule allows; one too many only lets the
 * gateway decide it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static void ports_of(const char *yaml, struct sl_policy_ports *ret)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};

	assert_int_equal(sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d), 0);
	assert_int_equal(sl_policy_allowed_tcp_ports(p, ret), 0);
	sl_policy_free(p);
	sl_diags_clear(&d);
}

static void expect(const char *yaml, const uint16_t *want, size_t n)
{
	struct sl_policy_ports ports;

	ports_of(yaml, &ports);
	assert_false(ports.all);
	assert_int_equal(ports.n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ports.ports[i], want[i]);
	sl_policy_ports_done(&ports);
	assert_null(ports.ports);
}

static void test_default_ports(void **state)
{
	static const uint16_t web[] = {80, 443};

	(void)state;
	/* An allow rule without ports allows the web's two. */
	expect("version: 1\nallow:\n  - host: a.test\n", web, 2);
}

static void test_union_sorted_distinct(void **state)
{
	static const uint16_t want[] = {22, 80, 443, 5432, 8080};

	(void)state;
	expect("version: 1\nallow:\n"
	       "  - host: a.test\n    ports: [8080, 443]\n"
	       "  - host: '*.b.test'\n"
	       "  - host: 203.0.113.5\n    ports: [5432, 22]\n    protocol: tcp\n"
	       "  - host: c.test\n    ports: [443]\n    methods: [GET]\n",
	       want, 5);
}

static void test_deny_rules_allow_nothing(void **state)
{
	static const uint16_t want[] = {443};

	(void)state;
	/* A deny rule's ports (every port, without a list) are not allowed. */
	expect("version: 1\nallow:\n  - host: a.test\n    ports: [443]\n"
	       "deny:\n  - host: b.test\n  - host: c.test\n    ports: [22]\n",
	       want, 1);
}

static void test_no_allow_rule(void **state)
{
	struct sl_policy *p = NULL;
	struct sl_policy_ports ports;

	(void)state;
	/* Nothing allowed: no port captured (every SYN refused). */
	expect("version: 1\ndeny:\n  - host: b.test\n", NULL, 0);
	assert_int_equal(sl_policy_new_deny_all(&p), 0);
	assert_int_equal(sl_policy_allowed_tcp_ports(p, &ports), 0);
	assert_false(ports.all);
	assert_int_equal(ports.n, 0);
	sl_policy_ports_done(&ports);
	sl_policy_free(p);
}

static void test_rule_without_ports_is_all(void **state)
{
	struct sl_policy *p = NULL;
	struct sl_policy_ports ports;

	(void)state;
	/* Not something the loader makes, but were an allow rule to allow
	 * every port, every port must be captured. */
	ports_of("version: 1\nallow:\n  - host: a.test\n", &ports);
	sl_policy_ports_done(&ports);
	static const char yaml[] = "version: 1\nallow:\n  - host: a.test\n";

	assert_int_equal(sl_policy_load_buffer("t.yaml", yaml, sizeof(yaml) - 1, &p, NULL), 0);
	free(p->rules[0].ports);
	p->rules[0].ports = NULL;
	p->rules[0].n_ports = 0;
	assert_int_equal(sl_policy_allowed_tcp_ports(p, &ports), 0);
	assert_true(ports.all);
	sl_policy_ports_done(&ports);
	sl_policy_free(p);
}

/* Observe mode must see what would be denied: every port is captured,
 * none refused at the SYN. */
static void test_observe_is_all(void **state)
{
	struct sl_policy_ports ports;

	(void)state;
	ports_of("version: 1\nmode: observe\nallow:\n  - host: a.test\n    ports: [443]\n", &ports);
	assert_true(ports.all);
	sl_policy_ports_done(&ports);
	ports_of("version: 1\nmode: observe\n", &ports);
	assert_true(ports.all);
	sl_policy_ports_done(&ports);
	expect("version: 1\nmode: enforce\nallow:\n  - host: a.test\n    ports: [443]\n",
	       (const uint16_t[]){443}, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_ports),
		cmocka_unit_test(test_union_sorted_distinct),
		cmocka_unit_test(test_deny_rules_allow_nothing),
		cmocka_unit_test(test_no_allow_rule),
		cmocka_unit_test(test_rule_without_ports_is_all),
		cmocka_unit_test(test_observe_is_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
