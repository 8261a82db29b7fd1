/* SPDX-License-Identifier: MIT */
/*
 * Reading the guard ruleset back from the kernel (see nft-query.h): a get
 * of table inet sluice-guard, a get of the uid's chain, a dump of that
 * chain's rules, all on a socket from sl_nft_open() and bracketed by the
 * ruleset generation so the three answers describe one ruleset. What they
 * hold is judged by nft-guard-check.c, which is pure.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "macro.h"
#include "nft-internal.h"
#include "nft-query.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_nft *, sl_nft_close);

/* Reads repeated when the ruleset changed while they were made. */
#define GENID_RETRIES 5
/* A chain that holds more than this is not one guard made; the answer says
 * so without reading (and holding) all of it. */
#define MAX_RULES 4096

/* What one reading holds; freed with view_done(). */
struct view {
	bool has_table;
	uint32_t table_flags;
	struct nftnl_chain *chain;
	struct nftnl_rule **rules;
	size_t n_rules;
	bool too_many;
	const char *chain_name;
	int error; /* of a callback: -ENOMEM */
};

static void view_done(struct view *v)
{
	if (v->chain)
		nftnl_chain_free(v->chain);
	for (size_t i = 0; i < v->n_rules; i++)
		nftnl_rule_free(v->rules[i]);
	free(v->rules);
	*v = (struct view){ 0 };
}

static int table_cb(const struct nlmsghdr *nlh, void *data)
{
	struct view *v = data;
	struct nftnl_table *t = nftnl_table_alloc();

	if (!t) {
		v->error = -ENOMEM;
		return MNL_CB_ERROR;
	}
	if (nftnl_table_nlmsg_parse(nlh, t) >= 0 &&
	    nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY) == NFPROTO_INET &&
	    nftnl_table_is_set(t, NFTNL_TABLE_NAME) &&
	    !strcmp(nftnl_table_get_str(t, NFTNL_TABLE_NAME), SL_NFT_GUARD_TABLE)) {
		v->has_table = true;
		v->table_flags = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS);
	}
	nftnl_table_free(t);
	return MNL_CB_OK;
}

static int chain_cb(const struct nlmsghdr *nlh, void *data)
{
	struct view *v = data;
	struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c) {
		v->error = -ENOMEM;
		return MNL_CB_ERROR;
	}
	if (nftnl_chain_nlmsg_parse(nlh, c) >= 0 &&
	    nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY) == NFPROTO_INET &&
	    nftnl_chain_is_set(c, NFTNL_CHAIN_TABLE) && nftnl_chain_is_set(c, NFTNL_CHAIN_NAME) &&
	    !strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), SL_NFT_GUARD_TABLE) &&
	    !strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME), v->chain_name) && !v->chain) {
		v->chain = c;
		return MNL_CB_OK;
	}
	nftnl_chain_free(c);
	return MNL_CB_OK;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct view *v = data;
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_rule **rules;

	if (!r) {
		v->error = -ENOMEM;
		return MNL_CB_ERROR;
	}
	/* The dump is asked for this table and chain only; filter anyway, so
	 * a kernel that ignores the filter cannot mix in other rules. */
	if (nftnl_rule_nlmsg_parse(nlh, r) < 0 ||
	    nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) != NFPROTO_INET ||
	    !nftnl_rule_is_set(r, NFTNL_RULE_TABLE) || !nftnl_rule_is_set(r, NFTNL_RULE_CHAIN) ||
	    strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), SL_NFT_GUARD_TABLE) ||
	    strcmp(nftnl_rule_get_str(r, NFTNL_RULE_CHAIN), v->chain_name)) {
		nftnl_rule_free(r);
		return MNL_CB_OK;
	}
	if (v->n_rules >= MAX_RULES) {
		v->too_many = true;
		nftnl_rule_free(r);
		return MNL_CB_OK;
	}
	rules = reallocarray(v->rules, v->n_rules + 1, sizeof(*rules));
	if (!rules) {
		nftnl_rule_free(r);
		v->error = -ENOMEM;
		return MNL_CB_ERROR;
	}
	v->rules = rules;
	v->rules[v->n_rules++] = r;
	return MNL_CB_OK;
}

static int get_table(struct sl_nft *nft, struct view *v)
{
	char buf[1024];
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;
	int r;

	if (!t)
		return -ENOMEM;
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, SL_NFT_GUARD_TABLE) < 0) {
		nftnl_table_free(t);
		return -ENOMEM;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, NFPROTO_INET, NLM_F_ACK, nft->seq++);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	r = sl_nft_request(nft, nlh, table_cb, v);
	if (v->error < 0)
		return v->error;
	/* No such table is an answer, not a failure. */
	return r == -ENOENT ? 0 : r;
}

static int get_chain(struct sl_nft *nft, struct view *v)
{
	char buf[1024];
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh;
	int r;

	if (!c)
		return -ENOMEM;
	if (nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, SL_NFT_GUARD_TABLE) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, v->chain_name) < 0) {
		nftnl_chain_free(c);
		return -ENOMEM;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETCHAIN, NFPROTO_INET, NLM_F_ACK, nft->seq++);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	nftnl_chain_free(c);
	r = sl_nft_request(nft, nlh, chain_cb, v);
	if (v->error < 0)
		return v->error;
	return r == -ENOENT ? 0 : r;
}

static int dump_rules(struct sl_nft *nft, struct view *v)
{
	char buf[1024];
	struct nftnl_rule *rule = nftnl_rule_alloc();
	struct nlmsghdr *nlh;
	int r;

	if (!rule)
		return -ENOMEM;
	if (nftnl_rule_set_str(rule, NFTNL_RULE_TABLE, SL_NFT_GUARD_TABLE) < 0 ||
	    nftnl_rule_set_str(rule, NFTNL_RULE_CHAIN, v->chain_name) < 0) {
		nftnl_rule_free(rule);
		return -ENOMEM;
	}
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETRULE, NFPROTO_INET, NLM_F_DUMP, nft->seq++);
	nftnl_rule_nlmsg_build_payload(nlh, rule);
	nftnl_rule_free(rule);
	r = sl_nft_request(nft, nlh, rule_cb, v);
	if (v->error < 0)
		return v->error;
	/* The chain went between the two reads: the generation check below
	 * sends us round again. */
	return r == -ENOENT ? 0 : r;
}

/* One reading; -ERESTART when the ruleset changed while it was made. */
static int read_once(struct sl_nft *nft, struct view *v, char *err, size_t errlen)
{
	uint32_t gen0, gen1;
	const char *what;
	int r;

	r = sl_nft_get_genid(nft, &gen0, err, errlen);
	if (r < 0)
		return r;
	what = "table";
	r = get_table(nft, v);
	if (r >= 0 && v->has_table) {
		what = "chain";
		r = get_chain(nft, v);
	}
	if (r >= 0 && v->chain) {
		what = "rules";
		r = dump_rules(nft, v);
	}
	if (r < 0) {
		sl_nft_set_err(err, errlen, "reading the %s of table inet %s%s%s: %s", what,
			       SL_NFT_GUARD_TABLE, v->chain ? ", chain " : "",
			       v->chain ? v->chain_name : "", strerror(-r));
		return r;
	}
	r = sl_nft_get_genid(nft, &gen1, err, errlen);
	if (r < 0)
		return r;
	return gen0 == gen1 ? 0 : -ERESTART;
}

int sl_nft_guard_check(const struct sl_nft_guard *cfg, struct sl_nft_guard_report *ret,
		       char *err, size_t errlen)
{
	_cleanup_(sl_nft_closep) struct sl_nft *nft = NULL;
	struct sl_nft_guard_report rep;
	struct view v = { 0 };
	char chain[32];
	int r;

	if (!cfg || !ret || cfg->uid == (uid_t)-1 ||
	    (cfg->family != AF_UNSPEC && cfg->family != AF_INET && cfg->family != AF_INET6)) {
		sl_nft_set_err(err, errlen, "guard check: a uid, and an IPv4 or IPv6 gateway "
					    "or none");
		return -EINVAL;
	}
	sl_nft_guard_chain_name(cfg->uid, chain, sizeof(chain));
	r = sl_nft_open(&nft, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < GENID_RETRIES; i++) {
		view_done(&v);
		v.chain_name = chain;
		r = read_once(nft, &v, err, errlen);
		if (r != -ERESTART)
			break;
	}
	if (r == -ERESTART) {
		view_done(&v);
		sl_nft_set_err(err, errlen, "reading table inet %s: the ruleset kept changing "
					    "(%d tries)",
			       SL_NFT_GUARD_TABLE, GENID_RETRIES);
		return -EAGAIN;
	}
	if (r < 0) {
		view_done(&v);
		return r;
	}

	r = sl_nft_guard_judge(&(struct sl_nft_guard_view){ .has_table = v.has_table,
							     .table_flags = v.table_flags,
							     .chain = v.chain,
							     .rules = v.rules,
							     .n_rules = v.n_rules },
			       cfg, &rep);
	if (r >= 0 && v.too_many) {
		size_t l = strlen(rep.why);

		rep.state = SL_NFT_GUARD_CHANGED;
		snprintf(rep.why + l, sizeof(rep.why) - l, "%schain %s holds more than %d rules",
			 l ? "; " : "", chain, MAX_RULES);
	}
	view_done(&v);
	if (r < 0) {
		sl_nft_set_err(err, errlen, "comparing chain %s with guard's rules: %s", chain,
			       strerror(-r));
		return r;
	}
	*ret = rep;
	return 0;
}
