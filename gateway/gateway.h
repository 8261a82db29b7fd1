/* SPDX-License-Identifier: MIT */
/*
 * The gateway: one libuv loop serving a sandbox's explicit proxy (CONNECT
 * and absolute-form HTTP/1.1). A request's path reads top to bottom in
 * conn.c: accept -> parse -> decide -> resolve -> connect -> relay -> audit.
 * No global state: several gateways (one per loop) can live in a process.
 */
#pragma once

#include <stddef.h>
#include <uv.h>

#include "audit.h"
#include "policy.h"
#include "resolve.h"

struct sl_gw_config {
	const char *sandbox;           /* name in audit records */
	unsigned connect_timeout_ms;   /* upstream connect */
	unsigned idle_timeout_ms;      /* no bytes either way */
	unsigned header_timeout_ms;    /* the whole request head (slowloris) */
	size_t max_header_bytes;       /* 431 past it */
	unsigned max_connections;      /* open at once; more are refused */
	size_t max_buffered_bytes;     /* per direction, before reading pauses */
};

void sl_gw_config_defaults(struct sl_gw_config *c);

struct sl_gw;

/* policy: taken over. resolver, audit: borrowed, must outlive the gateway. */
int sl_gw_new(uv_loop_t *loop, const struct sl_gw_config *cfg, struct sl_policy *policy,
	      struct sl_gw_resolver *resolver, struct sl_audit *audit, struct sl_gw **ret);

/* Serve the explicit proxy on "ADDR:PORT" ("[v6]:PORT"). */
int sl_gw_listen_proxy(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen);

/* Replace the policy (taken over). Connections already deciding keep the
 * policy they started with; the old one is freed when the last is done. */
void sl_gw_set_policy(struct sl_gw *gw, struct sl_policy *p);

/* Stop accepting and close every connection; the loop then runs dry once
 * the caller has closed its own handles. Frees the gateway when done. */
void sl_gw_shutdown(struct sl_gw *gw);
