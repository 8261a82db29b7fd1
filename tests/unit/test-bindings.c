/* SPDX-License-Identifier: MIT */
/* What a reload may do with the secrets already loaded (policy.h,
 * sl_policy_bindings_*): narrow where a secret goes, never widen it. */
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
	struct sl_diags d = {0};
	int r = sl_policy_load_buffer("new.yaml", yaml, strlen(yaml), &p, &d);

	if (r < 0)
		fail_msg("refused (%d): %s", r, d.n ? d.msgs[0] : "(no message)");
	sl_diags_clear(&d);
	return p;
}

#define SECRETS                                                                                    \
	"version: 1\n"                                                                             \
	"secrets:\n"                                                                               \
	"  k1: { file: /etc/sluice/k1.key }\n"                                                     \
	"  k2: { file: /etc/sluice/k2.key }\n"                                                     \
	"allow:\n"

/* The policy in force: k1 into x-api-key for api.test on 443, and as a
 * bearer token for a.example.com and b.example.com (80 and 443). A secret
 * never goes to a wildcard: the loader refuses that (test-loader.c). */
static const char running[] = SECRETS "  - host: api.test\n"
				      "    ports: [443]\n"
				      "    inject: { header: x-api-key, secret: k1 }\n"
				      "  - host: a.example.com\n"
				      "    inject: { header: Authorization, prefix: \"Bearer \", "
				      "secret: k1 }\n"
				      "  - host: b.example.com\n"
				      "    inject: { header: Authorization, prefix: \"Bearer \", "
				      "secret: k1 }\n"
				      "  - host: plain.test\n";

/* 0, or the error; the message in err. */
static int reload(const char *yaml, char *err, size_t errlen)
{
	struct sl_policy *old = load(running), *p = load(yaml);
	struct sl_policy_bindings *b = NULL;
	int r;

	assert_int_equal(sl_policy_bindings_new(old, &b), 0);
	/* The bindings outlive the policy they came from. */
	sl_policy_free(old);
	err[0] = '\0';
	r = sl_policy_bindings_check(b, p, err, errlen);
	sl_policy_bindings_free(b);
	sl_policy_free(p);
	return r;
}

static void expect_ok(const char *yaml)
{
	char err[512];

	if (reload(yaml, err, sizeof(err)) < 0)
		fail_msg("refused: %s", err);
}

static void expect_refused(const char *yaml, const char *want_in_msg)
{
	char err[512];
	int r = reload(yaml, err, sizeof(err));

	if (r != -EPERM)
		fail_msg("want -EPERM, got %d", r);
	if (!strstr(err, want_in_msg))
		fail_msg("message lacks \"%s\": %s", want_in_msg, err);
	/* It points at the rule. */
	if (strncmp(err, "new.yaml:", 9) != 0)
		fail_msg("message does not name the file and line: %s", err);
}

static void test_same_and_narrower(void **state)
{
	(void)state;
	expect_ok(running);
	/* Rules may change: new hosts without a secret, paths, methods. */
	expect_ok(SECRETS "  - host: api.test\n"
			  "    ports: [443]\n"
			  "    methods: [POST]\n"
			  "    paths: [\"/v1/*\"]\n"
			  "    inject: { header: X-API-Key, secret: k1 }\n"
			  "  - host: new.test\n");
	/* Fewer places: rules gone, fewer ports, no inject at all. */
	expect_ok(SECRETS "  - host: a.example.com\n"
			  "    ports: [443]\n"
			  "    inject: { header: Authorization, prefix: \"Bearer \", secret: k1 }\n"
			  "  - host: b.example.com\n"
			  "    inject: { header: authorization, prefix: \"Bearer \", secret: k1 }\n");
	expect_ok(SECRETS "  - host: api.test\n");
}

static void test_new_host(void **state)
{
	(void)state;
	expect_refused(SECRETS "  - host: evil.test\n"
			       "    ports: [443]\n"
			       "    inject: { header: x-api-key, secret: k1 }\n",
		       "new.yaml:6:5: secret 'k1' is bound to evil.test");
	/* The parent of the hosts that have it. */
	expect_refused(SECRETS "  - host: example.com\n"
			       "    inject: { header: Authorization, prefix: \"Bearer \", "
			       "secret: k1 }\n",
		       "bound to example.com");
	/* A sibling of the hosts that have it. */
	expect_refused(SECRETS "  - host: c.example.com\n"
			       "    inject: { header: Authorization, prefix: \"Bearer \", "
			       "secret: k1 }\n",
		       "bound to c.example.com");
	/* A name below one that had the secret exactly. */
	expect_refused(SECRETS "  - host: v2.api.test\n"
			       "    ports: [443]\n"
			       "    inject: { header: x-api-key, secret: k1 }\n",
		       "bound to v2.api.test");
	/* Another secret (loaded, but sent elsewhere) on k1's host. */
	expect_refused(SECRETS "  - host: api.test\n"
			       "    ports: [443]\n"
			       "    inject: { header: x-api-key, secret: k2 }\n",
		       "secret 'k2' is bound to api.test");
}

static void test_header_prefix_ports(void **state)
{
	(void)state;
	expect_refused(SECRETS "  - host: api.test\n"
			       "    ports: [443]\n"
			       "    inject: { header: x-echo, secret: k1 }\n",
		       "header 'x-echo'");
	expect_refused(SECRETS "  - host: api.test\n"
			       "    ports: [443]\n"
			       "    inject: { header: x-api-key, prefix: \"Basic \", secret: k1 }\n",
		       "different header or prefix");
	/* Plain HTTP to the same host: the key on the wire in clear. */
	expect_refused(SECRETS "  - host: api.test\n"
			       "    inject: { header: x-api-key, secret: k1 }\n",
		       "on port 80");
	expect_refused(SECRETS "  - host: api.test\n"
			       "    ports: [443, 8443]\n"
			       "    inject: { header: x-api-key, secret: k1 }\n",
		       "port 8443");
	/* Fewer ports are fine. */
	expect_ok(SECRETS "  - host: a.example.com\n"
			  "    ports: [443]\n"
			  "    inject: { header: Authorization, prefix: \"Bearer \", secret: k1 }\n");
}

static void test_nothing_bound(void **state)
{
	struct sl_policy *none = load("version: 1\nallow:\n  - host: a.test\n");
	struct sl_policy *p = load(running);
	struct sl_policy_bindings *b = NULL;
	char err[512];

	(void)state;
	assert_int_equal(sl_policy_bindings_new(none, &b), 0);
	assert_int_equal(sl_policy_bindings_check(b, none, err, sizeof(err)), 0);
	assert_int_equal(sl_policy_bindings_check(b, p, err, sizeof(err)), -EPERM);
	sl_policy_bindings_free(b);
	sl_policy_bindings_free(NULL);
	sl_policy_free(none);
	sl_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_and_narrower),
	    cmocka_unit_test(test_new_host),
	    cmocka_unit_test(test_header_prefix_ports),
	    cmocka_unit_test(test_nothing_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
