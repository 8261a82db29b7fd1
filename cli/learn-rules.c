/* SPDX-License-Identifier: MIT */
/*
 * From targets to rules: paths collapsed, ports of a host with the same
 * body joined, names joined under a wildcard where that is safe. Never a
 * pattern broader than the log shows: a prefix only below a segment that
 * held an identifier or two siblings (never the root's), a wildcard only over
 * SL_LEARN_WILDCARD_MIN names of one parent that is not a public suffix.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "learn.h"
#include "macro.h"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_uuid(const char *s, size_t n)
{
	size_t i;

	if (n != 36)
		return false;
	for (i = 0; i < n; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !is_hex(s[i]))
			return false;
	return true;
}

bool sl_learn_segment_is_id(const char *s, size_t n)
{
	size_t i, digits = 0, hex = 0, alpha = 0, other = 0;

	if (is_uuid(s, n))
		return true;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			digits++;
		else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			alpha++;
		else if (c != '-' && c != '_')
			other++;
		if (is_hex(c))
			hex++;
	}
	if (other)
		return false;
	/* 123, 2024, 98765: an item's number (v1, v2 and 2 are not). */
	if (digits == n && n >= 3)
		return true;
	/* A hash or object id: 12 hex digits or more, some of them digits. */
	if (hex == n && n >= 12 && digits)
		return true;
	/* msg_01XFDUDYJgAACzvnptvVoYEL, a token: long, letters and digits. */
	return n >= 16 && digits >= 2 && alpha >= 2;
}

static int cmp_path(const void *a, const void *b)
{
	const struct sl_learn_path *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (int)x->prefix - (int)y->prefix;
}

/* The path up to (not including) its first identifier segment, as a
 * prefix "/a/b/"; the path itself when it has none, or when the first
 * segment is one (a prefix "/" would allow every path). */
static char *cut_at_id(const char *path, bool *ret_prefix)
{
	const char *seg = path + 1, *end;

	*ret_prefix = false;
	while (*seg) {
		end = strchr(seg, '/');
		if (!end)
			end = seg + strlen(seg);
		if (sl_learn_segment_is_id(seg, (size_t)(end - seg)) && seg > path + 1) {
			*ret_prefix = true;
			return strndup(path, (size_t)(seg - path));
		}
		if (!*end)
			break;
		seg = end + 1;
	}
	return strdup(path);
}

/* The parent "/a/" of "/a/b"; 0 when the parent is the root. */
static size_t parent_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash > path ? (size_t)(slash - path) + 1 : 0;
}

/* Segments in a parent "/a/b/": 2. */
static size_t depth(const char *parent, size_t len)
{
	size_t i, n = 0;

	for (i = 1; i < len; i++)
		n += parent[i] == '/';
	return n;
}

/* Exact paths with siblings become the parent's prefix: two siblings
 * below a parent of two segments or more ("/v1/messages/a" and "/b"),
 * three below a parent of one ("/v1/messages", "/v1/models" stay as
 * they are; a third makes the prefix of "/v1/"); never below the root. */
static int join_siblings(struct sl_learn_path *v, size_t n)
{
	bool *join = calloc(n ? n : 1, sizeof(*join));
	size_t i, j;

	if (!join)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t pl = v[i].prefix ? 0 : parent_len(v[i].path), sibs = 0;

		for (j = 0; pl && j < n; j++)
			sibs += j != i && !v[j].prefix && parent_len(v[j].path) == pl &&
				!strncmp(v[j].path, v[i].path, pl) && strcmp(v[j].path, v[i].path);
		join[i] = pl && sibs >= (depth(v[i].path, pl) >= 2 ? 1u : 2u);
	}
	/* Cut once all are compared whole. */
	for (i = 0; i < n; i++)
		if (join[i]) {
			v[i].path[parent_len(v[i].path)] = '\0';
			v[i].prefix = true;
		}
	free(join);
	return 0;
}

/* Does prefix j take i: a shorter prefix of it, the same path as a
 * prefix where i is exact, or the same prefix earlier (a duplicate)? */
static bool takes(const struct sl_learn_path *v, size_t j, size_t i)
{
	size_t lj = strlen(v[j].path), li = strlen(v[i].path);

	if (j == i || !v[j].prefix || strncmp(v[i].path, v[j].path, lj))
		return false;
	return lj < li || !v[i].prefix || j < i;
}

/* Drop what a prefix covers and duplicates, their hits going to the
 * shortest prefix that covers them (never itself dropped) or the first
 * copy. Sorted. Returns how many are left, at the front. */
static size_t prune(struct sl_learn_path *v, size_t n)
{
	size_t i, j, out = 0;

	qsort(v, n, sizeof(*v), cmp_path);
	for (i = 0; i < n; i++) {
		size_t best = n;

		for (j = 0; j < n; j++)
			if (v[j].path && takes(v, j, i) &&
			    (best == n || strlen(v[j].path) < strlen(v[best].path)))
				best = j;
		for (j = 0; best == n && j < i; j++)
			if (v[j].path && !v[j].prefix && !v[i].prefix && !strcmp(v[j].path, v[i].path))
				best = j;
		if (best == n)
			continue;
		v[best].hits += v[i].hits;
		free(v[i].path);
		v[i].path = NULL;
	}
	for (i = 0; i < n; i++)
		if (v[i].path)
			v[out++] = v[i];
	return out;
}

int sl_learn_collapse_paths(const struct sl_learn_path *in, size_t n, struct sl_learn_path **ret,
			    size_t *ret_n)
{
	struct sl_learn_path *v = calloc(n ? n : 1, sizeof(*v));
	size_t i;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i].path = in[i].prefix ? strdup(in[i].path) : cut_at_id(in[i].path, &v[i].prefix);
		v[i].prefix |= in[i].prefix;
		v[i].hits = in[i].hits;
		if (!v[i].path) {
			while (i--)
				free(v[i].path);
			free(v);
			return -ENOMEM;
		}
	}
	n = prune(v, n);
	if (join_siblings(v, n) < 0) {
		for (i = 0; i < n; i++)
			free(v[i].path);
		free(v);
		return -ENOMEM;
	}
	*ret_n = prune(v, n);
	*ret = v;
	return 0;
}

/* Second-level labels under which ccTLDs register names for others
 * (co.uk, com.au, ne.jp, gov.br...): *.co.uk would be everyone's. */
static const char *const public_sld[] = {
    "ac", "co", "com", "edu", "gob", "go", "gouv", "gov", "govt", "id", "info", "ltd", "me",
    "mil", "ne", "net", "nic", "nom", "or", "org", "plc", "sch", "web",
};

/* Suffixes where each name below belongs to whoever signed up for it
 * (shared hosting, clouds, CDNs): a wildcard would reach other tenants.
 * Not the Public Suffix List, which sluice does not carry: a short list
 * of the common ones, and docs/observe.md says to review wildcards. */
static const char *const shared[] = {
    "amazonaws.com", "appspot.com", "azurewebsites.net", "blogspot.com", "cloudfront.net",
    "cloudfunctions.net", "azureedge.net", "fastly.net", "firebaseapp.com", "fly.dev",
    "github.io", "gitlab.io", "glitch.me", "herokuapp.com", "netlify.app", "ngrok.io",
    "ngrok-free.app", "onrender.com", "pages.dev", "r2.dev", "railway.app", "replit.dev",
    "run.app", "vercel.app", "web.app", "workers.dev", "googleusercontent.com",
    "githubusercontent.com", "ddns.net", "duckdns.org", "no-ip.org",
};

bool sl_learn_suffix_safe(const char *suffix)
{
	const char *dot = strchr(suffix, '.'), *tld;
	size_t i, l1;

	if (!dot || !dot[1])
		return false; /* "*.com", "*.internal": never */
	for (i = 0; i < ELEMENTSOF(shared); i++) {
		size_t n = strlen(shared[i]), s = strlen(suffix);

		if (s >= n && !strcmp(suffix + s - n, shared[i]) && (s == n || suffix[s - n - 1] == '.'))
			return false;
	}
	if (strchr(dot + 1, '.'))
		return true; /* three labels or more: below any two-label public suffix */
	tld = dot + 1;
	l1 = (size_t)(dot - suffix);
	if (strlen(tld) != 2)
		return true; /* example.com: a name someone registered */
	for (i = 0; i < ELEMENTSOF(public_sld); i++)
		if (strlen(public_sld[i]) == l1 && !strncmp(suffix, public_sld[i], l1))
			return false;
	return true;
}

/* ---- rules ---- */

static int cmp_target(const void *a, const void *b)
{
	const struct sl_learn_target *x = *(const struct sl_learn_target *const *)a;
	const struct sl_learn_target *y = *(const struct sl_learn_target *const *)b;
	int c = strcmp(x->host, y->host);

	return c ? c : (int)x->port - (int)y->port;
}

static bool same_paths(const struct sl_learn_rule *a, const struct sl_learn_rule *b)
{
	size_t i;

	if (a->n_paths != b->n_paths || !a->paths != !b->paths)
		return false;
	for (i = 0; i < a->n_paths; i++)
		if (a->paths[i].prefix != b->paths[i].prefix || strcmp(a->paths[i].path, b->paths[i].path))
			return false;
	return true;
}

static bool same_body(const struct sl_learn_rule *a, const struct sl_learn_rule *b)
{
	return a->http == b->http && a->methods == b->methods && same_paths(a, b);
}

static bool same_ports(const struct sl_learn_rule *a, const struct sl_learn_rule *b)
{
	return a->n_ports == b->n_ports && !memcmp(a->ports, b->ports, a->n_ports * sizeof(*a->ports));
}

static void rule_clear(struct sl_learn_rule *r)
{
	size_t i;

	for (i = 0; i < r->n_paths; i++)
		free(r->paths[i].path);
	free(r->paths);
	free(r->ports);
	for (i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	memset(r, 0, sizeof(*r));
}

void sl_learn_rules_free(struct sl_learn_rule *r, size_t n)
{
	size_t i;

	for (i = 0; r && i < n; i++)
		rule_clear(&r[i]);
	free(r);
}

/* Is an IP-literal host in a range the gateway refuses by default? */
static const char *special_range(const struct sl_learn_target *t)
{
	uint8_t a[16];
	char h[SL_HOST_BUF];
	size_t n = strlen(t->host);

	if (t->kind == SL_HOST_NAME)
		return NULL;
	/* The normal form of an IPv6 literal may keep its brackets. */
	snprintf(h, sizeof(h), "%.*s", (int)(t->host[0] == '[' && n > 1 ? n - 2 : n),
		 t->host + (t->host[0] == '['));
	if (t->kind == SL_HOST_IPV4 && inet_pton(AF_INET, h, a) == 1)
		return sl_gw_addr_special(AF_INET, a);
	if (inet_pton(AF_INET6, h, a) == 1)
		return sl_gw_addr_special(AF_INET6, a);
	return "unparsed address";
}

/* One target's rule body. */
static int target_rule(const struct sl_learn_target *t, struct sl_learn_rule *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", t->host);
	r->address = t->kind != SL_HOST_NAME;
	r->special = special_range(t);
	r->private_addr = r->special != NULL;
	r->ports = malloc(sizeof(*r->ports));
	if (!r->ports)
		return -ENOMEM;
	r->ports[0] = t->port;
	r->n_ports = 1;
	r->http = t->http;
	r->methods = t->http ? t->methods : 0;
	r->hits = t->hits;
	r->observed = t->observed;
	r->allowed = t->allowed;
	if (!t->http || t->paths_capped)
		return 0;
	return sl_learn_collapse_paths(t->paths, t->n_paths, &r->paths, &r->n_paths);
}

/* r takes o's port (same host, same body). */
static int join_port(struct sl_learn_rule *r, struct sl_learn_rule *o)
{
	uint16_t *p = realloc(r->ports, (r->n_ports + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	r->ports = p;
	p[r->n_ports++] = o->ports[0];
	r->hits += o->hits;
	r->observed += o->observed;
	r->allowed += o->allowed;
	rule_clear(o);
	return 0;
}

static const char *parent_of(const struct sl_learn_rule *r)
{
	const char *dot = strchr(r->host, '.');

	/* An address's "parent" is no zone: 10.1.2.3 and 77.1.2.3 are not
	 * under *.1.2.3 (a rule the loader refuses; the fuzzer found it). */
	return r->wildcard || r->private_addr || r->address || !dot ? NULL : dot + 1;
}

/* Rules [i..] with r's parent, body and ports: at least
 * SL_LEARN_WILDCARD_MIN make one wildcard rule in r's place. */
static int maybe_wildcard(struct sl_learn_rule *v, size_t n, size_t i)
{
	const char *parent = parent_of(&v[i]);
	size_t j, k = 0, count = 0;
	char **names;

	char norm[SL_HOST_BUF];
	enum sl_host_kind kind;

	if (!parent || !sl_learn_suffix_safe(parent))
		return 0;
	/* Only a suffix the loader takes for a wildcard: a name ("a.1.2.3"
	 * and "b.1.2.3" share "1.2.3", which reads as an address). */
	if (sl_host_normalize(parent, strlen(parent), norm, &kind, NULL) < 0 || kind != SL_HOST_NAME)
		return 0;
	for (j = i; j < n; j++)
		if (v[j].n_ports && parent_of(&v[j]) && !strcmp(parent_of(&v[j]), parent) &&
		    same_body(&v[i], &v[j]) && same_ports(&v[i], &v[j]))
			count++;
	if (count < SL_LEARN_WILDCARD_MIN)
		return 0;
	names = calloc(count, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (j = i; j < n; j++) {
		if (!v[j].n_ports || !parent_of(&v[j]) || strcmp(parent_of(&v[j]), parent) ||
		    !same_body(&v[i], &v[j]) || !same_ports(&v[i], &v[j]))
			continue;
		names[k] = strdup(v[j].host);
		if (!names[k]) {
			while (k--)
				free(names[k]);
			free(names);
			return -ENOMEM;
		}
		k++;
		if (j == i)
			continue;
		v[i].hits += v[j].hits;
		v[i].observed += v[j].observed;
		v[i].allowed += v[j].allowed;
		rule_clear(&v[j]);
	}
	memmove(v[i].host, parent, strlen(parent) + 1);
	v[i].wildcard = true;
	v[i].names = names;
	v[i].n_names = k;
	return 0;
}

static int cmp_rule(const void *a, const void *b)
{
	const struct sl_learn_rule *x = a, *y = b;
	int c = strcmp(x->host, y->host);

	if (c)
		return c;
	if (x->wildcard != y->wildcard)
		return x->wildcard ? 1 : -1;
	return (int)x->ports[0] - (int)y->ports[0];
}

/* Rules cleared by a join (no ports) leave the array. */
static size_t compact(struct sl_learn_rule *v, size_t n)
{
	size_t i, out = 0;

	for (i = 0; i < n; i++)
		if (v[i].n_ports)
			v[out++] = v[i];
	return out;
}

int sl_learn_rules(const struct sl_learn *l, struct sl_learn_rule **ret, size_t *ret_n)
{
	const struct sl_learn_target **t = calloc(l->n_targets + 1, sizeof(*t));
	struct sl_learn_rule *v = calloc(l->n_targets + 1, sizeof(*v));
	size_t i, j, n = l->n_targets;
	int r = 0;

	if (!t || !v) {
		free(t);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		t[i] = &l->targets[i];
	qsort(t, n, sizeof(*t), cmp_target);
	for (i = 0; i < n && r >= 0; i++)
		r = target_rule(t[i], &v[i]);
	free(t);
	/* A host's ports with the same body: one rule (the ports sorted,
	 * as the targets were). */
	for (i = 0; i < n && r >= 0; i++)
		for (j = i + 1; j < n && r >= 0 && v[i].n_ports && !strcmp(v[i].host, v[j].host); j++)
			if (v[j].n_ports && same_body(&v[i], &v[j]))
				r = join_port(&v[i], &v[j]);
	n = compact(v, n);
	for (i = 0; i < n && r >= 0; i++)
		if (v[i].n_ports)
			r = maybe_wildcard(v, n, i);
	n = compact(v, n);
	if (r < 0) {
		sl_learn_rules_free(v, n);
		return r;
	}
	qsort(v, n, sizeof(*v), cmp_rule);
	*ret = v;
	*ret_n = n;
	return 0;
}
