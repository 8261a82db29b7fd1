/* SPDX-License-Identifier: MIT */
/*
 * The control socket's protocol (docs/control.md): one request line from
 * the client, "VERB[ ARG]\n", at most SL_CTL_LINE_MAX bytes; the answer is
 * lines "* DATA" then one "ok[ TEXT]" or "error TEXT", and the server
 * closes. Every field in a data line is escaped (sl_ctl_escape), so that
 * no byte the sandbox sent (a path, a body) reaches the operator's
 * terminal as a control character or a line break.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SL_CTL_LINE_MAX 256
/* An approval's ID: this many lowercase hex digits. */
#define SL_CTL_ID_LEN 12

enum sl_ctl_verb {
	SL_CTL_INFO = 1, /* one data line: what `sluice ps` shows */
	SL_CTL_PENDING,	 /* one data line per held request */
	SL_CTL_APPROVE,	 /* ARG: an ID */
	SL_CTL_DENY,	 /* ARG: an ID */
	SL_CTL_RELOAD,	 /* the policy file again, as SIGHUP does */
};

struct sl_ctl_request {
	enum sl_ctl_verb verb;
	char id[SL_CTL_ID_LEN + 1]; /* APPROVE and DENY */
};

/*
 * Parse one request line (without its '\n'; len bytes, no NUL needed).
 * 0 and *ret; -EINVAL with *ret_why a static sentence for the client.
 */
int sl_ctl_parse(const char *line, size_t len, struct sl_ctl_request *ret, const char **ret_why);

/*
 * Write src (n bytes) into dst (size > 0, always NUL-terminated) with
 * every byte outside printable ASCII, and the backslash, as \xHH; with
 * spaces false, the space too (a field of a data line). An empty src is
 * "-". Cut where dst ends, at a whole escape, "..." marking the cut.
 * Returns dst.
 */
char *sl_ctl_escape(const char *src, size_t n, bool spaces, char *dst, size_t size);

/* Is s (len bytes) something a terminal shows as is: printable ASCII
 * only? What the client checks every line it prints against. */
bool sl_ctl_printable(const char *s, size_t len);
