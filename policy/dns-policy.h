/* SPDX-License-Identifier: MIT */
/* The policy's DNS settings (dns-policy.c), for the loader. */
#pragma once

#include "yaml-util.h"

/* The top-level `dns:` mapping: new_names_per_minute. */
void sl_policy_load_dns(struct sl_yaml *y, struct sl_policy *p, const yaml_node_t *map);
/* A rule's `exact_dns: true|false`, after its host is known. */
bool sl_policy_load_exact_dns(struct sl_yaml *y, struct sl_rule *r, const yaml_node_t *n);
