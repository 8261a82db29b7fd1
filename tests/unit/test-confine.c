/* SPDX-License-Identifier: MIT */
/*
 * The gateway's confinement (confine.h), seen from outside the confined
 * process: a child confines itself and the parent reads what the kernel
 * says of it (/proc/PID/status, who owns /proc/PID, where /proc/PID/root
 * leads), or how it died. Needs root (to change ids); without root the
 * cases are skipped, except under CI=true, where they fail: a CI that
 * silently skipped them would prove nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "confine.h"
#include "netns.h"

static struct sl_netns_user user;
static int user_lock = -1;
static char empty[64];

static bool need_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return true;
	if (ci && !strcmp(ci, "true"))
		fail_msg("confinement tests need root (CI=true: not skipped)");
	skip();
	return false;
}

static int setup(void **state)
{
	char err[256];

	(void)state;
	if (geteuid() != 0)
		return 0;
	if (sl_netns_user_allocate(NULL, &user, &user_lock, err, sizeof(err)) < 0) {
		fprintf(stderr, "allocating a uid: %s\n", err);
		return -1;
	}
	snprintf(empty, sizeof(empty), "/tmp/test-confine-XXXXXX");
	if (!mkdtemp(empty) || chmod(empty, 0555) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	rmdir(empty);
	sl_netns_user_release(NULL, user.uid, user_lock);
	return 0;
}

static void confine_or_die(uid_t uid, gid_t gid, const char *dir)
{
	struct sl_gw_confine c = { .uid = uid, .gid = gid, .empty_dir = dir };
	char err[256];

	if (sl_gw_confine(&c, err, sizeof(err)) < 0) {
		(void)!write(2, err, strlen(err));
		_exit(100);
	}
}

static int wait_child(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* One line of a /proc status text, its value after the tab. */
static void status_line(const char *status, const char *key, char *ret, size_t size)
{
	char pat[32];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\n%s:\t", key);
	p = strstr(status, pat);
	assert_non_null(p);
	p += strlen(pat);
	e = strchr(p, '\n');
	assert_non_null(e);
	while (e > p && e[-1] == ' ')
		e--; /* "Groups:\t \n" for none */
	snprintf(ret, size, "%.*s", (int)(e - p), p);
}

/* The child confines itself (chrooted, to the allocated uid), then reads
 * its own status through an fd opened before, and waits: the parent
 * looks at /proc/PID meanwhile. */
static void test_status(void **state)
{
	int out[2], go[2];
	char status[4096] = "\n", v[128], want[128], root[PATH_MAX], link[64];
	struct stat st;
	ssize_t n, have = 1;
	pid_t pid;

	(void)state;
	if (!need_root())
		return;
	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		char buf[4096], c;

		close(out[0]);
		close(go[1]);
		confine_or_die(user.uid, user.gid, empty);
		/* Opened before, read after: the kernel writes the text
		 * at the first read. */
		if (fd < 0)
			_exit(101);
		n = read(fd, buf, sizeof(buf));
		if (n <= 0 || write(out[1], buf, (size_t)n) != n)
			_exit(102);
		close(out[1]);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(out[1]);
	close(go[0]);
	while ((n = read(out[0], status + have, sizeof(status) - 1 - (size_t)have)) > 0)
		have += n;
	close(out[0]);
	assert_true(have > 1);

	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", (unsigned)user.uid, (unsigned)user.uid,
		 (unsigned)user.uid, (unsigned)user.uid);
	status_line(status, "Uid", v, sizeof(v));
	assert_string_equal(v, want);
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", (unsigned)user.gid, (unsigned)user.gid,
		 (unsigned)user.gid, (unsigned)user.gid);
	status_line(status, "Gid", v, sizeof(v));
	assert_string_equal(v, want);
	status_line(status, "Groups", v, sizeof(v));
	assert_string_equal(v, "");
	static const char *const caps[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		status_line(status, caps[i], v, sizeof(v));
		assert_string_equal(v, "0000000000000000");
	}
	status_line(status, "NoNewPrivs", v, sizeof(v));
	assert_string_equal(v, "1");
	status_line(status, "Seccomp", v, sizeof(v));
	assert_string_equal(v, "2");

	/* Not dumpable: the kernel makes /proc/PID root's. Chrooted into the
	 * empty directory. */
	snprintf(link, sizeof(link), "/proc/%d/status", (int)pid);
	assert_int_equal(stat(link, &st), 0);
	assert_int_equal(st.st_uid, 0);
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, root, sizeof(root) - 1);
	assert_true(n > 0);
	root[n] = '\0';
	assert_string_equal(root, empty);

	close(go[1]);
	st.st_mode = (mode_t)wait_child(pid);
	assert_true(WIFEXITED(st.st_mode));
	assert_int_equal(WEXITSTATUS(st.st_mode), 0);
}

enum forbidden { F_MOUNT, F_PTRACE, F_UNIX_SOCKET, F_KILL_OTHER, F_UNSHARE, F_EXECVE, F_THREAD };

static void *thread_mounts(void *arg)
{
	int fd = *(int *)arg;
	char c;

	(void)!read(fd, &c, 1);
	syscall(SYS_mount, "none", "/", "tmpfs", 0UL, NULL);
	return NULL;
}

static void call_forbidden(enum forbidden f, pid_t parent)
{
	switch (f) {
	case F_MOUNT:
		syscall(SYS_mount, "none", "/", "tmpfs", 0UL, NULL);
		break;
	case F_PTRACE:
		syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
		break;
	case F_UNIX_SOCKET:
		socket(AF_UNIX, SOCK_STREAM, 0);
		break;
	case F_KILL_OTHER:
		kill(parent, 0);
		break;
	case F_UNSHARE:
		syscall(SYS_unshare, CLONE_NEWUSER);
		break;
	case F_EXECVE: {
		char *const argv[] = { (char *)"true", NULL };

		syscall(SYS_execve, "/bin/true", argv, NULL);
		break;
	}
	case F_THREAD:
		break;
	}
}

/* A confined process that makes a call outside the allowlist dies of
 * SIGSYS, at once: the call never returns to it. */
static void check_killed(enum forbidden f)
{
	pid_t parent = getpid(), pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;
		int p[2];

		/* A thread that exists before the filter is filtered too
		 * (TSYNC): it is the one that calls mount. */
		if (f == F_THREAD && (pipe(p) < 0 || pthread_create(&t, NULL, thread_mounts, &p[0])))
			_exit(103);
		confine_or_die(user.uid, user.gid, NULL);
		if (f == F_THREAD) {
			(void)!write(p[1], "x", 1);
			pthread_join(t, NULL);
		}
		call_forbidden(f, parent);
		_exit(0);
	}
	st = wait_child(pid);
	if (!WIFSIGNALED(st))
		fail_msg("forbidden call %d: exited %d, not killed", (int)f, WEXITSTATUS(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

static void test_forbidden_kills(void **state)
{
	(void)state;
	if (!need_root())
		return;
	check_killed(F_MOUNT);
	check_killed(F_PTRACE);
	check_killed(F_UNIX_SOCKET);
	check_killed(F_KILL_OTHER);
	check_killed(F_UNSHARE);
	check_killed(F_THREAD);
#ifndef SL_SANITIZERS
	/* With the sanitizers, execve fails instead (their symbolizer). */
	check_killed(F_EXECVE);
#endif
}

/* Opening a file fails with EACCES and the process lives on, even with
 * no chroot (the file is there: it is the filter that refuses). */
static void test_open_refused(void **state)
{
	int p[2], e = 0;
	pid_t pid;
	int st;

	(void)state;
	if (!need_root())
		return;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd;

		close(p[0]);
		confine_or_die(user.uid, user.gid, NULL);
		fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
		e = fd < 0 ? errno : 0;
		(void)!write(p[1], &e, sizeof(e));
		_exit(fd < 0 ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &e, sizeof(e)), (ssize_t)sizeof(e));
	close(p[0]);
	assert_int_equal(e, EACCES);
	st = wait_child(pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* abort() still ends a confined process by SIGABRT (an assertion, a
 * sanitizer's report must stay visible). */
static void test_abort_visible(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	if (!need_root())
		return;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		confine_or_die(user.uid, user.gid, NULL);
		abort();
	}
	st = wait_child(pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

#ifdef SL_SANITIZERS
/* The sanitizer build: a report made once confined is still printed (its
 * symbolizer, refused, does not kill the process first). */
static int overflow(volatile int x)
{
	return x + 1;
}

static void check_report(bool ubsan, const char *want)
{
	char out[8192] = "";
	size_t have = 0;
	ssize_t n;
	int p[2], st;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile char *volatile q = malloc(16);

		dup2(p[1], 2);
		close(p[0]);
		confine_or_die(user.uid, user.gid, NULL);
		if (ubsan)
			_exit(overflow(INT_MAX) < 0 ? 3 : 4);
		free((void *)q);
		q[0] = 'x'; /* heap-use-after-free */
		_exit(0);
	}
	close(p[1]);
	while (have < sizeof(out) - 1 && (n = read(p[0], out + have, sizeof(out) - 1 - have)) > 0)
		have += (size_t)n;
	close(p[0]);
	st = wait_child(pid);
	if (!strstr(out, want))
		fail_msg("no report from the confined child (status %#x): %s", st, out);
	assert_false(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
}

static void test_sanitizer_report(void **state)
{
	(void)state;
	if (!need_root())
		return;
	check_report(false, "AddressSanitizer: heap-use-after-free");
	check_report(true, "runtime error: signed integer overflow");
}
#endif

/* Unprivileged (the ids changed already, by hand): its own ids kept, and
 * still filtered, with no_new_privs, and not dumpable (which the uid
 * change above would have done by itself: here only confine does it). */
static void test_unprivileged(void **state)
{
	int go[2], ready[2];
	char status[4096] = "\n", v[64], link[64], c;
	struct stat st;
	ssize_t n;
	pid_t pid;
	int fd, w;

	(void)state;
	if (!need_root())
		return;
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		if (setgroups(0, NULL) < 0 || setresgid(user.gid, user.gid, user.gid) < 0 ||
		    setresuid(user.uid, user.uid, user.uid) < 0 ||
		    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			_exit(104);
		confine_or_die((uid_t)-1, (gid_t)-1, NULL);
		(void)!write(ready[1], "x", 1);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	snprintf(link, sizeof(link), "/proc/%d/status", (int)pid);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, status + 1, sizeof(status) - 2);
	assert_true(n > 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	status_line(status, "Seccomp", v, sizeof(v));
	assert_string_equal(v, "2");
	status_line(status, "NoNewPrivs", v, sizeof(v));
	assert_string_equal(v, "1");
	assert_int_equal(st.st_uid, 0); /* not dumpable: root's, not the uid's */
	close(go[1]);
	w = wait_child(pid);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

/* Root may not keep its ids, nor become root again; the refusal changes
 * nothing (the child is still root with every capability). */
static void test_root_refused(void **state)
{
	static const struct sl_gw_confine bad[] = {
		{ .uid = (uid_t)-1, .gid = (gid_t)-1 },
		{ .uid = 0, .gid = 0 },
	};
	pid_t pid;
	int st;

	(void)state;
	if (!need_root())
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			char err[256] = "";
			int r = sl_gw_confine(&bad[i], err, sizeof(err));

			struct __user_cap_header_struct hdr = {
				.version = _LINUX_CAPABILITY_VERSION_3
			};
			struct __user_cap_data_struct data[2] = { { 0 } };

			if (r >= 0 || !err[0])
				_exit(1);
			if (geteuid() != 0 || getuid() != 0)
				_exit(2);
			/* Refused before anything was dropped. */
			if (syscall(SYS_capget, &hdr, data) < 0 || !data[0].effective ||
			    prctl(PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) != 1)
				_exit(3);
			_exit(0);
		}
		st = wait_child(pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_forbidden_kills),
		cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_abort_visible),
		cmocka_unit_test(test_unprivileged),
#ifdef SL_SANITIZERS
		cmocka_unit_test(test_sanitizer_report),
#endif
		cmocka_unit_test(test_root_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
