// SPDX-License-Identifier: MIT
/*
 * The gateway's counters and their Prometheus text (metrics.h). Fed by the
 * audit log's writer, so that what is counted is what is logged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static const char *const event_names[_SL_METRICS_EV_MAX] = {
    [SL_METRICS_EV_HTTP] = "http",   [SL_METRICS_EV_CONNECT] = "connect",
    [SL_METRICS_EV_DNS] = "dns",     [SL_METRICS_EV_BLOCKED] = "blocked",
    [SL_METRICS_EV_OTHER] = "other",
};

static const char *const decision_names[_SL_METRICS_DECISION_MAX] = {
    [SL_METRICS_ALLOW] = "allow",
    [SL_METRICS_DENY] = "deny",
    [SL_METRICS_OBSERVE_DENY] = "observe-deny",
    [SL_METRICS_DECISION_OTHER] = "other",
};

static const char *const approval_names[_SL_METRICS_APPROVAL_MAX] = {
    [SL_METRICS_APPROVED] = "approved",
    [SL_METRICS_REFUSED] = "denied",
    [SL_METRICS_TIMED_OUT] = "timeout",
};

/* DNS answers by rcode (the record's status), "none" when none was sent. */
enum dns_answer {
	DNS_NOERROR,
	DNS_FORMERR,
	DNS_SERVFAIL,
	DNS_NXDOMAIN,
	DNS_NOTIMP,
	DNS_REFUSED,
	DNS_OTHER,
	DNS_NONE,
	_DNS_MAX
};
static const char *const dns_names[_DNS_MAX] = {
    "noerror", "formerr", "servfail", "nxdomain", "notimp", "refused", "other", "none",
};

/* How a blocked packet reached the log: a record of its own, counted in a
 * summary the rate limit wrote (not-logged), or lost in the kernel. */
enum blocked_how { BLOCKED_LOGGED, BLOCKED_NOT_LOGGED, BLOCKED_LOST, _BLOCKED_MAX };
static const char *const blocked_names[_BLOCKED_MAX] = {"logged", "not-logged", "lost"};

/* The scrape server's answers. */
enum scrape {
	SCRAPE_200,
	SCRAPE_400,
	SCRAPE_404,
	SCRAPE_405,
	SCRAPE_408,
	SCRAPE_REFUSED,
	_SCRAPE_MAX
};
static const char *const scrape_names[_SCRAPE_MAX] = {"200", "400", "404", "405", "408", "refused"};

/* Fixed buckets, in milliseconds (rendered in seconds). */
static const uint64_t duration_le[] = {1,    5,	   10,	 25,	50,    100,   250,   500,
				       1000, 2500, 5000, 10000, 30000, 60000, 300000};
#define N_DURATION (sizeof(duration_le) / sizeof(duration_le[0]))
static const uint64_t approval_le[] = {1000, 5000, 10000, 30000, 60000, 120000, 300000, 600000};
#define N_APPROVAL (sizeof(approval_le) / sizeof(approval_le[0]))
#define N_BUCKETS_MAX N_DURATION

struct hist {
	uint64_t le[N_BUCKETS_MAX]; /* cumulative: observations <= bound */
	uint64_t count, sum_ms;
};

#define OTHER_REASON SL_METRICS_MAX_REASONS
#define OTHER_SECRET SL_METRICS_MAX_SECRETS

struct sl_metrics {
	uint64_t requests[_SL_METRICS_EV_MAX][_SL_METRICS_DECISION_MAX][SL_METRICS_MAX_REASONS + 1];
	char reasons[SL_METRICS_MAX_REASONS][SL_METRICS_LABEL_MAX + 1];
	size_t n_reasons;
	uint64_t bytes[_SL_METRICS_EV_MAX][2]; /* up, down */
	uint64_t dns[_DNS_MAX];
	uint64_t blocked[_BLOCKED_MAX];
	uint64_t unlogged[_SL_METRICS_EV_MAX];
	uint64_t scrapes[_SCRAPE_MAX];
	uint64_t injections[SL_METRICS_MAX_SECRETS + 1];
	char secrets[SL_METRICS_MAX_SECRETS][SL_METRICS_LABEL_MAX + 1];
	size_t n_secrets;
	struct hist duration[_SL_METRICS_EV_MAX];
	struct hist approval[_SL_METRICS_APPROVAL_MAX];
	void (*gauges)(void *data, struct sl_metrics_gauges *g);
	void *gauges_data;
};

int sl_metrics_new(struct sl_metrics **ret)
{
	struct sl_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	*ret = m;
	return 0;
}

void sl_metrics_free(struct sl_metrics *m)
{
	free(m);
}

void sl_metrics_set_gauges(struct sl_metrics *m,
			   void (*fn)(void *data, struct sl_metrics_gauges *g), void *data)
{
	m->gauges = fn;
	m->gauges_data = data;
}

/* ---- Counting ---- */

static size_t lookup(const char *const *names, size_t n, const char *s, size_t other)
{
	for (size_t i = 0; s && i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return i;
	return other;
}

/* A label value sluice itself wrote: [a-z0-9-] (secrets' names also
 * [A-Z_.], as the policy allows them), 1 to SL_METRICS_LABEL_MAX bytes,
 * up to the first ':'. */
static size_t label_len(const char *s, bool secret)
{
	size_t n;

	for (n = 0; s[n] && s[n] != ':'; n++) {
		char ch = s[n];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
			  (secret && ((ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '.'));

		if (!ok || n >= SL_METRICS_LABEL_MAX)
			return 0;
	}
	return n;
}

/* The slot of s in a table of at most max labels, learnt as they come;
 * max ("other") once the table is full or s is no label. */
static size_t intern(char (*table)[SL_METRICS_LABEL_MAX + 1], size_t *n, size_t max, const char *s,
		     bool secret)
{
	size_t len = s ? label_len(s, secret) : 0;

	if (!len)
		return max;
	for (size_t i = 0; i < *n; i++)
		if (strlen(table[i]) == len && !memcmp(table[i], s, len))
			return i;
	if (*n >= max)
		return max;
	memcpy(table[*n], s, len);
	table[*n][len] = '\0';
	return (*n)++;
}

static void observe(struct hist *h, const uint64_t *le, size_t n_le, uint64_t ms)
{
	for (size_t i = 0; i < n_le; i++)
		if (ms <= le[i])
			h->le[i]++;
	h->count++;
	h->sum_ms += ms;
}

/* A summary (sl_audit_write_summary: no client, no host) stands for
 * records the log does not show one by one: "...: N ...". How many, or
 * -1 when r is no summary or does not say. */
static int64_t summary_count(const struct sl_audit_record *r)
{
	const char *colon;
	char *end;
	unsigned long long n;

	if (r->client || r->host || !r->reason)
		return -1;
	colon = strchr(r->reason, ':');
	if (!colon || colon[1] != ' ' || colon[2] < '0' || colon[2] > '9')
		return -1;
	n = strtoull(colon + 2, &end, 10);
	return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

static void count_dns(struct sl_metrics *m, int status)
{
	static const int rcodes[] = {DNS_NOERROR,  DNS_FORMERR, DNS_SERVFAIL,
				     DNS_NXDOMAIN, DNS_NOTIMP,	DNS_REFUSED};

	if (status < 0)
		m->dns[DNS_NONE]++;
	else if ((size_t)status < sizeof(rcodes) / sizeof(rcodes[0]))
		m->dns[rcodes[status]]++;
	else
		m->dns[DNS_OTHER]++;
}

static void count_blocked(struct sl_metrics *m, const struct sl_audit_record *r, int64_t n)
{
	if (n < 0) {
		if (r->reason && !strcmp(r->reason, "blocked-packet"))
			m->blocked[BLOCKED_LOGGED]++;
		return;
	}
	if (!strncmp(r->reason, "blocked-packets-not-logged:", 27))
		m->blocked[BLOCKED_NOT_LOGGED] += (uint64_t)n;
	else if (!strncmp(r->reason, "blocked-packets-lost:", 21))
		m->blocked[BLOCKED_LOST] += (uint64_t)n;
}

void sl_metrics_audit_record(void *data, const struct sl_audit_record *r)
{
	struct sl_metrics *m = data;
	size_t ev = lookup(event_names, SL_METRICS_EV_OTHER, r->event, SL_METRICS_EV_OTHER);
	size_t dec = lookup(decision_names, SL_METRICS_DECISION_OTHER, r->decision,
			    SL_METRICS_DECISION_OTHER);
	size_t reason = intern(m->reasons, &m->n_reasons, SL_METRICS_MAX_REASONS, r->reason, false);
	int64_t n = summary_count(r);

	m->requests[ev][dec][reason]++;
	if (n >= 0)
		m->unlogged[ev] += (uint64_t)n;
	if (r->bytes_up > 0)
		m->bytes[ev][0] += (uint64_t)r->bytes_up;
	if (r->bytes_down > 0)
		m->bytes[ev][1] += (uint64_t)r->bytes_down;
	if (ev == SL_METRICS_EV_DNS && n < 0)
		count_dns(m, r->status);
	if (ev == SL_METRICS_EV_BLOCKED)
		count_blocked(m, r, n);
	if (r->credential)
		m->injections[intern(m->secrets, &m->n_secrets, SL_METRICS_MAX_SECRETS,
				     r->credential, true)]++;
	if (r->duration_ms >= 0 && n < 0 && ev != SL_METRICS_EV_BLOCKED)
		observe(&m->duration[ev], duration_le, N_DURATION, (uint64_t)r->duration_ms);
}

void sl_metrics_approval_wait(struct sl_metrics *m, enum sl_metrics_approval how,
			      uint64_t waited_ms)
{
	if ((unsigned)how < _SL_METRICS_APPROVAL_MAX)
		observe(&m->approval[how], approval_le, N_APPROVAL, waited_ms);
}

void sl_metrics_scraped(struct sl_metrics *m, int status)
{
	static const int codes[_SCRAPE_MAX] = {200, 400, 404, 405, 408, 0};

	for (size_t i = 0; i < _SCRAPE_MAX; i++)
		if (codes[i] == status) {
			m->scrapes[i]++;
			return;
		}
	m->scrapes[SCRAPE_400]++;
}

void sl_metrics_requests(const struct sl_metrics *m, uint64_t *ret_allowed, uint64_t *ret_denied)
{
	static const int evs[] = {SL_METRICS_EV_HTTP, SL_METRICS_EV_CONNECT};
	uint64_t allowed = 0, denied = 0;

	for (size_t e = 0; e < sizeof(evs) / sizeof(evs[0]); e++)
		for (size_t d = 0; d < _SL_METRICS_DECISION_MAX; d++)
			for (size_t r = 0; r <= SL_METRICS_MAX_REASONS; r++) {
				uint64_t v = m->requests[evs[e]][d][r];

				if (d == SL_METRICS_ALLOW)
					allowed += v;
				else
					denied += v;
			}
	*ret_allowed = allowed;
	*ret_denied = denied;
}

/* ---- Rendering ---- */

struct out {
	char *buf;
	size_t size, len; /* len: what the whole text needs */
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	size_t room = o->len < o->size ? o->size - o->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

size_t sl_metrics_escape(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s; s++) {
		const char *rep = *s == '\\'   ? "\\\\"
				  : *s == '"'  ? "\\\""
				  : *s == '\n' ? "\\n"
					       : NULL;
		size_t k = rep ? 2 : 1;

		if (n + k < size)
			memcpy(buf + n, rep ? rep : s, k);
		n += k;
	}
	if (size)
		buf[n < size ? n : size - 1] = '\0';
	return n;
}

static void header(struct out *o, const char *name, const char *type, const char *help)
{
	outf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Milliseconds as seconds: 1500 -> "1.5" (exact, no float). */
static void seconds(char *buf, size_t size, uint64_t ms)
{
	int n = snprintf(buf, size, "%" PRIu64 ".%03u", ms / 1000, (unsigned)(ms % 1000));

	while (n > 0 && (size_t)n < size && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && (size_t)n < size && buf[n - 1] == '.')
		buf[--n] = '\0';
}

/* One histogram's series: labels is `name="value",` or "". */
static void hist(struct out *o, const char *name, const char *labels, const struct hist *h,
		 const uint64_t *le, size_t n_le)
{
	char s[32];

	for (size_t i = 0; i < n_le; i++) {
		seconds(s, sizeof(s), le[i]);
		outf(o, "%s_bucket{%sle=\"%s\"} %" PRIu64 "\n", name, labels, s, h->le[i]);
	}
	outf(o, "%s_bucket{%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, h->count);
	seconds(s, sizeof(s), h->sum_ms);
	/* Without the trailing comma for the plain series. */
	if (*labels)
		outf(o, "%s_sum{%.*s} %s\n%s_count{%.*s} %" PRIu64 "\n", name,
		     (int)strlen(labels) - 1, labels, s, name, (int)strlen(labels) - 1, labels,
		     h->count);
	else
		outf(o, "%s_sum %s\n%s_count %" PRIu64 "\n", name, s, name, h->count);
}

static void render_requests(const struct sl_metrics *m, struct out *o)
{
	header(o, "sluice_requests_total", "counter",
	       "Audit records written, by event, decision and reason (one per request, DNS "
	       "query, blocked packet or summary).");
	for (size_t e = 0; e < _SL_METRICS_EV_MAX; e++)
		for (size_t d = 0; d < _SL_METRICS_DECISION_MAX; d++)
			for (size_t r = 0; r <= SL_METRICS_MAX_REASONS; r++) {
				uint64_t v = m->requests[e][d][r];
				char esc[2 * SL_METRICS_LABEL_MAX + 1];

				if (!v)
					continue;
				sl_metrics_escape(r == OTHER_REASON ? "other" : m->reasons[r], esc,
						  sizeof(esc));
				outf(o,
				     "sluice_requests_total{event=\"%s\",decision=\"%s\",reason=\"%"
				     "s\"} "
				     "%" PRIu64 "\n",
				     event_names[e], decision_names[d], esc, v);
			}
	header(o, "sluice_unlogged_total", "counter",
	       "What summary records stand for but the log does not show one by one, by event.");
	for (size_t e = 0; e < _SL_METRICS_EV_MAX; e++)
		outf(o, "sluice_unlogged_total{event=\"%s\"} %" PRIu64 "\n", event_names[e],
		     m->unlogged[e]);
}

static void render_counts(const struct sl_metrics *m, struct out *o)
{
	header(o, "sluice_bytes_total", "counter",
	       "Bytes relayed, by direction (up: from the sandbox) and event.");
	for (size_t e = 0; e < SL_METRICS_EV_DNS; e++)
		for (size_t dir = 0; dir < 2; dir++)
			outf(o, "sluice_bytes_total{direction=\"%s\",event=\"%s\"} %" PRIu64 "\n",
			     dir ? "down" : "up", event_names[e], m->bytes[e][dir]);
	header(o, "sluice_dns_queries_total", "counter",
	       "DNS queries answered (or not: none), by the answer's rcode.");
	for (size_t i = 0; i < _DNS_MAX; i++)
		outf(o, "sluice_dns_queries_total{answer=\"%s\"} %" PRIu64 "\n", dns_names[i],
		     m->dns[i]);
	header(o, "sluice_blocked_packets_total", "counter",
	       "Packets the sandbox's nftables rules dropped, by how the audit log has them.");
	for (size_t i = 0; i < _BLOCKED_MAX; i++)
		outf(o, "sluice_blocked_packets_total{audit=\"%s\"} %" PRIu64 "\n",
		     blocked_names[i], m->blocked[i]);
	header(o, "sluice_credential_injections_total", "counter",
	       "Requests a credential was injected into, by the secret's name in the policy.");
	for (size_t i = 0; i <= SL_METRICS_MAX_SECRETS; i++) {
		char esc[2 * SL_METRICS_LABEL_MAX + 1];

		if (i == OTHER_SECRET ? !m->injections[i] : i >= m->n_secrets)
			continue;
		sl_metrics_escape(i == OTHER_SECRET ? "other" : m->secrets[i], esc, sizeof(esc));
		outf(o, "sluice_credential_injections_total{secret=\"%s\"} %" PRIu64 "\n", esc,
		     m->injections[i]);
	}
}

static void render_hists(const struct sl_metrics *m, struct out *o)
{
	char labels[64];

	header(o, "sluice_request_duration_seconds", "histogram",
	       "How long requests, tunnels and DNS queries took, from accept to their record.");
	for (size_t e = 0; e < SL_METRICS_EV_BLOCKED; e++) {
		snprintf(labels, sizeof(labels), "event=\"%s\",", event_names[e]);
		hist(o, "sluice_request_duration_seconds", labels, &m->duration[e], duration_le,
		     N_DURATION);
	}
	header(o, "sluice_approval_wait_seconds", "histogram",
	       "How long requests held for approval waited, by how the hold ended.");
	for (size_t a = 0; a < _SL_METRICS_APPROVAL_MAX; a++) {
		snprintf(labels, sizeof(labels), "outcome=\"%s\",", approval_names[a]);
		hist(o, "sluice_approval_wait_seconds", labels, &m->approval[a], approval_le,
		     N_APPROVAL);
	}
}

size_t sl_metrics_render(const struct sl_metrics *m, char *buf, size_t size)
{
	struct out o = {.buf = buf, .size = size};
	struct sl_metrics_gauges g = {0};

	if (size)
		buf[0] = '\0';
	render_requests(m, &o);
	render_counts(m, &o);
	if (m->gauges)
		m->gauges(m->gauges_data, &g);
	header(&o, "sluice_open_connections", "gauge",
	       "Connections from the sandbox open now (proxied and captured).");
	outf(&o, "sluice_open_connections %" PRIu64 "\n", g.open_connections);
	render_hists(m, &o);
	header(&o, "sluice_metrics_scrapes_total", "counter",
	       "Connections to --metrics, by the status answered (refused: closed unread).");
	for (size_t i = 0; i < _SCRAPE_MAX; i++)
		outf(&o, "sluice_metrics_scrapes_total{code=\"%s\"} %" PRIu64 "\n", scrape_names[i],
		     m->scrapes[i]);
	return o.len;
}

/* ---- The scrape request ---- */

static const char *find_nl(const char *s, size_t len)
{
	return memchr(s, '\n', len);
}

/* Does the head end in buf[0..len): an empty line (CRLF or LF)? */
static bool head_complete(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	while ((nl = find_nl(p, (size_t)(end - p)))) {
		size_t line = (size_t)(nl - p);

		if (line == 0 || (line == 1 && p[0] == '\r'))
			return true;
		p = nl + 1;
	}
	return false;
}

enum sl_metrics_req sl_metrics_parse_request(const char *buf, size_t len)
{
	const char *nl, *sp1, *sp2, *line_end, *target;
	/* Only the first SL_METRICS_REQ_MAX bytes count: a head not done
	 * by then is bad, whatever follows. */
	enum sl_metrics_req more =
	    len >= SL_METRICS_REQ_MAX ? SL_METRICS_REQ_BAD : SL_METRICS_REQ_MORE;
	size_t mlen, tlen, path_len;
	bool get, head;

	if (len > SL_METRICS_REQ_MAX)
		len = SL_METRICS_REQ_MAX;
	nl = find_nl(buf, len);
	if (!nl)
		return more;
	line_end = nl > buf && nl[-1] == '\r' ? nl - 1 : nl;
	sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp1)
		return SL_METRICS_REQ_BAD;
	mlen = (size_t)(sp1 - buf);
	for (size_t i = 0; i < mlen; i++)
		if (buf[i] < 'A' || buf[i] > 'Z')
			return SL_METRICS_REQ_BAD;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', (size_t)(line_end - target));
	if (!mlen || mlen > 16 || !sp2)
		return SL_METRICS_REQ_BAD;
	tlen = (size_t)(sp2 - target);
	if (!tlen || target[0] != '/')
		return SL_METRICS_REQ_BAD;
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
			return SL_METRICS_REQ_BAD;
	if ((size_t)(line_end - sp2) != 9 ||
	    (memcmp(sp2, " HTTP/1.1", 9) && memcmp(sp2, " HTTP/1.0", 9)))
		return SL_METRICS_REQ_BAD;
	if (!head_complete(nl + 1, (size_t)(buf + len - (nl + 1))))
		return more;
	get = mlen == 3 && !memcmp(buf, "GET", 3);
	head = mlen == 4 && !memcmp(buf, "HEAD", 4);
	if (!get && !head)
		return SL_METRICS_REQ_BAD_METHOD;
	path_len = tlen;
	for (size_t i = 0; i < tlen; i++)
		if (target[i] == '?') {
			path_len = i;
			break;
		}
	if (path_len != 8 || memcmp(target, "/metrics", 8))
		return SL_METRICS_REQ_NOT_FOUND;
	return get ? SL_METRICS_REQ_METRICS : SL_METRICS_REQ_HEAD;
}
