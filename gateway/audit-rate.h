/* SPDX-License-Identifier: MIT */
/*
 * A limit on how many audit records of one kind are written a window:
 * the rest are counted, and their number said by one summary record
 * (sl_audit_write_summary) once the window is over, so the log says how
 * much it does not show. For records the agent can make faster than any
 * disk should take them (a refused DNS query costs one UDP datagram).
 *
 * A fixed window starting at the first record after the last one ended.
 * Pure: time comes from the caller, nothing here writes. Not thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sl_audit_rate {
	uint64_t window_start_ms;
	unsigned in_window;  /* records written in this window */
	uint64_t suppressed; /* counted since the last summary, not written */
	bool started;
};

/* One more record at now_ms, under limit a window of window_ms. Returns
 * true when it is to be written, false when it is only counted. When a new
 * window begins with records of the last one held back, *ret_unlogged is
 * set to their number (and the count restarts): the caller writes their
 * summary before this record; otherwise *ret_unlogged is 0. A clock that
 * goes back starts a new window too (it never holds records back longer). */
bool sl_audit_rate_take(struct sl_audit_rate *r, unsigned limit, uint64_t window_ms,
			uint64_t now_ms, uint64_t *ret_unlogged);

/* The records held back and not yet summarized, the count restarted: for
 * the summary written when the gateway stops. */
uint64_t sl_audit_rate_drain(struct sl_audit_rate *r);
