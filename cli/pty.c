/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "macro.h"
#include "pty.h"

int sl_pty_open(struct sl_pty *p, int tty, char *err, size_t errlen)
{
	struct winsize ws;
	struct termios t;
	char name[64];
	int m, sl;

	*p = (struct sl_pty){.master = -1, .slave = -1, .tty = tty};
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0) {
		snprintf(err, errlen, "creating a pty: %s", strerror(errno));
		if (m >= 0)
			close(m);
		return -errno;
	}
	sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sl < 0) {
		int r = -errno;

		snprintf(err, errlen, "opening %s: %s", name, strerror(errno));
		close(m);
		return r;
	}
	/* The command's line discipline does what the operator's did. */
	if (tcgetattr(tty, &t) == 0)
		(void)tcsetattr(sl, TCSANOW, &t);
	if (ioctl(tty, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(sl, TIOCSWINSZ, &ws);
	(void)fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
	p->master = m;
	p->slave = sl;
	return 0;
}

int sl_pty_raw(struct sl_pty *p)
{
	struct termios t;

	if (tcgetattr(p->tty, &p->saved) < 0)
		return -errno;
	t = p->saved;
	cfmakeraw(&t);
	if (tcsetattr(p->tty, TCSANOW, &t) < 0)
		return -errno;
	p->raw = true;
	return 0;
}

void sl_pty_winsize(const struct sl_pty *p)
{
	struct winsize ws;

	if (p->master >= 0 && ioctl(p->tty, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(p->master, TIOCSWINSZ, &ws);
}

void sl_pty_restore(struct sl_pty *p)
{
	if (p->raw)
		(void)tcsetattr(p->tty, TCSADRAIN, &p->saved);
	p->raw = false;
}

void sl_pty_close(struct sl_pty *p)
{
	sl_pty_restore(p);
	sl_closep(&p->master);
	sl_closep(&p->slave);
	p->master = p->slave = -1;
}
