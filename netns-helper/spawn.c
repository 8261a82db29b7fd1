/* SPDX-License-Identifier: MIT */
/*
 * Starting the command inside the sandbox.
 *
 *   sluice ── init (pid 1 of new pid, mount and IPC namespaces)
 *              └── the command (pid 2, a session of its own)
 *
 * The init does every privileged step first (cgroup, network namespace,
 * the filesystem view of mounts.c), forks the command, then drops its own
 * privileges and only reaps and passes signals on. The command starts a new
 * session (so it never shares the operator's terminal or process group:
 * TIOCSTI needs the caller's controlling terminal), drops privileges the
 * way bubblewrap's drop_privs() does and checks that they are gone, and
 * waits for the go byte before it executes. Any failure before exec is
 * reported to the parent through a CLOEXEC pipe (which simply closes on a
 * successful exec) as "step: reason", and the child exits: setup is all or
 * nothing. When the init exits, the kernel kills everything left in the pid
 * namespace: nothing the command forked outlives it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns-internal.h"
#include "trace.h"
#include "util.h"

struct child_error {
	int error; /* positive errno; 0: "ready", the command waits for go */
	int exec;  /* the failed step was execve() */
	char msg[480];
};

/* The signals the init passes on to the command (and so must catch: a pid
 * namespace's init gets no signal it has no handler for). */
static const int passed_on[] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH};
/* What every signal's disposition was before the init changed it: the
 * command gets them back, so a disposition sluice inherited (SIGINT
 * ignored in a background job, SIGHUP under nohup) reaches it as through
 * any transparent wrapper. */
static struct sigaction before[65];

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

static unsigned long last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	unsigned long v;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "%lu", &v) != 1)
		return 63; /* dropping caps the kernel does not know is harmless */
	return v;
}

/* The command dies with the init (and so with the pid namespace); the init
 * with sluice. `alive` is the read end of a pipe whose write end only
 * sluice holds: EOF there means sluice is gone (an init's getppid() is 0,
 * so it cannot ask that). */
static void arm_parent_death(int efd, pid_t parent, int alive)
{
	struct pollfd p = {.fd = alive, .events = POLLIN};

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(efd, errno, "setting the parent death signal: %m");
	/* The parent may have died before the signal was armed. */
	if (alive >= 0 ? poll(&p, 1, 0) != 0 : getppid() != parent)
		child_fail(efd, ESRCH, "sluice exited during setup");
}

/* bubblewrap's idea: empty the bounding and ambient sets while we still
 * may (CAP_SETPCAP), change ids, then make sure nothing is left and that
 * nothing can come back (no_new_privs: setuid binaries and file
 * capabilities stop working). */
static void drop_privs(int efd, const struct sl_netns_user *u, pid_t parent, int alive)
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
	arm_parent_death(efd, parent, alive);
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

/* The command's own terminal: a new session in any case, and the pty (when
 * there is one) as its controlling terminal in place of every fd 0-2 that
 * is a terminal. */
static void own_terminal(int efd, int pty)
{
	if (setsid() < 0)
		child_fail(efd, errno, "starting a new session: %m");
	if (pty < 0)
		return;
	if (ioctl(pty, TIOCSCTTY, 0) < 0)
		child_fail(efd, errno, "taking the sandbox's pty as the terminal: %m");
	for (int fd = 0; fd <= 2; fd++)
		if (isatty(fd) && dup2(pty, fd) < 0)
			child_fail(efd, errno, "connecting fd %d to the sandbox's pty: %m", fd);
	if (pty > 2)
		close(pty);
}

static _Noreturn void command_main(const struct sl_netns_spawn *s, int efd, int go)
{
	struct child_error ready = {0};
	char err[400], b = 0;
	sigset_t empty;
	ssize_t n;
	int r;

	own_terminal(efd, s->pty);
	drop_privs(efd, &s->user, 1, -1);
	/* After no_new_privs (drop_privs sets it): then no privilege is needed
	 * to load it, and nothing the command runs can shed it. */
	r = s->filter ? sl_netns_filter_load(s->filter, err, sizeof(err))
		      : sl_netns_seccomp_command(err, sizeof(err));
	if (r < 0)
		child_fail(efd, -r, "%s", err);
	close_inherited(efd);
	for (int sig = 1; sig < SIGRTMIN && sig < (int)ELEMENTSOF(before); sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &before[sig], NULL);
	(void)signal(SIGPIPE, SIG_DFL);
	sigemptyset(&empty);
	if (sigprocmask(SIG_SETMASK, s->sigmask ? s->sigmask : &empty, NULL) < 0)
		child_fail(efd, errno, "setting the signal mask: %m");
	sl_trace("command ready");
	/* Everything is in place: say so, and wait for sluice's word. */
	if (write(efd, &ready, sizeof(ready)) != sizeof(ready))
		_exit(127);
	do
		n = read(go, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || b != 'g')
		_exit(127); /* sluice gave up: never run the command */
	close(go);
	execvpe(s->argv[0], s->argv, s->envp);
	/* A negative fd marks the exec step (see child_fail). */
	child_fail(-efd - 1, errno, "executing %s: %m", s->argv[0]);
}

static void on_signal(int sig)
{
	(void)sig; /* sigwaitinfo() takes them; the handler only makes them count */
}

/* pid 1: reap, pass signals on, exit with the command's status. */
static _Noreturn void init_loop(pid_t cmd, const sigset_t *set)
{
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si), status;
		pid_t p;

		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			(void)kill(cmd, sig);
			continue;
		}
		while ((p = waitpid(-1, &status, WNOHANG)) > 0)
			if (p == cmd)
				_exit(WIFEXITED(status)	  ? WEXITSTATUS(status)
				      : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
							    : 127);
	}
}

/* A session keyring of the sandbox's own, empty and root's, in place of the
 * one sluice inherited (pam_keyinit's for the operator's login, a
 * service's): a session keyring survives fork, exec and setuid, and every
 * key reachable from it is possessed, with the possessor's rights whatever
 * the uid. keyctl is denied to the command, but /proc/keys lists what it
 * possesses, and other interfaces take a possessed key by its serial
 * (AF_ALG's ALG_SET_KEY_BY_KEY_SERIAL uses it as a MAC or cipher key).
 * Joined while still root, so the new keyring counts against no quota of
 * the command's uid, whose keyrings are scrubbed apart (user.c). No
 * keyrings at all (ENOSYS), or keyctl denied to sluice itself by a
 * container's filter (EPERM, and then to the command too): nothing to
 * leave. */
static void own_session_keyring(int efd)
{
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS &&
	    errno != EPERM)
		child_fail(efd, errno, "joining a session keyring of the sandbox's own: %m");
}

static _Noreturn void init_main(const struct sl_netns_spawn *s, bool born_in_v2, int efd, int go,
				int alive, pid_t parent)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t set;
	char err[400], cwd[PATH_MAX];
	pid_t cmd;
	int r;

	sl_trace("init started");
	arm_parent_death(efd, parent, alive);
	r = sl_netns_cgroup_join(s->cgroup, born_in_v2, err, sizeof(err));
	if (r < 0)
		child_fail(efd, -r, "%s", err);
	sl_trace("init joined cgroup");
	own_session_keyring(efd);
	if (setns(sl_netns_sandbox_fd(s->sandbox), CLONE_NEWNET) < 0)
		child_fail(efd, errno, "entering the sandbox's network namespace: %m");
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/");
	r = sl_netns_fs_setup(&s->fs, &s->user, sl_netns_sandbox_host_addr(s->sandbox), err,
			      sizeof(err));
	if (r < 0)
		child_fail(efd, -r, "%s", err);
	sl_trace("init fs set up");
	/* The working directory still points into the host's mounts, under
	 * what the view covers now (sluice started in /run would hand the
	 * command /run's sockets): look its path up again in the view, and
	 * where it is not there, start at /. */
	if (chdir(cwd) < 0 && chdir("/") < 0)
		child_fail(efd, errno, "changing to /: %m");

	/* Only what it passes on reaches a pid namespace's init from inside:
	 * a signal it has a handler for is delivered. So no other handler
	 * (a sanitizer's SIGSEGV handler in a test build, say) may be left for
	 * the command to trigger; with the default, the kernel drops them. */
	for (int sig = 1; sig < SIGRTMIN && sig < (int)ELEMENTSOF(before); sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &before[sig]) == 0)
			(void)signal(sig, SIG_DFL);
	/* Caught before the command exists, so none sent meanwhile is lost. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < ELEMENTSOF(passed_on); i++) {
		sigaddset(&set, passed_on[i]);
		if (sigaction(passed_on[i], &sa, NULL) < 0)
			child_fail(efd, errno, "catching signal %d: %m", passed_on[i]);
	}
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		child_fail(efd, errno, "blocking signals: %m");
	cmd = fork();
	if (cmd < 0)
		child_fail(efd, errno, "fork: %m");
	if (cmd == 0)
		command_main(s, efd, go);
	sl_trace("init forked command");

	/* The command holds what it needs; the init keeps nothing but `alive`,
	 * not even the error pipe (its EOF tells sluice the command executed). */
	for (int fd = 0; fd < 3; fd++)
		if (fd != alive)
			(void)close(fd);
	if ((alive > 3 && close_range(3, (unsigned)alive - 1, 0) < 0) ||
	    close_range((unsigned)alive + 1, ~0u, 0) < 0)
		_exit(127);
	drop_privs(-1, &s->user, parent, alive);
	/* Our memory is a copy of sluice's (the secrets it read, its
	 * environment, the command's own stays only until its exec): never
	 * dumpable. The uid change left that to fs.suid_dumpable, and at 1
	 * the command, our uid, could ptrace us and read it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		_exit(127);
	init_loop(cmd, &set);
}

/* The sandbox's init, in new pid, mount and IPC namespaces. fork() cannot
 * give the child a pid namespace of its own; clone without a stack works as
 * fork() does (the caller is single-threaded, so no lock of another thread
 * is held in the copy). An IPC namespace too: System V objects and POSIX
 * message queues of the host are out of reach, and what the command makes
 * there dies with it instead of waiting for the next holder of its uid.
 * clone3 puts it in the v2 group as it is born (*ret_born_in_v2), where
 * the kernel can (Linux >= 5.7); any refusal (an older kernel, a seccomp
 * filter of a container runtime) falls back to clone, and the init joins by
 * writing cgroup.procs, which reports what really is wrong, if anything. */
static pid_t clone_init(const struct sl_netns_spawn *s, bool *ret_born_in_v2)
{
	const uint64_t ns = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
	int cg = sl_netns_cgroup_v2_fd(s->cgroup);
	pid_t pid;

	*ret_born_in_v2 = false;
#ifdef SYS_clone3
	if (cg >= 0) {
		struct clone_args a = {
		    .flags = ns | CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cg};

		pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
		if (pid >= 0) {
			*ret_born_in_v2 = true;
			return pid;
		}
	}
#else
	(void)cg;
#endif
	pid = (pid_t)syscall(SYS_clone, SIGCHLD | ns, NULL, NULL, NULL, NULL);
	return pid;
}

int sl_netns_spawn_start(const struct sl_netns_spawn *s, struct sl_netns_proc *ret, char *err,
			 size_t errlen)
{
	_cleanup_close_ int rfd = -1, wfd = -1, go_r = -1, go_w = -1, alive_r = -1, alive_w = -1;
	pid_t parent = getpid(), pid;
	bool born_in_v2;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_err(err, errlen, negative_errno(), "creating a pipe: %m");
	rfd = p[0];
	wfd = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_err(err, errlen, negative_errno(), "creating a pipe: %m");
	go_r = p[0];
	go_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return sl_err(err, errlen, negative_errno(), "creating a pipe: %m");
	alive_r = p[0];
	alive_w = p[1];
	pid = clone_init(s, &born_in_v2);
	if (pid < 0)
		return sl_err(err, errlen, negative_errno(), "creating the sandbox's namespaces: %m");
	if (pid == 0) {
		sl_closep(&rfd);
		sl_closep(&go_w);
		sl_closep(&alive_w);
		init_main(s, born_in_v2, wfd, go_r, alive_r, parent);
	}
	/* `alive` stays open for the sandbox's whole life. */
	*ret = (struct sl_netns_proc){
	    .pid = pid, .efd = TAKE_FD(rfd), .go = TAKE_FD(go_w), .alive = TAKE_FD(alive_w)};
	return 0;
}

int sl_netns_spawn_ready(struct sl_netns_proc *p, char *err, size_t errlen)
{
	struct child_error e = {0};
	size_t got = 0;

	while (got < sizeof(e)) {
		ssize_t n = read(p->efd, (char *)&e + got, sizeof(e) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == sizeof(e) && e.error == 0)
		return 0;
	sl_netns_proc_close(p);
	while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	if (got < sizeof(e))
		return sl_err(err, errlen, -EIO, "the sandboxed child failed during setup");
	return sl_err(err, errlen, -e.error, "%s", e.msg);
}

int sl_netns_spawn(const struct sl_netns_spawn *s, struct sl_netns_proc *ret, char *err,
		   size_t errlen)
{
	int r = sl_netns_spawn_start(s, ret, err, errlen);

	return r < 0 ? r : sl_netns_spawn_ready(ret, err, errlen);
}

int sl_netns_spawn_go(struct sl_netns_proc *p, int *exec_errno, char *err, size_t errlen)
{
	struct child_error e = {0};
	size_t got = 0;

	if (exec_errno)
		*exec_errno = 0;
	if (write(p->go, "g", 1) != 1)
		return sl_err(err, errlen, negative_errno(), "starting the command: %m");
	sl_closep(&p->go);
	p->go = -1;
	while (got < sizeof(e)) {
		ssize_t n = read(p->efd, (char *)&e + got, sizeof(e) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	sl_closep(&p->efd);
	p->efd = -1;
	if (got == 0)
		return 0; /* EOF: the exec succeeded */
	if (got < sizeof(e))
		return sl_err(err, errlen, -EIO, "the sandboxed command failed to start");
	if (exec_errno && e.exec)
		*exec_errno = e.error;
	return sl_err(err, errlen, -e.error, "%s", e.msg);
}

void sl_netns_proc_close(struct sl_netns_proc *p)
{
	sl_closep(&p->efd);
	sl_closep(&p->go);
	sl_closep(&p->alive);
	p->efd = p->go = p->alive = -1;
}
