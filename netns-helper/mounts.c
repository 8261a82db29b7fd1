/* SPDX-License-Identifier: MIT */
/*
 * The command's filesystem view (netns.h, struct sl_netns_fs).
 *
 * Built by the sandbox's init, as root, in the mount namespace it was born
 * with, before anything of the command runs. The order is what makes it
 * work:
 *  1. nothing propagates either way (MS_PRIVATE): a mount the host makes
 *     later must not appear in here writable;
 *  2. what is bound later is cloned first (open_tree), while the host's /tmp
 *     and /dev are still visible;
 *  3. the whole tree becomes read-only, nosuid and nodev in one call
 *     (mount_setattr, AT_RECURSIVE);
 *  4. fresh tmpfs cover /tmp, /var/tmp, /run (and /var/run) and /dev, so no
 *     socket of the host there (D-Bus, systemd's varlink sockets, nscd,
 *     docker.sock, /dev/log) can be reached; /dev gets only harmless nodes;
 *  5. the sandbox's files (resolv.conf, the CA bundle, passwd) and the
 *     binds go on top, parents before children;
 *  6. /proc and /sys are mounted anew, so they show the sandbox's own pid
 *     and network namespaces, not the host's.
 * The host's mounts stay underneath, out of reach: the command never holds
 * CAP_SYS_ADMIN to unmount anything.
 *
 * Every failure is fatal: a half-built view could be a way out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "netns-internal.h"
#include "util.h"

/* glibc 2.36 has wrappers for these, but not every header set does. */
static int sys_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
			  unsigned flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

/* Where the sandbox's own files live inside (on the fresh /run). */
#define VIEW_DIR "/run/sluice"

/* The system CA bundles of Debian, Fedora/RHEL, Alpine/Arch, openSUSE and
 * what Go and OpenSSL look for first: each that exists is covered by the
 * sandbox's bundle, so clients that ignore SSL_CERT_FILE trust it too. */
static const char *const ca_paths[] = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
};

/* bubblewrap's minimal /dev: nodes that reach no device of consequence. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

const char *sl_netns_bind_refused(const char *path)
{
	static const char *const under[] = {"/proc", "/sys", "/dev", "/run", "/var/run"};

	static const char *const exactly[] = {"/tmp", "/var/tmp", "/var"};

	if (!strcmp(path, "/"))
		return "the whole filesystem: bind what the task needs, not /";
	/* The host's own /tmp holds sockets (X11's, a database's): bind a
	 * directory beneath it instead. */
	for (size_t i = 0; i < ELEMENTSOF(exactly); i++)
		if (!strcmp(path, exactly[i]))
			return "the sandbox's /tmp and /var/tmp are its own (the host's hold "
			       "sockets): bind a directory beneath them instead";
	for (size_t i = 0; i < ELEMENTSOF(under); i++) {
		size_t n = strlen(under[i]);

		if (!strncmp(path, under[i], n) && (path[n] == '\0' || path[n] == '/'))
			return "the sandbox has its own /proc, /sys, /dev and /run (the host's "
			       "sockets and devices live there)";
	}
	return NULL;
}

static int write_file(const char *path, const char *s, size_t len, mode_t mode)
{
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd < 0)
		return negative_errno();
	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? negative_errno() : -EIO;
		s += n;
		len -= (size_t)n;
	}
	if (fchmod(fd, mode) < 0) /* whatever the umask */
		return negative_errno();
	return 0;
}

/* A place to mount a file or a directory on: made if missing. */
static int make_mountpoint(const char *path, bool dir)
{
	struct stat st;
	int r;

	if (lstat(path, &st) == 0)
		return 0;
	if (errno != ENOENT)
		return negative_errno();
	r = sl_mkdir_parents(path, 0755, dir);
	if (r < 0 || dir)
		return r;
	r = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (r < 0)
		return negative_errno();
	close(r);
	return 0;
}

static int tmpfs(const char *where, const char *mode, unsigned long flags)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "mode=%s", mode);
	return mount("sluice", where, "tmpfs", flags, opts) < 0 ? negative_errno() : 0;
}

/* Attach a detached mount (open_tree's) at `where`, made if missing. The
 * place is looked up without following any link: a link swapped into a
 * --rw bind attached before must not send a later bind elsewhere. */
static int attach(int fd, const char *where, bool dir)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	_cleanup_close_ int to = -1;
	int r = make_mountpoint(where, dir);

	if (r < 0)
		return r;
	to = (int)syscall(SYS_openat2, AT_FDCWD, where, &how, sizeof(how));
	if (to < 0)
		return negative_errno();
	if (sys_move_mount(fd, "", to, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return negative_errno();
	return 0;
}

/* Bind a file of the view over another place, read-only. */
static int bind_ro(const char *from, const char *where)
{
	if (mount(from, where, NULL, MS_BIND, NULL) < 0)
		return negative_errno();
	if (mount(NULL, where, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
	    0)
		return negative_errno();
	return 0;
}

struct clones {
	int binds[SL_NETNS_MAX_BINDS];
	bool bind_dir[SL_NETNS_MAX_BINDS];
	int ca;
	int dev[ELEMENTSOF(dev_nodes)];
};

static void clones_close(struct clones *c, size_t n_binds)
{
	for (size_t i = 0; i < n_binds; i++)
		sl_closep(&c->binds[i]);
	sl_closep(&c->ca);
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++)
		sl_closep(&c->dev[i]);
}

static int clone_tree_at(int dfd, const char *path, bool recursive, bool *ret_dir)
{
	struct stat st;
	int fd = sys_open_tree(dfd, path,
			       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0) |
				   (path[0] ? 0 : AT_EMPTY_PATH));

	if (fd < 0)
		return negative_errno();
	if (ret_dir) {
		if (fstat(fd, &st) < 0) {
			int r = negative_errno();
			close(fd);
			return r;
		}
		*ret_dir = S_ISDIR(st.st_mode);
	}
	return fd;
}

static int clone_tree(const char *path, bool recursive, bool *ret_dir)
{
	return clone_tree_at(AT_FDCWD, path, recursive, ret_dir);
}

/* Step 2: everything bound later, cloned while the host's tree is whole. */
static int take_clones(const struct sl_netns_fs *fs, struct clones *c, char *err, size_t errlen)
{
	int fd;

	for (size_t i = 0; i < fs->n_binds; i++) {
		/* nosuid (and read-only for --ro) on every mount of the tree;
		 * for --rw only the top one is made writable: a mount the host
		 * itself keeps read-only beneath PATH stays read-only. */
		struct mount_attr all = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		struct mount_attr top = {.attr_clr = MOUNT_ATTR_RDONLY};

		/* The path was canonical (and checked) when sluice started: a
		 * link in it now was put there since, to send the bind
		 * elsewhere (the host's /run, say). Walk it without links. */
		struct open_how how = {.flags = O_PATH | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		_cleanup_close_ int at =
		    (int)syscall(SYS_openat2, AT_FDCWD, fs->binds[i].path, &how, sizeof(how));

		fd = at < 0 ? negative_errno() : clone_tree_at(at, "", true, &c->bind_dir[i]);
		if (fd < 0)
			return sl_err(err, errlen, fd, "%s %s: %s", fs->binds[i].writable ? "--rw" : "--ro",
				      fs->binds[i].path, strerror(-fd));
		c->binds[i] = fd;
		if (!fs->binds[i].writable)
			all.attr_set |= MOUNT_ATTR_RDONLY;
		if (sys_mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &all) < 0 ||
		    (fs->binds[i].writable && sys_mount_setattr(fd, "", AT_EMPTY_PATH, &top) < 0))
			return sl_err(err, errlen, negative_errno(), "%s %s: setting its mount flags: %m",
				      fs->binds[i].writable ? "--rw" : "--ro", fs->binds[i].path);
	}
	if (fs->ca_bundle) {
		fd = clone_tree(fs->ca_bundle, false, NULL);
		if (fd < 0)
			return sl_err(err, errlen, fd, "the CA bundle %s: %s", fs->ca_bundle,
				      strerror(-fd));
		c->ca = fd;
	}
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		char path[32];

		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		fd = clone_tree(path, false, NULL);
		if (fd < 0 && fd != -ENOENT)
			return sl_err(err, errlen, fd, "%s: %s", path, strerror(-fd));
		c->dev[i] = fd;
		/* A read-only mount still lets the device be read and written;
		 * it only keeps the command from changing the host's node. */
		if (fd >= 0 && sys_mount_setattr(fd, "", AT_EMPTY_PATH,
						 &(struct mount_attr){.attr_set = MOUNT_ATTR_RDONLY |
										 MOUNT_ATTR_NOSUID |
										 MOUNT_ATTR_NOEXEC}) < 0)
			return sl_err(err, errlen, negative_errno(), "%s: setting its mount flags: %m",
				      path);
	}
	return 0;
}

/* Step 4: fresh tmpfs over every place the host keeps sockets and scratch. */
static int cover(char *err, size_t errlen)
{
	static const struct {
		const char *where, *mode;
	} places[] = {{"/tmp", "1777"}, {"/var/tmp", "1777"}, {"/run", "0755"}};
	struct stat st;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(places); i++) {
		r = tmpfs(places[i].where, places[i].mode, MS_NOSUID | MS_NODEV);
		if (r < 0)
			return sl_err(err, errlen, r, "mounting a tmpfs on %s: %s", places[i].where,
				      strerror(-r));
	}
	/* Usually a link to /run, which is covered now; a real directory is
	 * covered too. */
	if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		r = tmpfs("/var/run", "0755", MS_NOSUID | MS_NODEV);
		if (r < 0)
			return sl_err(err, errlen, r, "mounting a tmpfs on /var/run: %s", strerror(-r));
	}
	return 0;
}

static int make_dev(struct clones *c, char *err, size_t errlen)
{
	static const struct {
		const char *link, *to;
	} links[] = {{"/dev/fd", "/proc/self/fd"},
		     {"/dev/stdin", "/proc/self/fd/0"},
		     {"/dev/stdout", "/proc/self/fd/1"},
		     {"/dev/stderr", "/proc/self/fd/2"},
		     {"/dev/ptmx", "pts/ptmx"}};
	int r = tmpfs("/dev", "0755", MS_NOSUID | MS_NOEXEC);

	if (r < 0)
		return sl_err(err, errlen, r, "mounting a tmpfs on /dev: %s", strerror(-r));
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		char path[32];

		if (c->dev[i] < 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		r = attach(c->dev[i], path, false);
		if (r < 0)
			return sl_err(err, errlen, r, "binding %s: %s", path, strerror(-r));
	}
	if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0)
		return sl_err(err, errlen, negative_errno(), "creating /dev/pts, /dev/shm: %m");
	/* A devpts instance of its own: the host's terminals are not in it. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return sl_err(err, errlen, negative_errno(), "mounting devpts on /dev/pts: %m");
	r = tmpfs("/dev/shm", "1777", MS_NOSUID | MS_NODEV);
	if (r < 0)
		return sl_err(err, errlen, r, "mounting a tmpfs on /dev/shm: %s", strerror(-r));
	for (size_t i = 0; i < ELEMENTSOF(links); i++)
		if (symlink(links[i].to, links[i].link) < 0)
			return sl_err(err, errlen, negative_errno(), "creating %s: %m", links[i].link);
	return 0;
}

/* /etc/resolv.conf names the gateway. When it is a link into /run (as
 * systemd-resolved's stub is), its target is on our fresh /run: write the
 * file there. A host without one keeps none. */
static int resolv_conf(struct in_addr gateway, char *err, size_t errlen)
{
	char content[160], a[INET_ADDRSTRLEN], target[512];
	const char *file = VIEW_DIR "/resolv.conf";
	struct stat st;
	ssize_t n;
	int r;

	inet_ntop(AF_INET, &gateway, a, sizeof(a));
	snprintf(content, sizeof(content),
		 "# sluice: the gateway answers DNS for this sandbox\nnameserver %s\n", a);
	r = write_file(file, content, strlen(content), 0644);
	if (r < 0)
		return sl_err(err, errlen, r, "writing %s: %s", file, strerror(-r));
	if (lstat("/etc/resolv.conf", &st) < 0)
		return errno == ENOENT ? 0
				       : sl_err(err, errlen, negative_errno(), "/etc/resolv.conf: %m");
	if (S_ISLNK(st.st_mode) && stat("/etc/resolv.conf", &st) < 0) {
		n = readlink("/etc/resolv.conf", target, sizeof(target) - 1);
		if (n <= 0)
			return sl_err(err, errlen, -EINVAL, "/etc/resolv.conf: an unreadable link");
		target[n] = '\0';
		/* Only a link into what is ours now may be written through. */
		if (strncmp(target, "/run/", 5) && strncmp(target, "../run/", 7))
			return 0;
		snprintf(target, sizeof(target), "%s",
			 target[0] == '/' ? target : target + 2 /* "../run/x" from /etc */);
		r = sl_mkdir_parents(target, 0755, false);
		if (r == 0)
			r = write_file(target, content, strlen(content), 0644);
		if (r < 0)
			return sl_err(err, errlen, r, "writing %s: %s", target, strerror(-r));
		return 0;
	}
	r = bind_ro(file, "/etc/resolv.conf");
	if (r < 0)
		return sl_err(err, errlen, r, "binding %s over /etc/resolv.conf: %s", file,
			      strerror(-r));
	return 0;
}

/* The host's /etc/passwd or /etc/group plus one line, bound over it. */
static int add_entry(const char *etc, const char *line, char *err, size_t errlen)
{
	char copy[64];
	_cleanup_close_ int in = open(etc, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	char buf[8192];
	ssize_t n;
	int r;

	snprintf(copy, sizeof(copy), VIEW_DIR "%s", strrchr(etc, '/'));
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0)
		return sl_err(err, errlen, negative_errno(), "creating %s: %m", copy);
	while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return sl_err(err, errlen, -EIO, "writing %s", copy);
	if (write(out, line, strlen(line)) != (ssize_t)strlen(line))
		return sl_err(err, errlen, -EIO, "writing %s", copy);
	(void)fchmod(out, 0644);
	if (in < 0)
		return 0; /* no such file on the host: nothing to cover */
	r = bind_ro(copy, etc);
	if (r < 0)
		return sl_err(err, errlen, r, "binding %s over %s: %s", copy, etc, strerror(-r));
	return 0;
}

static int user_entries(const struct sl_netns_fs *fs, const struct sl_netns_user *u, char *err,
			size_t errlen)
{
	char line[512];
	int r;

	if (!fs->user_name)
		return 0; /* the host's files know it */
	snprintf(line, sizeof(line), "%s:x:%u:%u:sluice sandbox:%s:/bin/sh\n", fs->user_name,
		 (unsigned)u->uid, (unsigned)u->gid, fs->home ? fs->home : "/");
	r = add_entry("/etc/passwd", line, err, errlen);
	if (r < 0)
		return r;
	snprintf(line, sizeof(line), "%s:x:%u:\n", fs->user_name, (unsigned)u->gid);
	return add_entry("/etc/group", line, err, errlen);
}

/* The sandbox's CA bundle at its own path (what SSL_CERT_FILE and kin name)
 * and over the system's bundles. */
static int ca_bundle(const struct sl_netns_fs *fs, struct clones *c, char *err, size_t errlen)
{
	char done[ELEMENTSOF(ca_paths)][PATH_MAX];
	size_t n_done = 0;
	int r;

	if (c->ca < 0)
		return 0;
	r = attach(c->ca, fs->ca_bundle, false);
	sl_closep(&c->ca);
	c->ca = -1;
	if (r == 0 && mount(NULL, fs->ca_bundle, NULL,
			    MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		r = negative_errno();
	if (r < 0)
		return sl_err(err, errlen, r, "binding the CA bundle at %s: %s", fs->ca_bundle,
			      strerror(-r));
	for (size_t i = 0; i < ELEMENTSOF(ca_paths); i++) {
		char real[PATH_MAX];
		bool seen = false;

		/* A link to a bundle already covered (/etc/ssl/cert.pem is one
		 * on some systems) is covered with it. */
		if (!realpath(ca_paths[i], real))
			continue;
		for (size_t k = 0; k < n_done; k++)
			seen = seen || !strcmp(done[k], real);
		if (seen)
			continue;
		r = bind_ro(fs->ca_bundle, real);
		if (r < 0)
			return sl_err(err, errlen, r, "binding the CA bundle over %s: %s", real,
				      strerror(-r));
		snprintf(done[n_done++], PATH_MAX, "%s", real);
	}
	return 0;
}

/* Parents before children, so a --ro inside a --rw (or the reverse) lands
 * on top of it. A handful of entries: insertion sort. */
static void order_binds(const struct sl_netns_fs *fs, size_t *idx)
{
	for (size_t i = 0; i < fs->n_binds; i++)
		idx[i] = i;
	for (size_t i = 1; i < fs->n_binds; i++)
		for (size_t k = i; k > 0 && strlen(fs->binds[idx[k]].path) <
						   strlen(fs->binds[idx[k - 1]].path);
		     k--) {
			size_t t = idx[k];
			idx[k] = idx[k - 1];
			idx[k - 1] = t;
		}
}

static int binds(const struct sl_netns_fs *fs, struct clones *c, char *err, size_t errlen)
{
	size_t idx[SL_NETNS_MAX_BINDS];

	order_binds(fs, idx);
	for (size_t i = 0; i < fs->n_binds; i++) {
		size_t k = idx[i];
		int r = attach(c->binds[k], fs->binds[k].path, c->bind_dir[k]);

		if (r < 0)
			return sl_err(err, errlen, r, "%s %s: mounting it in the sandbox: %s",
				      fs->binds[k].writable ? "--rw" : "--ro", fs->binds[k].path,
				      strerror(-r));
		sl_closep(&c->binds[k]);
		c->binds[k] = -1; /* the mount stays: it is attached now */
	}
	return 0;
}

static int make_home(const struct sl_netns_fs *fs, const struct sl_netns_user *u, char *err,
		     size_t errlen)
{
	struct stat st;
	int r;

	if (!fs->home || lstat(fs->home, &st) == 0)
		return 0;
	r = sl_mkdir_parents(fs->home, 0755, false);
	if (r == 0 && mkdir(fs->home, 0700) < 0)
		r = negative_errno();
	if (r == 0 && (chown(fs->home, u->uid, u->gid) < 0 || chmod(fs->home, 0700) < 0))
		r = negative_errno();
	if (r < 0)
		return sl_err(err, errlen, r, "creating the home directory %s: %s", fs->home,
			      strerror(-r));
	return 0;
}

int sl_netns_fs_setup(const struct sl_netns_fs *fs, const struct sl_netns_user *u,
		      struct in_addr gateway, char *err, size_t errlen)
{
	struct clones c = {.ca = -1};
	/* nodev too: a device node elsewhere in the host's tree (a chroot's
	 * /dev) must not be a way to a device; /dev is built anew. */
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	int r;

	for (size_t i = 0; i < SL_NETNS_MAX_BINDS; i++)
		c.binds[i] = -1;
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++)
		c.dev[i] = -1;
	if (fs->n_binds > SL_NETNS_MAX_BINDS)
		return sl_err(err, errlen, -E2BIG, "more than %d binds", SL_NETNS_MAX_BINDS);

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return sl_err(err, errlen, negative_errno(), "making / a private mount: %m");
	r = take_clones(fs, &c, err, errlen);
	if (r < 0)
		goto out;
	if (sys_mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro) < 0) {
		r = sl_err(err, errlen, negative_errno(), "making the filesystem read-only: %m");
		goto out;
	}
	r = cover(err, errlen);
	if (r < 0)
		goto out;
	r = make_dev(&c, err, errlen);
	if (r < 0)
		goto out;
	if (mkdir(VIEW_DIR, 0755) < 0) {
		r = sl_err(err, errlen, negative_errno(), "creating %s: %m", VIEW_DIR);
		goto out;
	}
	/* The binds first, the sandbox's own files on top of them: a --ro
	 * /etc must not hide its resolv.conf, passwd or CA bundle. */
	r = make_home(fs, u, err, errlen);
	if (r == 0)
		r = binds(fs, &c, err, errlen);
	if (r == 0)
		r = resolv_conf(gateway, err, errlen);
	if (r == 0)
		r = user_entries(fs, u, err, errlen);
	if (r == 0)
		r = ca_bundle(fs, &c, err, errlen);
	if (r < 0)
		goto out;
	/* Ours, of the pid and network namespaces we are in now. */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
		r = sl_err(err, errlen, negative_errno(), "mounting /proc: %m");
		goto out;
	}
	if (mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
	    0) {
		r = sl_err(err, errlen, negative_errno(), "mounting /sys: %m");
		goto out;
	}
	r = 0;
out:
	clones_close(&c, fs->n_binds);
	return r;
}
