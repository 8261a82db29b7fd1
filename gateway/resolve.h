/* SPDX-License-Identifier: MIT */
/*
 * The gateway's resolver: c-ares on the libuv loop, with a cache that
 * honours TTLs, from 30 s (an answer; a failure is kept 5 s) to 5 minutes,
 * and never drops an answer of the DNS budget's last minute to make room
 * (-ENOBUFS for a lookup beyond what it may hold),
 * and lookups of a name already in flight wait for its answer (resolve.c:
 * how often a name goes upstream is the agent's channel too). The gateway connects only to addresses it resolved itself,
 * for the name it decided on: a client never names an address, so it cannot
 * race a second lookup (DNS rebinding) to aim the connection elsewhere.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#define SL_GW_MAX_ADDRS 8

struct sl_gw_addrs {
	size_t n;
	struct sockaddr_storage addr[SL_GW_MAX_ADDRS]; /* port 0 */
	unsigned ttl;
};

struct sl_gw_resolver;
struct sl_gw_resolve_req;

/* status: 0, or a negative errno: -ENOENT for a name that does not exist,
 * -ETIMEDOUT, -EIO for other failures, or what the gate returned (-EDQUOT:
 * the DNS budget is spent). addrs is valid during the call. */
typedef void (*sl_gw_resolve_cb)(void *data, int status, const struct sl_gw_addrs *addrs);

/*
 * servers: "ADDR[:PORT]" (IPv6 in brackets), or NULL for /etc/resolv.conf.
 * Only DNS is asked: /etc/hosts is not consulted.
 */
int sl_gw_resolver_new(uv_loop_t *loop, const char *servers, struct sl_gw_resolver **ret,
		       char *err, size_t errlen);

/* Resolve name (A and AAAA), a name in normal form (no trailing dot),
 * always as an absolute name: never with the host's search domains. The
 * callback runs later, on the loop, never
 * from inside this call. *ret_req may be passed to sl_gw_resolve_cancel()
 * until the callback has run. */
int sl_gw_resolve(struct sl_gw_resolver *r, const char *name, sl_gw_resolve_cb cb, void *data,
		  struct sl_gw_resolve_req **ret_req);
/* The addresses name has in the cache, fresh, now (no callback, no loop
 * turn: the common case of a name asked before); -ENOENT when there are
 * none (not cached, expired, or a cached failure: ask sl_gw_resolve()). */
int sl_gw_resolve_cached(struct sl_gw_resolver *r, const char *name, struct sl_gw_addrs *ret);
/* Whether sl_gw_resolve() would answer name from the cache (its addresses
 * or its failure, fresh), asking nobody upstream. */
bool sl_gw_resolve_in_cache(struct sl_gw_resolver *r, const char *name);

/*
 * The gate: asked with the name (normal form) each time a lookup would go
 * upstream, that is after the cache missed, and only then. A negative
 * errno keeps the name from the upstream resolver; the lookup's callback
 * gets that status. The gateway's gate is the DNS budget (dns-budget.h):
 * the one place every name the sandbox chose passes before it leaves.
 */
typedef int (*sl_gw_resolve_gate)(void *data, const char *name);
void sl_gw_resolver_set_gate(struct sl_gw_resolver *r, sl_gw_resolve_gate gate, void *data);

/* The callback will not run. */
void sl_gw_resolve_cancel(struct sl_gw_resolve_req *req);

/* What a failed resolve (the callback's status < 0) is to the client, the
 * same for every way in: *ret_http (429 for the DNS budget, else 502), the
 * audit record's *ret_reason, and a few words of why. */
const char *sl_gw_resolve_failure(int status, int *ret_http, const char **ret_reason);

/* Stop and free; pending callbacks never run. */
void sl_gw_resolver_free(struct sl_gw_resolver *r);
