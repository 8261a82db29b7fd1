/* SPDX-License-Identifier: MIT */
/*
 * Who the command runs as, and the environment it gets.
 *
 * By default a sandbox gets a uid of its own, as systemd's DynamicUser=
 * does: a number from a range nothing else allocates from, that has no
 * passwd or group entry, lies in no /etc/subuid or /etc/subgid range, and
 * that no process on the machine runs with. A lock file per uid, held for
 * the sandbox's whole life, keeps two sandboxes from sharing one. Its
 * holder marks it, and removes it only once the uid is clean (no process,
 * nothing in the kernel): a uid whose file is left was not released so (a
 * SIGKILLed sluice: its lock died with it, its processes may not have),
 * and its next holder checks /proc and scrubs before using it (lock_uid).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/keyctl.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "netns.h"
#include "trace.h"
#include "util.h"

#define DEFAULT_UID_LOCK_DIR "/run/sluice/uid"
/* /etc/subuid lists one range per user; a file larger than this is not
 * one we can reason about, and we do not guess. */
#define MAX_SUBID_FILE (1u << 20)
/* Each uid whose lock we take costs a walk of /proc. More than this many
 * locked-but-busy uids (processes left by SIGKILLed sluices) means
 * something is wrong; say so rather than walk on. */
#define MAX_PROC_SCANS 256
/* /proc holds at most pid_max (<= 2^22) processes, plus a few dozen
 * other entries: a bound that a healthy /proc never reaches. */
#define MAX_PROC_ENTRIES ((1u << 22) + 4096)
/* Opening a lock file whose previous holder unlinked it under us: retry
 * a few times, it cannot keep happening. */
#define MAX_LOCK_RACES 8

static void fill_from_passwd(struct sl_netns_user *u, const struct passwd *pw)
{
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir);
}

static int user_from_uid(uid_t uid, gid_t gid, bool gid_given, struct sl_netns_user *ret)
{
	struct sl_netns_user u = {.uid = uid, .gid = gid};
	struct passwd *pw;

	errno = 0;
	pw = getpwuid(uid);
	if (pw) {
		fill_from_passwd(&u, pw);
		if (!gid_given)
			u.gid = pw->pw_gid;
	}
	*ret = u;
	return 0;
}

static bool in_dynamic_range(uint64_t id)
{
	return id >= SL_NETNS_UID_BASE && id < (uint64_t)SL_NETNS_UID_BASE + SL_NETNS_UID_COUNT;
}

int sl_netns_user_resolve(const char *spec, struct sl_netns_user *ret, char *err, size_t errlen)
{
	struct sl_netns_user u;
	uint64_t uid;
	struct passwd *pw;

	/* No default here any more: the sudo caller's uid is shared with
	 * their unconfined processes, and "nobody" with every other
	 * sandbox. The caller allocates a uid instead. */
	if (!spec)
		return sl_err(err, errlen, -EINVAL, "--user: no user given");
	if (sl_netns_parse_uint(spec, 0, UINT32_MAX - 1, &uid) == 0) {
		user_from_uid((uid_t)uid, (gid_t)uid, false, &u);
		goto check;
	}
	errno = 0;
	pw = getpwnam(spec);
	if (!pw) {
		if (!strcmp(spec, "nobody")) {
			/* No passwd entry for nobody (a minimal image): the
			 * number every Linux distribution gives it. */
			user_from_uid(65534, 65534, true, &u);
			goto check;
		}
		return sl_err(err, errlen, errno ? -errno : -ESRCH, "--user '%s': no such user",
			      spec);
	}
	u = (struct sl_netns_user){.uid = pw->pw_uid, .gid = pw->pw_gid};
	fill_from_passwd(&u, pw);
check:
	if (u.uid == 0 || u.gid == 0)
		return sl_err(err, errlen, -EPERM,
			      "--user: refusing to run the command as root (uid or gid 0)");
	/* A uid of our own range named by hand could be one a running
	 * sandbox holds: the lock would not know. */
	if (in_dynamic_range(u.uid) || in_dynamic_range(u.gid))
		return sl_err(err, errlen, -EINVAL,
			      "--user: uid/gid %u/%u is in the range sluice allocates sandbox "
			      "users from (%u-%u); leave --user out to get one",
			      (unsigned)u.uid, (unsigned)u.gid, SL_NETNS_UID_BASE,
			      SL_NETNS_UID_BASE + SL_NETNS_UID_COUNT - 1);
	*ret = u;
	return 0;
}

/* ---- The dynamic uid. ---- */

/* Parse a decimal field of /etc/subuid that ends at `end`; false if it is
 * not a number that fits. */
static bool subid_field(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;

	if (p == end)
		return false;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*ret = v;
	return true;
}

bool sl_netns_uid_range_free(const char *subid, uint32_t start, uint32_t count)
{
	const uint64_t lo = start, hi = (uint64_t)start + count; /* [lo, hi) */
	const char *line = subid;

	if (!subid || !count)
		return true;
	while (*line) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		uint64_t s, n;

		/* "owner:start:count", as shadow's subordinate id files. A
		 * line shadow could not parse either grants nothing. */
		if (c2 && line[0] != '#' && subid_field(c1 + 1, c2, &s) &&
		    subid_field(c2 + 1, end, &n) && n > 0 && s < hi && lo < s + n)
			return false;
		if (!nl)
			break;
		line = nl + 1;
	}
	return true;
}

/* Does one "Uid:"/"Gid:"/"Groups:" line list `id`? `p` points past the
 * label. */
static bool line_lists(const char *p, const char *end, uint32_t id)
{
	while (p < end) {
		uint64_t v = 0;
		bool digits = false;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		while (p < end && *p >= '0' && *p <= '9') {
			v = v * 10 + (uint64_t)(*p++ - '0');
			if (v > UINT32_MAX)
				v = (uint64_t)UINT32_MAX + 1; /* matches nothing */
			digits = true;
		}
		if (!digits)
			return false;
		if (v == id)
			return true;
	}
	return false;
}

bool sl_netns_status_has_id(const char *status, size_t len, uint32_t id)
{
	static const char *const labels[] = {"Uid:", "Gid:", "Groups:"};
	const char *line = status, *end = status + len;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;

		for (size_t i = 0; i < ELEMENTSOF(labels); i++) {
			size_t l = strlen(labels[i]);

			if ((size_t)(eol - line) >= l && !memcmp(line, labels[i], l) &&
			    line_lists(line + l, eol, id))
				return true;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return false;
}

/* Which of ids[0..n) a process runs with, as one of its uids, gids (real,
 * effective, saved, filesystem) or supplementary groups: used[i] set for
 * each; one walk of /proc for all of them (each costs a read of every
 * process's status). 0, or < 0 when /proc cannot be read. A process that
 * exits while we look is skipped. */
static int proc_uses_ids(const uint32_t *ids, size_t n, bool *used)
{
	_cleanup_close_ int dfd = -1;
	struct dirent *e;
	unsigned seen = 0;
	DIR *d;

	memset(used, 0, n * sizeof(*used));
	dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return negative_errno();
	d = fdopendir(dfd);
	if (!d)
		return negative_errno();
	dfd = -1; /* the DIR owns it now */
	while ((e = readdir(d))) {
		char path[64], buf[8192];
		_cleanup_close_ int fd = -1;
		ssize_t len;

		if (++seen > MAX_PROC_ENTRIES) {
			closedir(d);
			return -E2BIG;
		}
		if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
		    strspn(e->d_name, "0123456789") != strlen(e->d_name) ||
		    snprintf(path, sizeof(path), "%.20s/status", e->d_name) >= (int)sizeof(path))
			continue;
		fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue; /* gone already */
		/* Uid:, Gid: and Groups: come early; a Groups: line longer
		 * than the buffer (only root can make one) is cut short. */
		len = read(fd, buf, sizeof(buf));
		for (size_t i = 0; len > 0 && i < n; i++)
			if (!used[i] && sl_netns_status_has_id(buf, (size_t)len, ids[i]))
				used[i] = true;
	}
	closedir(d);
	return 0;
}

/* The whole of a small file, NUL-terminated, or NULL in *ret if it does
 * not exist. */
static int read_small_file(const char *path, char **ret)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t got = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno != ENOENT)
			return negative_errno();
		*ret = NULL;
		return 0;
	}
	buf = malloc(MAX_SUBID_FILE + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + got, MAX_SUBID_FILE + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > MAX_SUBID_FILE)
			return -EFBIG;
	}
	buf[got] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Is there a passwd or group entry for `id`? A lookup that fails for
 * another reason than "no such entry" (ERANGE: an entry too big for our
 * buffer) counts as one: we never take a uid we are unsure of. */
static bool nss_knows(uint32_t id)
{
	char buf[16384];
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	int r;

	r = getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &pwp);
	if (pwp || r == ERANGE)
		return true;
	r = getgrgid_r((gid_t)id, &gr, buf, sizeof(buf), &grp);
	return grp || r == ERANGE;
}

/* Take the lock file of `uid` in dir: 1 and *ret_fd when taken, 0 when
 * another sandbox holds it, < 0 on error. The holder unlinks the file when
 * it lets go (sl_netns_user_release), so a lock taken on a file that was
 * unlinked meanwhile is no lock at all: check that the file we hold is
 * still the one the name points to, as systemd's make_lock_file() does.
 *
 * *ret_clean: no one has had the uid since it was last released clean.
 * Every holder writes a mark into the file as soon as it has the lock,
 * before it does anything with the uid, and only a release that saw every
 * process of the uid gone and emptied its keyrings removes the file. So a
 * file that we created just now and that is still empty under our lock
 * proves that no sluice left anything of the uid's behind: no process (a
 * SIGKILLed holder leaves its file, marked), no keyring, no IPC object.
 * A file that was there already is one a holder left unreleased (or one
 * of a sluice before this scheme): the caller checks /proc and scrubs. */
static int lock_uid(int dfd, const char *dir, uint32_t uid, int *ret_fd, bool *ret_clean,
		    char *err, size_t errlen)
{
	char name[16], mark[32];
	int len;

	snprintf(name, sizeof(name), "%" PRIu32, uid);
	len = snprintf(mark, sizeof(mark), "%ld\n", (long)getpid());
	for (int tries = 0; tries < MAX_LOCK_RACES; tries++) {
		_cleanup_close_ int fd = -1;
		bool created = true;
		struct stat a, b;

		fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
			    0600);
		if (fd < 0 && errno == EEXIST) {
			created = false;
			fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
			if (fd < 0 && errno == ENOENT)
				continue; /* released between the two opens */
		}
		if (fd < 0)
			return sl_err(err, errlen, negative_errno(), "opening lock file %s/%s: %m",
				      dir, name);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK)
				return 0;
			return sl_err(err, errlen, negative_errno(), "locking %s/%s: %m", dir,
				      name);
		}
		if (fstat(fd, &a) < 0)
			return sl_err(err, errlen, negative_errno(), "stat %s/%s: %m", dir, name);
		if (fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_nlink > 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			/* Marked before the uid is used: from now on, until a
			 * clean release removes it, the file says "not clean". */
			if (pwrite(fd, mark, (size_t)len, 0) != len)
				return sl_err(err, errlen, errno ? negative_errno() : -EIO,
					      "writing lock file %s/%s: %m", dir, name);
			*ret_clean = created && a.st_size == 0;
			*ret_fd = TAKE_FD(fd);
			return 1;
		}
	}
	return sl_err(err, errlen, -EAGAIN, "locking %s/%s: the file keeps being replaced", dir,
		      name);
}

/* Where the search starts: not predictable from one run to the next, so
 * that the uid a sandbox just used (and may have left files as) is not
 * the next sandbox's. Not a secret: a collision costs nothing but reuse. */
static uint32_t random_start(uint32_t n)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)getpid();
	}
	return v % n;
}

/* Remove the System V IPC objects (/proc/sysvipc/{shm,msg,sem}) that `id`
 * owns or created: they outlive their creator, and would be the next
 * holder's of the uid (systemd's RemoveIPC=, implied by DynamicUser=). A
 * no-op when the sandbox has an IPC namespace of its own. */
static void remove_sysv_ipc(uint32_t id)
{
	static const char *const kinds[] = {"shm", "msg", "sem"};

	for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
		_cleanup_free_ char *line = NULL;
		int col_id = -1, col[4] = {-1, -1, -1, -1}; /* uid gid cuid cgid */
		char path[32];
		size_t cap = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/sysvipc/%s", kinds[k]);
		f = fopen(path, "re");
		if (!f)
			continue;
		for (unsigned lines = 0; lines < (1u << 20) && getline(&line, &cap, f) > 0;
		     lines++) {
			static const char *const owners[] = {"uid", "gid", "cuid", "cgid"};
			uint64_t v[32] = {0};
			char *save = NULL;
			int n = 0;

			for (char *t = strtok_r(line, " \t\n", &save); t && n < 32;
			     t = strtok_r(NULL, " \t\n", &save), n++) {
				if (lines == 0) { /* the header names the columns */
					if (!strcmp(t, "shmid") || !strcmp(t, "msqid") ||
					    !strcmp(t, "semid"))
						col_id = n;
					for (size_t o = 0; o < ELEMENTSOF(owners); o++)
						if (!strcmp(t, owners[o]))
							col[o] = n;
				} else if (sl_netns_parse_uint(t, 0, UINT64_MAX, &v[n]) < 0) {
					v[n] = UINT64_MAX;
				}
			}
			if (lines == 0 || col_id < 0 || col_id >= n)
				continue;
			for (size_t o = 0; o < ELEMENTSOF(col); o++)
				if (col[o] >= 0 && col[o] < n && v[col[o]] == id &&
				    v[col_id] <= INT32_MAX) {
					int ipc = (int)v[col_id];

					if (k == 0)
						(void)shmctl(ipc, IPC_RMID, NULL);
					else if (k == 1)
						(void)msgctl(ipc, IPC_RMID, NULL);
					else
						(void)semctl(ipc, 0, IPC_RMID);
					break;
				}
		}
		fclose(f);
	}
}

/* Possessor and user may do everything (keyutils' KEY_POS_ALL | KEY_USR_ALL,
 * the kernel's default for a user keyring). */
#define KEY_OWNER_ALL 0x3f3f0000ul

/* Empty the kernel keyrings of `id`: its user and user-session keyrings,
 * and its persistent keyring, live as long as the user namespace, not as
 * the processes that filled them, so they too would be the next holder's.
 * Only a process running as the uid can name them: a child does it, with
 * the keyrings possessed (special ids, and the persistent keyring linked
 * into its process keyring), so the possessor's rights apply. Then it
 * invalidates them: the kernel frees them, and the uid owns no key again.
 * Naming a keyring makes it, so each scrub would otherwise leave three
 * keys of the uid behind for good, and every key the kernel holds makes
 * the next slower to make (owns_keys() spares the uids that own none).
 * 0 when they are gone (or there are no keyrings); -ENOTEMPTY when a
 * holder took even the possessor's rights away, so that no one can empty
 * or free them: the uid must not be handed out. */
/* Not instrumented: it runs on a stack the sanitizers know nothing of. */
__attribute__((no_sanitize_address)) static int clear_keyrings_child(void *arg)
{
	const long rings[] = {KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING};
	const uint32_t id = *(const uint32_t *)arg;
	long serial[ELEMENTSOF(rings) + 1];

	/* The system calls themselves: glibc's wrappers, seeing our memory,
	 * would change the ids of every thread of the parent too. */
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, id, id, id) < 0 ||
	    syscall(SYS_setresuid, id, id, id) < 0)
		_exit(1);
	for (size_t i = 0; i < ELEMENTSOF(rings); i++) {
		serial[i] = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, rings[i], 1);
		/* No keyrings (CONFIG_KEYS off, or a seccomp filter that the
		 * sandbox inherits too): nothing can be left in them. A keyring
		 * its holder hid even from its possessor (no search right), or a
		 * quota it filled: what is in them stays, and so must the uid. */
		if (serial[i] < 0 && (errno == ENOSYS || errno == EPERM))
			_exit(0);
		if (serial[i] < 0)
			_exit(errno == ENOKEY || errno == EACCES || errno == EDQUOT ? 3 : 2);
		/* A holder that took its own write access away does not keep
		 * what it stored that way. */
		(void)syscall(SYS_keyctl, KEYCTL_SETPERM, rings[i], KEY_OWNER_ALL);
		if (syscall(SYS_keyctl, KEYCTL_CLEAR, rings[i]) < 0)
			_exit(3);
	}
	serial[ELEMENTSOF(rings)] =
	    syscall(SYS_keyctl, KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING);
	if (serial[ELEMENTSOF(rings)] >= 0) {
		(void)syscall(SYS_keyctl, KEYCTL_SETPERM, serial[ELEMENTSOF(rings)], KEY_OWNER_ALL);
		if (syscall(SYS_keyctl, KEYCTL_CLEAR, serial[ELEMENTSOF(rings)]) < 0)
			_exit(3);
	} else if (errno != EOPNOTSUPP) { /* EOPNOTSUPP: CONFIG_PERSISTENT_KEYRINGS off */
		_exit(2);
	}
	/* By serial: the special ids would make a user keyring anew once
	 * this one is invalidated. Linked into our process keyring (as the
	 * persistent one is) they stay possessed, so the possessor's rights
	 * apply, which a holder that kept the owner's from us left. A keyring
	 * that stays keeps the permissions its holder gave it (others may
	 * write to it, say): the uid is not handed out. Only a kernel without
	 * KEYCTL_INVALIDATE (EOPNOTSUPP) leaves them, emptied, as before. */
	for (size_t i = 0; i < ELEMENTSOF(rings); i++)
		(void)syscall(SYS_keyctl, KEYCTL_LINK, rings[i], KEY_SPEC_PROCESS_KEYRING);
	for (size_t i = 0; i < ELEMENTSOF(serial); i++)
		if (serial[i] >= 0 && syscall(SYS_keyctl, KEYCTL_INVALIDATE, serial[i]) < 0 &&
		    errno != EOPNOTSUPP)
			_exit(3);
	_exit(0);
}

/* How much of /proc/key-users owns_keys() trusts: what one read(2) gets
 * (a page, ~80 key users at ~50 bytes a line). The kernel makes the file
 * anew from the position each read asks for: when a user before ours
 * goes between two reads, ours shifts into the part already read, and a
 * second read would miss it. Each read also walks the list from its first
 * user (20 ms for the whole file at 10,000 users). */
#define KEY_USERS_READ 8192

/* Does `id` own a key at all: 0 when /proc/key-users, read whole in one
 * read(2), has no line for it (the usual case: keyctl and add_key are
 * denied in the sandbox, seccomp.c); 1 when it has one, or when that
 * cannot be told (no such file, as under a /proc of pids only; a read
 * error; a file longer than one read): the scrub then runs, and it makes
 * do without keyrings at all. */
static int owns_keys(uint32_t id)
{
	_cleanup_close_ int fd = open("/proc/key-users", O_RDONLY | O_CLOEXEC);
	char buf[KEY_USERS_READ + 1], more;
	ssize_t n;

	if (fd < 0)
		return 1;
	do
		n = read(fd, buf, KEY_USERS_READ);
	while (n < 0 && errno == EINTR);
	if (n <= 0 || n == KEY_USERS_READ)
		return 1;
	/* The whole file, or only its first page. */
	if (read(fd, &more, 1) != 0)
		return 1;
	buf[n] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		char *end;
		unsigned long v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		v = strtoul(line, &end, 10);
		if (*end == ':' && v == id)
			return 1;
	}
	return 0;
}

/* The child shares our memory and we wait while it runs, as posix_spawn's
 * does: no copy of the page tables of a process that has OpenSSL mapped
 * (a fork was most of a millisecond, four times a run). It runs on a
 * stack of its own and makes only system calls, through syscall(2). */
#define KEYRING_CHILD_STACK (64 * 1024)

static int clear_keyrings(uint32_t id)
{
	void *stack;
	int status;
	pid_t pid;

	stack = mmap(NULL, KEYRING_CHILD_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return negative_errno();
	pid = clone(clear_keyrings_child, (char *)stack + KEYRING_CHILD_STACK,
		    CLONE_VM | CLONE_VFORK | SIGCHLD, &id);
	if (pid < 0) {
		int r = negative_errno();

		munmap(stack, KEYRING_CHILD_STACK);
		return r;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			munmap(stack, KEYRING_CHILD_STACK);
			return negative_errno();
		}
	munmap(stack, KEYRING_CHILD_STACK);
	if (!WIFEXITED(status))
		return -EIO;
	switch (WEXITSTATUS(status)) {
	case 0:
		return 0;
	case 3:
		return -ENOTEMPTY;
	default:
		return -EIO;
	}
}

/* What a previous holder of `id` may have left in the kernel for the next
 * one. Needs root; the caller checks. */
static int scrub_uid(uint32_t id)
{
	/* Never anyone else's: --user names a uid that may be in use. */
	if (!in_dynamic_range(id))
		return -EINVAL;
	remove_sysv_ipc(id);
	return owns_keys(id) ? clear_keyrings(id) : 0;
}

/* Remove our lock file while still holding it, so whoever opened it
 * meanwhile sees (lock_uid) that it is stale; then let go. Only our own
 * file: the name could only point elsewhere if someone removed ours. The
 * removal says "released clean" (lock_uid): only for a uid that no process
 * has and that left nothing in the kernel. */
static void unlock_uid(const char *dir, uint32_t uid, int lock_fd)
{
	char path[320];
	struct stat a, b;

	if (snprintf(path, sizeof(path), "%s/%" PRIu32, dir, uid) < (int)sizeof(path) &&
	    fstat(lock_fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		(void)unlink(path);
	sl_closep(&lock_fd);
}

void sl_netns_user_release(const char *lock_dir, uid_t uid, int lock_fd)
{
	if (lock_fd < 0)
		return;
	/* The next holder of the uid skips the scrub (and the walk of /proc)
	 * when the file is gone: it goes only once the scrub worked. If not,
	 * the file stays, marked, and the next allocation scrubs again (and
	 * refuses the uid if that fails). */
	if (geteuid() == 0 && scrub_uid(uid) < 0) {
		close(lock_fd);
		return;
	}
	unlock_uid(lock_dir ? lock_dir : DEFAULT_UID_LOCK_DIR, uid, lock_fd);
}

/* Where the search for free uids is. */
struct search {
	const char *dir;
	int dfd;
	const char *subuid, *subgid;
	uint32_t first, n, start, i;
	unsigned scans;
	bool clean[SL_NETNS_MAX_ALLOC]; /* per candidate: see lock_uid() */
};

/* The next uid to look at closer: in no subid range, without a passwd or
 * group entry, and its lock taken. 1 (*ret_id, *ret_fd), 0 when the range
 * is done, < 0 on error. */
static int next_candidate(struct search *sr, uint32_t *ret_id, int *ret_fd, bool *ret_clean,
			  char *err, size_t errlen)
{
	while (sr->i < sr->n) {
		const uint32_t id = sr->first + (sr->start + sr->i++) % sr->n;
		int fd = -1, r;

		if (!sl_netns_uid_range_free(sr->subuid, id, 1) ||
		    !sl_netns_uid_range_free(sr->subgid, id, 1))
			continue;
		if (nss_knows(id))
			continue;
		r = lock_uid(sr->dfd, sr->dir, id, &fd, ret_clean, err, errlen);
		if (r < 0)
			return r;
		if (r == 0)
			continue; /* another sandbox's */
		*ret_id = id;
		*ret_fd = fd;
		return 1;
	}
	return sl_err(err, errlen, -EUSERS, "allocating a uid: every uid in %u-%u is in use",
		      sr->first, sr->first + sr->n - 1);
}

/* A candidate in use, or whose keyrings no one can empty: let go, take
 * the next. Its file stays (marked: not clean), so that whoever takes it
 * next looks again. */
static int replace(struct search *sr, size_t k, uint32_t *ids, int *fds, char *err, size_t errlen)
{
	/* -1 (sl_closep) until the next is taken: when there is none, the
	 * caller's cleanup must not close this number again, by then perhaps
	 * another thread's (the nftables socket, under `run`). */
	sl_closep(&fds[k]);
	return next_candidate(sr, &ids[k], &fds[k], &sr->clean[k], err, errlen);
}

/* n locked candidates, until none is used by a process (one walk of /proc
 * per round, for all of them) and each is scrubbed. A candidate released
 * clean since its last use (lock_uid) needs neither. */
static int settle(struct search *sr, size_t n, uint32_t *ids, int *fds, char *err, size_t errlen)
{
	bool used[SL_NETNS_MAX_ALLOC], done[SL_NETNS_MAX_ALLOC];
	uint32_t look[SL_NETNS_MAX_ALLOC];
	size_t at[SL_NETNS_MAX_ALLOC];
	int r;

	for (size_t k = 0; k < n; k++)
		done[k] = sr->clean[k];
	for (;;) {
		size_t m = 0;

		for (size_t k = 0; k < n; k++)
			if (!done[k]) {
				at[m] = k;
				look[m++] = ids[k];
			}
		if (m == 0)
			return 0;
		/* Only a lock holder starts processes with these uids, but a
		 * holder that was SIGKILLed leaves them running unlocked. */
		if (++sr->scans > MAX_PROC_SCANS)
			return sl_err(err, errlen, -EUSERS,
				      "allocating a uid: %u uids in %u-%u are still used by "
				      "processes no sluice owns, or hold keyrings no one can empty",
				      MAX_PROC_SCANS, sr->first, sr->first + sr->n - 1);
		r = proc_uses_ids(look, m, used);
		sl_trace("uid: /proc walked");
		if (r < 0)
			return sl_err(err, errlen, r, "allocating a uid: reading /proc: %s",
				      strerror(-r));
		for (size_t j = 0; j < m; j++) {
			const size_t k = at[j];

			/* Root (as in `sluice run`) can and so must scrub; the
			 * unit tests run unprivileged with a lock directory of
			 * their own. */
			r = !used[j] && geteuid() == 0 ? scrub_uid(ids[k]) : 0;
			/* In use, or keyrings no one can empty. */
			if (used[j] || r == -ENOTEMPTY) {
				r = replace(sr, k, ids, fds, err, errlen);
				if (r < 0)
					return r;
				done[k] = sr->clean[k];
				continue;
			}
			if (r < 0)
				return sl_err(err, errlen, r,
					      "allocating a uid: clearing the kernel keyrings of "
					      "uid %" PRIu32 ": %s",
					      ids[k], strerror(-r));
			done[k] = true;
			sl_trace("uid: scrubbed");
		}
	}
}

int sl_netns_user_allocate_n(const char *lock_dir, size_t n, struct sl_netns_user *ret,
			     int *ret_lock_fds, char *err, size_t errlen)
{
	/* Low 16 bits 0, 0xfffe and 0xffff stay unused: code that reads a
	 * uid the way container managers do (low 16 bits = the uid inside)
	 * would take them for root, nobody and (uid_t)-1. */
	struct search sr = {.dir = lock_dir ? lock_dir : DEFAULT_UID_LOCK_DIR,
			    .dfd = -1,
			    .first = SL_NETNS_UID_BASE + 1,
			    .n = SL_NETNS_UID_COUNT - 3};
	_cleanup_free_ char *subuid = NULL, *subgid = NULL;
	uint32_t ids[SL_NETNS_MAX_ALLOC];
	int fds[SL_NETNS_MAX_ALLOC];
	size_t got = 0;
	struct stat st;
	int r;

	if (n < 1 || n > SL_NETNS_MAX_ALLOC)
		return -EINVAL;
	r = read_small_file("/etc/subuid", &subuid);
	if (r < 0)
		return sl_err(err, errlen, r, "reading /etc/subuid: %s", strerror(-r));
	r = read_small_file("/etc/subgid", &subgid);
	if (r < 0)
		return sl_err(err, errlen, r, "reading /etc/subgid: %s", strerror(-r));
	sr.subuid = subuid;
	sr.subgid = subgid;
	r = sl_mkdir_p(sr.dir);
	if (r < 0)
		return sl_err(err, errlen, r, "creating %s: %s", sr.dir, strerror(-r));
	sr.dfd = open(sr.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sr.dfd < 0)
		return sl_err(err, errlen, negative_errno(), "opening %s: %m", sr.dir);
	/* Whoever may remove a lock file there may make two sandboxes share
	 * a uid: only we may write to the directory. */
	if (fstat(sr.dfd, &st) < 0)
		r = sl_err(err, errlen, negative_errno(), "stat %s: %m", sr.dir);
	else if (st.st_uid != geteuid() || (st.st_mode & 022))
		r = sl_err(err, errlen, -EPERM,
			   "%s: must be owned by uid %u and writable by it alone (it is uid "
			   "%u, mode %04o)",
			   sr.dir, (unsigned)geteuid(), (unsigned)st.st_uid,
			   (unsigned)(st.st_mode & 07777));
	sr.start = random_start(sr.n);
	sl_trace("uid: subids read");
	for (; r >= 0 && got < n; got++)
		if ((r = next_candidate(&sr, &ids[got], &fds[got], &sr.clean[got], err, errlen)) < 0)
			break;
	sl_trace("uid: candidates locked");
	if (r >= 0)
		r = settle(&sr, n, ids, fds, err, errlen);
	sl_closep(&sr.dfd);
	if (r < 0) {
		/* Clean ones we have not given out stay clean; the others are
		 * looked at again by their next holder. */
		for (size_t k = 0; k < got; k++)
			if (sr.clean[k])
				unlock_uid(sr.dir, ids[k], fds[k]);
			else
				close(fds[k]);
		return r;
	}
	for (size_t k = 0; k < n; k++) {
		ret[k] = (struct sl_netns_user){.uid = ids[k], .gid = ids[k]};
		snprintf(ret[k].name, sizeof(ret[k].name), "sluice-%" PRIu32, ids[k]);
		ret_lock_fds[k] = fds[k];
	}
	return 0;
}

int sl_netns_user_allocate(const char *lock_dir, struct sl_netns_user *ret, int *ret_lock_fd,
			   char *err, size_t errlen)
{
	return sl_netns_user_allocate_n(lock_dir, 1, ret, ret_lock_fd, err, errlen);
}

/* ---- The environment. ---- */

/* What sluice sets itself; never taken from its own environment nor from
 * --env: the gateway is the sandbox's only way out. */
static const char *const proxy_vars[] = {"HTTP_PROXY",	"HTTPS_PROXY", "http_proxy",
					 "https_proxy", "ALL_PROXY",   "all_proxy",
					 "NO_PROXY",	"no_proxy",    NULL};
#define NO_PROXY_VALUE "localhost,127.0.0.1,::1"

/* What passes from sluice's own environment: the locale, the terminal and
 * the time zone, which tools need to behave, and nothing that could hold a
 * credential. HOME, USER and LOGNAME describe the user sluice runs as, not
 * the command's: they come from the sandbox's user instead. */
static const char *const allowed_vars[] = {"PATH",	"LANG", "LANGUAGE", "TERM",
					   "COLORTERM", "TZ",	"SHELL",    NULL};
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The length of the name in "NAME=VALUE" (or of all of "NAME"). */
static size_t name_len(const char *entry)
{
	return strcspn(entry, "=");
}

static bool name_is(const char *entry, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(entry, name, len);
}

static bool name_in(const char *entry, size_t len, const char *const *names)
{
	for (; names && *names; names++)
		if (name_is(entry, len, *names))
			return true;
	return false;
}

static bool name_valid(const char *s, size_t len)
{
	if (len == 0 ||
	    !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

bool sl_netns_env_name_valid(const char *name)
{
	return name && name_valid(name, strlen(name));
}

int sl_netns_env_extra_check(const char *arg)
{
	size_t len;

	if (!arg)
		return -EINVAL;
	len = name_len(arg);
	if (!name_valid(arg, len))
		return -EINVAL;
	if (name_in(arg, len, proxy_vars))
		return -EPERM;
	return 0;
}

static bool allowed_from_base(const char *entry, size_t len)
{
	/* LC_ALL, LC_CTYPE, LC_MESSAGES, ... */
	return name_in(entry, len, allowed_vars) ||
	       (len > 3 && !memcmp(entry, "LC_", 3) && name_valid(entry, len));
}

/* The entry of `base` for the name of `entry` (its first: what getenv()
 * would return), or NULL. */
static const char *base_lookup(char *const *base, const char *name, size_t len)
{
	for (size_t i = 0; base && base[i]; i++)
		if (name_len(base[i]) == len && base[i][len] == '=' && !memcmp(base[i], name, len))
			return base[i];
	return NULL;
}

/* Add "NAME=VALUE" (taken over: freed on failure too) to a NULL-terminated
 * environment of *n entries, replacing an entry of the same name unless
 * `keep_first`. */
static int env_put(char ***env, size_t *n, char *kv, bool keep_first)
{
	size_t len;
	char **grown;

	if (!kv)
		return -ENOMEM;
	len = name_len(kv);
	for (size_t i = 0; i < *n; i++)
		if (name_len((*env)[i]) == len && !memcmp((*env)[i], kv, len)) {
			if (keep_first) {
				free(kv);
			} else {
				free((*env)[i]);
				(*env)[i] = kv;
			}
			return 0;
		}
	grown = realloc(*env, (*n + 2) * sizeof(*grown));
	if (!grown) {
		free(kv);
		return -ENOMEM;
	}
	grown[(*n)++] = kv;
	grown[*n] = NULL;
	*env = grown;
	return 0;
}

static char *kv_new(const char *name, const char *value)
{
	char *kv;

	return asprintf(&kv, "%s=%s", name, value) < 0 ? NULL : kv;
}

void sl_netns_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(char **, sl_netns_env_free)

int sl_netns_env_build(char *const *base, struct in_addr gateway, uint16_t port,
		       const struct sl_netns_user *user, const char *const *drop,
		       const char *const *extra, char ***ret)
{
	_cleanup_(sl_netns_env_freep) char **env = NULL;
	char url[64], socks[64], addr[INET_ADDRSTRLEN];
	size_t n = 0;
	int r;

	/* Refuse a bad --env before anything else. */
	for (size_t i = 0; extra && extra[i]; i++) {
		r = sl_netns_env_extra_check(extra[i]);
		if (r < 0)
			return r;
	}
	env = calloc(1, sizeof(*env));
	if (!env)
		return -ENOMEM;
	for (size_t i = 0; base && base[i]; i++) {
		size_t len = name_len(base[i]);

		if (base[i][len] != '=' || !allowed_from_base(base[i], len) ||
		    name_in(base[i], len, drop))
			continue;
		r = env_put(&env, &n, strdup(base[i]), true);
		if (r < 0)
			return r;
	}
	if (!base_lookup(env, "PATH", 4) &&
	    (r = env_put(&env, &n, strdup("PATH=" DEFAULT_PATH), true)) < 0)
		return r;

	inet_ntop(AF_INET, &gateway, addr, sizeof(addr));
	snprintf(url, sizeof(url), "http://%s:%u", addr, port);
	/* ALL_PROXY for tools that speak SOCKS5 (the same port serves it);
	 * socks5h: names go to the gateway, which decides them. */
	snprintf(socks, sizeof(socks), "socks5h://%s:%u", addr, port);
	for (size_t i = 0; proxy_vars[i]; i++) {
		bool no = !strcasecmp(proxy_vars[i], "NO_PROXY");
		bool all = !strcasecmp(proxy_vars[i], "ALL_PROXY");

		r = env_put(&env, &n,
			    kv_new(proxy_vars[i], no ? NO_PROXY_VALUE : all ? socks : url), false);
		if (r < 0)
			return r;
	}
	if (user->home[0] && (r = env_put(&env, &n, kv_new("HOME", user->home), false)) < 0)
		return r;
	if (user->name[0] && ((r = env_put(&env, &n, kv_new("USER", user->name), false)) < 0 ||
			      (r = env_put(&env, &n, kv_new("LOGNAME", user->name), false)) < 0))
		return r;

	/* --env last: the operator's explicit word beats our defaults, but
	 * never brings back a variable the policy reads a secret from. */
	for (size_t i = 0; extra && extra[i]; i++) {
		size_t len = name_len(extra[i]);
		const char *from;

		if (extra[i][len] == '=') {
			r = env_put(&env, &n, strdup(extra[i]), false);
		} else {
			if (name_in(extra[i], len, drop) ||
			    !(from = base_lookup(base, extra[i], len)))
				continue;
			r = env_put(&env, &n, strdup(from), false);
		}
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(env);
	return 0;
}

int sl_netns_env_set(char ***env, const char *name, const char *value)
{
	size_t n = 0;

	while ((*env)[n])
		n++;
	return env_put(env, &n, kv_new(name, value), false);
}
