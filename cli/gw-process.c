/* SPDX-License-Identifier: MIT */
/* What the gateway process keeps of its starter (gw-process.h), for
 * `sluice gateway` and for the gateway process of `run` and `attach` alike. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gw-process.h"
#include "err.h"
#include "macro.h"

int sl_cli_gateway_root(char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (mkdir("/run/sluice", 0755) < 0 && errno != EEXIST)
		return sl_err(err, errlen, -errno, "/run/sluice: %m");
	if (lstat("/run/sluice", &st) < 0)
		return sl_err(err, errlen, -errno, "/run/sluice: %m");
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return sl_err(err, errlen, -EPERM,
			      "/run/sluice: not a directory of root's that only root can write");
	/* Made 0555 whatever the umask. */
	if (mkdir(SL_GW_ROOT, 0555) == 0 && chmod(SL_GW_ROOT, 0555) < 0)
		return sl_err(err, errlen, -errno, SL_GW_ROOT ": %m");
	fd = open(SL_GW_ROOT, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return sl_err(err, errlen, -EPERM,
			      SL_GW_ROOT ": not a directory (a link?): the gateway is chrooted "
					 "there; remove it");
	if (fd < 0 || fstat(fd, &st) < 0)
		return sl_err(err, errlen, -errno, SL_GW_ROOT ": %m");
	if (st.st_uid != 0 || st.st_gid != 0 || (st.st_mode & 07777) != 0555)
		return sl_err(err, errlen, -EPERM,
			      SL_GW_ROOT ": must be root:root, mode 0555 (rmdir it: sluice makes "
					 "it again)");
	d = fdopendir(TAKE_FD(fd));
	if (!d)
		return sl_err(err, errlen, -errno, SL_GW_ROOT ": %m");
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			r = sl_err(err, errlen, -ENOTEMPTY,
				   SL_GW_ROOT ": must be empty, holds '%s' (the gateway is "
					      "chrooted there)",
				   e->d_name);
			break;
		}
	closedir(d);
	return r;
}

static int terminal_write_only(int fd)
{
	char path[32];
	int flags = fcntl(fd, F_GETFL), w, r = 0;

	if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY || !isatty(fd))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	w = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (w < 0)
		return -errno;
	if (dup2(w, fd) < 0)
		r = -errno;
	close(w);
	return r;
}

int sl_cli_gateway_stdio(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), r = 0;

	if (null < 0)
		return -errno;
	if (null != STDIN_FILENO) {
		if (dup2(null, STDIN_FILENO) < 0)
			r = -errno;
		close(null);
	}
	return r ?: terminal_write_only(STDOUT_FILENO) ?: terminal_write_only(STDERR_FILENO);
}

void sl_cli_gateway_wipe_environ(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
}

int sl_cli_inherited_find(struct sl_cli_inherited *ret)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int r = 0;

	*ret = (struct sl_cli_inherited){0};
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), *grown;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd < 3 || fd == dirfd(d))
			continue;
		grown = realloc(ret->fd, (ret->n + 1) * sizeof(int));
		if (!grown) {
			r = -ENOMEM;
			break;
		}
		ret->fd = grown;
		ret->fd[ret->n++] = fd;
	}
	closedir(d);
	if (r < 0)
		sl_cli_inherited_close(ret);
	return r;
}

void sl_cli_inherited_close(struct sl_cli_inherited *in)
{
	for (size_t i = 0; i < in->n; i++)
		close(in->fd[i]);
	free(in->fd);
	*in = (struct sl_cli_inherited){0};
}
