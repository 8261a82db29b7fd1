/* SPDX-License-Identifier: MIT */
/*
 * The DNS budget: how many distinct new names under one wildcard rule may
 * go to the upstream resolver in any window (a minute).
 *
 * Under `*.allowed.example` the agent chooses every label it resolves, and
 * each lookup the gateway sends upstream carries those labels to whoever
 * runs the zone: `x<hex>.allowed.example` is some 250 bytes out per query,
 * thousands of queries a second, with no connection ever made. The budget
 * bounds that channel to `limit` names per window per suffix, whichever
 * path the name came by (the sandbox's DNS server, CONNECT, the explicit
 * proxy, inspection): the resolver asks before any name goes upstream.
 * A name already counted in the window is free again (A and AAAA, retries,
 * names with a TTL of 0), and names answered from the cache never get here.
 *
 * Bounded whatever the agent sends: suffixes come from the policy (at most
 * `max_suffixes` are tracked at once; beyond that, every new name is
 * refused, so the bound never fails open), and a suffix remembers at most
 * `limit` names, those admitted in the last window. Pure data structure:
 * time comes from the caller, nothing here does I/O. Not thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The window, and the largest limit a policy may set (the names of one
 * suffix are searched one by one). */
#define SL_DNS_BUDGET_WINDOW_MS 60000
#define SL_DNS_BUDGET_LIMIT_MAX 10000

struct sl_dns_budget;

/* What a refusal asks the caller to say: one audit record per suffix per
 * window, however many names were refused. */
struct sl_dns_budget_refusal {
	bool audit;	     /* the first refusal for this suffix in a window */
	uint64_t suppressed; /* refusals since the last one audited, not audited */
};

/* max_suffixes: at least 1. */
int sl_dns_budget_new(size_t max_suffixes, struct sl_dns_budget **ret);
void sl_dns_budget_free(struct sl_dns_budget *b);

/*
 * Charge name, under the wildcard whose suffix is suffix, at now_ms (which
 * never goes back: an earlier time counts as the latest seen). limit is
 * the policy's, 1..SL_DNS_BUDGET_LIMIT_MAX; a new limit applies from the
 * next call (a reload). Returns
 *   1        a new name, admitted and counted;
 *   0        counted already in this window: admitted, not counted again;
 *   -EDQUOT  limit names were admitted in the last window: refused, and
 *            *ret_refusal (when not NULL) says whether to audit it;
 *   -ENOSPC  max_suffixes other suffixes are in use: refused;
 *   -ENOMEM, -EINVAL: refused.
 */
int sl_dns_budget_charge(struct sl_dns_budget *b, const char *suffix, const char *name,
			 unsigned limit, uint64_t now_ms,
			 struct sl_dns_budget_refusal *ret_refusal);

/* The names suffix holds at now_ms: admitted in the last window (for the
 * tests: never above the limit). */
size_t sl_dns_budget_count(struct sl_dns_budget *b, const char *suffix, uint64_t now_ms);

/* Refusals not yet audited, per suffix, for a summary at shutdown: calls
 * fn for each suffix with some, and forgets them. */
void sl_dns_budget_flush(struct sl_dns_budget *b,
			 void (*fn)(void *data, const char *suffix, uint64_t suppressed),
			 void *data);
