/* SPDX-License-Identifier: MIT */
/*
 * Pure building blocks: the plan (an ordered list of table, chain and rule
 * operations) and the expressions rules are made of. Nothing here touches
 * a socket, so the unit tests run it without privileges.
 *
 * The expressions are the ones `nft` itself emits for the same rules
 * (compare with `nft --debug=netlink list ruleset`): a load into register 1,
 * then a compare; meta values are in host byte order, packet payload in
 * network byte order.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "macro.h"
#include "nft-internal.h"

void sl_nft_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void sl_nft_plan_init(struct sl_nft_plan *plan)
{
	*plan = (struct sl_nft_plan){ 0 };
}

static void op_free(struct sl_nft_op *op)
{
	if (op->table)
		nftnl_table_free(op->table);
	if (op->chain)
		nftnl_chain_free(op->chain);
	if (op->rule)
		nftnl_rule_free(op->rule);
	if (op->obj)
		nftnl_obj_free(op->obj);
}

void sl_nft_plan_done(struct sl_nft_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n_ops; i++)
		op_free(&plan->ops[i]);
	free(plan->ops);
	sl_nft_plan_init(plan);
}

/* Appends an empty op; the caller fills it. NULL when out of memory. */
static struct sl_nft_op *plan_push(struct sl_nft_plan *plan, enum sl_nft_op_type type)
{
	struct sl_nft_op *op;

	if (plan->n_ops == plan->cap) {
		size_t cap = plan->cap ? plan->cap * 2 : 16;
		struct sl_nft_op *ops = reallocarray(plan->ops, cap, sizeof(*ops));

		if (!ops)
			return NULL;
		plan->ops = ops;
		plan->cap = cap;
	}
	op = &plan->ops[plan->n_ops++];
	*op = (struct sl_nft_op){ .type = type, .family = NFPROTO_INET };
	return op;
}

/*
 * Appends `tmpl`: its type, its family and the one object it holds, which
 * the plan then owns; fmt names it in errors. The object is taken also on
 * failure. A template that holds none is an allocation that failed, so
 * each builder can hand over what its constructor returned unchecked.
 */
static _printf_(3, 4) int plan_append(struct sl_nft_plan *plan, struct sl_nft_op *tmpl,
				      const char *fmt, ...)
{
	struct sl_nft_op *op;
	va_list ap;

	if (!tmpl->table && !tmpl->chain && !tmpl->rule && !tmpl->obj)
		return -ENOMEM;
	op = plan_push(plan, tmpl->type);
	if (!op) {
		op_free(tmpl);
		return -ENOMEM;
	}
	op->family = tmpl->family;
	op->table = tmpl->table;
	op->chain = tmpl->chain;
	op->rule = tmpl->rule;
	op->obj = tmpl->obj;
	va_start(ap, fmt);
	vsnprintf(op->what, sizeof(op->what), fmt, ap);
	va_end(ap);
	return 0;
}

static struct nftnl_table *table_new(uint8_t family, const char *name, uint32_t flags,
				     bool with_flags)
{
	struct nftnl_table *t = nftnl_table_alloc();

	if (!t)
		return NULL;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, family);
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, name) < 0) {
		nftnl_table_free(t);
		return NULL;
	}
	if (with_flags)
		nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, flags);
	return t;
}

int sl_nft_plan_add_table(struct sl_nft_plan *plan, const char *table, uint32_t flags)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_ADD_TABLE,
						.family = NFPROTO_INET,
						.table = table_new(NFPROTO_INET, table, flags, true) },
			   "table inet %s%s", table, flags & NFT_TABLE_F_OWNER ? " (owner)" : "");
}

int sl_nft_plan_del_table(struct sl_nft_plan *plan, const char *table)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_DEL_TABLE,
						.family = NFPROTO_INET,
						.table = table_new(NFPROTO_INET, table, 0, false) },
			   "deletion of table inet %s", table);
}

static struct nftnl_chain *chain_new(uint8_t family, const char *table, const char *name)
{
	struct nftnl_chain *c = nftnl_chain_alloc();

	if (!c)
		return NULL;
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, family);
	if (nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0) {
		nftnl_chain_free(c);
		return NULL;
	}
	return c;
}

/* Makes c a base chain: attached to `hook` at `prio`, with a default
 * verdict. 0, or -ENOMEM. */
static int chain_set_hook(struct nftnl_chain *c, const char *type, uint32_t hook, int prio,
			  int policy)
{
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, (uint32_t)policy);
	return nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type) < 0 ? -ENOMEM : 0;
}

int sl_nft_plan_add_chain(struct sl_nft_plan *plan, const char *table, const char *chain,
			  const char *type, int hook, int prio, int policy)
{
	struct nftnl_chain *c = chain_new(NFPROTO_INET, table, chain);

	if (!c)
		return -ENOMEM;
	if (hook >= 0 && chain_set_hook(c, type, (uint32_t)hook, prio, policy) < 0) {
		nftnl_chain_free(c);
		return -ENOMEM;
	}
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_ADD_CHAIN,
						.family = NFPROTO_INET,
						.chain = c },
			   "chain '%s' in table inet %s", chain, table);
}

int sl_nft_plan_del_chain(struct sl_nft_plan *plan, const char *table, const char *chain)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_DEL_CHAIN,
						.family = NFPROTO_INET,
						.chain = chain_new(NFPROTO_INET, table, chain) },
			   "deletion of chain '%s' in table inet %s", chain, table);
}

struct nftnl_obj *sl_nft_counter_new(const char *table, const char *name)
{
	struct nftnl_obj *o = nftnl_obj_alloc();

	if (!o)
		return NULL;
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFPROTO_INET);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	/* This libnftnl's setter says nothing of a failed copy: ask. */
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, table);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	if (!nftnl_obj_is_set(o, NFTNL_OBJ_TABLE) || !nftnl_obj_is_set(o, NFTNL_OBJ_NAME)) {
		nftnl_obj_free(o);
		return NULL;
	}
	return o;
}

int sl_nft_plan_add_counter(struct sl_nft_plan *plan, const char *table, const char *name)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_ADD_OBJ,
						.family = NFPROTO_INET,
						.obj = sl_nft_counter_new(table, name) },
			   "counter '%s' in table inet %s", name, table);
}

int sl_nft_plan_add_netdev_table(struct sl_nft_plan *plan, const char *table)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_ADD_TABLE,
						.family = NFPROTO_NETDEV,
						.table = table_new(NFPROTO_NETDEV, table, 0, true) },
			   "table netdev %s", table);
}

int sl_nft_plan_del_netdev_table(struct sl_nft_plan *plan, const char *table)
{
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_DEL_TABLE,
						.family = NFPROTO_NETDEV,
						.table = table_new(NFPROTO_NETDEV, table, 0, false) },
			   "deletion of table netdev %s", table);
}

int sl_nft_plan_add_egress_chain(struct sl_nft_plan *plan, const char *table, const char *chain,
				 const char *device, int prio, int policy)
{
	struct nftnl_chain *c = chain_new(NFPROTO_NETDEV, table, chain);

	if (!c)
		return -ENOMEM;
	if (strlen(device) >= IFNAMSIZ) {
		nftnl_chain_free(c);
		return -EINVAL;
	}
	if (chain_set_hook(c, "filter", NF_NETDEV_EGRESS, prio, policy) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_DEV, device) < 0) {
		nftnl_chain_free(c);
		return -ENOMEM;
	}
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_ADD_CHAIN,
						.family = NFPROTO_NETDEV,
						.chain = c },
			   "chain '%s' (egress of %s) in table netdev %s", chain, device, table);
}

static struct nftnl_rule *rule_new(const char *table, const char *chain)
{
	struct nftnl_rule *r = nftnl_rule_alloc();

	if (!r)
		return NULL;
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	if (nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table) < 0 ||
	    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain) < 0) {
		nftnl_rule_free(r);
		return NULL;
	}
	return r;
}

int sl_nft_plan_flush_chain(struct sl_nft_plan *plan, const char *table, const char *chain)
{
	/* A DELRULE naming only table and chain deletes every rule in it. */
	return plan_append(plan,
			   &(struct sl_nft_op){ .type = SL_NFT_OP_FLUSH_CHAIN,
						.family = NFPROTO_INET,
						.rule = rule_new(table, chain) },
			   "flush of chain '%s' in table inet %s", chain, table);
}

void sl_nft_rb_start(struct sl_nft_rb *rb, const char *table, const char *chain)
{
	rb->rule = rule_new(table, chain);
	rb->error = rb->rule ? 0 : -ENOMEM;
}

void sl_nft_rb_discard(struct sl_nft_rb *rb)
{
	if (rb->rule)
		nftnl_rule_free(rb->rule);
	rb->rule = NULL;
}

int sl_nft_plan_add_rule(struct sl_nft_plan *plan, struct sl_nft_rb *rb, const char *comment)
{
	struct nftnl_udata_buf *ud = NULL;
	struct sl_nft_op *op;
	int r = rb->error;

	if (r < 0)
		goto fail;
	/* The comment is what `nft list ruleset` shows next to the rule, and
	 * what an error message names. */
	r = -ENOMEM;
	ud = nftnl_udata_buf_alloc(NFT_USERDATA_MAXLEN);
	if (!ud || !nftnl_udata_put_strz(ud, NFTNL_UDATA_RULE_COMMENT, comment))
		goto fail;
	if (nftnl_rule_set_data(rb->rule, NFTNL_RULE_USERDATA, nftnl_udata_buf_data(ud),
				nftnl_udata_buf_len(ud)) < 0)
		goto fail;
	op = plan_push(plan, SL_NFT_OP_ADD_RULE);
	if (!op)
		goto fail;
	op->rule = TAKE_PTR(rb->rule);
	snprintf(op->what, sizeof(op->what), "rule '%s' in chain inet %s %s", comment,
		 nftnl_rule_get_str(op->rule, NFTNL_RULE_TABLE),
		 nftnl_rule_get_str(op->rule, NFTNL_RULE_CHAIN));
	nftnl_udata_buf_free(ud);
	return 0;
fail:
	if (ud)
		nftnl_udata_buf_free(ud);
	sl_nft_rb_discard(rb);
	return r;
}

/* ---- Expressions ---- */

static struct nftnl_expr *rb_expr(struct sl_nft_rb *rb, const char *name)
{
	struct nftnl_expr *e;

	if (rb->error < 0)
		return NULL;
	e = nftnl_expr_alloc(name);
	if (!e) {
		rb->error = -ENOMEM;
		return NULL;
	}
	nftnl_rule_add_expr(rb->rule, e);
	return e;
}

static void rb_meta_load(struct sl_nft_rb *rb, uint32_t key)
{
	struct nftnl_expr *e = rb_expr(rb, "meta");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
}

static void rb_payload_load(struct sl_nft_rb *rb, uint32_t base, uint32_t offset, uint32_t len)
{
	struct nftnl_expr *e = rb_expr(rb, "payload");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
}

static void rb_cmp(struct sl_nft_rb *rb, enum nft_cmp_ops op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = rb_expr(rb, "cmp");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	if (nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len) < 0)
		rb->error = -ENOMEM;
}

void sl_nft_match_oif(struct sl_nft_rb *rb, uint32_t ifindex)
{
	rb_meta_load(rb, NFT_META_OIF);
	rb_cmp(rb, NFT_CMP_EQ, &ifindex, sizeof(ifindex));
}

void sl_nft_match_iif_not(struct sl_nft_rb *rb, uint32_t ifindex)
{
	rb_meta_load(rb, NFT_META_IIF);
	rb_cmp(rb, NFT_CMP_NEQ, &ifindex, sizeof(ifindex));
}

static void match_ifname(struct sl_nft_rb *rb, uint32_t key, const char *ifname)
{
	/* The kernel compares the whole IFNAMSIZ buffer, NUL padded. */
	char name[IFNAMSIZ] = { 0 };

	if (strlen(ifname) >= sizeof(name)) {
		rb->error = -EINVAL;
		return;
	}
	memcpy(name, ifname, strlen(ifname));
	rb_meta_load(rb, key);
	rb_cmp(rb, NFT_CMP_EQ, name, sizeof(name));
}

void sl_nft_match_iifname(struct sl_nft_rb *rb, const char *ifname)
{
	match_ifname(rb, NFT_META_IIFNAME, ifname);
}

void sl_nft_match_oifname(struct sl_nft_rb *rb, const char *ifname)
{
	match_ifname(rb, NFT_META_OIFNAME, ifname);
}

void sl_nft_match_nfproto(struct sl_nft_rb *rb, uint8_t nfproto)
{
	rb_meta_load(rb, NFT_META_NFPROTO);
	rb_cmp(rb, NFT_CMP_EQ, &nfproto, sizeof(nfproto));
}

void sl_nft_match_l4proto(struct sl_nft_rb *rb, uint8_t proto)
{
	rb_meta_load(rb, NFT_META_L4PROTO);
	rb_cmp(rb, NFT_CMP_EQ, &proto, sizeof(proto));
}

void sl_nft_match_skuid(struct sl_nft_rb *rb, uint32_t uid, bool equal)
{
	rb_meta_load(rb, NFT_META_SKUID);
	rb_cmp(rb, equal ? NFT_CMP_EQ : NFT_CMP_NEQ, &uid, sizeof(uid));
}

void sl_nft_match_daddr4(struct sl_nft_rb *rb, struct in_addr addr)
{
	/* In the inet family the network header may be either; check first. */
	sl_nft_match_nfproto(rb, NFPROTO_IPV4);
	rb_payload_load(rb, NFT_PAYLOAD_NETWORK_HEADER, 16, sizeof(addr));
	rb_cmp(rb, NFT_CMP_EQ, &addr, sizeof(addr));
}

void sl_nft_match_saddr4(struct sl_nft_rb *rb, struct in_addr addr)
{
	sl_nft_match_nfproto(rb, NFPROTO_IPV4);
	rb_payload_load(rb, NFT_PAYLOAD_NETWORK_HEADER, 12, sizeof(addr));
	rb_cmp(rb, NFT_CMP_EQ, &addr, sizeof(addr));
}

void sl_nft_match_limit(struct sl_nft_rb *rb, uint64_t rate, uint32_t burst)
{
	struct nftnl_expr *e = rb_expr(rb, "limit");

	if (!e)
		return;
	/* A token bucket per rule: "limit rate RATE/second burst BURST
	 * packets". Over it the expression breaks the rule. */
	nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_RATE, rate);
	nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_UNIT, 1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_BURST, burst);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_TYPE, NFT_LIMIT_PKTS);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_FLAGS, 0);
}

void sl_nft_act_counter_ref(struct sl_nft_rb *rb, const char *name)
{
	struct nftnl_expr *e = rb_expr(rb, "objref");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
	if (nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, name) < 0)
		rb->error = -ENOMEM;
}

void sl_nft_match_daddr6(struct sl_nft_rb *rb, const struct in6_addr *addr)
{
	sl_nft_match_nfproto(rb, NFPROTO_IPV6);
	rb_payload_load(rb, NFT_PAYLOAD_NETWORK_HEADER, 24, sizeof(*addr));
	rb_cmp(rb, NFT_CMP_EQ, addr, sizeof(*addr));
}

void sl_nft_match_dport(struct sl_nft_rb *rb, uint8_t proto, uint16_t port)
{
	uint16_t be = htons(port);

	sl_nft_match_l4proto(rb, proto);
	rb_payload_load(rb, NFT_PAYLOAD_TRANSPORT_HEADER, 2, sizeof(be));
	rb_cmp(rb, NFT_CMP_EQ, &be, sizeof(be));
}

void sl_nft_act_verdict(struct sl_nft_rb *rb, int verdict)
{
	struct nftnl_expr *e = rb_expr(rb, "immediate");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
}

void sl_nft_act_log(struct sl_nft_rb *rb, uint16_t group, const char *prefix)
{
	struct nftnl_expr *e = rb_expr(rb, "log");

	if (!e)
		return;
	/* A group makes this NFLOG (nfnetlink_log), read by the gateway, not
	 * the kernel log. Headers are all the audit needs. */
	nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, group);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOG_SNAPLEN, 128);
	if (nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, prefix) < 0)
		rb->error = -ENOMEM;
}

void sl_nft_act_reject_tcp(struct sl_nft_rb *rb)
{
	struct nftnl_expr *e = rb_expr(rb, "reject");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_TCP_RST);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, 0);
}

void sl_nft_act_reject_admin(struct sl_nft_rb *rb)
{
	/* icmpx: the kernel picks ICMP or ICMPv6 by the packet's family. */
	struct nftnl_expr *e = rb_expr(rb, "reject");

	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
}

void sl_nft_act_dnat4(struct sl_nft_rb *rb, struct in_addr addr, uint16_t port)
{
	uint16_t be = htons(port);
	struct nftnl_expr *e;

	e = rb_expr(rb, "immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		if (nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &addr, sizeof(addr)) < 0)
			rb->error = -ENOMEM;
	}
	e = rb_expr(rb, "immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_2);
		if (nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &be, sizeof(be)) < 0)
			rb->error = -ENOMEM;
	}
	e = rb_expr(rb, "nat");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, NFPROTO_IPV4);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MAX, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, NFT_REG_2);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MAX, NFT_REG_2);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS,
			   NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED);
}

void sl_nft_act_redirect(struct sl_nft_rb *rb, uint16_t port)
{
	uint16_t be = htons(port);
	struct nftnl_expr *e;

	e = rb_expr(rb, "immediate");
	if (e) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		if (nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &be, sizeof(be)) < 0)
			rb->error = -ENOMEM;
	}
	e = rb_expr(rb, "redir");
	if (!e)
		return;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MAX, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
}

void sl_nft_act_masquerade(struct sl_nft_rb *rb)
{
	(void)rb_expr(rb, "masq");
}
