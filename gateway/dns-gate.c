/* SPDX-License-Identifier: MIT */
/*
 * The gate every name passes before the gateway's resolver sends it
 * upstream: the sandbox's DNS queries, CONNECT and absolute-form targets,
 * captured Host headers and SNI, inspected requests alike. A name under a
 * wildcard rule was chosen by the agent, and its lookup alone carries the
 * labels to whoever runs the zone; the DNS budget (dns-budget.h) bounds
 * how many new ones leave per minute. A name an allow rule lists exactly
 * was chosen by the policy and passes freely; so does anything answered
 * from the cache, which never reaches the gate.
 *
 * A refusal is audited once per suffix per window, with the count of the
 * refusals the window kept out of the log: the agent must not be able to
 * flood the log with the very names it could not send.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "dns-budget.h"
#include "gateway-internal.h"
#include "resolve.h"

/* Suffixes tracked at once: far more wildcard rules than a policy has. */
#define BUDGET_SUFFIXES 1024

_Static_assert(SL_POLICY_DNS_NEW_NAMES_MAX <= SL_DNS_BUDGET_LIMIT_MAX,
	       "the budget must take every limit a policy may set");

static void audit_suppressed(void *data, const char *suffix, uint64_t n)
{
	struct sl_gw *gw = data;

	(void)sl_audit_write_summary(
	    gw->audit, gw->cfg.sandbox, "dns", 0,
	    "dns-budget: %llu more new names under *.%s refused, not logged", (unsigned long long)n,
	    suffix);
	(void)sl_gw_audit_ok(gw);
}

static void audit_refusal(struct sl_gw *gw, const struct sl_rule *rule, const char *name,
			  unsigned limit, const struct sl_dns_budget_refusal *ref)
{
	char id[96], reason[SL_HOST_BUF + 160];
	struct sl_audit_record r = {
	    .ts_ms = sl_audit_now_ms(),
	    .sandbox = gw->cfg.sandbox,
	    .event = "dns",
	    .host = name,
	    .port = -1,
	    .status = -1,
	    .decision = "deny",
	    .rule = sl_rule_id(rule, id, sizeof(id)),
	    .reason = reason,
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = 0,
	};

	if (!gw->audit)
		return;
	if (ref->suppressed)
		audit_suppressed(gw, rule->host, ref->suppressed);
	snprintf(reason, sizeof(reason),
		 "dns-budget: %u new names under *.%s in the last minute; more are refused "
		 "for the rest of it, and not logged one by one",
		 limit, rule->host);
	(void)sl_audit_write(gw->audit, &r);
	(void)sl_gw_audit_ok(gw);
}

/* Observe mode: a name no allow rule lets the sandbox resolve was chosen
 * by the agent as much as one under a wildcard, so it is budgeted too:
 * under its last two labels (sl_policy_observe_suffix), and all of them
 * together under OBSERVE_ALL (a zone per suffix is one registration per
 * 60 names a minute; this bounds even many of them). docs/observe.md
 * says what it costs. */
#define OBSERVE_ALL "(observe: every name no rule allows)"
#define OBSERVE_ALL_FACTOR 4

static int gate_observed(struct sl_gw *gw, const struct sl_policy *p, const char *name)
{
	char norm[SL_HOST_BUF], suffix[SL_HOST_BUF], why[SL_HOST_BUF + 160];
	struct sl_dns_budget_refusal ref = {0};
	unsigned limit = sl_policy_dns_new_names(p), all = limit * OBSERVE_ALL_FACTOR;
	enum sl_host_kind kind;
	int r;

	if (sl_host_normalize(name, strlen(name), norm, &kind, NULL) < 0 || kind != SL_HOST_NAME)
		return 0; /* an IP literal: nothing to send upstream */
	sl_policy_observe_suffix(norm, suffix, sizeof(suffix));
	if (all > SL_DNS_BUDGET_LIMIT_MAX)
		all = SL_DNS_BUDGET_LIMIT_MAX;
	r = sl_dns_budget_charge(gw->budget, suffix, norm, limit, uv_now(gw->loop), &ref);
	if (r >= 0) {
		r = sl_dns_budget_charge(gw->budget, OBSERVE_ALL, norm, all, uv_now(gw->loop), &ref);
		snprintf(suffix, sizeof(suffix), "%s", OBSERVE_ALL);
		limit = all;
	}
	if (r >= 0)
		return 0;
	if (r == -EDQUOT && ref.audit && gw->audit) {
		struct sl_audit_record rec = {
		    .ts_ms = sl_audit_now_ms(),
		    .sandbox = gw->cfg.sandbox,
		    .event = "dns",
		    .host = norm,
		    .port = -1,
		    .status = -1,
		    .decision = "deny",
		    .rule = "default",
		    .reason = why,
		    .bytes_up = -1,
		    .bytes_down = -1,
		};

		if (ref.suppressed)
			audit_suppressed(gw, suffix, ref.suppressed);
		snprintf(why, sizeof(why),
			 "dns-budget: observe mode: %u new names under %s in the last minute; more "
			 "are refused for the rest of it, and not logged one by one",
			 limit, suffix);
		(void)sl_audit_write(gw->audit, &rec);
		(void)sl_gw_audit_ok(gw);
	}
	return -EDQUOT;
}

static int gate(void *data, const char *name)
{
	struct sl_gw *gw = data;
	const struct sl_policy *p = gw->policy->p;
	const struct sl_rule *rule = sl_policy_name_wildcard(p, name, strlen(name));
	struct sl_dns_budget_refusal ref = {0};
	unsigned limit;
	int r;

	if (!rule && p->mode == SL_MODE_OBSERVE && !sl_policy_name_allowed(p, name, strlen(name)))
		return gate_observed(gw, p, name);
	if (!rule)
		return 0;
	limit = sl_policy_dns_new_names(p);
	r = sl_dns_budget_charge(gw->budget, rule->host, name, limit, uv_now(gw->loop), &ref);
	if (r >= 0)
		return 0;
	if (r == -EDQUOT && ref.audit)
		audit_refusal(gw, rule, name, limit, &ref);
	else if (r != -EDQUOT)
		fprintf(stderr, "sluice gateway: DNS budget for *.%s: %s; %s not resolved\n",
			rule->host, strerror(-r), name);
	/* Every refusal looks the same to the caller: the name did not go. */
	return -EDQUOT;
}

int sl_gw_budget_init(struct sl_gw *gw)
{
	int r = sl_dns_budget_new(BUDGET_SUFFIXES, &gw->budget);

	if (r < 0)
		return r;
	sl_gw_resolver_set_gate(gw->resolver, gate, gw);
	return 0;
}

/* The gate once the gateway is going: nothing new goes upstream, and
 * nothing refers to the gateway, which may be freed before the resolver. */
static int gate_closed(void *data, const char *name)
{
	(void)data;
	(void)name;
	return -EIO; /* the caller's callback runs (with an error), as it must */
}

void sl_gw_budget_stop(struct sl_gw *gw)
{
	sl_gw_resolver_set_gate(gw->resolver, gate_closed, NULL);
}

void sl_gw_budget_free(struct sl_gw *gw)
{
	if (!gw->budget)
		return;
	if (gw->audit)
		sl_dns_budget_flush(gw->budget, audit_suppressed, gw);
	sl_dns_budget_free(gw->budget);
	gw->budget = NULL;
}
