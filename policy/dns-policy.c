/* SPDX-License-Identifier: MIT */
/*
 * The policy's DNS settings: how many new names a wildcard may send to the
 * upstream resolver (the DNS budget), and which wildcards the sandbox's
 * DNS server does not answer at all (exact_dns). docs/policy.md, "dns".
 */
#include <string.h>

#include "dns-policy.h"

void sl_policy_load_dns(struct sl_yaml *y, struct sl_policy *p, const yaml_node_t *map)
{
	static const char *const keys[] = {"new_names_per_minute", NULL};
	yaml_node_t *v[1] = {0};
	long n;

	if (!sl_yaml_expect_type(y, map, YAML_MAPPING_NODE, "'dns'"))
		return;
	if (!sl_yaml_mapping_keys(y, map, "'dns'", keys, v) || !v[0])
		return;
	n = sl_yaml_integer(y, v[0], "'new_names_per_minute'", 1, SL_POLICY_DNS_NEW_NAMES_MAX);
	if (n > 0)
		p->dns_new_names = (unsigned)n;
}

bool sl_policy_load_exact_dns(struct sl_yaml *y, struct sl_rule *r, const yaml_node_t *n)
{
	const char *s;
	size_t len;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    !(s = sl_yaml_scalar(y, n, "'exact_dns'", &len)) ||
	    !((len == 4 && !memcmp(s, "true", 4)) || (len == 5 && !memcmp(s, "false", 5)))) {
		sl_yaml_error_at(y, n, "'exact_dns' must be true or false");
		return false;
	}
	r->exact_dns = len == 4;
	if (r->exact_dns && !r->wildcard) {
		/* An exact name is the policy's choice, not the agent's: its
		 * lookups carry nothing; the setting would mean nothing. */
		sl_yaml_error_at(y, n,
				 "'exact_dns' applies to a wildcard host (\"*.example.com\"); "
				 "'%s' is an exact name",
				 r->host);
		return false;
	}
	return true;
}
