/* SPDX-License-Identifier: MIT */
/*
 * The command's cgroups: "sluice-<pid>" groups created beneath the groups
 * sluice itself runs in. There is always one that tracks every process the
 * command forks, so that all of them end with it (nothing can outlive
 * `sluice run`, or wait for it to exit): in the unified hierarchy (v2)
 * whenever it is mounted, even on a hybrid machine whose controllers are
 * all v1, because cgroup.kill needs no controller; else in a v1 hierarchy
 * that every v1 machine has (freezer, which also lets us stop a fork bomb
 * before we kill it, then pids, then systemd's named one). Limits add a
 * group per controller where that controller lives: the same v2 group, or
 * one per v1 hierarchy. Only groups we created are written to, except that
 * on v2 a controller may have to be enabled in our own group's
 * cgroup.subtree_control (that is what delegating a subtree to us means).
 * The command cannot leave them: moving a process needs write access to
 * another group's cgroup.procs, which only root has.
 *
 * Limits (the seeds' systemd recipe): MemoryMax (and no swap), TasksMax,
 * CPUQuota with a 100 ms period.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "netns-internal.h"
#include "util.h"

/* The tracking group and one per limit. */
#define MAX_GROUPS 4
#define CPU_PERIOD_US 100000u
/* How long sl_netns_cgroup_kill() waits for the members to die: SIGKILL is
 * immediate, but a process inside a slow system call (NFS, a dying disk)
 * exits only when it returns. */
#define KILL_ROUNDS 500
#define KILL_TICK_NS (10 * 1000 * 1000)

struct group {
	char *dir;
	int procs_fd; /* cgroup.procs, opened before the fork */
	int dir_fd;   /* v2: the group's directory, for CLONE_INTO_CGROUP */
	bool v2;
	bool freezer; /* in the v1 freezer hierarchy */
};

struct sl_netns_cgroup {
	struct group g[MAX_GROUPS];
	size_t n;
};

enum ctl { CTL_MEMORY, CTL_PIDS, CTL_CPU, _CTL_MAX };
static const char *const ctl_names[_CTL_MAX] = {"memory", "pids", "cpu"};

/* Does the comma-separated list contain `name`? */
static bool list_has(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);
	const char *p = list, *end = list + len;

	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t l = c ? (size_t)(c - p) : (size_t)(end - p);

		if (l == n && !memcmp(p, name, n))
			return true;
		p += l + 1;
	}
	return false;
}

/* Our group for controller `name` from /proc/self/cgroup: the v1 line that
 * names it, or (name == NULL) the v2 line "0::PATH". */
static int own_path(const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int r = -ENOENT;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return negative_errno();
	while (getline(&line, &cap, f) > 0) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (name ? list_has(c1 + 1, (size_t)(c2 - c1 - 1), name)
			 : (c2 == c1 + 1 && !strncmp(line, "0:", 2))) {
			r = snprintf(buf, size, "%s", c2 + 1) < (int)size ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	fclose(f);
	return r;
}

/* Where the hierarchy for `name` (NULL: the v2 one) is mounted, from
 * /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - TYPE SRC OPTS". */
static int mount_point(const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int r = -ENOENT;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return negative_errno();
	while (getline(&line, &cap, f) > 0) {
		char root[256], mnt[256], type[32], opts[512];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %255s %255s", root, mnt) != 2 ||
		    sscanf(dash, " - %31s %*s %511s", type, opts) != 2)
			continue;
		/* A mount of a subtree (root != "/") would need the path
		 * rebased; cgroup namespaces make that rare, refuse it. */
		if (strcmp(root, "/"))
			continue;
		if (name ? (!strcmp(type, "cgroup") && list_has(opts, strlen(opts), name))
			 : !strcmp(type, "cgroup2")) {
			r = snprintf(buf, size, "%s", mnt) < (int)size ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	fclose(f);
	return r;
}

static bool v2_has(const char *dir, const char *name)
{
	char path[512], buf[512];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t;
	     t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, name))
			return true;
	return false;
}

/* The directory of our own group for controller c, and whether it is v2. */
static int locate(enum ctl c, char *dir, size_t size, bool *ret_v2, char *err, size_t errlen)
{
	char mnt[256], path[256];

	if (own_path(ctl_names[c], path, sizeof(path)) == 0 &&
	    mount_point(ctl_names[c], mnt, sizeof(mnt)) == 0) {
		*ret_v2 = false;
	} else if (own_path(NULL, path, sizeof(path)) == 0 &&
		   mount_point(NULL, mnt, sizeof(mnt)) == 0) {
		*ret_v2 = true;
	} else {
		return sl_err(err, errlen, -EOPNOTSUPP,
			      "cgroup: no hierarchy with the %s controller is mounted",
			      ctl_names[c]);
	}
	if (snprintf(dir, size, "%s%s", mnt, strcmp(path, "/") ? path : "") >= (int)size)
		return sl_err(err, errlen, -ENAMETOOLONG, "cgroup: path too long");
	if (*ret_v2 && !v2_has(dir, ctl_names[c]))
		return sl_err(err, errlen, -EOPNOTSUPP,
			      "cgroup: the %s controller is not available in %s", ctl_names[c],
			      dir);
	return 0;
}

/* Remove sluice-<pid> groups whose sluice is gone (it was SIGKILLed). Only
 * empty ones go: rmdir refuses a group that still has processes. */
static void remove_stale(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[512];
		uint64_t pid;

		if (strncmp(e->d_name, "sluice-", 7) ||
		    sl_netns_parse_uint(e->d_name + 7, 1, INT32_MAX, &pid) < 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", parent, e->d_name) < (int)sizeof(path))
			(void)rmdir(path);
	}
	closedir(d);
}

static int write_knob(const struct group *g, const char *knob, const char *v, bool may_be_missing,
		      char *err, size_t errlen)
{
	char path[512];
	int r;

	snprintf(path, sizeof(path), "%s/%s", g->dir, knob);
	r = sl_write_file(path, v);
	if (r == -ENOENT && may_be_missing)
		return 0;
	if (r < 0)
		return sl_err(err, errlen, r, "cgroup: writing %s to %s: %s", v, path,
			      strerror(-r));
	return 0;
}

/* The group "sluice-<pid>" beneath `parent`: the one we made already (the
 * hierarchy is shared: v2, or co-mounted v1 controllers), else a new one. */
static int add_group(struct sl_netns_cgroup *cg, const char *parent, bool v2, struct group **ret,
		     char *err, size_t errlen)
{
	char dir[512];
	struct group *g;
	int r;

	if (snprintf(dir, sizeof(dir), "%s/sluice-%d", parent, (int)getpid()) >=
	    (int)sizeof(dir) - 16)
		return sl_err(err, errlen, -ENAMETOOLONG, "cgroup: path too long");
	for (size_t i = 0; i < cg->n; i++)
		if (!strcmp(cg->g[i].dir, dir)) {
			*ret = &cg->g[i];
			return 0;
		}
	if (cg->n >= MAX_GROUPS)
		return sl_err(err, errlen, -E2BIG, "cgroup: too many hierarchies");
	remove_stale(parent);
	g = &cg->g[cg->n];
	*g = (struct group){.procs_fd = -1, .dir_fd = -1, .v2 = v2};
	g->dir = strdup(dir);
	if (!g->dir)
		return sl_err(err, errlen, -ENOMEM, "cgroup: out of memory");
	if (mkdir(dir, 0755) < 0) {
		r = sl_err(err, errlen, negative_errno(), "cgroup: creating %s: %m", dir);
		free(g->dir);
		return r;
	}
	cg->n++;
	if (v2) {
		g->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (g->dir_fd < 0)
			return sl_err(err, errlen, negative_errno(), "cgroup: opening %s: %m",
				      dir);
	}
	g->procs_fd = open(strcat(dir, "/cgroup.procs"), O_WRONLY | O_CLOEXEC);
	if (g->procs_fd < 0)
		return sl_err(err, errlen, negative_errno(), "cgroup: opening %s: %m", dir);
	*ret = g;
	return 0;
}

/* The group for controller c, with the controller enabled for it. */
static int group_for(struct sl_netns_cgroup *cg, enum ctl c, struct group **ret, char *err,
		     size_t errlen)
{
	char parent[400];
	struct group *g;
	bool v2 = false;
	int r;

	r = locate(c, parent, sizeof(parent), &v2, err, errlen);
	if (r < 0)
		return r;
	r = add_group(cg, parent, v2, &g, err, errlen);
	if (r < 0)
		return r;
	if (v2) {
		/* A v2 controller works in a child only when enabled in the
		 * parent's subtree_control; the kernel refuses that (EBUSY)
		 * while the parent, not the root, holds processes itself. */
		char path[512], v[16];

		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
		snprintf(v, sizeof(v), "+%s", ctl_names[c]);
		r = sl_write_file(path, v);
		if (r < 0)
			return sl_err(err, errlen, r,
				      "cgroup: enabling %s in %s: %s (run sluice in a delegated "
				      "cgroup, e.g. systemd-run --scope -p Delegate=yes)",
				      ctl_names[c], path, strerror(-r));
	}
	*ret = g;
	return 0;
}

/* The tracking group: in v2 if mounted, else the first v1 hierarchy of
 * these that is. */
static int add_tracker(struct sl_netns_cgroup *cg, char *err, size_t errlen)
{
	static const char *const v1[] = {"freezer", "pids", "name=systemd"};
	char mnt[256], path[256], parent[400];
	const char *name = NULL;
	struct group *g;
	bool v2 = false;
	int r;

	if (own_path(NULL, path, sizeof(path)) == 0 && mount_point(NULL, mnt, sizeof(mnt)) == 0) {
		v2 = true;
	} else {
		for (size_t i = 0; i < ELEMENTSOF(v1) && !name; i++)
			if (own_path(v1[i], path, sizeof(path)) == 0 &&
			    mount_point(v1[i], mnt, sizeof(mnt)) == 0)
				name = v1[i];
		if (!name)
			return sl_err(err, errlen, -EOPNOTSUPP,
				      "cgroup: no cgroup hierarchy is mounted (neither cgroup2 nor "
				      "a v1 freezer, pids or systemd one): cannot make sure every "
				      "process of the command ends with it");
	}
	if (snprintf(parent, sizeof(parent), "%s%s", mnt, strcmp(path, "/") ? path : "") >=
	    (int)sizeof(parent))
		return sl_err(err, errlen, -ENAMETOOLONG, "cgroup: path too long");
	r = add_group(cg, parent, v2, &g, err, errlen);
	if (r < 0)
		return r;
	if (name && !strcmp(name, "freezer"))
		g->freezer = true;
	return 0;
}

static int set_limit(struct sl_netns_cgroup *cg, enum ctl c, const struct sl_netns_limits *l,
		     char *err, size_t errlen)
{
	struct group *g;
	char v[64];
	int r;

	r = group_for(cg, c, &g, err, errlen);
	if (r < 0)
		return r;
	switch (c) {
	case CTL_MEMORY:
		snprintf(v, sizeof(v), "%" PRIu64, l->memory_bytes);
		if (g->v2) {
			r = write_knob(g, "memory.max", v, false, err, errlen);
			/* Without this the hog swaps instead of being killed. */
			return r < 0 ? r : write_knob(g, "memory.swap.max", "0", true, err, errlen);
		}
		r = write_knob(g, "memory.limit_in_bytes", v, false, err, errlen);
		return r < 0 ? r
			     : write_knob(g, "memory.memsw.limit_in_bytes", v, true, err, errlen);
	case CTL_PIDS:
		snprintf(v, sizeof(v), "%" PRIu64, l->pids);
		return write_knob(g, "pids.max", v, false, err, errlen);
	case CTL_CPU:
		if (g->v2) {
			snprintf(v, sizeof(v), "%u %u", l->cpu_percent * (CPU_PERIOD_US / 100),
				 CPU_PERIOD_US);
			return write_knob(g, "cpu.max", v, false, err, errlen);
		}
		snprintf(v, sizeof(v), "%u", CPU_PERIOD_US);
		r = write_knob(g, "cpu.cfs_period_us", v, false, err, errlen);
		snprintf(v, sizeof(v), "%u", l->cpu_percent * (CPU_PERIOD_US / 100));
		return r < 0 ? r : write_knob(g, "cpu.cfs_quota_us", v, false, err, errlen);
	case _CTL_MAX:
		break;
	}
	return -EINVAL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_netns_cgroup *, sl_netns_cgroup_free)

int sl_netns_cgroup_new(const struct sl_netns_limits *limits, struct sl_netns_cgroup **ret,
			char *err, size_t errlen)
{
	_cleanup_(sl_netns_cgroup_freep) struct sl_netns_cgroup *cg = NULL;
	int r;

	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return sl_err(err, errlen, -ENOMEM, "cgroup: out of memory");
	r = add_tracker(cg, err, errlen);
	if (r < 0)
		return r;
	if (limits->memory_bytes && (r = set_limit(cg, CTL_MEMORY, limits, err, errlen)) < 0)
		return r;
	if (limits->pids && (r = set_limit(cg, CTL_PIDS, limits, err, errlen)) < 0)
		return r;
	if (limits->cpu_percent && (r = set_limit(cg, CTL_CPU, limits, err, errlen)) < 0)
		return r;
	*ret = TAKE_PTR(cg);
	return 0;
}

int sl_netns_cgroup_v2_fd(const struct sl_netns_cgroup *cg)
{
	for (size_t i = 0; cg && i < cg->n; i++)
		if (cg->g[i].v2)
			return cg->g[i].dir_fd;
	return -1;
}

int sl_netns_cgroup_join(const struct sl_netns_cgroup *cg, bool born_in_v2, char *err,
			 size_t errlen)
{
	for (size_t i = 0; cg && i < cg->n; i++)
		/* "0" is the writer itself, in v1 and v2 alike. */
		if (!(born_in_v2 && cg->g[i].v2) && write(cg->g[i].procs_fd, "0", 1) != 1)
			return sl_err(err, errlen, negative_errno(), "joining cgroup %s: %m",
				      cg->g[i].dir);
	return 0;
}

/* Is the group empty (or gone)? Read from cgroup.procs, which v1 and v2
 * both have and which lists no zombie. */
static bool group_empty(const struct group *g)
{
	char path[512], c;
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/cgroup.procs", g->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 || read(fd, &c, 1) <= 0;
}

/* SIGKILL every process cgroup.procs lists. */
static void kill_listed(const struct group *g)
{
	char path[512];
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", g->dir);
	f = fopen(path, "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		uint64_t pid;

		line[strcspn(line, "\n")] = '\0';
		if (sl_netns_parse_uint(line, 1, INT32_MAX, &pid) == 0)
			(void)kill((pid_t)pid, SIGKILL);
	}
	fclose(f);
}

/* Wait (a little) until reading `knob` gives a line starting with `want`:
 * a freeze takes effect asynchronously. */
static void wait_for(const struct group *g, const char *knob, const char *want)
{
	const struct timespec tick = {.tv_nsec = 1000 * 1000};
	char path[512], buf[256];

	snprintf(path, sizeof(path), "%s/%s", g->dir, knob);
	for (int tries = 0; tries < 50; tries++) {
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			return;
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			return;
		buf[n] = '\0';
		if (strstr(buf, want))
			return;
		nanosleep(&tick, NULL);
	}
}

static void write_knob_quiet(const struct group *g, const char *knob, const char *v)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", g->dir, knob);
	(void)sl_write_file(path, v);
}

/* One round of killing. v2 (Linux >= 5.14) kills the whole group in one
 * write, forks racing with it included. Else the group is frozen first
 * where a freezer exists, so that nothing forks between reading the list
 * and the signals; a v1-frozen process dies of SIGKILL only once thawed. */
static void kill_group(const struct group *g)
{
	char path[512];

	if (g->v2) {
		snprintf(path, sizeof(path), "%s/cgroup.kill", g->dir);
		if (sl_write_file(path, "1") == 0)
			return;
		write_knob_quiet(g, "cgroup.freeze", "1"); /* Linux >= 5.2 */
		wait_for(g, "cgroup.events", "frozen 1");
		kill_listed(g);
		write_knob_quiet(g, "cgroup.freeze", "0");
		return;
	}
	if (g->freezer) {
		write_knob_quiet(g, "freezer.state", "FROZEN");
		wait_for(g, "freezer.state", "FROZEN");
		kill_listed(g);
		write_knob_quiet(g, "freezer.state", "THAWED");
		return;
	}
	kill_listed(g);
}

int sl_netns_cgroup_kill(const struct sl_netns_cgroup *cg)
{
	const struct timespec tick = {.tv_nsec = KILL_TICK_NS};

	for (int round = 0; cg && round < KILL_ROUNDS; round++) {
		bool any = false;

		/* Every process is in every group; each group is still
		 * checked, in case one join failed halfway. */
		for (size_t i = 0; i < cg->n; i++)
			if (!group_empty(&cg->g[i])) {
				any = true;
				kill_group(&cg->g[i]);
			}
		if (!any)
			return 0;
		nanosleep(&tick, NULL);
	}
	return cg ? -EBUSY : 0;
}

int sl_netns_cgroup_free(struct sl_netns_cgroup *cg)
{
	const struct timespec tick = {.tv_nsec = KILL_TICK_NS};
	bool removed = true, stuck = false;
	int ret;

	if (!cg)
		return 0;
	/* Whatever the command left behind goes with it. */
	ret = sl_netns_cgroup_kill(cg);
	for (size_t i = 0; i < cg->n; i++) {
		struct group *g = &cg->g[i];
		int r = -EBUSY;

		sl_closep(&g->procs_fd);
		sl_closep(&g->dir_fd);
		/* An exiting process may hold the group a moment longer
		 * than it shows in cgroup.procs. */
		for (int tries = 0; tries < 50; tries++) {
			r = rmdir(g->dir) == 0 ? 0 : negative_errno();
			if (r != -EBUSY)
				break;
			kill_group(g);
			nanosleep(&tick, NULL);
		}
		removed = removed && (r == 0 || r == -ENOENT);
		stuck = stuck || r == -EBUSY;
		free(g->dir);
	}
	free(cg);
	/* Empty when looked at last, or removed: nothing is left inside. */
	return !stuck && (ret == 0 || removed) ? 0 : -EBUSY;
}
