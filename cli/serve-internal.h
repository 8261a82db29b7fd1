/* SPDX-License-Identifier: MIT */
/*
 * Between the supervisor (sandbox-serve.c, root) and the gateway's process
 * (serve-gateway.c, confined): two SOCK_SEQPACKET socketpairs whose every
 * message is one fixed-size struct sl_serve_msg, so that the supervisor
 * parses nothing of what the gateway (which reads the sandbox's bytes)
 * could shape beyond a type, a number and an errno (and, before it serves,
 * a certificate of a fixed shape and its setup error's text).
 *
 *   events (gateway -> supervisor; the supervisor never writes there):
 *     CA            first, when the supervisor asked for the sandbox's CA
 *                   (sl_serve.make_ca): value, the length of its
 *                   certificate's PEM, which follows; read only before
 *                   READY, and taken only if it is one PEM certificate and
 *                   nothing else (sl_ca_pem_is_one_cert), for the bundle
 *                   the sandbox trusts. The key never leaves the gateway
 *     READY         set up and confined: serving
 *     FAILED        setup or confinement failed (the only message with a
 *                   text, read only before READY, when no byte of the
 *                   sandbox's has been read); the gateway then exits
 *     AUDIT_FAILED  err: the audit log cannot be written (once)
 *     COUNTERS      a request for the sandbox table's counters
 *     CTL_RELOAD    the control socket asked for a reload (`sluice reload`):
 *                   the supervisor reloads its own file as on SIGHUP and
 *                   answers CTL_RELOADED (err: 0 or why not; a text, what
 *                   the reload said) on the commands channel
 *   commands (supervisor -> gateway; the gateway answers only RELOAD):
 *     RELOAD        value: a sequence number; a memfd (SCM_RIGHTS) holds
 *                   the policy file's bytes, already checked by the
 *                   supervisor; answered by RELOADED (value: the same
 *                   number; err: 0 or why it was not taken)
 *     UNLOGGED      value: blocked packets the rate limit kept out of
 *                   NFLOG so far (the answer to COUNTERS)
 *     STOP          value: the same, read once the sandbox sends nothing
 *                   more; the gateway audits the rest and exits
 *
 * The gateway's end of a channel at EOF means the supervisor is gone: it
 * exits. The supervisor's at EOF means the gateway is gone (or hid from
 * it): it kills and reaps it, and ends the command.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "fdpass.h"
#include "sandbox-serve.h"

enum sl_serve_msg_type {
	SL_SERVE_MSG_READY = 1,
	SL_SERVE_MSG_FAILED,
	SL_SERVE_MSG_AUDIT_FAILED,
	SL_SERVE_MSG_COUNTERS,
	SL_SERVE_MSG_RELOAD,
	SL_SERVE_MSG_RELOADED,
	SL_SERVE_MSG_UNLOGGED,
	SL_SERVE_MSG_STOP,
	SL_SERVE_MSG_CTL_RELOAD,
	SL_SERVE_MSG_CTL_RELOADED,
	SL_SERVE_MSG_CA,
};

struct sl_serve_msg {
	uint32_t type;
	int32_t err;
	uint64_t value;
};

/* FAILED and CTL_RELOADED: the message, then its text (NUL-terminated
 * within). */
struct sl_serve_msg_failed {
	struct sl_serve_msg m;
	char text[480];
};

/* CA: the message, then the certificate's PEM (m.value bytes; no NUL
 * needed). */
struct sl_serve_msg_ca {
	struct sl_serve_msg m;
	char pem[SL_CA_PEM_MAX];
};

/* What the gateway's process starts from: everything the supervisor made
 * for it before the fork (its copies of these it closes after). */
struct sl_serve_child {
	const char *prog;
	int events, commands;	    /* the gateway's ends */
	int capture_fd;		    /* listening, inside the sandbox's namespace */
	struct sl_nft_nflog *nflog; /* bound to its NFLOG group in there; NULL: none */
	struct sl_audit *audit;	    /* NULL: no audit log */
	struct sl_gw_config cfg;
	struct sl_policy *policy;
	const char *resolver;
	const char *policy_path; /* what a reloaded policy's messages call it */
	char listen_proxy[32], listen_dns[32];
	const char *listen_metrics; /* NULL: no --metrics */
	struct sl_tls_setup *tls;
	const char *make_ca; /* the sandbox's CA's name: made here, sent as CA */
	const char *upstream_ca;
	uid_t uid;
	gid_t gid;
	const char *empty_dir;
	int ctl_fd; /* the control socket, listening; -1: none */
};

/* In the forked child: set up, confine, serve until STOP or the
 * supervisor's end closes; never returns. */
_Noreturn void sl_serve_child_main(struct sl_serve_child *c);

