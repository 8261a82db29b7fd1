/* SPDX-License-Identifier: MIT */
/*
 * sluice run's supervision loop: while the command runs, relay its pty,
 * forward the signals sluice takes, reload the policy on a SIGHUP that a
 * process sent, and end the command when the gateway can no longer audit
 * or is gone. A file of its own because it is the one part of run that
 * runs after setup and before teardown (run.c does both around it), and
 * it needs no more of them than struct run (run-internal.h).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "policy-file.h"
#include "pty.h"
#include "run-internal.h"
#include "sandbox-serve.h"

/* The pty relay: the operator's keys to the command, its output back. */
struct relay {
	char in[4096]; /* read from the operator, not yet taken by the pty */
	size_t in_len, in_off;
	bool in_eof, out_eof;
	int out; /* where the pty's output goes: the fd it stands for */
};

static void relay_out(struct run *r, struct relay *rl)
{
	char buf[16384];

	/* Bounded: the loop must get back to signals and the operator. */
	for (int i = 0; i < 16 && !rl->out_eof; i++) {
		ssize_t n = read(r->pty.master, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			rl->out_eof = true; /* EIO: every slave fd is closed */
			return;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(rl->out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break; /* the operator's side is gone: drop it */
			off += w;
		}
	}
}

static void relay_in(struct run *r, struct relay *rl, bool readable)
{
	if (rl->in_len == 0 && readable) {
		ssize_t n = read(STDIN_FILENO, rl->in, sizeof(rl->in));

		if (n <= 0 && !(n < 0 && errno == EINTR))
			rl->in_eof = true;
		else if (n > 0)
			rl->in_len = (size_t)n, rl->in_off = 0;
	}
	while (rl->in_len > 0) {
		ssize_t w = write(r->pty.master, rl->in + rl->in_off, rl->in_len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			rl->in_len = 0;
			rl->in_eof = true;
			return;
		}
		rl->in_off += (size_t)w;
		rl->in_len -= (size_t)w;
	}
}

/* One signal: 1 when it was the init's exit (*status set), else 0. */
static int on_signal(struct run *r, const struct signalfd_siginfo *si, int *status)
{
	int sig = (int)si->ssi_signo;

	if (sig == SIGCHLD) {
		pid_t p;
		int st;

		while ((p = waitpid(-1, &st, WNOHANG)) > 0)
			if (!sl_serve_gateway_reaped(&r->serve, p, st) && p == r->proc.pid) {
				*status = st;
				return 1;
			}
		return 0;
	}
	if (sig == SIGWINCH) {
		sl_pty_winsize(&r->pty);
		return 0;
	}
	/* Only a process asking for it reloads: a hangup of the terminal
	 * (the kernel's SIGHUP) is not the operator's word, and with it the
	 * command's terminal is gone, so it is told. */
	if (sig == SIGHUP && sl_cli_hup_is_request(si->ssi_code)) {
		sl_serve_reload(&r->serve, r->args.policy);
		return 0;
	}
	/* A command that ignores them (and holds the terminal raw) must not
	 * leave the operator only SIGKILL, which would skip the teardown: the
	 * second one ends the sandbox (its init, and with it everything). */
	if ((sig == SIGINT || sig == SIGTERM) && ++r->stops >= 2) {
		fprintf(stderr, "sluice run: signal %d again: ending the sandbox\n", sig);
		(void)kill(r->proc.pid, SIGKILL);
		return 0;
	}
	(void)kill(r->proc.pid, sig);
	return 0;
}

/* The gateway can no longer write the audit log and decides nothing more
 * (it said why): whatever the command does from here would go unaudited,
 * so it ends now, and so does run, with RUN_EXIT_AUDIT. */
static void end_unaudited(struct run *r)
{
	int err = r->serve.audit_err;

	r->audit_failed = true;
	fprintf(stderr,
		"sluice run: the audit log cannot be written (%s): ending the command "
		"(exit %d)\n",
		strerror(-err), RUN_EXIT_AUDIT);
	(void)kill(r->proc.pid, SIGKILL);
}

/* The gateway's process died (a bug, a forbidden system call its seccomp
 * filter killed it for, someone's kill): nothing serves the sandbox, which
 * stays fenced (its port is simply closed), and the command is ended as on
 * an audit failure, and run with RUN_EXIT_SETUP. */
static void end_gatewayless(struct run *r)
{
	char how[64];

	sl_serve_gateway_death(&r->serve, how, sizeof(how));
	r->gateway_died = true;
	fprintf(stderr, "sluice run: the gateway (pid %d) died (%s): ending the command (exit %d)\n",
		(int)r->serve.gw_pid, how, RUN_EXIT_SETUP);
	(void)kill(r->proc.pid, SIGKILL);
}

static void gateway_event(struct run *r)
{
	switch (sl_serve_gateway_event(&r->serve)) {
	case SL_SERVE_AUDIT_FAILED:
		end_unaudited(r);
		break;
	case SL_SERVE_GATEWAY_DIED:
		end_gatewayless(r);
		break;
	case SL_SERVE_NOTHING:
		break;
	}
}

/* Wait for the command, relaying its pty and forwarding signals; its wait
 * status. */
int sl_run_supervise(struct run *r, const sigset_t *set)
{
	_cleanup_close_ int sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	struct relay rl = {.in_eof = r->pty.master < 0 || !isatty(STDIN_FILENO),
			   .out_eof = r->pty.master < 0,
			   /* stdout when it is the terminal the pty replaced, else stderr */
			   .out = isatty(STDOUT_FILENO) || !isatty(STDERR_FILENO) ? STDOUT_FILENO
										: STDERR_FILENO};
	int status = 0;

	/* A reader of our stdout that went away (`sluice run ... | head`) must
	 * not kill us mid-run: the write says EPIPE. The command was started
	 * with SIGPIPE at its default already. */
	(void)signal(SIGPIPE, SIG_IGN);

	if (sfd < 0) {
		fprintf(stderr, "sluice run: signalfd: %m\n");
		(void)kill(r->proc.pid, SIGKILL);
	}
	if (r->pty.master >= 0 && isatty(STDIN_FILENO) && sl_pty_raw(&r->pty) < 0)
		fprintf(stderr, "sluice run: the terminal stays in its mode: %m\n");
	for (;;) {
		struct pollfd p[4] = {{.fd = sfd, .events = POLLIN},
				      {.fd = -1, .events = POLLIN},
				      {.fd = -1, .events = POLLIN},
				      {.fd = sl_serve_gateway_fd(&r->serve), .events = POLLIN}};
		struct signalfd_siginfo si;

		if (!rl.in_eof && rl.in_len == 0)
			p[1].fd = STDIN_FILENO;
		if (!rl.out_eof) {
			p[2].fd = r->pty.master;
			p[2].events = POLLIN | (rl.in_len ? POLLOUT : 0);
		}
		if (poll(p, 4, sfd < 0 ? 100 : -1) < 0 && errno != EINTR)
			break;
		if (p[3].revents)
			gateway_event(r);
		if (p[2].revents)
			relay_out(r, &rl);
		if (p[1].revents || (p[2].revents & POLLOUT))
			relay_in(r, &rl, p[1].revents != 0);
		if (sfd < 0) {
			if (waitpid(r->proc.pid, &status, WNOHANG) == r->proc.pid)
				break;
			continue;
		}
		if (!(p[0].revents & POLLIN))
			continue;
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (on_signal(r, &si, &status))
				goto done;
	}
done:
	/* What the command wrote last is still in the pty. */
	for (int i = 0; i < 64 && !rl.out_eof; i++)
		relay_out(r, &rl);
	sl_pty_restore(&r->pty);
	return status;
}

int sl_run_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return RUN_EXIT_SETUP;
}
