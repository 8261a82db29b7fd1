/* SPDX-License-Identifier: MIT */
/*
 * The control socket's client (docs/control.md): sluice ps, reload,
 * pending, approve, deny. Every running sandbox (`run`, `attach`) and
 * `sluice gateway` serves a socket under SL_CTL_DIR; these commands ask
 * each in turn. What comes back is checked again before it is printed
 * (printable ASCII only): the server escapes what the sandbox sent, but
 * it is the gateway, which the sandbox may have taken over, and the
 * operator's terminal must not be its to drive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control-proto.h"
#include "control-sock.h"
#include "macro.h"

/* The most sockets asked, and the most bytes read from one. */
#define MAX_SOCKETS 1024
#define ANSWER_MAX (1u << 20)
/* How long an answer may take: a reload waits for the supervisor, which
 * waits up to 10 s for the gateway; the rest are the gateway's alone, and
 * one that is wedged must not hold `sluice ps` for long. */
#define ANSWER_SECONDS 5
#define RELOAD_SECONDS 40

struct answer {
	char *buf; /* every line, '\n'-separated, NUL-terminated */
	size_t len;
	bool ok;
	const char *last; /* the final line's text, after "ok"/"error" */
};

static void answer_free(struct answer *a)
{
	free(a->buf);
	*a = (struct answer){0};
}

struct target {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	long sock_pid;
	/* From `info`. */
	char name[128], policy[1024];
	long pid, gateway_pid;
	unsigned long long started, allowed, denied;
	unsigned pending;
};

static void usage(FILE *f)
{
	fputs("usage: sluice ps\n"
	      "       sluice reload NAME|PID\n"
	      "       sluice pending\n"
	      "       sluice approve ID\n"
	      "       sluice deny ID\n"
	      "\n"
	      "Speak to the running sandboxes (sluice run, sluice attach) and gateways\n"
	      "(sluice gateway) through their control sockets under " SL_CTL_DIR ",\n"
	      "which only root can use.\n"
	      "  ps       one line per sandbox: name, supervisor pid, policy file, uptime,\n"
	      "           requests allowed and denied, requests waiting for approval\n"
	      "  reload   reload that sandbox's policy file as SIGHUP does; a policy that\n"
	      "           does not load is reported (file:line) and the running one stays\n"
	      "  pending  the requests held for approval (approve: true), one a line:\n"
	      "           ID SANDBOX METHOD HOST:PORT PATH BODY_SIZE BODY_START WAITED TIMEOUT\n"
	      "  approve  let the held request ID go; deny: answer it 403\n"
	      "Exit status: 0 done, 1 refused (no such sandbox or ID, policy not reloaded),\n"
	      "2 usage, 4 not root or no socket could be reached.\n",
	      f);
}

/* Printed as it came only when every byte is printable ASCII. */
static void print_line(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(sl_ctl_printable(s, 1) ? *s : '?', f);
	fputc('\n', f);
}

/* A line of ours that holds what a server sent (an error, a name, a
 * policy): formatted, then printed as print_line does, cut at 4 KiB. */
static _printf_(2, 3) void say(FILE *f, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	print_line(f, line);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Readable before the deadline? False with errno EAGAIN when not. */
static bool wait_readable(int fd, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	for (;;) {
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			break;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return true; /* recv says what is wrong */
	}
	errno = EAGAIN;
	return false;
}

/* One request, its whole answer. 0, -ECONNREFUSED (nobody listens: stale),
 * -ENOENT (gone), another negative errno. */
static int ask(const char *path, const char *line, struct answer *ret)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = strcmp(line, "reload") ? ANSWER_SECONDS : RELOAD_SECONDS};
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct answer a = {0};
	size_t cap = 0, n = strlen(line);
	int64_t deadline = now_ms() + (int64_t)tv.tv_sec * 1000;
	struct iovec iov[2] = {{.iov_base = (void *)line, .iov_len = n},
			       {.iov_base = "\n", .iov_len = 1}};
	char *p, *end;

	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -errno;
	/* The line and its end in one write: the server reads one message. */
	if (sendmsg(fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = 2}, MSG_NOSIGNAL) !=
	    (ssize_t)n + 1)
		return -EIO;
	for (;;) {
		ssize_t k;

		if (a.len + 4096 + 1 > cap) {
			char *grown;

			if (cap >= ANSWER_MAX) {
				free(a.buf);
				return -EMSGSIZE;
			}
			grown = realloc(a.buf, cap = cap ? cap * 2 : 8192);
			if (!grown) {
				free(a.buf);
				return -ENOMEM;
			}
			a.buf = grown;
		}
		/* The time is for the whole answer: a socket that trickles a
		 * byte at a time (the gateway is the sandbox's to take over)
		 * must not hold this command, and every other sandbox's
		 * answer after it, for longer. */
		k = wait_readable(fd, deadline) ? recv(fd, a.buf + a.len, cap - a.len - 1, 0) : -1;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int r = errno == EAGAIN ? -ETIMEDOUT : -errno;

			free(a.buf);
			return r;
		}
		if (k == 0)
			break;
		a.len += (size_t)k;
	}
	if (!a.buf) {
		return -EPROTO;
	}
	a.buf[a.len] = '\0';
	/* The final line: the last one that is not data. */
	end = a.buf + a.len;
	if (end > a.buf && end[-1] == '\n')
		*--end = '\0';
	p = strrchr(a.buf, '\n');
	p = p ? p + 1 : a.buf;
	if (!strncmp(p, "ok", 2) && (p[2] == '\0' || p[2] == ' ')) {
		a.ok = true;
		a.last = p[2] ? p + 3 : "";
	} else if (!strncmp(p, "error ", 6)) {
		a.last = p + 6;
	} else {
		free(a.buf);
		return -EPROTO;
	}
	*ret = a;
	return 0;
}

/* Each data line of a ("* " stripped), in order. */
static const char *next_data(struct answer *a, const char **cursor)
{
	const char *p = *cursor ? *cursor : a->buf;

	while (p && *p) {
		const char *nl = strchr(p, '\n');

		*cursor = nl ? nl + 1 : NULL;
		if (!strncmp(p, "* ", 2)) {
			static char line[4096];
			size_t n = nl ? (size_t)(nl - p) : strlen(p);

			n = n - 2 < sizeof(line) - 1 ? n - 2 : sizeof(line) - 1;
			memcpy(line, p + 2, n);
			line[n] = '\0';
			return line;
		}
		p = *cursor;
	}
	return NULL;
}

static bool root_or_say(const char *cmd)
{
	if (geteuid() == 0)
		return true;
	fprintf(stderr, "sluice %s: the control sockets are root's (" SL_CTL_DIR "): run it as "
			"root\n",
		cmd);
	return false;
}

/* Every socket there, the stale ones (their maker killed before it could
 * remove them) removed on the way. How many, or a negative errno. */
static int list_sockets(const char *cmd, struct target *t, size_t max)
{
	char err[256];
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (sl_cli_ctl_dir(false, err, sizeof(err)) < 0) {
		if (access(SL_CTL_DIR, F_OK) < 0 && errno == ENOENT)
			return 0;
		fprintf(stderr, "sluice %s: %s\n", cmd, err);
		return -EPERM;
	}
	d = opendir(SL_CTL_DIR);
	if (!d) {
		fprintf(stderr, "sluice %s: " SL_CTL_DIR ": %m\n", cmd);
		return -errno;
	}
	while ((e = readdir(d)) && (size_t)n < max) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, ".sock") || strlen(e->d_name) > 32)
			continue;
		memset(&t[n], 0, sizeof(t[n]));
		snprintf(t[n].path, sizeof(t[n].path), SL_CTL_DIR "/%ld.sock", pid);
		t[n].sock_pid = pid;
		n++;
	}
	closedir(d);
	return n;
}

static void stale(const char *cmd, const struct target *t)
{
	/* Nobody listens and its maker is gone: a SIGKILLed one's. */
	if (kill((pid_t)t->sock_pid, 0) < 0 && errno == ESRCH && unlink(t->path) == 0)
		fprintf(stderr, "sluice %s: removed %s, left by a sluice that was killed\n", cmd,
			t->path);
}

static bool parse_info(struct target *t, const char *line)
{
	return sscanf(line, "%127s %ld %ld %1023s %llu %llu %llu %u", t->name, &t->pid,
		      &t->gateway_pid, t->policy, &t->started, &t->allowed, &t->denied,
		      &t->pending) == 8;
}

/* The pids it claims are those its socket's name says (root named it):
 * the supervisor's, and the gateway the supervisor itself or its child.
 * What `info` says is the gateway's word, and a gateway taken over by its
 * sandbox could claim another's pid, to be picked for it or make it
 * ambiguous. */
static bool pids_true(const struct target *t)
{
	char path[64], buf[512], *p;
	_cleanup_close_ int fd = -1;
	ssize_t n;
	long ppid;

	if (t->pid != t->sock_pid)
		return false;
	if (t->gateway_pid == t->sock_pid)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/stat", t->gateway_pid);
	fd = t->gateway_pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return false;
	return sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == t->sock_pid;
}

/* Every live sandbox, with its info. */
static int gather(const char *cmd, struct target **ret)
{
	struct target *t = calloc(MAX_SOCKETS, sizeof(*t));
	int n, live = 0;

	if (!t)
		return -ENOMEM;
	n = list_sockets(cmd, t, MAX_SOCKETS);
	for (int i = 0; i < n; i++) {
		struct answer a;
		const char *cur = NULL, *line;
		int r = ask(t[i].path, "info", &a);

		if (r == -ECONNREFUSED) {
			stale(cmd, &t[i]);
			continue;
		}
		if (r < 0) {
			if (r != -ENOENT)
				fprintf(stderr, "sluice %s: %s: %s\n", cmd, t[i].path, strerror(-r));
			continue;
		}
		line = a.ok ? next_data(&a, &cur) : NULL;
		if (line && parse_info(&t[i], line) && pids_true(&t[i]))
			t[live++] = t[i];
		else if (line && parse_info(&t[i], line))
			fprintf(stderr, "sluice %s: %s: claims pid %ld (gateway %ld), not its own: "
					"left out\n",
				cmd, t[i].path, t[i].pid, t[i].gateway_pid);
		else
			say(stderr, "sluice %s: %s: %s", cmd, t[i].path,
			    a.ok ? "an answer that makes no sense" : a.last);
		answer_free(&a);
	}
	*ret = t;
	return n < 0 ? n : live;
}

static void uptime(unsigned long long started, char *buf, size_t len)
{
	unsigned long long now = (unsigned long long)time(NULL);
	unsigned long long s = now > started ? now - started : 0;

	if (s < 60)
		snprintf(buf, len, "%llus", s);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
	else
		snprintf(buf, len, "%lluh%02llum", s / 3600, s / 60 % 60);
}

static int cmd_ps(void)
{
	_cleanup_free_ struct target *t = NULL;
	int n = gather("ps", &t);
	char up[32];

	if (n < 0)
		return SL_EXIT_FAILURE;
	printf("NAME PID POLICY UPTIME ALLOWED DENIED PENDING\n");
	for (int i = 0; i < n; i++) {
		uptime(t[i].started, up, sizeof(up));
		say(stdout, "%s %ld %s %s %llu %llu %u", t[i].name, t[i].pid, t[i].policy, up,
		    t[i].allowed, t[i].denied, t[i].pending);
	}
	return SL_EXIT_OK;
}

/* The one sandbox NAME|PID names; NULL (said why) when none or several. */
static const struct target *pick(const char *cmd, const struct target *t, int n, const char *what)
{
	char *end;
	long pid = strtol(what, &end, 10);
	bool by_pid = *what && !*end && pid > 0;
	const struct target *found = NULL;
	int matches = 0;

	for (int i = 0; i < n; i++)
		if (by_pid ? t[i].pid == pid || t[i].gateway_pid == pid : !strcmp(t[i].name, what)) {
			found = &t[i];
			matches++;
		}
	if (matches == 1)
		return found;
	if (!matches) {
		fprintf(stderr, "sluice %s: no such sandbox: '%s' (`sluice ps` lists them)\n", cmd,
			what);
		return NULL;
	}
	fprintf(stderr, "sluice %s: '%s' is ambiguous: %d sandboxes are called so; name one by its "
			"pid:\n",
		cmd, what, matches);
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].name, what))
			say(stderr, "  pid %ld  policy %s", t[i].pid, t[i].policy);
	return NULL;
}

static int cmd_reload(const char *what)
{
	_cleanup_free_ struct target *t = NULL;
	int n = gather("reload", &t), r;
	const struct target *one;
	struct answer a;
	const char *cur = NULL, *line;

	if (n < 0)
		return SL_EXIT_FAILURE;
	one = pick("reload", t, n, what);
	if (!one)
		return SL_EXIT_INVALID;
	r = ask(one->path, "reload", &a);
	if (r < 0) {
		fprintf(stderr, "sluice reload: %s: %s\n", one->path, strerror(-r));
		return SL_EXIT_FAILURE;
	}
	while ((line = next_data(&a, &cur)))
		print_line(stderr, line);
	if (a.ok)
		say(stdout, "%s (pid %ld): reloaded", one->name, one->pid);
	else
		say(stderr, "sluice reload: %s", a.last);
	r = a.ok ? SL_EXIT_OK : SL_EXIT_INVALID;
	answer_free(&a);
	return r;
}

static int cmd_pending(void)
{
	_cleanup_free_ struct target *t = NULL;
	int n = gather("pending", &t);

	if (n < 0)
		return SL_EXIT_FAILURE;
	for (int i = 0; i < n; i++) {
		struct answer a;
		const char *cur = NULL, *line;

		if (!t[i].pending || ask(t[i].path, "pending", &a) < 0)
			continue;
		while ((line = next_data(&a, &cur)))
			print_line(stdout, line);
		answer_free(&a);
	}
	return SL_EXIT_OK;
}

/* The one sandbox whose pending lists id; -1 when none (or, which an
 * honest set of gateways never does, several). */
static int holding(const struct target *t, int n, const char *id)
{
	size_t idlen = strlen(id);
	int found = -1;

	for (int i = 0; i < n; i++) {
		struct answer a;
		const char *cur = NULL, *line;
		bool has = false;

		if (!t[i].pending || ask(t[i].path, "pending", &a) < 0)
			continue;
		while (a.ok && !has && (line = next_data(&a, &cur)))
			has = !strncmp(line, id, idlen) && line[idlen] == ' ';
		answer_free(&a);
		if (has && found >= 0)
			return -1;
		if (has)
			found = i;
	}
	return found;
}

static int cmd_answer(const char *verb, const char *id)
{
	_cleanup_free_ struct target *t = NULL;
	struct sl_ctl_request q;
	const char *why;
	struct answer a;
	char line[64];
	int n, holder;

	snprintf(line, sizeof(line), "%s %s", verb, id);
	if (strlen(id) > SL_CTL_ID_LEN || sl_ctl_parse(line, strlen(line), &q, &why) < 0) {
		fprintf(stderr, "sluice %s: '%s': %s\n", verb, id, why);
		return SL_EXIT_USAGE;
	}
	n = gather(verb, &t);
	if (n < 0)
		return SL_EXIT_FAILURE;
	/* IDs are each sandbox's own: the answer goes only to the one whose
	 * pending lists it. Any gateway may say "ok" to any ID (another
	 * sandbox's, taken over, would swallow the answer, leaving the
	 * request it was meant for waiting); none can list an ID it never
	 * held, nor learn one from being asked. */
	holder = holding(t, n, id);
	if (holder >= 0 && ask(t[holder].path, line, &a) == 0) {
		bool ok = a.ok;

		if (ok)
			say(stdout, "%s: %s (%s, pid %ld)", id, a.last, t[holder].name,
			    t[holder].pid);
		answer_free(&a);
		if (ok)
			return SL_EXIT_OK;
	}
	fprintf(stderr, "sluice %s: unknown ID %s: no sandbox holds it (answered already, timed out, "
			"or its client went away; `sluice pending` lists what waits)\n",
		verb, id);
	return SL_EXIT_INVALID;
}

int sl_cmd_control(int argc, char **argv)
{
	const char *cmd = argv[0];
	int want = !strcmp(cmd, "ps") || !strcmp(cmd, "pending") ? 1 : 2;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return SL_EXIT_OK;
	}
	if (argc != want || (want == 2 && argv[1][0] == '-')) {
		usage(stderr);
		return SL_EXIT_USAGE;
	}
	if (!root_or_say(cmd))
		return SL_EXIT_FAILURE;
	if (!strcmp(cmd, "ps"))
		return cmd_ps();
	if (!strcmp(cmd, "pending"))
		return cmd_pending();
	if (!strcmp(cmd, "reload"))
		return cmd_reload(argv[1]);
	return cmd_answer(cmd, argv[1]);
}
