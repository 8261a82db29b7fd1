/* SPDX-License-Identifier: MIT */
/* Loading secret values: who may read the file, where the value comes
 * from, and what a value may contain. */
#include <errno.h>
#include <fcntl.h>
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

#include "secret.h"

#define SANDBOX_UID 65534

static char dir[64];
/* The sandbox's --rw paths for the next load. */
static const char *const *rw_paths;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-secret-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write a file under dir with the given content and mode; returns its path
 * in a static buffer. */
static const char *put(const char *name, const char *content, size_t len, mode_t mode)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static int load(enum sl_secret_source src, const char *ref, struct sl_secret_value **v, char *err,
		size_t errlen)
{
	struct sl_secret sec = {.name = (char *)"api", .source = src, .ref = (char *)ref};

	return sl_secret_load(&sec, SANDBOX_UID, rw_paths, v, err, errlen);
}

static void expect_ok(enum sl_secret_source src, const char *ref, const char *want)
{
	struct sl_secret_value *v = NULL;
	char err[512];
	int r = load(src, ref, &v, err, sizeof(err));

	if (r < 0)
		fail_msg("refused (%d): %s", r, err);
	assert_non_null(v);
	assert_int_equal(v->len, strlen(want));
	assert_string_equal(v->value, want);
	sl_secret_value_free(v);
}

static void expect_refused(enum sl_secret_source src, const char *ref, int want_r,
			   const char *want_in_msg)
{
	struct sl_secret_value *v = NULL;
	char err[512];
	int r = load(src, ref, &v, err, sizeof(err));

	if (r != want_r)
		fail_msg("want %d, got %d: %s", want_r, r, r < 0 ? err : "(ok)");
	assert_null(v);
	/* The message names the secret, and never carries the value. */
	assert_non_null(strstr(err, "\"api\""));
	if (want_in_msg && !strstr(err, want_in_msg))
		fail_msg("message lacks \"%s\": %s", want_in_msg, err);
	assert_null(strstr(err, "sk-test"));
}

static void test_file_modes(void **state)
{
	const char *p;

	(void)state;
	p = put("k0600", "sk-test-0123456789\n", 19, 0600);
	expect_ok(SL_SECRET_FILE, p, "sk-test-0123456789");
	p = put("k0400", "sk-test-0123456789", 18, 0400);
	expect_ok(SL_SECRET_FILE, p, "sk-test-0123456789");
	p = put("k0640", "sk-test-0123456789\n", 19, 0640);
	expect_refused(SL_SECRET_FILE, p, -EPERM, "0640");
	p = put("k0644", "sk-test-0123456789\n", 19, 0644);
	expect_refused(SL_SECRET_FILE, p, -EPERM, p);
	p = put("k0602", "sk-test-0123456789\n", 19, 0602);
	expect_refused(SL_SECRET_FILE, p, -EPERM, "chmod 600");
}

static void test_file_owner(void **state)
{
	const char *p;

	(void)state;
	if (geteuid() != 0)
		skip();
	/* Owned by the sandbox's user: it could chmod and read it. */
	p = put("ksandbox", "sk-test-0123456789\n", 19, 0600);
	assert_int_equal(chown(p, SANDBOX_UID, SANDBOX_UID), 0);
	expect_refused(SL_SECRET_FILE, p, -EPERM, "sandbox");
	/* Owned by some third user. */
	p = put("kother", "sk-test-0123456789\n", 19, 0600);
	assert_int_equal(chown(p, 1234, 1234), 0);
	expect_refused(SL_SECRET_FILE, p, -EPERM, "uid 1234");
	/* Root's, with a group that is not root's: still fine at 0600. */
	p = put("kgroup", "sk-test-0123456789\n", 19, 0600);
	assert_int_equal(chown(p, 0, SANDBOX_UID), 0);
	expect_ok(SL_SECRET_FILE, p, "sk-test-0123456789");
}

static void test_file_shapes(void **state)
{
	char path[128], link[128];
	static char big[SL_SECRET_MAX_LEN + 200];
	const char *p;

	(void)state;
	expect_refused(SL_SECRET_FILE, "relative/key", -EINVAL, "absolute");
	snprintf(path, sizeof(path), "%s/missing", dir);
	expect_refused(SL_SECRET_FILE, path, -ENOENT, path);
	/* A symlink is not followed. */
	p = put("target", "sk-test-0123456789\n", 19, 0600);
	snprintf(path, sizeof(path), "%s", p);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	expect_refused(SL_SECRET_FILE, link, -ELOOP, link);
	/* A directory is not a file. */
	expect_refused(SL_SECRET_FILE, dir, -EINVAL, "regular");
	/* Too long, too short, empty. */
	memset(big, 'k', sizeof(big));
	p = put("big", big, sizeof(big), 0600);
	expect_refused(SL_SECRET_FILE, p, -EFBIG, NULL);
	p = put("short", "sk-1\n", 5, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "bytes");
	p = put("empty", "\n\n", 2, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "empty");
}

static void test_newlines(void **state)
{
	const char *p;

	(void)state;
	p = put("crlf-end", "sk-test-0123456789\r\n\n", 21, 0600);
	expect_ok(SL_SECRET_FILE, p, "sk-test-0123456789");
	p = put("lf-inside", "sk-test-0123\nX-Evil: 1\n", 23, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "0x0a");
	p = put("cr-inside", "sk-test-0123\rX-Evil: 1", 22, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "0x0d");
	p = put("nul-inside", "sk-test-0123\0abcdef", 19, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "0x00");
	p = put("nul-end", "sk-test-0123456789\0", 19, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "0x00");
	/* Spaces and tabs at the ends are not part of a header's value: an
	 * origin never sees them, so the value is kept without them (the
	 * scrubber looks for what an echo would hold). Inside, they stay. */
	p = put("blank-ends", " \t sk-test-0123456789 \t\n", 24, 0600);
	expect_ok(SL_SECRET_FILE, p, "sk-test-0123456789");
	p = put("blank-inside", "sk-test 0123456789\n", 19, 0600);
	expect_ok(SL_SECRET_FILE, p, "sk-test 0123456789");
	p = put("blank-only", " \t \n", 4, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "empty");
	p = put("blank-short", "   sk-1234   \n", 14, 0600);
	expect_refused(SL_SECRET_FILE, p, -EINVAL, "bytes");
}

static void test_env(void **state)
{
	(void)state;
	setenv("SLUICE_TEST_KEY", "sk-test-from-env\n", 1);
	expect_ok(SL_SECRET_ENV, "SLUICE_TEST_KEY", "sk-test-from-env");
	setenv("SLUICE_TEST_KEY", "", 1);
	expect_refused(SL_SECRET_ENV, "SLUICE_TEST_KEY", -EINVAL, "SLUICE_TEST_KEY");
	setenv("SLUICE_TEST_KEY", "sk-test-abc\r\nX: y", 1);
	expect_refused(SL_SECRET_ENV, "SLUICE_TEST_KEY", -EINVAL, "0x0d");
	unsetenv("SLUICE_TEST_KEY");
	expect_refused(SL_SECRET_ENV, "SLUICE_TEST_KEY", -ENOENT, "not set");
}

static void test_credential(void **state)
{
	char cred[128];
	const char *p;

	(void)state;
	unsetenv("CREDENTIALS_DIRECTORY");
	expect_refused(SL_SECRET_CREDENTIAL, "openai", -ENOENT, "CREDENTIALS_DIRECTORY");
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	p = put("openai", "sk-test-credential\n", 19, 0400);
	expect_ok(SL_SECRET_CREDENTIAL, "openai", "sk-test-credential");
	snprintf(cred, sizeof(cred), "%s", p);
	assert_int_equal(chmod(cred, 0440), 0);
	expect_refused(SL_SECRET_CREDENTIAL, "openai", -EPERM, cred);
	expect_refused(SL_SECRET_CREDENTIAL, "../etc/shadow", -EINVAL, "credential name");
	expect_refused(SL_SECRET_CREDENTIAL, "..", -EINVAL, "credential name");
	expect_refused(SL_SECRET_CREDENTIAL, "absent", -ENOENT, "absent");
	unsetenv("CREDENTIALS_DIRECTORY");
}

/* Readable by root alone is not enough: the file must lie where nobody
 * else could replace it (safe-file.h). */
static void test_file_place(void **state)
{
	char sub[128], path[128];
	const char *p;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/open", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(chmod(sub, 0777), 0);
	p = put("open/key", "sk-test-0123456789\n", 19, 0600);
	snprintf(path, sizeof(path), "%s", p);
	expect_refused(SL_SECRET_FILE, path, -EPERM, "group or others can write its directory");
	assert_int_equal(chmod(sub, 0775), 0);
	expect_refused(SL_SECRET_FILE, path, -EPERM, "chmod go-w");
	assert_int_equal(chmod(sub, 0755), 0);
	expect_ok(SL_SECRET_FILE, path, "sk-test-0123456789");
	/* Under a path the sandbox can write (run --rw). */
	{
		const char *const rw[] = {sub, NULL};

		rw_paths = rw;
		expect_refused(SL_SECRET_FILE, path, -EPERM, "--rw");
		rw_paths = NULL;
	}
	/* The same for a systemd credential's directory. */
	setenv("CREDENTIALS_DIRECTORY", sub, 1);
	put("open/cred", "sk-test-credential\n", 19, 0400);
	expect_ok(SL_SECRET_CREDENTIAL, "cred", "sk-test-credential");
	assert_int_equal(chmod(sub, 0757), 0);
	expect_refused(SL_SECRET_CREDENTIAL, "cred", -EPERM, "chmod go-w");
	unsetenv("CREDENTIALS_DIRECTORY");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_modes),	cmocka_unit_test(test_file_owner),
	    cmocka_unit_test(test_file_shapes), cmocka_unit_test(test_newlines),
	    cmocka_unit_test(test_env),		cmocka_unit_test(test_credential),
	    cmocka_unit_test(test_file_place),
	};

	sl_secret_value_free(NULL);
	return cmocka_run_group_tests(tests, setup, teardown);
}
