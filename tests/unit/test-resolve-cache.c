/* SPDX-License-Identifier: MIT */
/*
 * The resolver's cache at its limit, seen from inside (resolve.c is
 * included, so that the loop's clock and the cache can be set without
 * 16,384 real lookups). What goes upstream is what reaches the gate,
 * which is asked only then; it says no (-EDQUOT), so nothing is sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "resolve.c"

struct seen {
	int gate_calls;
	int status;
	int answers;
};

static int gate_no(void *data, const char *name)
{
	(void)name;
	((struct seen *)data)->gate_calls++;
	return -EDQUOT;
}

static void answered(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct seen *s = data;

	(void)addrs;
	s->status = status;
	s->answers++;
}

/* Ask for name at loop time `now` (a turn of the loop sets its clock to
 * the real one) and turn the loop until the answer, which the gate's no
 * or the cache's limit gives on the next turn (bounded). */
static void ask(uv_loop_t *loop, uint64_t now, struct sl_gw_resolver *r, struct seen *s,
		const char *name)
{
	struct sl_gw_resolve_req *req;
	int i;

	s->answers = 0;
	loop->time = now;
	assert_int_equal(sl_gw_resolve(r, name, answered, s, &req), 0);
	for (i = 0; i < 10 && !s->answers; i++)
		uv_run(loop, UV_RUN_NOWAIT);
	assert_int_equal(s->answers, 1);
}

static void put(struct sl_gw_resolver *r, const char *name, unsigned ttl)
{
	struct sl_gw_addrs a = {.ttl = ttl};

	cache_put(r, name, 0, &a);
}

/* Full of answers the budget's window still counts: a new name is not
 * asked (-ENOBUFS), but a name whose own answer has expired is, since
 * its entry is the room its new answer needs. */
static void test_full_cache_asks_expired_name(void **state)
{
	struct sl_gw_resolver *r;
	struct seen s = {0};
	uv_loop_t loop;
	uint64_t t0;
	char err[256], name[64];
	int i;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(sl_gw_resolver_new(&loop, "127.0.0.1:1", &r, err, sizeof(err)), 0);
	sl_gw_resolver_set_gate(r, gate_no, &s);
	t0 = loop.time;
	put(r, "first.wild.example", 300);
	put(r, "api.example.com", 1); /* kept TTL_MIN, 30 s */
	for (i = 2; i < CACHE_HARD; i++) {
		snprintf(name, sizeof(name), "n%d.wild.example", i);
		put(r, name, 300);
	}
	assert_int_equal(r->n_cache, CACHE_HARD);
	/* 31 s on: the API's answer has expired, the budget's minute is
	 * not over for any of them. */
	ask(&loop, t0 + (TTL_MIN + 1) * 1000, r, &s, "new.wild.example");
	assert_int_equal(s.status, -ENOBUFS);
	assert_int_equal(s.gate_calls, 0);

	ask(&loop, t0 + (TTL_MIN + 1) * 1000, r, &s, "api.example.com");
	assert_int_equal(s.gate_calls, 1);
	assert_int_equal(s.status, -EDQUOT);
	assert_int_equal(r->n_cache, CACHE_HARD);

	/* A minute on, the oldest is room again for a new name. */
	ask(&loop, t0 + SL_DNS_BUDGET_WINDOW_MS + 1000, r, &s, "new.wild.example");
	assert_int_equal(s.gate_calls, 2);
	assert_int_equal(s.status, -EDQUOT);

	sl_gw_resolver_free(r);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Names made up to share one bucket in one gateway are guesses in the
 * next: two resolvers put the same names in different buckets, also when
 * their seeds differ only in their high bits (which, unmixed, would not
 * reach the bucket at all). */
static void test_hash_is_seeded(void **state)
{
	struct sl_gw_resolver *a, *b;
	uv_loop_t loop;
	char err[256];
	int i, same = 0, high = 0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(sl_gw_resolver_new(&loop, "127.0.0.1:1", &a, err, sizeof(err)), 0);
	assert_int_equal(sl_gw_resolver_new(&loop, "127.0.0.1:1", &b, err, sizeof(err)), 0);
	for (i = 0; i < 16; i++) {
		char name[32];
		uint32_t ha, hb;

		snprintf(name, sizeof(name), "x%d.example", i);
		ha = name_hash(a, name) & (CACHE_BUCKETS - 1);
		same += ha == (name_hash(b, name) & (CACHE_BUCKETS - 1));
		b->hash_seed ^= 0x80000000u;
		hb = name_hash(b, name) & (CACHE_BUCKETS - 1);
		b->hash_seed ^= 0x80000000u;
		high += hb == (name_hash(b, name) & (CACHE_BUCKETS - 1));
	}
	assert_true(same < 16);
	assert_true(high < 16);
	sl_gw_resolver_free(a);
	sl_gw_resolver_free(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_cache_asks_expired_name),
	    cmocka_unit_test(test_hash_is_seeded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
