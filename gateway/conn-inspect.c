/* SPDX-License-Identifier: MIT */
/*
 * Inspection as a way in: the handler the core hands a connection to once
 * TLS is to be ended here (conn-tunnel.c decides that); inspect.c does the
 * work. Only this table names inspect.c's entry points, so the core and
 * the other handlers need not.
 */
#include "conn-internal.h"

/* The connection's timer fired while inspect.c had it. */
static bool inspect_timer(struct conn *c)
{
	if (c->state != ST_INSPECT)
		return false;
	conn_inspect_timer(c);
	return true;
}

const struct conn_handler conn_inspect_handler = {
	.name = "inspect",
	.start = conn_inspect_start,
	.timer = inspect_timer,
	.written = conn_inspect_written,
	.close = conn_inspect_close,
	.free = conn_inspect_free,
};
