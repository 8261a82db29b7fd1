/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of `sluice guard --check`'s judgement (nftables/nft-guard-check.c):
 * a view of what the kernel holds, built here from guard's own plan and
 * then damaged the ways a ruleset is damaged in life (flushed, a rule
 * deleted, a rule added, reordered, another gateway, a dormant table, a
 * chain on another hook). No root, no socket.
 */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/udata.h>

#include "macro.h"
#include "nft-internal.h"
#include "nft-query.h"

#define UID 12345u
#define MAX_VIEW 160

static void assert_has_(const char *hay, const char *needle, const char *file, int line)
{
	if (!strstr(hay, needle))
		_fail(file, line), print_error("'%s' not in '%s'\n", needle, hay);
}
#define assert_has(hay, needle) assert_has_((hay), (needle), __FILE__, __LINE__)

/* A guard config for uid UID and gateway ADDR:PORT. */
static struct sl_nft_guard gw(const char *addr, uint16_t port)
{
	struct sl_nft_guard c = { .uid = UID, .port = port };

	if (strchr(addr, ':')) {
		c.family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, addr, &c.addr6), 1);
	} else {
		c.family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, addr, &c.addr4), 1);
	}
	return c;
}

/* What the kernel would hold after `sluice guard` with cfg: the plan's
 * chain and rules, as a view we can then damage. */
struct fixture {
	struct sl_nft_plan plan;
	struct sl_nft_guard_view view;
	struct nftnl_rule *rules[MAX_VIEW];
	struct nftnl_rule *own[MAX_VIEW]; /* rules made here, freed here */
	size_t n_own;
	struct nftnl_chain *own_chain;
	struct sl_nft_guard_report rep;
};

static void fixture_init(struct fixture *f, const struct sl_nft_guard *cfg)
{
	memset(f, 0, sizeof(*f));
	sl_nft_plan_init(&f->plan);
	assert_int_equal(sl_nft_guard_plan(&f->plan, cfg, NULL, 0), 0);
	f->view.has_table = true;
	f->view.rules = f->rules;
	for (size_t i = 0; i < f->plan.n_ops; i++) {
		if (f->plan.ops[i].type == SL_NFT_OP_ADD_CHAIN)
			f->view.chain = f->plan.ops[i].chain;
		else if (f->plan.ops[i].type == SL_NFT_OP_ADD_RULE)
			f->rules[f->view.n_rules++] = f->plan.ops[i].rule;
	}
	assert_non_null(f->view.chain);
	assert_true(f->view.n_rules >= 3);
}

static void fixture_done(struct fixture *f)
{
	for (size_t i = 0; i < f->n_own; i++)
		nftnl_rule_free(f->own[i]);
	if (f->own_chain)
		nftnl_chain_free(f->own_chain);
	sl_nft_plan_done(&f->plan);
}

static void remove_rule(struct fixture *f, size_t i)
{
	memmove(&f->rules[i], &f->rules[i + 1], (f->view.n_rules - i - 1) * sizeof(f->rules[0]));
	f->view.n_rules--;
}

static void insert_rule(struct fixture *f, size_t i, struct nftnl_rule *r)
{
	assert_true(f->view.n_rules < MAX_VIEW && f->n_own < MAX_VIEW);
	f->own[f->n_own++] = r;
	memmove(&f->rules[i + 1], &f->rules[i], (f->view.n_rules - i) * sizeof(f->rules[0]));
	f->rules[i] = r;
	f->view.n_rules++;
}

/* "meta skuid UID accept", with a comment when not NULL: the hole someone
 * would punch. */
static struct nftnl_rule *accept_all_rule(const char *comment)
{
	struct sl_nft_plan p;
	struct sl_nft_rb rb;
	struct nftnl_rule *r;

	sl_nft_plan_init(&p);
	sl_nft_rb_start(&rb, SL_NFT_GUARD_TABLE, "uid-12345");
	sl_nft_match_skuid(&rb, UID, true);
	sl_nft_act_verdict(&rb, NF_ACCEPT);
	assert_int_equal(sl_nft_plan_add_rule(&p, &rb, comment ? comment : "x"), 0);
	r = p.ops[0].rule;
	p.ops[0].rule = NULL;
	sl_nft_plan_done(&p);
	if (!comment)
		nftnl_rule_unset(r, NFTNL_RULE_USERDATA);
	return r;
}

static enum sl_nft_guard_state judge(struct fixture *f, const struct sl_nft_guard *cfg)
{
	memset(&f->rep, 0x5a, sizeof(f->rep));
	assert_int_equal(sl_nft_guard_judge(&f->view, cfg, &f->rep), 0);
	assert_non_null(memchr(f->rep.why, '\0', sizeof(f->rep.why)));
	return f->rep.state;
}

static void test_intact(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128), nogw = { .uid = UID, .family = AF_UNSPEC };
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_INTACT);
	assert_string_equal(f.rep.why, "");
	assert_int_equal(f.rep.n_rules, f.view.n_rules);

	/* Without a gateway, the chain's accept rule names it. */
	assert_int_equal(judge(&f, &nogw), SL_NFT_GUARD_INTACT);
	assert_int_equal(f.rep.checked.family, AF_INET);
	assert_int_equal(f.rep.checked.port, 3128);
	assert_memory_equal(&f.rep.checked.addr4, &c.addr4, sizeof(c.addr4));
	fixture_done(&f);

	c = gw("2001:db8::1", 8080);
	fixture_init(&f, &c);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_INTACT);
	assert_int_equal(judge(&f, &nogw), SL_NFT_GUARD_INTACT);
	assert_int_equal(f.rep.checked.family, AF_INET6);
	assert_memory_equal(&f.rep.checked.addr6, &c.addr6, sizeof(c.addr6));
	fixture_done(&f);
}

static void test_missing_table_and_chain(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	f.view.has_table = false;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_NO_TABLE);
	assert_has(f.rep.why, "no table inet sluice-guard");

	f.view.has_table = true;
	f.view.chain = NULL;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_NO_CHAIN);
	assert_has(f.rep.why, "no chain uid-12345");
	assert_int_equal(f.rep.n_rules, 0);
	fixture_done(&f);
}

static void test_table_flags(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	f.view.table_flags = NFT_TABLE_F_DORMANT;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "dormant");
	f.view.table_flags = NFT_TABLE_F_OWNER;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "has flags 0x2");
	fixture_done(&f);
}

static void test_rule_deleted(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	char want[128];
	struct fixture f;
	size_t n;

	(void)state;
	fixture_init(&f, &c);
	n = f.view.n_rules;
	remove_rule(&f, 1);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	snprintf(want, sizeof(want), "rule 2 of %zu 'reject tcp with reset' is missing", n);
	assert_string_equal(f.rep.why, want);

	/* The accept rule too: without a gateway given, nothing names one. */
	remove_rule(&f, 0);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "'accept tcp to gateway 127.0.0.1:3128' is missing");
	assert_int_equal(judge(&f, &(struct sl_nft_guard){ .uid = UID, .family = AF_UNSPEC }),
			 SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "no rule of chain uid-12345 accepts tcp from uid 12345");

	/* All of them. */
	while (f.view.n_rules)
		remove_rule(&f, 0);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "chain uid-12345 has no rules");
	fixture_done(&f);
}

static void test_rule_added(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	insert_rule(&f, 0, accept_all_rule(NULL));
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "rule 1 of chain uid-12345 (no comment) is not one guard installs");
	/* Nothing of guard's is reported missing: only the extra one. */
	assert_null(strstr(f.rep.why, "missing"));

	remove_rule(&f, 0);
	insert_rule(&f, f.view.n_rules, accept_all_rule("let me out"));
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "('let me out') is not one guard installs");
	fixture_done(&f);
}

static void test_reordered_and_changed(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct nftnl_rule *tmp, *fake;
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	tmp = f.rules[0];
	f.rules[0] = f.rules[1];
	f.rules[1] = tmp;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "is out of place");
	f.rules[1] = f.rules[0];
	f.rules[0] = tmp;

	/* Same comment, other expressions: changed, named by its comment. */
	fake = accept_all_rule("reject tcp with reset");
	f.own[f.n_own++] = fake;
	f.rules[1] = fake;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "'reject tcp with reset' has been changed");
	fixture_done(&f);
}

static void test_other_gateway(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128), other = gw("10.0.0.1", 3128);
	struct fixture f;

	(void)state;
	fixture_init(&f, &other);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "'accept tcp to gateway 127.0.0.1:3128' is missing");
	assert_has(f.rep.why, "('accept tcp to gateway 10.0.0.1:3128') is not one guard installs");
	fixture_done(&f);

	other = gw("127.0.0.1", 3129);
	fixture_init(&f, &other);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	fixture_done(&f);

	/* Another uid's chain content under this uid's name. */
	other = gw("127.0.0.1", 3128);
	other.uid = UID + 1;
	fixture_init(&f, &other);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	fixture_done(&f);
}

static void test_chain_hook(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct nftnl_chain *ch;
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	ch = nftnl_chain_alloc();
	assert_non_null(ch);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, SL_NFT_GUARD_TABLE);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, "uid-12345");
	f.own_chain = ch;
	f.view.chain = ch;
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "not a base chain");

	nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_IN);
	nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, 0);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, "filter");
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "hook input priority 0 policy accept, where guard makes type "
			      "filter hook output priority 0 policy accept");

	nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_INTACT);
	nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, 10);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "priority 10");
	fixture_done(&f);
}

/* A rule as it comes back from the kernel: serialised into a NEWRULE
 * message and parsed again, so the comparison is of what a dump gives, not
 * of the builder's objects. */
static struct nftnl_rule *round_trip(const struct nftnl_rule *r)
{
	static char buf[8192];
	struct nlmsghdr *nlh;
	struct nftnl_rule *back = nftnl_rule_alloc();

	assert_non_null(back);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWRULE, NFPROTO_INET, 0, 1);
	nftnl_rule_nlmsg_build_payload(nlh, (struct nftnl_rule *)r);
	assert_true(nftnl_rule_nlmsg_parse(nlh, back) >= 0);
	nftnl_rule_set_u64(back, NFTNL_RULE_HANDLE, 42);
	return back;
}

static void test_round_trip(void **state)
{
	struct sl_nft_guard c = gw("::1", 3128);
	struct nftnl_rule *orig;
	struct fixture f;
	size_t n;

	(void)state;
	fixture_init(&f, &c);
	n = f.view.n_rules;
	for (size_t i = 0; i < n; i++) {
		struct nftnl_rule *back = round_trip(f.rules[i]);

		f.own[f.n_own++] = back;
		f.rules[i] = back;
	}
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_INTACT);
	orig = accept_all_rule("punched");
	insert_rule(&f, 1, round_trip(orig));
	nftnl_rule_free(orig);
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	assert_has(f.rep.why, "rule 2 of chain uid-12345 (handle 42, 'punched')");
	fixture_done(&f);
}

/* A counter comes back with what it counted; that is not a difference. */
static void test_counter_state(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	_cleanup_free_ char *plain = NULL, *counted = NULL, *fresh = NULL;
	struct nftnl_rule *with[2];
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	for (size_t i = 0; i < 2; i++) {
		struct nftnl_expr *e = nftnl_expr_alloc("counter");

		assert_non_null(e);
		with[i] = round_trip(f.rules[1]);
		nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_PACKETS, i ? 0 : 7);
		nftnl_expr_set_u64(e, NFTNL_EXPR_CTR_BYTES, i ? 0 : 700);
		nftnl_rule_add_expr(with[i], e);
		f.own[f.n_own++] = with[i];
	}
	assert_int_equal(sl_nft_guard_rule_text(f.rules[1], &plain), 0);
	assert_int_equal(sl_nft_guard_rule_text(with[0], &counted), 0);
	assert_int_equal(sl_nft_guard_rule_text(with[1], &fresh), 0);
	assert_string_equal(counted, fresh);
	assert_string_not_equal(plain, counted);
	assert_has(plain, "[ meta load skuid => reg 1 ] [ cmp eq reg 1 0x00003039 ]");
	fixture_done(&f);
}

static void test_gateway_of(void **state)
{
	struct sl_nft_guard c = gw("203.0.113.7", 443), got;
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	assert_int_equal(sl_nft_guard_gateway_of(f.rules[0], UID, &got), 0);
	assert_int_equal(got.family, AF_INET);
	assert_int_equal(got.port, 443);
	assert_int_equal(got.uid, UID);
	assert_memory_equal(&got.addr4, &c.addr4, sizeof(c.addr4));
	/* Another uid's rule, a reject, a bare accept: no gateway. */
	assert_int_equal(sl_nft_guard_gateway_of(f.rules[0], UID + 1, &got), -ENOENT);
	assert_int_equal(sl_nft_guard_gateway_of(f.rules[1], UID, &got), -ENOENT);
	insert_rule(&f, 0, accept_all_rule(NULL));
	assert_int_equal(sl_nft_guard_gateway_of(f.rules[0], UID, &got), -ENOENT);
	fixture_done(&f);
}

static void test_many_findings(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct fixture f;
	size_t l;

	(void)state;
	fixture_init(&f, &c);
	while (f.view.n_rules < MAX_VIEW - 1)
		insert_rule(&f, 0, accept_all_rule("a rule someone added, with a long comment"));
	assert_int_equal(judge(&f, &c), SL_NFT_GUARD_CHANGED);
	l = strlen(f.rep.why);
	assert_true(l < sizeof(f.rep.why));
	assert_string_equal(f.rep.why + l - 3, "...");
	fixture_done(&f);
}

static void test_bad_config(void **state)
{
	struct sl_nft_guard c = gw("127.0.0.1", 3128);
	struct sl_nft_guard_report rep;
	struct fixture f;

	(void)state;
	fixture_init(&f, &c);
	c.family = AF_UNIX;
	assert_int_equal(sl_nft_guard_judge(&f.view, &c, &rep), -EINVAL);
	c.family = AF_INET;
	c.uid = (uid_t)-1;
	assert_int_equal(sl_nft_guard_judge(&f.view, &c, &rep), -EINVAL);
	assert_int_equal(sl_nft_guard_check(&c, &rep, NULL, 0), -EINVAL);
	fixture_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intact),
		cmocka_unit_test(test_missing_table_and_chain),
		cmocka_unit_test(test_table_flags),
		cmocka_unit_test(test_rule_deleted),
		cmocka_unit_test(test_rule_added),
		cmocka_unit_test(test_reordered_and_changed),
		cmocka_unit_test(test_other_gateway),
		cmocka_unit_test(test_chain_hook),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_counter_state),
		cmocka_unit_test(test_gateway_of),
		cmocka_unit_test(test_many_findings),
		cmocka_unit_test(test_bad_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
