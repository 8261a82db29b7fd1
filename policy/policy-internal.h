/* SPDX-License-Identifier: MIT */
/* Shared between the policy library's own files; not part of its API. */
#pragma once

#include "policy.h"

int sl_policy_index_build(struct sl_policy *p);
void sl_policy_index_free(struct sl_policy_index *idx);
void sl_rule_clear(struct sl_rule *r);
