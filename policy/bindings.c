/* SPDX-License-Identifier: MIT */
/*
 * Where a policy sends its secrets, and whether a reload may change that
 * (policy.h, "What a reload may change").
 *
 * A reload rereads a file; whoever can get a file reread (a policy left
 * writable, an operator who copies in a file they were handed) must not
 * be able to send a key already in sluice's memory somewhere new. So a
 * reload may drop or narrow where a secret goes, but not widen it: every
 * place must be one the policy in force already named.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "macro.h"
#include "policy.h"

struct binding {
	char *secret, *header, *prefix;
	char host[SL_HOST_BUF];
	bool wildcard;
	uint16_t *ports; /* NULL: every port */
	size_t n_ports;
};

struct sl_policy_bindings {
	struct binding *v;
	size_t n;
};

void sl_policy_bindings_free(struct sl_policy_bindings *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].secret);
		free(b->v[i].header);
		free(b->v[i].prefix);
		free(b->v[i].ports);
	}
	free(b->v);
	free(b);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_policy_bindings *, sl_policy_bindings_free)

int sl_policy_bindings_new(const struct sl_policy *p, struct sl_policy_bindings **ret)
{
	_cleanup_(sl_policy_bindings_freep) struct sl_policy_bindings *b = NULL;
	size_t n = 0;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_rules; i++)
		n += p->rules[i].has_inject;
	if (n) {
		b->v = calloc(n, sizeof(*b->v));
		if (!b->v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = &p->rules[i];
		struct binding *d;

		if (!r->has_inject)
			continue;
		d = &b->v[b->n++];
		d->secret = strdup(p->secrets[r->inject.secret].name);
		d->header = strdup(r->inject.header);
		d->prefix = strdup(r->inject.prefix ? r->inject.prefix : "");
		if (!d->secret || !d->header || !d->prefix)
			return -ENOMEM;
		memcpy(d->host, r->host, sizeof(d->host));
		d->wildcard = r->wildcard;
		if (r->ports) {
			d->ports = calloc(r->n_ports ? r->n_ports : 1, sizeof(*d->ports));
			if (!d->ports)
				return -ENOMEM;
			if (r->n_ports)
				memcpy(d->ports, r->ports, r->n_ports * sizeof(*d->ports));
			d->n_ports = r->n_ports;
		}
	}
	*ret = TAKE_PTR(b);
	return 0;
}

/* Does the earlier pattern cover every host the new one matches? The same
 * pattern, or (under an earlier wildcard) a name or a narrower wildcard
 * strictly below its suffix. */
static bool host_covered(const struct binding *old, const struct sl_rule *r)
{
	if (!old->wildcard)
		return !r->wildcard && strcmp(old->host, r->host) == 0;
	if (r->wildcard && strcmp(old->host, r->host) == 0)
		return true;
	return sl_host_is_below(r->host, old->host);
}

static bool port_in(const struct binding *old, bool any, uint16_t port)
{
	if (!old->ports)
		return true;
	if (any)
		return false;
	for (size_t i = 0; i < old->n_ports; i++)
		if (old->ports[i] == port)
			return true;
	return false;
}

/* Is (secret, header, prefix, host, port) a place the earlier policy sent
 * the secret? any: every port. */
static bool place_known(const struct sl_policy_bindings *b, const char *secret,
			const struct sl_rule *r, bool any, uint16_t port, bool *ret_host_known)
{
	const char *prefix = r->inject.prefix ? r->inject.prefix : "";

	for (size_t i = 0; i < b->n; i++) {
		const struct binding *old = &b->v[i];

		if (strcmp(old->secret, secret) != 0 || !host_covered(old, r))
			continue;
		*ret_host_known = true;
		if (strcasecmp(old->header, r->inject.header) != 0 || strcmp(old->prefix, prefix) != 0)
			continue;
		if (port_in(old, any, port))
			return true;
	}
	return false;
}

static bool header_known(const struct sl_policy_bindings *b, const char *secret,
			 const struct sl_rule *r)
{
	const char *prefix = r->inject.prefix ? r->inject.prefix : "";

	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->v[i].secret, secret) == 0 && host_covered(&b->v[i], r) &&
		    strcasecmp(b->v[i].header, r->inject.header) == 0 &&
		    strcmp(b->v[i].prefix, prefix) == 0)
			return true;
	return false;
}

int sl_policy_bindings_check(const struct sl_policy_bindings *b, const struct sl_policy *p,
			     char *err, size_t errlen)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = &p->rules[i];
		const char *secret;
		size_t n = r->ports ? r->n_ports : 1;

		if (!r->has_inject)
			continue;
		secret = p->secrets[r->inject.secret].name;
		for (size_t k = 0; k < n; k++) {
			bool any = !r->ports, host_known = false;
			uint16_t port = any ? 0 : r->ports[k];

			if (place_known(b, secret, r, any, port, &host_known))
				continue;
			if (!host_known)
				return sl_err(err, errlen, -EPERM,
					      "%s:%u:%u: secret '%s' is bound to %s%s, where the "
					      "running policy does not send it; a reload cannot send a "
					      "secret to a new host (restart sluice for that)",
					      p->source, r->line, r->col, secret, r->wildcard ? "*." : "",
					      r->host);
			/* Another header could be one the origin echoes back
			 * or logs where others read it, another prefix a
			 * scheme that leaks it: as much a new place as a new
			 * host. */
			if (!header_known(b, secret, r))
				return sl_err(err, errlen, -EPERM,
					      "%s:%u:%u: secret '%s' goes into header '%s' with a "
					      "different header or prefix than the running policy "
					      "puts it in for %s%s; a reload cannot change that "
					      "(restart sluice for that)",
					      p->source, r->line, r->col, secret, r->inject.header,
					      r->wildcard ? "*." : "", r->host);
			if (any)
				return sl_err(err, errlen, -EPERM,
					      "%s:%u:%u: secret '%s' would go to %s%s on every port, "
					      "where the running policy names ports; a reload cannot "
					      "widen that (restart sluice for that)",
					      p->source, r->line, r->col, secret, r->wildcard ? "*." : "",
					      r->host);
			return sl_err(err, errlen, -EPERM,
				      "%s:%u:%u: secret '%s' would go to %s%s on port %u, where the "
				      "running policy does not send it; a reload cannot add a port "
				      "(restart sluice for that)",
				      p->source, r->line, r->col, secret, r->wildcard ? "*." : "",
				      r->host, (unsigned)port);
		}
	}
	return 0;
}
