/* SPDX-License-Identifier: MIT */
/* Unit tests for the pure parts of netns-helper. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns.h"

static void test_pool_parse(void **state)
{
	struct sl_netns_pool p;

	(void)state;
	assert_int_equal(sl_netns_pool_parse("10.231.0.0/16", &p), 0);
	assert_int_equal(p.base, 0x0ae70000u);
	assert_int_equal(p.prefix, 16);
	assert_int_equal(sl_netns_pool_slots(&p), 16384);
	assert_int_equal(sl_netns_pool_parse("192.0.2.0/30", &p), 0);
	assert_int_equal(sl_netns_pool_slots(&p), 1);

	assert_int_equal(sl_netns_pool_parse("10.231.0.1/16", &p), -EINVAL); /* host bits */
	assert_int_equal(sl_netns_pool_parse("10.0.0.0/31", &p), -EINVAL);   /* no /30 fits */
	assert_int_equal(sl_netns_pool_parse("10.0.0.0/7", &p), -EINVAL);    /* too wide */
	assert_int_equal(sl_netns_pool_parse("10.0.0.0", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("10.0.0.0/", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("10.0.0.0/1x", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("10.0.0/24", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("/24", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("2001:db8::/64", &p), -EINVAL);
	assert_int_equal(sl_netns_pool_parse("255.255.255.255.255/24", &p), -EINVAL);
}

static void assert_addr(struct in_addr a, const char *want)
{
	char buf[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_pool_slots(void **state)
{
	struct sl_netns_pool p;
	struct in_addr h, s;

	(void)state;
	assert_int_equal(sl_netns_pool_parse("10.231.0.0/16", &p), 0);
	assert_int_equal(sl_netns_pool_slot(&p, 0, &h, &s), 0);
	assert_addr(h, "10.231.0.1");
	assert_addr(s, "10.231.0.2");
	assert_int_equal(sl_netns_pool_slot(&p, 1, &h, &s), 0);
	assert_addr(h, "10.231.0.5");
	assert_addr(s, "10.231.0.6");
	assert_int_equal(sl_netns_pool_slot(&p, 64, &h, &s), 0);
	assert_addr(h, "10.231.1.1");
	/* The last slot ends at the pool's last address, and no further. */
	assert_int_equal(sl_netns_pool_slot(&p, 16383, &h, &s), 0);
	assert_addr(h, "10.231.255.253");
	assert_addr(s, "10.231.255.254");
	h.s_addr = 7;
	assert_int_equal(sl_netns_pool_slot(&p, 16384, &h, &s), -ERANGE);
	assert_int_equal(h.s_addr, 7); /* untouched on failure */
}

static void test_parse_size(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(sl_netns_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(sl_netns_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(sl_netns_parse_size("64KiB", &v), 0);
	assert_int_equal(v, 64ull << 10);
	assert_int_equal(sl_netns_parse_size("2gb", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(sl_netns_parse_size("1048576", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(sl_netns_parse_size("3T", &v), 0);
	assert_int_equal(v, 3ull << 40);

	v = 42;
	assert_int_equal(sl_netns_parse_size("0", &v), -ERANGE);
	assert_int_equal(sl_netns_parse_size("", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("M", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("12X", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("12MM", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("-1", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("1.5G", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_size("20000000T", &v), -ERANGE);
	assert_int_equal(sl_netns_parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_parse_percent(void **state)
{
	unsigned v = 0;

	(void)state;
	assert_int_equal(sl_netns_parse_percent("50", &v), 0);
	assert_int_equal(v, 50);
	assert_int_equal(sl_netns_parse_percent("250%", &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(sl_netns_parse_percent("0", &v), -ERANGE);
	assert_int_equal(sl_netns_parse_percent("%", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_percent("5%%", &v), -EINVAL);
	assert_int_equal(sl_netns_parse_percent("999999", &v), -ERANGE);
}

#define ARGS(...) ((char *[]){__VA_ARGS__, NULL})
#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_run_args(void **state)
{
	struct sl_netns_run_args a;
	char err[256];
	char **v = ARGS("run", "--policy", "p.yaml", "--user=1000", "--memory", "512M", "--pids",
			"64", "--cpu", "50%", "--", "sh", "-c", "echo --pids");

	(void)state;
	assert_int_equal(sl_netns_run_args_parse(14, v, &a, err, sizeof(err)), 0);
	assert_string_equal(a.policy, "p.yaml");
	assert_string_equal(a.user, "1000");
	assert_int_equal(a.limits.memory_bytes, 512ull << 20);
	assert_int_equal(a.limits.pids, 64);
	assert_int_equal(a.limits.cpu_percent, 50);
	assert_null(a.audit);
	assert_string_equal(a.argv[0], "sh");
	assert_string_equal(a.argv[2], "echo --pids"); /* the command's own */

	/* Without "--", the first word that is not an option starts it. */
	v = ARGS("run", "--pool", "10.9.0.0/24", "true", "--user", "x");
	assert_int_equal(sl_netns_run_args_parse(6, v, &a, err, sizeof(err)), 0);
	assert_string_equal(a.pool, "10.9.0.0/24");
	assert_null(a.user);
	assert_string_equal(a.argv[0], "true");
	assert_string_equal(a.argv[1], "--user");

	/* The options the gateway will serve are parsed, for the caller to
	 * refuse until then. */
	v = ARGS("run", "--audit", "-", "--resolver", "203.0.113.53", "--upstream-ca", "ca.pem",
		 "--", "true");
	assert_int_equal(sl_netns_run_args_parse(9, v, &a, err, sizeof(err)), 0);
	assert_string_equal(a.audit, "-");
	assert_string_equal(a.resolver, "203.0.113.53");
	assert_string_equal(a.upstream_ca, "ca.pem");

	v = ARGS("run", "--help");
	assert_int_equal(sl_netns_run_args_parse(2, v, &a, err, sizeof(err)), 0);
	assert_true(a.help);
}

static void expect_refused(char **v, const char *msg_part)
{
	struct sl_netns_run_args a = {.policy = "untouched"};
	char err[256] = "";
	int argc = 0;

	while (v[argc])
		argc++;
	assert_int_equal(sl_netns_run_args_parse(argc, v, &a, err, sizeof(err)), -EINVAL);
	if (!strstr(err, msg_part))
		fail_msg("message '%s' lacks '%s'", err, msg_part);
	assert_string_equal(a.policy, "untouched");
}

static void test_run_args_refused(void **state)
{
	(void)state;
	expect_refused(ARGS("run"), "no command");
	expect_refused(ARGS("run", "--policy", "p"), "no command");
	expect_refused(ARGS("run", "--", (char *)NULL), "no command");
	expect_refused(ARGS("run", "--policy"), "needs a value");
	expect_refused(ARGS("run", "--bogus", "--", "true"), "unknown option");
	expect_refused(ARGS("run", "--user", "a", "--user", "b", "--", "true"), "twice");
	expect_refused(ARGS("run", "--pids", "1", "--pids", "2", "--", "true"), "twice");
	expect_refused(ARGS("run", "--memory", "lots", "--", "true"), "--memory");
	expect_refused(ARGS("run", "--pids", "0", "--", "true"), "--pids");
	expect_refused(ARGS("run", "--cpu", "-5", "--", "true"), "--cpu");
	expect_refused(ARGS("run", "--pool", "10.0.0.1/8", "--", "true"), "--pool");
	expect_refused(ARGS("run", "--policy=", "--", "true"), "empty");
}

static void test_user(void **state)
{
	struct sl_netns_user u = {.uid = 7};
	char err[256];

	(void)state;
	assert_int_equal(sl_netns_user_resolve("root", &u, err, sizeof(err)), -EPERM);
	assert_int_equal(sl_netns_user_resolve("0", &u, err, sizeof(err)), -EPERM);
	assert_int_equal(u.uid, 7);
	assert_int_equal(sl_netns_user_resolve("no-such-user-here", &u, err, sizeof(err)) < 0, 1);
	/* A uid without a passwd entry gets the gid of the same number. */
	assert_int_equal(sl_netns_user_resolve("4000000", &u, err, sizeof(err)), 0);
	assert_int_equal(u.uid, 4000000);
	assert_int_equal(u.gid, 4000000);
	assert_string_equal(u.name, "");
	assert_int_equal(sl_netns_user_resolve("nobody", &u, err, sizeof(err)), 0);
	assert_int_equal(u.uid, 65534);
}

static void test_env(void **state)
{
	char *base[] = {"PATH=/usr/bin", "HTTPS_PROXY=http://evil:1", "no_proxy=*", "HOME=/root",
			"OPENAI_API_KEY=sk-real-secret", NULL};
	const char *const drop[] = {"OPENAI_API_KEY", NULL};
	struct sl_netns_user u = {.uid = 1000, .gid = 1000, .name = "agent", .home = "/home/a"};
	struct in_addr gw = {.s_addr = htonl(0x0ae70001)};
	char **env = NULL;
	size_t n = 0, proxies = 0;

	(void)state;
	assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, &env), 0);
	for (; env[n]; n++) {
		assert_null(strstr(env[n], "evil"));
		assert_null(strstr(env[n], "sk-real-secret")); /* a policy secret */
		assert_string_not_equal(env[n], "no_proxy=*");
		assert_string_not_equal(env[n], "HOME=/root");
		if (strstr(env[n], "PROXY=") || strstr(env[n], "proxy="))
			proxies++;
	}
	assert_int_equal(proxies, 8);
	assert_string_equal(env[0], "PATH=/usr/bin");
	assert_string_equal(env[1], "HTTP_PROXY=http://10.231.0.1:3128");
	assert_string_equal(env[n - 3], "HOME=/home/a");
	assert_string_equal(env[n - 1], "LOGNAME=agent");
	sl_netns_env_free(env);
	sl_netns_env_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pool_parse), cmocka_unit_test(test_pool_slots),
	    cmocka_unit_test(test_parse_size), cmocka_unit_test(test_parse_percent),
	    cmocka_unit_test(test_run_args),   cmocka_unit_test(test_run_args_refused),
	    cmocka_unit_test(test_user),       cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests_name("netns", tests, NULL, NULL);
}
