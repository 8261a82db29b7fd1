/* SPDX-License-Identifier: MIT */
/*
 * Where a proxy connection is: one state, and the transitions allowed
 * between states (conn-state.c, a table of its own so that its unit test
 * needs no connection). Every change goes through conn_set_state()
 * (conn.c), which calls conn_state_check(): a transition the table does
 * not list is a bug, and the gateway stops rather than go on in a state
 * nobody designed (fail closed). docs/architecture.md draws the diagram.
 */
#pragma once

#include <stdbool.h>

enum state {
	ST_NEW,	       /* accepted; the peer not yet checked: no exchange yet */
	ST_HEAD,       /* reading a request head (captured: the first bytes) */
	ST_IDLE,       /* kept alive between exchanges, nothing of the next yet */
	ST_RESOLVING,  /* decided; waiting for the resolver */
	ST_CONNECTING, /* waiting for the upstream connect */
	ST_PEEK,       /* CONNECT answered: reading the first bytes it carries */
	ST_SERVER_HELLO, /* a checked ClientHello went up: reading the server's answer */
	ST_RELAY,      /* bytes flow both ways */
	ST_INSPECT,    /* TLS ended here, requests decided inside (inspect.c) */
	ST_RESPONDING, /* writing the gateway's own answer, then closing */
	ST_DONE,       /* an exchange is over and audited; the upstream closing */
	ST_CLOSING,    /* the handles closing */
	ST_CLOSED,     /* every handle closed: audited if owed, then freed */
};

#define ST_COUNT (ST_CLOSED + 1)

/* "HEAD", "RELAY", ...; "?" for a value that is no state. */
const char *conn_state_name(enum state s);

/* Whether the table allows from -> to. */
bool conn_state_allowed(enum state from, enum state to);

/* Abort, naming both states, unless from -> to is allowed. */
void conn_state_check(enum state from, enum state to);
