/* SPDX-License-Identifier: MIT */
/*
 * sluice probe: processes, the terminal, privileges and the kernel's
 * configuration. Can it see the host's processes, signal or trace one,
 * read another's environment (sluice's holds env secrets), type into the
 * operator's terminal, or change the fence itself?
 *
 * The nft and route attempts speak netlink directly, which elsewhere only
 * nftables/ and netns-helper/ do: here the probe is the attacker, and an
 * attacker does not use sluice's libraries. What it asks for is harmless
 * even where it is granted (a table and a TEST-NET route of its own, each
 * deleted at once); the default route and sluice's table are never touched.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "probe.h"

/* A field of /proc/self/status ("NSpid", "CapEff"), whitespace trimmed. */
static int status_field(const char *name, char *buf, size_t len)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/self/status", "re");
	size_t n = strlen(name);
	char line[512];

	if (!f)
		return -errno;
	for (int i = 0; i < 128 && fgets(line, sizeof(line), f); i++) {
		char *v;

		if (strncmp(line, name, n) || line[n] != ':')
			continue;
		v = line + n + 1;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = '\0';
		snprintf(buf, len, "%s", v);
		return 0;
	}
	return -ENOENT;
}

/* ---- namespaces ---- */

/* The initial namespaces have fixed inode numbers (linux/proc_ns.h): a
 * process whose /proc/self/ns/pid is this one shares the machine's. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu
#define PROC_CGROUP_INIT_INO 0xEFFFFFFBu

/* 1: the machine's own namespace, 0: another, negative errno: unknown. */
static int ns_is_initial(const char *ns, unsigned long init_ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &st) < 0)
		return -errno;
	return st.st_ino == init_ino;
}

/*
 * Its own pid namespace, with a /proc of that namespace. NSpid cannot tell:
 * /proc shows it relative to the namespace procfs was mounted in, so inside
 * a sandbox with its own /proc it has one level, as on the host.
 */
static void probe_pidns(struct sl_probe *p)
{
	_cleanup_(sl_probe_closedirp) DIR *d = opendir("/proc");
	char self[32] = "", comm[64] = "?";
	unsigned procs = 0;
	struct dirent *e;
	ssize_t n;
	int fd, init;

	init = ns_is_initial("pid", PROC_PID_INIT_INO);
	if (init < 0) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "pid-ns", "/proc/self/ns/pid", "%s",
				strerror(-init));
		return;
	}
	n = readlink("/proc/self", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	for (int i = 0; d && i < 65536 && (e = readdir(d)); i++)
		if (isdigit((unsigned char)e->d_name[0]))
			procs++;
	fd = open("/proc/1/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(fd);
	}
	if (init)
		sl_probe_report(p, SL_PROBE_ESCAPED, "pid-ns", "/proc",
				"the machine's pid namespace: %u processes visible, pid 1 is '%s'",
				procs, comm);
	else if (atoi(self) != getpid())
		sl_probe_report(p, SL_PROBE_ESCAPED, "pid-ns", "/proc",
				"/proc is another pid namespace's: it calls us %s, we are %d (%u "
				"processes visible)",
				self, (int)getpid(), procs);
	else
		sl_probe_report(p, SL_PROBE_BLOCKED, "pid-ns", "/proc",
				"its own (we are pid %d): %u processes visible, pid 1 is '%s'",
				(int)getpid(), procs, comm);
}

/* ---- another process: signal, trace, read ---- */

static void probe_kill(struct sl_probe *p, pid_t pid, const char *target)
{
	const char *note = "";

	if (kill(pid, 0) == 0) {
		sl_probe_report(p, SL_PROBE_ESCAPED, "kill", target,
				"signal 0 delivered: it could signal it");
		return;
	}
	if (errno == EPERM)
		note = " (visible, though not its to signal)";
	else if (errno == ESRCH)
		note = " (not visible here)";
	sl_probe_report(p, SL_PROBE_BLOCKED, "kill", target, "kill(%d, 0): %s%s", (int)pid,
			strerror(errno), note);
}

/* PTRACE_SEIZE does not stop the tracee, and the child that seizes exits at
 * once, which detaches: the process runs on, untouched. */
static void probe_ptrace(struct sl_probe *p, pid_t pid, const char *target)
{
	pid_t child = fork();
	int st = 0;

	if (child == 0) {
		/* The exit status carries the errno (each is below 256). */
		if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0)
			_exit(0);
		_exit(errno > 0 && errno < 256 ? errno : 255);
	}
	if (child < 0)
		sl_probe_report(p, SL_PROBE_SKIPPED, "ptrace", target, "fork: %s", strerror(errno));
	else if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st))
		sl_probe_report(p, SL_PROBE_SKIPPED, "ptrace", target,
				"the child that tries did not exit");
	else if (WEXITSTATUS(st) == 0)
		sl_probe_report(p, SL_PROBE_ESCAPED, "ptrace", target,
				"PTRACE_SEIZE attached: it could read and change its memory");
	else
		sl_probe_report(p, SL_PROBE_BLOCKED, "ptrace", target, "PTRACE_SEIZE: %s",
				strerror(WEXITSTATUS(st)));
}

/* Its environment is never printed: only whether it could be read. */
static void probe_environ(struct sl_probe *p, pid_t pid, const char *target)
{
	_cleanup_close_ int fd = -1;
	char path[64], buf[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	explicit_bzero(buf, sizeof(buf));
	if (n > 0)
		sl_probe_report(p, SL_PROBE_ESCAPED, "environ", target,
				"read %s: its secrets would be too", path);
	else if (n == 0)
		sl_probe_report(p, SL_PROBE_BLOCKED, "environ", target,
				"%s reads empty (another user's, or a zombie)", path);
	else
		sl_probe_report(p, SL_PROBE_BLOCKED, "environ", target, "%s: %s", path,
				strerror(errno));
}

static void probe_outside_pid(struct sl_probe *p)
{
	static const char *const kinds[] = { "kill", "ptrace", "environ" };
	char target[32];
	pid_t pid = p->outside_pid;

	if (!pid) {
		for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
			if (sl_probe_wanted(p, kinds[i]))
				sl_probe_report(p, SL_PROBE_SKIPPED, kinds[i], "-",
						"no --outside-pid PID (a process outside, e.g. "
						"the operator's shell)");
		return;
	}
	snprintf(target, sizeof(target), "pid %d", (int)pid);
	if (sl_probe_wanted(p, "kill"))
		probe_kill(p, pid, target);
	if (sl_probe_wanted(p, "ptrace"))
		probe_ptrace(p, pid, target);
	if (sl_probe_wanted(p, "environ"))
		probe_environ(p, pid, target);
}

/* ---- the terminal ---- */

/* The controlling terminal's name from /proc/self/stat (field 7). */
static void ctty_name(char *buf, size_t len)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/self/stat", "re");
	char line[1024], *s;
	unsigned tty_nr;

	snprintf(buf, len, "the controlling terminal");
	if (!f || !fgets(line, sizeof(line), f) || !(s = strrchr(line, ')')))
		return;
	if (sscanf(s + 1, " %*c %*d %*d %*d %u", &tty_nr) != 1)
		return;
	if (major(tty_nr) >= 136 && major(tty_nr) <= 143)
		snprintf(buf, len, "/dev/pts/%u", (major(tty_nr) - 136) * 256 + minor(tty_nr));
	else
		snprintf(buf, len, "tty %u:%u", major(tty_nr), minor(tty_nr));
}

/*
 * TIOCSTI pushes bytes into a terminal's input as if typed. The kernel
 * lets a process do it only to its controlling terminal (without
 * CAP_SYS_ADMIN), so the question is whose terminal that is. A pty of the
 * sandbox's own (sluice gives one when stdin is a terminal) is fine:
 * typing into it reaches only the sandbox. The operator's terminal is the
 * attack: a ^Z and a command land in their (possibly root) shell.
 *
 * The terminal is taken as the sandbox's own when the probe is in a pid
 * namespace of its own and the terminal's session is led by a process
 * visible there (tcgetsid() says 0 for a leader outside it). Otherwise it
 * tries: one NUL byte, flushed from the input at once (which also drops
 * the operator's type-ahead; a NUL is inert to shells and readline).
 */
/* One NUL byte pushed into the terminal's input and flushed from it at
 * once: 0 when the kernel took it, else a negative errno. */
static int inject(int fd)
{
	char c = 0;

	if (ioctl(fd, TIOCSTI, &c) < 0)
		return -errno;
	tcflush(fd, TCIFLUSH);
	return 0;
}

/* No controlling terminal. Without CAP_SYS_ADMIN the kernel refuses
 * TIOCSTI on any other, which a terminal among fds 0-2 shows. */
static void probe_tty_fds(struct sl_probe *p, int ctty_errno)
{
	unsigned ttys = 0;

	for (int i = 0; i < 3; i++) {
		char target[32];
		int r;

		if (!isatty(i))
			continue;
		ttys++;
		snprintf(target, sizeof(target), "fd %d", i);
		r = inject(i);
		if (r == 0)
			sl_probe_report(p, SL_PROBE_ESCAPED, "tty", target,
					"TIOCSTI injected a byte (flushed at once) into a terminal "
					"that is not even its controlling one");
		else
			sl_probe_report(p, SL_PROBE_BLOCKED, "tty", target,
					"no controlling terminal; TIOCSTI: %s", strerror(-r));
	}
	if (!ttys)
		sl_probe_report(p, SL_PROBE_BLOCKED, "tty", "/dev/tty",
				"no controlling terminal (%s), and fds 0-2 are not terminals",
				strerror(ctty_errno));
}

static void probe_tty(struct sl_probe *p)
{
	_cleanup_close_ int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	char name[64];
	bool nested;
	pid_t tsid;
	int r;

	if (fd < 0) {
		probe_tty_fds(p, errno);
		return;
	}
	ctty_name(name, sizeof(name));
	nested = ns_is_initial("pid", PROC_PID_INIT_INO) == 0;
	tsid = tcgetsid(fd);
	if (nested && tsid > 0 && tsid == getsid(0)) {
		sl_probe_report(p, SL_PROBE_BLOCKED, "tty", name,
				"the sandbox's own terminal (its session %d is led inside its pid "
				"namespace): typing into it reaches only the sandbox",
				(int)tsid);
		return;
	}
	r = inject(fd);
	if (r < 0)
		sl_probe_report(p, SL_PROBE_BLOCKED, "tty", name, "TIOCSTI: %s%s; the terminal is %s",
				strerror(-r), r == -EIO ? " (dev.tty.legacy_tiocsti=0)" : "",
				tsid > 0 ? "not a sandbox's own" : "a session's outside");
	else
		sl_probe_report(p, SL_PROBE_ESCAPED, "tty", name,
				"TIOCSTI injected a byte (flushed at once) into a terminal %s "
				"(session %d): it could type commands into the operator's shell",
				tsid > 0 ? "that is not a sandbox's own" : "of a session outside",
				(int)tsid);
}

void sl_probe_procs(struct sl_probe *p)
{
	if (sl_probe_wanted(p, "pid-ns"))
		probe_pidns(p);
	if (sl_probe_wanted(p, "kill") || sl_probe_wanted(p, "ptrace") ||
	    sl_probe_wanted(p, "environ"))
		probe_outside_pid(p);
	if (sl_probe_wanted(p, "tty"))
		probe_tty(p);
}

/* ---- privileges ---- */

static void probe_privs(struct sl_probe *p)
{
	char uid[128] = "?", eff[32] = "?", prm[32] = "?", amb[32] = "?", bnd[32] = "?",
	     nnp[8] = "?";
	unsigned r, e, s, fs;

	status_field("Uid", uid, sizeof(uid));
	status_field("CapEff", eff, sizeof(eff));
	status_field("CapPrm", prm, sizeof(prm));
	status_field("CapAmb", amb, sizeof(amb));
	status_field("CapBnd", bnd, sizeof(bnd));
	status_field("NoNewPrivs", nnp, sizeof(nnp));

	if (sl_probe_wanted(p, "privs")) {
		bool zero = strtoull(eff, NULL, 16) == 0 && strtoull(prm, NULL, 16) == 0 &&
			    strtoull(amb, NULL, 16) == 0 && strcmp(eff, "?");
		bool root = sscanf(uid, "%u %u %u %u", &r, &e, &s, &fs) != 4 || !r || !e || !s || !fs;

		if (zero && !root)
			sl_probe_report(p, SL_PROBE_BLOCKED, "privs", "/proc/self/status",
					"uid %u, no capabilities (CapBnd %s)", r, bnd);
		else
			sl_probe_report(p, SL_PROBE_ESCAPED, "privs", "/proc/self/status",
					"Uid %s, CapEff %s, CapPrm %s, CapAmb %s", uid, eff, prm,
					amb);
	}
	if (sl_probe_wanted(p, "setuid")) {
		if (!strcmp(nnp, "1"))
			sl_probe_report(p, SL_PROBE_BLOCKED, "setuid", "no_new_privs",
					"set: setuid binaries and file capabilities grant nothing");
		else
			sl_probe_report(p, SL_PROBE_ESCAPED, "setuid", "no_new_privs",
					"%s: a setuid-root binary (su, sudo, mount) would run as root",
					!strcmp(nnp, "0") ? "off" : "unknown");
	}
}

/* ---- netlink: the fence itself ---- */

/* Send what `buf` holds and read the answer: 0 when the kernel
 * acknowledged it, else a negative errno. */
static int nl_talk(int bus, const void *buf, size_t len, int timeout_ms)
{
	struct mnl_socket *nl = mnl_socket_open2(bus, SOCK_CLOEXEC);
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	char rbuf[8192];
	int r = -ETIMEDOUT;

	if (!nl)
		return -errno;
	setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 || mnl_socket_sendto(nl, buf, len) < 0) {
		r = -errno;
		goto out;
	}
	/* One answer: the ACK of the message that asked for one, or the
	 * error that refused the batch (EPERM comes for its first message).
	 * Sequence and port checks are off: only our answers come here. */
	ssize_t n = mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf));

	if (n < 0)
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
	else if (mnl_cb_run(rbuf, (size_t)n, 0, 0, NULL, NULL) < 0)
		r = -errno;
	else
		r = 0;
out:
	mnl_socket_close(nl);
	return r;
}

static void nfnl_batch_marker(struct mnl_nlmsg_batch *b, uint16_t type, uint32_t seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(NFNL_SUBSYS_NFTABLES);
	mnl_nlmsg_batch_next(b);
}

static int nft_table(uint16_t msg, const char *name, int timeout_ms)
{
	char buf[1024];
	struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, sizeof(buf));
	uint32_t seq = (uint32_t)time(NULL);
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	int r;

	if (!b)
		return -ENOMEM;
	nfnl_batch_marker(b, NFNL_MSG_BATCH_BEGIN, seq++);
	nlh = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
	nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | msg;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (msg == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0);
	nlh->nlmsg_seq = seq++;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = NFPROTO_INET;
	nfg->version = NFNETLINK_V0;
	mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, name);
	mnl_nlmsg_batch_next(b);
	nfnl_batch_marker(b, NFNL_MSG_BATCH_END, seq++);
	r = nl_talk(NETLINK_NETFILTER, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b),
		    timeout_ms);
	mnl_nlmsg_batch_stop(b);
	return r;
}

static void probe_nft(struct sl_probe *p)
{
	int wait = sl_probe_wait_ms(p, p->timeout_ms), r;
	char name[64], what[96];

	snprintf(name, sizeof(name), "sluice-probe-%d", (int)getpid());
	snprintf(what, sizeof(what), "add table inet %s", name);
	if (wait <= 0) { /* SO_RCVTIMEO 0 would wait for ever */
		sl_probe_report(p, SL_PROBE_SKIPPED, "nft", what, "out of time");
		return;
	}
	r = nft_table(NFT_MSG_NEWTABLE, name, wait);
	if (r < 0) {
		sl_probe_report(p, SL_PROBE_BLOCKED, "nft", what, "%s", strerror(-r));
		return;
	}
	r = nft_table(NFT_MSG_DELTABLE, name, p->timeout_ms);
	sl_probe_report(p, SL_PROBE_ESCAPED, "nft", what,
			"added%s: it could rewrite the fence", r < 0 ? " (and could not delete it)"
								     : " (and deleted it)");
}

/* 198.51.100.123/32 dev lo: TEST-NET-2, a route nothing uses. */
static int route(uint16_t msg, int timeout_ms)
{
	char buf[512];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;
	struct in_addr dst;

	inet_pton(AF_INET, "198.51.100.123", &dst);
	nlh->nlmsg_type = msg;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			   (msg == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_EXCL : 0);
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 32;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, sizeof(dst), &dst);
	mnl_attr_put_u32(nlh, RTA_OIF, 1); /* lo */
	return nl_talk(NETLINK_ROUTE, nlh, nlh->nlmsg_len, timeout_ms);
}

static void probe_route(struct sl_probe *p)
{
	const char *what = "add 198.51.100.123/32 dev lo";
	int wait = sl_probe_wait_ms(p, p->timeout_ms), r;

	if (wait <= 0) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "route", what, "out of time");
		return;
	}
	r = route(RTM_NEWROUTE, wait);
	if (r == -EEXIST)
		sl_probe_report(p, SL_PROBE_ESCAPED, "route", what,
				"permitted (the route is there already): it could reroute");
	else if (r < 0)
		sl_probe_report(p, SL_PROBE_BLOCKED, "route", what, "%s", strerror(-r));
	else
		sl_probe_report(p, SL_PROBE_ESCAPED, "route", what, "added%s: it could reroute",
				route(RTM_DELROUTE, p->timeout_ms) < 0 ? " (and could not delete it)"
								       : " (and deleted it)");
}

/* ---- files of the kernel: opened for writing, never written ---- */

static void try_open_write(struct sl_probe *p, const char *kind, const char *path,
			   const char *why)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		sl_probe_report(p, errno == ENOENT ? SL_PROBE_SKIPPED : SL_PROBE_BLOCKED, kind, path,
				"open for writing: %s", strerror(errno));
		return;
	}
	close(fd);
	sl_probe_report(p, SL_PROBE_ESCAPED, kind, path, "opened for writing (nothing written): %s",
			why);
}

static bool cgroupfs_mounted(void)
{
	static const char *const roots[] = {
		"/sys/fs/cgroup/cgroup.procs",
		"/sys/fs/cgroup/unified/cgroup.procs",
		"/sys/fs/cgroup/pids/cgroup.procs",
		"/sys/fs/cgroup/memory/cgroup.procs",
	};
	struct stat st;

	for (size_t i = 0; i < ELEMENTSOF(roots); i++)
		if (stat(roots[i], &st) == 0)
			return true;
	return false;
}

/* The cgroup.procs of the group above ours: writing a pid there moves it
 * out of the sandbox's group, and out of its limits. */
static void probe_cgroup(struct sl_probe *p)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/self/cgroup", "re");
	char line[512], path[PATH_MAX + 64];

	for (int i = 0; f && i < 32 && fgets(line, sizeof(line), f); i++) {
		char *ctrl = strchr(line, ':'), *rel, *slash;
		const char *base;
		struct stat st;

		if (!ctrl || !(rel = strchr(ctrl + 1, ':')))
			continue;
		*rel++ = '\0';
		ctrl++;
		rel[strcspn(rel, "\n")] = '\0';
		if (strncmp(ctrl, "name=", 5) == 0)
			continue;
		/* v2 is at /sys/fs/cgroup, or /sys/fs/cgroup/unified on a
		 * hybrid system; v1 controllers each have their own. */
		if (!*ctrl)
			base = stat("/sys/fs/cgroup/cgroup.procs", &st) == 0 ? "/sys/fs/cgroup"
									     : "/sys/fs/cgroup/unified";
		else if (strcmp(ctrl, "pids") && strcmp(ctrl, "memory"))
			continue;
		else
			base = NULL;
		slash = strrchr(rel, '/');
		if (!slash || !strcmp(rel, "/"))
			continue; /* the root of what it sees: nothing above */
		*slash = '\0';
		if (base)
			snprintf(path, sizeof(path), "%s%s/cgroup.procs", base, rel);
		else
			snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%s/cgroup.procs", ctrl, rel);
		if (stat(path, &st) < 0)
			continue;
		try_open_write(p, "cgroup", path, "it could leave its cgroup and its limits");
		return;
	}
	if (!cgroupfs_mounted())
		sl_probe_report(p, SL_PROBE_BLOCKED, "cgroup", "/sys/fs/cgroup",
				"no cgroup filesystem here: nothing to write to");
	else if (ns_is_initial("cgroup", PROC_CGROUP_INIT_INO) == 0)
		sl_probe_report(p, SL_PROBE_BLOCKED, "cgroup", "/proc/self/cgroup",
				"the root of a cgroup namespace of its own: no group above it "
				"to move to");
	else
		sl_probe_report(p, SL_PROBE_SKIPPED, "cgroup", "/proc/self/cgroup",
				"no group above its own is visible");
}

void sl_probe_kernel(struct sl_probe *p)
{
	if (sl_probe_wanted(p, "privs") || sl_probe_wanted(p, "setuid"))
		probe_privs(p);
	if (sl_probe_wanted(p, "nft"))
		probe_nft(p);
	if (sl_probe_wanted(p, "route"))
		probe_route(p);
	if (sl_probe_wanted(p, "sysctl"))
		try_open_write(p, "sysctl", "/proc/sys/net/ipv4/ip_forward",
			       "it could change how the kernel routes");
	if (sl_probe_wanted(p, "cgroup"))
		probe_cgroup(p);
}
