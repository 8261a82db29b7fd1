/* SPDX-License-Identifier: MIT */
/* The DNS budget: distinct new names per suffix in a sliding minute, names
 * counted once, one audit per suffix per window, and its bounds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dns-budget.h"

#define W SL_DNS_BUDGET_WINDOW_MS

static int charge(struct sl_dns_budget *b, const char *suffix, unsigned i, unsigned limit,
		  uint64_t now, struct sl_dns_budget_refusal *ref)
{
	char name[64];

	snprintf(name, sizeof(name), "x%08x.%s", i, suffix);
	return sl_dns_budget_charge(b, suffix, name, limit, now, ref);
}

/* A burst of 1000 unique names gets exactly the limit through. */
static void test_burst(void **state)
{
	struct sl_dns_budget *b = NULL;
	struct sl_dns_budget_refusal ref;
	unsigned i, admitted = 0, audits = 0;
	int r;

	(void)state;
	assert_int_equal(sl_dns_budget_new(4, &b), 0);
	for (i = 0; i < 1000; i++) {
		memset(&ref, 0, sizeof(ref));
		r = charge(b, "allowed.test", i, 60, 1000 + i, &ref);
		if (r == 1)
			admitted++;
		else {
			assert_int_equal(r, -EDQUOT);
			audits += ref.audit;
		}
	}
	assert_int_equal(admitted, 60);
	assert_int_equal(audits, 1); /* one record for the window, not 940 */
	assert_int_equal(sl_dns_budget_count(b, "allowed.test", 2000), 60);
	/* An admitted name is free again within the window. */
	assert_int_equal(charge(b, "allowed.test", 5, 60, 3000, NULL), 0);
	/* Another suffix has its own budget. */
	assert_int_equal(charge(b, "other.test", 0, 60, 3000, NULL), 1);
	sl_dns_budget_free(b);
}

/* A sliding window: names come back as the old ones leave it, never more
 * than the limit in any minute, even across a "minute boundary". */
static void test_sliding(void **state)
{
	struct sl_dns_budget *b = NULL;
	struct sl_dns_budget_refusal ref = {0};
	unsigned i;

	(void)state;
	assert_int_equal(sl_dns_budget_new(1, &b), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(charge(b, "s.test", i, 10, 59000 + i, NULL), 1);
	assert_int_equal(charge(b, "s.test", 100, 10, 60001, &ref), -EDQUOT);
	assert_true(ref.audit);
	/* At 59000 + W the first name leaves the window: one slot. */
	assert_int_equal(charge(b, "s.test", 101, 10, 59000 + W, NULL), 1);
	assert_int_equal(charge(b, "s.test", 102, 10, 59000 + W, &ref), -EDQUOT);
	assert_false(ref.audit); /* within the audited window */
	sl_dns_budget_free(b);

	/* The next window's first refusal is audited, with the count of
	 * the ones kept back. */
	assert_int_equal(sl_dns_budget_new(1, &b), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(charge(b, "s.test", i, 10, 0, NULL), 1);
	assert_int_equal(charge(b, "s.test", 100, 10, 1, &ref), -EDQUOT);
	assert_true(ref.audit);
	assert_int_equal(charge(b, "s.test", 101, 10, 2, &ref), -EDQUOT);
	assert_false(ref.audit);
	assert_int_equal(charge(b, "s.test", 102, 10, W - 1, &ref), -EDQUOT);
	assert_false(ref.audit);
	for (i = 0; i < 10; i++)
		assert_int_equal(charge(b, "s.test", 200 + i, 10, W + 1, NULL), 1);
	memset(&ref, 0, sizeof(ref));
	assert_int_equal(charge(b, "s.test", 103, 10, W + 1, &ref), -EDQUOT);
	assert_true(ref.audit);
	assert_int_equal(ref.suppressed, 2);
	/* Time going back counts as the latest seen. */
	assert_int_equal(charge(b, "s.test", 105, 10, 0, NULL), -EDQUOT);
	/* Once every name has left the window, the whole limit is back. */
	for (i = 0; i < 10; i++)
		assert_int_equal(charge(b, "s.test", 300 + i, 10, 3 * W, NULL), 1);
	assert_int_equal(sl_dns_budget_count(b, "s.test", 3 * W), 10);
	sl_dns_budget_free(b);
}

/* A reload that lowers the limit: what is in the window counts against it. */
static void test_limit_change(void **state)
{
	struct sl_dns_budget *b = NULL;
	unsigned i;

	(void)state;
	assert_int_equal(sl_dns_budget_new(1, &b), 0);
	for (i = 0; i < 20; i++)
		assert_int_equal(charge(b, "s.test", i, 20, 1, NULL), 1);
	assert_int_equal(charge(b, "s.test", 99, 5, 2, NULL), -EDQUOT);
	assert_int_equal(charge(b, "s.test", 99, 40, 2, NULL), 1);
	assert_int_equal(sl_dns_budget_count(b, "s.test", 2), 21);
	assert_int_equal(charge(b, "s.test", 0, 0, 2, NULL), -EINVAL);
	assert_int_equal(charge(b, "s.test", 0, SL_DNS_BUDGET_LIMIT_MAX + 1, 2, NULL), -EINVAL);
	sl_dns_budget_free(b);
}

/* Suffixes tracked at once are bounded: beyond that, refused (never an
 * unbounded new budget); an idle suffix's slot is reused. */
static void test_suffix_bound(void **state)
{
	struct sl_dns_budget *b = NULL;

	(void)state;
	assert_int_equal(sl_dns_budget_new(2, &b), 0);
	assert_int_equal(charge(b, "a.test", 0, 5, 10, NULL), 1);
	assert_int_equal(charge(b, "b.test", 0, 5, 10, NULL), 1);
	assert_int_equal(charge(b, "c.test", 0, 5, 10, NULL), -ENOSPC);
	/* a.test's names have left the window: its slot goes to c.test. */
	assert_int_equal(charge(b, "b.test", 1, 5, 10 + W / 2, NULL), 1);
	assert_int_equal(charge(b, "c.test", 0, 5, 10 + W, NULL), 1);
	assert_int_equal(sl_dns_budget_count(b, "a.test", 10 + W), 0);
	assert_int_equal(sl_dns_budget_count(b, "b.test", 10 + W), 1);
	sl_dns_budget_free(b);
	sl_dns_budget_free(NULL);
	assert_int_equal(sl_dns_budget_new(0, &b), -EINVAL);
}

static void count_flush(void *data, const char *suffix, uint64_t n)
{
	(void)suffix;
	*(uint64_t *)data += n;
}

static void test_flush(void **state)
{
	struct sl_dns_budget *b = NULL;
	uint64_t total = 0;
	unsigned i;

	(void)state;
	assert_int_equal(sl_dns_budget_new(2, &b), 0);
	for (i = 0; i < 15; i++)
		(void)charge(b, "a.test", i, 5, 10, NULL);
	/* 10 refused: 1 audited, 9 kept back for the summary. */
	sl_dns_budget_flush(b, count_flush, &total);
	assert_int_equal(total, 9);
	total = 0;
	sl_dns_budget_flush(b, count_flush, &total);
	assert_int_equal(total, 0);
	sl_dns_budget_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst),	 cmocka_unit_test(test_sliding),
	    cmocka_unit_test(test_limit_change), cmocka_unit_test(test_suffix_bound),
	    cmocka_unit_test(test_flush),
	};
	return cmocka_run_group_tests_name("dns-budget", tests, NULL, NULL);
}
