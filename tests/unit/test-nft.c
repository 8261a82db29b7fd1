/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the pure half of the nftables module: the plans the three
 * rulesets make, checked op by op and rule by rule through libnftnl's own
 * text form (the same expressions `nft --debug=netlink` shows). No root,
 * no socket.
 */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "nft-internal.h"

static char text[8192];

/* The op whose name contains `what`, or fail. */
static const struct sl_nft_op *find_op(const struct sl_nft_plan *p, const char *what)
{
	for (size_t i = 0; i < p->n_ops; i++)
		if (strstr(p->ops[i].what, what))
			return &p->ops[i];
	fail_msg("no op named '%s'", what);
	abort(); /* fail_msg does not return; the compiler does not know */
}

static ssize_t op_index(const struct sl_nft_plan *p, const char *what)
{
	for (size_t i = 0; i < p->n_ops; i++)
		if (strstr(p->ops[i].what, what))
			return (ssize_t)i;
	return -1;
}

static const char *rule_text(const struct sl_nft_plan *p, const char *what)
{
	const struct sl_nft_op *op = find_op(p, what);

	assert_int_equal(op->type, SL_NFT_OP_ADD_RULE);
	nftnl_rule_snprintf(text, sizeof(text), op->rule, NFTNL_OUTPUT_DEFAULT, 0);
	return text;
}

static const char *chain_text(const struct sl_nft_plan *p, const char *what)
{
	const struct sl_nft_op *op = find_op(p, what);

	assert_int_equal(op->type, SL_NFT_OP_ADD_CHAIN);
	nftnl_chain_snprintf(text, sizeof(text), op->chain, NFTNL_OUTPUT_DEFAULT, 0);
	return text;
}

#define assert_has(hay, needle)                                                \
	do {                                                                   \
		if (!strstr((hay), (needle)))                                  \
			fail_msg("'%s' not in:\n%s", (needle), (hay));          \
	} while (0)

static void sandbox_cfg(struct sl_nft_sandbox *c)
{
	*c = (struct sl_nft_sandbox){
		.tcp_ports = { 3128 }, .n_tcp_ports = 1,
		.udp_ports = { 53 }, .n_udp_ports = 1,
		.nflog_group = 7,
	};
	inet_pton(AF_INET, "10.0.0.1", &c->gateway);
}

static void test_sandbox_filter(void **state)
{
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	char err[256] = "";
	const char *t;

	(void)state;
	sandbox_cfg(&c);
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, err, sizeof(err)), 0);

	/* Replace idiom: add, delete, add, all in the one batch. */
	assert_int_equal(p.ops[0].type, SL_NFT_OP_ADD_TABLE);
	assert_int_equal(p.ops[1].type, SL_NFT_OP_DEL_TABLE);
	assert_int_equal(p.ops[2].type, SL_NFT_OP_ADD_TABLE);
	/* No owner flag: the namespace owns the table's lifetime. */
	assert_int_equal(nftnl_table_get_u32(p.ops[2].table, NFTNL_TABLE_FLAGS), 0);

	t = chain_text(&p, "chain 'output'");
	assert_has(t, "type filter hook output prio 0 policy drop");
	t = chain_text(&p, "chain 'input'");
	assert_has(t, "hook input prio 0 policy accept");

	t = rule_text(&p, "'accept lo'");
	assert_has(t, "[ meta load oif => reg 1 ]\n  [ cmp eq reg 1 0x00000001 ]");
	assert_has(t, "accept");

	/* Answers to connections opened from outside are not let out. */
	assert_int_equal(op_index(&p, "established"), -1);

	t = rule_text(&p, "accept tcp to gateway 10.0.0.1:3128");
	assert_has(t, "[ payload load 4b @ network header + 16 => reg 1 ]");
	assert_has(t, "[ cmp eq reg 1 0x0100000a ]");
	assert_has(t, "[ cmp eq reg 1 0x00000006 ]");
	assert_has(t, "[ cmp eq reg 1 0x0000380c ]"); /* 3128, network order */

	t = rule_text(&p, "accept udp to gateway 10.0.0.1:53");
	assert_has(t, "[ cmp eq reg 1 0x00000011 ]");
	assert_has(t, "[ cmp eq reg 1 0x00003500 ]");
	/* Exactly as the TCP rule: IPv4, the gateway's address, UDP, 53.
	 * Without any one of them UDP/53 elsewhere (IPv6 on a container's
	 * own link, another resolver) would get out. */
	assert_has(t, "[ meta load nfproto => reg 1 ]\n  [ cmp eq reg 1 0x00000002 ]");
	assert_has(t, "[ cmp eq reg 1 0x0100000a ]");
	assert_has(t, "[ meta load l4proto => reg 1 ]\n  [ cmp eq reg 1 0x00000011 ]");
	for (size_t i = 0; i < p.n_ops; i++) {
		if (p.ops[i].type != SL_NFT_OP_ADD_RULE || !strstr(p.ops[i].what, "accept") ||
		    strstr(p.ops[i].what, "'accept lo'") || !strstr(p.ops[i].what, "output"))
			continue;
		nftnl_rule_snprintf(text, sizeof(text), p.ops[i].rule, NFTNL_OUTPUT_DEFAULT, 0);
		assert_has(text, "[ cmp eq reg 1 0x00000002 ]");
		assert_has(text, "[ payload load 4b @ network header + 16 => reg 1 ]");
		assert_has(text, "[ meta load l4proto => reg 1 ]");
		assert_has(text, "[ payload load 2b @ transport header + 2 => reg 1 ]");
	}

	t = rule_text(&p, "nflog");
	assert_has(t, "[ log prefix " SL_NFT_NFLOG_PREFIX " group 7");
	/* Rate-limited (the defaults: 20/s, bursts of 100), and counted on
	 * the way: a flood cannot fill the log, and what it kept out is
	 * known from the two counters. */
	assert_has(t, "[ limit rate 20/second burst 100 type packets flags 0x0 ]");
	assert_has(t, "[ objref type 1 name " SL_NFT_COUNTER_LOGGED " ]");
	assert_true(strstr(t, "[ limit") < strstr(t, "[ objref"));
	assert_true(strstr(t, "[ objref") < strstr(t, "[ log"));
	t = rule_text(&p, "count blocked packets");
	assert_has(t, "[ objref type 1 name " SL_NFT_COUNTER_BLOCKED " ]");
	assert_true(op_index(&p, "counter '" SL_NFT_COUNTER_BLOCKED "'") > 2);
	assert_true(op_index(&p, "counter '" SL_NFT_COUNTER_LOGGED "'") <
		    op_index(&p, "count blocked packets"));
	assert_true(op_index(&p, "10.0.0.1:53") < op_index(&p, "count blocked"));
	assert_true(op_index(&p, "count blocked") < op_index(&p, "nflog"));
	assert_int_equal(find_op(&p, "counter 'blocked'")->type, SL_NFT_OP_ADD_OBJ);

	t = rule_text(&p, "reject tcp with reset");
	assert_has(t, "[ reject type 1 code 0 ]");
	t = rule_text(&p, "admin-prohibited");
	assert_has(t, "[ reject type 2 code 3 ]");

	/* Order is policy: accepts, then the log copy, then the rejects. */
	assert_true(op_index(&p, "'accept lo'") < op_index(&p, "nflog"));
	assert_true(op_index(&p, "10.0.0.1:53") < op_index(&p, "nflog"));
	assert_true(op_index(&p, "nflog") < op_index(&p, "reject tcp"));
	assert_true(op_index(&p, "reject tcp") < op_index(&p, "admin-prohibited"));

	t = rule_text(&p, "drop ipv6 not on lo");
	assert_has(t, "[ cmp eq reg 1 0x0000000a ]"); /* NFPROTO_IPV6 */
	assert_has(t, "[ meta load iif => reg 1 ]\n  [ cmp neq reg 1 0x00000001 ]");

	/* Without capture or DNS there is no NAT at all. */
	assert_int_equal(op_index(&p, "nat_output"), -1);
	sl_nft_plan_done(&p);
}

static void test_sandbox_capture(void **state)
{
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	const char *t;

	(void)state;
	sandbox_cfg(&c);
	c.capture_port = 3129;
	c.dns_port = 5353;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, NULL, 0), 0);

	t = chain_text(&p, "chain 'nat_output'");
	assert_has(t, "type nat hook output prio -100");

	/* The DNS port the NAT sends to must pass the filter; capture goes
	 * to lo and needs no gateway rule. */
	assert_int_equal(op_index(&p, "accept tcp to gateway 10.0.0.1:3129"), -1);
	/* ... but the filter sees the redirected packet with its veth still
	 * as the output device, so the listener's address is accepted. */
	find_op(&p, "accept tcp to gateway 127.0.0.1:3129");
	find_op(&p, "accept tcp to gateway 10.0.0.1:5353");
	find_op(&p, "accept udp to gateway 10.0.0.1:5353");

	t = rule_text(&p, "capture every other tcp");
	assert_has(t, "[ immediate reg 1 0x0000390c ]");
	assert_has(t, "[ redir proto_min reg 1");

	t = rule_text(&p, "dns over udp");
	assert_has(t, "[ cmp eq reg 1 0x00003500 ]");
	assert_has(t, "[ immediate reg 2 0x0000e914 ]"); /* 5353 */
	/* IPv4 only, UDP as TCP: IPv6 to port 53 is never redirected. */
	assert_has(t, "[ meta load nfproto => reg 1 ]\n  [ cmp eq reg 1 0x00000002 ]");
	assert_has(t, "[ cmp eq reg 1 0x00000011 ]");
	t = rule_text(&p, "dns over tcp");
	assert_has(t, "[ meta load nfproto => reg 1 ]\n  [ cmp eq reg 1 0x00000002 ]");
	assert_has(t, "[ cmp eq reg 1 0x00000006 ]");

	/* What goes to the gateway leaves with the veth's own address (a
	 * DNATed query may carry another link's). */
	t = chain_text(&p, "chain 'nat_postrouting'");
	assert_has(t, "type nat hook postrouting prio 100");
	t = rule_text(&p, "from the sandbox's own address");
	assert_has(t, "[ cmp eq reg 1 0x0100000a ]");
	assert_has(t, "[ masq");

	/* lo and the gateway itself are not redirected, and before the rest. */
	assert_true(op_index(&p, "no redirection on lo") < op_index(&p, "capture every"));
	assert_true(op_index(&p, "gateway itself") < op_index(&p, "dns over tcp"));
	assert_true(op_index(&p, "dns over tcp") < op_index(&p, "capture every"));
	sl_nft_plan_done(&p);
}

/* Only the ports a rule could allow are captured: one redirect each, and
 * no catch-all, so another port's SYN meets the filter's block. */
static void test_sandbox_capture_listed(void **state)
{
	static const uint16_t ports[] = {80, 443, 8080};
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	const char *t;

	(void)state;
	sandbox_cfg(&c);
	c.capture_port = 3129;
	c.dns_port = 5353;
	c.capture_listed = true;
	c.capture_tcp_ports = ports;
	c.n_capture_tcp_ports = 3;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, NULL, 0), 0);
	assert_int_equal(op_index(&p, "capture every other tcp"), -1);
	t = rule_text(&p, "capture tcp to port 8080");
	assert_has(t, "[ meta load nfproto => reg 1 ]\n  [ cmp eq reg 1 0x00000002 ]");
	assert_has(t, "[ meta load l4proto => reg 1 ]\n  [ cmp eq reg 1 0x00000006 ]");
	assert_has(t, "[ cmp eq reg 1 0x0000901f ]"); /* 8080, network order */
	assert_has(t, "[ immediate reg 1 0x0000390c ]");
	assert_has(t, "[ redir proto_min reg 1");
	find_op(&p, "capture tcp to port 80'");
	find_op(&p, "capture tcp to port 443");
	assert_int_equal(op_index(&p, "capture tcp to port 22"), -1);
	/* DNS is still redirected first; the block still ends the filter. */
	assert_true(op_index(&p, "dns over tcp") < op_index(&p, "capture tcp to port 80'"));
	find_op(&p, "reject tcp with reset");
	find_op(&p, "copy blocked packets to nflog");
	sl_nft_plan_done(&p);

	/* No port at all (a policy without an allow rule): nothing captured. */
	c.n_capture_tcp_ports = 0;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, NULL, 0), 0);
	assert_int_equal(op_index(&p, "capture tcp"), -1);
	assert_int_equal(op_index(&p, "capture every"), -1);
	sl_nft_plan_done(&p);
}

/* A reload's update: chain nat_output flushed, then refilled, in one
 * plan; nothing else of the table is touched (its counters live on). */
static void test_sandbox_capture_update(void **state)
{
	static const uint16_t ports[] = {443, 8443};
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	char err[256] = "";

	(void)state;
	sandbox_cfg(&c);
	c.capture_port = 3129;
	c.dns_port = 5353;
	c.capture_listed = true;
	c.capture_tcp_ports = ports;
	c.n_capture_tcp_ports = 2;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_capture_plan(&p, &c, NULL, 0), 0);
	assert_int_equal(p.ops[0].type, SL_NFT_OP_FLUSH_CHAIN);
	assert_has(p.ops[0].what, "nat_output");
	for (size_t i = 1; i < p.n_ops; i++)
		assert_int_equal(p.ops[i].type, SL_NFT_OP_ADD_RULE);
	find_op(&p, "no redirection on lo");
	find_op(&p, "dns over tcp");
	find_op(&p, "capture tcp to port 8443");
	assert_int_equal(op_index(&p, "capture tcp to port 80"), -1);
	assert_int_equal(op_index(&p, "nat_postrouting"), -1);
	assert_int_equal(op_index(&p, "counter"), -1);
	sl_nft_plan_done(&p);

	/* Every port again (capture_listed off): the catch-all. */
	c.capture_listed = false;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_capture_plan(&p, &c, NULL, 0), 0);
	find_op(&p, "capture every other tcp");
	sl_nft_plan_done(&p);

	c.capture_listed = true;
	c.n_capture_tcp_ports = SL_NFT_MAX_CAPTURE_PORTS + 1;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_capture_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "at most");
	sl_nft_plan_done(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, err, sizeof(err)), -EINVAL);
	sl_nft_plan_done(&p);

	c.n_capture_tcp_ports = 2;
	c.capture_port = 0;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_capture_plan(&p, &c, err, sizeof(err)), -EINVAL);
	sl_nft_plan_done(&p);
}

static void test_sandbox_invalid(void **state)
{
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	char err[256] = "";

	(void)state;
	sandbox_cfg(&c);
	c.gateway.s_addr = 0;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "no gateway address");
	sl_nft_plan_done(&p);

	sandbox_cfg(&c);
	c.tcp_ports[0] = 0;
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "port 0");
	sl_nft_plan_done(&p);

	sandbox_cfg(&c);
	c.n_udp_ports = SL_NFT_MAX_PORTS + 1;
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "at most");
	sl_nft_plan_done(&p);
}

static void test_host(void **state)
{
	struct sl_nft_host c = {
		.name = "sb1", .ifname = "sl-sb1",
		.tcp_ports = { 3128, 3129 }, .n_tcp_ports = 2,
		.udp_ports = { 53 }, .n_udp_ports = 1,
	};
	struct sl_nft_plan p;
	char err[256] = "";
	const char *t;

	(void)state;
	inet_pton(AF_INET, "10.0.0.1", &c.addr);
	inet_pton(AF_INET, "10.0.0.2", &c.peer);
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_host_plan(&p, &c, true, err, sizeof(err)), 0);
	assert_int_equal(p.ops[2].type, SL_NFT_OP_ADD_TABLE);
	assert_string_equal(nftnl_table_get_str(p.ops[2].table, NFTNL_TABLE_NAME), "sluice-sb1");
	assert_int_equal(nftnl_table_get_u32(p.ops[2].table, NFTNL_TABLE_FLAGS), NFT_TABLE_F_OWNER);
	/* The leftover-clearing add/delete pair must not carry the flag. */
	assert_int_equal(nftnl_table_get_u32(p.ops[0].table, NFTNL_TABLE_FLAGS), 0);

	t = chain_text(&p, "chain 'forward'");
	assert_has(t, "hook forward prio 0 policy accept");
	t = rule_text(&p, "never forward from");
	assert_has(t, "[ meta load iifname => reg 1 ]");
	/* "sl-sb1", NUL padded to IFNAMSIZ */
	assert_has(t, "[ cmp eq reg 1 0x732d6c73 0x00003162 0x00000000 0x00000000 ]");
	assert_has(t, "drop");
	t = rule_text(&p, "never forward to");
	assert_has(t, "[ meta load oifname => reg 1 ]");

	/* The gateway's ports: its own veth AND the sandbox's own address. */
	t = rule_text(&p, "accept tcp to gateway 10.0.0.1:3129 from 10.0.0.2");
	assert_has(t, "[ meta load iifname => reg 1 ]");
	assert_has(t, "[ payload load 4b @ network header + 12 => reg 1 ]\n"
		      "  [ cmp eq reg 1 0x0200000a ]");
	assert_has(t, "[ payload load 4b @ network header + 16 => reg 1 ]\n"
		      "  [ cmp eq reg 1 0x0100000a ]");
	t = rule_text(&p, "accept udp to gateway 10.0.0.1:53 from 10.0.0.2");
	assert_has(t, "[ cmp eq reg 1 0x0200000a ]");
	assert_has(t, "[ meta load iifname => reg 1 ]");
	t = rule_text(&p, "drop the rest from the sandbox");
	assert_has(t, "[ meta load iifname => reg 1 ]");
	assert_true(op_index(&p, "10.0.0.1:53") < op_index(&p, "drop the rest"));
	/* Anything else to the host end's address, on any interface (lo:
	 * another uid; the LAN), is dropped: no iifname in that rule. */
	t = rule_text(&p, "not the sandbox");
	assert_has(t, "[ payload load 4b @ network header + 16 => reg 1 ]\n"
		      "  [ cmp eq reg 1 0x0100000a ]");
	assert_true(strstr(t, "iifname") == NULL);
	assert_has(t, "drop");
	assert_true(op_index(&p, "drop the rest") < op_index(&p, "not the sandbox"));
	/* Only accepts come before it, and each names the veth and the peer. */
	for (ssize_t i = 0; i < op_index(&p, "not the sandbox"); i++) {
		if (p.ops[i].type != SL_NFT_OP_ADD_RULE || !strstr(p.ops[i].what, "input"))
			continue;
		nftnl_rule_snprintf(text, sizeof(text), p.ops[i].rule, NFTNL_OUTPUT_DEFAULT, 0);
		assert_has(text, "[ meta load iifname => reg 1 ]");
		if (strstr(p.ops[i].what, "accept"))
			assert_has(text, "[ cmp eq reg 1 0x0200000a ]");
	}
	sl_nft_plan_done(&p);

	/* No peer, or the peer is the host end itself: refused. */
	c.peer.s_addr = 0;
	assert_int_equal(sl_nft_host_plan(&p, &c, true, err, sizeof(err)), -EINVAL);
	assert_has(err, "no sandbox end address");
	sl_nft_plan_done(&p);
	c.peer = c.addr;
	assert_int_equal(sl_nft_host_plan(&p, &c, true, err, sizeof(err)), -EINVAL);
	sl_nft_plan_done(&p);
	inet_pton(AF_INET, "10.0.0.2", &c.peer);

	assert_int_equal(sl_nft_host_plan(&p, &c, false, err, sizeof(err)), 0);
	assert_int_equal(nftnl_table_get_u32(p.ops[2].table, NFTNL_TABLE_FLAGS), 0);
	sl_nft_plan_done(&p);

	c.ifname = "a-name-longer-than-ifnamsiz";
	assert_int_equal(sl_nft_host_plan(&p, &c, true, err, sizeof(err)), -EINVAL);
	assert_has(err, "bad interface name");
	sl_nft_plan_done(&p);
}

static void test_guard_v4(void **state)
{
	struct sl_nft_guard c = { .uid = 12345, .family = AF_INET, .port = 3128 };
	struct sl_nft_plan p;
	const char *t;

	(void)state;
	inet_pton(AF_INET, "127.0.0.1", &c.addr4);
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_guard_plan(&p, &c, NULL, 0), 0);

	/* Create-if-missing, then flush and refill: a second guard replaces. */
	assert_int_equal(p.ops[0].type, SL_NFT_OP_ADD_TABLE);
	assert_int_equal(nftnl_table_get_u32(p.ops[0].table, NFTNL_TABLE_FLAGS), 0);
	assert_int_equal(p.ops[1].type, SL_NFT_OP_ADD_CHAIN);
	assert_int_equal(p.ops[2].type, SL_NFT_OP_FLUSH_CHAIN);
	assert_int_equal(op_index(&p, "deletion"), -1);

	t = chain_text(&p, "chain 'uid-12345'");
	assert_has(t, "inet sluice-guard uid-12345");
	assert_has(t, "type filter hook output prio 0 policy accept");

	/* Every rule matches the uid with "eq": a "neq" would also fail on
	 * packets without a socket and send them to the rejects. */
	for (size_t i = 3; i < p.n_ops; i++) {
		nftnl_rule_snprintf(text, sizeof(text), p.ops[i].rule, NFTNL_OUTPUT_DEFAULT, 0);
		assert_has(text, "[ meta load skuid => reg 1 ]\n  [ cmp eq reg 1 0x00003039 ]");
	}
	t = rule_text(&p, "accept tcp to gateway 127.0.0.1:3128");
	assert_has(t, "[ cmp eq reg 1 0x0100007f ]");
	assert_has(t, "[ cmp eq reg 1 0x0000380c ]");
	assert_true(op_index(&p, "accept tcp") < op_index(&p, "reject tcp"));
	find_op(&p, "admin-prohibited");
	/* Deliberately no blanket lo or established accept for the uid. */
	assert_int_equal(op_index(&p, "'accept lo'"), -1);
	assert_int_equal(op_index(&p, "established"), -1);
	sl_nft_plan_done(&p);
}

static void test_guard_v6_and_remove(void **state)
{
	struct sl_nft_guard c = { .uid = 1000, .family = AF_INET6, .port = 8080 };
	struct sl_nft_plan p;
	char err[128] = "";
	const char *t;

	(void)state;
	inet_pton(AF_INET6, "::1", &c.addr6);
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_guard_plan(&p, &c, NULL, 0), 0);
	t = rule_text(&p, "accept tcp to gateway [::1]:8080");
	assert_has(t, "[ cmp eq reg 1 0x0000000a ]");
	assert_has(t, "[ payload load 16b @ network header + 24 => reg 1 ]");
	assert_has(t, "[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ]");
	sl_nft_plan_done(&p);

	c.port = 0;
	assert_int_equal(sl_nft_guard_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "port 0");
	sl_nft_plan_done(&p);

	assert_int_equal(sl_nft_guard_remove_plan(&p, 1000, false), 0);
	assert_int_equal(p.n_ops, 1);
	assert_int_equal(p.ops[0].type, SL_NFT_OP_DEL_CHAIN);
	assert_string_equal(nftnl_chain_get_str(p.ops[0].chain, NFTNL_CHAIN_NAME), "uid-1000");
	sl_nft_plan_done(&p);

	assert_int_equal(sl_nft_guard_remove_plan(&p, 1000, true), 0);
	assert_int_equal(p.n_ops, 1);
	assert_int_equal(p.ops[0].type, SL_NFT_OP_DEL_TABLE);
	assert_string_equal(nftnl_table_get_str(p.ops[0].table, NFTNL_TABLE_NAME),
			    SL_NFT_GUARD_TABLE);
	sl_nft_plan_done(&p);
}

static void test_sandbox_log_rate(void **state)
{
	struct sl_nft_plan p;
	struct sl_nft_sandbox c;
	const char *t;

	(void)state;
	sandbox_cfg(&c);
	c.log_rate = 5;
	c.log_burst = 7;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_sandbox_plan(&p, &c, NULL, 0), 0);
	t = rule_text(&p, "nflog");
	assert_has(t, "[ limit rate 5/second burst 7 type packets");
	sl_nft_plan_done(&p);
}

static void test_egress(void **state)
{
	const char *devs[] = { "eth0", "cx0" };
	struct sl_nft_egress c = { .devices = devs, .n_devices = 2 };
	const char *bad[] = { "a-name-longer-than-ifnamsiz" };
	struct sl_nft_plan p;
	char err[256] = "";
	const char *t;

	(void)state;
	sl_nft_plan_init(&p);
	assert_int_equal(sl_nft_egress_plan(&p, &c, err, sizeof(err)), 0);
	/* Replace idiom in the netdev family, then one chain per device. */
	assert_int_equal(p.n_ops, 5);
	for (size_t i = 0; i < p.n_ops; i++)
		assert_int_equal(p.ops[i].family, NFPROTO_NETDEV);
	assert_int_equal(p.ops[0].type, SL_NFT_OP_ADD_TABLE);
	assert_int_equal(p.ops[1].type, SL_NFT_OP_DEL_TABLE);
	assert_int_equal(p.ops[2].type, SL_NFT_OP_ADD_TABLE);
	assert_string_equal(nftnl_table_get_str(p.ops[2].table, NFTNL_TABLE_NAME),
			    SL_NFT_EGRESS_TABLE);
	t = chain_text(&p, "egress of eth0");
	assert_has(t, "netdev sluice egress-eth0");
	/* This libnftnl names no netdev hook but ingress: check the number. */
	assert_has(t, "type filter hook");
	assert_has(t, "prio 0 policy drop");
	assert_int_equal(nftnl_chain_get_u32(find_op(&p, "egress of eth0")->chain,
					     NFTNL_CHAIN_HOOKNUM),
			 NF_NETDEV_EGRESS);
	assert_string_equal(nftnl_chain_get_str(find_op(&p, "egress of cx0")->chain,
						NFTNL_CHAIN_DEV),
			    "cx0");
	/* No rules at all: the policy drops every frame. */
	for (size_t i = 0; i < p.n_ops; i++)
		assert_int_not_equal(p.ops[i].type, SL_NFT_OP_ADD_RULE);
	sl_nft_plan_done(&p);

	/* No device: only the removal of what was there. */
	c.n_devices = 0;
	assert_int_equal(sl_nft_egress_plan(&p, &c, err, sizeof(err)), 0);
	assert_int_equal(p.n_ops, 2);
	assert_int_equal(p.ops[1].type, SL_NFT_OP_DEL_TABLE);
	sl_nft_plan_done(&p);

	c.devices = bad;
	c.n_devices = 1;
	assert_int_equal(sl_nft_egress_plan(&p, &c, err, sizeof(err)), -EINVAL);
	assert_has(err, "bad device name");
	sl_nft_plan_done(&p);
	c.n_devices = SL_NFT_EGRESS_MAX_DEVICES + 1;
	assert_int_equal(sl_nft_egress_plan(&p, &c, err, sizeof(err)), -EINVAL);
	sl_nft_plan_done(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_filter),
		cmocka_unit_test(test_sandbox_capture),
		cmocka_unit_test(test_sandbox_capture_listed),
		cmocka_unit_test(test_sandbox_capture_update),
		cmocka_unit_test(test_sandbox_invalid),
		cmocka_unit_test(test_sandbox_log_rate),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_egress),
		cmocka_unit_test(test_guard_v4),
		cmocka_unit_test(test_guard_v6_and_remove),
	};

	return cmocka_run_group_tests_name("nft", tests, NULL, NULL);
}
