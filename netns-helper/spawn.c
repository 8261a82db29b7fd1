/* SPDX-License-Identifier: MIT */
/*
 * Starting the command inside the sandbox.
 *
 * The child does every privileged step first (cgroup, namespaces, mounts),
 * then drops privileges the way bubblewrap's drop_privs() does and checks
 * that they are gone, then executes. Any failure before exec is reported
 * to the parent through a CLOEXEC pipe (which simply closes on a successful
 * exec) as "step: reason", and the child exits: setup is all or nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns-internal.h"
#include "util.h"

#define RESOLV_TMP_DIR "/run/sluice"
#define RESOLV_TMP RESOLV_TMP_DIR "/resolv.conf"

struct child_error {
	int error; /* positive errno */
	int exec;  /* the failed step was execve() */
	char msg[480];
};

/* Report a failed step to the parent and exit. The parent reads the pipe
 * until EOF, so one write of the whole struct is enough. */
_printf_(3, 4) static _Noreturn void child_fail(int fd, int error, const char *fmt, ...)
{
	struct child_error e = {.error = error > 0 ? error : EIO, .exec = fd < 0};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	(void)!write(fd < 0 ? -fd - 1 : fd, &e, sizeof(e));
	_exit(127);
}

static int write_all(const char *path, const char *s, mode_t mode)
{
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	size_t len = strlen(s);

	if (fd < 0)
		return negative_errno();
	if (write(fd, s, len) != (ssize_t)len)
		return negative_errno();
	return 0;
}

/* A network namespace does not change files: give the command its own
 * mount namespace whose /etc/resolv.conf names the gateway, as `ip netns
 * exec` does with /etc/netns/NAME/. The file lives on a small tmpfs that is
 * detached again at once, so nothing is written to the host's disk. */
static void setup_mounts(int efd, struct in_addr gateway)
{
	char content[160], a[INET_ADDRSTRLEN];
	int r;

	if (unshare(CLONE_NEWNS) < 0)
		child_fail(efd, errno, "creating a mount namespace: %m");
	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		child_fail(efd, errno, "making / a slave mount: %m");
	if (mkdir(RESOLV_TMP_DIR, 0755) < 0 && errno != EEXIST)
		child_fail(efd, errno, "creating %s: %m", RESOLV_TMP_DIR);
	if (mount("sluice", RESOLV_TMP_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=64k,mode=0755") < 0)
		child_fail(efd, errno, "mounting a tmpfs on %s: %m", RESOLV_TMP_DIR);
	inet_ntop(AF_INET, &gateway, a, sizeof(a));
	snprintf(content, sizeof(content),
		 "# sluice: the gateway answers DNS for this sandbox\nnameserver %s\n", a);
	r = write_all(RESOLV_TMP, content, 0644);
	if (r < 0)
		child_fail(efd, -r, "writing %s: %s", RESOLV_TMP, strerror(-r));
	/* A host without /etc/resolv.conf (or with a dangling link) has no
	 * DNS configuration to replace: leave it so. */
	if (mount(RESOLV_TMP, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0) {
		if (errno != ENOENT)
			child_fail(efd, errno, "bind-mounting %s over /etc/resolv.conf: %m",
				   RESOLV_TMP);
	} else if (mount(NULL, "/etc/resolv.conf", NULL,
			 MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			 NULL) < 0) {
		child_fail(efd, errno, "making /etc/resolv.conf read-only: %m");
	}
	if (umount2(RESOLV_TMP_DIR, MNT_DETACH) < 0)
		child_fail(efd, errno, "unmounting %s: %m", RESOLV_TMP_DIR);
}

static unsigned long last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	unsigned long v;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "%lu", &v) != 1)
		return 63; /* dropping caps the kernel does not know is harmless */
	return v;
}

static void arm_parent_death(int efd, pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(efd, errno, "setting the parent death signal: %m");
	/* The parent may have died before the signal was armed. */
	if (getppid() != parent)
		child_fail(efd, ESRCH, "sluice exited during setup");
}

/* bubblewrap's idea: empty the bounding and ambient sets while we still
 * may (CAP_SETPCAP), change ids, then make sure nothing is left and that
 * nothing can come back (no_new_privs: setuid binaries and file
 * capabilities stop working). */
static void drop_privs(int efd, const struct sl_netns_user *u, pid_t parent)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};
	unsigned long last = last_cap();

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		child_fail(efd, errno, "clearing the ambient capabilities: %m");
	for (unsigned long cap = 0; cap <= last; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			child_fail(efd, errno, "dropping capability %lu from the bounding set: %m",
				   cap);
	if (setgroups(0, NULL) < 0)
		child_fail(efd, errno, "resetting supplementary groups: %m");
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		child_fail(efd, errno, "setting gid %u: %m", (unsigned)u->gid);
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		child_fail(efd, errno, "setting uid %u: %m", (unsigned)u->uid);
	/* The uid change already cleared the permitted and effective sets
	 * (no SECBIT_KEEP_CAPS); say so explicitly all the same. */
	if (syscall(SYS_capset, &hdr, data) < 0)
		child_fail(efd, errno, "clearing capabilities: %m");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(efd, errno, "setting no_new_privs: %m");
	/* Verify rather than trust. */
	if (setuid(0) == 0 || setgid(0) == 0)
		child_fail(efd, EPERM, "privileges were not dropped: uid 0 is still reachable");
	if (syscall(SYS_capget, &hdr, data) < 0)
		child_fail(efd, errno, "reading capabilities: %m");
	if (data[0].effective || data[0].permitted || data[1].effective || data[1].permitted ||
	    prctl(PR_CAPBSET_READ, 0, 0, 0, 0) != 0)
		child_fail(efd, EPERM, "privileges were not dropped: capabilities remain");
	/* Changing credentials cleared the parent death signal: arm it again,
	 * now that nothing can clear it any more. */
	arm_parent_death(efd, parent);
}

static void close_inherited(int efd)
{
	/* CLOEXEC rather than closing now: the error pipe (CLOEXEC already)
	 * must stay open until the exec succeeds. */
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	for (int fd = 3; fd < 65536; fd++)
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF)
			child_fail(efd, errno, "marking fd %d close-on-exec: %m", fd);
}

static _Noreturn void child_main(const struct sl_netns_spawn *s, int efd, pid_t parent)
{
	char err[400];
	sigset_t empty;
	int r;

	arm_parent_death(efd, parent);
	r = sl_netns_cgroup_join(s->cgroup, err, sizeof(err));
	if (r < 0)
		child_fail(efd, -r, "%s", err);
	if (setns(sl_netns_sandbox_fd(s->sandbox), CLONE_NEWNET) < 0)
		child_fail(efd, errno, "entering the sandbox's network namespace: %m");
	setup_mounts(efd, sl_netns_sandbox_host_addr(s->sandbox));
	drop_privs(efd, &s->user, parent);
	close_inherited(efd);
	(void)signal(SIGPIPE, SIG_DFL);
	sigemptyset(&empty);
	if (sigprocmask(SIG_SETMASK, s->sigmask ? s->sigmask : &empty, NULL) < 0)
		child_fail(efd, errno, "setting the signal mask: %m");
	execvpe(s->argv[0], s->argv, s->envp);
	/* A negative fd marks the exec step (see child_fail). */
	child_fail(-efd - 1, errno, "executing %s: %m", s->argv[0]);
}

int sl_netns_spawn(const struct sl_netns_spawn *s, pid_t *ret_pid, int *exec_errno, char *err,
		   size_t errlen)
{
	struct child_error e = {0};
	_cleanup_close_ int rfd = -1, wfd = -1;
	pid_t parent = getpid(), pid;
	size_t got = 0;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_err(err, errlen, negative_errno(), "creating a pipe: %m");
	rfd = p[0];
	wfd = p[1];
	pid = fork();
	if (pid < 0)
		return sl_err(err, errlen, negative_errno(), "fork: %m");
	if (pid == 0) {
		sl_closep(&rfd);
		child_main(s, wfd, parent);
	}
	sl_closep(&wfd);
	while (got < sizeof(e)) {
		ssize_t n = read(rfd, (char *)&e + got, sizeof(e) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (exec_errno)
		*exec_errno = got == sizeof(e) && e.exec ? e.error : 0;
	if (got == 0) {
		*ret_pid = pid; /* EOF: the exec succeeded */
		return 0;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (got < sizeof(e))
		return sl_err(err, errlen, -EIO, "the sandboxed child failed during setup");
	return sl_err(err, errlen, -e.error, "%s", e.msg);
}
