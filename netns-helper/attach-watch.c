/* SPDX-License-Identifier: MIT */
/*
 * Watching a namespace `sluice attach` does not own (attach-watch.h): who
 * could undo the fence, which links it has, and whether anything but
 * sluice still holds it. Everything about processes comes from /proc, one
 * bounded pass per call; the links from rtnetlink sockets opened inside.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "attach-watch.h"
#include "nl.h"
#include "util.h"

/* Reads of link notifications per call: what is left stays readable. */
#define WATCH_READS 64

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_closedir_ _cleanup_(closedirp)

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A numeric /proc entry's pid, or 0. */
static pid_t proc_pid(const struct dirent *de)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)de->d_name[0]))
		return 0;
	v = strtol(de->d_name, &end, 10);
	return *end || v <= 0 ? 0 : (pid_t)v;
}

static void proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Is `ns` the network namespace of /proc/PID (or of one of its tasks)? */
static bool ns_is(const char *path, const struct stat *ns)
{
	struct stat st;

	return stat(path, &st) == 0 && same_file(&st, ns);
}

/* The capabilities a fenced container may not hold, and what each would
 * let it do to the fence. Docker and Podman give none of them by default. */
static const struct {
	unsigned bit;
	const char *name, *what, *drop;
} fence_breakers[] = {
    {12, "CAP_NET_ADMIN", "delete sluice's rules and add a route around the gateway", "net_admin"},
    {21, "CAP_SYS_ADMIN",
     "join another network namespace (setns), or leave the container (mounts, a cgroup "
     "release_agent), and the fence with it",
     "sys_admin"},
    {16, "CAP_SYS_MODULE", "load a kernel module, which can do anything", "sys_module"},
    {19, "CAP_SYS_PTRACE",
     "take over a process it can see outside the namespace (with the host's pids: docker "
     "--pid=host) and send from there",
     "sys_ptrace"},
};

/* Which of the capability sets of `pid` hold one of fence_breakers (its
 * index in *ret_cap): NULL if none. The bounding set counts when the
 * process may still gain privileges (no no_new_privs): an exec of a
 * set-user-ID-root program (sudo; `docker run --cap-add NET_ADMIN --user
 * 1000` leaves one in the bounding set alone), or of anything as root,
 * gives every bounding capability back. With no_new_privs nothing can be
 * regained, as under bubblewrap (whose --cap-drop leaves the bounding set
 * and sets no_new_privs). */
static const char *fence_breaker_set(pid_t pid, size_t *ret_cap)
{
	static const char bounding[] = "bounding set, and no no_new_privs: a set-user-ID "
				       "program such as sudo gives it back";
	static const char *const keys[] = {"CapEff:", "CapPrm:", "CapAmb:", "CapBnd:"};
	static const char *const names[] = {"effective set", "permitted set", "ambient set",
					    bounding};
	uint64_t caps[ELEMENTSOF(keys)] = {0};
	bool nnp = false;
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NoNewPrivs:", 11))
			nnp = strtoul(line + 11, NULL, 10) != 0;
		for (size_t i = 0; i < ELEMENTSOF(keys); i++)
			if (!strncmp(line, keys[i], strlen(keys[i])))
				caps[i] = strtoull(line + strlen(keys[i]), NULL, 16);
	}
	fclose(f);
	for (size_t i = 0; i < ELEMENTSOF(keys) - (nnp ? 1 : 0); i++)
		for (size_t c = 0; c < ELEMENTSOF(fence_breakers); c++)
			if (caps[i] & (1ull << fence_breakers[c].bit)) {
				*ret_cap = c;
				return names[i];
			}
	return NULL;
}

int sl_netns_check_fenceable(int ns_fd, pid_t pid, char *err, size_t errlen)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_close_ int owner = -1;
	struct stat ns, ours, o;
	struct dirent *de;

	if (fstat(ns_fd, &ns) < 0 || stat("/proc/self/ns/user", &ours) < 0)
		return sl_err(err, errlen, negative_errno(), "the namespace: %m");
	/* Root of a user namespace holds every capability over the network
	 * namespaces it owns: it could delete our table and route around
	 * the gateway, and nothing we install can stop it. */
	owner = ioctl(ns_fd, NS_GET_USERNS);
	if (owner < 0)
		return sl_err(err, errlen, negative_errno(),
			      "asking which user namespace owns it: %m");
	if (fstat(owner, &o) < 0)
		return sl_err(err, errlen, negative_errno(), "its user namespace: %m");
	if (!same_file(&o, &ours))
		return sl_err(err, errlen, -EPERM,
			      "it belongs to a user namespace other than sluice's (a rootless "
			      "container: Podman, LXC?), whose root holds CAP_NET_ADMIN over it "
			      "and could delete sluice's rules and add a route; attach only to "
			      "rootful containers, or run the agent with `sluice run`");

	d = opendir("/proc");
	if (!d)
		return sl_err(err, errlen, negative_errno(), "reading /proc: %m");
	while ((de = readdir(d))) {
		pid_t p = proc_pid(de);
		char path[64], comm[32];
		const char *set;
		size_t cap = 0;

		if (!p || p == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)p);
		if (!ns_is(path, &ns))
			continue;
		/* Capabilities count in the process's own user namespace:
		 * one nested below ours has none over a namespace ours owns. */
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)p);
		if (!ns_is(path, &ours))
			continue;
		set = fence_breaker_set(p, &cap);
		if (!set)
			continue;
		proc_comm(p, comm, sizeof(comm));
		return sl_err(err, errlen, -EPERM,
			      "%s %d (%s) in it has %s (in its %s), so it could %s; start the "
			      "container without it (docker/podman: no --privileged, no --cap-add "
			      "%s, or --security-opt no-new-privileges; else drop it: capsh "
			      "--drop=cap_%s, setpriv --bounding-set -%s --inh-caps -%s)",
			      p == pid ? "the target process" : "process", (int)p, comm,
			      fence_breakers[cap].name, set, fence_breakers[cap].what,
			      fence_breakers[cap].name + 4, fence_breakers[cap].drop,
			      fence_breakers[cap].drop, fence_breakers[cap].drop);
	}
	return 0;
}

/* ---- Holders ---- */

static int held_by_process(const struct stat *ns, bool threads, char *what, size_t whatlen)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		pid_t p = proc_pid(de);
		char path[96], comm[32];

		if (!p || p == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)p);
		if (!threads && ns_is(path, ns))
			goto found;
		if (threads) {
			_cleanup_closedir_ DIR *t = NULL;
			struct dirent *te;

			snprintf(path, sizeof(path), "/proc/%d/task", (int)p);
			t = opendir(path);
			while (t && (te = readdir(t))) {
				pid_t tid = proc_pid(te);

				if (!tid || tid == p)
					continue;
				snprintf(path, sizeof(path), "/proc/%d/task/%d/ns/net", (int)p,
					 (int)tid);
				if (ns_is(path, ns))
					goto found;
			}
		}
		continue;
found:
		proc_comm(p, comm, sizeof(comm));
		snprintf(what, whatlen, "process %d (%s)", (int)p, comm);
		return 1;
	}
	return 0;
}

/* An nsfs bind mount of it in the mount namespace of process p. Each mount
 * namespace is read once (`seen` holds their inodes). */
static int held_by_mount(const struct stat *ns, pid_t p, ino_t **seen, size_t *n_seen,
			 char *what, size_t whatlen)
{
	char path[64], line[4096], want[64];
	struct stat mnt;
	ino_t *v;
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)p);
	if (stat(path, &mnt) < 0)
		return 0;
	for (size_t i = 0; i < *n_seen; i++)
		if ((*seen)[i] == mnt.st_ino)
			return 0;
	v = reallocarray(*seen, *n_seen + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*seen = v;
	v[(*n_seen)++] = mnt.st_ino;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)p);
	f = fopen(path, "re");
	if (!f)
		return 0;
	snprintf(want, sizeof(want), "net:[%llu]", (unsigned long long)ns->st_ino);
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE OPTS":
	 * a bind mount of a namespace file has ROOT "net:[INODE]", nsfs. */
	while (!found && fgets(line, sizeof(line), f)) {
		char root[128], point[1024];
		const char *dash = strstr(line, " - ");

		if (!dash || strncmp(dash, " - nsfs ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %127s %1023s", root, point) != 2)
			continue;
		if (!strcmp(root, want)) {
			snprintf(what, whatlen, "a mount at %s", point);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

static int held_by_fd(const struct stat *ns, pid_t p, char *what, size_t whatlen)
{
	static const char *const never[] = {"socket:[", "pipe:[", "anon_inode:"};
	_cleanup_closedir_ DIR *d = NULL;
	char path[320], link[64], comm[32];
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)p);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct stat st;
		bool skip = false;
		ssize_t n;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)p, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		for (size_t i = 0; i < ELEMENTSOF(never); i++)
			skip = skip || !strncmp(link, never[i], strlen(never[i]));
		/* The link's text is "net:[INODE]" for /proc/PID/ns/net opened,
		 * but the path it was opened by for a bind mount of it (even
		 * one unmounted since): compare the file itself. */
		if (skip || stat(path, &st) < 0 || !same_file(&st, ns))
			continue;
		proc_comm(p, comm, sizeof(comm));
		snprintf(what, whatlen, "fd %s of process %d (%s)", de->d_name, (int)p, comm);
		return 1;
	}
	return 0;
}

int sl_netns_in_use(int ns_fd, char *what, size_t whatlen)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ ino_t *seen = NULL;
	size_t n_seen = 0;
	struct stat ns;
	struct dirent *de;
	int r;

	if (fstat(ns_fd, &ns) < 0)
		return negative_errno();
	/* Cheapest first: while the container runs, its first process is
	 * found within one readdir of /proc. */
	r = held_by_process(&ns, false, what, whatlen);
	if (r != 0)
		return r;
	r = held_by_process(&ns, true, what, whatlen);
	if (r != 0)
		return r;
	/* Mounts of our own mount namespace count too (`ip netns add`). */
	r = held_by_mount(&ns, getpid(), &seen, &n_seen, what, whatlen);
	if (r != 0)
		return r;
	d = opendir("/proc");
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		pid_t p = proc_pid(de);

		if (!p)
			continue;
		r = held_by_mount(&ns, p, &seen, &n_seen, what, whatlen);
		if (r == 0 && p != getpid())
			r = held_by_fd(&ns, p, what, whatlen);
		if (r != 0)
			return r;
	}
	return 0;
}

/* ---- Links ---- */

struct sl_netns_link_watch {
	struct mnl_socket *mon; /* RTMGRP_LINK, non-blocking */
	struct sl_nl *nl;       /* dumps */
	char self[IFNAMSIZ];    /* sluice's end, not listed */
};

void sl_netns_link_watch_free(struct sl_netns_link_watch *w)
{
	if (!w)
		return;
	if (w->mon)
		mnl_socket_close(w->mon);
	sl_nl_close(w->nl);
	free(w);
}

struct watch_open {
	struct sl_netns_link_watch *w;
	char *err;
	size_t errlen;
};

static int watch_open_inside(void *userdata)
{
	struct watch_open *o = userdata;

	o->w->mon = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!o->w->mon)
		return sl_err(o->err, o->errlen, negative_errno(),
			      "watching the namespace's links: %m");
	if (mnl_socket_bind(o->w->mon, RTMGRP_LINK, MNL_SOCKET_AUTOPID) < 0)
		return sl_err(o->err, o->errlen, negative_errno(),
			      "watching the namespace's links: %m");
	return sl_nl_open(&o->w->nl, o->err, o->errlen);
}

int sl_netns_link_watch_open(const struct sl_netns_sandbox *sb, struct sl_netns_link_watch **ret,
			     char *err, size_t errlen)
{
	struct watch_open o = {.err = err, .errlen = errlen};
	int r;

	o.w = calloc(1, sizeof(*o.w));
	if (!o.w)
		return -ENOMEM;
	/* The peer in an attached namespace has the host end's name. */
	snprintf(o.w->self, sizeof(o.w->self), "%s", sl_netns_sandbox_host_ifname(sb));
	r = sl_netns_sandbox_run_inside(sb, watch_open_inside, &o);
	if (r < 0) {
		sl_netns_link_watch_free(o.w);
		return r;
	}
	*ret = o.w;
	return 0;
}

int sl_netns_link_watch_fd(const struct sl_netns_link_watch *w)
{
	return mnl_socket_get_fd(w->mon);
}

int sl_netns_link_watch_read(struct sl_netns_link_watch *w)
{
	_cleanup_free_ char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
	int changed = 0;

	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < WATCH_READS; i++) {
		const struct nlmsghdr *nlh;
		ssize_t n = mnl_socket_recvfrom(w->mon, buf, MNL_SOCKET_BUFFER_SIZE);
		int len;

		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0 && errno == ENOBUFS) {
			changed = 1; /* lost some: look at everything again */
			continue;
		}
		if (n < 0)
			return negative_errno();
		len = (int)n;
		for (nlh = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, len);
		     nlh = mnl_nlmsg_next(nlh, &len))
			if (nlh->nlmsg_type == RTM_NEWLINK)
				changed = 1;
	}
	return changed;
}

struct link_list {
	char (*names)[IFNAMSIZ];
	size_t max, n;
	const char *self;
	bool too_many;
};

static int link_attr_cb(const struct nlattr *a, void *data)
{
	const char **name = data;

	if (mnl_attr_get_type(a) == IFLA_IFNAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		*name = mnl_attr_get_str(a);
	return MNL_CB_OK;
}

static int link_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_list *l = data;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	const char *name = NULL;

	if (nlh->nlmsg_type != RTM_NEWLINK || ifi->ifi_index == 1) /* lo */
		return MNL_CB_OK;
	(void)mnl_attr_parse(nlh, sizeof(*ifi), link_attr_cb, &name);
	if (!name || !strcmp(name, l->self) || strlen(name) >= IFNAMSIZ)
		return MNL_CB_OK;
	if (l->n == l->max) {
		l->too_many = true;
		return MNL_CB_OK;
	}
	snprintf(l->names[l->n++], IFNAMSIZ, "%s", name);
	return MNL_CB_OK;
}

int sl_netns_link_watch_list(struct sl_netns_link_watch *w, char names[][IFNAMSIZ], size_t max,
			     size_t *ret_n, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(w->nl, RTM_GETLINK, NLM_F_DUMP);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	struct link_list l = {.names = names, .max = max, .self = w->self};
	int r;

	ifi->ifi_family = AF_UNSPEC;
	r = sl_nl_call(w->nl, nlh, link_dump_cb, &l, "listing the namespace's links", err, errlen);
	if (r < 0)
		return r;
	if (l.too_many)
		return sl_err(err, errlen, -E2BIG, "the namespace has more than %zu links", max);
	*ret_n = l.n;
	return 0;
}
