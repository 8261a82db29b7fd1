/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the scrape server's request parser (metrics.c),
 * which reads whatever connects to --metrics, and for the renderer fed
 * records whose strings are the input (reason, event, decision and secret
 * name, as a hostile record could hold them). Beyond not crashing: the
 * parser's answer, once it has one, is the answer for every longer input
 * (bytes past the head change nothing); GET /metrics is served only for a
 * request line that says exactly that; the rendered text is only HELP,
 * TYPE and sample lines of sluice's own series, with a bounded number of
 * them, whatever the labels were fed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parser(const char *buf, size_t size)
{
	enum sl_metrics_req all = sl_metrics_parse_request(buf, size), r;

	for (size_t k = 0; k <= size && k <= SL_METRICS_REQ_MAX; k++) {
		r = sl_metrics_parse_request(buf, k);
		if (r != SL_METRICS_REQ_MORE) {
			if (r != all)
				abort();
			break;
		}
	}
	if ((all == SL_METRICS_REQ_METRICS && memcmp(buf, "GET /metrics", 12)) ||
	    (all == SL_METRICS_REQ_HEAD && memcmp(buf, "HEAD /metrics", 13)))
		abort();
	if ((all == SL_METRICS_REQ_METRICS || all == SL_METRICS_REQ_HEAD) &&
	    !strchr(" ?", buf[all == SL_METRICS_REQ_HEAD ? 13 : 12]))
		abort();
}

/* Every line is a comment of ours or a sample of ours. */
static void check_text(const char *t, size_t n)
{
	size_t lines = 0;

	if (strlen(t) != n || (n && t[n - 1] != '\n'))
		abort();
	for (const char *p = t; *p; p = strchr(p, '\n') + 1) {
		if (strncmp(p, "# HELP sluice_", 14) && strncmp(p, "# TYPE sluice_", 14) &&
		    strncmp(p, "sluice_", 7))
			abort();
		lines++;
	}
	/* The fixed series, and at most every reason and secret slot. */
	if (lines > 400 + 5 * 4 * (SL_METRICS_MAX_REASONS + 1) + SL_METRICS_MAX_SECRETS + 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_metrics *m;
	char *s, *t;
	size_t n, k = 0;

	check_parser((const char *)data, size);
	if (sl_metrics_new(&m) < 0)
		return 0;
	/* The input as NUL-separated strings, fed as several records. */
	s = malloc(size + 1);
	if (!s) {
		sl_metrics_free(m);
		return 0;
	}
	memcpy(s, data, size);
	s[size] = '\0';
	for (char *p = s; p <= s + size && k < 64; k++) {
		struct sl_audit_record r = {
		    .event = p,
		    .decision = p + strlen(p) / 3,
		    .reason = p + strlen(p) / 2,
		    .credential = p + strlen(p) / 4,
		    .status = (int)(k % 8) - 1,
		    .bytes_up = (int64_t)k,
		    .bytes_down = -1,
		    .duration_ms = (int64_t)k * 997,
		};

		sl_metrics_audit_record(m, &r);
		p += strlen(p) + 1;
	}
	n = sl_metrics_render(m, NULL, 0);
	t = malloc(n + 1);
	if (t && sl_metrics_render(m, t, n + 1) == n)
		check_text(t, n);
	free(t);
	free(s);
	sl_metrics_free(m);
	return 0;
}
