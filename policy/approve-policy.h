/* SPDX-License-Identifier: MIT */
/* A rule's approval hold (approve-policy.c), for the loader. */
#pragma once

#include "yaml-util.h"

/* An allow rule's `approve: true|false` and `approve_timeout: SECONDS`
 * (either node may be NULL: absent). False, with the error said, when
 * either is wrong. */
bool sl_policy_load_approve(struct sl_yaml *y, struct sl_rule *r, const yaml_node_t *approve,
			    const yaml_node_t *timeout);
