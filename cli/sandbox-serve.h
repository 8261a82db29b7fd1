/* SPDX-License-Identifier: MIT */
/*
 * What `sluice run` and `sluice attach` share: the fence on both sides of a
 * sandbox's veth, and the gateway serving the sandbox from a process of its
 * own, confined (proxy and DNS on the host end, transparent capture from a
 * listener made inside the sandbox's namespace, blocked packets from its
 * NFLOG group into the audit log; docs/architecture.md "Processes").
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
	/* The sandbox's CA's name, when the gateway is to make the CA itself
	 * (tls->ca unset): its certificate then comes back, before READY,
	 * through sl_serve_gateway_ca(). NULL: tls->ca as it is. */
	const char *make_ca;
	/* --metrics ADDR:PORT, served by the gateway on the host (NULL: not). */
	const char *metrics;
	/* The paths the sandbox can write (`run --rw`; NULL-terminated, or
	 * NULL): a reload refuses a policy under one of them. Borrowed. */
	const char *const *sandbox_writable;
	/* --observe: every policy, at start and on each reload, is in observe
	 * mode (the gateway's config says so too: sl_gw_config.observe). */
	bool observe;
	/* The gateway's policy is in observe mode (set at the fork and by each
	 * reload): a reload says when it leaves it. */
	bool observing;
	/* The pool the sandbox's veth addresses come from (set before
	 * starting): never a destination through the gateway, nor is the
	 * default pool, whatever the policy's private_addresses says. */
	struct sl_netns_pool pool;
	/* The gateway's process (serve-gateway.c): forked, confined, and
	 * spoken to over two socketpairs of fixed-size messages
	 * (serve-internal.h). gw_events is what the supervisor polls: readable
	 * when sl_serve_gateway_event() has something to say. -1 when no
	 * gateway runs. */
	pid_t gw_pid;
	int gw_pidfd, gw_events, gw_commands;
	bool gw_reaped; /* its wait status is in gw_status */
	int gw_status;
	bool gw_gone;	 /* reported dead (or made so): no more events */
	uint64_t reload_seq;
	/* Its uid and gid, of its own (sl_netns_user_allocate), released once
	 * it is gone. */
	struct sl_netns_user gw_user;
	int gw_uid_lock;
	/* The audit log could not be written (the gateway said so and stopped
	 * deciding); audit_err is the error. */
	int audit_err;
	/* The sandbox table's counters, read through a socket made in its
	 * namespace (it takes CAP_NET_ADMIN, so here, not in the gateway),
	 * whose count of blocked packets the rate limit kept out of NFLOG the
	 * gateway audits. */
	struct sl_nft *nft_inside;
	bool audit_on;
	int64_t counters_ms; /* when they were last read for it */

	/* When set (borrowed), it holds a copy of every nftables socket we
	 * close, so that the kernel's wait on the last close is its, after we
	 * are gone, and owned tables are deleted by a commit of their own. */
	const struct sl_netns_releaser *releaser;

	/* The host side's rules. */
	struct sl_nft *nft;
	char host_table[32]; /* the name the host rules were installed under */
	bool host_rules_owned;
	bool host_rules;
	/* The policy whose ports the sandbox's rules capture (borrowed, read
	 * by sl_serve_rules_install only; NULL: every port); a reload the
	 * gateway took applies its own. The gateway's address, for that. */
	const struct sl_policy *fence_policy;
	struct in_addr fence_gateway;

	/* The control socket (control-sock.h), which the gateway serves:
	 * the policy file its `sluice reload` reloads (NULL: none). */
	char *ctl_policy;
};

/* A struct sl_serve before anything is set up. */
#define SL_SERVE_INIT(p)                                                                       \
	{.prog = (p), .gw_pidfd = -1, .gw_events = -1, .gw_commands = -1, .gw_uid_lock = -1}

/* The fence, both sides of the veth: the host's table for it (owned by a
 * socket kept in `s`), then table inet sluice inside the sandbox. errlen
 * must be at least 512. */
int sl_serve_rules_install(struct sl_serve *s, const struct sl_netns_sandbox *sb, char *err,
			   size_t errlen);
/* The host's table goes (owned tables vanish with the socket). */
void sl_serve_rules_remove(struct sl_serve *s);

/* The gateway's uid and gid, allocated now rather than when it starts
 * (run does it while the CA is being made); released with it. */
int sl_serve_gateway_user(struct sl_serve *s, char *err, size_t errlen);

/* Serve the sandbox: the proxy and DNS on the host end, the capture
 * listener inside, blocked packets to `audit` (a file or "-"; NULL: no
 * audit log), names resolved through `resolver` (NULL: the host's), from
 * a process of its own, confined before it reads a byte of the sandbox's.
 * The policy is taken from *policy. Returns once the gateway serves, or
 * with its error ("gateway: cannot confine: ..."). The caller must not
 * have other threads running (it forks). */
int sl_serve_gateway_start(struct sl_serve *s, const struct sl_netns_sandbox *sb,
			   struct sl_policy **policy, const char *audit, const char *resolver,
			   char *err, size_t errlen);
/* sl_serve_gateway_start() in two halves, so that the caller can do
 * something (without threads) while the gateway sets itself up: the fork,
 * then the wait for its READY (or its error). Between them the gateway's
 * events are the ready wait's to read. */
int sl_serve_gateway_fork(struct sl_serve *s, const struct sl_netns_sandbox *sb,
			  struct sl_policy **policy, const char *audit, const char *resolver,
			  char *err, size_t errlen);
int sl_serve_gateway_ready(struct sl_serve *s, char *err, size_t errlen);
/* Between the two, when s->make_ca was set: wait for the CA certificate the
 * gateway made (its PEM, NUL-terminated, into pem, which holds
 * SL_CA_PEM_MAX + 1 bytes), or its error. Anything but one certificate of
 * the right shape is refused, and the gateway killed. */
int sl_serve_gateway_ca(struct sl_serve *s, char *pem, char *err, size_t errlen);
/* Ask the gateway to stop (it closes every connection, each writing its
 * audit record, and exits), wait for it a bounded time, else kill it;
 * release its uid. */
void sl_serve_gateway_stop(struct sl_serve *s);

/* What the supervisor polls (POLLIN), -1 once there is nothing to wait
 * for; then sl_serve_gateway_event() says what happened. */
int sl_serve_gateway_fd(const struct sl_serve *s);
enum sl_serve_event {
	SL_SERVE_NOTHING,
	SL_SERVE_AUDIT_FAILED, /* audit_err says why; the gateway decides nothing more */
	SL_SERVE_GATEWAY_DIED, /* it is reaped: sl_serve_gateway_death() says how */
};
enum sl_serve_event sl_serve_gateway_event(struct sl_serve *s);
/* "killed by signal SYS", "exited with status 1" */
void sl_serve_gateway_death(const struct sl_serve *s, char *buf, size_t len);
/* For a supervisor that reaps with waitpid(-1): was pid the gateway?
 * (then its status is kept for sl_serve_gateway_event). */
bool sl_serve_gateway_reaped(struct sl_serve *s, pid_t pid, int status);

/* SIGHUP (one a process sent: sl_cli_hup_is_request): load the policy file
 * again and hand its bytes to the gateway, which parses them again. A
 * policy that fails to load, lies where others could change it
 * (policy-file.h), or names a secret not loaded at start or sends one
 * somewhere the running policy does not (sl_tls_covers) is reported and
 * the running one stays in force. 0 when reloaded, -ETIMEDOUT when the
 * gateway did not take it in time, else -1. */
int sl_serve_reload(struct sl_serve *s, const char *policy_path);
