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
	struct rw_id *rw;
	size_t n_rw;
	char *err;
	size_t errlen;
	char who[48]; /* "root", or "root or uid N" */
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

static int open_root(const struct walk *w, int *ret_fd)
{
	struct stat st;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return sl_err(w->err, w->errlen, negative_errno(), "%s: /: %m", w->given);
	if (fstat(fd, &st) < 0) {
		r = sl_err(w->err, w->errlen, negative_errno(), "%s: /: %m", w->given);
		close(fd);
		return r;
	}
	r = check_dir(w, &st, "/");
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/*
 * Resolve path one component at a time from /, as the kernel would,
 * checking every directory entered and every symlink followed, until the
 * last component: that entry must be the file fd (fst) is open on.
 */
static int walk_path(struct walk *w, char *todo, size_t todo_size, const struct stat *fst,
		     unsigned flags)
{
	_cleanup_close_ int dfd = -1;
	char cur[PATH_MAX], child[PATH_MAX], target[PATH_MAX];
	bool cur_open = false; /* cur is a (sticky) directory others can write */
	unsigned links = 0;
	size_t pos = 0;
	int r;

	r = open_root(w, &dfd);
	if (r < 0)
		return r;
	strcpy(cur, "/");
	for (;;) {
		const char *comp;
		size_t len;
		struct stat st;
		bool last;

		while (todo[pos] == '/')
			pos++;
		if (!todo[pos])
			return sl_err(w->err, w->errlen, -EINVAL, "%s: not a regular file",
				      w->given);
		comp = todo + pos;
		len = strcspn(comp, "/");
		pos += len;
		last = todo[pos] == '\0';

		if (len == 1 && comp[0] == '.')
			continue;
		if (len == 2 && comp[0] == '.' && comp[1] == '.') {
			char *slash = strrchr(cur, '/');
			int pfd = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

			if (pfd < 0)
				return sl_err(w->err, w->errlen, negative_errno(), "%s: %s/..: %m",
					      w->given, cur);
			close(dfd);
			dfd = pfd;
			if (slash == cur)
				cur[1] = '\0';
			else if (slash)
				*slash = '\0';
			if (fstat(dfd, &st) < 0)
				return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m",
					      w->given, cur);
			r = check_dir(w, &st, cur);
			if (r < 0)
				return r;
			cur_open = dir_open_to_others(&st);
			if (last)
				return sl_err(w->err, w->errlen, -EINVAL,
					      "%s: not a regular file", w->given);
			continue;
		}
		if (len >= NAME_MAX + 1)
			return sl_err(w->err, w->errlen, -ENAMETOOLONG, "%s: a name is too long",
				      w->given);
		if (join(child, sizeof(child), cur, comp, len) < 0)
			return sl_err(w->err, w->errlen, -ENAMETOOLONG, "%s: too long", w->given);
		{
			char name[NAME_MAX + 1];

			memcpy(name, comp, len);
			name[len] = '\0';
			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return sl_err(w->err, w->errlen, negative_errno(), "%s: %s: %m",
					      w->given, child);

			if (S_ISLNK(st.st_mode)) {
				ssize_t n;
				char *next;
				size_t rest_len = strlen(todo + pos);

				if (last && (flags & SL_SAFE_FILE_NOFOLLOW))
					return sl_err(w->err, w->errlen, -ELOOP,
						      "%s: a symlink; name the file itself",
						      w->given);
				/* Whoever owns a symlink in a sticky
				 * directory can replace it; elsewhere only
				 * who can write the directory can, and
				 * that was checked. Owned by root or us
				 * keeps one rule for both. */
				if (!owner_ok(w, st.st_uid))
					return sl_err(w->err, w->errlen, -EPERM,
						      "%s: the symlink %s on its way is owned by uid "
						      "%u, who could point it elsewhere (chown -h "
						      "root %s)",
						      w->given, child, (unsigned)st.st_uid, child);
				if (++links > MAX_SYMLINKS)
					return sl_err(w->err, w->errlen, -ELOOP,
						      "%s: too many symlinks", w->given);
				n = readlinkat(dfd, name, target, sizeof(target));
				if (n < 0)
					return sl_err(w->err, w->errlen, negative_errno(),
						      "%s: %s: %m", w->given, child);
				if ((size_t)n >= sizeof(target) ||
				    (size_t)n + 1 + rest_len + 1 > todo_size)
					return sl_err(w->err, w->errlen, -ENAMETOOLONG,
						      "%s: %s: its target is too long", w->given,
						      child);
				/* The target, then what was left after the
				 * symlink, replaces the path still to walk. */
				next = malloc(todo_size);
				if (!next)
					return -ENOMEM;
				/* todo + pos is "" or "/rest". */
				snprintf(next, todo_size, "%.*s%s", (int)n, target, todo + pos);
				memcpy(todo, next, strlen(next) + 1);
				free(next);
				pos = 0;
				if (target[0] == '/') {
					close(TAKE_FD(dfd));
					r = open_root(w, &dfd);
					if (r < 0)
						return r;
					strcpy(cur, "/");
					cur_open = false;
				}
				continue;
			}

			if (!last) {
				struct stat dst;
				int nfd;

				if (!S_ISDIR(st.st_mode))
					return sl_err(w->err, w->errlen, -ENOTDIR,
						      "%s: %s: not a directory", w->given, child);
				nfd = openat(dfd, name,
					     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (nfd < 0)
					return sl_err(w->err, w->errlen, negative_errno(),
						      "%s: %s: %m", w->given, child);
				close(dfd);
				dfd = nfd;
				if (fstat(dfd, &dst) < 0)
					return sl_err(w->err, w->errlen, negative_errno(),
						      "%s: %s: %m", w->given, child);
				r = check_dir(w, &dst, child);
				if (r < 0)
					return r;
				memcpy(cur, child, strlen(child) + 1);
				cur_open = dir_open_to_others(&dst);
				continue;
			}
		}

		/* The last component: it must be the file that was opened. */
		if (st.st_dev != fst->st_dev || st.st_ino != fst->st_ino)
			return sl_err(w->err, w->errlen, -ESTALE,
				      "%s: changed while it was checked (try again)", w->given);
		if (cur_open && fst->st_nlink > 1)
			return sl_err(w->err, w->errlen, -EPERM,
				      "%s: it has %lu links and lies in %s, which others can write: "
				      "a link made there could stand for another file (keep it in a "
				      "directory only %s can write)",
				      w->given, (unsigned long)fst->st_nlink, cur, w->who);
		{
			const struct rw_id *rw = rw_match(w, fst);

			if (rw)
				return refuse_rw(w, child, rw);
		}
		return 0;
	}
}

int sl_safe_file_check_fd(int fd, const char *path, uid_t trusted_uid,
			  const char *const *sandbox_writable, unsigned flags, char *err,
			  size_t errlen)
{
	struct walk w = {.given = path, .trusted = trusted_uid, .err = err, .errlen = errlen};
	_cleanup_free_ struct rw_id *rw = NULL;
	_cleanup_free_ char *todo = NULL;
	/* Room for a path and a symlink's target in front of what is left. */
	const size_t todo_size = 2 * PATH_MAX + 2;
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

	todo = malloc(todo_size);
	if (!todo)
		return -ENOMEM;
	if (path[0] == '/') {
		if (strlen(path) >= PATH_MAX)
			return sl_err(err, errlen, -ENAMETOOLONG, "%s: too long", path);
		snprintf(todo, todo_size, "%s", path);
	} else {
		/* Relative to where we are: the working directory's own
		 * ancestors count as much as any. */
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return sl_err(err, errlen, negative_errno(),
				      "%s: the working directory: %m", path);
		if (strlen(cwd) + 1 + strlen(path) >= PATH_MAX)
			return sl_err(err, errlen, -ENAMETOOLONG, "%s: too long", path);
		snprintf(todo, todo_size, "%s/%s", cwd, path);
	}
	return walk_path(&w, todo, todo_size, &fst, flags);
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
