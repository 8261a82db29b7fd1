/* SPDX-License-Identifier: MIT */
/* The counters and their Prometheus text (gateway/metrics.h): the format,
 * label escaping, cumulative histogram buckets ending in +Inf, labels that
 * stay a bounded set whatever the records say, the audit log's observer,
 * and the scrape request parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit.h"
#include "metrics.h"

static struct sl_audit_record rec(const char *event, const char *decision, const char *reason)
{
	struct sl_audit_record r = {
	    .ts_ms = 1,
	    .sandbox = "sb",
	    .event = event,
	    .client = "10.231.0.2:40000",
	    .host = "api.example.com",
	    .port = 443,
	    .status = 200,
	    .decision = decision,
	    .reason = reason,
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = -1,
	};
	return r;
}

static char *render(const struct sl_metrics *m)
{
	size_t n = sl_metrics_render(m, NULL, 0);
	char *buf = malloc(n + 1);

	assert_non_null(buf);
	assert_int_equal(sl_metrics_render(m, buf, n + 1), n);
	assert_int_equal(strlen(buf), n);
	return buf;
}

static void feed(struct sl_metrics *m, struct sl_audit_record r, unsigned times)
{
	while (times--)
		sl_metrics_audit_record(m, &r);
}

static void has(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line: %s\nin:\n%s", line, text);
}

static void lacks(const char *text, const char *needle)
{
	if (strstr(text, needle))
		fail_msg("unexpected: %s", needle);
}

static void test_requests_by_label(void **state)
{
	struct sl_metrics *m;
	char *t;
	uint64_t a, d;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	feed(m, rec("http", "allow", "allowed"), 3);
	feed(m, rec("http", "deny", "no-rule"), 2);
	feed(m, rec("connect", "deny", "port"), 1);
	feed(m, rec("dns", "observe-deny", "no-rule"), 1);
	feed(m, rec("blocked", "deny", "blocked-packet"), 4);
	t = render(m);
	has(t, "sluice_requests_total{event=\"http\",decision=\"allow\",reason=\"allowed\"} 3");
	has(t, "sluice_requests_total{event=\"http\",decision=\"deny\",reason=\"no-rule\"} 2");
	has(t, "sluice_requests_total{event=\"connect\",decision=\"deny\",reason=\"port\"} 1");
	has(t,
	    "sluice_requests_total{event=\"dns\",decision=\"observe-deny\",reason=\"no-rule\"} 1");
	has(t, "sluice_blocked_packets_total{audit=\"logged\"} 4");
	/* Every family has its HELP and TYPE before its samples. */
	assert_non_null(strstr(t, "# HELP sluice_requests_total "));
	has(t, "# TYPE sluice_requests_total counter");
	has(t, "# TYPE sluice_open_connections gauge");
	has(t, "# TYPE sluice_request_duration_seconds histogram");
	has(t, "# TYPE sluice_approval_wait_seconds histogram");
	assert_true(strstr(t, "# TYPE sluice_requests_total counter") <
		    strstr(t, "sluice_requests_total{"));
	/* ps's totals: http and connect only (neither the DNS query nor the
	 * blocked packets are requests); observe-deny would have been denied. */
	sl_metrics_requests(m, &a, &d);
	assert_int_equal(a, 3);
	assert_int_equal(d, 3);
	free(t);
	sl_metrics_free(m);
}

static void test_text_ends_lines(void **state)
{
	struct sl_metrics *m;
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	t = render(m);
	assert_true(strlen(t) > 0);
	assert_int_equal(t[strlen(t) - 1], '\n');
	lacks(t, "\n\n");
	lacks(t, "\r");
	free(t);
	sl_metrics_free(m);
}

/* The length is snprintf's: a short buffer is cut, NUL-terminated, and
 * the answer says how much is needed. */
static void test_render_short_buffer(void **state)
{
	struct sl_metrics *m;
	char small[64], *t;
	size_t n;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	t = render(m);
	memset(small, 'x', sizeof(small));
	n = sl_metrics_render(m, small, sizeof(small));
	assert_int_equal(n, strlen(t));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, t, sizeof(small) - 1);
	free(t);
	sl_metrics_free(m);
}

static void test_escape(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(sl_metrics_escape("a\\b\"c\nd", buf, sizeof(buf)), 10);
	assert_string_equal(buf, "a\\\\b\\\"c\\nd");
	assert_int_equal(sl_metrics_escape("plain", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "plain");
	/* Cut, never split past the buffer. */
	assert_int_equal(sl_metrics_escape("\"\"\"\"", buf, 4), 8);
	assert_int_equal(strlen(buf), 3);
}

/* A reason is a label only as sluice's own code writes one: up to its
 * first ':' (the rest may name a host), [a-z0-9-]; anything else, and
 * anything past the table's size, is "other". */
static void test_reason_bounded(void **state)
{
	struct sl_metrics *m;
	char reason[128], *t;
	const char *p;
	unsigned lines = 0;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	feed(m,
	     rec("dns", "deny", "dns-budget: 10 new names under *.evil.example in the last minute"),
	     1);
	feed(m, rec("http", "deny", "Evil\"}\nsluice_fake 1"), 1);
	feed(m, rec("http", "deny", NULL), 1);
	for (unsigned i = 0; i < 3 * SL_METRICS_MAX_REASONS; i++) {
		snprintf(reason, sizeof(reason), "r%u", i);
		feed(m, rec("http", "deny", reason), 1);
	}
	t = render(m);
	has(t, "sluice_requests_total{event=\"dns\",decision=\"deny\",reason=\"dns-budget\"} 1");
	lacks(t, "evil.example");
	lacks(t, "sluice_fake");
	lacks(t, "Evil");
	for (p = t; (p = strstr(p, "\nsluice_requests_total{")); p++)
		lines++;
	/* dns-budget, the table's other slots, and other. */
	assert_int_equal(lines, SL_METRICS_MAX_REASONS + 1);
	/* "other": the two that are no label, and the 2 * MAX past the
	 * table (the table holds dns-budget and MAX - 1 of the r's). */
	snprintf(reason, sizeof(reason),
		 "sluice_requests_total{event=\"http\",decision=\"deny\",reason=\"other\"} %u",
		 2 + 2 * SL_METRICS_MAX_REASONS + 1);
	has(t, reason);
	free(t);
	sl_metrics_free(m);
}

/* Every reason sluice's own code writes (gateway.md, socks, approvals,
 * the policy's): more words than a table of 48 held, so that which of them
 * were labels depended on which came first, and an agent that made the
 * harmless ones first (a bad greeting, no SNI, a wrong method, ...) had
 * private-address or deny-rule counted as "other". Each keeps its own
 * series whatever the order. */
static const char *const sluice_reasons[] = {
    "socks-address-type",
    "socks-bad-greeting",
    "socks-bad-request",
    "socks-command-not-supported",
    "socks-no-method",
    "bad-client-hello",
    "no-sni",
    "not-http",
    "sni-mismatch",
    "host-mismatch",
    "header-too-large",
    "header-timeout",
    "incomplete-request",
    "no-request",
    "bad-request",
    "bad-framing",
    "client-closed",
    "client-gone",
    "client-tls-failed",
    "idle-timeout",
    "tls-timeout",
    "invalid-path",
    "invalid-host",
    "invalid-request",
    "no-rule",
    "port",
    "method",
    "path",
    "allowed",
    "resolve-failed",
    "connect-failed",
    "connect-timeout",
    "method-override",
    "credential-needs-tls",
    "credential-unavailable",
    "credential-header",
    "placeholder-missing",
    "inspect-needs-tls",
    "inspect-unavailable",
    "exact-dns",
    "dns-budget",
    "too-many-connections",
    "upstream-closed",
    "upstream-tls-failed",
    "upstream-write-failed",
    "bad-response",
    "ws-bad-frame",
    "leaf-failed",
    "accept-failed",
    "no-original-destination",
    "approval-busy",
    "approval-denied",
    "approval-reloaded",
    "approval-timeout",
    "blocked-packet",
    "blocked-packets-not-logged",
    "blocked-packets-lost",
    "not-the-sandbox",
    /* last: what an operator alerts on */
    "private-address",
    "deny-rule",
};

static void test_every_reason_a_label(void **state)
{
	size_t n = sizeof(sluice_reasons) / sizeof(sluice_reasons[0]);
	struct sl_metrics *m;
	char line[256], *t;

	(void)state;
	assert_true(n < SL_METRICS_MAX_REASONS);
	assert_int_equal(sl_metrics_new(&m), 0);
	for (size_t i = 0; i < n; i++)
		feed(m, rec("http", "deny", sluice_reasons[i]), 1);
	t = render(m);
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line),
			 "sluice_requests_total{event=\"http\",decision=\"deny\",reason=\"%s\"} 1",
			 sluice_reasons[i]);
		has(t, line);
	}
	lacks(t, "reason=\"other\"");
	free(t);
	sl_metrics_free(m);
}

static void test_decisions_and_events_fixed(void **state)
{
	struct sl_metrics *m;
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	feed(m, rec("smtp", "maybe", "allowed"), 2);
	t = render(m);
	has(t, "sluice_requests_total{event=\"other\",decision=\"other\",reason=\"allowed\"} 2");
	lacks(t, "smtp");
	lacks(t, "maybe");
	free(t);
	sl_metrics_free(m);
}

static void test_bytes_dns_injections(void **state)
{
	struct sl_metrics *m;
	struct sl_audit_record r;
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	r = rec("http", "allow", "allowed");
	r.bytes_up = 100;
	r.bytes_down = 2000;
	r.credential = "openai";
	feed(m, r, 2);
	r = rec("connect", "allow", "allowed");
	r.bytes_up = 7;
	r.bytes_down = -1;
	feed(m, r, 1);
	r = rec("dns", "allow", "allowed");
	r.status = 0;
	feed(m, r, 3);
	r.status = 3;
	r.decision = "deny";
	feed(m, r, 2);
	r.status = -1;
	feed(m, r, 1);
	r = rec("http", "allow", "allowed");
	r.credential = "bad\"name";
	feed(m, r, 1);
	r.credential = "Team_key.v2-64";
	feed(m, r, 1);
	t = render(m);
	has(t, "sluice_bytes_total{direction=\"up\",event=\"http\"} 200");
	has(t, "sluice_bytes_total{direction=\"down\",event=\"http\"} 4000");
	has(t, "sluice_bytes_total{direction=\"up\",event=\"connect\"} 7");
	has(t, "sluice_bytes_total{direction=\"down\",event=\"connect\"} 0");
	has(t, "sluice_dns_queries_total{answer=\"noerror\"} 3");
	has(t, "sluice_dns_queries_total{answer=\"nxdomain\"} 2");
	has(t, "sluice_dns_queries_total{answer=\"none\"} 1");
	has(t, "sluice_credential_injections_total{secret=\"openai\"} 2");
	has(t, "sluice_credential_injections_total{secret=\"other\"} 1");
	has(t, "sluice_credential_injections_total{secret=\"Team_key.v2-64\"} 1");
	free(t);
	sl_metrics_free(m);
}

/* Summaries stand for what the log does not show one by one. */
static void test_summaries(void **state)
{
	struct sl_metrics *m;
	struct sl_audit_record r = {
	    .sandbox = "sb",
	    .event = "blocked",
	    .port = -1,
	    .status = -1,
	    .decision = "deny",
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = -1,
	};
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	r.reason = "blocked-packets-not-logged: 40 (rate limit)";
	feed(m, r, 1);
	r.reason = "blocked-packets-lost: 5";
	feed(m, r, 1);
	r.reason = "blocked-packets-lost: unknown";
	feed(m, r, 1);
	r.event = "connect";
	r.duration_ms = 0;
	r.reason = "not-the-sandbox: 12 more not logged";
	feed(m, r, 1);
	/* Refused queries past the rate limit: counted with the unlogged,
	 * not as queries answered (their rcodes are not in the record). */
	r.event = "dns";
	r.reason = "dns-not-logged: 300 more refused queries (rate limit)";
	feed(m, r, 1);
	t = render(m);
	has(t, "sluice_unlogged_total{event=\"dns\"} 300");
	has(t,
	    "sluice_requests_total{event=\"dns\",decision=\"deny\",reason=\"dns-not-logged\"} 1");
	has(t, "sluice_dns_queries_total{answer=\"none\"} 0");
	has(t, "sluice_dns_queries_total{answer=\"nxdomain\"} 0");
	has(t, "sluice_blocked_packets_total{audit=\"not-logged\"} 40");
	has(t, "sluice_blocked_packets_total{audit=\"lost\"} 5");
	has(t, "sluice_blocked_packets_total{audit=\"logged\"} 0");
	has(t, "sluice_unlogged_total{event=\"blocked\"} 45");
	has(t, "sluice_unlogged_total{event=\"connect\"} 12");
	/* A summary is one record, and no duration. */
	has(t, "sluice_requests_total{event=\"blocked\",decision=\"deny\",reason=\"blocked-packets-"
	       "lost\"} 2");
	has(t, "sluice_request_duration_seconds_count{event=\"connect\"} 0");
	free(t);
	sl_metrics_free(m);
}

/* Buckets are cumulative, +Inf is the count, the sum in seconds. */
static void test_histogram(void **state)
{
	static const int64_t ms[] = {0, 1, 2, 5, 6, 100, 1500, 400000};
	struct sl_metrics *m;
	struct sl_audit_record r = rec("http", "allow", "allowed");
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		r.duration_ms = ms[i];
		feed(m, r, 1);
	}
	t = render(m);
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"0.001\"} 2");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"0.005\"} 4");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"0.01\"} 5");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"0.1\"} 6");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"1\"} 6");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"2.5\"} 7");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"300\"} 7");
	has(t, "sluice_request_duration_seconds_bucket{event=\"http\",le=\"+Inf\"} 8");
	has(t, "sluice_request_duration_seconds_count{event=\"http\"} 8");
	has(t, "sluice_request_duration_seconds_sum{event=\"http\"} 401.614");
	has(t, "sluice_request_duration_seconds_count{event=\"dns\"} 0");
	has(t, "sluice_request_duration_seconds_sum{event=\"dns\"} 0");
	free(t);
	sl_metrics_free(m);
}

static void test_approval_wait(void **state)
{
	struct sl_metrics *m;
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	sl_metrics_approval_wait(m, SL_METRICS_APPROVED, 3000);
	sl_metrics_approval_wait(m, SL_METRICS_APPROVED, 700000);
	sl_metrics_approval_wait(m, SL_METRICS_TIMED_OUT, 60000);
	sl_metrics_approval_wait(m, (enum sl_metrics_approval)99, 1);
	t = render(m);
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"approved\",le=\"1\"} 0");
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"approved\",le=\"5\"} 1");
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"approved\",le=\"600\"} 1");
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"approved\",le=\"+Inf\"} 2");
	has(t, "sluice_approval_wait_seconds_sum{outcome=\"approved\"} 703");
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"timeout\",le=\"60\"} 1");
	has(t, "sluice_approval_wait_seconds_bucket{outcome=\"timeout\",le=\"30\"} 0");
	has(t, "sluice_approval_wait_seconds_count{outcome=\"denied\"} 0");
	free(t);
	sl_metrics_free(m);
}

static void gauges(void *data, struct sl_metrics_gauges *g)
{
	g->open_connections = *(unsigned *)data;
}

static void test_gauge_and_scrapes(void **state)
{
	struct sl_metrics *m;
	unsigned open = 7;
	char *t;

	(void)state;
	assert_int_equal(sl_metrics_new(&m), 0);
	sl_metrics_set_gauges(m, gauges, &open);
	sl_metrics_scraped(m, 200);
	sl_metrics_scraped(m, 0);
	sl_metrics_scraped(m, 408);
	sl_metrics_scraped(m, 999);
	t = render(m);
	has(t, "sluice_open_connections 7");
	has(t, "sluice_metrics_scrapes_total{code=\"200\"} 1");
	has(t, "sluice_metrics_scrapes_total{code=\"refused\"} 1");
	has(t, "sluice_metrics_scrapes_total{code=\"408\"} 1");
	has(t, "sluice_metrics_scrapes_total{code=\"400\"} 1");
	free(t);
	sl_metrics_free(m);
}

/* Through the audit log: what it takes is counted, what it refuses not. */
static void test_audit_observer(void **state)
{
	char path[] = "/tmp/sluice-test-metrics-XXXXXX";
	struct sl_audit_record r = rec("http", "allow", "allowed");
	struct sl_audit *a;
	struct sl_metrics *m;
	uint64_t al, de;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sl_audit_open(path, &a), 0);
	assert_int_equal(sl_metrics_new(&m), 0);
	sl_audit_set_observer(a, sl_metrics_audit_record, m);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(sl_audit_batch(a), 0);
	assert_int_equal(sl_audit_write(a, &r), 0);
	assert_int_equal(sl_audit_write_summary(a, "sb", "connect", 0, "not-the-sandbox: 3 more"),
			 0);
	sl_metrics_requests(m, &al, &de);
	assert_int_equal(al, 2);
	assert_int_equal(de, 1);
	sl_audit_set_observer(a, NULL, NULL);
	assert_int_equal(sl_audit_write(a, &r), 0);
	sl_metrics_requests(m, &al, &de);
	assert_int_equal(al, 2);
	sl_audit_close(a);
	sl_metrics_free(m);
	unlink(path);
}

#define REQ(s) sl_metrics_parse_request((s), strlen(s))

static void test_parse_request(void **state)
{
	char big[SL_METRICS_REQ_MAX + 10];

	(void)state;
	assert_int_equal(REQ("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), SL_METRICS_REQ_METRICS);
	assert_int_equal(REQ("GET /metrics HTTP/1.0\r\n\r\n"), SL_METRICS_REQ_METRICS);
	assert_int_equal(REQ("GET /metrics HTTP/1.1\n\n"), SL_METRICS_REQ_METRICS);
	assert_int_equal(REQ("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_METRICS);
	assert_int_equal(REQ("HEAD /metrics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_HEAD);
	assert_int_equal(REQ("GET /metrics HTTP/1.1\r\nHost: x\r\n"), SL_METRICS_REQ_MORE);
	assert_int_equal(REQ("GET /metr"), SL_METRICS_REQ_MORE);
	assert_int_equal(REQ(""), SL_METRICS_REQ_MORE);
	assert_int_equal(REQ("GET / HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_NOT_FOUND);
	assert_int_equal(REQ("GET /metrics/ HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_NOT_FOUND);
	assert_int_equal(REQ("GET /metricsx HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_NOT_FOUND);
	assert_int_equal(REQ("POST /metrics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_BAD_METHOD);
	assert_int_equal(REQ("get /metrics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("GET metrics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("GET /metrics HTTP/2.0\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("GET /metrics HTTP/1.1 x\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("GET  /metrics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("GET /met\x01rics HTTP/1.1\r\n\r\n"), SL_METRICS_REQ_BAD);
	assert_int_equal(REQ("\r\n\r\n"), SL_METRICS_REQ_BAD);
	/* The request line is judged as soon as it is in. */
	assert_int_equal(REQ("BREW /pot HTTP/1.1\r\n"), SL_METRICS_REQ_MORE);
	assert_int_equal(REQ("\x16\x03\x01 hello\n"), SL_METRICS_REQ_BAD);
	/* A head that never ends is bad past the limit. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	assert_int_equal(sl_metrics_parse_request(big, SL_METRICS_REQ_MAX - 1),
			 SL_METRICS_REQ_MORE);
	assert_int_equal(sl_metrics_parse_request(big, SL_METRICS_REQ_MAX), SL_METRICS_REQ_BAD);
	memset(big, 'a', sizeof(big));
	assert_int_equal(sl_metrics_parse_request(big, SL_METRICS_REQ_MAX + 1), SL_METRICS_REQ_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requests_by_label),
	    cmocka_unit_test(test_text_ends_lines),
	    cmocka_unit_test(test_render_short_buffer),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_reason_bounded),
	    cmocka_unit_test(test_every_reason_a_label),
	    cmocka_unit_test(test_decisions_and_events_fixed),
	    cmocka_unit_test(test_bytes_dns_injections),
	    cmocka_unit_test(test_summaries),
	    cmocka_unit_test(test_histogram),
	    cmocka_unit_test(test_approval_wait),
	    cmocka_unit_test(test_gauge_and_scrapes),
	    cmocka_unit_test(test_audit_observer),
	    cmocka_unit_test(test_parse_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
