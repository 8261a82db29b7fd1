/* SPDX-License-Identifier: MIT */
/* Trusting a policy or secret file only where the sandbox cannot change it
 * (safe-file.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "macro.h"
#include "safe-file.h"

/* As the kernel's own limit on symlinks in one lookup (MAXSYMLINKS). */
#define MAX_SYMLINKS 40

struct rw_id {
	dev_t dev;
	ino_t ino;
	const char *name;
};

struct walk {
	const char *given;
	uid_t trusted;
	unsigned flags;
	struct rw_id *rw;
	size_t n_rw;
	char *err;
	size_t errlen;
	char who[48]; /* "root", or "root or uid N" */

	/* Where the walk is: the directory open (O_PATH) and its resolved
	 * name, whether others can write it (then it is sticky), and what is
	 * left to walk (todo from pos: a symlink's target replaces it). */
	int dfd;
	char cur[PATH_MAX];
	bool cur_open;
	unsigned links;
	char *todo;
	size_t todo_size, pos;
};

static bool owner_ok(const struct walk *w, uid_t uid)
{
	return uid == 0 || uid == w->trusted;
}

/* A directory that group or others can write lets them rename and remove
 * its entries, unless it is sticky: then only an entry's owner (checked
 * to be trusted for every entry we pass) and the directory's owner can. */
static bool dir_open_to_others(const struct stat *st)
{
	return (st->st_mode & 022) != 0;
}

static const struct rw_id *rw_match(const struct walk *w, const struct stat *st)
{
	for (size_t i = 0; i < w->n_rw; i++)
		if (w->rw[i].dev == st->st_dev && w->rw[i].ino == st->st_ino)
			return &w->rw[i];
	return NULL;
}

static int refuse_rw(const struct walk *w, const char *what, const struct rw_id *rw)
{
	return sl_err(w->err, w->errlen, -EPERM,
		      "%s: the sandbox can write %s (--rw %s), so it could change or replace the "
		      "file (keep policies and secrets outside every --rw path)",
		      w->given, what, rw->name);
}

static int check_dir(const struct walk *w, const struct stat *st, const char *dir)
{
	const struct rw_id *rw;

	if (!S_ISDIR(st->st_mode))
		return sl_err(w->err, w->errlen, -ENOTDIR, "%s: %s: not a directory", w->given,
			      dir);
	if (!owner_ok(w, st->st_uid))
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: its directory %s is owned by uid %u, who could replace the file; "
			      "every directory up to / must be owned by %s (chown root %s, or move "
			      "the file)",
			      w->given, dir, (unsigned)st->st_uid, w->who, dir);
	if (dir_open_to_others(st) && !(st->st_mode & S_ISVTX))
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: group or others can write its directory %s, and could replace "
			      "the file (chmod go-w %s, or move the file)",
			      w->given, dir, dir);
	rw = rw_match(w, st);
	if (rw)
		return refuse_rw(w, dir, rw);
	return 0;
}

/* The file itself, from the fd that was opened. */
static int check_file(const struct walk *w, const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return sl_err(w->err, w->errlen, -EINVAL, "%s: not a regular file", w->given);
	if (!owner_ok(w, st->st_uid))
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: owned by uid %u, who could rewrite it; it must be owned by %s "
			      "(chown root %s)",
			      w->given, (unsigned)st->st_uid, w->who, w->given);
	if (st->st_mode & 022)
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: group or others can write it (chmod go-w %s)", w->given,
			      w->given);
	return 0;
}

/* cur + "/" + name into buf, or -ENAMETOOLONG. */
static int join(char *buf, size_t size, const char *cur, const char *name, size_t name_len)
{
	int n = snprintf(buf, size, "%s%s%.*s", cur, strcmp(cur, "/") == 0 ? "" : "/",
			 (int)name_len, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Start (again) at /: a path, or an absolute symlink's target. */
static int enter_root(struct walk *w)
{
	struct stat st;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: /: %m", w->given);
	sl_closep(&w->dfd);
	w->dfd = fd;
	strcpy(w->cur, "/");
	if (fstat(fd, &st) < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: /: %m", w->given);
	w->cur_open = dir_open_to_others(&st);
	return check_dir(w, &st, "/");
}

/* Move into the directory w->dfd's entry name (resolved: child), or ".."
 * when name is NULL, and check it. */
static int enter_dir(struct walk *w, const char *name, const char *child)
{
	struct stat st;
	int fd = openat(w->dfd, name ? name : "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m", w->given, child);
	sl_closep(&w->dfd);
	w->dfd = fd;
	snprintf(w->cur, sizeof(w->cur), "%s", child);
	if (fstat(fd, &st) < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m", w->given, child);
	w->cur_open = dir_open_to_others(&st);
	return check_dir(w, &st, child);
}

/* The symlink w->dfd's entry name (resolved: child, lstat: st): its
 * target, then what was left after it, becomes the path still to walk. */
static int follow_link(struct walk *w, const char *name, const char *child, const struct stat *st,
		       bool last)
{
	_cleanup_free_ char *next = NULL;
	char target[PATH_MAX];
	ssize_t n;

	if (last && (w->flags & SL_SAFE_FILE_NOFOLLOW))
		return sl_err(w->err, w->errlen, -ELOOP, "%s: a symlink; name the file itself",
			      w->given);
	/* Whoever owns a symlink in a sticky directory can replace it;
	 * elsewhere only who can write the directory can, and that was
	 * checked. Owned by root or us keeps one rule for both. */
	if (!owner_ok(w, st->st_uid))
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: the symlink %s on its way is owned by uid %u, who could point it "
			      "elsewhere (chown -h root %s)",
			      w->given, child, (unsigned)st->st_uid, child);
	if (++w->links > MAX_SYMLINKS)
		return sl_err(w->err, w->errlen, -ELOOP, "%s: too many symlinks", w->given);
	n = readlinkat(w->dfd, name, target, sizeof(target));
	if (n < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m", w->given, child);
	if ((size_t)n >= sizeof(target) || (size_t)n + strlen(w->todo + w->pos) + 1 > w->todo_size)
		return sl_err(w->err, w->errlen, -ENAMETOOLONG, "%s: %s: its target is too long",
			      w->given, child);
	next = malloc(w->todo_size);
	if (!next)
		return -ENOMEM;
	/* todo + pos is "" or "/rest". */
	snprintf(next, w->todo_size, "%.*s%s", (int)n, target, w->todo + w->pos);
	memcpy(w->todo, next, strlen(next) + 1);
	w->pos = 0;
	return target[0] == '/' ? enter_root(w) : 0;
}

/* The last component (resolved: child, lstat: st) must be the file that
 * was opened (fst). */
static int reach_file(const struct walk *w, const struct stat *st, const char *child,
		      const struct stat *fst)
{
	const struct rw_id *rw;

	if (st->st_dev != fst->st_dev || st->st_ino != fst->st_ino)
		return sl_err(w->err, w->errlen, -ESTALE,
			      "%s: changed while it was checked (try again)", w->given);
	if (w->cur_open && fst->st_nlink > 1)
		return sl_err(w->err, w->errlen, -EPERM,
			      "%s: it has %lu links and lies in %s, which others can write: a link "
			      "made there could stand for another file (keep it in a directory only "
			      "%s can write)",
			      w->given, (unsigned long)fst->st_nlink, w->cur, w->who);
	rw = rw_match(w, fst);
	if (rw)
		return refuse_rw(w, child, rw);
	return 0;
}

/*
 * Resolve the path one component at a time from /, as the kernel would,
 * checking every directory entered and every symlink followed, until the
 * last component: that entry must be the file fd (fst) is open on.
 */
static int walk_path(struct walk *w, const struct stat *fst)
{
	int r = enter_root(w);

	while (r >= 0) {
		char name[NAME_MAX + 1], child[PATH_MAX];
		const char *comp;
		struct stat st;
		size_t len;
		bool last;

		while (w->todo[w->pos] == '/')
			w->pos++;
		if (!w->todo[w->pos]) /* the path ends at a directory */
			return sl_err(w->err, w->errlen, -EINVAL, "%s: not a regular file",
				      w->given);
		comp = w->todo + w->pos;
		len = strcspn(comp, "/");
		w->pos += len;
		last = w->todo[w->pos] == '\0';
		if (len > NAME_MAX)
			return sl_err(w->err, w->errlen, -ENAMETOOLONG, "%s: a name is too long",
				      w->given);
		memcpy(name, comp, len);
		name[len] = '\0';

		if (strcmp(name, ".") == 0) {
			if (last)
				return sl_err(w->err, w->errlen, -EINVAL,
					      "%s: not a regular file", w->given);
			continue;
		}
		if (strcmp(name, "..") == 0) {
			char *slash = strrchr(w->cur, '/');

			snprintf(child, sizeof(child), "%.*s",
				 slash && slash != w->cur ? (int)(slash - w->cur) : 1, w->cur);
			r = enter_dir(w, NULL, child);
			if (r >= 0 && last)
				return sl_err(w->err, w->errlen, -EINVAL,
					      "%s: not a regular file", w->given);
			continue;
		}
		if (join(child, sizeof(child), w->cur, name, len) < 0)
			return sl_err(w->err, w->errlen, -ENAMETOOLONG, "%s: too long", w->given);
		if (fstatat(w->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m", w->given,
				      child);
		if (S_ISLNK(st.st_mode))
			r = follow_link(w, name, child, &st, last);
		else if (!last && !S_ISDIR(st.st_mode))
			return sl_err(w->err, w->errlen, -ENOTDIR, "%s: %s: not a directory",
				      w->given, child);
		else if (!last)
			r = enter_dir(w, name, child);
		else
			return reach_file(w, &st, child, fst);
	}
	return r;
}

int sl_safe_file_check_fd(int fd, const char *path, uid_t trusted_uid,
			  const char *const *sandbox_writable, unsigned flags, char *err,
			  size_t errlen)
{
	struct walk w = {.given = path, .trusted = trusted_uid, .flags = flags, .err = err,
			 .errlen = errlen, .dfd = -1};
	_cleanup_free_ struct rw_id *rw = NULL;
	_cleanup_free_ char *todo = NULL;
	struct stat fst;
	size_t n = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (trusted_uid == 0)
		snprintf(w.who, sizeof(w.who), "root");
	else
		snprintf(w.who, sizeof(w.who), "root or uid %u", (unsigned)trusted_uid);

	if (fstat(fd, &fst) < 0)
		return sl_err(err, errlen, negative_errno(), "%s: fstat: %m", path);
	r = check_file(&w, &fst);
	if (r < 0)
		return r;

	for (size_t i = 0; sandbox_writable && sandbox_writable[i]; i++)
		n++;
	if (n) {
		rw = calloc(n, sizeof(*rw));
		if (!rw)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			struct stat st;

			/* As a bind would: through symlinks. A path that is
			 * not there is bound nowhere. */
			if (stat(sandbox_writable[i], &st) < 0)
				continue;
			rw[w.n_rw++] = (struct rw_id){st.st_dev, st.st_ino, sandbox_writable[i]};
		}
		w.rw = rw;
	}

	/* Room for a path and a symlink's target in front of what is left. */
	w.todo_size = 2 * PATH_MAX + 2;
	todo = w.todo = malloc(w.todo_size);
	if (!todo)
		return -ENOMEM;
	if (path[0] == '/') {
		if (strlen(path) >= PATH_MAX)
			return sl_err(err, errlen, -ENAMETOOLONG, "%s: too long", path);
		snprintf(todo, w.todo_size, "%s", path);
	} else {
		/* Relative to where we are: the working directory's own
		 * ancestors count as much as any. */
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return sl_err(err, errlen, negative_errno(),
				      "%s: the working directory: %m", path);
		if (strlen(cwd) + 1 + strlen(path) >= PATH_MAX)
			return sl_err(err, errlen, -ENAMETOOLONG, "%s: too long", path);
		snprintf(todo, w.todo_size, "%s/%s", cwd, path);
	}
	r = walk_path(&w, &fst);
	sl_closep(&w.dfd);
	return r;
}

int sl_safe_file_open(const char *path, uid_t trusted_uid, const char *const *sandbox_writable,
		      unsigned flags, int *ret_fd, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	int r;

	/* O_NONBLOCK: a FIFO must not hang us until a writer comes; it is
	 * refused as not a regular file. */
	fd = open(path,
		  O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
		      (flags & SL_SAFE_FILE_NOFOLLOW ? O_NOFOLLOW : 0));
	if (fd < 0) {
		r = negative_errno();
		if (r == -ELOOP && (flags & SL_SAFE_FILE_NOFOLLOW))
			return sl_err(err, errlen, r, "%s: a symlink; name the file itself", path);
		return sl_err(err, errlen, r, "%s: %m", path);
	}
	r = sl_safe_file_check_fd(fd, path, trusted_uid, sandbox_writable, flags, err, errlen);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int sl_safe_file_check(const char *path, uid_t trusted_uid, const char *const *sandbox_writable,
		       char *err, size_t errlen)
{
	int fd = -1;
	int r = sl_safe_file_open(path, trusted_uid, sandbox_writable, 0, &fd, err, errlen);

	if (r >= 0)
		close(fd);
	return r;
}
