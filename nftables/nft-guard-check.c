/* SPDX-License-Identifier: MIT */
/*
 * Is the guard ruleset the kernel holds the one `sluice guard` installs?
 * Pure (see nft-query.h): the expected rules come from sl_nft_guard_plan()
 * itself, so the check follows whatever guard installs and can never drift
 * from it, and both sides are compared in libnftnl's own text form of each
 * expression (what `nft --debug=netlink` shows), which names every field
 * the kernel matches on.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/udata.h>

#include "macro.h"
#include "nft-internal.h"
#include "nft-query.h"

/* One rule's expressions as text. Ours are under 600 bytes; a rule whose
 * text does not fit is not one of ours, and is marked so (never equal). */
#define RULE_TEXT_MAX 2048

struct judge {
	struct sl_nft_guard_report *rep;
	bool full;
};

/* Appends one finding to rep->why, "; " between findings, "..." when the
 * buffer is full. */
_printf_(2, 3) static void why_add(struct judge *j, const char *fmt, ...)
{
	char *why = j->rep->why;
	size_t size = sizeof(j->rep->why), l = strlen(why);
	va_list ap;
	int n;

	if (j->full)
		return;
	if (l && l + 2 < size) {
		memcpy(why + l, "; ", 3);
		l += 2;
	}
	va_start(ap, fmt);
	n = vsnprintf(why + l, size - l, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size - l) {
		memcpy(why + size - 4, "...", 4);
		j->full = true;
	}
}

static const char *hook_name(uint32_t hook)
{
	switch (hook) {
	case NF_INET_PRE_ROUTING:
		return "prerouting";
	case NF_INET_LOCAL_IN:
		return "input";
	case NF_INET_FORWARD:
		return "forward";
	case NF_INET_LOCAL_OUT:
		return "output";
	case NF_INET_POST_ROUTING:
		return "postrouting";
	default:
		return "?";
	}
}

static const char *policy_name(uint32_t policy)
{
	return policy == NF_ACCEPT ? "accept" : policy == NF_DROP ? "drop" : "?";
}

/* ---- Rules as text ---- */

static int comment_cb(const struct nftnl_udata *attr, void *data)
{
	const char **ret = data;
	uint8_t len = nftnl_udata_len(attr);
	const char *value = nftnl_udata_get(attr);

	/* The kernel keeps userdata as given: it is a string only when it
	 * says so with its own NUL. */
	if (nftnl_udata_type(attr) == NFTNL_UDATA_RULE_COMMENT && len > 0 && !value[len - 1])
		*ret = value;
	return 0;
}

/* The rule's comment (inside the rule's own storage), or "". */
static const char *rule_comment(const struct nftnl_rule *r)
{
	const char *comment = "";
	const void *data;
	uint32_t len = 0;

	if (!nftnl_rule_is_set(r, NFTNL_RULE_USERDATA))
		return comment;
	data = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &len);
	if (data && len)
		(void)nftnl_udata_parse(data, len, comment_cb, &comment);
	return comment;
}

int sl_nft_guard_rule_text(const struct nftnl_rule *r, char **ret)
{
	_cleanup_free_ char *buf = malloc(RULE_TEXT_MAX);
	struct nftnl_expr_iter *it;
	struct nftnl_expr *e;
	size_t l = 0;
	bool fits = true;

	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	it = nftnl_expr_iter_create(r);
	if (!it)
		return -ENOMEM;
	while (fits && (e = nftnl_expr_iter_next(it))) {
		const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
		int n = snprintf(buf + l, RULE_TEXT_MAX - l, "[ %s ", name ? name : "?");

		if (n < 0 || (size_t)n >= RULE_TEXT_MAX - l) {
			fits = false;
			break;
		}
		l += (size_t)n;
		/* A stateful expression comes back with its state (a counter
		 * with the packets it counted): compare only that it is there. */
		n = name && (!strcmp(name, "counter") || !strcmp(name, "last"))
			    ? 0
			    : nftnl_expr_snprintf(buf + l, RULE_TEXT_MAX - l, e,
						  NFTNL_OUTPUT_DEFAULT, 0);
		if (n < 0 || (size_t)n >= RULE_TEXT_MAX - l) {
			fits = false;
			break;
		}
		l += (size_t)n;
		n = snprintf(buf + l, RULE_TEXT_MAX - l, "] ");
		if (n < 0 || (size_t)n >= RULE_TEXT_MAX - l)
			fits = false;
		else
			l += (size_t)n;
	}
	nftnl_expr_iter_destroy(it);
	if (!fits)
		snprintf(buf, RULE_TEXT_MAX, "(a rule too long to be sluice's)");
	*ret = TAKE_PTR(buf);
	return 0;
}

/* ---- The gateway of an accept rule ---- */

int sl_nft_guard_gateway_of(const struct nftnl_rule *r, uid_t uid, struct sl_nft_guard *ret)
{
	struct sl_nft_guard g = { .uid = uid, .family = AF_UNSPEC };
	/* What the last load put in register 1, for the compare after it. */
	enum { NONE, SKUID, L4PROTO, DADDR4, DADDR6, DPORT, OTHER } loaded = NONE;
	bool uid_ok = false, tcp = false, have_port = false, accept = false;
	struct nftnl_expr_iter *it;
	struct nftnl_expr *e;

	it = nftnl_expr_iter_create(r);
	if (!it)
		return -ENOMEM;
	while ((e = nftnl_expr_iter_next(it))) {
		const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
		const void *data;
		uint32_t len = 0;

		accept = false; /* only the last expression decides */
		if (!name)
			break;
		if (!strcmp(name, "meta")) {
			uint32_t key = nftnl_expr_get_u32(e, NFTNL_EXPR_META_KEY);

			loaded = key == NFT_META_SKUID ? SKUID : key == NFT_META_L4PROTO ? L4PROTO
											    : OTHER;
		} else if (!strcmp(name, "payload")) {
			uint32_t base = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_BASE);
			uint32_t off = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET);
			uint32_t plen = nftnl_expr_get_u32(e, NFTNL_EXPR_PAYLOAD_LEN);

			if (base == NFT_PAYLOAD_NETWORK_HEADER && off == 16 && plen == 4)
				loaded = DADDR4;
			else if (base == NFT_PAYLOAD_NETWORK_HEADER && off == 24 && plen == 16)
				loaded = DADDR6;
			else if (base == NFT_PAYLOAD_TRANSPORT_HEADER && off == 2 && plen == 2)
				loaded = DPORT;
			else
				loaded = OTHER;
		} else if (!strcmp(name, "cmp")) {
			if (nftnl_expr_get_u32(e, NFTNL_EXPR_CMP_OP) != NFT_CMP_EQ)
				continue;
			data = nftnl_expr_get(e, NFTNL_EXPR_CMP_DATA, &len);
			if (!data)
				continue;
			if (loaded == SKUID && len == sizeof(uint32_t)) {
				uint32_t v;

				memcpy(&v, data, sizeof(v));
				uid_ok = v == (uint32_t)uid;
			} else if (loaded == L4PROTO && len == 1) {
				tcp = *(const uint8_t *)data == IPPROTO_TCP;
			} else if (loaded == DADDR4 && len == sizeof(g.addr4)) {
				memcpy(&g.addr4, data, len);
				g.family = AF_INET;
			} else if (loaded == DADDR6 && len == sizeof(g.addr6)) {
				memcpy(&g.addr6, data, len);
				g.family = AF_INET6;
			} else if (loaded == DPORT && len == sizeof(uint16_t)) {
				uint16_t be;

				memcpy(&be, data, sizeof(be));
				g.port = ntohs(be);
				have_port = true;
			}
		} else if (!strcmp(name, "immediate")) {
			accept = nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_DREG) == NFT_REG_VERDICT &&
				 nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_VERDICT) == (uint32_t)NF_ACCEPT;
		}
	}
	nftnl_expr_iter_destroy(it);
	if (!uid_ok || !tcp || !have_port || !g.port || g.family == AF_UNSPEC || !accept)
		return -ENOENT;
	*ret = g;
	return 0;
}

/* ---- The judgement ---- */

struct rules {
	char **text;
	const char **comment;
	size_t n;
};

static void rules_done(struct rules *rs)
{
	for (size_t i = 0; rs->text && i < rs->n; i++)
		free(rs->text[i]);
	free(rs->text);
	free(rs->comment);
	*rs = (struct rules){ 0 };
}

static int rules_add(struct rules *rs, size_t cap, const struct nftnl_rule *r)
{
	int e;

	if (!rs->text) {
		rs->text = calloc(cap ? cap : 1, sizeof(*rs->text));
		rs->comment = calloc(cap ? cap : 1, sizeof(*rs->comment));
		if (!rs->text || !rs->comment)
			return -ENOMEM;
	}
	e = sl_nft_guard_rule_text(r, &rs->text[rs->n]);
	if (e < 0)
		return e;
	rs->comment[rs->n++] = rule_comment(r);
	return 0;
}

static void judge_chain(struct judge *j, const struct nftnl_chain *have,
			const struct nftnl_chain *want, const char *name)
{
	const char *htype, *wtype = nftnl_chain_get_str(want, NFTNL_CHAIN_TYPE);
	uint32_t whook = nftnl_chain_get_u32(want, NFTNL_CHAIN_HOOKNUM);
	int32_t wprio = nftnl_chain_get_s32(want, NFTNL_CHAIN_PRIO);
	uint32_t wpolicy = nftnl_chain_get_u32(want, NFTNL_CHAIN_POLICY);
	uint32_t hhook, hpolicy;
	int32_t hprio;

	if (!nftnl_chain_is_set(have, NFTNL_CHAIN_HOOKNUM)) {
		why_add(j, "chain %s is not a base chain (no hook): no packet passes through it",
			name);
		return;
	}
	htype = nftnl_chain_is_set(have, NFTNL_CHAIN_TYPE)
			? nftnl_chain_get_str(have, NFTNL_CHAIN_TYPE)
			: "";
	hhook = nftnl_chain_get_u32(have, NFTNL_CHAIN_HOOKNUM);
	hprio = nftnl_chain_is_set(have, NFTNL_CHAIN_PRIO)
			? nftnl_chain_get_s32(have, NFTNL_CHAIN_PRIO)
			: wprio;
	/* A base chain without a policy attribute accepts. */
	hpolicy = nftnl_chain_is_set(have, NFTNL_CHAIN_POLICY)
			  ? nftnl_chain_get_u32(have, NFTNL_CHAIN_POLICY)
			  : (uint32_t)NF_ACCEPT;
	if (strcmp(htype ? htype : "", wtype ? wtype : "") || hhook != whook || hprio != wprio ||
	    hpolicy != wpolicy)
		why_add(j,
			"chain %s is type %s hook %s priority %d policy %s, where guard makes "
			"type %s hook %s priority %d policy %s",
			name, htype ? htype : "?", hook_name(hhook), (int)hprio,
			policy_name(hpolicy), wtype ? wtype : "?", hook_name(whook), (int)wprio,
			policy_name(wpolicy));
}

static void name_rule(const struct nftnl_rule *r, const char *comment, char *buf, size_t len)
{
	int n = 0;

	if (nftnl_rule_is_set(r, NFTNL_RULE_HANDLE))
		n = snprintf(buf, len, "handle %llu",
			     (unsigned long long)nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE));
	if (n < 0 || (size_t)n >= len)
		n = 0;
	if (comment[0])
		snprintf(buf + n, len - (size_t)n, "%s'%.64s'", n ? ", " : "", comment);
	else
		snprintf(buf + n, len - (size_t)n, "%sno comment", n ? ", " : "");
}

/* Which of want's rules are in have, in order; the rest is named. 0 or
 * -ENOMEM. */
static int judge_rules(struct judge *j, const struct rules *want, const struct rules *have,
			struct nftnl_rule *const *have_rules, const char *chain)
{
	_cleanup_free_ ssize_t *pos = calloc(want->n ? want->n : 1, sizeof(*pos));
	_cleanup_free_ bool *used = calloc(have->n ? have->n : 1, sizeof(*used));
	size_t next = 0;
	char what[128];

	if (!pos || !used)
		return -ENOMEM;
	if (!have->n) {
		why_add(j, "chain %s has no rules (guard installs %zu)", chain, want->n);
		return 0;
	}
	/* In order: each wanted rule at or after the one before it. */
	for (size_t i = 0; i < want->n; i++) {
		pos[i] = -1;
		for (size_t k = next; k < have->n; k++) {
			if (!strcmp(want->text[i], have->text[k])) {
				pos[i] = (ssize_t)k;
				used[k] = true;
				next = k + 1;
				break;
			}
		}
	}
	for (size_t i = 0; i < want->n; i++) {
		ssize_t found = -1;
		bool same_text = false;

		if (pos[i] >= 0)
			continue;
		/* Elsewhere (out of order), or changed but with its comment? */
		for (size_t k = 0; k < have->n && found < 0; k++)
			if (!used[k] && !strcmp(want->text[i], have->text[k])) {
				found = (ssize_t)k;
				same_text = true;
			}
		for (size_t k = 0; k < have->n && found < 0; k++)
			if (!used[k] && want->comment[i][0] &&
			    !strcmp(want->comment[i], have->comment[k]))
				found = (ssize_t)k;
		if (found >= 0) {
			used[found] = true;
			if (same_text)
				why_add(j, "rule %zu of %zu '%s' is out of place (it is rule %zd)",
					i + 1, want->n, want->comment[i], found + 1);
			else
				why_add(j, "rule %zu of %zu '%s' has been changed (rule %zd has its "
					   "comment, not its expressions)",
					i + 1, want->n, want->comment[i], found + 1);
		} else {
			why_add(j, "rule %zu of %zu '%s' is missing", i + 1, want->n,
				want->comment[i]);
		}
	}
	for (size_t k = 0; k < have->n; k++) {
		if (used[k])
			continue;
		name_rule(have_rules[k], have->comment[k], what, sizeof(what));
		why_add(j, "rule %zu of chain %s (%s) is not one guard installs", k + 1, chain,
			what);
	}
	return 0;
}

int sl_nft_guard_judge(const struct sl_nft_guard_view *view, const struct sl_nft_guard *cfg,
		       struct sl_nft_guard_report *ret)
{
	struct sl_nft_guard_report rep = { .state = SL_NFT_GUARD_INTACT };
	struct judge j = { .rep = &rep };
	struct rules want = { 0 }, have = { 0 };
	const struct nftnl_chain *want_chain = NULL;
	struct sl_nft_plan plan;
	char chain[32];
	size_t n_want = 0;
	int r = 0;

	if (!view || !cfg || !ret || cfg->uid == (uid_t)-1 ||
	    (cfg->family != AF_UNSPEC && cfg->family != AF_INET && cfg->family != AF_INET6))
		return -EINVAL;
	rep.checked = *cfg;
	rep.n_rules = view->chain ? view->n_rules : 0;
	sl_nft_guard_chain_name(cfg->uid, chain, sizeof(chain));
	sl_nft_plan_init(&plan);

	if (!view->has_table) {
		rep.state = SL_NFT_GUARD_NO_TABLE;
		why_add(&j, "there is no table inet %s", SL_NFT_GUARD_TABLE);
		goto done;
	}
	if (view->table_flags & NFT_TABLE_F_DORMANT)
		why_add(&j, "table inet %s is dormant: none of its rules is in force",
			SL_NFT_GUARD_TABLE);
	if (view->table_flags & ~(uint32_t)NFT_TABLE_F_DORMANT)
		why_add(&j, "table inet %s has flags 0x%x (guard sets none; an owner table goes "
			    "when its owner's socket closes)",
			SL_NFT_GUARD_TABLE, view->table_flags & ~(uint32_t)NFT_TABLE_F_DORMANT);
	if (!view->chain) {
		rep.state = SL_NFT_GUARD_NO_CHAIN;
		why_add(&j, "table inet %s has no chain %s", SL_NFT_GUARD_TABLE, chain);
		goto done;
	}

	/* No gateway given: the chain's own accept rule names it, and the
	 * rest is compared with what guard makes for that gateway. */
	if (rep.checked.family == AF_UNSPEC) {
		for (size_t k = 0; k < view->n_rules; k++)
			if (sl_nft_guard_gateway_of(view->rules[k], cfg->uid, &rep.checked) == 0)
				break;
	}
	if (rep.checked.family == AF_UNSPEC) {
		why_add(&j, "no rule of chain %s accepts tcp from uid %u to a gateway address "
			    "and port (%zu rules; give the gateway to compare them one by one)",
			chain, (unsigned)cfg->uid, view->n_rules);
		goto done;
	}

	r = sl_nft_guard_plan(&plan, &rep.checked, NULL, 0);
	if (r < 0)
		goto done;
	for (size_t i = 0; i < plan.n_ops; i++) {
		if (plan.ops[i].type == SL_NFT_OP_ADD_RULE)
			n_want++;
		else if (plan.ops[i].type == SL_NFT_OP_ADD_CHAIN && plan.ops[i].chain &&
			 !strcmp(nftnl_chain_get_str(plan.ops[i].chain, NFTNL_CHAIN_NAME), chain))
			want_chain = plan.ops[i].chain;
	}
	if (want_chain)
		judge_chain(&j, view->chain, want_chain, chain);
	for (size_t i = 0; i < plan.n_ops && r >= 0; i++)
		if (plan.ops[i].type == SL_NFT_OP_ADD_RULE)
			r = rules_add(&want, n_want, plan.ops[i].rule);
	for (size_t k = 0; k < view->n_rules && r >= 0; k++)
		r = rules_add(&have, view->n_rules, view->rules[k]);
	if (r >= 0)
		r = judge_rules(&j, &want, &have, view->rules, chain);

done:
	rules_done(&want);
	rules_done(&have);
	sl_nft_plan_done(&plan);
	if (r < 0)
		return r;
	if (rep.state == SL_NFT_GUARD_INTACT && rep.why[0])
		rep.state = SL_NFT_GUARD_CHANGED;
	*ret = rep;
	return 0;
}
