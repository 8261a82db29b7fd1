/* SPDX-License-Identifier: MIT */
/*
 * sluice learn: from audit records to a policy that would have allowed
 * what they show (docs/observe.md).
 *
 * The audit log is untrusted input: the agent chose every host, path and
 * method in it, and whoever can write the file chose the rest. So a line
 * is parsed by a bounded reader that refuses anything but a flat JSON
 * object; every string that reaches the output is printable ASCII without
 * spaces, validated as a host or a path by the policy library, and written
 * double-quoted; and the whole output is loaded by the policy loader
 * before it is printed (a policy `sluice check` would refuse is never
 * printed).
 *
 * The model (learn-core.c) is pure: records in, rules out; the text
 * (learn-emit.c) and the command (learn.c) sit above it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

/* Bounds, whatever the log holds: a longer line is skipped as malformed;
 * past the caps, records are counted but add nothing (and a comment says
 * so). */
#define SL_LEARN_LINE_MAX 65536
#define SL_LEARN_MAX_TARGETS 4096
#define SL_LEARN_MAX_PATHS 1024 /* distinct exact paths per host and port */
/* This many distinct names under one parent domain, with the same rule
 * body, make a wildcard (docs/observe.md says which parents never do). */
#define SL_LEARN_WILDCARD_MIN 3

/* One audit record's fields that learning reads; NULL/-1 when absent.
 * Strings point into the parser's buffer. */
struct sl_learn_record {
	const char *event, *method, *host, *path, *decision, *reason;
	int port;
};

/*
 * Parse one line as an audit record into *ret (its strings in buf, of
 * size >= len + 1). 0, or -EINVAL with *ret_why saying what is wrong.
 * Only a flat JSON object is accepted (nested values are skipped, to a
 * bounded depth); a repeated key, a NUL, or a string that is not valid
 * JSON are refused.
 */
int sl_learn_parse_line(const char *line, size_t len, char *buf, struct sl_learn_record *ret,
			const char **ret_why);

/* What was seen for one host and port. */
struct sl_learn_path {
	char *path;  /* normal form; for a prefix, without the '*' */
	bool prefix; /* matches every path starting with path */
	unsigned hits;
};

struct sl_learn_target {
	char host[SL_HOST_BUF]; /* normal form */
	enum sl_host_kind kind;
	uint16_t port;
	uint32_t methods; /* enum sl_method bits seen on http records */
	bool http;	  /* requests were seen (methods and paths known) */
	unsigned hits, observed, allowed;
	struct sl_learn_path *paths; /* exact, as seen (before collapsing) */
	size_t n_paths;
	bool paths_capped; /* more than SL_LEARN_MAX_PATHS: rule without paths */
};

/* Why records were not learned from, for the output's comments. */
struct sl_learn_stats {
	unsigned long lines, records, malformed;
	unsigned long denied, ssrf;	     /* decision deny; of them SSRF refusals */
	unsigned long other_events;	     /* dns, blocked, summaries */
	unsigned long bad_host, bad_path;    /* not a valid name, or path */
	unsigned long bad_method, bad_port;  /* a method no rule can name; no port */
	unsigned long base_allowed;	     /* --policy BASE allows it already */
	unsigned long base_denied;	     /* BASE's deny rule refuses it */
	unsigned long capped;		     /* past SL_LEARN_MAX_TARGETS */
	unsigned long private_hosts;	     /* IP literals in special ranges */
};

struct sl_learn {
	const struct sl_policy *base; /* NULL: none; its mode is ignored */
	struct sl_learn_target *targets;
	size_t n_targets, cap_targets;
	struct sl_learn_stats st;
};

void sl_learn_init(struct sl_learn *l, const struct sl_policy *base);
void sl_learn_done(struct sl_learn *l);

/* Take one parsed record: counted in st, learned from when it is an
 * allow or observe-deny of an http or connect event with a valid host,
 * port, method and path that BASE does not allow. 0 or -ENOMEM. */
int sl_learn_add(struct sl_learn *l, const struct sl_learn_record *r);

/* Does policy p allow every request l learned from, each path with each
 * method? If not, false, and err names the first it does not (`sluice
 * learn` checks its own output with it before printing; the fuzzer too). */
bool sl_learn_allows(const struct sl_learn *l, const struct sl_policy *p, char *err, size_t errlen);

/* A rule to print: the targets it stands for, and its body. */
struct sl_learn_rule {
	char host[SL_HOST_BUF]; /* for a wildcard, the suffix */
	bool address; /* an IP literal: never under a wildcard */
	bool wildcard;
	bool private_addr; /* an IP literal in a special range: say so */
	const char *special; /* which range, for the comment */
	uint16_t *ports;
	size_t n_ports;
	uint32_t methods; /* 0: any (only when !http) */
	bool http;
	struct sl_learn_path *paths; /* collapsed, sorted; NULL: any path */
	size_t n_paths;
	unsigned hits, observed, allowed;
	char **names; /* a wildcard's names, as seen, sorted */
	size_t n_names;
};

/* The rules, sorted by host (wildcards where SL_LEARN_WILDCARD_MIN names
 * share a parent that is safe to cover) and deterministic. */
int sl_learn_rules(const struct sl_learn *l, struct sl_learn_rule **ret, size_t *ret_n);
void sl_learn_rules_free(struct sl_learn_rule *r, size_t n);

/* The paths of one target collapsed (exported for the tests): an
 * ID-looking segment ends the path in a prefix; two or more exact
 * siblings become their parent's prefix (never the root's); what a prefix
 * covers goes. Sorted. */
int sl_learn_collapse_paths(const struct sl_learn_path *in, size_t n, struct sl_learn_path **ret,
			    size_t *ret_n);
/* Does a path segment look like an identifier (a number of 3 digits or
 * more, a UUID, a long hex string, a long token mixing letters and
 * digits)? */
bool sl_learn_segment_is_id(const char *seg, size_t len);
/* May *.suffix be emitted: two labels or more, not a known public or
 * shared-hosting suffix (learn-core.c lists them). */
bool sl_learn_suffix_safe(const char *suffix);

/*
 * The policy text: a header of comments (what was read, what was skipped
 * and why), BASE's document when given (every key but allow and mode as
 * it was, its allow rules first), then the learned rules with their hit
 * counts. Every string of the log is double-quoted and escaped. *ret is
 * malloc'd and NUL-terminated. base_buf/base_len: BASE's bytes (or NULL).
 */
int sl_learn_emit(const struct sl_learn *l, const char *source, const char *base_name,
		  const char *base_buf, size_t base_len, char **ret, size_t *ret_len);

/* A string as a YAML double-quoted scalar into f: '"' and '\\' escaped,
 * every byte outside printable ASCII as \xNN (learn only passes printable
 * ASCII; this is the last line of defence). */
void sl_learn_yaml_quote(FILE *f, const char *s);
