/* SPDX-License-Identifier: MIT */
/*
 * Decision microbenchmark: ns per sl_policy_decide() at 10, 1,000 and
 * 10,000 rules, side by side with a linear scan over the same normalised
 * rules (what a matcher without an index does), reported as a ratio.
 *
 *   build/bench/bench-decide [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static struct sl_policy *make_policy(size_t n)
{
	size_t cap = n * 80 + 256, len, i;
	char *yaml = malloc(cap);
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };

	if (!yaml)
		abort();
	len = (size_t)snprintf(yaml, cap, "version: 1\nallow:\n");
	/* Three in four rules exact, one in four wildcard; one in ten has a
	 * deny twin, as real policies carve exceptions out of wildcards. */
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(yaml + len, cap - len, "  - host: \"%sservice%zu.example.com\"\n",
					i % 4 == 3 ? "*." : "", i);
	len += (size_t)snprintf(yaml + len, cap - len, "deny:\n");
	for (i = 3; i < n; i += 40)
		len += (size_t)snprintf(yaml + len, cap - len, "  - host: bad.service%zu.example.com\n", i);
	if (sl_policy_load_buffer("bench", yaml, len, &p, &d) < 0) {
		fprintf(stderr, "bench policy refused: %s\n", d.n ? d.msgs[0] : "?");
		abort();
	}
	free(yaml);
	return p;
}

/* The baseline: normalise the host the same way, then test every rule. */
static int linear_decide(const struct sl_policy *p, const char *host, size_t len)
{
	char h[SL_HOST_BUF];
	enum sl_host_kind kind;
	size_t i;
	int verdict = 0;

	if (sl_host_normalize(host, len, h, &kind, NULL) < 0)
		return 0;
	for (i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = &p->rules[i];
		int match = r->wildcard ? sl_host_is_below(h, r->host) : !strcmp(h, r->host);

		if (!match)
			continue;
		if (r->kind == SL_RULE_DENY)
			return 0;
		verdict = 1;
	}
	return verdict;
}

#define N_HOSTS 64

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 10, 1000, 10000 };
	long iterations = argc > 1 ? atol(argv[1]) : 200000;
	char hosts[N_HOSTS][96];
	size_t s, i;

	if (iterations <= 0 || iterations > 100000000) {
		fprintf(stderr, "usage: bench-decide [ITERATIONS (1..1e8)]\n");
		return 2;
	}
	printf("%-8s %14s %14s %8s\n", "rules", "indexed ns/op", "linear ns/op", "ratio");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		struct sl_policy *p = make_policy(n);
		double t0, t_idx, t_lin;
		long it, allowed = 0, allowed_lin = 0;

		/* A request mix: exact hits, wildcard hits, deny twins, misses,
		 * mixed case and trailing dots, spread over the rule set. */
		for (i = 0; i < N_HOSTS; i++) {
			size_t k = (i * 7919) % n;

			switch (i % 4) {
			case 0:
				snprintf(hosts[i], sizeof(hosts[i]), "Service%zu.Example.com.", k - k % 4);
				break;
			case 1:
				snprintf(hosts[i], sizeof(hosts[i]), "api.v2.service%zu.example.com",
					 k - k % 4 + 3 < n ? k - k % 4 + 3 : 3);
				break;
			case 2:
				snprintf(hosts[i], sizeof(hosts[i]), "bad.service%zu.example.com", k);
				break;
			default:
				snprintf(hosts[i], sizeof(hosts[i]), "unknown%zu.example.org", k);
				break;
			}
		}

		t0 = now_ns();
		for (it = 0; it < iterations; it++) {
			const char *h = hosts[it % N_HOSTS];
			struct sl_request req = { .host = h, .host_len = strlen(h), .port = 443 };
			struct sl_decision d;

			sl_policy_decide(p, &req, &d);
			allowed += d.verdict == SL_VERDICT_ALLOW;
		}
		t_idx = (now_ns() - t0) / (double)iterations;

		/* The linear scan gets fewer iterations at 10k rules; its cost
		 * per op is what is compared. */
		long lin_it = n >= 10000 ? iterations / 50 : n >= 1000 ? iterations / 5 : iterations;
		if (lin_it < N_HOSTS)
			lin_it = N_HOSTS;
		t0 = now_ns();
		for (it = 0; it < lin_it; it++) {
			const char *h = hosts[it % N_HOSTS];
			allowed_lin += linear_decide(p, h, strlen(h));
		}
		t_lin = (now_ns() - t0) / (double)lin_it;

		/* Both matchers must agree, or the comparison means nothing. */
		for (i = 0; i < N_HOSTS; i++) {
			struct sl_request req = { .host = hosts[i], .host_len = strlen(hosts[i]), .port = 443 };
			struct sl_decision d;

			sl_policy_decide(p, &req, &d);
			if ((d.verdict == SL_VERDICT_ALLOW) != linear_decide(p, hosts[i], strlen(hosts[i]))) {
				fprintf(stderr, "matchers disagree on %s\n", hosts[i]);
				return 1;
			}
		}
		printf("%-8zu %14.1f %14.1f %7.1fx\n", n, t_idx, t_lin, t_lin / t_idx);
		(void)allowed;
		(void)allowed_lin;
		sl_policy_free(p);
	}
	return 0;
}
