/* SPDX-License-Identifier: MIT */
/*
 * The YAML policy loader: the schema of version 1.
 *
 * Two passes over the bytes (the generic half is yaml-util.c). The first streams libyaml's events to refuse
 * what a policy never needs and an attacker or a typo could use: aliases
 * (a few bytes that expand to millions of nodes), several documents, deep
 * nesting, and syntax errors, each with its line and column. The second
 * loads the document and walks it against the schema of version 1, reporting
 * every problem it finds as "file:line:col: message" rather than stopping at
 * the first, so that one run of `sluice check` shows them all.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <yaml.h>

#include "approve-policy.h"
#include "dns-policy.h"
#include "macro.h"
#include "policy-internal.h"
#include "policy.h"
#include "yaml-util.h"

#define NAME_MAX_LEN 64
#define PREFIX_MAX_LEN 256

struct loader {
	struct sl_yaml y;
	struct sl_policy *p;
	/* Rules of each kind in file order, joined at the end. */
	struct sl_rule *allow, *deny;
	size_t n_allow, n_deny;
	size_t cap_allow, cap_deny;
	size_t cap_secrets;
	/* Secret indices sorted by name, for duplicate detection and lookup
	 * in O(n log n) however many secrets a file defines. */
	size_t *secret_order;
};

/*
 * A host written as a URL ("https://api.example.com/v1") or with its port
 * ("api.example.com:443"): the parser would take the colon for IPv6 and
 * say so, which helps nobody. Say what is wanted instead, and how to write
 * it. true (and the message in buf) when s looks so.
 */
static bool url_hint(const char *s, size_t len, char *buf, size_t size)
{
	const char *scheme_end = len > 3 ? memmem(s, len, "://", 3) : NULL;
	const char *host = s, *end = s + len, *hend, *colon = NULL, *slash;
	unsigned long port = 0;
	bool path;
	size_t n;

	if (scheme_end) {
		size_t sl = (size_t)(scheme_end - s);

		if (sl == 5 && !strncasecmp(s, "https", 5))
			port = 443;
		else if (sl == 4 && !strncasecmp(s, "http", 4))
			port = 80;
		host = scheme_end + 3;
	}
	for (hend = host; hend < end && *hend != '/' && *hend != '?' && *hend != '#'; hend++)
		if (*hend == ':')
			colon = colon ? end : hend; /* two colons: IPv6, no port */
	if (colon == end)
		colon = NULL;
	slash = hend < end ? memchr(hend, '/', (size_t)(end - hend)) : NULL;
	path = slash && end - slash > 1; /* more than a trailing '/' */
	/* "name:443": a port only when digits, and only they, follow the one
	 * colon (an IPv6 address has more than one). */
	if (colon && (colon + 1 == hend || strspn(colon + 1, "0123456789") < (size_t)(hend - colon - 1)))
		colon = NULL;
	if (!scheme_end && !colon && hend == end)
		return false;
	if (colon) {
		port = strtoul(colon + 1, NULL, 10);
		hend = colon;
	}
	n = (size_t)snprintf(buf, size, "a host is wanted, not a %s: write 'host: %.*s'",
			     scheme_end ? "URL" : colon ? "host and port" : "path",
			     (int)(hend - host), host);
	if (n < size && port > 0 && port < 65536)
		n += (size_t)snprintf(buf + n, size - n, " with 'ports: [%lu]'", port);
	if (n < size && path)
		snprintf(buf + n, size - n, " and the path under 'paths:'");
	return true;
}

static bool valid_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

static bool valid_env_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 128 || isdigit((unsigned char)s[0]))
		return false;
	for (i = 0; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* RFC 9110 5.6.2 token characters. */
static bool valid_token(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || strchr("!#$%&'*+-.^_`|~", s[i])))
			return false;
	return true;
}

static int cmp_secret(const void *a, const void *b, void *arg)
{
	const struct sl_secret *secrets = arg;
	const struct sl_secret *x = &secrets[*(const size_t *)a], *y = &secrets[*(const size_t *)b];
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sort the secrets' names once; a name defined twice is reported at its
 * second definition. */
static void index_secrets(struct loader *l)
{
	const struct sl_policy *p = l->p;
	size_t i;

	if (p->n_secrets == 0 || l->y.oom)
		return;
	l->secret_order = calloc(p->n_secrets, sizeof(size_t));
	if (!l->secret_order) {
		l->y.oom = true;
		return;
	}
	for (i = 0; i < p->n_secrets; i++)
		l->secret_order[i] = i;
	qsort_r(l->secret_order, p->n_secrets, sizeof(size_t), cmp_secret, p->secrets);
	for (i = 1; i < p->n_secrets; i++) {
		const struct sl_secret *prev = &p->secrets[l->secret_order[i - 1]];
		const struct sl_secret *cur = &p->secrets[l->secret_order[i]];

		if (!strcmp(prev->name, cur->name))
			sl_yaml_error_at_mark(&l->y, cur->line - 1, cur->col - 1,
					      "secret '%s' is defined twice (first on line %u)",
					      cur->name, prev->line);
	}
}

/* The index of the secret called name, or n_secrets. */
static size_t find_secret(const struct loader *l, const char *name)
{
	size_t lo = 0, hi = l->secret_order ? l->p->n_secrets : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, i = l->secret_order[mid];
		int c = strcmp(l->p->secrets[i].name, name);

		if (c == 0)
			return i;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return l->p->n_secrets;
}

/* ---- secrets ---- */

static void load_secrets(struct loader *l, const yaml_node_t *map)
{
	static const char *const keys[] = { "file", "env", "credential", NULL };
	yaml_node_pair_t *pair;

	if (sl_yaml_is_null(map))
		return;
	if (!sl_yaml_expect_type(&l->y, map, YAML_MAPPING_NODE, "'secrets'"))
		return;

	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = sl_yaml_node_get(&l->y, pair->key), *value = sl_yaml_node_get(&l->y, pair->value);
		yaml_node_t *v[3];
		struct sl_secret *s;
		const char *name, *ref;
		size_t len, ref_len, i, which = 0, n_set = 0;
		char b[80];

		if (!key || !value)
			continue;
		name = sl_yaml_scalar(&l->y, key, "a secret's name", &len);
		if (!name)
			continue;
		if (!valid_name(name, len)) {
			sl_yaml_error_at(&l->y, key, "secret name '%s' must be 1 to %d letters, digits, '_', '-' "
					 "or '.'", sl_yaml_shown(key, b, sizeof(b)), NAME_MAX_LEN);
			continue;
		}
		if (!sl_yaml_expect_type(&l->y, value, YAML_MAPPING_NODE, "a secret"))
			continue;
		if (!sl_yaml_mapping_keys(&l->y, value, "a secret", keys, v))
			continue;
		for (i = 0; i < 3; i++)
			if (v[i]) {
				which = i;
				n_set++;
			}
		if (n_set != 1) {
			sl_yaml_error_at(&l->y, value, "secret '%s' needs exactly one of 'file', 'env' or "
					   "'credential'", name);
			continue;
		}
		ref = sl_yaml_scalar(&l->y, v[which], keys[which], &ref_len);
		if (!ref)
			continue;
		if (which == SL_SECRET_FILE && ref[0] != '/') {
			sl_yaml_error_at(&l->y, v[which], "secret file '%s' must be an absolute path",
					 sl_yaml_shown(v[which], b, sizeof(b)));
			continue;
		}
		if (which == SL_SECRET_ENV && !valid_env_name(ref, ref_len)) {
			sl_yaml_error_at(&l->y, v[which], "'%s' is not a valid environment variable name",
					 sl_yaml_shown(v[which], b, sizeof(b)));
			continue;
		}
		/* systemd credential names may not contain '/': they are file
		 * names inside $CREDENTIALS_DIRECTORY. */
		if (which == SL_SECRET_CREDENTIAL && (!valid_name(ref, ref_len) || !strcmp(ref, ".") ||
						      !strcmp(ref, ".."))) {
			sl_yaml_error_at(&l->y, v[which], "'%s' is not a valid credential name",
					 sl_yaml_shown(v[which], b, sizeof(b)));
			continue;
		}

		if (l->p->n_secrets == l->cap_secrets) {
			size_t want = l->cap_secrets ? l->cap_secrets * 2 : 8;

			s = reallocarray(l->p->secrets, want, sizeof(*s));
			if (!s) {
				l->y.oom = true;
				return;
			}
			l->p->secrets = s;
			l->cap_secrets = want;
		}
		s = &l->p->secrets[l->p->n_secrets];
		memset(s, 0, sizeof(*s));
		s->name = sl_yaml_xstrndup(&l->y, name, len);
		s->ref = sl_yaml_xstrndup(&l->y, ref, ref_len);
		s->source = (enum sl_secret_source)which;
		s->line = (unsigned)key->start_mark.line + 1;
		s->col = (unsigned)key->start_mark.column + 1;
		l->p->n_secrets++;
	}
	index_secrets(l);
}

/* ---- rules ---- */

static int cmp_port(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static bool load_ports(struct loader *l, struct sl_rule *r, const yaml_node_t *seq)
{
	yaml_node_item_t *it;
	size_t n = 0, i, k;

	if (!sl_yaml_expect_type(&l->y, seq, YAML_SEQUENCE_NODE, "'ports'"))
		return false;
	if (seq->data.sequence.items.start == seq->data.sequence.items.top) {
		sl_yaml_error_at(&l->y, seq, "'ports' is empty; remove it to use the default [80, 443]");
		return false;
	}
	r->ports = calloc((size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start),
			  sizeof(uint16_t));
	if (!r->ports) {
		l->y.oom = true;
		return false;
	}
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *v = sl_yaml_node_get(&l->y, *it);
		long port;

		if (!v)
			continue;
		port = sl_yaml_integer(&l->y, v, "a port", 1, 65535);
		if (port < 0)
			return false;
		r->ports[n++] = (uint16_t)port;
	}
	/* Sorted and without repeats, in O(n log n) for any list length. */
	qsort(r->ports, n, sizeof(uint16_t), cmp_port);
	for (i = 0, k = 0; i < n; i++)
		if (k == 0 || r->ports[k - 1] != r->ports[i])
			r->ports[k++] = r->ports[i];
	r->n_ports = k;
	return true;
}

static bool load_methods(struct loader *l, struct sl_rule *r, const yaml_node_t *seq)
{
	yaml_node_item_t *it;
	bool ok = true;

	if (!sl_yaml_expect_type(&l->y, seq, YAML_SEQUENCE_NODE, "'methods'"))
		return false;
	if (seq->data.sequence.items.start == seq->data.sequence.items.top) {
		sl_yaml_error_at(&l->y, seq, "'methods' is empty and would match nothing; remove it to allow "
				 "every method");
		return false;
	}
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *v = sl_yaml_node_get(&l->y, *it);
		const char *m;
		uint32_t bit;
		size_t len, i;

		if (!v)
			continue;
		m = sl_yaml_scalar(&l->y, v, "a method", &len);
		if (!m) {
			ok = false;
			continue;
		}
		bit = sl_method_from_string(m, len);
		if (!bit) {
			char upper[16], b[64];

			for (i = 0; i < len && i + 1 < sizeof(upper); i++)
				upper[i] = (char)toupper((unsigned char)m[i]);
			upper[i] = '\0';
			if (len < sizeof(upper) && sl_method_from_string(upper, len))
				sl_yaml_error_at(&l->y, v, "method '%s' must be written in upper case: '%s'", m,
					 upper);
			else
				sl_yaml_error_at(&l->y, v, "'%s' is not an HTTP method (expected GET, HEAD, POST, "
					       "PUT, DELETE, CONNECT, OPTIONS, TRACE or PATCH)",
					 sl_yaml_shown(v, b, sizeof(b)));
			ok = false;
			continue;
		}
		r->methods |= bit;
	}
	return ok;
}

static bool load_paths(struct loader *l, struct sl_rule *r, const yaml_node_t *seq)
{
	yaml_node_item_t *it;
	size_t max;

	if (!sl_yaml_expect_type(&l->y, seq, YAML_SEQUENCE_NODE, "'paths'"))
		return false;
	max = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (max == 0) {
		sl_yaml_error_at(&l->y, seq, "'paths' is empty and would match nothing; remove it to allow "
				 "every path");
		return false;
	}
	r->paths = calloc(max, sizeof(*r->paths));
	if (!r->paths) {
		l->y.oom = true;
		return false;
	}
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *v = sl_yaml_node_get(&l->y, *it);
		char buf[SL_PATH_BUF];
		const char *s, *why = NULL;
		size_t len;
		bool prefix;

		if (!v)
			continue;
		s = sl_yaml_scalar(&l->y, v, "a path", &len);
		if (!s)
			return false;
		if (sl_path_pattern_parse(s, len, buf, sizeof(buf), &prefix, &why) < 0) {
			char b[80];
			sl_yaml_error_at(&l->y, v, "invalid path '%s': %s", sl_yaml_shown(v, b, sizeof(b)), why);
			return false;
		}
		r->paths[r->n_paths].path = sl_yaml_xstrndup(&l->y, buf, strlen(buf));
		r->paths[r->n_paths].prefix = prefix;
		r->n_paths++;
	}
	return true;
}

/* Headers that frame or route the message: a policy that set them would let
 * a credential rewrite the request's meaning. */
static bool header_reserved(const char *h)
{
	static const char *const reserved[] = {
		"host", "content-length", "transfer-encoding", "connection", "upgrade",
		"te",   "trailer",        "keep-alive",        "expect",
	};
	size_t i;

	for (i = 0; i < ELEMENTSOF(reserved); i++)
		if (!strcasecmp(h, reserved[i]))
			return true;
	return strncasecmp(h, "proxy-", 6) == 0;
}

/* Variables sluice sets in the sandbox itself, or whose value changes what
 * runs: a placeholder must not be able to replace them. */
static bool env_reserved(const char *e)
{
	static const char *const reserved[] = {
		"PATH",          "HOME",          "USER",         "SHELL",         "HTTP_PROXY",
		"HTTPS_PROXY",   "ALL_PROXY",     "NO_PROXY",     "http_proxy",    "https_proxy",
		"all_proxy",     "no_proxy",      "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
		"CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "AWS_CA_BUNDLE",
		"DENO_CERT",     "NODE_OPTIONS",  "PYTHONPATH",   "PYTHONSTARTUP", "BASH_ENV",
		"ENV",           "IFS",
	};
	size_t i;

	for (i = 0; i < ELEMENTSOF(reserved); i++)
		if (!strcmp(e, reserved[i]))
			return true;
	return strncmp(e, "LD_", 3) == 0;
}

static bool load_inject(struct loader *l, struct sl_rule *r, const yaml_node_t *map)
{
	static const char *const keys[] = { "header", "prefix", "secret", "placeholder_env",
					    "require_placeholder", NULL };
	enum { K_HEADER, K_PREFIX, K_SECRET, K_PLACEHOLDER, K_REQUIRE };
	yaml_node_t *v[5];
	const char *s;
	size_t len, i;
	char b[80];

	if (!sl_yaml_expect_type(&l->y, map, YAML_MAPPING_NODE, "'inject'"))
		return false;
	if (!sl_yaml_mapping_keys(&l->y, map, "'inject'", keys, v))
		return false;
	if (!v[K_HEADER] || !v[K_SECRET]) {
		sl_yaml_error_at(&l->y, map, "'inject' needs 'header' and 'secret'");
		return false;
	}

	s = sl_yaml_scalar(&l->y, v[K_HEADER], "'header'", &len);
	if (!s)
		return false;
	if (!valid_token(s, len)) {
		sl_yaml_error_at(&l->y, v[K_HEADER], "'%s' is not a valid header name", sl_yaml_shown(v[K_HEADER], b,
										     sizeof(b)));
		return false;
	}
	if (header_reserved(s)) {
		sl_yaml_error_at(&l->y, v[K_HEADER], "header '%s' frames or routes the request and cannot carry "
					 "a credential", s);
		return false;
	}
	r->inject.header = sl_yaml_xstrndup(&l->y, s, len);

	if (v[K_PREFIX]) {
		const yaml_node_t *pn = v[K_PREFIX];

		if (!sl_yaml_expect_type(&l->y, pn, YAML_SCALAR_NODE, "'prefix'"))
			return false;
		len = pn->data.scalar.length;
		if (len > PREFIX_MAX_LEN) {
			sl_yaml_error_at(&l->y, pn, "'prefix' is longer than %d bytes", PREFIX_MAX_LEN);
			return false;
		}
		/* A header value: visible ASCII, spaces and tabs only; CR or LF
		 * here would let the policy split the request. */
		for (i = 0; i < len; i++) {
			unsigned char c = pn->data.scalar.value[i];
			if (!((c >= 0x20 && c < 0x7f) || c == '\t')) {
				sl_yaml_error_at(&l->y, pn, "'prefix' may hold only printable ASCII");
				return false;
			}
		}
		r->inject.prefix = sl_yaml_xstrndup(&l->y, (const char *)pn->data.scalar.value, len);
	} else {
		r->inject.prefix = sl_yaml_xstrndup(&l->y, "", 0);
	}

	s = sl_yaml_scalar(&l->y, v[K_SECRET], "'secret'", &len);
	if (!s)
		return false;
	i = find_secret(l, s);
	if (i == l->p->n_secrets) {
		char names[256] = "";

		for (size_t j = 0; j < l->p->n_secrets && strlen(names) < 200; j++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 j ? ", " : "", l->p->secrets[j].name);
		sl_yaml_error_at(&l->y, v[K_SECRET], "unknown secret '%s' (%s%s)",
				 sl_yaml_shown(v[K_SECRET], b, sizeof(b)),
			 l->p->n_secrets ? "defined: " : "no secrets are defined under 'secrets'",
			 names);
		return false;
	}
	r->inject.secret = i;

	if (v[K_PLACEHOLDER]) {
		s = sl_yaml_scalar(&l->y, v[K_PLACEHOLDER], "'placeholder_env'", &len);
		if (!s)
			return false;
		if (!valid_env_name(s, len)) {
			sl_yaml_error_at(&l->y, v[K_PLACEHOLDER], "'%s' is not a valid environment variable name",
				 sl_yaml_shown(v[K_PLACEHOLDER], b, sizeof(b)));
			return false;
		}
		if (env_reserved(s)) {
			sl_yaml_error_at(&l->y, v[K_PLACEHOLDER], "'%s' is reserved and cannot be a placeholder",
				 s);
			return false;
		}
		r->inject.placeholder_env = sl_yaml_xstrndup(&l->y, s, len);
	}
	if (v[K_REQUIRE]) {
		s = sl_yaml_scalar(&l->y, v[K_REQUIRE], "'require_placeholder'", &len);
		if (!s)
			return false;
		if (!((len == 4 && !memcmp(s, "true", 4)) || (len == 5 && !memcmp(s, "false", 5)))) {
			sl_yaml_error_at(&l->y, v[K_REQUIRE], "'require_placeholder' is true or false, not '%s'",
					 sl_yaml_shown(v[K_REQUIRE], b, sizeof(b)));
			return false;
		}
		r->inject.require_placeholder = len == 4;
	}
	r->has_inject = true;
	return true;
}

/* protocol: what the rule's ports carry. "http" (the default): HTTP or
 * TLS, whose Host or SNI the gateway checks; "tcp": anything, relayed
 * opaque once host and port are decided (git over ssh, a database). Only
 * where the rule lists its ports: the web's two ports never go opaque by
 * default. */
static bool load_protocol(struct loader *l, struct sl_rule *r, const yaml_node_t *n,
			  bool has_ports)
{
	const char *s;
	size_t len;
	char b[80];

	s = sl_yaml_scalar(&l->y, n, "'protocol'", &len);
	if (!s)
		return false;
	if (len == 4 && !memcmp(s, "http", 4))
		return true;
	if (len != 3 || memcmp(s, "tcp", 3)) {
		sl_yaml_error_at(&l->y, n, "unknown protocol '%s': expected http (HTTP or TLS, the "
				 "default) or tcp (any bytes, relayed opaque)",
				 sl_yaml_shown(n, b, sizeof(b)));
		return false;
	}
	if (r->inspect) {
		/* Methods, paths and credentials are met inside HTTP; bytes
		 * relayed opaque have none to meet. */
		sl_yaml_error_at(&l->y, n, "'protocol: tcp' relays bytes opaque, so the rule cannot "
				 "name methods, paths or inject a credential");
		return false;
	}
	if (!has_ports) {
		sl_yaml_error_at(&l->y, n, "'protocol: tcp' needs 'ports': list the ports that carry "
				 "another protocol than HTTP or TLS (e.g. ports: [22])");
		return false;
	}
	r->opaque = true;
	return true;
}

static void load_rule(struct loader *l, enum sl_rule_kind kind, unsigned index,
		      const yaml_node_t *map)
{
	static const char *const allow_keys[] = { "host",  "ports", "methods", "paths",
						  "inject", "name", "exact_dns", "protocol",
						  "approve", "approve_timeout", NULL };
	static const char *const deny_keys[] = { "host", "ports", "methods", "paths", "name",
						 "inject", NULL };
	enum { K_HOST, K_PORTS, K_METHODS, K_PATHS, K_INJECT_OR_NAME, K_NAME_OR_INJECT, K_EXACT_DNS,
	       K_PROTOCOL, K_APPROVE, K_APPROVE_TIMEOUT };
	const char *what = kind == SL_RULE_ALLOW ? "an allow rule" : "a deny rule";
	yaml_node_t *v[10] = { 0 }, *host_n, *name_n, *inject_n;
	struct sl_rule r = { 0 }, **arr, *grown;
	size_t *n, *cap, len;
	const char *s, *why = NULL;
	bool ok;

	if (!sl_yaml_expect_type(&l->y, map, YAML_MAPPING_NODE, what))
		return;
	ok = sl_yaml_mapping_keys(&l->y, map, what, kind == SL_RULE_ALLOW ? allow_keys : deny_keys, v);
	host_n = v[K_HOST];
	inject_n = kind == SL_RULE_ALLOW ? v[K_INJECT_OR_NAME] : v[K_NAME_OR_INJECT];
	name_n = kind == SL_RULE_ALLOW ? v[K_NAME_OR_INJECT] : v[K_INJECT_OR_NAME];

	r.kind = kind;
	r.index = index;
	r.line = (unsigned)map->start_mark.line + 1;
	r.col = (unsigned)map->start_mark.column + 1;

	if (!host_n) {
		sl_yaml_error_at(&l->y, map, "%s needs a 'host'", what);
		ok = false;
	} else if ((s = sl_yaml_scalar(&l->y, host_n, "'host'", &len))) {
		char hint[SL_HOST_BUF + 160];

		if (url_hint(s, len, hint, sizeof(hint))) {
			char b[80];
			sl_yaml_error_at(&l->y, host_n, "invalid host '%s': %s",
					 sl_yaml_shown(host_n, b, sizeof(b)), hint);
			ok = false;
		} else if (sl_host_pattern_parse(s, len, r.host, &r.wildcard, &r.host_kind, &why) < 0) {
			char b[80];
			sl_yaml_error_at(&l->y, host_n, "invalid host '%s': %s", sl_yaml_shown(host_n, b, sizeof(b)), why);
			ok = false;
		}
	} else {
		ok = false;
	}

	if (name_n) {
		s = sl_yaml_scalar(&l->y, name_n, "'name'", &len);
		if (s && valid_name(s, len))
			r.name = sl_yaml_xstrndup(&l->y, s, len);
		else {
			if (s)
				sl_yaml_error_at(&l->y, name_n, "a rule name must be 1 to %d letters, digits, '_', "
						    "'-' or '.'", NAME_MAX_LEN);
			ok = false;
		}
	}

	if (v[K_PORTS])
		ok &= load_ports(l, &r, v[K_PORTS]);
	else if (kind == SL_RULE_ALLOW) {
		/* Allow rules default to the web's two ports; deny rules to
		 * every port, so that leaving ports out never narrows a deny. */
		r.ports = malloc(2 * sizeof(uint16_t));
		if (r.ports) {
			r.ports[0] = 80;
			r.ports[1] = 443;
			r.n_ports = 2;
		} else
			l->y.oom = true;
	}
	if (v[K_METHODS])
		ok &= load_methods(l, &r, v[K_METHODS]);
	if (v[K_PATHS])
		ok &= load_paths(l, &r, v[K_PATHS]);
	if (inject_n) {
		if (kind == SL_RULE_DENY) {
			sl_yaml_error_at(&l->y, inject_n, "'inject' belongs on an allow rule; a deny rule sends "
					      "nothing");
			ok = false;
		} else
			ok &= load_inject(l, &r, inject_n);
	}
	r.inspect = r.methods || r.paths || r.has_inject;
	if (v[K_EXACT_DNS])
		ok &= sl_policy_load_exact_dns(&l->y, &r, v[K_EXACT_DNS]);
	if (v[K_PROTOCOL])
		ok &= load_protocol(l, &r, v[K_PROTOCOL], v[K_PORTS] != NULL);
	if (kind == SL_RULE_ALLOW)
		ok &= sl_policy_load_approve(&l->y, &r, v[K_APPROVE], v[K_APPROVE_TIMEOUT]);

	if (ok && r.host_kind != SL_HOST_NAME && r.has_inject) {
		/* TLS to an IP literal has no name to verify the certificate
		 * against in the usual way; keep credentials on names. */
		sl_yaml_error_at(&l->y, host_n, "a credential can only be injected for a host name, not an "
				    "address");
		ok = false;
	}

	if (ok && r.wildcard && r.has_inject) {
		/* *.example.com matches names nobody has reviewed, some of
		 * them perhaps the agent's own (a bucket, a pages site): the
		 * secret would go to whoever holds them. */
		sl_yaml_error_at(&l->y, host_n, "a credential cannot be injected for a wildcard host "
				    "('*.%s' sends it to every name below %s, reviewed or not): write "
				    "a rule with 'inject' for each host that needs it, such as "
				    "'host: api.%s'", r.host, r.host, r.host);
		ok = false;
	}

	/* The rule joins the array even when it has errors: the array is
	 * freed whole, and loading fails anyway once an error was reported. */
	(void)ok;
	arr = kind == SL_RULE_ALLOW ? &l->allow : &l->deny;
	n = kind == SL_RULE_ALLOW ? &l->n_allow : &l->n_deny;
	cap = kind == SL_RULE_ALLOW ? &l->cap_allow : &l->cap_deny;
	if (*n == *cap) {
		/* Grow geometrically: a policy of 10,000 rules must not cost
		 * 10,000 copies of a growing array. */
		size_t want = *cap ? *cap * 2 : 16;

		grown = reallocarray(*arr, want, sizeof(r));
		if (!grown) {
			l->y.oom = true;
			sl_rule_clear(&r);
			return;
		}
		*arr = grown;
		*cap = want;
	}
	(*arr)[(*n)++] = r;
}

static void load_rules(struct loader *l, enum sl_rule_kind kind, const yaml_node_t *seq)
{
	const char *what = kind == SL_RULE_ALLOW ? "'allow'" : "'deny'";
	yaml_node_item_t *it;
	unsigned index = 0;

	if (sl_yaml_is_null(seq))
		return;
	if (!sl_yaml_expect_type(&l->y, seq, YAML_SEQUENCE_NODE, what))
		return;
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *v = sl_yaml_node_get(&l->y, *it);

		if (v)
			load_rule(l, kind, ++index, v);
	}
}

/* ---- private_addresses ---- */

static bool parse_cidr(const char *s, size_t len, struct sl_cidr *ret, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	struct sl_cidr c = { 0 };
	unsigned max, i, bits = 0;

	if (len >= sizeof(buf)) {
		*why = "not an address or CIDR range";
		return false;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	slash = strchr(buf, '/');
	if (slash)
		buf[slash - buf] = '\0';
	if (inet_pton(AF_INET, buf, c.addr) == 1) {
		c.family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, c.addr) == 1) {
		c.family = AF_INET6;
		max = 128;
	} else {
		*why = "not an address or CIDR range";
		return false;
	}
	c.prefix = max;
	if (slash) {
		const char *p = slash + 1;

		if (!*p || strlen(p) > 3) {
			*why = "bad prefix length";
			return false;
		}
		for (; *p; p++) {
			if (*p < '0' || *p > '9') {
				*why = "bad prefix length";
				return false;
			}
			bits = bits * 10 + (unsigned)(*p - '0');
		}
		if (bits > max) {
			*why = "prefix length is too long for the address family";
			return false;
		}
		c.prefix = bits;
	}
	/* "10.0.0.1/8" is almost certainly a typo for one address or for
	 * 10.0.0.0/8; refuse to guess which. */
	for (i = c.prefix; i < max; i++)
		if (c.addr[i / 8] & (0x80 >> (i % 8))) {
			*why = "address has bits set beyond the prefix length";
			return false;
		}
	*ret = c;
	return true;
}

static void load_private(struct loader *l, const yaml_node_t *n)
{
	yaml_node_item_t *it;

	if (n->type == YAML_SCALAR_NODE) {
		if (!strcmp((const char *)n->data.scalar.value, "deny"))
			return;
		sl_yaml_error_at(&l->y, n, "'private_addresses' must be 'deny' or a list of CIDR ranges");
		return;
	}
	if (!sl_yaml_expect_type(&l->y, n, YAML_SEQUENCE_NODE, "'private_addresses'"))
		return;
	l->p->private_allow = calloc((size_t)(n->data.sequence.items.top -
					      n->data.sequence.items.start) + 1,
				     sizeof(struct sl_cidr));
	if (!l->p->private_allow) {
		l->y.oom = true;
		return;
	}
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *v = sl_yaml_node_get(&l->y, *it);
		const char *s, *why = NULL;
		size_t len;

		if (!v)
			continue;
		s = sl_yaml_scalar(&l->y, v, "a CIDR range", &len);
		if (!s)
			continue;
		if (!parse_cidr(s, len, &l->p->private_allow[l->p->n_private_allow], &why)) {
			char b[80];
			sl_yaml_error_at(&l->y, v, "invalid range '%s': %s", sl_yaml_shown(v, b, sizeof(b)), why);
			continue;
		}
		l->p->n_private_allow++;
	}
}

/* ---- mode ---- */

/* `mode: enforce` (the default) or `mode: observe` (docs/observe.md). A
 * misspelt mode is an error, never enforce nor observe by guess. */
static void load_mode(struct loader *l, const yaml_node_t *n)
{
	const char *s;
	char b[40];

	s = sl_yaml_scalar(&l->y, n, "'mode'", NULL);
	if (!s)
		return;
	if (!strcmp(s, "enforce"))
		l->p->mode = SL_MODE_ENFORCE;
	else if (!strcmp(s, "observe"))
		l->p->mode = SL_MODE_OBSERVE;
	else
		sl_yaml_error_at(&l->y, n, "'mode' must be 'enforce' or 'observe', not '%s'",
				 sl_yaml_shown(n, b, sizeof(b)));
}

/* ---- passes ---- */

static void load_document(struct loader *l, const char *buf, size_t len)
{
	static const char *const keys[] = { "version", "secrets", "allow", "deny",
					    "private_addresses", "dns", "mode", NULL };
	enum { K_VERSION, K_SECRETS, K_ALLOW, K_DENY, K_PRIVATE, K_DNS, K_MODE };
	yaml_parser_t parser;
	yaml_node_t *root, *v[7];

	if (!yaml_parser_initialize(&parser)) {
		l->y.oom = true;
		return;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &l->y.doc)) {
		sl_yaml_parser_error(&l->y, &parser);
		yaml_parser_delete(&parser);
		memset(&l->y.doc, 0, sizeof(l->y.doc));
		return;
	}
	yaml_parser_delete(&parser);

	root = yaml_document_get_root_node(&l->y.doc);
	if (!root || sl_yaml_is_null(root)) {
		sl_yaml_error_at_mark(&l->y, 0, 0, "the policy is empty; it needs at least 'version: 1'");
		return;
	}
	if (!sl_yaml_expect_type(&l->y, root, YAML_MAPPING_NODE, "a policy"))
		return;
	sl_yaml_mapping_keys(&l->y, root, "the policy", keys, v);

	if (!v[K_VERSION])
		sl_yaml_error_at(&l->y, root, "the policy has no 'version'; add 'version: 1'");
	else if (v[K_VERSION]->type == YAML_SCALAR_NODE &&
		 v[K_VERSION]->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		 strcmp((const char *)v[K_VERSION]->data.scalar.value, "1") != 0)
	{
		char b[40];

		sl_yaml_error_at(&l->y, v[K_VERSION], "unsupported policy version '%s' (this sluice reads "
					  "version 1)", sl_yaml_shown(v[K_VERSION], b, sizeof(b)));
	}
	else
		(void)sl_yaml_integer(&l->y, v[K_VERSION], "'version'", 1, 1);

	/* Secrets first: rules refer to them wherever they stand in the file. */
	if (v[K_SECRETS])
		load_secrets(l, v[K_SECRETS]);
	if (v[K_ALLOW])
		load_rules(l, SL_RULE_ALLOW, v[K_ALLOW]);
	if (v[K_DENY])
		load_rules(l, SL_RULE_DENY, v[K_DENY]);
	if (v[K_PRIVATE])
		load_private(l, v[K_PRIVATE]);
	if (v[K_DNS])
		sl_policy_load_dns(&l->y, l->p, v[K_DNS]);
	if (v[K_MODE])
		load_mode(l, v[K_MODE]);
}

static void free_rules(struct sl_rule *rules, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sl_rule_clear(&rules[i]);
	free(rules);
}

int sl_policy_load_buffer(const char *name, const char *buf, size_t len, struct sl_policy **ret,
			  struct sl_diags *diags)
{
	struct loader l = { .y = { .file = name ? name : "(policy)", .diags = diags } };
	struct sl_policy *p;
	int r;

	if (len > SL_POLICY_MAX_BYTES) {
		sl_yaml_error_at_mark(&l.y, 0, 0, "the policy is larger than %u bytes", SL_POLICY_MAX_BYTES);
		return -EFBIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	l.p = p;
	p->source = strdup(l.y.file);
	if (!p->source)
		l.y.oom = true;

	if (sl_yaml_scan_events(&l.y, buf, len))
		load_document(&l, buf, len);
	yaml_document_delete(&l.y.doc);
	free(l.secret_order);

	/* Join allow and deny rules into one array: allow first. */
	if (l.n_allow + l.n_deny > 0) {
		p->rules = calloc(l.n_allow + l.n_deny, sizeof(*p->rules));
		if (p->rules) {
			if (l.n_allow)
				memcpy(p->rules, l.allow, l.n_allow * sizeof(*p->rules));
			if (l.n_deny)
				memcpy(p->rules + l.n_allow, l.deny, l.n_deny * sizeof(*p->rules));
			p->n_rules = l.n_allow + l.n_deny;
			p->n_allow = l.n_allow;
			free(l.allow);
			free(l.deny);
		} else {
			l.y.oom = true;
			free_rules(l.allow, l.n_allow);
			free_rules(l.deny, l.n_deny);
		}
	}

	if (!l.y.oom && l.y.n_errors == 0) {
		r = sl_policy_index_build(p);
		if (r < 0)
			l.y.oom = true;
	}
	if (l.y.oom) {
		sl_policy_free(p);
		return -ENOMEM;
	}
	if (l.y.n_errors > 0) {
		sl_policy_free(p);
		return -EINVAL;
	}
	*ret = p;
	return 0;
}

int sl_policy_load_file(const char *path, struct sl_policy **ret, struct sl_diags *diags)
{
	struct sl_yaml l = { .file = path, .diags = diags };
	_cleanup_close_ int fd = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int r = negative_errno();
		sl_yaml_error_at_mark(&l, 0, 0, "cannot open: %s", strerror(-r));
		return r;
	}
	return sl_policy_load_fd(fd, path, ret, diags);
}

int sl_policy_read_fd(int fd, const char *name, char **ret_buf, size_t *ret_len,
		      struct sl_diags *diags)
{
	struct sl_yaml l = { .file = name, .diags = diags };
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t have = 0;

	if (fstat(fd, &st) < 0) {
		int r = negative_errno();
		sl_yaml_error_at_mark(&l, 0, 0, "cannot stat: %s", strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		sl_yaml_error_at_mark(&l, 0, 0, "not a regular file");
		return -EINVAL;
	}
	if ((uintmax_t)st.st_size > SL_POLICY_MAX_BYTES) {
		sl_yaml_error_at_mark(&l, 0, 0, "the policy is larger than %u bytes", SL_POLICY_MAX_BYTES);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	/* Read to EOF, but never past the size we sized for: a file that
	 * grows while we read is refused rather than truncated. */
	for (;;) {
		ssize_t n = read(fd, buf + have, (size_t)st.st_size + 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = negative_errno();
			sl_yaml_error_at_mark(&l, 0, 0, "cannot read: %s", strerror(-r));
			return r;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		if (have > (size_t)st.st_size) {
			sl_yaml_error_at_mark(&l, 0, 0, "the file changed while it was read");
			return -EAGAIN;
		}
	}
	buf[have] = '\0';
	*ret_buf = TAKE_PTR(buf);
	*ret_len = have;
	return 0;
}

int sl_policy_load_fd(int fd, const char *name, struct sl_policy **ret, struct sl_diags *diags)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = sl_policy_read_fd(fd, name, &buf, &len, diags);

	if (r < 0)
		return r;
	return sl_policy_load_buffer(name, buf, len, ret, diags);
}
