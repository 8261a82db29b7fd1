/* SPDX-License-Identifier: MIT */
/*
 * A pty of the sandbox's own, for a command started from a terminal.
 *
 * The command must never hold the operator's terminal: with it, TIOCSTI
 * (still enabled on many kernels) types into the operator's shell, and a
 * shared process group lets it stop or signal that shell's jobs. It gets
 * the slave side of a new pty instead, and sluice relays bytes between the
 * operator's terminal (put in raw mode, so ^C, ^Z and the window size reach
 * the command's line discipline, where they act inside the sandbox) and
 * the master side, as ssh -t does.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

struct sl_pty {
	int master; /* non-blocking, CLOEXEC */
	int slave;  /* for the command; the caller closes it once it has started */
	int tty;    /* the operator's terminal (not owned) */
	struct termios saved;
	bool raw;
};

/* A pty whose slave starts with the settings and window size of `tty`.
 * errlen >= 128. */
int sl_pty_open(struct sl_pty *p, int tty, char *err, size_t errlen);
/* The operator's terminal in raw mode, until sl_pty_restore(). */
int sl_pty_raw(struct sl_pty *p);
/* The operator's window size, copied to the pty (on SIGWINCH). */
void sl_pty_winsize(const struct sl_pty *p);
/* The operator's terminal as it was; idempotent. */
void sl_pty_restore(struct sl_pty *p);
/* Restore, close both sides. Accepts a pty never opened (fds -1). */
void sl_pty_close(struct sl_pty *p);
