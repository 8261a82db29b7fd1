/* SPDX-License-Identifier: MIT */
/*
 * Approval holds: an allow rule with `approve: true` lets a request
 * through only once a person outside the sandbox said yes on the control
 * socket (docs/control.md), within `approve_timeout` seconds (default 60);
 * no answer in time is a deny. Only the loading is here; the hold is the
 * gateway's (gateway/approve.c).
 */
#include <string.h>

#include "approve-policy.h"

bool sl_policy_load_approve(struct sl_yaml *y, struct sl_rule *r, const yaml_node_t *approve,
			    const yaml_node_t *timeout)
{
	const char *s;
	size_t len;
	long secs;

	r->approve_timeout_ms = SL_POLICY_APPROVE_TIMEOUT_DEFAULT * 1000u;
	if (approve) {
		if (approve->type != YAML_SCALAR_NODE ||
		    approve->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    !(s = sl_yaml_scalar(y, approve, "'approve'", &len)) ||
		    !((len == 4 && !memcmp(s, "true", 4)) || (len == 5 && !memcmp(s, "false", 5)))) {
			sl_yaml_error_at(y, approve, "'approve' must be true or false");
			return false;
		}
		r->approve = len == 4;
	}
	if (!timeout)
		return true;
	if (!r->approve) {
		/* A timeout that holds nothing would read as a hold that is
		 * not there. */
		sl_yaml_error_at(y, timeout, "'approve_timeout' needs 'approve: true' on the same "
					     "rule");
		return false;
	}
	secs = sl_yaml_integer(y, timeout, "'approve_timeout' (seconds)", 1,
			       SL_POLICY_APPROVE_TIMEOUT_MAX);
	if (secs < 0)
		return false;
	r->approve_timeout_ms = (unsigned)secs * 1000u;
	return true;
}
