/* SPDX-License-Identifier: MIT */
/* The control sockets' directory and the listening socket (control-sock.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control-sock.h"
#include "err.h"
#include "macro.h"

static char made[sizeof(((struct sockaddr_un *)0)->sun_path)];

int sl_cli_ctl_dir(bool create, char *err, size_t errlen)
{
	struct stat st;

	if (create) {
		if (mkdir("/run/sluice", 0755) < 0 && errno != EEXIST)
			return sl_err(err, errlen, -errno, "/run/sluice: %m");
		if (mkdir(SL_CTL_DIR, 0700) < 0 && errno != EEXIST)
			return sl_err(err, errlen, -errno, SL_CTL_DIR ": %m");
	}
	if (lstat("/run/sluice", &st) < 0)
		return sl_err(err, errlen, -errno, "/run/sluice: %m");
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return sl_err(err, errlen, -EPERM,
			      "/run/sluice: not a directory of root's that only root can write");
	if (lstat(SL_CTL_DIR, &st) < 0)
		return sl_err(err, errlen, -errno, SL_CTL_DIR ": %m");
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 07777) != 0700)
		return sl_err(err, errlen, -EPERM,
			      SL_CTL_DIR ": must be a directory of root's, mode 0700 (rmdir it: "
					 "sluice makes it again)");
	return 0;
}

/* Is someone listening there? */
static bool live(const struct sockaddr_un *sun)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	return fd >= 0 && connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0;
}

int sl_cli_ctl_listen(char *err, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	mode_t old;
	int r;

	r = sl_cli_ctl_dir(true, err, errlen);
	if (r < 0)
		return r;
	snprintf(sun.sun_path, sizeof(sun.sun_path), SL_CTL_DIR "/%ld.sock", (long)getpid());
	if (live(&sun))
		return sl_err(err, errlen, -EADDRINUSE,
			      "%s: another sluice serves there (a process of this pid in another "
			      "pid namespace?)",
			      sun.sun_path);
	/* A stale one: its maker was killed before it could remove it. */
	if (unlink(sun.sun_path) < 0 && errno != ENOENT)
		return sl_err(err, errlen, -errno, "%s: %m", sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sl_err(err, errlen, -errno, "control socket: %m");
	/* Never wider than 0600, not even between bind and chmod (the
	 * directory is 0700 anyway). */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (r < 0)
		return sl_err(err, errlen, -errno, "%s: %m", sun.sun_path);
	snprintf(made, sizeof(made), "%s", sun.sun_path);
	if (chmod(sun.sun_path, 0600) < 0 || listen(fd, 16) < 0) {
		r = -errno;
		sl_cli_ctl_remove();
		return sl_err(err, errlen, r, "%s: %s", sun.sun_path, strerror(-r));
	}
	return TAKE_FD(fd);
}

void sl_cli_ctl_remove(void)
{
	if (made[0])
		(void)unlink(made);
	made[0] = '\0';
}
