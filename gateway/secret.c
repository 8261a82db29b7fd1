/* SPDX-License-Identifier: MIT */
/* Loading secret values; the contract is in secret.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "macro.h"
#include "safe-file.h"
#include "secret.h"

/* Room for the longest value plus a run of trailing newlines; a longer
 * file is refused rather than truncated. */
#define SECRET_READ_MAX (SL_SECRET_MAX_LEN + 64)

static const char *source_word(enum sl_secret_source src)
{
	switch (src) {
	case SL_SECRET_FILE:
		return "file";
	case SL_SECRET_ENV:
		return "environment variable";
	case SL_SECRET_CREDENTIAL:
		return "credential";
	}
	return "source";
}

static struct sl_secret_value *value_new(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len =
	    (sizeof(struct sl_secret_value) + SECRET_READ_MAX + 1 + page - 1) / page * page;
	struct sl_secret_value *v;
	void *map;

	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	/* Best effort: an old kernel may lack DONTDUMP, and RLIMIT_MEMLOCK may
	 * be small; the value is still wiped on free. */
	(void)madvise(map, len, MADV_DONTDUMP);
	(void)mlock(map, len);
	v = map;
	v->map_len = len;
	return v;
}

void sl_secret_value_free(struct sl_secret_value *v)
{
	size_t len;

	if (!v)
		return;
	len = v->map_len;
	explicit_bzero(v, len);
	(void)munlock(v, len);
	munmap(v, len);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_secret_value *, sl_secret_value_free)

/* Read the whole of path into v->value, after checking who can read it
 * and who could change or replace it. */
static int read_file(const struct sl_secret *sec, const char *path, uid_t sandbox_uid,
		     const char *const *sandbox_writable, struct sl_secret_value *v, char *err,
		     size_t errlen)
{
	const char *what = source_word(sec->source);
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t got = 0;
	char why[384];
	int r;

	/* O_NOFOLLOW: a symlink planted in place of the file is refused, not
	 * followed to whatever it names. */
	/* O_NONBLOCK: a fifo must not hang us until a writer comes; it is
	 * refused below like any other file that is not regular. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return sl_err(err, errlen, negative_errno(), "secret \"%s\": %s %s: %m", sec->name,
			    what, path);
	if (fstat(fd, &st) < 0)
		return sl_err(err, errlen, negative_errno(), "secret \"%s\": %s %s: fstat: %m",
			    sec->name, what, path);
	if (!S_ISREG(st.st_mode))
		return sl_err(err, errlen, -EINVAL, "secret \"%s\": %s %s: not a regular file",
			    sec->name, what, path);
	if (st.st_mode & 077)
		return sl_err(err, errlen, -EPERM,
			    "secret \"%s\": %s %s: mode %04o lets group or others read or write "
			    "it; run chmod 600 on it",
			    sec->name, what, path, (unsigned)(st.st_mode & 07777));
	if (st.st_uid == sandbox_uid)
		return sl_err(err, errlen, -EPERM,
			    "secret \"%s\": %s %s: owned by the sandbox's user (uid %u), who "
			    "could read it",
			    sec->name, what, path, (unsigned)st.st_uid);
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return sl_err(err, errlen, -EPERM,
			    "secret \"%s\": %s %s: owned by uid %u; it must be owned by root or "
			    "by sluice's user (uid %u)",
			    sec->name, what, path, (unsigned)st.st_uid, (unsigned)geteuid());
	/* Readable by nobody else is not enough: a file the sandbox could
	 * replace (its directory, or one above it, is writable by others, or
	 * lies in a --rw path) is as good as one it could read, at the next
	 * restart if not now. */
	r = sl_safe_file_check_fd(fd, path, geteuid(), sandbox_writable, SL_SAFE_FILE_NOFOLLOW, why,
				  sizeof(why));
	if (r < 0)
		return sl_err(err, errlen, r, "secret \"%s\": %s %s", sec->name, what, why);

	for (;;) {
		ssize_t n = read(fd, v->value + got, SECRET_READ_MAX + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sl_err(err, errlen, negative_errno(), "secret \"%s\": %s %s: read: %m",
				    sec->name, what, path);
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > SECRET_READ_MAX)
			return sl_err(err, errlen, -EFBIG,
				    "secret \"%s\": %s %s: longer than %d bytes", sec->name, what,
				    path, SL_SECRET_MAX_LEN);
	}
	v->len = got;
	return 0;
}

/* Strip trailing newlines, and spaces and tabs at either end, then refuse
 * what cannot go into a header. A field value's own whitespace at its ends
 * is not part of it (RFC 9110 5.5): the origin gets the value without it,
 * and an origin that echoes it echoes it without; the scrubber must look
 * for what the origin has, so the value is that from the start. */
static int check_value(const struct sl_secret *sec, const char *where, struct sl_secret_value *v,
		       char *err, size_t errlen)
{
	const char *what = source_word(sec->source);
	size_t i, lead = 0;

	while (v->len > 0 && memchr("\r\n \t", v->value[v->len - 1], 4))
		v->value[--v->len] = '\0';
	while (lead < v->len && (v->value[lead] == ' ' || v->value[lead] == '\t'))
		lead++;
	if (lead) {
		memmove(v->value, v->value + lead, v->len - lead);
		explicit_bzero(v->value + v->len - lead, lead);
		v->len -= lead;
	}
	v->value[v->len] = '\0';

	if (v->len == 0)
		return sl_err(err, errlen, -EINVAL, "secret \"%s\": %s %s: empty", sec->name, what,
			    where);
	/* RFC 9110 section 5.5: a field value is visible characters, spaces
	 * and tabs. A CR or LF would let the value add headers of its own. */
	for (i = 0; i < v->len; i++) {
		unsigned char c = (unsigned char)v->value[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return sl_err(err, errlen, -EINVAL,
				    "secret \"%s\": %s %s: control character 0x%02x at byte %zu "
				    "(a CR, LF or NUL could inject headers)",
				    sec->name, what, where, c, i);
	}
	if (v->len < SL_SECRET_MIN_LEN || v->len > SL_SECRET_MAX_LEN)
		return sl_err(err, errlen, -EINVAL,
			    "secret \"%s\": %s %s: %zu bytes; a value must have %d to %d",
			    sec->name, what, where, v->len, SL_SECRET_MIN_LEN, SL_SECRET_MAX_LEN);
	return 0;
}

/* A credential name is one path component (systemd's rule as well). */
static bool credential_name_ok(const char *name)
{
	return name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int sl_secret_load(const struct sl_secret *sec, uid_t sandbox_uid,
		   const char *const *sandbox_writable, struct sl_secret_value **ret_value,
		   char *err, size_t errlen)
{
	_cleanup_(sl_secret_value_freep) struct sl_secret_value *v = NULL;
	_cleanup_free_ char *path = NULL;
	const char *where = sec->ref, *dir, *env;
	size_t len;
	int r;

	if (err && errlen)
		err[0] = '\0';
	v = value_new();
	if (!v)
		return sl_err(err, errlen, -ENOMEM, "secret \"%s\": out of memory", sec->name);

	switch (sec->source) {
	case SL_SECRET_FILE:
		if (sec->ref[0] != '/')
			return sl_err(err, errlen, -EINVAL,
				    "secret \"%s\": file %s: not an absolute path", sec->name,
				    sec->ref);
		r = read_file(sec, sec->ref, sandbox_uid, sandbox_writable, v, err, errlen);
		if (r < 0)
			return r;
		break;
	case SL_SECRET_CREDENTIAL:
		if (!credential_name_ok(sec->ref))
			return sl_err(err, errlen, -EINVAL,
				    "secret \"%s\": credential \"%s\": not a credential name",
				    sec->name, sec->ref);
		dir = getenv("CREDENTIALS_DIRECTORY");
		if (!dir || dir[0] != '/')
			return sl_err(err, errlen, -ENOENT,
				    "secret \"%s\": credential %s: $CREDENTIALS_DIRECTORY is %s "
				    "(run sluice from a systemd unit with LoadCredential=)",
				    sec->name, sec->ref, dir ? "not an absolute path" : "not set");
		if (asprintf(&path, "%s/%s", dir, sec->ref) < 0) {
			path = NULL;
			return sl_err(err, errlen, -ENOMEM, "secret \"%s\": out of memory",
				    sec->name);
		}
		where = path;
		r = read_file(sec, path, sandbox_uid, sandbox_writable, v, err, errlen);
		if (r < 0)
			return r;
		break;
	case SL_SECRET_ENV:
		env = getenv(sec->ref);
		if (!env)
			return sl_err(err, errlen, -ENOENT,
				    "secret \"%s\": environment variable %s: not set", sec->name,
				    sec->ref);
		len = strlen(env);
		if (len > SECRET_READ_MAX)
			return sl_err(err, errlen, -EFBIG,
				    "secret \"%s\": environment variable %s: longer than %d bytes",
				    sec->name, sec->ref, SL_SECRET_MAX_LEN);
		memcpy(v->value, env, len);
		v->len = len;
		break;
	default:
		return sl_err(err, errlen, -EINVAL, "secret \"%s\": unknown source", sec->name);
	}

	r = check_value(sec, where, v, err, errlen);
	if (r < 0)
		return r;
	*ret_value = TAKE_PTR(v);
	return 0;
}
