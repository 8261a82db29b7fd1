/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy-internal.h"
#include "policy.h"

static const struct {
	const char *name;
	uint32_t bit;
} methods[] = {
	{ "GET", SL_METHOD_GET },         { "HEAD", SL_METHOD_HEAD },
	{ "POST", SL_METHOD_POST },       { "PUT", SL_METHOD_PUT },
	{ "DELETE", SL_METHOD_DELETE },   { "CONNECT", SL_METHOD_CONNECT },
	{ "OPTIONS", SL_METHOD_OPTIONS }, { "TRACE", SL_METHOD_TRACE },
	{ "PATCH", SL_METHOD_PATCH },
};

uint32_t sl_method_from_string(const char *s, size_t len)
{
	size_t i;

	/* Methods are case-sensitive (RFC 9110 9.1): "get" is not GET. */
	for (i = 0; i < ELEMENTSOF(methods); i++)
		if (strlen(methods[i].name) == len && memcmp(methods[i].name, s, len) == 0)
			return methods[i].bit;
	return 0;
}

const char *sl_method_to_string(uint32_t bit)
{
	size_t i;

	for (i = 0; i < ELEMENTSOF(methods); i++)
		if (methods[i].bit == bit)
			return methods[i].name;
	return NULL;
}

void sl_diags_clear(struct sl_diags *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++)
		free(d->msgs[i]);
	free(d->msgs);
	d->msgs = NULL;
	d->n = 0;
}

void sl_rule_clear(struct sl_rule *r)
{
	size_t j;

	free(r->name);
	free(r->ports);
	for (j = 0; j < r->n_paths; j++)
		free(r->paths[j].path);
	free(r->paths);
	free(r->inject.header);
	free(r->inject.prefix);
	free(r->inject.placeholder_env);
	memset(r, 0, sizeof(*r));
}

void sl_policy_free(struct sl_policy *p)
{
	size_t i;

	if (!p)
		return;
	sl_policy_index_free(p->index);
	for (i = 0; i < p->n_secrets; i++) {
		free(p->secrets[i].name);
		free(p->secrets[i].ref);
	}
	free(p->secrets);
	for (i = 0; i < p->n_rules; i++)
		sl_rule_clear(&p->rules[i]);
	free(p->rules);
	free(p->private_allow);
	free(p->source);
	free(p);
}

int sl_policy_new_deny_all(struct sl_policy **ret)
{
	struct sl_policy *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->source = strdup("(deny all)");
	if (!p->source) {
		sl_policy_free(p);
		return -ENOMEM;
	}
	r = sl_policy_index_build(p);
	if (r < 0) {
		sl_policy_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

bool sl_policy_private_allowed(const struct sl_policy *p, int family, const void *addr)
{
	const uint8_t *a = addr;
	size_t i;

	for (i = 0; i < p->n_private_allow; i++) {
		const struct sl_cidr *c = &p->private_allow[i];
		unsigned full = c->prefix / 8, rest = c->prefix % 8;

		if (c->family != family)
			continue;
		if (memcmp(c->addr, a, full) != 0)
			continue;
		if (rest && ((c->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest))))
			continue;
		return true;
	}
	return false;
}
