/* SPDX-License-Identifier: MIT */
/* The audit records' rate limit: the limit a window, the rest counted and
 * handed back once for their summary, and a clock that goes back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "audit-rate.h"

/* 1000 records in one window: the limit written, the rest counted, and
 * the count handed back by the first record of the next window. */
static void test_flood(void **state)
{
	struct sl_audit_rate r = {0};
	unsigned i, written = 0;
	uint64_t unlogged;

	(void)state;
	for (i = 0; i < 1000; i++) {
		written += sl_audit_rate_take(&r, 200, 1000, 5000 + i % 1000, &unlogged);
		assert_int_equal(unlogged, 0);
	}
	assert_int_equal(written, 200);
	assert_true(sl_audit_rate_take(&r, 200, 1000, 6000, &unlogged));
	assert_int_equal(unlogged, 800);
	/* Said once: the next window has nothing of the last to say. */
	assert_true(sl_audit_rate_take(&r, 200, 1000, 7000, &unlogged));
	assert_int_equal(unlogged, 0);
}

/* Under the limit every record is written, whatever the time. */
static void test_honest(void **state)
{
	struct sl_audit_rate r = {0};
	uint64_t unlogged;

	(void)state;
	for (unsigned i = 0; i < 10000; i++) {
		assert_true(sl_audit_rate_take(&r, 200, 1000, 100 + (uint64_t)i * 10, &unlogged));
		assert_int_equal(unlogged, 0);
	}
}

/* What no later record summarized is drained once, at the end. */
static void test_drain(void **state)
{
	struct sl_audit_rate r = {0};
	uint64_t unlogged;

	(void)state;
	for (unsigned i = 0; i < 15; i++)
		(void)sl_audit_rate_take(&r, 10, 1000, 0, &unlogged);
	assert_int_equal(sl_audit_rate_drain(&r), 5);
	assert_int_equal(sl_audit_rate_drain(&r), 0);
}

/* A clock that goes back ends the window, never holds records back for
 * longer; the count is still handed back. */
static void test_clock_back(void **state)
{
	struct sl_audit_rate r = {0};
	uint64_t unlogged;

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		(void)sl_audit_rate_take(&r, 1, 1000, 50000, &unlogged);
	assert_true(sl_audit_rate_take(&r, 1, 1000, 1000, &unlogged));
	assert_int_equal(unlogged, 2);
	assert_false(sl_audit_rate_take(&r, 1, 1000, 1999, &unlogged));
	assert_true(sl_audit_rate_take(&r, 1, 1000, 2000, &unlogged));
	assert_int_equal(unlogged, 1);
}

/* A limit of 0 writes nothing and counts everything. */
static void test_zero(void **state)
{
	struct sl_audit_rate r = {0};
	uint64_t unlogged;

	(void)state;
	assert_false(sl_audit_rate_take(&r, 0, 1000, 0, &unlogged));
	assert_false(sl_audit_rate_take(&r, 0, 1000, 1000, &unlogged));
	assert_int_equal(unlogged, 1);
	assert_int_equal(sl_audit_rate_drain(&r), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flood), cmocka_unit_test(test_honest),
	    cmocka_unit_test(test_drain), cmocka_unit_test(test_clock_back),
	    cmocka_unit_test(test_zero),
	};

	return cmocka_run_group_tests_name("audit-rate", tests, NULL, NULL);
}
