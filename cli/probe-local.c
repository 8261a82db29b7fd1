/* SPDX-License-Identifier: MIT */
/*
 * sluice probe: ways out that need no network at all. Sockets that bypass
 * the inet hooks (raw, AF_PACKET), the host's Unix sockets (a root shell
 * behind docker.sock, names resolved in the host's namespace behind
 * systemd-resolved and nscd, D-Bus), and the filesystem: writing where the
 * task was not given a --rw path, a /tmp shared with the host, reading the
 * host's secrets.
 *
 * Nothing here sends a byte to a service it reaches: a Unix socket is
 * connected and closed; a file is created with a name of its own and
 * removed at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "probe.h"

/* The scan of the host's sockets is bounded: a deep /tmp must not make
 * it slow. */
#define SCAN_MAX_DEPTH 4
#define SCAN_MAX_ENTRIES 8000
#define SCAN_MAX_SEEN 1024
#define MAX_ESCAPED_LINES 16
#define SCAN_MAX_MOUNTS 64

/* ---- sockets that bypass the fence ---- */

static void try_socket(struct sl_probe *p, const char *kind, const char *what, int family,
		       int type, int proto, const char *why)
{
	int fd = socket(family, type | SOCK_CLOEXEC, proto);

	if (fd >= 0) {
		close(fd);
		sl_probe_report(p, SL_PROBE_ESCAPED, kind, what, "opened: %s", why);
		return;
	}
	sl_probe_report(p, SL_PROBE_BLOCKED, kind, what, "socket: %s", strerror(errno));
}

/* ---- the host's Unix sockets ---- */

/* Well-known sockets of host services, named in the report when they
 * exist (the scan below finds the rest). */
static const char *const well_known[] = {
	"/run/dbus/system_bus_socket",
	"/var/run/dbus/system_bus_socket",
	"/run/systemd/private",
	"/run/systemd/notify",
	"/run/systemd/journal/socket",
	"/run/systemd/journal/stdout",
	"/dev/log",
	"/run/systemd/resolve/io.systemd.Resolve",
	"/run/systemd/userdb/io.systemd.Multiplexer",
	"/run/nscd/socket",
	"/var/run/nscd/socket",
	"/var/run/docker.sock",
	"/run/docker.sock",
	"/run/containerd/containerd.sock",
	"/run/podman/podman.sock",
	"/run/snapd.socket",
	"/tmp/.X11-unix/X0",
};

static const char *const scan_roots[] = { "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm" };

struct scan {
	struct sl_probe *p;
	unsigned found, connected, denied, refused, other, entries, escaped_lines;
	bool truncated;
	struct {
		dev_t dev;
		ino_t ino;
	} seen[SCAN_MAX_SEEN];
	size_t n_seen;
};

/* Connect as each socket type in turn (EPROTOTYPE says "not this one").
 * Returns the type that connected, or a negative errno. */
static int unix_connect(const char *path, socklen_t path_len)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int e = EPROTOTYPE;

	if (path_len > sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, path_len);
	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		_cleanup_close_ int fd = socket(AF_UNIX, types[i] | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		/* EAGAIN: a listener whose backlog is full, reachable all the
		 * same. */
		if (connect(fd, (struct sockaddr *)&sun,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len)) == 0 ||
		    errno == EAGAIN)
			return types[i];
		e = errno;
		if (e != EPROTOTYPE)
			return -e;
	}
	return -e;
}

static const char *type_name(int type)
{
	return type == SOCK_STREAM ? "stream" : type == SOCK_DGRAM ? "datagram" : "seqpacket";
}

static void scan_socket(struct scan *s, const char *path, bool named)
{
	struct stat st;
	int r;

	if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return;
	for (size_t i = 0; i < s->n_seen; i++)
		if (s->seen[i].dev == st.st_dev && s->seen[i].ino == st.st_ino)
			return;
	if (s->n_seen < SCAN_MAX_SEEN) {
		s->seen[s->n_seen].dev = st.st_dev;
		s->seen[s->n_seen++].ino = st.st_ino;
	}
	s->found++;
	r = unix_connect(path, (socklen_t)strlen(path) + 1);
	if (r >= 0) {
		s->connected++;
		if (s->escaped_lines++ < MAX_ESCAPED_LINES)
			sl_probe_report(s->p, SL_PROBE_ESCAPED, "unix", path,
					"connected (%s): a host service is reachable", type_name(r));
		return;
	}
	if (r == -EACCES || r == -EPERM)
		s->denied++;
	else if (r == -ECONNREFUSED)
		s->refused++;
	else
		s->other++;
	if (named)
		sl_probe_report(s->p, SL_PROBE_BLOCKED, "unix", path, "connect: %s", strerror(-r));
}

static bool is_dir_at(const char *path, unsigned char d_type)
{
	struct stat st;

	if (d_type == DT_DIR)
		return true;
	if (d_type != DT_UNKNOWN)
		return false;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Bounded and not following symlinks; d_type spares a stat of every
 * entry (and of a FUSE mount whose daemon may never answer). */
static void scan_dir(struct scan *s, const char *dir, int depth)
{
	_cleanup_(sl_probe_closedirp) DIR *d = opendir(dir);
	char path[PATH_MAX];
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++s->entries > SCAN_MAX_ENTRIES) {
			s->truncated = true;
			return;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (e->d_type == DT_SOCK || e->d_type == DT_UNKNOWN)
			scan_socket(s, path, false);
		if (depth < SCAN_MAX_DEPTH && e->d_type != DT_LNK && is_dir_at(path, e->d_type) &&
		    strcmp(e->d_name, "gvfs") && strcmp(e->d_name, "doc"))
			scan_dir(s, path, depth + 1);
	}
}

static void probe_unix(struct sl_probe *p)
{
	_cleanup_free_ struct scan *s = calloc(1, sizeof(*s));
	char roots[ELEMENTSOF(scan_roots)][PATH_MAX];
	size_t n_roots = 0;

	if (!s) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "unix", "-", "out of memory");
		return;
	}
	s->p = p;
	for (size_t i = 0; i < ELEMENTSOF(well_known); i++)
		scan_socket(s, well_known[i], true);
	for (size_t i = 0; i < ELEMENTSOF(scan_roots); i++) {
		char real[PATH_MAX];
		bool dup = false;

		/* /var/run is a symlink to /run on most systems. */
		if (!realpath(scan_roots[i], real))
			continue;
		for (size_t j = 0; j < n_roots; j++)
			dup = dup || !strcmp(roots[j], real);
		if (dup)
			continue;
		memcpy(roots[n_roots++], real, sizeof(real));
		scan_dir(s, real, 1);
	}
	if (s->connected > MAX_ESCAPED_LINES)
		sl_probe_report(p, SL_PROBE_ESCAPED, "unix", "(scan)", "%u more sockets connected",
				s->connected - MAX_ESCAPED_LINES);
	sl_probe_report(p, s->connected ? SL_PROBE_ESCAPED : SL_PROBE_BLOCKED, "unix",
			"/run /var/run /tmp ...",
			"%u socket%s found, %u connected, %u permission denied, %u refused, %u "
			"other%s",
			s->found, s->found == 1 ? "" : "s", s->connected, s->denied, s->refused,
			s->other, s->truncated ? " (the scan stopped at its bound)" : "");
}

/* Abstract sockets belong to a network namespace, not to a filesystem:
 * the ones listed here are the ones it could reach. */
static void probe_unix_abstract(struct sl_probe *p)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/net/unix", "re");
	unsigned tried = 0, connected = 0;
	char line[512];

	if (!f) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "unix-abstract", "/proc/net/unix", "%s",
				strerror(errno));
		return;
	}
	for (int i = 0; i < 4096 && fgets(line, sizeof(line), f) && tried < 64; i++) {
		unsigned flags, type, st;
		char name[256];
		int r;

		if (sscanf(line, "%*s %*x %*x %x %x %x %*u %255s", &flags, &type, &st, name) != 4 ||
		    name[0] != '@')
			continue;
		/* A listener (__SO_ACCEPTCON), or a bound datagram socket. */
		if (!(flags & 0x10000) && type != SOCK_DGRAM)
			continue;
		tried++;
		name[0] = '\0';
		r = unix_connect(name, (socklen_t)strlen(name + 1) + 1);
		name[0] = '@';
		if (r >= 0 && connected++ < MAX_ESCAPED_LINES)
			sl_probe_report(p, SL_PROBE_ESCAPED, "unix-abstract", name,
					"connected (%s)", type_name(r));
	}
	if (!connected)
		sl_probe_report(p, SL_PROBE_BLOCKED, "unix-abstract", "/proc/net/unix",
				"%u abstract listener%s in this network namespace, none connected",
				tried, tried == 1 ? "" : "s");
}

void sl_probe_sockets(struct sl_probe *p)
{
	if (sl_probe_wanted(p, "raw4"))
		try_socket(p, "raw4", "AF_INET SOCK_RAW", AF_INET, SOCK_RAW, IPPROTO_RAW,
			   "it could forge any IPv4 packet");
	if (sl_probe_wanted(p, "raw6"))
		try_socket(p, "raw6", "AF_INET6 SOCK_RAW", AF_INET6, SOCK_RAW, IPPROTO_RAW,
			   "it could forge any IPv6 packet");
	if (sl_probe_wanted(p, "packet"))
		try_socket(p, "packet", "AF_PACKET SOCK_RAW", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL),
			   "it could send frames that no inet hook sees");
	if (sl_probe_wanted(p, "unix"))
		probe_unix(p);
	if (sl_probe_wanted(p, "unix-abstract"))
		probe_unix_abstract(p);
}

/* ---- the filesystem ---- */

/* Whether dir is, or is under, a path given with --allow-write. */
static bool allowed_write(const struct sl_probe *p, const char *dir)
{
	for (size_t i = 0; i < p->n_allow_write; i++) {
		char real[PATH_MAX];
		size_t n;

		if (!realpath(p->allow_write[i], real))
			continue;
		n = strlen(real);
		if (!strncmp(dir, real, n) && (dir[n] == '\0' || dir[n] == '/' || n == 1))
			return true;
	}
	return false;
}

static void try_write(struct sl_probe *p, const char *dir, unsigned i)
{
	char real[PATH_MAX], file[PATH_MAX + 64];
	int fd;

	if (!realpath(dir, real)) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "fs-write", dir, "%s", strerror(errno));
		return;
	}
	if (allowed_write(p, real)) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "fs-write", dir, "under --allow-write");
		return;
	}
	snprintf(file, sizeof(file), "%s%s.sluice-probe-%d-%u", real, strcmp(real, "/") ? "/" : "",
		 (int)getpid(), i);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		sl_probe_report(p, SL_PROBE_BLOCKED, "fs-write", dir, "create %s: %s", file,
				strerror(errno));
		return;
	}
	close(fd);
	if (unlink(file) < 0)
		sl_probe_report(p, SL_PROBE_ESCAPED, "fs-write", dir,
				"created %s (and could not remove it: %s)", file, strerror(errno));
	else
		sl_probe_report(p, SL_PROBE_ESCAPED, "fs-write", dir, "created (and removed) %s",
				file);
}

/* Temporary directories are meant to be writable: fs-tmp judges whether
 * they are the sandbox's own. */
static bool is_tmp(const char *path)
{
	static const char *const tmps[] = { "/tmp", "/var/tmp", "/dev/shm" };

	for (size_t i = 0; i < ELEMENTSOF(tmps); i++) {
		size_t n = strlen(tmps[i]);

		if (!strncmp(path, tmps[i], n) && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

static void probe_write(struct sl_probe *p)
{
	static const char *const dirs[] = { "/",	"/etc", "/usr", "/usr/local/bin", "/var/lib",
					    "/root", "/home", "/opt", "/srv" };
	char extra[2][PATH_MAX];
	const char *home = getenv("HOME");
	size_t n_extra = 0;
	unsigned i = 0;

	for (size_t k = 0; k < ELEMENTSOF(dirs); k++)
		try_write(p, dirs[k], i++);
	/* $HOME itself is meant to be writable; its parent (other users'
	 * homes) is not. And the working directory, unless it was bound
	 * writable on purpose (--allow-write) or is a temporary one. */
	if (home && home[0] == '/' && realpath(home, extra[n_extra])) {
		char *slash = strrchr(extra[n_extra], '/');

		if (slash && slash != extra[n_extra]) {
			*slash = '\0';
			n_extra++;
		}
	}
	if (getcwd(extra[n_extra], sizeof(extra[n_extra])))
		n_extra++;
	for (size_t k = 0; k < n_extra; k++) {
		bool dup = false;

		for (size_t j = 0; j < ELEMENTSOF(dirs); j++)
			dup = dup || !strcmp(extra[k], dirs[j]);
		if (k == 1 && !strcmp(extra[0], extra[1]))
			dup = true;
		if (is_tmp(extra[k]))
			dup = true;
		if (!dup)
			try_write(p, extra[k], i++);
	}
}

/* The mount points under dir (at most `max`), from /proc/self/mountinfo's
 * fifth field: what sluice made to bind a --rw or --ro path into a private
 * /tmp, not another user's files. (A space is escaped there as \040: a
 * path with one is merely not recognised, and counts as another user's.) */
static size_t mounts_under(const char *dir, char (*ret)[PATH_MAX], size_t max)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t n = strlen(dir), k = 0;
	char line[4096];

	for (int i = 0; f && k < max && i < 4096 && fgets(line, sizeof(line), f); i++)
		if (sscanf(line, "%*s %*s %*s %*s %4095s", ret[k]) == 1 &&
		    !strncmp(ret[k], dir, n) && ret[k][n] == '/')
			k++;
	return k;
}

/* Whether the entry `name` of dir is one of those mount points or holds one. */
static bool holds_mount(const char *dir, const char *name, char (*mounts)[PATH_MAX], size_t n)
{
	size_t d = strlen(dir), l = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (!strncmp(mounts[i] + d + 1, name, l) &&
		    (mounts[i][d + 1 + l] == '\0' || mounts[i][d + 1 + l] == '/'))
			return true;
	return false;
}

/* A /tmp of the sandbox's own holds nothing of other users. */
static void probe_tmp_dir(struct sl_probe *p, const char *dir)
{
	_cleanup_(sl_probe_closedirp) DIR *d = opendir(dir);
	_cleanup_free_ char(*mounts)[PATH_MAX] = calloc(SCAN_MAX_MOUNTS, PATH_MAX);
	unsigned ours = 0, others = 0, binds = 0;
	size_t n_mounts;
	char example[128] = "";
	uid_t example_uid = 0;
	struct dirent *e;

	if (!d || !mounts) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "fs-tmp", dir, "%s", strerror(errno));
		return;
	}
	n_mounts = mounts_under(dir, mounts, SCAN_MAX_MOUNTS);
	for (int n = 0; n < 4096 && (e = readdir(d)); n++) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (st.st_uid == getuid()) {
			ours++;
		} else if (holds_mount(dir, e->d_name, mounts, n_mounts)) {
			binds++;
		} else if (!others++) {
			snprintf(example, sizeof(example), "%.100s", e->d_name);
			example_uid = st.st_uid;
		}
	}
	if (others)
		sl_probe_report(p, SL_PROBE_ESCAPED, "fs-tmp", dir,
				"shared: %u entr%s of other users (e.g. %s, uid %u)", others,
				others == 1 ? "y" : "ies", example, (unsigned)example_uid);
	else
		sl_probe_report(p, SL_PROBE_BLOCKED, "fs-tmp", dir,
				"its own: no entries of other users (%u of ours, %u holding a bind)",
				ours, binds);
}

static void probe_tmp(struct sl_probe *p)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm" };

	for (size_t k = 0; k < ELEMENTSOF(dirs); k++)
		probe_tmp_dir(p, dirs[k]);
}

static void try_read(struct sl_probe *p, const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char c;

	if (fd < 0) {
		sl_probe_report(p, errno == ENOENT ? SL_PROBE_SKIPPED : SL_PROBE_BLOCKED, "fs-read",
				path, "open: %s", strerror(errno));
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		_cleanup_(sl_probe_closedirp) DIR *d = fdopendir(fd);

		if (!d) {
			sl_probe_report(p, SL_PROBE_BLOCKED, "fs-read", path, "list: %s",
					strerror(errno));
			return;
		}
		fd = -1; /* the DIR owns it now */
		errno = 0;
		if (readdir(d) || !errno)
			sl_probe_report(p, SL_PROBE_ESCAPED, "fs-read", path, "listed it");
		else
			sl_probe_report(p, SL_PROBE_BLOCKED, "fs-read", path, "list: %s",
					strerror(errno));
		return;
	}
	if (read(fd, &c, 1) < 0 && errno != EAGAIN)
		sl_probe_report(p, SL_PROBE_BLOCKED, "fs-read", path, "read: %s", strerror(errno));
	else
		sl_probe_report(p, SL_PROBE_ESCAPED, "fs-read", path, "read it (%lld bytes)",
				(long long)st.st_size);
}

void sl_probe_files(struct sl_probe *p)
{
	static const char *const secrets[] = { "/etc/shadow", "/etc/gshadow", "/etc/sudoers",
					       "/root" };

	if (sl_probe_wanted(p, "fs-write"))
		probe_write(p);
	if (sl_probe_wanted(p, "fs-tmp"))
		probe_tmp(p);
	if (sl_probe_wanted(p, "fs-read")) {
		for (size_t i = 0; i < ELEMENTSOF(secrets); i++)
			try_read(p, secrets[i]);
		for (size_t i = 0; i < p->n_secret_files; i++)
			try_read(p, p->secret_files[i]);
	}
}
