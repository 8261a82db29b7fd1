/* SPDX-License-Identifier: MIT */
/*
 * The gateway's counters, and their Prometheus text exposition (format
 * 0.0.4): docs/metrics.md lists every series.
 *
 * Most counters are fed by the audit log's writer, one record at a time
 * (sl_metrics_audit_record, which sl_gw_new() registers as the log's
 * observer: sl_audit_set_observer): every request, DNS query and blocked packet passes there
 * exactly once, so the counters and the log agree by construction. The
 * open connections are read from the gateway when a scrape renders them
 * (sl_metrics_set_gauges); the approval waits are fed by whoever holds a
 * request for approval (sl_metrics_approval_wait).
 *
 * Every label's values are a bounded set whatever the sandbox sends:
 * events, decisions and DNS answers are fixed enums; a reason is the
 * record's reason up to its first ':' (a name from sluice's own code),
 * kept only when it looks like one ([a-z0-9-], at most 64 bytes) and
 * while fewer than SL_METRICS_MAX_REASONS are known, else "other"; a
 * secret's name comes from the operator's policy, at most
 * SL_METRICS_MAX_SECRETS of them (the rest "other"). No host, path,
 * client or rule is ever a label. One loop, one thread: no locks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit.h"

/* The fixed sets (labels). Adding a decision is a line here, before
 * SL_METRICS_DECISION_OTHER, and its name in metrics.c's decision_names. */
enum sl_metrics_event {
	SL_METRICS_EV_HTTP,
	SL_METRICS_EV_CONNECT,
	SL_METRICS_EV_DNS,
	SL_METRICS_EV_BLOCKED,
	SL_METRICS_EV_OTHER,
	_SL_METRICS_EV_MAX,
};

enum sl_metrics_decision {
	SL_METRICS_ALLOW,
	SL_METRICS_DENY,
	SL_METRICS_OBSERVE_DENY, /* mode: observe (docs/observe.md) */
	SL_METRICS_DECISION_OTHER,
	_SL_METRICS_DECISION_MAX,
};

/* How an approval hold ended (docs/control.md). */
enum sl_metrics_approval {
	SL_METRICS_APPROVED,
	SL_METRICS_REFUSED, /* a person said deny */
	SL_METRICS_TIMED_OUT,
	_SL_METRICS_APPROVAL_MAX,
};

/* Room for every reason word sluice writes (about 60, test-metrics.c
 * lists them) twice over: were there fewer slots than words, which ones
 * got a label would depend on which came first, and the sandbox chooses
 * most of the order. */
#define SL_METRICS_MAX_REASONS 128
#define SL_METRICS_MAX_SECRETS 16
#define SL_METRICS_LABEL_MAX 64 /* a secret's name, as the policy allows (loader.c) */

struct sl_metrics;

int sl_metrics_new(struct sl_metrics **ret);
void sl_metrics_free(struct sl_metrics *m);

/* Count one audit record as the log writes it (the observer's signature
 * of sl_audit_set_observer: data is the struct sl_metrics). */
void sl_metrics_audit_record(void *data, const struct sl_audit_record *r);

/* One approval hold over: how it ended, and how long it waited. */
void sl_metrics_approval_wait(struct sl_metrics *m, enum sl_metrics_approval how,
			      uint64_t waited_ms);

/* One connection to the scrape server over: the status answered (200,
 * 400, 404, 405, 408 for a timeout), or 0 when it was refused unread (too
 * many at once, or from the sandbox's addresses). */
void sl_metrics_scraped(struct sl_metrics *m, int status);

/* Requests decided so far (the http and connect records: not DNS queries,
 * not blocked packets), by decision: observe-deny counts as denied (a rule
 * would have denied it; observe only let it through). For `sluice ps`. */
void sl_metrics_requests(const struct sl_metrics *m, uint64_t *ret_allowed, uint64_t *ret_denied);

/* What a scrape reads from the gateway itself, at the time of the scrape. */
struct sl_metrics_gauges {
	uint64_t open_connections; /* proxied and captured, as max_connections counts */
};
void sl_metrics_set_gauges(struct sl_metrics *m,
			   void (*fn)(void *data, struct sl_metrics_gauges *g), void *data);

/*
 * Render every series as Prometheus text (version 0.0.4) into buf, NUL
 * terminated. Returns the length the whole text needs (without the NUL),
 * as snprintf() does: when it is >= size, buf holds a cut copy; call again
 * with a larger buffer. buf may be NULL when size is 0, to ask the length.
 */
size_t sl_metrics_render(const struct sl_metrics *m, char *buf, size_t size);
#define SL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A label value escaped for the text format (backslash, double quote and
 * newline: \\, \", \n) into buf; returns the length needed (snprintf's). */
size_t sl_metrics_escape(const char *s, char *buf, size_t size);

/*
 * The scrape server's request parser (metrics-serve.c), for the head of an
 * HTTP/1.x request from whoever connects to --metrics. Only `GET /metrics`
 * (a query string ignored) is served; HEAD too.
 */
enum sl_metrics_req {
	SL_METRICS_REQ_MORE,	   /* no end of head yet: read more (if room) */
	SL_METRICS_REQ_METRICS,	   /* GET /metrics */
	SL_METRICS_REQ_HEAD,	   /* HEAD /metrics: the headers only */
	SL_METRICS_REQ_NOT_FOUND,  /* GET or HEAD, another path: 404 */
	SL_METRICS_REQ_BAD_METHOD, /* another method: 405 */
	SL_METRICS_REQ_BAD,	   /* not an HTTP/1.x request line: 400 */
};
/* The head read so far: buf[0..len). Looks no further than the first
 * empty line; bytes after it are ignored (the server closes). */
enum sl_metrics_req sl_metrics_parse_request(const char *buf, size_t len);
/* The largest head the server reads: 400 past it. */
#define SL_METRICS_REQ_MAX 4096
