/* SPDX-License-Identifier: MIT */
/*
 * The public entry points: build a plan (nft-rules.c), send it as one batch
 * (nft-netlink.c), and handle the two cases that need a second look: an old
 * kernel without owner tables, and a ruleset that changed under us.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <errno.h>
#include <linux/netfilter/nf_tables.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "nft-internal.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_nft *, sl_nft_close);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, sl_nft_strv_free);

/* How often a removal decided on a ruleset generation is retried when
 * another change slipped in between; each retry looks again. */
#define GENID_RETRIES 5

static int send_once(struct sl_nft *nft, int (*build)(struct sl_nft_plan *, const void *, char *,
						      size_t),
		     const void *cfg, char *err, size_t errlen)
{
	struct sl_nft_plan plan;
	int r;

	sl_nft_plan_init(&plan);
	r = build(&plan, cfg, err, errlen);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, NULL, NULL, err, errlen);
	sl_nft_plan_done(&plan);
	return r;
}

static int build_sandbox(struct sl_nft_plan *plan, const void *cfg, char *err, size_t errlen)
{
	return sl_nft_sandbox_plan(plan, cfg, err, errlen);
}

static int build_guard(struct sl_nft_plan *plan, const void *cfg, char *err, size_t errlen)
{
	return sl_nft_guard_plan(plan, cfg, err, errlen);
}

int sl_nft_sandbox_apply(const struct sl_nft_sandbox *cfg, char *err, size_t errlen)
{
	_cleanup_(sl_nft_closep) struct sl_nft *nft = NULL;
	int r;

	if (!cfg)
		return -EINVAL;
	r = sl_nft_open(&nft, err, errlen);
	if (r < 0)
		return r;
	return send_once(nft, build_sandbox, cfg, err, errlen);
}

int sl_nft_sandbox_apply_nft(struct sl_nft *nft, const struct sl_nft_sandbox *cfg, char *err,
			     size_t errlen)
{
	if (!nft || !cfg)
		return -EINVAL;
	return send_once(nft, build_sandbox, cfg, err, errlen);
}

static int build_capture(struct sl_nft_plan *plan, const void *cfg, char *err, size_t errlen)
{
	return sl_nft_sandbox_capture_plan(plan, cfg, err, errlen);
}

int sl_nft_sandbox_capture_update(struct sl_nft *nft, const struct sl_nft_sandbox *cfg,
				  char *err, size_t errlen)
{
	if (!nft || !cfg)
		return -EINVAL;
	return send_once(nft, build_capture, cfg, err, errlen);
}

int sl_nft_sandbox_delete(char *err, size_t errlen)
{
	_cleanup_(sl_nft_closep) struct sl_nft *nft = NULL;
	struct sl_nft_plan plan;
	int r;

	r = sl_nft_open(&nft, err, errlen);
	if (r < 0)
		return r;
	sl_nft_plan_init(&plan);
	r = sl_nft_plan_del_table(&plan, SL_NFT_SANDBOX_TABLE);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, NULL, NULL, err, errlen);
	sl_nft_plan_done(&plan);
	return r;
}

int sl_nft_guard_apply(const struct sl_nft_guard *cfg, char *err, size_t errlen)
{
	_cleanup_(sl_nft_closep) struct sl_nft *nft = NULL;
	int r;

	if (!cfg)
		return -EINVAL;
	r = sl_nft_open(&nft, err, errlen);
	if (r < 0)
		return r;
	return send_once(nft, build_guard, cfg, err, errlen);
}

int sl_nft_host_apply(struct sl_nft *nft, const struct sl_nft_host *cfg, bool *ret_owned,
		      char *err, size_t errlen)
{
	bool owner = true;
	int r;

	if (!nft || !cfg)
		return -EINVAL;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct sl_nft_plan plan;
		ssize_t failed = -1;

		sl_nft_plan_init(&plan);
		r = sl_nft_host_plan(&plan, cfg, owner, err, errlen);
		if (r >= 0)
			r = sl_nft_send_plan(nft, &plan, NULL, &failed, err, errlen);
		/* Linux < 5.12 refuses NFT_TABLE_F_OWNER as an unknown flag.
		 * Only that refusal (on the op that sets it) falls back. */
		if (r == -EOPNOTSUPP && owner && failed >= 0 &&
		    plan.ops[failed].type == SL_NFT_OP_ADD_TABLE &&
		    strstr(plan.ops[failed].what, "(owner)")) {
			owner = false;
			sl_nft_plan_done(&plan);
			continue;
		}
		/* The first op failing with EPERM (a lack of CAP_NET_ADMIN fails
		 * the batch as a whole instead) means a live owner holds it. */
		if (r == -EPERM && failed == 0 && err && errlen) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l,
				 " (another process owns it: is a sluice for sandbox '%s' running?)",
				 cfg->name);
		}
		sl_nft_plan_done(&plan);
		break;
	}
	if (r >= 0 && ret_owned)
		*ret_owned = owner;
	return r;
}

int sl_nft_host_delete(struct sl_nft *nft, const char *name, char *err, size_t errlen)
{
	struct sl_nft_plan plan;
	char t[64];
	int r;

	if (!nft || !name || !*name || strlen(name) > 24)
		return -EINVAL;
	snprintf(t, sizeof(t), SL_NFT_HOST_TABLE_PREFIX "%s", name);
	sl_nft_plan_init(&plan);
	r = sl_nft_plan_del_table(&plan, t);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, NULL, NULL, err, errlen);
	sl_nft_plan_done(&plan);
	return r;
}

static int guard_remove_once(struct sl_nft *nft, uid_t uid, char *err, size_t errlen)
{
	_cleanup_(sl_nft_strv_freep) char **names = NULL;
	struct sl_nft_plan plan;
	bool found = false;
	size_t n = 0;
	uint32_t genid;
	char chain[32];
	int r;

	/* The generation first: any change after it makes the batch fail
	 * with ERESTART instead of acting on a stale view. */
	r = sl_nft_get_genid(nft, &genid, err, errlen);
	if (r < 0)
		return r;
	sl_nft_guard_chain_name(uid, chain, sizeof(chain));
	r = sl_nft_list_chains(nft, SL_NFT_GUARD_TABLE, &names, err, errlen);
	if (r == -ENOENT) {
		sl_nft_set_err(err, errlen, "no guard rules for uid %u (no table inet %s)",
			       (unsigned)uid, SL_NFT_GUARD_TABLE);
		return r;
	}
	if (r < 0)
		return r;
	for (char **p = names; *p; p++, n++)
		if (!strcmp(*p, chain))
			found = true;
	if (!found) {
		sl_nft_set_err(err, errlen, "no guard rules for uid %u (no chain %s in table inet %s)",
			       (unsigned)uid, chain, SL_NFT_GUARD_TABLE);
		return -ENOENT;
	}

	sl_nft_plan_init(&plan);
	r = sl_nft_guard_remove_plan(&plan, uid, n == 1);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, &genid, NULL, err, errlen);
	sl_nft_plan_done(&plan);
	return r;
}

int sl_nft_guard_remove(uid_t uid, char *err, size_t errlen)
{
	_cleanup_(sl_nft_closep) struct sl_nft *nft = NULL;
	int r;

	r = sl_nft_open(&nft, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < GENID_RETRIES; i++) {
		r = guard_remove_once(nft, uid, err, errlen);
		if (r != -ERESTART)
			break;
	}
	return r;
}

int sl_nft_sandbox_counters(struct sl_nft *nft, uint64_t *ret_blocked, uint64_t *ret_logged,
			    char *err, size_t errlen)
{
	uint64_t blocked, logged;
	int r;

	if (!nft)
		return -EINVAL;
	r = sl_nft_get_counter(nft, SL_NFT_SANDBOX_TABLE, SL_NFT_COUNTER_BLOCKED, &blocked, err,
			       errlen);
	if (r >= 0)
		r = sl_nft_get_counter(nft, SL_NFT_SANDBOX_TABLE, SL_NFT_COUNTER_LOGGED, &logged,
				       err, errlen);
	if (r < 0)
		return r;
	*ret_blocked = blocked;
	*ret_logged = logged;
	return 0;
}

int sl_nft_egress_apply(struct sl_nft *nft, const struct sl_nft_egress *cfg, char *err,
			size_t errlen)
{
	struct sl_nft_plan plan;
	ssize_t failed = -1;
	int r;

	if (!nft || !cfg)
		return -EINVAL;
	sl_nft_plan_init(&plan);
	r = sl_nft_egress_plan(&plan, cfg, err, errlen);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, NULL, &failed, err, errlen);
	/* A kernel without the egress hook (before 5.16, or built without
	 * CONFIG_NETFILTER_EGRESS) refuses the hook number itself. */
	if ((r == -EOPNOTSUPP || r == -EINVAL) && failed >= 0 &&
	    plan.ops[failed].type == SL_NFT_OP_ADD_CHAIN && err && errlen) {
		size_t l = strlen(err);

		snprintf(err + l, errlen - l,
			 " (this kernel cannot filter a device's egress: Linux 5.16 or later with "
			 "CONFIG_NETFILTER_EGRESS is needed)");
		r = -EOPNOTSUPP;
	}
	sl_nft_plan_done(&plan);
	return r;
}

int sl_nft_egress_delete(struct sl_nft *nft, char *err, size_t errlen)
{
	struct sl_nft_plan plan;
	int r;

	if (!nft)
		return -EINVAL;
	sl_nft_plan_init(&plan);
	r = sl_nft_plan_del_netdev_table(&plan, SL_NFT_EGRESS_TABLE);
	if (r >= 0)
		r = sl_nft_send_plan(nft, &plan, NULL, NULL, err, errlen);
	sl_nft_plan_done(&plan);
	return r;
}
