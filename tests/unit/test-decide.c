/* SPDX-License-Identifier: MIT */
/* Decisions: default deny, deny beats allow, and the host and path
 * spellings that have bypassed other egress filters. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static struct sl_policy *load(const char *yaml)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };

	if (sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d) < 0)
		fail_msg("policy refused: %s", d.n ? d.msgs[0] : "?");
	return p;
}

/* The explanation of the last decision, as a 403 body would carry it. */
static char why[512];

static struct sl_decision decide(const struct sl_policy *p, const char *host, uint16_t port,
				 const char *method, const char *path)
{
	struct sl_request req = {
		.host = host,
		.host_len = strlen(host),
		.port = port,
		.method = method,
		.path = path,
		.path_len = path ? strlen(path) : 0,
	};
	struct sl_decision d;

	sl_policy_decide(p, &req, &d);
	sl_policy_explain(p, &req, &d, why, sizeof(why));
	return d;
}

#define ALLOW(p, host, port, m, path)                                                              \
	do {                                                                                       \
		struct sl_decision _d = decide(p, host, port, m, path);                            \
		if (_d.verdict != SL_VERDICT_ALLOW)                                                \
			fail_msg("%s:%u %s %s denied: %s", host, port, m ? m : "", path ? path : "", \
				 why);                                                          \
	} while (0)

#define DENY(p, host, port, m, path, want)                                                       \
	do {                                                                                       \
		struct sl_decision _d = decide(p, host, port, m, path);                            \
		if (_d.verdict != SL_VERDICT_DENY)                                                 \
			fail_msg("%s:%u %s %s allowed: %s", host, port, m ? m : "", path ? path : "", \
				 why);                                                          \
		if (_d.reason != (want))                                                         \
			fail_msg("%s:%u: reason %s, want %s (%s)", host, port,                    \
				 sl_reason_to_string(_d.reason), sl_reason_to_string(want), why); \
	} while (0)

static void test_default_deny(void **state)
{
	struct sl_policy *p = NULL;

	assert_int_equal(sl_policy_new_deny_all(&p), 0);
	DENY(p, "example.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "127.0.0.1", 80, "GET", "/", SL_REASON_NO_RULE);
	sl_policy_free(p);

	p = load("version: 1\nallow:\n  - host: a.com\n");
	DENY(p, "b.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	struct sl_decision d = decide(p, "B.com", 443, NULL, NULL);
	assert_null(d.rule);
	assert_string_equal(why, "b.com is not allowed by the policy (no rule names it)");
	sl_policy_free(p);
}

static void test_exact_names(void **state)
{
	struct sl_policy *p = load("version: 1\nallow:\n  - host: x.com\n");

	ALLOW(p, "x.com", 443, NULL, NULL);
	ALLOW(p, "X.COM", 443, NULL, NULL);
	ALLOW(p, "x.com.", 80, NULL, NULL);
	DENY(p, "x.com..", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "a.x.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "evilx.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "x.com.evil.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "x.co", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "[x.com]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "x.com:443", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "x.com\\", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "x.com/", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "x.com%00", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	{
		struct sl_request req = { .host = "x.com\0.evil", .host_len = 11, .port = 443 };
		struct sl_decision d;

		sl_policy_decide(p, &req, &d);
		assert_int_equal(d.verdict, SL_VERDICT_DENY);
		assert_int_equal(d.reason, SL_REASON_INVALID_HOST);
	}
	sl_policy_free(p);
}

static void test_wildcards(void **state)
{
	struct sl_policy *p = load("version: 1\nallow:\n  - host: \"*.x.com\"\n");

	ALLOW(p, "a.x.com", 443, NULL, NULL);
	ALLOW(p, "A.B.X.COM.", 443, NULL, NULL);
	/* The apex is not below itself: a documented choice. */
	DENY(p, "x.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "evilx.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "a.evilx.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "x.com.evil.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "a.x.com.evil.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, ".x.com", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	sl_policy_free(p);
}

static void test_deny_beats_allow(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: \"*.githubusercontent.com\"\n"
				   "  - host: gist.githubusercontent.com\n"
				   "deny:\n"
				   "  - host: gist.githubusercontent.com\n"
				   "  - host: \"*.evil.githubusercontent.com\"\n");
	struct sl_decision d;
	char id[32];

	ALLOW(p, "raw.githubusercontent.com", 443, NULL, NULL);
	DENY(p, "gist.githubusercontent.com", 443, NULL, NULL, SL_REASON_DENY_RULE);
	/* The spellings that bypassed deny lists elsewhere. */
	DENY(p, "GIST.githubusercontent.com", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "gist.githubusercontent.com.", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "Gist.GitHubUserContent.Com.", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "[gist.githubusercontent.com]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "gist.githubusercontent.com", 8443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "a.b.evil.githubusercontent.com", 443, NULL, NULL, SL_REASON_DENY_RULE);
	ALLOW(p, "evil.githubusercontent.com", 443, NULL, NULL);

	d = decide(p, "gist.githubusercontent.com", 443, "GET", "/");
	assert_int_equal(d.verdict, SL_VERDICT_DENY);
	assert_int_equal(d.rule->kind, SL_RULE_DENY);
	assert_string_equal(sl_rule_id(d.rule, id, sizeof(id)), "deny[1]");
	assert_string_equal(why, "gist.githubusercontent.com:443 denied by deny[1] (t.yaml:6)");
	sl_policy_free(p);
}

static void test_idn(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: \"*.b\xc3\xbc" "cher.de\"\n"
				   "deny:\n  - host: xn--mnchen-3ya.de\n  - host: m\xc3\xbcnchen.at\n");

	ALLOW(p, "shop.xn--bcher-kva.de", 443, NULL, NULL);
	ALLOW(p, "shop.b\xc3\xbc" "cher.de", 443, NULL, NULL);
	ALLOW(p, "shop.B\xc3\x9c" "CHER.de", 443, NULL, NULL);
	/* Deny rules hold whichever spelling the rule or the client uses. */
	DENY(p, "m\xc3\xbcnchen.de", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "xn--mnchen-3ya.at", 443, NULL, NULL, SL_REASON_DENY_RULE);
	sl_policy_free(p);

	p = load("version: 1\nallow:\n  - host: \"*.de\"\ndeny:\n  - host: m\xc3\xbcnchen.de\n");
	DENY(p, "xn--mnchen-3ya.de", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "M\xc3\x9cNCHEN.DE.", 443, NULL, NULL, SL_REASON_DENY_RULE);
	sl_policy_free(p);
}

static void test_ip_literals(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: \"*.com\"\n"
				   "  - host: 203.0.113.7\n"
				   "  - host: \"2001:db8::7\"\n"
				   "  - host: \"*.internal\"\n"
				   "deny:\n"
				   "  - host: 169.254.169.254\n");

	/* An address never matches a name rule, however broad. */
	DENY(p, "1.2.3.4", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "[2001:db8::1]", 443, NULL, NULL, SL_REASON_NO_RULE);
	/* An address rule matches every spelling of that address. */
	ALLOW(p, "203.0.113.7", 443, NULL, NULL);
	ALLOW(p, "0xcb.0.113.7", 443, NULL, NULL);
	ALLOW(p, "3405803783", 443, NULL, NULL);
	ALLOW(p, "[::ffff:203.0.113.7]", 443, NULL, NULL);
	ALLOW(p, "[2001:DB8:0::7]", 443, NULL, NULL);
	ALLOW(p, "2001:db8::7", 443, NULL, NULL);
	DENY(p, "203.0.113.8", 443, NULL, NULL, SL_REASON_NO_RULE);
	/* The metadata address in any spelling hits its deny rule. */
	DENY(p, "169.254.169.254", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "2852039166", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "0xa9.0xfe.0xa9.0xfe", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "[::ffff:a9fe:a9fe]", 80, NULL, NULL, SL_REASON_DENY_RULE);
	/* A name ending in a number is an address or invalid, never a name. */
	DENY(p, "metadata.internal.0", 80, NULL, NULL, SL_REASON_INVALID_HOST);
	sl_policy_free(p);
}

static void test_ports(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: a.com\n"
				   "  - host: b.com\n    ports: [8443]\n"
				   "  - host: c.com\n    ports: [22, 443]\n"
				   "deny:\n"
				   "  - host: c.com\n    ports: [22]\n");

	ALLOW(p, "a.com", 80, NULL, NULL);
	ALLOW(p, "a.com", 443, NULL, NULL);
	DENY(p, "a.com", 8080, NULL, NULL, SL_REASON_PORT);
	DENY(p, "a.com", 22, NULL, NULL, SL_REASON_PORT);
	ALLOW(p, "b.com", 8443, NULL, NULL);
	DENY(p, "b.com", 443, NULL, NULL, SL_REASON_PORT);
	ALLOW(p, "c.com", 443, NULL, NULL);
	DENY(p, "c.com", 22, NULL, NULL, SL_REASON_DENY_RULE);
	DENY(p, "a.com", 0, NULL, NULL, SL_REASON_INVALID_REQUEST);

	decide(p, "a.com", 8080, NULL, NULL);
	assert_string_equal(why, "a.com is allowed, but not on port 8080");
	sl_policy_free(p);
}

static void test_methods_and_paths(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: api.x.com\n"
				   "    ports: [443]\n"
				   "    methods: [POST]\n"
				   "    paths: [\"/v1/messages\", \"/v1/messages/*\"]\n"
				   "  - host: registry.x.com\n"
				   "    methods: [GET, HEAD]\n"
				   "  - host: plain.x.com\n");
	struct sl_decision d;

	/* On a connection, method and path are not known yet: allowed, to be
	 * inspected. A host whose rules need neither is not inspected. */
	d = decide(p, "api.x.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);
	d = decide(p, "plain.x.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_false(d.inspect);

	ALLOW(p, "api.x.com", 443, "POST", "/v1/messages");
	ALLOW(p, "api.x.com", 443, "POST", "/v1/messages?beta=1");
	ALLOW(p, "api.x.com", 443, "POST", "/v1/messages/count_tokens");
	ALLOW(p, "api.x.com", 443, "POST", "//v1/messages");
	ALLOW(p, "api.x.com", 443, "POST", "/v1/%6Dessages");
	DENY(p, "api.x.com", 443, "GET", "/v1/messages", SL_REASON_METHOD);
	DENY(p, "api.x.com", 443, "post", "/v1/messages", SL_REASON_METHOD);
	DENY(p, "api.x.com", 443, "POST", "/v1/files", SL_REASON_PATH);
	DENY(p, "api.x.com", 443, "POST", "/v1/messagesX", SL_REASON_PATH);
	DENY(p, "api.x.com", 443, "POST", "/V1/messages", SL_REASON_PATH);
	DENY(p, "api.x.com", 443, "POST", "/v1/messages/../files", SL_REASON_INVALID_PATH);
	DENY(p, "api.x.com", 443, "POST", "/v1/messages/%2e%2e/files", SL_REASON_INVALID_PATH);
	DENY(p, "api.x.com", 443, "POST", "/v1/messages%2f..%2ffiles", SL_REASON_INVALID_PATH);
	DENY(p, "api.x.com", 80, "POST", "/v1/messages", SL_REASON_PORT);

	d = decide(p, "api.x.com", 443, "GET", "/v1/messages");
	assert_string_equal(why, "api.x.com:443 is allowed, but not method GET");
	d = decide(p, "api.x.com", 443, "POST", "/v1/files?x=1");
	assert_string_equal(why, "api.x.com:443 is allowed, but not path /v1/files");

	ALLOW(p, "registry.x.com", 443, "GET", "/left-pad");
	ALLOW(p, "registry.x.com", 443, "HEAD", "/left-pad");
	DENY(p, "registry.x.com", 443, "PUT", "/left-pad", SL_REASON_METHOD);
	DENY(p, "registry.x.com", 443, "PROPFIND", "/", SL_REASON_METHOD);
	/* A rule without methods or paths allows any method, known or not,
	 * and does not care how ambiguous the path is. */
	ALLOW(p, "plain.x.com", 443, "PROPFIND", "/");
	ALLOW(p, "plain.x.com", 443, "GET", "/a/../b");
	/* A method needs a path and a path a method. */
	DENY(p, "plain.x.com", 443, "GET", NULL, SL_REASON_INVALID_REQUEST);
	DENY(p, "plain.x.com", 443, NULL, "/", SL_REASON_INVALID_REQUEST);
	sl_policy_free(p);
}

static void test_deny_paths(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: app.x.com\n"
				   "deny:\n"
				   "  - host: app.x.com\n    paths: [\"/admin/*\", \"/admin\"]\n"
				   "  - host: app.x.com\n    methods: [DELETE]\n");
	struct sl_decision d;

	/* A deny rule with paths makes the connection inspected. */
	d = decide(p, "app.x.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);

	ALLOW(p, "app.x.com", 443, "GET", "/home");
	DENY(p, "app.x.com", 443, "GET", "/admin", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/admin/users", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/%61dmin/users", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "//admin//users", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/admin?x", SL_REASON_DENY_RULE);
	/* Ambiguous spellings cannot be judged against a deny rule: refused. */
	DENY(p, "app.x.com", 443, "GET", "/home/../admin", SL_REASON_INVALID_PATH);
	DENY(p, "app.x.com", 443, "GET", "/home/..;/admin", SL_REASON_INVALID_PATH);
	DENY(p, "app.x.com", 443, "GET", "/x%2fadmin", SL_REASON_INVALID_PATH);
	DENY(p, "app.x.com", 443, "DELETE", "/home", SL_REASON_DENY_RULE);
	/* A format suffix, and PATH_INFO behind a PHP front controller. */
	DENY(p, "app.x.com", 443, "GET", "/admin.json", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/index.php/admin", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/app/Index.PHP/admin/users", SL_REASON_DENY_RULE);
	DENY(p, "app.x.com", 443, "GET", "/index.php/x.php/admin;a=b", SL_REASON_DENY_RULE);
	ALLOW(p, "app.x.com", 443, "GET", "/index.php/home");
	ALLOW(p, "app.x.com", 443, "GET", "/.php/admin");
	ALLOW(p, "app.x.com", 443, "GET", "/index.phpx/admin");
	sl_policy_free(p);
}

static void test_first_allow_decides(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "secrets:\n  one: { env: ONE }\n  two: { env: TWO }\n"
				   "allow:\n"
				   "  - host: \"*.x.com\"\n    name: wide\n"
				   "  - host: api.x.com\n    paths: [\"/v1/*\"]\n"
				   "    inject: { header: Authorization, prefix: \"Bearer \", secret: one }\n"
				   "  - host: api.x.com\n"
				   "    inject: { header: Authorization, secret: two }\n");
	struct sl_decision d;
	char id[32];

	d = decide(p, "api.x.com", 443, "GET", "/v1/models");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_string_equal(sl_rule_id(d.rule, id, sizeof(id)), "wide");
	assert_false(d.rule->has_inject);
	assert_true(d.inspect);
	sl_policy_free(p);

	p = load("version: 1\n"
		 "secrets:\n  one: { env: ONE }\n  two: { env: TWO }\n"
		 "allow:\n"
		 "  - host: api.x.com\n    paths: [\"/v1/*\"]\n"
		 "    inject: { header: Authorization, prefix: \"Bearer \", secret: one }\n"
		 "  - host: api.x.com\n"
		 "    inject: { header: Authorization, secret: two }\n");
	d = decide(p, "api.x.com", 443, "GET", "/v1/models");
	assert_int_equal(d.rule->index, 1);
	assert_int_equal(d.rule->inject.secret, 0);
	d = decide(p, "api.x.com", 443, "GET", "/v2/models");
	assert_int_equal(d.rule->index, 2);
	assert_int_equal(d.rule->inject.secret, 1);
	sl_policy_free(p);
}

static void test_many_rules(void **state)
{
	size_t n = 10000, i, cap = n * 64 + 256, len;
	char *yaml = malloc(cap), host[64];
	struct sl_policy *p;

	assert_non_null(yaml);
	len = (size_t)snprintf(yaml, cap, "version: 1\nallow:\n");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(yaml + len, cap - len, "  - host: \"%shost%zu.example\"\n",
					i % 2 ? "*." : "", i);
	p = load(yaml);
	free(yaml);
	assert_int_equal(p->n_rules, n);

	ALLOW(p, "host0.example", 443, NULL, NULL);
	ALLOW(p, "a.b.host9999.example", 443, NULL, NULL);
	DENY(p, "host9999.example", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY(p, "host10000.example", 443, NULL, NULL, SL_REASON_NO_RULE);
	for (i = 0; i < n; i += 97) {
		snprintf(host, sizeof(host), "%shost%zu.example", i % 2 ? "x." : "", i);
		ALLOW(p, host, 80, NULL, NULL);
	}
	sl_policy_free(p);
}

static void test_strings(void **state)
{
	for (int r = 0; r < _SL_REASON_MAX; r++)
		assert_string_not_equal(sl_reason_to_string((enum sl_reason)r), "unknown");
	assert_string_equal(sl_reason_to_string(_SL_REASON_MAX), "unknown");
	assert_int_equal(sl_method_from_string("PATCH", 5), SL_METHOD_PATCH);
	assert_int_equal(sl_method_from_string("GETX", 4), 0);
	assert_int_equal(sl_method_from_string("GET", 2), 0);
	assert_string_equal(sl_method_to_string(SL_METHOD_HEAD), "HEAD");
}

/* The DNS server's question: may this bare name be answered at all? */
#define NAME_ALLOWED(p, host) assert_true(sl_policy_name_allowed(p, host, strlen(host)))
#define NAME_DENIED(p, host) assert_false(sl_policy_name_allowed(p, host, strlen(host)))

static void test_name_allowed(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: api.example.com\n"
				   "  - host: \"*.cdn.example\"\n"
				   "  - host: inspected.example\n"
				   "    methods: [GET]\n"
				   "  - host: 203.0.113.7\n"
				   "  - host: gist.cdn.example\n"
				   "deny:\n"
				   "  - host: gist.cdn.example\n"
				   "  - host: \"*.bad.cdn.example\"\n"
				   "  - host: api.example.com\n"
				   "    methods: [DELETE]\n");

	(void)state;
	NAME_ALLOWED(p, "api.example.com");
	NAME_ALLOWED(p, "API.Example.COM.");
	NAME_ALLOWED(p, "raw.cdn.example");
	NAME_ALLOWED(p, "a.b.cdn.example");
	/* A rule that needs inspection still needs its name resolved, and a
	 * deny rule for some methods leaves the name usable. */
	NAME_ALLOWED(p, "inspected.example");
	NAME_DENIED(p, "cdn.example"); /* a wildcard is strictly below */
	NAME_DENIED(p, "example.com");
	NAME_DENIED(p, "x.api.example.com");
	NAME_DENIED(p, "gist.cdn.example");
	NAME_DENIED(p, "Gist.CDN.example.");
	NAME_DENIED(p, "x.bad.cdn.example");
	/* Addresses are not names: nothing to resolve. */
	NAME_DENIED(p, "203.0.113.7");
	NAME_DENIED(p, "");
	NAME_DENIED(p, "[api.example.com]");
	NAME_DENIED(p, "api.example.com:443");
	sl_policy_free(p);
}

/* The name is allowed exactly when a bare connection to it is allowed on
 * some port: deny rules with ports take away only those ports. */
static void test_name_allowed_ports(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n"
				   "  - host: one.example\n"
				   "    ports: [443]\n"
				   "  - host: two.example\n"
				   "    ports: [443, 8443]\n"
				   "  - host: \"*.three.example\"\n"
				   "deny:\n"
				   "  - host: one.example\n"
				   "    ports: [443]\n"
				   "  - host: two.example\n"
				   "    ports: [443]\n"
				   "  - host: \"*.three.example\"\n"
				   "    ports: [80, 443]\n");
	struct sl_policy *none = NULL;

	(void)state;
	NAME_DENIED(p, "one.example");
	DENY(p, "one.example", 443, NULL, NULL, SL_REASON_DENY_RULE);
	NAME_ALLOWED(p, "two.example");
	ALLOW(p, "two.example", 8443, NULL, NULL);
	/* Default ports 80 and 443, both denied. */
	NAME_DENIED(p, "a.three.example");
	sl_policy_free(p);

	assert_int_equal(sl_policy_new_deny_all(&none), 0);
	NAME_DENIED(none, "api.example.com");
	sl_policy_free(none);
}

/* What the gateway needs beyond the verdict: whether the path was compared
 * (it then forwards the normal form), and whether any rule for the host
 * names methods (it then refuses method-override headers). */
static void test_path_checked_methods_named(void **state)
{
	struct sl_policy *p;
	struct sl_decision d;

	(void)state;
	p = load("version: 1\n"
		 "allow:\n"
		 "  - host: api.x.com\n"
		 "    paths: [\"/v1/*\"]\n"
		 "  - host: api.x.com\n"
		 "    methods: [GET]\n"
		 "  - host: free.x.com\n"
		 "  - host: dm.x.com\n"
		 "deny:\n"
		 "  - host: dm.x.com\n"
		 "    ports: [8443]\n"
		 "    methods: [DELETE]\n");
	d = decide(p, "api.x.com", 443, "GET", "//v1/x");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.path_checked);
	assert_true(d.methods_named);
	/* The path rule did not match, yet it chose the rule that did. */
	d = decide(p, "api.x.com", 443, "GET", "/v2/x");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.path_checked);
	assert_false(d.host_injects);
	d = decide(p, "free.x.com", 443, "GET", "//any");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_false(d.path_checked);
	assert_false(d.methods_named);
	assert_false(d.host_injects);
	sl_policy_free(p);
	/* Any allow rule for the host that injects, not only the deciding one. */
	p = load("version: 1\n"
		 "secrets:\n"
		 "  k: { env: K }\n"
		 "allow:\n"
		 "  - host: api.x.com\n"
		 "    paths: [\"/v1/*\"]\n"
		 "    inject: { header: x-api-key, secret: k }\n"
		 "  - host: api.x.com\n"
		 "    paths: [\"/open\"]\n");
	d = decide(p, "api.x.com", 443, "GET", "/open");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_false(d.rule->has_inject);
	assert_true(d.host_injects);
	sl_policy_free(p);
	p = load("version: 1\n"
		 "allow:\n"
		 "  - host: dm.x.com\n"
		 "deny:\n"
		 "  - host: dm.x.com\n"
		 "    ports: [8443]\n"
		 "    methods: [DELETE]\n");
	/* A deny rule naming methods counts, on any port. */
	d = decide(p, "dm.x.com", 443, "GET", "/");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.methods_named);
	assert_false(d.path_checked);
	sl_policy_free(p);
}

/* Every port of a host where some rule injects is inspected, except one a
 * rule says carries another protocol: the agent's own key must not ride an
 * opaque tunnel to another port of that origin. */
static void test_inject_host_inspected_everywhere(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "secrets:\n"
				   "  k: { env: SLUICE_TEST_KEY }\n"
				   "allow:\n"
				   "  - host: api.x.com\n"
				   "    ports: [443]\n"
				   "    inject: { header: x-api-key, secret: k }\n"
				   "  - host: api.x.com\n"
				   "    ports: [8443, 80]\n"
				   "  - host: api.x.com\n"
				   "    ports: [22]\n"
				   "    protocol: tcp\n"
				   "  - host: other.x.com\n"
				   "    ports: [443]\n");
	struct sl_decision d;

	(void)state;
	d = decide(p, "api.x.com", 8443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.host_injects);
	assert_true(d.inspect);
	d = decide(p, "api.x.com", 80, NULL, NULL);
	assert_true(d.inspect);
	d = decide(p, "api.x.com", 22, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_false(d.inspect);
	d = decide(p, "other.x.com", 443, NULL, NULL);
	assert_false(d.inspect);
	sl_policy_free(p);
}

/* Observe mode: what the rules deny is SL_VERDICT_OBSERVE, naming what
 * would have decided and giving no rule's rights; what is refused before
 * any rule (invalid hosts, ambiguous paths, invalid requests) stays DENY. */
/* Observe mode keeps approval holds: the request an approve rule allows
 * is decided allow with that rule (the gateway holds it), not observed
 * past the hold; what the rule does not name is observed with no rule
 * (so nothing to hold, and no rule's rights). */
static void test_observe_approve(void **state)
{
	struct sl_policy *p = load("version: 1\nmode: observe\n"
				   "allow:\n  - host: pay.test\n    methods: [POST]\n"
				   "    paths: [\"/charge\"]\n    approve: true\n");
	struct sl_decision d;

	(void)state;
	d = decide(p, "pay.test", 443, "POST", "/charge");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_non_null(d.rule);
	assert_true(d.rule->approve);
	d = decide(p, "pay.test", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect); /* so each request meets the hold */
	d = decide(p, "pay.test", 443, "GET", "/charge");
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_null(d.rule);
	sl_policy_free(p);
}

static void test_observe_mode(void **state)
{
	struct sl_policy *p = load("version: 1\nmode: observe\nsecrets:\n  k: { env: K }\n"
				   "allow:\n  - host: api.a.com\n    ports: [443]\n"
				   "    methods: [POST]\n    paths: [\"/v1/*\"]\n"
				   "    inject: { header: x-api-key, secret: k }\n"
				   "  - host: b.com\n"
				   "deny:\n  - host: bad.b.com\n    name: no-bad\n");
	struct sl_decision d;

	(void)state;
	assert_int_equal(p->mode, SL_MODE_OBSERVE);
	ALLOW(p, "b.com", 443, NULL, NULL);
	d = decide(p, "c.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_int_equal(d.reason, SL_REASON_NO_RULE);
	assert_null(d.rule);
	assert_null(d.observed_rule);
	assert_false(d.inspect);
	d = decide(p, "bad.b.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_int_equal(d.reason, SL_REASON_DENY_RULE);
	assert_null(d.rule);
	assert_non_null(d.observed_rule);
	assert_string_equal(d.observed_rule->name, "no-bad");
	assert_non_null(strstr(why, "denied by no-bad"));
	/* A path the injecting rule does not name: through, with no rule
	 * (so no credential), and the host still known to inject. */
	d = decide(p, "api.a.com", 443, "POST", "/v2/x");
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_int_equal(d.reason, SL_REASON_PATH);
	assert_null(d.rule);
	assert_true(d.host_injects);
	d = decide(p, "api.a.com", 443, "GET", "/v1/x");
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_int_equal(d.reason, SL_REASON_METHOD);
	assert_null(d.rule);
	/* Another port of an injecting host: inspected, so the agent's own
	 * credential headers are dropped there too. */
	d = decide(p, "api.a.com", 8443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_int_equal(d.reason, SL_REASON_PORT);
	assert_true(d.inspect);
	d = decide(p, "api.a.com", 443, "POST", "/v1/m");
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.rule->has_inject);
	/* The gateway's own refusals are not the policy's to relax. */
	DENY(p, "a..com", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY(p, "api.a.com", 443, "POST", "/v1/%2e%2e/admin", SL_REASON_INVALID_PATH);
	/* ... also where no rule compares paths, or the method missed first. */
	DENY(p, "c.com", 443, "GET", "/a/%2e%2e/b", SL_REASON_INVALID_PATH);
	DENY(p, "api.a.com", 443, "GET", "/v1/%2e%2e/admin", SL_REASON_INVALID_PATH);
	d = decide(p, "c.com", 443, "GET", "/a//b");
	assert_int_equal(d.verdict, SL_VERDICT_OBSERVE);
	assert_true(d.path_checked); /* the origin gets /a/b */
	DENY(p, "c.com", 0, NULL, NULL, SL_REASON_INVALID_REQUEST);
	DENY(p, "c.com", 443, "GET", "http://x/", SL_REASON_INVALID_REQUEST);
	assert_string_equal(sl_verdict_to_string(SL_VERDICT_OBSERVE), "observe-deny");
	sl_policy_free(p);

	/* Enforce (the default, or said): the same requests are denied. */
	p = load("version: 1\nmode: enforce\nallow:\n  - host: b.com\n");
	assert_int_equal(p->mode, SL_MODE_ENFORCE);
	DENY(p, "c.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	sl_policy_free(p);
}

static void test_observe_suffix(void **state)
{
	char b[SL_HOST_BUF];

	(void)state;
	sl_policy_observe_suffix("a.b.example.com", b, sizeof(b));
	assert_string_equal(b, "example.com");
	sl_policy_observe_suffix("x.y.co.uk", b, sizeof(b));
	assert_string_equal(b, "co.uk");
	sl_policy_observe_suffix("example.com", b, sizeof(b));
	assert_string_equal(b, "example.com");
	sl_policy_observe_suffix("localhost", b, sizeof(b));
	assert_string_equal(b, "localhost");
}

/* A rule's id as the audit log and messages spell it, truncated as
 * snprintf truncates. */
static void test_rule_id(void **state)
{
	struct sl_rule r = {.kind = SL_RULE_ALLOW, .index = 1234567};
	char id[32], small[5];

	(void)state;
	assert_string_equal(sl_rule_id(&r, id, sizeof(id)), "allow[1234567]");
	r.kind = SL_RULE_DENY;
	r.index = 10;
	assert_string_equal(sl_rule_id(&r, id, sizeof(id)), "deny[10]");
	r.index = 4294967295u;
	assert_string_equal(sl_rule_id(&r, id, sizeof(id)), "deny[4294967295]");
	assert_string_equal(sl_rule_id(&r, small, sizeof(small)), "deny");
	r.index = 7;
	assert_string_equal(sl_rule_id(&r, id, 8), "deny[7]");
	assert_string_equal(sl_rule_id(&r, id, 7), "deny[7");
	r.name = "model-api";
	assert_string_equal(sl_rule_id(&r, id, sizeof(id)), "model-api");
	assert_string_equal(sl_rule_id(&r, small, sizeof(small)), "mode");
	assert_string_equal(sl_rule_id(&r, small, 1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_deny),
		cmocka_unit_test(test_rule_id),
		cmocka_unit_test(test_exact_names),
		cmocka_unit_test(test_wildcards),
		cmocka_unit_test(test_deny_beats_allow),
		cmocka_unit_test(test_idn),
		cmocka_unit_test(test_ip_literals),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_methods_and_paths),
		cmocka_unit_test(test_deny_paths),
		cmocka_unit_test(test_first_allow_decides),
		cmocka_unit_test(test_many_rules),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_name_allowed),
		cmocka_unit_test(test_name_allowed_ports),
		cmocka_unit_test(test_path_checked_methods_named),
		cmocka_unit_test(test_inject_host_inspected_everywhere),
		cmocka_unit_test(test_observe_mode),
		cmocka_unit_test(test_observe_approve),
		cmocka_unit_test(test_observe_suffix),
	};
	return cmocka_run_group_tests_name("decide", tests, NULL, NULL);
}
