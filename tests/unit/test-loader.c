/* SPDX-License-Identifier: MIT */
/* The policy loader: what it accepts, and for everything it refuses, the
 * message and the exact line and column a user is pointed to. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"

static struct sl_policy *load_ok(const char *yaml)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };
	int r = sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d);

	if (r < 0)
		fail_msg("refused (%d): %s", r, d.n ? d.msgs[0] : "(no message)");
	assert_int_equal(d.n, 0);
	assert_non_null(p);
	return p;
}

/* Every message the loader gave must be in want (a NULL-terminated list,
 * in order), and no other. */
static void expect_errors(const char *yaml, const char *const *want)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };
	size_t i, n = 0;
	int r = sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d);

	while (want[n])
		n++;
	if (r >= 0)
		fail_msg("accepted, expected: %s", want[0]);
	assert_null(p);
	for (i = 0; i < d.n || i < n; i++) {
		if (i >= d.n)
			fail_msg("missing message: %s", want[i]);
		if (i >= n)
			fail_msg("unexpected message: %s", d.msgs[i]);
		if (strncmp(d.msgs[i], want[i], strlen(want[i])) != 0)
			fail_msg("message %zu:\n  got  %s\n  want %s", i, d.msgs[i], want[i]);
	}
	sl_diags_clear(&d);
}

#define EXPECT(yaml, ...) expect_errors(yaml, (const char *const[]){ __VA_ARGS__, NULL })

static void test_full_policy(void **state)
{
	struct sl_policy *p = load_ok(
		"version: 1\n"
		"secrets:\n"
		"  anthropic: { file: /etc/sluice/anthropic.key }\n"
		"  openai: { env: OPENAI_API_KEY }\n"
		"  gh: { credential: github-token }\n"
		"allow:\n"
		"  - host: api.anthropic.com\n"
		"    ports: [443]\n"
		"    methods: [POST]\n"
		"    paths: [\"/v1/messages\", \"/v1/messages/*\"]\n"
		"    inject: { header: x-api-key, secret: anthropic, placeholder_env: "
		"ANTHROPIC_API_KEY }\n"
		"  - host: api.openai.com\n"
		"    inject: { header: Authorization, prefix: \"Bearer \", secret: openai }\n"
		"  - host: \"*.githubusercontent.com\"\n"
		"  - host: registry.npmjs.org\n"
		"    methods: [GET, HEAD]\n"
		"    name: npm\n"
		"deny:\n"
		"  - host: gist.githubusercontent.com\n"
		"private_addresses: [10.0.0.0/8, \"fd00::/8\", 192.168.1.5]\n");

	assert_int_equal(p->n_secrets, 3);
	assert_string_equal(p->secrets[0].name, "anthropic");
	assert_int_equal(p->secrets[0].source, SL_SECRET_FILE);
	assert_string_equal(p->secrets[0].ref, "/etc/sluice/anthropic.key");
	assert_int_equal(p->secrets[1].source, SL_SECRET_ENV);
	assert_int_equal(p->secrets[2].source, SL_SECRET_CREDENTIAL);

	assert_int_equal(p->n_rules, 5);
	assert_int_equal(p->n_allow, 4);

	const struct sl_rule *a = &p->rules[0];
	assert_int_equal(a->kind, SL_RULE_ALLOW);
	assert_int_equal(a->index, 1);
	assert_int_equal(a->line, 7);
	assert_int_equal(a->col, 5);
	assert_string_equal(a->host, "api.anthropic.com");
	assert_int_equal(a->n_ports, 1);
	assert_int_equal(a->ports[0], 443);
	assert_int_equal(a->methods, SL_METHOD_POST);
	assert_int_equal(a->n_paths, 2);
	assert_string_equal(a->paths[1].path, "/v1/messages/");
	assert_true(a->paths[1].prefix);
	assert_true(a->has_inject);
	assert_string_equal(a->inject.header, "x-api-key");
	assert_string_equal(a->inject.prefix, "");
	assert_int_equal(a->inject.secret, 0);
	assert_string_equal(a->inject.placeholder_env, "ANTHROPIC_API_KEY");
	assert_true(a->inspect);

	const struct sl_rule *o = &p->rules[1];
	assert_int_equal(o->n_ports, 2); /* the default */
	assert_int_equal(o->ports[0], 80);
	assert_int_equal(o->ports[1], 443);
	assert_string_equal(o->inject.prefix, "Bearer ");
	assert_int_equal(o->inject.secret, 1);
	assert_null(o->inject.placeholder_env);
	assert_true(o->inspect);

	const struct sl_rule *g = &p->rules[2];
	assert_true(g->wildcard);
	assert_string_equal(g->host, "githubusercontent.com");
	assert_false(g->inspect);

	assert_string_equal(p->rules[3].name, "npm");
	assert_int_equal(p->rules[3].methods, SL_METHOD_GET | SL_METHOD_HEAD);
	assert_true(p->rules[3].inspect);

	const struct sl_rule *d = &p->rules[4];
	assert_int_equal(d->kind, SL_RULE_DENY);
	assert_int_equal(d->index, 1);
	assert_null(d->ports); /* a deny rule without ports covers every port */

	assert_int_equal(p->n_private_allow, 3);
	assert_int_equal(p->private_allow[2].prefix, 32);
	sl_policy_free(p);
}

static void test_minimal_and_empty_lists(void **state)
{
	struct sl_policy *p = load_ok("version: 1\n");
	assert_int_equal(p->n_rules, 0);
	assert_null(p->private_allow);
	sl_policy_free(p);

	p = load_ok("version: 1\nallow:\ndeny: []\nsecrets: {}\nprivate_addresses: deny\n");
	assert_int_equal(p->n_rules, 0);
	sl_policy_free(p);

	/* An empty list of private ranges is an explicit "none", like deny. */
	p = load_ok("version: 1\nprivate_addresses: []\n");
	assert_int_equal(p->n_private_allow, 0);
	sl_policy_free(p);
}

static void test_document_errors(void **state)
{
	EXPECT("", "t.yaml:1:1: the policy is empty");
	EXPECT("# only a comment\n", "t.yaml:1:1: the policy is empty");
	EXPECT("- a\n- b\n", "t.yaml:1:1: a policy must be a mapping, not a list");
	EXPECT("allow: []\n", "t.yaml:1:1: the policy has no 'version'");
	EXPECT("version: 2\n", "t.yaml:1:10: unsupported policy version '2'");
	EXPECT("version: \"1\"\n", "t.yaml:1:10: 'version' must be a number from 1 to 1, not a "
				   "quoted string");
	EXPECT("version: 1\nversion: 1\n", "t.yaml:2:1: 'version' appears twice in the policy");
	EXPECT("version: 1\nalow:\n  - host: a.com\n",
	       "t.yaml:2:1: unknown key 'alow' in the policy (did you mean 'allow'?)");
	EXPECT("version: 1\nfoo: bar\n",
	       "t.yaml:2:1: unknown key 'foo' in the policy (expected one of: version, secrets, "
	       "allow, deny, private_addresses, dns, mode)");
	EXPECT("version: 1\nallow: [\n", "t.yaml:3:1: YAML:");
	EXPECT("version: 1\n  bad: indent\n", "t.yaml:2:6: YAML:");
	EXPECT("version: 1\n---\nversion: 1\n", "t.yaml:2:1: a policy file holds one YAML document");
	EXPECT("version: 1\n\"<<\": {}\n", "t.yaml:2:1: unknown key '<<'");
}

static void test_aliases_refused(void **state)
{
	/* A billion-laughs document is refused at its first alias, before a
	 * tree is built from it. */
	EXPECT("version: 1\n"
	       "x: &a [h, h, h, h, h, h, h, h, h]\n"
	       "y: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n",
	       "t.yaml:3:8: YAML aliases ('*name') are not allowed");
	EXPECT("version: 1\n"
	       "allow:\n"
	       "  - &r { host: a.com }\n"
	       "  - *r\n",
	       "t.yaml:4:5: YAML aliases");
}

static void test_depth_limit(void **state)
{
	char buf[256] = "version: 1\nx: ";
	size_t i;

	for (i = 0; i < 20; i++)
		strcat(buf, "[");
	for (i = 0; i < 20; i++)
		strcat(buf, "]");
	strcat(buf, "\n");
	EXPECT(buf, "t.yaml:2:19: nested too deeply");
}

static void test_rule_errors(void **state)
{
	EXPECT("version: 1\nallow: a.com\n", "t.yaml:2:8: 'allow' must be a list, not a scalar");
	EXPECT("version: 1\nallow:\n  - a.com\n",
	       "t.yaml:3:5: an allow rule must be a mapping, not a scalar");
	EXPECT("version: 1\nallow:\n  - ports: [443]\n", "t.yaml:3:5: an allow rule needs a 'host'");
	EXPECT("version: 1\nallow:\n  - host:\n", "t.yaml:3:10: 'host' is empty");
	EXPECT("version: 1\nallow:\n  - host: [a.com]\n",
	       "t.yaml:3:11: 'host' must be a string, not a list");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    hots: b.com\n",
	       "t.yaml:4:5: unknown key 'hots' in an allow rule (did you mean 'host'?)");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    host: b.com\n",
	       "t.yaml:4:5: 'host' appears twice in an allow rule");
	EXPECT("version: 1\ndeny:\n  - host: a.com\n    inject: {header: x, secret: s}\n",
	       "t.yaml:4:13: 'inject' belongs on an allow rule");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    name: \"has space\"\n",
	       "t.yaml:4:11: a rule name must be 1 to 64");
	/* Every error is reported, not only the first. */
	EXPECT("version: 1\nallow:\n  - host: \"*\"\n  - host: a..com\n  - host: ok.com\n    ports: [0]\n",
	       "t.yaml:3:11: invalid host '*': '*' alone would match every host",
	       "t.yaml:4:11: invalid host 'a..com': name has an empty label",
	       "t.yaml:6:13: a port must be a number from 1 to 65535, not '0'");
}

static void test_host_patterns(void **state)
{
	EXPECT("version: 1\nallow:\n  - host: \"*.\"\n", "t.yaml:3:11: invalid host '*.'");
	EXPECT("version: 1\nallow:\n  - host: \"*.*.x\"\n", "t.yaml:3:11: invalid host '*.*.x': '*' may only be the whole leftmost label");
	EXPECT("version: 1\nallow:\n  - host: a.*.x\n", "t.yaml:3:11: invalid host 'a.*.x'");
	/* A URL or a host:port, not a host: said so, with how to write it. */
	EXPECT("version: 1\nallow:\n  - host: https://api.example.com/\n",
	       "t.yaml:3:11: invalid host 'https://api.example.com/': a host is wanted, not a URL: "
	       "write 'host: api.example.com' with 'ports: [443]'");
	EXPECT("version: 1\nallow:\n  - host: http://api.example.com:8080/v1/x\n",
	       "t.yaml:3:11: invalid host 'http://api.example.com:8080/v1/x': a host is wanted, not a "
	       "URL: write 'host: api.example.com' with 'ports: [8080]' and the path under 'paths:'");
	EXPECT("version: 1\nallow:\n  - host: api.example.com:443\n",
	       "t.yaml:3:11: invalid host 'api.example.com:443': a host is wanted, not a host and "
	       "port: write 'host: api.example.com' with 'ports: [443]'");
	EXPECT("version: 1\nallow:\n  - host: api.example.com/v1\n",
	       "t.yaml:3:11: invalid host 'api.example.com/v1': a host is wanted, not a path: write "
	       "'host: api.example.com' and the path under 'paths:'");
	/* IPv6 is still IPv6, and says so when it is not. */
	EXPECT("version: 1\nallow:\n  - host: \"2001:db8::zz\"\n",
	       "t.yaml:3:11: invalid host '2001:db8::zz': not a valid IPv6 address");
	EXPECT("version: 1\nallow:\n  - host: \"*x.com\"\n", "t.yaml:3:11: invalid host '*x.com': a wildcard must be a whole label");
	EXPECT("version: 1\nallow:\n  - host: \"*.10.0.0.1\"\n", "t.yaml:3:11: invalid host '*.10.0.0.1': a wildcard suffix must be a name");
	EXPECT("version: 1\nallow:\n  - host: \"[example.com]\"\n", "t.yaml:3:11: invalid host '[example.com]': brackets must enclose an IPv6 address");
	EXPECT("version: 1\nallow:\n  - host: a.com:443\n", "t.yaml:3:11: invalid host 'a.com:443'");

	struct sl_policy *p = load_ok("version: 1\nallow:\n  - host: B\xc3\xbc" "cher.DE.\n"
				      "  - host: \"[::1]\"\n  - host: 0x7f.1\n");
	assert_string_equal(p->rules[0].host, "xn--bcher-kva.de");
	assert_string_equal(p->rules[1].host, "::1");
	assert_int_equal(p->rules[1].host_kind, SL_HOST_IPV6);
	assert_string_equal(p->rules[2].host, "127.0.0.1");
	sl_policy_free(p);
}

static void test_ports_methods_paths(void **state)
{
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: 443\n",
	       "t.yaml:4:12: 'ports' must be a list, not a scalar");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: []\n",
	       "t.yaml:4:12: 'ports' is empty");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [65536]\n",
	       "t.yaml:4:13: a port must be a number from 1 to 65535, not '65536'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [\"443\"]\n",
	       "t.yaml:4:13: a port must be a number from 1 to 65535, not a quoted string");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [44x]\n",
	       "t.yaml:4:13: a port must be a number from 1 to 65535, not '44x'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [-1]\n",
	       "t.yaml:4:13: a port must be a number");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    methods: [get]\n",
	       "t.yaml:4:15: method 'get' must be written in upper case: 'GET'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    methods: [GTE]\n",
	       "t.yaml:4:15: 'GTE' is not an HTTP method");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    methods: []\n",
	       "t.yaml:4:14: 'methods' is empty and would match nothing");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    paths: [v1/x]\n",
	       "t.yaml:4:13: invalid path 'v1/x': path must start with '/'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    paths: [\"/a/*/b\"]\n",
	       "t.yaml:4:13: invalid path '/a/*/b': '*' may only end a path");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    paths: [\"/a/../b\"]\n",
	       "t.yaml:4:13: invalid path '/a/../b': dot segment");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    paths: [\"/a?b=c\"]\n",
	       "t.yaml:4:13: invalid path '/a?b=c': paths match without the query string");

	struct sl_policy *p = load_ok("version: 1\nallow:\n  - host: a.com\n    ports: [8443, 8443, 22]\n");
	assert_int_equal(p->rules[0].n_ports, 2);
	sl_policy_free(p);
}

static void test_secrets_and_inject(void **state)
{
	EXPECT("version: 1\nsecrets:\n  k: { file: relative/path }\n",
	       "t.yaml:3:14: secret file 'relative/path' must be an absolute path");
	EXPECT("version: 1\nsecrets:\n  k: { env: \"1BAD\" }\n",
	       "t.yaml:3:13: '1BAD' is not a valid environment variable name");
	EXPECT("version: 1\nsecrets:\n  k: { credential: \"../x\" }\n",
	       "t.yaml:3:20: '../x' is not a valid credential name");
	EXPECT("version: 1\nsecrets:\n  k: { file: /a, env: B }\n",
	       "t.yaml:3:6: secret 'k' needs exactly one of 'file', 'env' or 'credential'");
	EXPECT("version: 1\nsecrets:\n  k: {}\n", "t.yaml:3:6: secret 'k' needs exactly one");
	EXPECT("version: 1\nsecrets:\n  k: { fiel: /a }\n",
	       "t.yaml:3:8: unknown key 'fiel' in a secret (did you mean 'file'?)");
	EXPECT("version: 1\nsecrets:\n  k: { file: /a }\n  k: { file: /b }\n",
	       "t.yaml:4:3: secret 'k' is defined twice");
	EXPECT("version: 1\nsecrets:\n  \"a b\": { file: /a }\n", "t.yaml:3:3: secret name 'a b'");

	static const char head[] = "version: 1\nsecrets:\n  k: { env: K }\nallow:\n  - host: a.com\n";
	char buf[512];

#define INJ(inject) (snprintf(buf, sizeof(buf), "%s    inject: %s\n", head, inject), buf)
	EXPECT(INJ("{ header: x-api-key, secret: nope }"),
	       "t.yaml:6:42: unknown secret 'nope' (defined: k)");
	EXPECT(INJ("{ secret: k }"), "t.yaml:6:13: 'inject' needs 'header' and 'secret'");
	EXPECT(INJ("{ header: \"bad header\", secret: k }"),
	       "t.yaml:6:23: 'bad header' is not a valid header name");
	EXPECT(INJ("{ header: Host, secret: k }"),
	       "t.yaml:6:23: header 'Host' frames or routes the request");
	EXPECT(INJ("{ header: Proxy-Authorization, secret: k }"),
	       "t.yaml:6:23: header 'Proxy-Authorization' frames or routes");
	EXPECT(INJ("{ header: a, secret: k, prefix: \"x\\r\\nInjected: 1\" }"),
	       "t.yaml:6:45: 'prefix' may hold only printable ASCII");
	EXPECT(INJ("{ header: a, secret: k, placeholder_env: LD_PRELOAD }"),
	       "t.yaml:6:54: 'LD_PRELOAD' is reserved");
	EXPECT(INJ("{ header: a, secret: k, placeholder_env: HTTPS_PROXY }"),
	       "t.yaml:6:54: 'HTTPS_PROXY' is reserved");
	EXPECT(INJ("{ header: a, secret: k, placeholder_env: \"A-B\" }"),
	       "t.yaml:6:54: 'A-B' is not a valid environment variable name");
	EXPECT(INJ("{ header: a, secret: k, require_placeholder: yes }"),
	       "t.yaml:6:58: 'require_placeholder' is true or false, not 'yes'");
	{
		struct sl_policy *p = load_ok(INJ("{ header: a, secret: k, require_placeholder: true }"));

		assert_true(p->rules[0].inject.require_placeholder);
		sl_policy_free(p);
		p = load_ok(INJ("{ header: a, secret: k, require_placeholder: false }"));
		assert_false(p->rules[0].inject.require_placeholder);
		sl_policy_free(p);
		p = load_ok(INJ("{ header: a, secret: k }"));
		assert_false(p->rules[0].inject.require_placeholder);
		sl_policy_free(p);
	}
	EXPECT(INJ("{ header: a, secret: k, extra: 1 }"),
	       "t.yaml:6:37: unknown key 'extra' in 'inject'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    inject: { header: a, secret: k }\n",
	       "t.yaml:4:34: unknown secret 'k' (no secrets are defined under 'secrets')");
	EXPECT("version: 1\nsecrets:\n  k: { env: K }\nallow:\n  - host: 10.0.0.1\n"
	       "    inject: { header: a, secret: k }\n",
	       "t.yaml:5:11: a credential can only be injected for a host name");
	/* Nor for a wildcard: it says which rule, why, and what to write. */
	EXPECT("version: 1\nsecrets:\n  k: { env: K }\nallow:\n  - host: \"*.example.com\"\n"
	       "    inject: { header: a, secret: k }\n",
	       "t.yaml:5:11: a credential cannot be injected for a wildcard host ('*.example.com' "
	       "sends it to every name below example.com, reviewed or not): write a rule with "
	       "'inject' for each host that needs it, such as 'host: api.example.com'");

	/* Secrets may come after the rules that use them. */
	struct sl_policy *p = load_ok("version: 1\nallow:\n  - host: a.com\n"
				      "    inject: { header: a, secret: k }\n"
				      "secrets:\n  k: { env: K }\n");
	assert_int_equal(p->rules[0].inject.secret, 0);
	sl_policy_free(p);
}

static void test_private_addresses(void **state)
{
	EXPECT("version: 1\nprivate_addresses: allow\n",
	       "t.yaml:2:20: 'private_addresses' must be 'deny' or a list of CIDR ranges");
	EXPECT("version: 1\nprivate_addresses: [10.0.0.1/8]\n",
	       "t.yaml:2:21: invalid range '10.0.0.1/8': address has bits set beyond the prefix");
	EXPECT("version: 1\nprivate_addresses: [10.0.0.0/33]\n",
	       "t.yaml:2:21: invalid range '10.0.0.0/33': prefix length is too long");
	EXPECT("version: 1\nprivate_addresses: [example.com]\n",
	       "t.yaml:2:21: invalid range 'example.com': not an address or CIDR range");
	EXPECT("version: 1\nprivate_addresses: [10.0.0.0/]\n",
	       "t.yaml:2:21: invalid range '10.0.0.0/': bad prefix length");

	struct sl_policy *p = load_ok("version: 1\nprivate_addresses: [10.0.0.0/8, \"fd00::/8\", 127.0.0.1]\n");
	uint8_t a[16] = { 10, 1, 2, 3 };
	assert_true(sl_policy_private_allowed(p, AF_INET, a));
	a[0] = 11;
	assert_false(sl_policy_private_allowed(p, AF_INET, a));
	a[0] = 127; a[1] = 0; a[2] = 0; a[3] = 1;
	assert_true(sl_policy_private_allowed(p, AF_INET, a));
	a[3] = 2;
	assert_false(sl_policy_private_allowed(p, AF_INET, a));
	uint8_t b[16] = { 0xfd, 0x12 };
	assert_true(sl_policy_private_allowed(p, AF_INET6, b));
	b[0] = 0xfc;
	assert_false(sl_policy_private_allowed(p, AF_INET6, b));
	sl_policy_free(p);
}

static void test_file_errors(void **state)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };
	char path[] = "/tmp/sluice-test-XXXXXX";
	int fd;

	assert_int_equal(sl_policy_load_file("/nonexistent/policy.yaml", &p, &d), -ENOENT);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.msgs[0], "/nonexistent/policy.yaml:1:1: cannot open: No such file or directory");
	sl_diags_clear(&d);

	assert_int_equal(sl_policy_load_file("/tmp", &p, &d), -EINVAL);
	assert_string_equal(d.msgs[0], "/tmp:1:1: not a regular file");
	sl_diags_clear(&d);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "version: 1\nallow:\n  - host: a.com\n", 34), 34);
	close(fd);
	assert_int_equal(sl_policy_load_file(path, &p, &d), 0);
	assert_int_equal(p->n_rules, 1);
	assert_string_equal(p->source, path);
	sl_policy_free(p);
	unlink(path);
}

static void test_examples_load(void **state)
{
	static const char *const examples[] = { "anthropic.yaml", "openai.yaml", "dev-agent.yaml" };

	for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		struct sl_policy *p = NULL;
		struct sl_diags d = { 0 };
		char path[4096];

		snprintf(path, sizeof(path), "%s/examples/%s", SOURCE_ROOT, examples[i]);
		if (sl_policy_load_file(path, &p, &d) < 0)
			fail_msg("%s: %s", path, d.n ? d.msgs[0] : "?");
		assert_true(p->n_allow > 0);
		sl_policy_free(p);
	}
}

/* protocol: tcp relays bytes opaque: never by default, never with what
 * only HTTP can carry, never on a deny rule. */
static void test_protocol(void **state)
{
	struct sl_policy *p = load_ok("version: 1\nallow:\n  - host: git.example.com\n"
				      "    ports: [22]\n    protocol: tcp\n"
				      "  - host: a.com\n    protocol: http\n");

	assert_true(p->rules[0].opaque);
	assert_false(p->rules[0].inspect);
	assert_false(p->rules[1].opaque);
	sl_policy_free(p);
	EXPECT("version: 1\nallow:\n  - host: a.com\n    protocol: tcp\n",
	       "t.yaml:4:15: 'protocol: tcp' needs 'ports'");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [22]\n    protocol: ssh\n",
	       "t.yaml:5:15: unknown protocol 'ssh': expected http");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [22]\n    methods: [GET]\n"
	       "    protocol: tcp\n",
	       "t.yaml:6:15: 'protocol: tcp' relays bytes opaque, so the rule cannot name methods");
	EXPECT("version: 1\ndeny:\n  - host: a.com\n    protocol: tcp\n",
	       "t.yaml:4:5: unknown key 'protocol' in a deny rule");
	EXPECT("version: 1\nallow:\n  - host: a.com\n    ports: [22]\n    protocol: [tcp]\n",
	       "t.yaml:5:15: 'protocol' must be a string, not a list");
}

/* mode: enforce (the default) or observe; anything else is an error at
 * its line, never a guess. */
static void test_mode(void **state)
{
	struct sl_policy *p;

	(void)state;
	p = load_ok("version: 1\n");
	assert_int_equal(p->mode, SL_MODE_ENFORCE);
	sl_policy_free(p);
	p = load_ok("version: 1\nmode: observe\n");
	assert_int_equal(p->mode, SL_MODE_OBSERVE);
	sl_policy_free(p);
	p = load_ok("version: 1\nmode: enforce\n");
	assert_int_equal(p->mode, SL_MODE_ENFORCE);
	sl_policy_free(p);
	EXPECT("version: 1\nmode: Observe\n",
	       "t.yaml:2:7: 'mode' must be 'enforce' or 'observe', not 'Observe'");
	EXPECT("version: 1\nmode: [observe]\n", "t.yaml:2:7: 'mode' must be a string");
	EXPECT("version: 1\nmode:\n", "t.yaml:2:6: 'mode' is empty");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_policy),
		cmocka_unit_test(test_minimal_and_empty_lists),
		cmocka_unit_test(test_document_errors),
		cmocka_unit_test(test_aliases_refused),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_rule_errors),
		cmocka_unit_test(test_host_patterns),
		cmocka_unit_test(test_ports_methods_paths),
		cmocka_unit_test(test_secrets_and_inject),
		cmocka_unit_test(test_private_addresses),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_examples_load),
		cmocka_unit_test(test_protocol),
		cmocka_unit_test(test_mode),
	};
	return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
