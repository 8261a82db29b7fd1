/* SPDX-License-Identifier: MIT */
/*
 * What the records show, per host and port, and the rules that allow it:
 * paths collapsed where the log shows siblings or identifiers, names
 * under a wildcard where several share a parent that is safe to cover.
 * Pure: no I/O.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "learn.h"
#include "macro.h"
#include "path.h"

void sl_learn_init(struct sl_learn *l, const struct sl_policy *base)
{
	memset(l, 0, sizeof(*l));
	l->base = base;
}

void sl_learn_done(struct sl_learn *l)
{
	size_t i, j;

	for (i = 0; i < l->n_targets; i++) {
		for (j = 0; j < l->targets[i].n_paths; j++)
			free(l->targets[i].paths[j].path);
		free(l->targets[i].paths);
	}
	free(l->targets);
	l->targets = NULL;
	l->n_targets = 0;
}

/* Printable ASCII and no space: the only strings that reach the output. */
static bool clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* Would the policy loader take this host in a rule? The same loader
 * `sluice check` runs, so that what learning keeps is what loads. */
static bool host_loads(const char *host)
{
	char yaml[SL_HOST_BUF + 64];
	struct sl_policy *p = NULL;
	int n;

	n = snprintf(yaml, sizeof(yaml), "version: 1\nallow:\n  - host: \"%s\"\n", host);
	if (n < 0 || (size_t)n >= sizeof(yaml) || sl_policy_load_buffer("h", yaml, (size_t)n, &p, NULL) < 0)
		return false;
	sl_policy_free(p);
	return true;
}

static struct sl_learn_target *find_target(struct sl_learn *l, const char *host, uint16_t port)
{
	size_t i;

	for (i = 0; i < l->n_targets; i++)
		if (l->targets[i].port == port && !strcmp(l->targets[i].host, host))
			return &l->targets[i];
	return NULL;
}

static struct sl_learn_target *new_target(struct sl_learn *l, const char *host,
					  enum sl_host_kind kind, uint16_t port)
{
	struct sl_learn_target *t;

	if (l->n_targets == l->cap_targets) {
		size_t cap = l->cap_targets ? l->cap_targets * 2 : 16;
		struct sl_learn_target *n = realloc(l->targets, cap * sizeof(*n));

		if (!n)
			return NULL;
		l->targets = n;
		l->cap_targets = cap;
	}
	if (!l->targets)
		return NULL;
	t = &l->targets[l->n_targets++];
	memset(t, 0, sizeof(*t));
	memcpy(t->host, host, strnlen(host, sizeof(t->host) - 1)); /* NUL from the memset */
	t->kind = kind;
	t->port = port;
	return t;
}

static int add_path(struct sl_learn_target *t, const char *path)
{
	struct sl_learn_path *n;
	size_t i;

	for (i = 0; i < t->n_paths; i++)
		if (!strcmp(t->paths[i].path, path)) {
			t->paths[i].hits++;
			return 0;
		}
	if (t->n_paths >= SL_LEARN_MAX_PATHS) {
		t->paths_capped = true; /* the rule will name no paths: said */
		return 0;
	}
	n = realloc(t->paths, (t->n_paths + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->paths = n;
	n[t->n_paths].path = strdup(path);
	if (!n[t->n_paths].path)
		return -ENOMEM;
	n[t->n_paths].prefix = false;
	n[t->n_paths].hits = 1;
	t->n_paths++;
	return 0;
}

/* How BASE decides the record's request: 1 allowed, -1 a deny rule, 0 not. */
static int base_says(const struct sl_learn *l, const char *host, uint16_t port,
		     const char *method, const char *path)
{
	struct sl_request q = {.host = host, .host_len = strlen(host), .port = port};
	struct sl_decision d;

	if (!l->base)
		return 0;
	if (method) {
		q.method = method;
		q.path = path;
		q.path_len = strlen(path);
	}
	/* BASE as enforce would decide it, whatever its mode says. */
	sl_policy_decide(l->base, &q, &d);
	if (d.verdict == SL_VERDICT_ALLOW)
		return 1;
	return d.reason == SL_REASON_DENY_RULE ? -1 : 0;
}

/* The record's path in normal form (query cut), or NULL when it is not
 * one a rule could name. */
static const char *record_path(const char *raw, char buf[static SL_PATH_BUF])
{
	char pat[SL_PATH_BUF], bare[SL_PATH_BUF];
	bool prefix;

	if (!raw || !clean(raw) || raw[0] != '/')
		return NULL;
	if (sl_path_normalize(raw, strlen(raw), buf, SL_PATH_BUF, NULL) < 0 || !clean(buf))
		return NULL;
	/* A rule must name it as it is: not with a '*' in it (which a rule
	 * reads as "every path starting with"), nor with anything else the
	 * loader would read another way. */
	if (strchr(buf, '*') ||
	    sl_path_pattern_parse(buf, strlen(buf), pat, sizeof(pat), &prefix, NULL) < 0 || prefix ||
	    strcmp(pat, buf))
		return NULL;
	/* Nor with a ";param" (or "%3B"): a rule allows such a path only
	 * where its bare form ("/a" for "/a;x") is allowed too, so a rule
	 * for it alone would not allow it, and learning the bare form would
	 * allow what the agent never asked for. */
	sl_path_strip_params(buf, bare, sizeof(bare));
	if (strcmp(bare, buf))
		return NULL;
	return buf;
}

/* Which records are learned from, and the checks on what they carry. */
static bool wanted(struct sl_learn *l, const struct sl_learn_record *r, bool *ret_http)
{
	if (!r->event || (strcmp(r->event, "http") && strcmp(r->event, "connect"))) {
		l->st.other_events++;
		return false;
	}
	if (!r->decision || (strcmp(r->decision, "allow") && strcmp(r->decision, "observe-deny"))) {
		l->st.denied++;
		if (r->reason && !strcmp(r->reason, "private-address"))
			l->st.ssrf++;
		return false;
	}
	if (r->port <= 0) {
		l->st.bad_port++;
		return false;
	}
	*ret_http = !strcmp(r->event, "http");
	if (*ret_http && (!r->method || !clean(r->method) ||
			  !sl_method_from_string(r->method, strlen(r->method)))) {
		l->st.bad_method++;
		return false;
	}
	return true;
}

int sl_learn_add(struct sl_learn *l, const struct sl_learn_record *r)
{
	char host[SL_HOST_BUF], pbuf[SL_PATH_BUF];
	const char *path = NULL;
	enum sl_host_kind kind;
	struct sl_learn_target *t;
	bool http = false;
	int b;

	l->st.records++;
	if (!wanted(l, r, &http))
		return 0;
	if (!r->host || !clean(r->host) ||
	    sl_host_normalize(r->host, strlen(r->host), host, &kind, NULL) < 0 || !clean(host)) {
		l->st.bad_host++;
		return 0;
	}
	if (http && !(path = record_path(r->path, pbuf))) {
		l->st.bad_path++;
		return 0;
	}
	b = base_says(l, host, (uint16_t)r->port, http ? r->method : NULL, path);
	if (b) {
		if (b > 0)
			l->st.base_allowed++;
		else
			l->st.base_denied++;
		return 0;
	}
	t = find_target(l, host, (uint16_t)r->port);
	if (!t) {
		if (l->n_targets >= SL_LEARN_MAX_TARGETS) {
			l->st.capped++;
			return 0;
		}
		if (!host_loads(host)) {
			l->st.bad_host++;
			return 0;
		}
		t = new_target(l, host, kind, (uint16_t)r->port);
		if (!t)
			return -ENOMEM;
	}
	t->hits++;
	if (!strcmp(r->decision, "allow"))
		t->allowed++;
	else
		t->observed++;
	if (!http)
		return 0;
	t->http = true;
	t->methods |= sl_method_from_string(r->method, strlen(r->method));
	return add_path(t, path);
}

bool sl_learn_allows(const struct sl_learn *l, const struct sl_policy *p, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->n_targets; i++) {
		const struct sl_learn_target *t = &l->targets[i];
		struct sl_request q = {.host = t->host, .host_len = strlen(t->host), .port = t->port};
		struct sl_decision d;

		sl_policy_decide(p, &q, &d);
		if (d.verdict != SL_VERDICT_ALLOW) {
			snprintf(err, errlen, "%s:%u", t->host, t->port);
			return false;
		}
		for (size_t j = 0; j < t->n_paths; j++)
			for (uint32_t bit = 1; bit <= SL_METHOD_PATCH; bit <<= 1) {
				if (!(t->methods & bit))
					continue;
				q.method = sl_method_to_string(bit);
				q.path = t->paths[j].path;
				q.path_len = strlen(q.path);
				sl_policy_decide(p, &q, &d);
				if (d.verdict != SL_VERDICT_ALLOW) {
					snprintf(err, errlen, "%s %s:%u%s", q.method, t->host, t->port,
						 q.path);
					return false;
				}
			}
	}
	return true;
}
