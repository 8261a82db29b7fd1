/* SPDX-License-Identifier: MIT */
/*
 * The transitions a connection may make. A row is where it is, a column
 * where it may go; anything else is a bug. CLOSING is reachable from
 * every live state (an error, a timeout, shutdown); nothing leaves CLOSED.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conn-state.h"

#define T(s) [s] = true

static const bool allowed[ST_COUNT][ST_COUNT] = {
	/* The peer checked (or the accept failed: a record of its own). */
	[ST_NEW] = {T(ST_HEAD), T(ST_RESPONDING), T(ST_CLOSING)},
	/* Decided: resolve, or connect to a literal, or (CONNECT to an
	 * inspected host) answer 200 and peek, or (captured TLS) inspect. */
	[ST_HEAD] = {T(ST_RESOLVING), T(ST_CONNECTING), T(ST_PEEK), T(ST_INSPECT),
		     T(ST_RESPONDING), T(ST_CLOSING)},
	/* The next request's first bytes, or the idle limit's 408. */
	[ST_IDLE] = {T(ST_HEAD), T(ST_RESPONDING), T(ST_CLOSING)},
	[ST_RESOLVING] = {T(ST_CONNECTING), T(ST_RESPONDING), T(ST_CLOSING)},
	/* Plain HTTP and opaque tunnels relay; a CONNECT peeks first. */
	[ST_CONNECTING] = {T(ST_RELAY), T(ST_PEEK), T(ST_SERVER_HELLO), T(ST_RESPONDING),
			   T(ST_CLOSING)},
	/* A hello for the right host: relay or inspect; plain HTTP in the
	 * tunnel: the CONNECT's exchange is done, its requests follow. */
	[ST_PEEK] = {T(ST_RELAY), T(ST_SERVER_HELLO), T(ST_INSPECT), T(ST_DONE), T(ST_RESPONDING),
		     T(ST_CLOSING)},
	/* The server's first record: a HelloRetryRequest has the client's
	 * second hello peeked (and checked) too; anything else, relay. */
	[ST_SERVER_HELLO] = {T(ST_PEEK), T(ST_RELAY), T(ST_CLOSING)},
	/* Kept alive: done; a broken response or body: answered; a pooled
	 * upstream found closed before it answered: connect again, once. */
	[ST_RELAY] = {T(ST_DONE), T(ST_RESPONDING), T(ST_CONNECTING), T(ST_CLOSING)},
	/* inspect.c runs its exchanges inside; it leaves only by closing. */
	[ST_INSPECT] = {T(ST_CLOSING)},
	[ST_RESPONDING] = {T(ST_CLOSING)},
	/* The upstream closed: the next request, pipelined or not yet. */
	[ST_DONE] = {T(ST_HEAD), T(ST_IDLE), T(ST_CLOSING)},
	[ST_CLOSING] = {T(ST_CLOSED)},
	[ST_CLOSED] = {},
};

static const char *const names[ST_COUNT] = {
	[ST_NEW] = "NEW",
	[ST_HEAD] = "HEAD",
	[ST_IDLE] = "IDLE",
	[ST_RESOLVING] = "RESOLVING",
	[ST_CONNECTING] = "CONNECTING",
	[ST_PEEK] = "PEEK",
	[ST_SERVER_HELLO] = "SERVER_HELLO",
	[ST_RELAY] = "RELAY",
	[ST_INSPECT] = "INSPECT",
	[ST_RESPONDING] = "RESPONDING",
	[ST_DONE] = "DONE",
	[ST_CLOSING] = "CLOSING",
	[ST_CLOSED] = "CLOSED",
};

static bool valid(enum state s)
{
	return (unsigned)s < ST_COUNT;
}

const char *conn_state_name(enum state s)
{
	return valid(s) ? names[s] : "?";
}

bool conn_state_allowed(enum state from, enum state to)
{
	return valid(from) && valid(to) && allowed[from][to];
}

void conn_state_check(enum state from, enum state to)
{
	if (conn_state_allowed(from, to))
		return;
	fprintf(stderr, "sluice gateway: BUG: a connection went from %s to %s, which it never may\n",
		conn_state_name(from), conn_state_name(to));
	abort();
}
