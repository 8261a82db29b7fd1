/* SPDX-License-Identifier: MIT */
/*
 * Reading sluice's nftables rules back from the kernel (libnftnl + libmnl,
 * never by running `nft`), to tell whether what `sluice guard` installed is
 * still in force. Nothing announces its loss: `nft flush ruleset` (the first
 * line of Debian's /etc/nftables.conf), a firewall reload or a reboot removes
 * the table and the uid is then unfenced.
 *
 * Same contract as nft.h: >= 0 on success or a negative errno, `err` filled
 * only on failure, nothing printed, the calling thread's network namespace.
 * Reading nftables needs CAP_NET_ADMIN there too (-EPERM otherwise).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nft.h"

enum sl_nft_guard_state {
	SL_NFT_GUARD_INTACT,   /* table, chain and rules as sl_nft_guard_apply makes them */
	SL_NFT_GUARD_NO_TABLE, /* no table inet sluice-guard at all */
	SL_NFT_GUARD_NO_CHAIN, /* the table, but no chain for this uid */
	SL_NFT_GUARD_CHANGED,  /* the chain, but it or its rules are not guard's */
};

struct sl_nft_guard_report {
	enum sl_nft_guard_state state;
	/* What the chain was compared with: the caller's uid and gateway, or,
	 * when the caller gave no gateway (family AF_UNSPEC), the gateway that
	 * the chain's own accept rule names. family stays AF_UNSPEC when
	 * neither was there to compare with. */
	struct sl_nft_guard checked;
	size_t n_rules; /* rules found in the uid's chain */
	/* Unless INTACT: every difference found, separated by "; ", e.g.
	 * "rule 2 of 4 'reject tcp with reset' is missing". Ends in "..." when
	 * there was more than fits. */
	char why[1024];
};

/*
 * Read table inet sluice-guard, the chain "uid-<cfg->uid>" and its rules,
 * and compare them with the plan sl_nft_guard_apply() would install for
 * `cfg` (see sl_nft_guard_judge() for what is compared). With cfg->family
 * AF_UNSPEC the gateway is not known: it is taken from the chain's accept
 * rule, so everything else is still compared.
 *
 * Returns 0 when the ruleset could be read, whatever it holds: the answer is
 * in *ret (always written then). A negative errno when it could not be read
 * (-EPERM without CAP_NET_ADMIN), or -EINVAL for a bad cfg. The three reads
 * are checked against the ruleset generation and repeated (a few times) when
 * something changed the ruleset in between, so the answer is about one
 * ruleset, not a mix.
 */
int sl_nft_guard_check(const struct sl_nft_guard *cfg, struct sl_nft_guard_report *ret,
		       char *err, size_t errlen);

/* ---- The pure part, exposed for tests/unit/test-nft-query.c ---- */

struct nftnl_chain;
struct nftnl_rule;

/* What the kernel holds, as read back. */
struct sl_nft_guard_view {
	bool has_table;                 /* table inet sluice-guard exists */
	uint32_t table_flags;           /* its NFT_TABLE_F_* */
	const struct nftnl_chain *chain; /* the uid's chain; NULL when none */
	struct nftnl_rule *const *rules; /* the chain's rules, in order */
	size_t n_rules;
};

/*
 * Compare `view` with what sl_nft_guard_plan() makes for `cfg` and fill
 * *ret. Compared: the table exists and carries no flags (a dormant table
 * enforces none of its rules; an owner table vanishes with its owner); the
 * chain exists and is a filter base chain on the same hook, priority and
 * policy; its rules are exactly the plan's, in its order, expression by
 * expression as libnftnl renders them (comments only name rules, they do
 * not make them equal). Every missing, changed, misplaced or extra rule is
 * named in ret->why. Returns 0, or -ENOMEM / -EINVAL (a bad cfg).
 */
int sl_nft_guard_judge(const struct sl_nft_guard_view *view, const struct sl_nft_guard *cfg,
		       struct sl_nft_guard_report *ret);

/*
 * A rule's expressions in the form they are compared in, one "[ name ...
 * ]" per expression as libnftnl prints it ("[ meta load skuid => reg 1 ]
 * [ cmp eq reg 1 0x00003039 ] ..."), into a new string for free(). Table,
 * chain, handle and comment are left out; so is the state of a stateful
 * expression (a counter's packets). A rule whose text would be longer than
 * any of guard's gets a text no rule of guard's has. -ENOMEM or 0.
 */
int sl_nft_guard_rule_text(const struct nftnl_rule *r, char **ret);

/*
 * The gateway a rule accepts: when `r` matches skuid == uid, an IPv4 or IPv6
 * destination address and a TCP destination port, and ends in accept,
 * *ret gets uid, family, address and port; -ENOENT otherwise.
 */
int sl_nft_guard_gateway_of(const struct nftnl_rule *r, uid_t uid, struct sl_nft_guard *ret);
