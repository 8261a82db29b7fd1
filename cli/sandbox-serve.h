/* SPDX-License-Identifier: MIT */
/*
 * What `sluice run` and `sluice attach` share: the fence on both sides of a
 * sandbox's veth, and the gateway serving the sandbox from a thread of its
 * own (proxy and DNS on the host end, transparent capture from a listener
 * made inside the sandbox's namespace, blocked packets from its NFLOG
 * group into the audit log).
 *
 * Order of use: sl_serve_rules_install(), sl_serve_gateway_start(); then,
 * on every way out, sl_serve_gateway_stop() and sl_serve_rules_remove()
 * (both safe to call whatever setup reached, and more than once).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "gateway.h"
#include "netns.h"
#include "nft.h"
#include "policy.h"
#include "tls-setup.h"

/* The gateway's ports on the host end (DESIGN.md). */
#define SL_SERVE_PORT_PROXY 3128
#define SL_SERVE_PORT_CAPTURE 3129
#define SL_SERVE_PORT_DNS 53
/* The NFLOG group the gateway reads blocked packets from. */
#define SL_SERVE_NFLOG_GROUP 7

struct sl_serve {
	const char *prog; /* "sluice run": the prefix of what it prints */
	/* TLS inspection and credentials (set before starting; may be NULL),
	 * and the CA file origins are verified against (NULL: the system's). */
	struct sl_tls_setup *tls;
	const char *upstream_ca;
	/* The paths the sandbox can write (`run --rw`; NULL-terminated, or
	 * NULL): a reload refuses a policy under one of them. Borrowed. */
	const char *const *sandbox_writable;
	/* The pool the sandbox's veth addresses come from (set before
	 * starting): never a destination through the gateway, nor is the
	 * default pool, whatever the policy's private_addresses says. */
	struct sl_netns_pool pool;
	/* Readable once the gateway has stopped deciding because the audit
	 * log cannot be written (it said why on stderr); audit_err is the
	 * error. -1 before sl_serve_gateway_start() made it. The supervisor
	 * polls it and ends the command. */
	int audit_failed_fd;
	int audit_err;

	/* The gateway's thread: its own loop, stopped through an async handle. */
	uv_loop_t loop;
	uv_async_t stop;
	uv_async_t reload;              /* a new policy is waiting in pending */
	uv_mutex_t lock;                /* guards pending */
	struct sl_policy *pending;
	uv_thread_t tid;
	bool loop_ready, running;
	struct sl_gw *gw;
	struct sl_gw_resolver *resolver;
	struct sl_audit *audit;
	/* Blocked packets, read from the sandbox's NFLOG group on this loop
	 * (only with an audit log: they go nowhere else). */
	struct sl_nft_nflog *nflog;
	uv_poll_t nflog_poll;
	bool nflog_polling;
	uint64_t nflog_overflows; /* seen, but not yet counted by a gap */
	const char *sandbox_name;
	/* The sandbox table's counters, read through a socket made in its
	 * namespace: blocked packets the rate limit kept out of NFLOG are
	 * audited as a count, every few seconds and at the end. */
	struct sl_nft *nft_inside;
	uv_timer_t unlogged_timer;
	bool unlogged_timer_on;
	uint64_t unlogged_reported;

	/* The host side's rules. */
	struct sl_nft *nft;
	char host_table[32]; /* the name the host rules were installed under */
	bool host_rules_owned;
	bool host_rules;
};

/* The fence, both sides of the veth: the host's table for it (owned by a
 * socket kept in `s`), then table inet sluice inside the sandbox. errlen
 * must be at least 512. */
int sl_serve_rules_install(struct sl_serve *s, const struct sl_netns_sandbox *sb, char *err,
			   size_t errlen);
/* The host's table goes (owned tables vanish with the socket). */
void sl_serve_rules_remove(struct sl_serve *s);

/* Serve the sandbox: the proxy and DNS on the host end, the capture
 * listener inside, blocked packets to `audit` (a file or "-"; NULL: no
 * audit log), names resolved through `resolver` (NULL: the host's). The
 * policy is taken from *policy once the gateway holds it. */
int sl_serve_gateway_start(struct sl_serve *s, const struct sl_netns_sandbox *sb,
			   struct sl_policy **policy, const char *audit, const char *resolver,
			   char *err, size_t errlen);
/* Close every connection (each writes its audit record) and the loop. */
void sl_serve_gateway_stop(struct sl_serve *s);

/* Hand the gateway a new policy (taken over), from any thread: requests
 * decided from then on use it; connections already open keep theirs. */
void sl_serve_set_policy(struct sl_serve *s, struct sl_policy *p);

/* SIGHUP (one a process sent: sl_cli_hup_is_request): load the policy file
 * again and hand it over. A policy that fails to load, lies where others
 * could change it (policy-file.h), or names a secret not loaded at start
 * or sends one somewhere the running policy does not (sl_tls_covers) is
 * reported and the running one stays in force. */
void sl_serve_reload(struct sl_serve *s, const char *policy_path);
