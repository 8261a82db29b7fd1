/* SPDX-License-Identifier: MIT */
/* A per-window limit on audit records (audit-rate.h). */
#include "audit-rate.h"

bool sl_audit_rate_take(struct sl_audit_rate *r, unsigned limit, uint64_t window_ms,
			uint64_t now_ms, uint64_t *ret_unlogged)
{
	*ret_unlogged = 0;
	if (!r->started || now_ms < r->window_start_ms ||
	    now_ms - r->window_start_ms >= window_ms) {
		*ret_unlogged = sl_audit_rate_drain(r);
		r->started = true;
		r->window_start_ms = now_ms;
		r->in_window = 0;
	}
	if (r->in_window >= limit) {
		r->suppressed++;
		return false;
	}
	r->in_window++;
	return true;
}

uint64_t sl_audit_rate_drain(struct sl_audit_rate *r)
{
	uint64_t n = r->suppressed;

	r->suppressed = 0;
	return n;
}
