/* SPDX-License-Identifier: MIT */
/*
 * Internals of the nftables module, shared by its files and its unit tests.
 *
 * The module is split in two so the rules can be tested without root:
 *  - nft-build.c and nft-rules.c are pure: they turn a config into a
 *    `struct sl_nft_plan`, the ordered list of table/chain/rule operations
 *    one batch will carry, each with a human-readable name;
 *  - nft-netlink.c owns the socket: it serialises a plan into one
 *    BEGIN...END batch, sends it, reads every ACK and maps an error back to
 *    the operation that caused it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nft.h"

struct nftnl_table;
struct nftnl_chain;
struct nftnl_rule;
struct nftnl_obj;
struct nlmsghdr;

enum sl_nft_op_type {
	SL_NFT_OP_ADD_TABLE,
	SL_NFT_OP_DEL_TABLE,
	SL_NFT_OP_ADD_CHAIN,
	SL_NFT_OP_FLUSH_CHAIN,
	SL_NFT_OP_DEL_CHAIN,
	SL_NFT_OP_ADD_RULE,
	SL_NFT_OP_ADD_OBJ,
};

struct sl_nft_op {
	enum sl_nft_op_type type;
	uint8_t family;            /* NFPROTO_INET, or NFPROTO_NETDEV (egress) */
	struct nftnl_table *table; /* ADD_TABLE, DEL_TABLE */
	struct nftnl_chain *chain; /* ADD_CHAIN, DEL_CHAIN */
	struct nftnl_rule *rule;   /* ADD_RULE; FLUSH_CHAIN (table+chain only) */
	struct nftnl_obj *obj;     /* ADD_OBJ */
	char what[128];            /* "rule 'reject tcp' in chain inet sluice output" */
};

struct sl_nft_plan {
	struct sl_nft_op *ops;
	size_t n_ops;
	size_t cap;
};

void sl_nft_plan_init(struct sl_nft_plan *plan);
void sl_nft_plan_done(struct sl_nft_plan *plan);

/* Plan operations. Each returns 0 or -ENOMEM/-EINVAL. `flags` of a table are
 * NFT_TABLE_F_*; a base chain has hook >= 0 (NF_INET_*), a regular one -1. */
int sl_nft_plan_add_table(struct sl_nft_plan *plan, const char *table, uint32_t flags);
int sl_nft_plan_del_table(struct sl_nft_plan *plan, const char *table);
int sl_nft_plan_add_chain(struct sl_nft_plan *plan, const char *table, const char *chain,
			  const char *type, int hook, int prio, int policy);
int sl_nft_plan_flush_chain(struct sl_nft_plan *plan, const char *table, const char *chain);
int sl_nft_plan_del_chain(struct sl_nft_plan *plan, const char *table, const char *chain);
/* A named counter object in inet `table` (rules refer to it by name, and
 * it can be read back: sl_nft_sandbox_counters()). */
int sl_nft_plan_add_counter(struct sl_nft_plan *plan, const char *table, const char *name);
/* The counter object `name` of inet `table`, as a plan adds it and a get
 * names it; NULL when out of memory. */
struct nftnl_obj *sl_nft_counter_new(const char *table, const char *name);

/* The netdev family (egress filtering of a device, below every inet hook):
 * a table, and a base chain on hook NF_NETDEV_EGRESS of one device. */
int sl_nft_plan_add_netdev_table(struct sl_nft_plan *plan, const char *table);
int sl_nft_plan_del_netdev_table(struct sl_nft_plan *plan, const char *table);
int sl_nft_plan_add_egress_chain(struct sl_nft_plan *plan, const char *table, const char *chain,
				 const char *device, int prio, int policy);

/*
 * Rules are built expression by expression: sl_nft_rule_new(), then the
 * match helpers (each appends a load + compare), then one action, then
 * sl_nft_plan_add_rule(), which takes the rule (also on failure). A rule's
 * comment (its userdata, shown by `nft list ruleset`) is its name in errors.
 * Helpers return 0 or -ENOMEM; a builder collects the first error.
 */
struct sl_nft_rb {
	struct nftnl_rule *rule;
	int error;
};

void sl_nft_rb_start(struct sl_nft_rb *rb, const char *table, const char *chain);
void sl_nft_rb_discard(struct sl_nft_rb *rb);
int sl_nft_plan_add_rule(struct sl_nft_plan *plan, struct sl_nft_rb *rb, const char *comment);

/* Matches. */
void sl_nft_match_oif(struct sl_nft_rb *rb, uint32_t ifindex);
void sl_nft_match_iifname(struct sl_nft_rb *rb, const char *ifname);
void sl_nft_match_oifname(struct sl_nft_rb *rb, const char *ifname);
void sl_nft_match_iif_not(struct sl_nft_rb *rb, uint32_t ifindex);
void sl_nft_match_nfproto(struct sl_nft_rb *rb, uint8_t nfproto);
void sl_nft_match_l4proto(struct sl_nft_rb *rb, uint8_t proto);
void sl_nft_match_skuid(struct sl_nft_rb *rb, uint32_t uid, bool equal);
/* Matches nfproto ipv4 and the IPv4 destination (source). */
void sl_nft_match_daddr4(struct sl_nft_rb *rb, struct in_addr addr);
void sl_nft_match_saddr4(struct sl_nft_rb *rb, struct in_addr addr);
/* Matches nfproto ipv6 and the IPv6 destination. */
void sl_nft_match_daddr6(struct sl_nft_rb *rb, const struct in6_addr *addr);
/* Matches l4proto and its destination port. */
void sl_nft_match_dport(struct sl_nft_rb *rb, uint8_t proto, uint16_t port);

/* Under `rate` packets per second with bursts of `burst`: packets over it
 * end the rule there (nothing after the limit applies to them). */
void sl_nft_match_limit(struct sl_nft_rb *rb, uint64_t rate, uint32_t burst);

/* Actions. */
/* Count the packet in the named counter object (then go on). */
void sl_nft_act_counter_ref(struct sl_nft_rb *rb, const char *name);
void sl_nft_act_verdict(struct sl_nft_rb *rb, int verdict);
void sl_nft_act_log(struct sl_nft_rb *rb, uint16_t group, const char *prefix);
void sl_nft_act_reject_tcp(struct sl_nft_rb *rb);
void sl_nft_act_reject_admin(struct sl_nft_rb *rb); /* icmpx admin-prohibited */
void sl_nft_act_dnat4(struct sl_nft_rb *rb, struct in_addr addr, uint16_t port);
/* Redirect to this port on the sandbox itself (127.0.0.1 for locally
 * generated packets), where the capture listener lives. */
void sl_nft_act_redirect(struct sl_nft_rb *rb, uint16_t port);
/* Source NAT to the address of the output interface. */
void sl_nft_act_masquerade(struct sl_nft_rb *rb);

/* The three rulesets as plans (nft-rules.c). They validate the config and
 * return -EINVAL with a message in err for a bad one. */
int sl_nft_sandbox_plan(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg, char *err,
			size_t errlen);
/* Only chain nat_output, flushed and refilled (sl_nft_sandbox_capture_update). */
int sl_nft_sandbox_capture_plan(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg,
				char *err, size_t errlen);
int sl_nft_host_plan(struct sl_nft_plan *plan, const struct sl_nft_host *cfg, bool owner,
		     char *err, size_t errlen);
int sl_nft_egress_plan(struct sl_nft_plan *plan, const struct sl_nft_egress *cfg, char *err,
		       size_t errlen);
int sl_nft_guard_plan(struct sl_nft_plan *plan, const struct sl_nft_guard *cfg, char *err,
		      size_t errlen);
/* Removal: the whole table when `last` (no other uid left), else the chain. */
int sl_nft_guard_remove_plan(struct sl_nft_plan *plan, uid_t uid, bool last);
void sl_nft_guard_chain_name(uid_t uid, char *buf, size_t len);

/* Netlink (nft-netlink.c). */
struct sl_nft {
	struct mnl_socket *nl;
	uint32_t portid;
	uint32_t seq;
};

/* Index of the operation an error was about, or -1 for the batch as a
 * whole; filled by sl_nft_send_plan on failure. */
int sl_nft_send_plan(struct sl_nft *nft, const struct sl_nft_plan *plan, const uint32_t *genid,
		     ssize_t *ret_failed_op, char *err, size_t errlen);
/* Sends one get or dump and feeds each answer to cb until the kernel's DONE
 * or ACK; returns the kernel's error for it, if any (-ETIMEDOUT when no
 * answer comes). The batch code and nft-query.c's reads share it. */
int sl_nft_request(struct sl_nft *nft, struct nlmsghdr *nlh,
		   int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);
/* The ruleset generation, for sl_nft_send_plan's genid check. */
int sl_nft_get_genid(struct sl_nft *nft, uint32_t *ret_genid, char *err, size_t errlen);
/* Names of the chains of `inet <table>` (a dump). -ENOENT if no such table.
 * *ret_names is a NULL-terminated array freed with sl_nft_strv_free(). */
int sl_nft_list_chains(struct sl_nft *nft, const char *table, char ***ret_names, char *err,
		       size_t errlen);
void sl_nft_strv_free(char **v);
/* The packet count of counter object `name` in inet `table`. */
int sl_nft_get_counter(struct sl_nft *nft, const char *table, const char *name,
		       uint64_t *ret_packets, char *err, size_t errlen);

/* Writes "what: message" to err when err is usable. */
void sl_nft_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
