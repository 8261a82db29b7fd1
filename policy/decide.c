/* SPDX-License-Identifier: MIT */
/*
 * The rule index and the decision function.
 *
 * Rules are indexed by their host's normal form in one open-addressing hash
 * table, exact names and wildcard suffixes apart. A request for
 * a.b.example.com probes the exact key once and the wildcard keys
 * "b.example.com", "example.com" and "com": one probe per label, so a
 * decision costs the same with ten rules as with ten thousand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy.h"
#include "policy-internal.h"

/* A name has at most 127 labels, so at most 127 wildcard keys plus the exact one. */
#define MAX_CANDIDATES 128

struct index_entry {
	const char *key; /* a rule's host; NULL for an empty slot */
	size_t key_len;
	bool wildcard;
	size_t *rules; /* indices into sl_policy.rules, ascending */
	size_t n_rules;
};

struct sl_policy_index {
	struct index_entry *slots;
	size_t mask;
};

/* FNV-1a. The keys come from the policy, not from the client, so a client
 * cannot choose collisions: lookups of its names probe a fixed table. */
static uint64_t hash_key(const char *key, size_t len, bool wildcard)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (wildcard ? 0x9e3779b97f4a7c15ULL : 0);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static struct index_entry *index_find(const struct sl_policy_index *idx, const char *key,
				      size_t len, bool wildcard)
{
	size_t i;

	if (!idx || !idx->slots)
		return NULL;
	for (i = hash_key(key, len, wildcard) & idx->mask;; i = (i + 1) & idx->mask) {
		struct index_entry *e = &idx->slots[i];

		if (!e->key)
			return NULL;
		if (e->wildcard == wildcard && e->key_len == len &&
		    memcmp(e->key, key, len) == 0)
			return e;
	}
}

void sl_policy_index_free(struct sl_policy_index *idx)
{
	size_t i;

	if (!idx)
		return;
	if (idx->slots)
		for (i = 0; i <= idx->mask; i++)
			free(idx->slots[i].rules);
	free(idx->slots);
	free(idx);
}

int sl_policy_index_build(struct sl_policy *p)
{
	struct sl_policy_index *idx;
	size_t i, size = 16;

	while (size < p->n_rules * 2 + 2)
		size *= 2;

	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->slots = calloc(size, sizeof(*idx->slots));
	if (!idx->slots) {
		free(idx);
		return -ENOMEM;
	}
	idx->mask = size - 1;

	for (i = 0; i < p->n_rules; i++) {
		const struct sl_rule *r = &p->rules[i];
		size_t len = strlen(r->host), j;
		size_t *n;

		for (j = hash_key(r->host, len, r->wildcard) & idx->mask;; j = (j + 1) & idx->mask) {
			struct index_entry *e = &idx->slots[j];

			if (!e->key) {
				e->key = r->host;
				e->key_len = len;
				e->wildcard = r->wildcard;
				break;
			}
			if (e->wildcard == r->wildcard && strcmp(e->key, r->host) == 0)
				break;
		}
		n = realloc(idx->slots[j].rules, (idx->slots[j].n_rules + 1) * sizeof(size_t));
		if (!n) {
			sl_policy_index_free(idx);
			return -ENOMEM;
		}
		n[idx->slots[j].n_rules++] = i;
		idx->slots[j].rules = n;
	}

	sl_policy_index_free(p->index);
	p->index = idx;
	return 0;
}

static bool port_ok(const struct sl_rule *r, uint16_t port)
{
	size_t i;

	if (!r->ports)
		return true;
	for (i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

/* How close a non-matching allow rule came: the most specific reason wins. */
static int reason_rank(enum sl_reason r)
{
	switch (r) {
	case SL_REASON_PORT:
		return 1;
	case SL_REASON_METHOD:
		return 2;
	case SL_REASON_PATH:
		return 3;
	case SL_REASON_INVALID_PATH:
		return 4;
	case SL_REASON_ALLOWED:
	case SL_REASON_DENY_RULE:
	case SL_REASON_NO_RULE:
	case SL_REASON_INVALID_HOST:
	case SL_REASON_INVALID_REQUEST:
	case _SL_REASON_MAX:
		break;
	}
	return 0;
}

struct path_state {
	int state; /* 0: not yet normalised, 1: ok, -1: refused */
	const char *why;
	char buf[SL_PATH_BUF];  /* the normal form */
	char bare[SL_PATH_BUF]; /* the same without ";params" */
};

static int path_get(const struct sl_request *req, struct path_state *ps)
{
	if (ps->state == 0) {
		int r = sl_path_normalize(req->path, req->path_len, ps->buf, sizeof(ps->buf),
					  &ps->why);
		ps->state = r < 0 ? -1 : 1;
		if (r >= 0)
			sl_path_strip_params(ps->buf, ps->bare, sizeof(ps->bare));
	}
	return ps->state;
}

static bool any_path(const struct sl_rule *r, const char *path)
{
	size_t i;

	for (i = 0; i < r->n_paths; i++)
		if (sl_path_match(r->paths[i].path, r->paths[i].prefix, path))
			return true;
	return false;
}

/* An allow rule's paths must hold the path in both of the forms a server
 * might route it by. */
static bool allow_paths_ok(const struct sl_rule *r, const struct path_state *ps)
{
	return any_path(r, ps->buf) && any_path(r, ps->bare);
}

static bool deny_path_hit(const struct sl_rule *r, const char *path)
{
	size_t i;

	for (i = 0; i < r->n_paths; i++)
		if (sl_path_match_deny(r->paths[i].path, r->paths[i].prefix, path))
			return true;
	return false;
}

/* The path, and what a PHP front controller routes it as: behind one
 * (Laravel, Symfony, CodeIgniter, WordPress), /index.php/admin is the
 * script /index.php with PATH_INFO /admin, which the framework routes as
 * /admin; servers split at the first ".php" segment (Apache) or the last
 * (nginx's usual fastcgi_split_path_info), so every split is tried. */
static bool deny_path_or_info_hit(const struct sl_rule *r, const char *path)
{
	const char *p;

	if (deny_path_hit(r, path))
		return true;
	for (p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/'))
		if (p - path >= 5 && strncasecmp(p - 4, ".php", 4) == 0 && p[-5] != '/' &&
		    deny_path_hit(r, p))
			return true;
	return false;
}

/* A deny rule's paths catch the path in either form. */
static bool deny_paths_hit(const struct sl_rule *r, const struct path_state *ps)
{
	return deny_path_or_info_hit(r, ps->buf) || deny_path_or_info_hit(r, ps->bare);
}

/* The method bit ignoring ASCII case, for deny rules: Werkzeug and others
 * upper-case the method before they dispatch, so "delete" is DELETE there. */
static uint32_t method_bit_any_case(const char *m)
{
	char up[8];
	size_t i, n = strlen(m);

	if (n >= sizeof(up))
		return 0;
	for (i = 0; i < n; i++)
		up[i] = (m[i] >= 'a' && m[i] <= 'z') ? (char)(m[i] - 'a' + 'A') : m[i];
	return sl_method_from_string(up, n);
}

/* Gather the index entries that name the normal-form host: its exact form
 * and, for a name, every wildcard suffix strictly above it. IP literals
 * have no labels to walk and never meet a name rule. */
static size_t gather_candidates(const struct sl_policy *p, const char *host,
				enum sl_host_kind kind,
				const struct index_entry *cand[static MAX_CANDIDATES])
{
	const struct index_entry *e;
	size_t len = strlen(host), n = 0, i;

	e = index_find(p->index, host, len, false);
	if (e)
		cand[n++] = e;
	if (kind == SL_HOST_NAME)
		for (i = 0; i < len && n < MAX_CANDIDATES; i++) {
			if (host[i] != '.')
				continue;
			e = index_find(p->index, host + i + 1, len - i - 1, true);
			if (e)
				cand[n++] = e;
		}
	return n;
}

static void decide_rules(const struct sl_policy *p, const struct sl_request *req,
			 struct sl_decision *d)
{
	const struct index_entry *cand[MAX_CANDIDATES];
	size_t n_cand = 0, i, j;
	const struct sl_rule *deny = NULL, *allow = NULL;
	enum sl_reason closest = SL_REASON_NO_RULE;
	const char *why = NULL;
	struct path_state ps_store, *ps = &ps_store;
	uint32_t mbit = 0, mbit_deny = 0;
	bool inspect = false;

	ps_store.state = 0;
	d->verdict = SL_VERDICT_DENY;
	d->reason = SL_REASON_NO_RULE;
	d->rule = NULL;
	d->observed_rule = NULL;
	d->inspect = false;
	d->detail = NULL;
	d->path_checked = false;
	d->methods_named = false;
	d->host_injects = false;
	d->host_kind = SL_HOST_NAME;

	if (sl_host_normalize(req->host, req->host_len, d->host, &d->host_kind, &why) < 0) {
		d->host[0] = '\0';
		d->reason = SL_REASON_INVALID_HOST;
		d->detail = why;
		return;
	}
	if (req->port == 0 || (req->path && !req->method)) {
		d->reason = SL_REASON_INVALID_REQUEST;
		d->detail = req->port == 0 ? "no port" : "a path without a method";
		return;
	}
	if (req->method) {
		mbit = sl_method_from_string(req->method, strlen(req->method));
		mbit_deny = method_bit_any_case(req->method);
		if (!req->path) {
			d->reason = SL_REASON_INVALID_REQUEST;
			d->detail = "a method without a path";
			return;
		}
		/* Only origin-form ("/...") or asterisk-form targets are
		 * decided here: an absolute-form target names its own host,
		 * which the origin would serve instead of the Host we decided
		 * on (RFC 9112 3.2.2). The gateway turns one into the other. */
		if (req->path_len == 0 ||
		    !(req->path[0] == '/' || (req->path_len == 1 && req->path[0] == '*'))) {
			d->reason = SL_REASON_INVALID_REQUEST;
			d->detail = "the request target must be a path";
			return;
		}
	}

	n_cand = gather_candidates(p, d->host, d->host_kind, cand);

	/* Deny rules first: one that matches ends the decision. A deny rule
	 * that names methods or paths cannot be judged on a connection; it
	 * makes the connection inspected, so each request meets it. */
	for (i = 0; i < n_cand; i++)
		for (j = 0; j < cand[i]->n_rules; j++) {
			const struct sl_rule *r = &p->rules[cand[i]->rules[j]];

			d->methods_named |= r->methods != 0;
			d->host_injects |= r->has_inject;
			if (r->kind != SL_RULE_DENY || !port_ok(r, req->port))
				continue;
			if (r->methods || r->paths) {
				if (!req->method) {
					inspect = true;
					continue;
				}
				if (r->methods && !(r->methods & mbit_deny))
					continue;
				if (r->paths) {
					if (path_get(req, ps) < 0) {
						/* We cannot tell whether the deny rule
						 * applies; refuse rather than guess. */
						d->reason = SL_REASON_INVALID_PATH;
						d->detail = ps->why;
						d->path_checked = true;
						return;
					}
					if (!deny_paths_hit(r, ps))
						continue;
				}
			}
			if (!deny || r->index < deny->index)
				deny = r;
		}
	d->path_checked = ps->state != 0;
	if (deny) {
		d->rule = deny;
		d->reason = SL_REASON_DENY_RULE;
		return;
	}

	for (i = 0; i < n_cand; i++)
		for (j = 0; j < cand[i]->n_rules; j++) {
			const struct sl_rule *r = &p->rules[cand[i]->rules[j]];
			enum sl_reason miss = SL_REASON_ALLOWED;

			if (r->kind != SL_RULE_ALLOW)
				continue;
			if (!port_ok(r, req->port)) {
				miss = SL_REASON_PORT;
			} else if (req->method) {
				if (r->methods && !(r->methods & mbit)) {
					miss = SL_REASON_METHOD;
				} else if (r->paths) {
					if (path_get(req, ps) < 0) {
						miss = SL_REASON_INVALID_PATH;
						why = ps->why;
					} else if (!allow_paths_ok(r, ps)) {
						miss = SL_REASON_PATH;
					}
				}
			}
			if (miss != SL_REASON_ALLOWED) {
				if (reason_rank(miss) > reason_rank(closest))
					closest = miss;
				continue;
			}
			inspect |= r->inspect;
			if (!allow || r->index < allow->index)
				allow = r;
		}

	d->path_checked = ps->state != 0;
	if (!allow) {
		d->reason = closest;
		d->detail = closest == SL_REASON_INVALID_PATH ? why : NULL;
		return;
	}
	d->verdict = SL_VERDICT_ALLOW;
	d->reason = SL_REASON_ALLOWED;
	d->rule = allow;
	/* A host where some rule injects a credential is inspected on every
	 * port its rules open, not only the injecting rule's: the agent's
	 * own key for that origin (an account it controls) would otherwise
	 * ride an opaque tunnel to another port. Only a port the policy says
	 * carries another protocol stays opaque. */
	d->inspect = inspect || (d->host_injects && !req->method && !allow->opaque);
}

/* The reasons observe mode relaxes: the policy's own choices. */
static bool reason_observable(enum sl_reason r)
{
	switch (r) {
	case SL_REASON_DENY_RULE:
	case SL_REASON_NO_RULE:
	case SL_REASON_PORT:
	case SL_REASON_METHOD:
	case SL_REASON_PATH:
		return true;
	case SL_REASON_ALLOWED:
	case SL_REASON_INVALID_HOST:
	case SL_REASON_INVALID_PATH:
	case SL_REASON_INVALID_REQUEST:
	case _SL_REASON_MAX:
		break;
	}
	return false;
}

void sl_policy_decide(const struct sl_policy *p, const struct sl_request *req,
		      struct sl_decision *d)
{
	decide_rules(p, req, d);
	if (p->mode != SL_MODE_OBSERVE || d->verdict != SL_VERDICT_DENY ||
	    !reason_observable(d->reason))
		return;
	/* A path the rules never compared (no rule for the host names one,
	 * or another part of the request missed first) is still held to
	 * the normal form: an ambiguous one stays refused, and the origin
	 * gets the path the audit names (which is what `sluice learn` reads). */
	if (req->method && req->path_len && req->path[0] == '/') {
		char norm[SL_PATH_BUF];
		const char *why = NULL;

		d->path_checked = true;
		if (sl_path_normalize(req->path, req->path_len, norm, sizeof(norm), &why) < 0) {
			d->reason = SL_REASON_INVALID_PATH;
			d->detail = why;
			d->rule = NULL;
			return;
		}
	}
	d->verdict = SL_VERDICT_OBSERVE;
	/* No rule's rights go with it: the deny rule only names what would
	 * have decided (a deny rule has no credential, but nothing should
	 * have to know that). */
	d->observed_rule = d->rule;
	d->rule = NULL;
	/* On a host where some rule injects, the connection is inspected,
	 * as an allowed one would be, so that the agent's own credential
	 * headers are dropped from each request there (and a request
	 * observed on such a host gets no secret: rule is NULL). */
	d->inspect = !req->method && d->host_injects;
}

void sl_policy_observe_suffix(const char *name, char *buf, size_t size)
{
	const char *last = NULL, *prev = NULL, *s;

	for (s = name; *s; s++)
		if (*s == '.') {
			prev = last;
			last = s;
		}
	snprintf(buf, size, "%s", prev ? prev + 1 : name);
}

/* A deny rule that refuses a connection on this port whatever its
 * requests: sl_policy_decide() on a bare connection stops at exactly these. */
static bool plain_deny_covers(const struct sl_policy *p, const struct index_entry *const *cand,
			      size_t n_cand, bool any_port, uint16_t port)
{
	size_t i, j;

	for (i = 0; i < n_cand; i++)
		for (j = 0; j < cand[i]->n_rules; j++) {
			const struct sl_rule *r = &p->rules[cand[i]->rules[j]];

			if (r->kind != SL_RULE_DENY || r->methods || r->paths)
				continue;
			if (any_port ? !r->ports : port_ok(r, port))
				return true;
		}
	return false;
}

bool sl_policy_name_allowed(const struct sl_policy *p, const char *host, size_t len)
{
	const struct index_entry *cand[MAX_CANDIDATES];
	char norm[SL_HOST_BUF];
	enum sl_host_kind kind;
	size_t n_cand, i, j, k;

	if (sl_host_normalize(host, len, norm, &kind, NULL) < 0 || kind != SL_HOST_NAME)
		return false;
	n_cand = gather_candidates(p, norm, kind, cand);
	for (i = 0; i < n_cand; i++)
		for (j = 0; j < cand[i]->n_rules; j++) {
			const struct sl_rule *r = &p->rules[cand[i]->rules[j]];

			if (r->kind != SL_RULE_ALLOW)
				continue;
			/* An allow rule for every port leaves a port open
			 * unless a deny rule takes every port: deny rules
			 * with ports name finitely many. */
			if (!r->ports) {
				if (!plain_deny_covers(p, cand, n_cand, true, 0))
					return true;
				continue;
			}
			for (k = 0; k < r->n_ports; k++)
				if (!plain_deny_covers(p, cand, n_cand, false, r->ports[k]))
					return true;
		}
	return false;
}

const char *sl_policy_explain(const struct sl_policy *p, const struct sl_request *req,
			      const struct sl_decision *d, char *buf, size_t size)
{
	char id[96] = "", path[256] = "";
	const char *h = d->host;
	/* Observe mode: the deny rule that would have decided. */
	const struct sl_rule *rule = d->rule ? d->rule : d->observed_rule;
	const char *m = req->method ? req->method : "";
	int mlen = 0;

	/* The method is the client's; print it only if it is a token we know. */
	if (req->method && sl_method_from_string(req->method, strlen(req->method)))
		mlen = (int)strlen(m);
	if (rule)
		sl_rule_id(rule, id, sizeof(id));
	if (d->reason == SL_REASON_PATH) {
		char full[SL_PATH_BUF];

		if (sl_path_normalize(req->path, req->path_len, full, sizeof(full), NULL) >= 0)
			snprintf(path, sizeof(path), "%.200s%s", full, strlen(full) > 200 ? "..." : "");
	}

	switch (d->reason) {
	case SL_REASON_ALLOWED:
		snprintf(buf, size, "%s:%u allowed by %s (%s:%u)", h, req->port, id, p->source,
			 rule ? rule->line : 0);
		break;
	case SL_REASON_DENY_RULE:
		snprintf(buf, size, "%s:%u denied by %s (%s:%u)", h, req->port, id, p->source,
			 rule ? rule->line : 0);
		break;
	case SL_REASON_NO_RULE:
		snprintf(buf, size, "%s is not allowed by the policy (no rule names it)", h);
		break;
	case SL_REASON_PORT:
		snprintf(buf, size, "%s is allowed, but not on port %u", h, req->port);
		break;
	case SL_REASON_METHOD:
		if (mlen)
			snprintf(buf, size, "%s:%u is allowed, but not method %.*s", h, req->port, mlen,
				 m);
		else
			snprintf(buf, size, "%s:%u is allowed, but not this method", h, req->port);
		break;
	case SL_REASON_PATH:
		snprintf(buf, size, "%s:%u is allowed, but not path %s", h, req->port, path);
		break;
	case SL_REASON_INVALID_HOST:
		snprintf(buf, size, "invalid host: %s", d->detail ? d->detail : "?");
		break;
	case SL_REASON_INVALID_PATH:
		snprintf(buf, size, "%s:%u: refused ambiguous path: %s", h, req->port,
			 d->detail ? d->detail : "?");
		break;
	case SL_REASON_INVALID_REQUEST:
		snprintf(buf, size, "invalid request: %s", d->detail ? d->detail : "?");
		break;
	case _SL_REASON_MAX:
		snprintf(buf, size, "?");
		break;
	}
	return buf;
}

const char *sl_reason_to_string(enum sl_reason r)
{
	static const char *const names[_SL_REASON_MAX] = {
		[SL_REASON_ALLOWED] = "allowed",
		[SL_REASON_DENY_RULE] = "deny-rule",
		[SL_REASON_NO_RULE] = "no-rule",
		[SL_REASON_PORT] = "port",
		[SL_REASON_METHOD] = "method",
		[SL_REASON_PATH] = "path",
		[SL_REASON_INVALID_HOST] = "invalid-host",
		[SL_REASON_INVALID_PATH] = "invalid-path",
		[SL_REASON_INVALID_REQUEST] = "invalid-request",
	};

	if ((unsigned)r >= _SL_REASON_MAX)
		return "unknown";
	return names[r];
}

const char *sl_decision_rule_id(const struct sl_decision *d, char *buf, size_t size)
{
	if (d->rule)
		return sl_rule_id(d->rule, buf, size);
	if (d->verdict != SL_VERDICT_OBSERVE)
		return NULL;
	return d->observed_rule ? sl_rule_id(d->observed_rule, buf, size) : "default";
}

const char *sl_verdict_to_string(enum sl_verdict v)
{
	switch (v) {
	case SL_VERDICT_ALLOW:
		return "allow";
	case SL_VERDICT_OBSERVE:
		return "observe-deny";
	case SL_VERDICT_DENY:
		break;
	}
	return "deny";
}

/* buf[*at..] = s[0..n), as far as size leaves room for the NUL. */
static void id_put(char *buf, size_t size, size_t *at, const char *s, size_t n)
{
	if (*at + n >= size)
		n = size - 1 - *at;
	memcpy(buf + *at, s, n);
	*at += n;
}

/* As snprintf would write it (truncated to size), without printf: this
 * runs for every audit record. */
const char *sl_rule_id(const struct sl_rule *r, char *buf, size_t size)
{
	char digits[sizeof(unsigned) * 3 + 1], *d = digits + sizeof(digits);
	const char *kind = r->kind == SL_RULE_ALLOW ? "allow" : "deny";
	unsigned v = r->index;
	size_t at = 0;

	if (size == 0)
		return buf;
	if (r->name) {
		id_put(buf, size, &at, r->name, strlen(r->name));
	} else {
		do
			*--d = (char)('0' + v % 10);
		while ((v /= 10) != 0);
		id_put(buf, size, &at, kind, strlen(kind));
		id_put(buf, size, &at, "[", 1);
		id_put(buf, size, &at, d, (size_t)(digits + sizeof(digits) - d));
		id_put(buf, size, &at, "]", 1);
	}
	buf[at] = '\0';
	return buf;
}

const struct sl_rule *sl_policy_name_wildcard(const struct sl_policy *p, const char *host,
					      size_t len)
{
	const struct index_entry *cand[MAX_CANDIDATES];
	char norm[SL_HOST_BUF];
	enum sl_host_kind kind;
	size_t n_cand, i, j;

	if (sl_host_normalize(host, len, norm, &kind, NULL) < 0 || kind != SL_HOST_NAME)
		return NULL;
	/* The exact entry comes first, then the suffixes, longest first. */
	n_cand = gather_candidates(p, norm, kind, cand);
	for (i = 0; i < n_cand; i++)
		for (j = 0; j < cand[i]->n_rules; j++) {
			const struct sl_rule *r = &p->rules[cand[i]->rules[j]];

			if (r->kind == SL_RULE_ALLOW)
				return cand[i]->wildcard ? r : NULL;
		}
	return NULL;
}

unsigned sl_policy_dns_new_names(const struct sl_policy *p)
{
	return p->dns_new_names ? p->dns_new_names : SL_POLICY_DNS_NEW_NAMES_DEFAULT;
}
