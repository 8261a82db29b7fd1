/* SPDX-License-Identifier: MIT */
/* Where a policy or secret file may live (safe-file.h): real files and
 * directories under a temporary directory, with the owners, modes,
 * symlinks and --rw paths an attacker inside the sandbox would use. The
 * cases that change owners need root and are skipped without it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "safe-file.h"

#define OTHER_UID 1234

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-safe-file-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return chmod(dir, 0755);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* dir/NAME, in one of a few static buffers (a case needs several). */
static const char *at(const char *name)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", dir, name);
	return b;
}

static const char *mkdir_mode(const char *name, mode_t mode)
{
	const char *p = at(name);

	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, mode), 0);
	return p;
}

static const char *put(const char *name, mode_t mode)
{
	const char *p = at(name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "version: 1\n", 11), 11);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return p;
}

static int check(const char *path, uid_t trusted, const char *const *rw, char *err, size_t len)
{
	return sl_safe_file_check(path, trusted, rw, err, len);
}

static void expect_ok(const char *path, uid_t trusted, const char *const *rw)
{
	char err[512];
	int r = check(path, trusted, rw, err, sizeof(err));

	if (r < 0)
		fail_msg("%s: refused (%d): %s", path, r, err);
}

static void expect_refused(const char *path, uid_t trusted, const char *const *rw, int want_r,
			   const char *want_in_msg)
{
	char err[512];
	int r = check(path, trusted, rw, err, sizeof(err));

	if (r != want_r)
		fail_msg("%s: want %d, got %d: %s", path, want_r, r, r < 0 ? err : "(ok)");
	/* Every message starts with the file as it was named. */
	if (strncmp(err, path, strlen(path)) != 0)
		fail_msg("message does not start with %s: %s", path, err);
	if (want_in_msg && !strstr(err, want_in_msg))
		fail_msg("message lacks \"%s\": %s", want_in_msg, err);
}

static void test_file_modes(void **state)
{
	char want[PATH_MAX + 32];
	const char *p;

	(void)state;
	expect_ok(put("p0644", 0644), 0, NULL);
	expect_ok(put("p0600", 0600), 0, NULL);
	expect_ok(put("p0444", 0444), 0, NULL);
	p = put("p0664", 0664);
	snprintf(want, sizeof(want), "group or others can write it (chmod go-w %s)", p);
	expect_refused(p, 0, NULL, -EPERM, want);
	expect_refused(put("p0646", 0646), 0, NULL, -EPERM, "chmod go-w");
	expect_refused(put("p0622", 0622), 0, NULL, -EPERM, "chmod go-w");
}

static void test_file_owner(void **state)
{
	const char *p;

	(void)state;
	if (geteuid() != 0)
		skip();
	p = put("p-other", 0644);
	assert_int_equal(chown(p, OTHER_UID, OTHER_UID), 0);
	expect_refused(p, 0, NULL, -EPERM, "owned by uid 1234");
	expect_refused(p, 0, NULL, -EPERM, "chown root");
	/* Unprivileged sluice trusts its own user's files. */
	expect_ok(p, OTHER_UID, NULL);
	expect_refused(p, 4321, NULL, -EPERM, "root or uid 4321");
	/* Root's file with another group: the group cannot write it. */
	p = put("p-group", 0644);
	assert_int_equal(chown(p, 0, OTHER_UID), 0);
	expect_ok(p, 0, NULL);
}

static void test_directories(void **state)
{
	char want[PATH_MAX + 64];
	const char *d, *p;

	(void)state;
	/* Group-writable, world-writable: they could rename the file away
	 * and put their own in its place. */
	d = mkdir_mode("gw", 0775);
	p = put("gw/p.yaml", 0644);
	snprintf(want, sizeof(want), "group or others can write its directory %s", d);
	expect_refused(p, 0, NULL, -EPERM, want);
	snprintf(want, sizeof(want), "chmod go-w %s", d);
	expect_refused(p, 0, NULL, -EPERM, want);
	mkdir_mode("ww", 0777);
	expect_refused(put("ww/p.yaml", 0644), 0, NULL, -EPERM, "/ww, and could replace");
	/* Higher up counts as much. */
	mkdir_mode("up", 0757);
	mkdir_mode("up/mid", 0755);
	expect_refused(put("up/mid/p.yaml", 0644), 0, NULL, -EPERM, "/up, and could");
	/* A sticky directory (/tmp itself): only an entry's owner can
	 * remove or rename it, so a file of root's there is safe... */
	mkdir_mode("sticky", 01777);
	p = put("sticky/p.yaml", 0644);
	expect_ok(p, 0, NULL);
	/* ... unless it has a second name, which anyone could have made. */
	assert_int_equal(link(p, at("sticky/p2.yaml")), 0);
	expect_refused(p, 0, NULL, -EPERM, "2 links");
	/* Two links in a directory only root can write are harmless. */
	p = put("p-linked", 0644);
	assert_int_equal(link(p, at("p-linked2")), 0);
	expect_ok(p, 0, NULL);
}

static void test_directory_owner(void **state)
{
	const char *d, *p;

	(void)state;
	if (geteuid() != 0)
		skip();
	d = mkdir_mode("theirs", 0755);
	assert_int_equal(chown(d, OTHER_UID, OTHER_UID), 0);
	p = put("theirs/p.yaml", 0644);
	expect_refused(p, 0, NULL, -EPERM, "is owned by uid 1234, who could replace the file");
	expect_ok(p, OTHER_UID, NULL);
	/* A sticky directory of someone else's: they can remove anything. */
	d = mkdir_mode("sticky-theirs", 01777);
	assert_int_equal(chown(d, OTHER_UID, OTHER_UID), 0);
	expect_refused(put("sticky-theirs/p.yaml", 0644), 0, NULL, -EPERM, "uid 1234");
}

static void test_symlinks(void **state)
{
	char want[PATH_MAX + 64];
	const char *d, *p, *l;

	(void)state;
	/* A symlink in a safe place to a file in a safe place. */
	p = put("real.yaml", 0644);
	l = at("link.yaml");
	assert_int_equal(symlink(p, l), 0);
	expect_ok(l, 0, NULL);
	/* Relative, through "..". */
	mkdir_mode("sub", 0755);
	l = at("sub/rel.yaml");
	assert_int_equal(symlink("../real.yaml", l), 0);
	expect_ok(l, 0, NULL);
	/* A symlink whose target lies in a writable directory: the target
	 * can be replaced, the symlink alone proves nothing. */
	d = mkdir_mode("open", 0777);
	p = put("open/p.yaml", 0644);
	l = at("to-open.yaml");
	assert_int_equal(symlink(p, l), 0);
	snprintf(want, sizeof(want), "group or others can write its directory %s", d);
	expect_refused(l, 0, NULL, -EPERM, want);
	/* A symlink in a writable directory to a safe file: the symlink can
	 * be pointed elsewhere before the next reload. */
	l = at("open/to-real.yaml");
	assert_int_equal(symlink(at("real.yaml"), l), 0);
	expect_refused(l, 0, NULL, -EPERM, want);
	/* A directory on the way that is a symlink into a writable place. */
	mkdir_mode("open/inner", 0755);
	put("open/inner/p.yaml", 0644);
	assert_int_equal(symlink(at("open/inner"), at("dirlink")), 0);
	expect_refused(at("dirlink/p.yaml"), 0, NULL, -EPERM, want);
	/* A loop. */
	assert_int_equal(symlink("loop-b", at("loop-a")), 0);
	assert_int_equal(symlink("loop-a", at("loop-b")), 0);
	expect_refused(at("loop-a"), 0, NULL, -ELOOP, NULL);
}

static void test_symlink_owner(void **state)
{
	const char *l;

	(void)state;
	if (geteuid() != 0)
		skip();
	/* In a sticky directory, a symlink's owner can replace it. */
	mkdir_mode("st", 01777);
	l = at("st/p.yaml");
	assert_int_equal(symlink(put("target.yaml", 0644), l), 0);
	assert_int_equal(lchown(l, OTHER_UID, OTHER_UID), 0);
	expect_refused(l, 0, NULL, -EPERM, "the symlink");
	expect_refused(l, 0, NULL, -EPERM, "chown -h root");
}

static void test_nofollow(void **state)
{
	const char *l = at("nf-link");
	char err[512];
	int fd = -1;

	(void)state;
	assert_int_equal(symlink(put("nf.yaml", 0600), l), 0);
	assert_int_equal(sl_safe_file_open(l, 0, NULL, SL_SAFE_FILE_NOFOLLOW, &fd, err, sizeof(err)),
			 -ELOOP);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(err, "symlink"));
	assert_int_equal(sl_safe_file_open(at("nf.yaml"), 0, NULL, SL_SAFE_FILE_NOFOLLOW, &fd, err,
					   sizeof(err)),
			 0);
	assert_true(fd >= 0);
	close(fd);
}

static void test_sandbox_writable(void **state)
{
	char want[PATH_MAX + 64];
	const char *ws, *p;

	(void)state;
	ws = mkdir_mode("ws", 0755);
	mkdir_mode("ws/deep", 0755);
	p = put("ws/deep/p.yaml", 0644);
	{
		const char *rw[] = {ws, NULL};

		snprintf(want, sizeof(want), "(--rw %s)", ws);
		expect_refused(p, 0, rw, -EPERM, want);
	}
	{
		/* The same directory named another way: compared as files,
		 * not as strings. */
		const char *alias = at("ws-alias");
		const char *rw[] = {alias, NULL};

		assert_int_equal(symlink(ws, alias), 0);
		expect_refused(p, 0, rw, -EPERM, "--rw");
		const char *rw2[] = {at("./ws/"), NULL};
		expect_refused(p, 0, rw2, -EPERM, "--rw");
	}
	{
		/* The file itself bound writable. */
		const char *rw[] = {p, NULL};

		expect_refused(p, 0, rw, -EPERM, "--rw");
	}
	{
		/* Reached through a symlink from outside the bind. */
		const char *l = at("via-link.yaml");
		const char *rw[] = {ws, NULL};

		assert_int_equal(symlink(p, l), 0);
		expect_refused(l, 0, rw, -EPERM, "--rw");
	}
	{
		/* A sibling bound writable, one that is not there: fine. */
		const char *rw[] = {mkdir_mode("cache", 0755), at("nonexistent"), NULL};

		expect_ok(p, 0, rw);
		expect_ok(p, 0, (const char *const[]){NULL});
	}
}

static void test_not_regular(void **state)
{
	const char *f = at("fifo");

	(void)state;
	expect_refused(dir, 0, NULL, -EINVAL, "not a regular file");
	/* A FIFO is refused at once, not waited on for a writer. */
	assert_int_equal(mkfifo(f, 0600), 0);
	expect_refused(f, 0, NULL, -EINVAL, "not a regular file");
	expect_refused(at("missing.yaml"), 0, NULL, -ENOENT, "No such file");
}

static void test_fd_must_match(void **state)
{
	const char *a = put("fa.yaml", 0644), *b = put("fb.yaml", 0644);
	char err[512];
	int fd = open(a, O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(sl_safe_file_check_fd(fd, a, 0, NULL, 0, err, sizeof(err)), 0);
	/* The fd of one file checked under another's name: what was opened
	 * is not what the path leads to now. */
	assert_int_equal(sl_safe_file_check_fd(fd, b, 0, NULL, 0, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "changed while it was checked"));
	close(fd);
}

static void test_relative(void **state)
{
	char cwd[PATH_MAX];

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	put("rel.yaml", 0644);
	mkdir_mode("sub", 0755);
	mkdir_mode("relopen", 0777);
	put("relopen/p.yaml", 0644);
	assert_int_equal(chdir(dir), 0);
	expect_ok("rel.yaml", 0, NULL);
	expect_ok("./sub/../rel.yaml", 0, NULL);
	/* The working directory's own ancestors count. */
	assert_int_equal(chdir("relopen"), 0);
	expect_refused("p.yaml", 0, NULL, -EPERM, "relopen, and could replace");
	assert_int_equal(chdir(cwd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_directories, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_directory_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_symlink_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nofollow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sandbox_writable, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fd_must_match, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_relative, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
