/* SPDX-License-Identifier: MIT */
/*
 * Approval holds (docs/control.md): a request an `approve: true` rule
 * allowed waits, held, until a person answers on the control socket
 * (`sluice approve ID` / `sluice deny ID`), at most the rule's
 * approve_timeout; no answer in time is a deny. While held nothing goes
 * upstream: the request is not resolved, not connected, not answered.
 *
 * The holder (conn-decide.c for plain HTTP, CONNECT and captured
 * connections, inspect-request.c for inspected requests) hands over
 * callbacks; exactly one of them is called, once, unless the holder
 * cancels first (its connection closes). Nothing here calls a connection's
 * code by name: the arrows run from the connection's files to this one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_gw;
struct sl_gw_hold;

/* The most requests held at once by one gateway: past it, a request that
 * needs approval is refused (403 approval-busy) and audited, so that an
 * agent cannot hold open what it likes. Each held request is also one of
 * the gateway's connections, under its limit. */
#define SL_GW_HOLDS_MAX 16

/* What the audit record says of a hold (struct conn's, per exchange). */
struct sl_gw_approval {
	const char *outcome; /* NULL: not held; "approved", "denied", "timeout"... */
	int64_t uid;	     /* who answered; -1: nobody */
	uint64_t wait_ms;
};

struct sl_gw_hold_ops {
	/* Approved: go on as if it had not been held. */
	void (*go)(void *owner);
	/* Denied, timed out, refused by a reload: answer 403 with reason. */
	void (*refuse)(void *owner, const char *reason, const char *why);
	/* The client went away while held: close. */
	void (*gone)(void *owner);
	/* For `sluice pending`: the body so far (inspected requests; NULL
	 * op: none), and its whole size (-1: unknown, chunked). */
	void (*body)(void *owner, const char **ret_p, size_t *ret_n, int64_t *ret_total);
};

struct sl_gw_hold_what {
	const char *method; /* NULL: a connection (CONNECT, captured) */
	const char *host;
	uint16_t port;
	const char *path; /* NULL: a connection */
};

/*
 * Hold owner's request. client_fd is its client's socket, watched for the
 * client going away; out is where the outcome is written before any op
 * is called. 0 and *ret (the holder keeps it, to cancel), or -EBUSY (the
 * bound: out says "busy"; the caller refuses) or -ENOMEM.
 */
int sl_gw_hold_start(struct sl_gw *gw, void *owner, const struct sl_gw_hold_ops *ops,
		     int client_fd, unsigned timeout_ms, const struct sl_gw_hold_what *what,
		     struct sl_gw_approval *out, struct sl_gw_hold **ret);
/* The holder's connection is closing: forget it, call nothing. NULL ok. */
void sl_gw_hold_cancel(struct sl_gw_hold *h);

/* ---- For the control socket (control.c) ---- */

/* One line per held request, oldest first, each field escaped
 * (control-proto.h): "ID SANDBOX METHOD HOST:PORT PATH BODY_SIZE
 * BODY_START WAITED_S TIMEOUT_S". */
void sl_gw_holds_list(struct sl_gw *gw, void (*line)(void *data, const char *s), void *data);
/* Answer one: 0, or -ENOENT (no such ID held). */
int sl_gw_hold_answer(struct sl_gw *gw, const char *id, bool approve, uint32_t uid);
unsigned sl_gw_holds_count(const struct sl_gw *gw);
/* A reload: every held request is refused (reason "approval-reloaded"):
 * the rule that held it may be gone, or say otherwise now; the client
 * asks again and the new policy decides (docs/control.md). */
void sl_gw_holds_refuse_all(struct sl_gw *gw);
