/* SPDX-License-Identifier: MIT */
/*
 * sluice learn AUDIT.log [--policy BASE]
 *
 * Reads audit records (one JSON object a line, as the gateway writes them;
 * "-" for stdin) and prints a policy that would have allowed what they
 * show (learn.h). A line that is not a record is skipped with a warning
 * naming its number. The policy printed has been loaded by the policy
 * loader and shown to allow every request learned from; otherwise nothing
 * is printed and the exit status is 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "learn.h"
#include "macro.h"
#include "policy.h"

#define PROG "sluice learn"
#define WARN_MAX 20

static void learn_usage(FILE *f)
{
	fputs("usage: sluice learn AUDIT.log [--policy BASE]\n"
	      "\n"
	      "Print (on stdout) a policy that would have allowed what the audit log shows:\n"
	      "its allow and observe-deny records (run an agent with --observe first), one\n"
	      "rule per host with its ports, methods and paths, paths collapsed where\n"
	      "siblings or identifiers were seen, a wildcard only over several names of one\n"
	      "parent that is not a public suffix; comments say how often each was hit and\n"
	      "what was not learned (SSRF refusals never are). With --policy BASE, BASE's\n"
	      "secrets and rules come first, as they are, and only what BASE did not allow\n"
	      "is added. AUDIT.log '-' reads stdin. Review the result before you enforce it\n"
	      "(docs/observe.md). Exits 0, 1 for an unreadable log or an invalid BASE, 2 for\n"
	      "a bad command line.\n",
	      f);
}

/* One line into buf (at most SL_LEARN_LINE_MAX bytes, its '\n' dropped):
 * its length, -E2BIG for a longer one (read to its end and dropped), or
 * -1 at the end of the file. */
static ssize_t read_line(FILE *f, char *buf)
{
	size_t n = 0;
	bool big = false;
	int c;

	while ((c = getc_unlocked(f)) != EOF && c != '\n') {
		if (n < SL_LEARN_LINE_MAX)
			buf[n++] = (char)c;
		else
			big = true;
	}
	if (c == EOF && n == 0 && !big)
		return -1;
	buf[n] = '\0';
	return big ? -E2BIG : (ssize_t)n;
}

static void warn(const char *file, unsigned long line, const char *why, unsigned long *warned)
{
	if (++*warned <= WARN_MAX)
		fprintf(stderr, PROG ": %s:%lu: skipped: %s\n", file, line, why);
	else if (*warned == WARN_MAX + 1)
		fprintf(stderr, PROG ": %s: more malformed lines; the policy's comments count them\n",
			file);
}

static int read_log(struct sl_learn *l, const char *file, FILE *f)
{
	_cleanup_free_ char *line = malloc(SL_LEARN_LINE_MAX + 1);
	_cleanup_free_ char *buf = malloc(SL_LEARN_LINE_MAX + 1);
	unsigned long warned = 0;
	ssize_t n;

	if (!line || !buf)
		return -ENOMEM;
	while ((n = read_line(f, line)) != -1) {
		struct sl_learn_record r;
		const char *why = NULL;
		int e;

		l->st.lines++;
		if (n == 0)
			continue;
		if (n == -E2BIG) {
			l->st.malformed++;
			warn(file, l->st.lines, "a line longer than 64 KiB", &warned);
			continue;
		}
		if (sl_learn_parse_line(line, (size_t)n, buf, &r, &why) < 0) {
			l->st.malformed++;
			warn(file, l->st.lines, why, &warned);
			continue;
		}
		e = sl_learn_add(l, &r);
		if (e < 0)
			return e;
	}
	return ferror(f) ? -EIO : 0;
}

/* Is every request learned from allowed by the policy printed? */
static bool allows_all(const struct sl_learn *l, const struct sl_policy *p)
{
	char what[1024];

	if (sl_learn_allows(l, p, what, sizeof(what)))
		return true;
	fprintf(stderr, PROG ": internal error: the policy learned does not allow %s\n", what);
	return false;
}

static int load_base(const char *path, char **ret_buf, size_t *ret_len, struct sl_policy **ret)
{
	struct sl_diags d = {0};
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int r;

	if (fd < 0) {
		fprintf(stderr, PROG ": --policy %s: %m\n", path);
		return -errno;
	}
	r = sl_policy_read_fd(fd, path, ret_buf, ret_len, &d);
	if (r == 0)
		r = sl_policy_load_buffer(path, *ret_buf, *ret_len, ret, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "%s\n", d.msgs[i]);
	sl_diags_clear(&d);
	if (r < 0)
		return r;
	/* What BASE allows as enforce decides it. */
	(*ret)->mode = SL_MODE_ENFORCE;
	return 0;
}

/* The text, checked: loaded as `sluice check` would, and allowing all. */
static int emit_checked(const struct sl_learn *l, const char *log, const char *base_path,
			const char *base_buf, size_t base_len)
{
	_cleanup_free_ char *out = NULL;
	_cleanup_(sl_policy_freep) struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	size_t len = 0;
	int r;

	r = sl_learn_emit(l, log, base_path, base_buf, base_len, &out, &len);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", strerror(-r));
		return SL_EXIT_FAILURE;
	}
	r = sl_policy_load_buffer("(learned policy)", out, len, &p, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, PROG ": internal error: %s\n", d.msgs[i]);
	sl_diags_clear(&d);
	if (r < 0 || !allows_all(l, p))
		return SL_EXIT_INVALID;
	if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0) {
		fprintf(stderr, PROG ": writing the policy: %m\n");
		return SL_EXIT_FAILURE;
	}
	return SL_EXIT_OK;
}

int sl_cmd_learn(int argc, char **argv)
{
	const char *log = NULL, *base_path = NULL;
	_cleanup_free_ char *base_buf = NULL;
	_cleanup_(sl_policy_freep) struct sl_policy *base = NULL;
	struct sl_learn l;
	size_t base_len = 0;
	FILE *f;
	int i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			learn_usage(stdout);
			return SL_EXIT_OK;
		} else if (!strcmp(argv[i], "--policy") && i + 1 < argc && !base_path) {
			base_path = argv[++i];
		} else if (!strncmp(argv[i], "--policy=", 9) && !base_path) {
			base_path = argv[i] + 9;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, PROG ": unknown, repeated or incomplete option '%s'\n", argv[i]);
			learn_usage(stderr);
			return SL_EXIT_USAGE;
		} else if (!log) {
			log = argv[i];
		} else {
			fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[i]);
			return SL_EXIT_USAGE;
		}
	}
	if (!log || (base_path && !*base_path)) {
		learn_usage(stderr);
		return SL_EXIT_USAGE;
	}
	if (base_path && load_base(base_path, &base_buf, &base_len, &base) < 0)
		return SL_EXIT_INVALID;
	f = strcmp(log, "-") ? fopen(log, "re") : stdin;
	if (!f) {
		fprintf(stderr, PROG ": %s: %m\n", log);
		return SL_EXIT_INVALID;
	}
	sl_learn_init(&l, base);
	r = read_log(&l, log, f);
	if (f != stdin)
		fclose(f);
	if (r < 0) {
		fprintf(stderr, PROG ": %s: %s\n", log, strerror(-r));
		sl_learn_done(&l);
		return r == -ENOMEM ? SL_EXIT_FAILURE : SL_EXIT_INVALID;
	}
	r = emit_checked(&l, log, base_path, base_buf, base_len);
	sl_learn_done(&l);
	return r;
}
