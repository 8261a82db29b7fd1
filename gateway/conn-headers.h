/* SPDX-License-Identifier: MIT */
/*
 * The request-head checks a connection makes once a request is allowed
 * (conn-headers.c, on reqhead.c), and the policy each new request on an
 * open connection is decided with. Not part of the gateway's API.
 */
#pragma once

struct conn;

/* Decide the next request with the gateway's current policy: a reload
 * reaches connections that are already open, at their next request. Call
 * before deciding, when nothing of the old decision is used any more. */
void conn_policy_refresh(struct conn *c);

/*
 * A plain-HTTP request (proxy, captured, or inside a CONNECT; its head in
 * c->buf) that the policy allowed: refuse a GET or HEAD with a body, a
 * method override where rules name methods, a '_' credential header on an
 * inject host, and
 * make c->path the target to forward (the decided normal form). Returns 0,
 * or -1 when c was answered (refused).
 */
int conn_plain_head_check(struct conn *c);
