/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int sl_write_file(const char *path, const char *s)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(s);
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	n = write(fd, s, len);
	if (n < 0)
		return negative_errno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int sl_mkdir_parents(const char *path, mode_t mode, bool last)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (last && mkdir(buf, mode) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

int sl_mkdir_p(const char *path)
{
	return sl_mkdir_parents(path, 0755, true);
}
