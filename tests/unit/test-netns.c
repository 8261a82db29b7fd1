/* SPDX-License-Identifier: MIT */
/* Unit tests for the pure parts of netns-helper. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

	/* The options the gateway serves. */
	v = ARGS("run", "--audit", "a.log", "--resolver", "203.0.113.53", "--upstream-ca", "ca.pem",
		 "--", "true");
	assert_int_equal(sl_netns_run_args_parse(9, v, &a, err, sizeof(err)), 0);
	assert_string_equal(a.audit, "a.log");
	assert_string_equal(a.resolver, "203.0.113.53");
	assert_string_equal(a.upstream_ca, "ca.pem");

	v = ARGS("run", "--help");
	assert_int_equal(sl_netns_run_args_parse(2, v, &a, err, sizeof(err)), 0);
	assert_true(a.help);
}

/* The filesystem view, trust and environment options add up, in order. */
static void test_run_args_view(void **state)
{
	struct sl_netns_run_args a;
	char err[256];
	char **v = ARGS("run", "--rw", "/work", "--ro=/data", "--rw", "/cache", "--trust", "ca.pem",
			"--env", "FOO", "--env=BAR=a=b", "--", "true");

	(void)state;
	assert_int_equal(sl_netns_run_args_parse(13, v, &a, err, sizeof(err)), 0);
	assert_int_equal(a.n_binds, 3);
	assert_string_equal(a.binds[0].path, "/work");
	assert_true(a.binds[0].writable);
	assert_string_equal(a.binds[1].path, "/data");
	assert_false(a.binds[1].writable);
	assert_true(a.binds[2].writable);
	assert_int_equal(a.n_trust, 1);
	assert_string_equal(a.trust[0], "ca.pem");
	assert_int_equal(a.n_env, 2);
	assert_string_equal(a.env[0], "FOO");
	assert_string_equal(a.env[1], "BAR=a=b");
	assert_null(a.env[2]);
}

/* Refused, with a message naming the option. */
static void expect_refused_any(char **v, const char *msg_part)
{
	struct sl_netns_run_args a = {.policy = "untouched"};
	char err[256] = "";
	int argc = 0;

	while (v[argc])
		argc++;
	assert_true(sl_netns_run_args_parse(argc, v, &a, err, sizeof(err)) < 0);
	if (!strstr(err, msg_part))
		fail_msg("message '%s' lacks '%s'", err, msg_part);
	assert_string_equal(a.policy, "untouched");
}

static void test_run_args_view_refused(void **state)
{
	char *many[2 * SL_NETNS_MAX_BINDS + 8] = {"run"};
	int n = 1;

	(void)state;
	/* The command shares sluice's stdout: its lines would pass for the
	 * gateway's records. */
	expect_refused_any(ARGS("run", "--audit", "-", "--", "true"), "could print");
	expect_refused_any(ARGS("run", "--env", "1X", "--", "true"), "--env '1X'");
	expect_refused_any(ARGS("run", "--env", "A-B=1", "--", "true"), "--env 'A-B=1'");
	expect_refused_any(ARGS("run", "--env", "=x", "--", "true"), "--env '=x'");
	expect_refused_any(ARGS("run", "--env", "HTTPS_PROXY=http://203.0.113.9", "--", "true"),
			   "proxy");
	expect_refused_any(ARGS("run", "--rw", "", "--", "true"), "empty");
	for (int i = 0; i <= SL_NETNS_MAX_BINDS; i++) {
		many[n++] = "--ro";
		many[n++] = "/x";
	}
	many[n++] = "--";
	many[n++] = "true";
	many[n] = NULL;
	expect_refused_any(many, "at most");

	/* --trust and --env have limits of their own. */
	n = 1;
	for (int i = 0; i <= SL_NETNS_MAX_TRUST; i++) {
		many[n++] = "--trust";
		many[n++] = "ca.pem";
	}
	many[n++] = "--";
	many[n++] = "true";
	many[n] = NULL;
	expect_refused_any(many, "--trust ca.pem: at most");
}

static void test_run_args_env_limit(void **state)
{
	char *v[2 * SL_NETNS_MAX_ENV + 8] = {"run"};
	int n = 1;

	(void)state;
	for (int i = 0; i <= SL_NETNS_MAX_ENV; i++) {
		v[n++] = "--env";
		v[n++] = "A=1";
	}
	v[n++] = "--";
	v[n++] = "true";
	v[n] = NULL;
	expect_refused_any(v, "--env A=1: at most");
}

static void test_bind_refused(void **state)
{
	(void)state;
	assert_non_null(sl_netns_bind_refused("/"));
	assert_non_null(sl_netns_bind_refused("/run"));
	assert_non_null(sl_netns_bind_refused("/run/docker.sock"));
	assert_non_null(sl_netns_bind_refused("/var/run"));
	assert_non_null(sl_netns_bind_refused("/proc/1"));
	assert_non_null(sl_netns_bind_refused("/dev"));
	assert_non_null(sl_netns_bind_refused("/sys/fs/cgroup"));
	assert_null(sl_netns_bind_refused("/runner/work"));
	assert_null(sl_netns_bind_refused("/home/agent/work"));
	assert_null(sl_netns_bind_refused("/tmp/x"));
	assert_null(sl_netns_bind_refused("/devices"));
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
	/* No default any more: the caller allocates. */
	assert_int_equal(sl_netns_user_resolve(NULL, &u, err, sizeof(err)), -EINVAL);
	/* The dynamic range is sluice's own: a hand-picked uid there could be
	 * a running sandbox's. */
	assert_int_equal(sl_netns_user_resolve("2130706433", &u, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "range"));
	assert_int_equal(u.uid, 7);
	/* A uid without a passwd entry gets the gid of the same number. */
	assert_int_equal(sl_netns_user_resolve("4000000", &u, err, sizeof(err)), 0);
	assert_int_equal(u.uid, 4000000);
	assert_int_equal(u.gid, 4000000);
	assert_string_equal(u.name, "");
	assert_int_equal(sl_netns_user_resolve("nobody", &u, err, sizeof(err)), 0);
	assert_int_equal(u.uid, 65534);
}

static void test_uid_range_free(void **state)
{
	const char *subuid = "# comment:1:2\n"
			     "alice:100000:65536\n"
			     "bob:2130771968:10\n" /* 0x7F010000 */
			     "broken:abc:5\n"
			     "zero:2130706500:0\n"
			     "1001:2130706440:4"; /* no final newline */

	(void)state;
	assert_true(sl_netns_uid_range_free(NULL, 0x7F000001u, 1));
	assert_true(sl_netns_uid_range_free("", 0x7F000001u, 1));
	assert_true(sl_netns_uid_range_free(subuid, 0x7F000001u, 1));
	/* The ends of alice's range, and just outside them. */
	assert_false(sl_netns_uid_range_free(subuid, 100000, 1));
	assert_false(sl_netns_uid_range_free(subuid, 165535, 1));
	assert_true(sl_netns_uid_range_free(subuid, 165536, 1));
	assert_true(sl_netns_uid_range_free(subuid, 99999, 1));
	assert_false(sl_netns_uid_range_free(subuid, 99999, 2));
	/* A whole range that contains one. */
	assert_false(sl_netns_uid_range_free(subuid, 0x7F000000u, 0x10000u));
	assert_false(sl_netns_uid_range_free(subuid, 2130706443u, 1));
	assert_true(sl_netns_uid_range_free(subuid, 2130706444u, 1));
	/* A numeric owner counts like a name; empty and unparsable lines
	 * grant nothing. */
	assert_true(sl_netns_uid_range_free(subuid, 2130706500u, 1));
	assert_true(sl_netns_uid_range_free(subuid, 1, 2));
	assert_false(sl_netns_uid_range_free(subuid, 0x7F00FFFFu, 2));
	/* No overflow at the top of the uid space. */
	assert_true(sl_netns_uid_range_free("x:0:1", UINT32_MAX, 1));
	assert_false(sl_netns_uid_range_free("x:4294967295:1", UINT32_MAX, 1));
	assert_true(sl_netns_uid_range_free("x:4294967296:1", UINT32_MAX, 1)); /* too big */
	assert_true(sl_netns_uid_range_free(subuid, 5, 0));
}

static void test_status_has_id(void **state)
{
	const char st[] = "Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\n"
			  "Uid:\t1000\t2130706433\t1000\t1000\n"
			  "Gid:\t1000\t1000\t1000\t77\n"
			  "FDSize:\t64\nGroups:\t4 24 2130706999 \nNStgid:\t42\n";

	(void)state;
	assert_true(sl_netns_status_has_id(st, sizeof(st) - 1, 2130706433u)); /* euid */
	assert_true(sl_netns_status_has_id(st, sizeof(st) - 1, 77));	      /* fsgid */
	assert_true(sl_netns_status_has_id(st, sizeof(st) - 1, 2130706999u)); /* a group */
	assert_true(sl_netns_status_has_id(st, sizeof(st) - 1, 1000));
	assert_false(sl_netns_status_has_id(st, sizeof(st) - 1, 42));	     /* Tgid, not an id */
	assert_false(sl_netns_status_has_id(st, sizeof(st) - 1, 64));	     /* FDSize */
	assert_false(sl_netns_status_has_id(st, sizeof(st) - 1, 213070643)); /* a prefix */
	assert_false(sl_netns_status_has_id(st, sizeof(st) - 1, 0));
	/* Cut in the middle of a number: what is there is all we know. */
	assert_false(sl_netns_status_has_id(st,
					    strlen("Name:\tsleep\nUmask:\t0022\nState:\tS "
						   "(sleeping)\nTgid:\t42\nUid:\t1000\t21307"),
					    2130706433u));
	assert_false(sl_netns_status_has_id("", 0, 0));
	assert_false(sl_netns_status_has_id("Uid:", 4, 0));
	assert_true(sl_netns_status_has_id("Uid:\t0", 6, 0));
}

static void make_tmpdir(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/sl-test-uid-XXXXXX");
	assert_non_null(mkdtemp(buf));
}

static void remove_tmpdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			assert_int_equal(unlinkat(dirfd(d), e->d_name, 0), 0);
	closedir(d);
	assert_int_equal(rmdir(dir), 0);
}

static bool in_range(uid_t id)
{
	return id > SL_NETNS_UID_BASE && id < SL_NETNS_UID_BASE + SL_NETNS_UID_COUNT - 2 &&
	       (id & 0xffffu) != 0;
}

/* Allocation needs only /proc and a writable lock directory: it runs
 * unprivileged against a temporary one. */
static void test_user_allocate(void **state)
{
	struct sl_netns_user a = {0}, b = {0}, c = {.uid = 7};
	char dir[64], path[128], err[256];
	int fa = -1, fb = -1, fc = -5;
	struct stat st;

	(void)state;
	make_tmpdir(dir, sizeof(dir));
	assert_int_equal(sl_netns_user_allocate(dir, &a, &fa, err, sizeof(err)), 0);
	assert_int_equal(sl_netns_user_allocate(dir, &b, &fb, err, sizeof(err)), 0);
	assert_true(fa >= 0 && fb >= 0);
	assert_true(in_range(a.uid) && in_range(b.uid));
	assert_int_equal(a.gid, a.uid);
	assert_int_not_equal(a.uid, b.uid); /* both locks held */
	snprintf(path, sizeof(path), "sluice-%u", (unsigned)a.uid);
	assert_string_equal(a.name, path);
	assert_string_equal(a.home, "");
	assert_int_equal(fcntl(fa, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	/* The lock is a file named by the uid, and it is held. */
	snprintf(path, sizeof(path), "%s/%u", dir, (unsigned)a.uid);
	assert_int_equal(stat(path, &st), 0);
	{
		int fd = open(path, O_RDWR | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
		assert_int_equal(errno, EWOULDBLOCK);
		close(fd);
	}
	/* Released: the file goes. */
	sl_netns_user_release(dir, a.uid, fa);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
	sl_netns_user_release(dir, 0, -1); /* ignored */
	/* A stale lock file (a sluice was SIGKILLed) is simply taken again. */
	sl_netns_user_release(dir, b.uid, fb);
	assert_int_equal(sl_netns_user_allocate(dir, &a, &fa, err, sizeof(err)), 0);
	close(fa); /* plain close: the file stays, unlocked */
	snprintf(path, sizeof(path), "%s/%u", dir, (unsigned)a.uid);
	assert_int_equal(stat(path, &st), 0);
	/* Nothing written on failure. */
	assert_int_equal(sl_netns_user_allocate("/proc/no/such/dir", &c, &fc, err, sizeof(err)) < 0,
			 1);
	assert_int_equal(c.uid, 7);
	assert_int_equal(fc, -5);
	/* A lock directory others may write to is refused: removing a lock
	 * file would let two sandboxes share a uid. */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(sl_netns_user_allocate(dir, &c, &fc, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable"));
	assert_int_equal(c.uid, 7);
	assert_int_equal(chmod(dir, 0700), 0);
	remove_tmpdir(dir);
}

/* Many at once, all held: all different. */
static void test_user_allocate_many(void **state)
{
	enum { N = 64 };
	struct sl_netns_user u[N];
	int fds[N];
	char dir[64], err[256];

	(void)state;
	make_tmpdir(dir, sizeof(dir));
	for (int i = 0; i < N; i++) {
		assert_int_equal(sl_netns_user_allocate(dir, &u[i], &fds[i], err, sizeof(err)), 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(u[i].uid, u[j].uid);
	}
	for (int i = 0; i < N; i++)
		sl_netns_user_release(dir, u[i].uid, fds[i]);
	remove_tmpdir(dir);
}

/* Two at once (the command's and its gateway's): distinct, each locked,
 * each released alone; out of bounds or failing, nothing is written. */
static void test_user_allocate_n(void **state)
{
	struct sl_netns_user u[2] = {{0}}, c[2] = {{.uid = 7}, {.uid = 7}};
	int fds[2] = {-1, -1}, fc[2] = {-5, -5};
	char dir[64], path[128], err[256];
	struct stat st;

	(void)state;
	make_tmpdir(dir, sizeof(dir));
	assert_int_equal(sl_netns_user_allocate_n(dir, 2, u, fds, err, sizeof(err)), 0);
	assert_true(in_range(u[0].uid) && in_range(u[1].uid));
	assert_int_not_equal(u[0].uid, u[1].uid);
	for (int i = 0; i < 2; i++) {
		int fd;

		assert_true(fds[i] >= 0);
		assert_int_equal(u[i].gid, u[i].uid);
		snprintf(path, sizeof(path), "%s/%u", dir, (unsigned)u[i].uid);
		fd = open(path, O_RDWR | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);
		close(fd);
	}
	sl_netns_user_release(dir, u[0].uid, fds[0]);
	snprintf(path, sizeof(path), "%s/%u", dir, (unsigned)u[0].uid);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/%u", dir, (unsigned)u[1].uid);
	assert_int_equal(stat(path, &st), 0);
	sl_netns_user_release(dir, u[1].uid, fds[1]);
	assert_int_equal(sl_netns_user_allocate_n(dir, 0, c, fc, err, sizeof(err)), -EINVAL);
	assert_int_equal(sl_netns_user_allocate_n(dir, SL_NETNS_MAX_ALLOC + 1, c, fc, err,
						  sizeof(err)),
			 -EINVAL);
	assert_int_equal(sl_netns_user_allocate_n("/proc/no/such/dir", 2, c, fc, err, sizeof(err)) <
			     0,
			 1);
	assert_int_equal(c[0].uid + c[1].uid, 14);
	assert_int_equal(fc[0] + fc[1], -10);
	remove_tmpdir(dir);
}

static const char *env_get(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

static size_t env_count(char **env, const char *name)
{
	size_t len = strlen(name), n = 0;

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			n++;
	return n;
}

static void test_env(void **state)
{
	char *base[] = {"PATH=/usr/bin",
			"HTTPS_PROXY=http://evil:1",
			"no_proxy=*",
			"HOME=/root",
			"USER=root",
			"OPENAI_API_KEY=sk-real-secret",
			"AWS_SECRET_ACCESS_KEY=aws-secret",
			"GITHUB_TOKEN=ghp_secret",
			"SSH_AUTH_SOCK=/run/user/0/ssh",
			"LC_ALL=C.UTF-8",
			"LC_TIME=de_DE.UTF-8",
			"LANG=en_US.UTF-8",
			"TERM=xterm-256color",
			"TZ=UTC",
			"PATH=/second/path",
			"LC_=odd",
			"NOEQUALS",
			NULL};
	const char *const drop[] = {"OPENAI_API_KEY", NULL};
	struct sl_netns_user u = {.uid = 1000, .gid = 1000, .name = "agent", .home = "/home/a"};
	struct in_addr gw = {.s_addr = htonl(0x0ae70001)};
	char **env = NULL;
	size_t n = 0, proxies = 0;

	(void)state;
	assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, NULL, &env), 0);
	for (; env[n]; n++) {
		assert_null(strstr(env[n], "evil"));
		assert_null(strstr(env[n], "secret")); /* none of the credentials */
		assert_null(strstr(env[n], "SSH_AUTH_SOCK"));
		assert_null(strstr(env[n], "NOEQUALS"));
		assert_string_not_equal(env[n], "no_proxy=*");
		if (strstr(env[n], "PROXY=") || strstr(env[n], "proxy="))
			proxies++;
	}
	assert_int_equal(proxies, 8);
	assert_string_equal(env[0], "PATH=/usr/bin"); /* the first, as getenv() */
	assert_int_equal(env_count(env, "PATH"), 1);
	assert_string_equal(env_get(env, "HTTP_PROXY"), "http://10.231.0.1:3128");
	assert_string_equal(env_get(env, "ALL_PROXY"), "socks5h://10.231.0.1:3128");
	assert_string_equal(env_get(env, "all_proxy"), "socks5h://10.231.0.1:3128");
	assert_string_equal(env_get(env, "no_proxy"), "localhost,127.0.0.1,::1");
	assert_string_equal(env_get(env, "LC_ALL"), "C.UTF-8");
	assert_string_equal(env_get(env, "LC_TIME"), "de_DE.UTF-8");
	assert_string_equal(env_get(env, "LANG"), "en_US.UTF-8");
	assert_string_equal(env_get(env, "TERM"), "xterm-256color");
	assert_string_equal(env_get(env, "TZ"), "UTC");
	assert_null(env_get(env, "LC_"));
	assert_string_equal(env_get(env, "HOME"), "/home/a");
	assert_string_equal(env_get(env, "USER"), "agent");
	assert_string_equal(env_get(env, "LOGNAME"), "agent");
	assert_int_equal(env_count(env, "HOME"), 1);
	sl_netns_env_free(env);
	sl_netns_env_free(NULL);
}

static void test_env_identity(void **state)
{
	char *base[] = {"HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/bash", NULL};
	struct sl_netns_user u = {.uid = 2130706500, .gid = 2130706500};
	struct in_addr gw = {.s_addr = htonl(0x0ae70001)};
	char **env = NULL;

	(void)state;
	/* A user without name or home: sluice's own identity still does not
	 * pass, and PATH gets a default. */
	assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, NULL, NULL, &env), 0);
	assert_null(env_get(env, "HOME"));
	assert_null(env_get(env, "USER"));
	assert_null(env_get(env, "LOGNAME"));
	assert_string_equal(env_get(env, "SHELL"), "/bin/bash");
	assert_string_equal(env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
	sl_netns_env_free(env);
	env = NULL;
	assert_int_equal(sl_netns_env_build(NULL, gw, 3128, &u, NULL, NULL, &env), 0);
	assert_string_equal(env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
	sl_netns_env_free(env);
}

static void test_env_extra(void **state)
{
	char *base[] = {"PATH=/usr/bin",
			"GITHUB_TOKEN=ghp_x",
			"OPENAI_API_KEY=sk-real",
			"EDITOR=vi",
			"EMPTY=",
			"HOME=/root",
			NULL};
	const char *const drop[] = {"OPENAI_API_KEY", NULL};
	struct sl_netns_user u = {
	    .uid = 2130706500, .gid = 2130706500, .name = "sluice-2130706500", .home = "/tmp/home"};
	struct in_addr gw = {.s_addr = htonl(0x0ae70001)};
	char **env = NULL, **keep = (char **)"untouched";

	(void)state;
	{
		const char *const extra[] = {"GITHUB_TOKEN",   /* named: passes */
					     "OPENAI_API_KEY", /* a secret's: never */
					     "NOT_SET",	       /* not in base: nothing */
					     "EMPTY",	       /* set, empty: passes */
					     "FOO=bar=baz",
					     "HOME=/work",		   /* beats the user's */
					     "FOO=second",		   /* the last wins */
					     "OPENAI_API_KEY=placeholder", /* a value of our own */
					     NULL};

		assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, extra, &env), 0);
	}
	assert_string_equal(env_get(env, "GITHUB_TOKEN"), "ghp_x");
	assert_string_equal(env_get(env, "OPENAI_API_KEY"), "placeholder");
	assert_null(env_get(env, "NOT_SET"));
	assert_string_equal(env_get(env, "EMPTY"), "");
	assert_string_equal(env_get(env, "FOO"), "second");
	assert_int_equal(env_count(env, "FOO"), 1);
	assert_string_equal(env_get(env, "HOME"), "/work");
	assert_int_equal(env_count(env, "HOME"), 1);
	assert_string_equal(env_get(env, "USER"), "sluice-2130706500");
	assert_null(env_get(env, "EDITOR")); /* not named */
	sl_netns_env_free(env);

	/* drop beats the NAME form even with no NAME=VALUE to replace it. */
	{
		const char *const extra[] = {"OPENAI_API_KEY", NULL};

		env = NULL;
		assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, extra, &env), 0);
		assert_null(env_get(env, "OPENAI_API_KEY"));
		sl_netns_env_free(env);
	}

	/* Refused, and nothing returned. */
	{
		const char *const bad[][2] = {{"1ABC", NULL}, {"A-B=1", NULL}, {"", NULL},
					      {"=x", NULL},   {"A B", NULL},   {"é=1", NULL}};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			env = keep;
			assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, bad[i], &env),
					 -EINVAL);
			assert_ptr_equal(env, keep);
		}
	}
	{
		const char *const proxy[] = {"OK=1", "HTTPS_PROXY=http://elsewhere:1", NULL};

		env = keep;
		assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, drop, proxy, &env), -EPERM);
		assert_ptr_equal(env, keep);
	}
}

static void test_env_names(void **state)
{
	(void)state;
	assert_true(sl_netns_env_name_valid("A"));
	assert_true(sl_netns_env_name_valid("_x9"));
	assert_true(sl_netns_env_name_valid("LC_ALL"));
	assert_false(sl_netns_env_name_valid(""));
	assert_false(sl_netns_env_name_valid(NULL));
	assert_false(sl_netns_env_name_valid("9A"));
	assert_false(sl_netns_env_name_valid("A=B"));
	assert_false(sl_netns_env_name_valid("A.B"));
	assert_int_equal(sl_netns_env_extra_check("NAME"), 0);
	assert_int_equal(sl_netns_env_extra_check("NAME="), 0);
	assert_int_equal(sl_netns_env_extra_check("NAME=a=b c"), 0);
	assert_int_equal(sl_netns_env_extra_check("=VALUE"), -EINVAL);
	assert_int_equal(sl_netns_env_extra_check("BAD NAME=1"), -EINVAL);
	assert_int_equal(sl_netns_env_extra_check(NULL), -EINVAL);
	assert_int_equal(sl_netns_env_extra_check("no_proxy"), -EPERM);
	assert_int_equal(sl_netns_env_extra_check("ALL_PROXY=socks5://x"), -EPERM);
	assert_int_equal(sl_netns_env_extra_check("HTTP_PROXYX=1"), 0);
}

static void test_env_set(void **state)
{
	char *base[] = {"TERM=dumb", NULL};
	struct sl_netns_user u = {.uid = 1000, .gid = 1000};
	struct in_addr gw = {.s_addr = htonl(0x0ae70001)};
	char **env = NULL;

	(void)state;
	assert_int_equal(sl_netns_env_build(base, gw, 3128, &u, NULL, NULL, &env), 0);
	assert_int_equal(sl_netns_env_set(&env, "SSL_CERT_FILE", "/run/ca.pem"), 0);
	assert_int_equal(sl_netns_env_set(&env, "TERM", "vt100"), 0);
	assert_string_equal(env_get(env, "SSL_CERT_FILE"), "/run/ca.pem");
	assert_string_equal(env_get(env, "TERM"), "vt100");
	assert_int_equal(env_count(env, "TERM"), 1);
	sl_netns_env_free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pool_parse),
	    cmocka_unit_test(test_pool_slots),
	    cmocka_unit_test(test_parse_size),
	    cmocka_unit_test(test_parse_percent),
	    cmocka_unit_test(test_run_args),
	    cmocka_unit_test(test_run_args_refused),
	    cmocka_unit_test(test_run_args_view),
	    cmocka_unit_test(test_run_args_view_refused),
	    cmocka_unit_test(test_run_args_env_limit),
	    cmocka_unit_test(test_bind_refused),
	    cmocka_unit_test(test_user),
	    cmocka_unit_test(test_uid_range_free),
	    cmocka_unit_test(test_status_has_id),
	    cmocka_unit_test(test_user_allocate),
	    cmocka_unit_test(test_user_allocate_many),
	    cmocka_unit_test(test_user_allocate_n),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_env_identity),
	    cmocka_unit_test(test_env_extra),
	    cmocka_unit_test(test_env_names),
	    cmocka_unit_test(test_env_set),
	};

	return cmocka_run_group_tests_name("netns", tests, NULL, NULL);
}
