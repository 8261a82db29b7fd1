/* SPDX-License-Identifier: MIT */
/*
 * The TCP ports some rule of a policy could allow (policy.h,
 * sl_policy_allowed_tcp_ports): what the sandbox's nftables capture, so a
 * connection to any other port is refused at its SYN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* mode: observe (docs/observe.md) must see what would be denied, so it
 * captures every port: no SYN is refused for a port no rule allows. */
static bool policy_observes(const struct sl_policy *p)
{
	return p->mode == SL_MODE_OBSERVE;
}

static int cmp_port(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

int sl_policy_allowed_tcp_ports(const struct sl_policy *p, struct sl_policy_ports *ret)
{
	size_t total = 0, n = 0, k = 0;
	uint16_t *v;

	memset(ret, 0, sizeof(*ret));
	if (policy_observes(p)) {
		ret->all = true;
		return 0;
	}
	/* Every allow rule's ports, `protocol: tcp` ones included (they are
	 * among them); an allow rule without a port list (the loader gives
	 * every allow rule one, [80, 443] by default) would allow any. Deny
	 * rules allow nothing. */
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = &p->rules[i];

		if (r->kind != SL_RULE_ALLOW)
			continue;
		if (!r->ports) {
			ret->all = true;
			return 0;
		}
		total += r->n_ports;
	}
	if (!total)
		return 0;
	v = calloc(total, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].kind == SL_RULE_ALLOW)
			for (size_t j = 0; j < p->rules[i].n_ports; j++)
				v[n++] = p->rules[i].ports[j];
	qsort(v, n, sizeof(*v), cmp_port);
	for (size_t i = 0; i < n; i++)
		if (v[i] && (k == 0 || v[k - 1] != v[i]))
			v[k++] = v[i];
	ret->ports = v;
	ret->n = k;
	return 0;
}

void sl_policy_ports_done(struct sl_policy_ports *ports)
{
	free(ports->ports);
	memset(ports, 0, sizeof(*ports));
}
