/* SPDX-License-Identifier: MIT */
/* The DNS server's address -> name map: lookups, expiry, every name of an
 * address kept (most recent first), and the bounds on its size. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "dns-map.h"
#include "dns-wire.h"

static void v4(const char *s, uint8_t out[4])
{
	assert_int_equal(inet_pton(AF_INET, s, out), 1);
}

static void test_put_get(void **state)
{
	struct sl_dns_map *m = NULL;
	uint8_t a[4], b[4], six[16];
	char name[SL_DNS_NAME_BUF];

	(void)state;
	assert_int_equal(sl_dns_map_new(16, &m), 0);
	v4("203.0.113.2", a);
	v4("203.0.113.3", b);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::2", six), 1);

	assert_int_equal(sl_dns_map_get(m, AF_INET, a, 0, name, sizeof(name)), -ENOENT);
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "one.test", 1000), 0);
	assert_int_equal(sl_dns_map_put(m, AF_INET6, six, "six.test", 1000), 0);
	assert_int_equal(sl_dns_map_get(m, AF_INET, a, 999, name, sizeof(name)), 0);
	assert_string_equal(name, "one.test");
	assert_int_equal(sl_dns_map_get(m, AF_INET6, six, 0, name, sizeof(name)), 0);
	assert_string_equal(name, "six.test");
	assert_int_equal(sl_dns_map_get(m, AF_INET, b, 0, name, sizeof(name)), -ENOENT);
	/* The same 4 bytes in the other family are another address. */
	memcpy(six, a, 4);
	assert_int_equal(sl_dns_map_get(m, AF_INET6, six, 0, name, sizeof(name)), -ENOENT);

	/* Expired at its time, not after. */
	assert_int_equal(sl_dns_map_get(m, AF_INET, a, 1000, name, sizeof(name)), -ENOENT);
	/* A later answer for another name wins and renews. */
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "two.test", 5000), 0);
	assert_int_equal(sl_dns_map_get(m, AF_INET, a, 2000, name, sizeof(name)), 0);
	assert_string_equal(name, "two.test");
	assert_int_equal(sl_dns_map_size(m), 2);
	assert_int_equal(sl_dns_map_get(m, AF_INET, a, 0, name, 8), -ENOBUFS);
	assert_int_equal(sl_dns_map_get(m, AF_UNIX, a, 0, name, sizeof(name)), -EAFNOSUPPORT);
	assert_int_equal(sl_dns_map_put(m, AF_UNIX, a, "x.test", 1), -EINVAL);
	sl_dns_map_free(m);
	sl_dns_map_free(NULL);
	assert_int_equal(sl_dns_map_new(0, &m), -EINVAL);
}

/* At most max entries: the address answered longest ago goes first, and a
 * renewed one counts as answered now. */
static void test_bounded(void **state)
{
	struct sl_dns_map *m = NULL;
	char name[SL_DNS_NAME_BUF], want[32];
	uint8_t a[4] = { 198, 51, 100, 0 };
	unsigned i;

	(void)state;
	assert_int_equal(sl_dns_map_new(100, &m), 0);
	for (i = 0; i < 100; i++) {
		a[3] = (uint8_t)i;
		snprintf(want, sizeof(want), "n%u.test", i);
		assert_int_equal(sl_dns_map_put(m, AF_INET, a, want, 10000), 0);
	}
	a[3] = 0;
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "renewed.test", 10000), 0);
	for (i = 0; i < 1000; i++) {
		uint8_t b[4] = { 203, 0, (uint8_t)(i >> 8), (uint8_t)i };

		snprintf(want, sizeof(want), "x%u.test", i);
		assert_int_equal(sl_dns_map_put(m, AF_INET, b, want, 10000), 0);
		assert_true(sl_dns_map_size(m) <= 100);
		if (i == 98) {
			/* 99 new ones pushed out n1..n99, not the renewed n0. */
			assert_int_equal(sl_dns_map_get(m, AF_INET, a, 0, name, sizeof(name)), 0);
			assert_string_equal(name, "renewed.test");
			a[3] = 1;
			assert_int_equal(sl_dns_map_get(m, AF_INET, a, 0, name, sizeof(name)),
					 -ENOENT);
			a[3] = 0;
		}
	}
	assert_int_equal(sl_dns_map_size(m), 100);
	for (i = 900; i < 1000; i++) {
		uint8_t b[4] = { 203, 0, (uint8_t)(i >> 8), (uint8_t)i };

		snprintf(want, sizeof(want), "x%u.test", i);
		assert_int_equal(sl_dns_map_get(m, AF_INET, b, 0, name, sizeof(name)), 0);
		assert_string_equal(name, want);
	}
	sl_dns_map_free(m);
}

/* A CDN address answered for two names keeps both, whichever came last,
 * each with its own expiry; past SL_DNS_MAP_NAMES the oldest goes. */
static void test_several_names(void **state)
{
	char all[SL_DNS_MAP_NAMES][SL_DNS_NAME_BUF], want[32];
	struct sl_dns_map *m = NULL;
	uint8_t a[4];
	unsigned i;

	(void)state;
	v4("203.0.113.7", a);
	assert_int_equal(sl_dns_map_new(16, &m), 0);
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "git.test", 5000), 0);
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "www.test", 3000), 0);
	assert_int_equal(sl_dns_map_get_all(m, AF_INET, a, 0, all, SL_DNS_MAP_NAMES), 2);
	assert_string_equal(all[0], "www.test");
	assert_string_equal(all[1], "git.test");
	assert_int_equal(sl_dns_map_size(m), 1);
	/* max caps what is written. */
	assert_int_equal(sl_dns_map_get_all(m, AF_INET, a, 0, all, 1), 1);
	assert_string_equal(all[0], "www.test");
	/* Each name expires on its own. */
	assert_int_equal(sl_dns_map_get_all(m, AF_INET, a, 3000, all, SL_DNS_MAP_NAMES), 1);
	assert_string_equal(all[0], "git.test");
	/* A name answered again moves first, and is not listed twice. */
	assert_int_equal(sl_dns_map_put(m, AF_INET, a, "git.test", 9000), 0);
	assert_int_equal(sl_dns_map_get_all(m, AF_INET, a, 0, all, SL_DNS_MAP_NAMES), 2);
	assert_string_equal(all[0], "git.test");
	assert_string_equal(all[1], "www.test");
	/* More names than it keeps: the one answered longest ago goes. */
	for (i = 0; i < SL_DNS_MAP_NAMES; i++) {
		snprintf(want, sizeof(want), "n%u.test", i);
		assert_int_equal(sl_dns_map_put(m, AF_INET, a, want, 9000), 0);
	}
	assert_int_equal(sl_dns_map_get_all(m, AF_INET, a, 0, all, SL_DNS_MAP_NAMES),
			 SL_DNS_MAP_NAMES);
	for (i = 0; i < SL_DNS_MAP_NAMES; i++) {
		snprintf(want, sizeof(want), "n%u.test", SL_DNS_MAP_NAMES - 1 - i);
		assert_string_equal(all[i], want);
	}
	assert_int_equal(sl_dns_map_get_all(m, AF_UNIX, a, 0, all, 1), -EAFNOSUPPORT);
	sl_dns_map_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_several_names),
	};
	return cmocka_run_group_tests_name("dns-map", tests, NULL, NULL);
}
