/* SPDX-License-Identifier: MIT */
/*
 * Confining the gateway's process (confine.h).
 *
 * The steps are bubblewrap's drop_privs() (empty the bounding and ambient
 * sets while CAP_SETPCAP is still ours, change ids, clear the rest, check
 * that nothing came back) followed by relayd's idea of a process that can
 * do only its job: a seccomp allowlist of the calls the gateway makes while
 * serving, measured with strace -f over the integration suites that drive
 * `sluice gateway` (docs/gateway.md, "What the process may do").
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "confine.h"
#include "err.h"
#include "macro.h"

/*
 * The calls allowed with any arguments, by who needs them. Measured: the
 * integration suites that drive `sluice gateway` (gateway, inspect*,
 * headers, smuggling, dns*, ssrf, failclosed, policy-files, review*)
 * were run with the gateway under strace -f, and these are the calls it
 * made after the filter was loaded, plus the few marked "not seen" that a
 * path those suites do not reach needs. A name the running architecture
 * lacks (epoll_wait on arm64) is skipped.
 */
static const char *const allowed[] = {
	/* libuv's loop (epoll_pwait: when it blocks a signal while it
	 * waits; not seen). */
	"epoll_wait", "epoll_pwait", "epoll_ctl",
	/* Reading and writing sockets (libuv, c-ares, the route socket),
	 * the audit log's fd, the eventfd and signal pipe libuv made before
	 * (readv, writev: libuv's writes of several buffers; sendmmsg:
	 * libuv's queued UDP sends; not seen). */
	"read", "write", "readv", "writev", "recvfrom", "recvmsg", "sendto", "sendmsg",
	"sendmmsg",
	/* An opaque tunnel's bytes moved socket to pipe to socket (splice.c).
	 * splice moves bytes only between fds the process holds already, one
	 * of them a pipe, and the pipes were all made before the filter
	 * (pipe2 is not allowed: no new pipe, no pipe_buffer to spray the
	 * kernel's heap with). Not vmsplice nor tee. */
	"splice",
	/* Accepting clients (conn.c), connecting upstream (conn.c,
	 * inspect.c), c-ares' sockets to the resolver; bind: the route
	 * socket of getifaddrs(). The socket's domain is checked below. */
	"accept4", "connect", "bind", "getsockname", "getpeername", "setsockopt",
	"getsockopt", "shutdown", "close",
	/* libuv: O_NONBLOCK and FD_CLOEXEC on accepted and new sockets. */
	"fcntl",
	/* Reading a policy through the fd the reader hands over (policy's
	 * loader fstats it: glibc's fstat is newfstatat(fd, "",
	 * AT_EMPTY_PATH)). A path given to newfstatat could tell whether a
	 * file exists (outside a chroot), no more: it opens nothing. */
	"fstat", "newfstatat",
	/* malloc and free (mremap: realloc of a large block, not seen);
	 * mmap and mprotect are allowed below, never executable. */
	"brk", "munmap", "mremap", "madvise",
	/* The secrets' pages, wiped and unlocked when the gateway stops
	 * (secret.c locked them at start). */
	"munlock",
	/* glibc's and OpenSSL's locks and once-only initialisations. */
	"futex",
	/* The clock: the vDSO answers, except where the machine's clock
	 * source has no vDSO support (a call then; not seen). */
	"clock_gettime", "clock_getres", "gettimeofday",
	/* OpenSSL's DRBG reseeding itself (hours apart: not seen). */
	"getrandom",
	/* Signals: libuv's handlers for SIGINT, SIGTERM, SIGUSR1 (and the
	 * return from them), the SIGHUP signalfd; restart_syscall: a call
	 * interrupted by one (not seen). */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "restart_syscall",
	/* The process's own pid (OpenSSL's fork check, glibc's raise), and
	 * its end. */
	"getpid", "gettid", "exit", "exit_group",
#ifdef SL_SANITIZERS
	/* Only the sanitizers' runtime: its alternate signal stack, set and
	 * unset around its reports and deadly signals (seen in the unit
	 * test's confined children). */
	"sigaltstack",
#endif
};

/* Opening a file, or making one, fails with EACCES: a library that probes
 * a file (OpenSSL's configuration, glibc's locale or time zone) gets an
 * error, never the file, and never a kill it did not expect. */
static const char *const refused_eacces[] = {
	"open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat",
	"access", "faccessat", "faccessat2", "stat", "lstat", "statx", "readlink",
	"readlinkat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "symlink",
	"symlinkat", "link", "linkat", "chmod", "fchmodat", "chown", "fchownat", "lchown",
	"truncate", "utimensat",
};

#ifdef SL_SANITIZERS
/* LeakSanitizer's check at exit needs /proc (the thread list, the maps),
 * a thread of its own and ptrace: none of which a confined process has
 * (nor one that failed half way). It asks this hook first; once
 * confinement has begun, the answer is "off", rather
 * than a check that fails and turns every clean exit into an error. The
 * leaks of the gateway's code are still looked for where it runs
 * unconfined: the unit tests. */
static bool leak_check_impossible;

int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return leak_check_impossible;
}

/* A sanitizer's report may start its symbolizer (pipes, a fork, an exec;
 * not seen: looking for llvm-symbolizer fails already, as opening does):
 * refused with an error in that build so that the report is still
 * printed, unsymbolized, and the process ends as the sanitizer's options
 * say. Without the sanitizers these calls kill. */
static const char *const refused_sanitizers[] = {
	"execve", "execveat", "clone", "clone3", "fork", "vfork", "pipe", "pipe2", "wait4",
};
#endif

static int add_name(scmp_filter_ctx ctx, uint32_t action, const char *name, char *err,
		    size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(name);
	int r;

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not a call of this architecture */
	r = seccomp_rule_add(ctx, action, nr, 0);
	if (r < 0 && r != -EEXIST)
		return sl_err(err, errlen, r, "seccomp: allowing %s: %s", name, strerror(-r));
	return 0;
}

/* Calls allowed with some arguments only. */
static int add_argument_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	pid_t self = getpid();
	int r = 0;

	/* Sockets of the Internet only, and the route socket below: no
	 * other netlink (nftables), no AF_UNIX to another daemon, no packet
	 * sockets. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				  SCMP_A0_32(SCMP_CMP_EQ, AF_INET));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				  SCMP_A0_32(SCMP_CMP_EQ, AF_INET6));
	/* gateway.c reads the host's addresses again (getifaddrs) when they
	 * change: a route socket, which without CAP_NET_ADMIN can only
	 * read. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
				  SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK),
				  SCMP_A2_32(SCMP_CMP_EQ, NETLINK_ROUTE));
	/* libuv's ioctl: non-blocking on a new socket (and how much is
	 * queued, which c-ares may ask; not seen). No other request on any
	 * fd. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				  SCMP_A1_32(SCMP_CMP_EQ, FIONBIO));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				  SCMP_A1_32(SCMP_CMP_EQ, FIONREAD));
#ifdef SL_SANITIZERS
	/* A sanitizer's report asks whether stderr is a terminal (colours)
	 * at every line. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				  SCMP_A1_32(SCMP_CMP_EQ, TCGETS));
#endif
	/* Memory for malloc and OpenSSL, never executable: code the
	 * gateway did not start with cannot be mapped in. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				  SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				  SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* Signals to this process only: abort() (an assertion, a sanitizer's
	 * report) raises SIGABRT with tgkill on itself and must still end
	 * the process visibly. */
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				  SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)self));
	r = r ?: seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
				  SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)self));
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: adding the argument rules: %s", strerror(-r));
	return 0;
}

static int load_filter(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int r;

	if (!ctx)
		return sl_err(err, errlen, -ENOMEM, "seccomp: out of memory");
	/* A call of another ABI (int 0x80 on x86_64) kills as well: the
	 * allowlist is for the native one. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* Every thread of the process, not only the caller. */
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0) {
		sl_err(err, errlen, r, "seccomp: setting the filter's attributes: %s", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < ELEMENTSOF(allowed) && r == 0; i++)
		r = add_name(ctx, SCMP_ACT_ALLOW, allowed[i], err, errlen);
	for (size_t i = 0; i < ELEMENTSOF(refused_eacces) && r == 0; i++)
		r = add_name(ctx, SCMP_ACT_ERRNO(EACCES), refused_eacces[i], err, errlen);
#ifdef SL_SANITIZERS
	for (size_t i = 0; i < ELEMENTSOF(refused_sanitizers) && r == 0; i++)
		r = add_name(ctx, SCMP_ACT_ERRNO(EPERM), refused_sanitizers[i], err, errlen);
#endif
	if (r == 0)
		r = add_argument_rules(ctx, err, errlen);
	if (r == 0) {
		r = seccomp_load(ctx);
		if (r < 0)
			sl_err(err, errlen, r, "seccomp: loading the filter: %s", strerror(-r));
	}
out:
	seccomp_release(ctx);
	return r;
}

static unsigned long last_cap(void)
{
	char buf[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	unsigned long v;

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "%lu", &v) != 1)
		return 63; /* dropping a capability the kernel lacks is harmless */
	return v;
}

/* The bounding and ambient sets, while CAP_SETPCAP may still be ours. A
 * process that never had it (sluice run by a user) has nothing to gain
 * from the bounding set: no_new_privs and the filter (no execve) mean no
 * file capability is ever applied. */
static int drop_capability_sets(unsigned long last, char *err, size_t errlen)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return sl_err(err, errlen, -errno, "clearing the ambient capabilities: %m");
	for (unsigned long cap = 0; cap <= last; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL)
			continue;
		if (errno == EPERM && geteuid() != 0)
			break;
		return sl_err(err, errlen, -errno,
			      "dropping capability %lu from the bounding set: %m", cap);
	}
	return 0;
}

/* Refused before anything changes: keeping root's ids, or becoming root. */
static int check_request(const struct sl_gw_confine *c, char *err, size_t errlen)
{
	uid_t ru, eu, su;

	if (getresuid(&ru, &eu, &su) < 0)
		return sl_err(err, errlen, -errno, "reading the process's ids: %m");
	if (c->uid == (uid_t)-1)
		return ru == 0 || eu == 0 || su == 0
			       ? sl_err(err, errlen, -EPERM,
					"refusing to serve as root: name a user to run as")
			       : 0;
	if (c->uid == 0 || c->gid == 0 || c->gid == (gid_t)-1)
		return sl_err(err, errlen, -EINVAL, "uid %u gid %d: not a user to serve as",
			      (unsigned)c->uid, (int)c->gid);
	return 0;
}

static int change_ids(const struct sl_gw_confine *c, char *err, size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (c->uid == (uid_t)-1)
		return 0;
	if (setgroups(0, NULL) < 0)
		return sl_err(err, errlen, -errno, "resetting the supplementary groups: %m");
	if (setresgid(c->gid, c->gid, c->gid) < 0)
		return sl_err(err, errlen, -errno, "setting gid %u: %m", (unsigned)c->gid);
	if (setresuid(c->uid, c->uid, c->uid) < 0)
		return sl_err(err, errlen, -errno, "setting uid %u: %m", (unsigned)c->uid);
	/* Verify rather than trust. */
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 ||
	    ru != c->uid || eu != c->uid || su != c->uid || rg != c->gid || eg != c->gid ||
	    sg != c->gid || getgroups(0, NULL) != 0)
		return sl_err(err, errlen, -EPERM, "the ids did not change to %u:%u",
			      (unsigned)c->uid, (unsigned)c->gid);
	return 0;
}

static int drop_capabilities(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	/* The uid change cleared the effective and permitted sets already
	 * (no SECBIT_KEEP_CAPS); the inheritable set it leaves. */
	if (syscall(SYS_capset, &hdr, data) < 0)
		return sl_err(err, errlen, -errno, "clearing the capabilities: %m");
	if (syscall(SYS_capget, &hdr, data) < 0)
		return sl_err(err, errlen, -errno, "reading the capabilities: %m");
	if (data[0].effective || data[0].permitted || data[0].inheritable || data[1].effective ||
	    data[1].permitted || data[1].inheritable)
		return sl_err(err, errlen, -EPERM, "capabilities remain after dropping them");
	if (setuid(0) == 0 || setgid(0) == 0)
		return sl_err(err, errlen, -EPERM, "uid or gid 0 is still reachable");
	return 0;
}

int sl_gw_confine(const struct sl_gw_confine *c, char *err, size_t errlen)
{
	struct rlimit no_core = { 0, 0 };
	unsigned long last;
	int r = check_request(c, err, errlen);

	if (r < 0)
		return r;
	last = last_cap(); /* /proc, before the chroot takes it away */
#ifdef SL_SANITIZERS
	/* From the chroot on, even a confinement that fails half way has
	 * taken what the leak check needs. */
	leak_check_impossible = true;
#endif
	if (c->empty_dir && (chroot(c->empty_dir) < 0 || chdir("/") < 0))
		return sl_err(err, errlen, -errno, "chroot to %s: %m", c->empty_dir);
	r = drop_capability_sets(last, err, errlen);
	if (r == 0)
		r = change_ids(c, err, errlen);
	if (r == 0)
		r = drop_capabilities(err, errlen);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sl_err(err, errlen, -errno, "setting no_new_privs: %m");
	/* Not dumpable: no ptrace and no /proc/PID/mem for the same uid, no
	 * core file with the secrets in it. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return sl_err(err, errlen, -errno, "clearing the dumpable flag: %m");
	if (setrlimit(RLIMIT_CORE, &no_core) < 0)
		return sl_err(err, errlen, -errno, "setting RLIMIT_CORE to 0: %m");
	return load_filter(err, errlen);
}
