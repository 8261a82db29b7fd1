/* SPDX-License-Identifier: MIT */
/* What a request head may carry past a decision (reqhead.c): credential
 * headers, method overrides, the placeholder, the forwarded target. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"
#include "reqhead.h"

static struct sl_http_request req;

static void parse(const char *head)
{
	int status = 0;
	const char *why = NULL;

	if (sl_http_parse_request(head, strlen(head), 16384, &req, &status, &why) <= 0)
		fail_msg("refused (%d %s): %s", status, why ? why : "", head);
}

static bool cred(const char *name, const char *inject)
{
	struct sl_http_span s = {name, strlen(name)};

	return sl_reqhead_is_credential(&s, inject);
}

static void test_credential_names(void **state)
{
	static const char *const yes[] = {
	    "Authorization", "authorization", "AUTHORIZATION", "Proxy-Authorization",
	    "x-api-key", "X-Api-Key", "X_API_KEY", "api-key", "api_key", "apikey", "x-goog-api-key",
	    "Cookie", "cookie2", "X-Auth-Token", "Private-Token", "X-Access-Token",
	    "Ocp-Apim-Subscription-Key", "X-Amz-Security-Token", "x-client-secret",
	    "X-Goog-IAM-Authorization-Token", "x-credential", "x-password",
	};
	static const char *const no[] = {
	    "Host", "Content-Type", "Accept", "Accept-Encoding", "Idempotency-Key",
	    "anthropic-version", "anthropic-beta", "OpenAI-Organization", "x-stainless-lang",
	    "User-Agent", "Mcp-Session-Id", "X-Request-Id", "key", "x-key",
	};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!cred(yes[i], NULL))
			fail_msg("'%s' should be a credential header", yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (cred(no[i], NULL))
			fail_msg("'%s' should not be a credential header", no[i]);
	/* The injected header itself, in any case and with '_' for '-'. */
	assert_true(cred("X-Custom-Key", "x-custom-key"));
	assert_true(cred("x_custom_KEY", "X-Custom-Key"));
	assert_false(cred("X-Custom-Keys", "x-custom-key"));
}

static void test_name_is(void **state)
{
	struct sl_http_span a = {"X_HTTP_Method", 13}, b = {"x-http-method-", 14},
			    c = {"X.HTTP~Method", 13}, d = {"XxHTTP-Method", 13};

	assert_true(sl_reqhead_name_is(&a, "x-http-method"));
	assert_false(sl_reqhead_name_is(&b, "x-http-method"));
	/* lighttpd's CGI reads every byte but a letter or digit as '_'. */
	assert_true(sl_reqhead_name_is(&c, "x-http-method"));
	assert_false(sl_reqhead_name_is(&d, "x-http-method"));
}

static void test_method_override(void **state)
{
	static const char *const heads[] = {
	    "POST / HTTP/1.1\r\nHost: a\r\nX-HTTP-Method-Override: DELETE\r\nContent-Length: 0\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nx-http-method: DELETE\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nX-Method-Override: PUT\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nX_HTTP_METHOD_OVERRIDE: PUT\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nx-method_override: PUT\r\n\r\n",
	};
	size_t i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		parse(heads[i]);
		if (!sl_reqhead_has_method_override(&req))
			fail_msg("override not seen in: %s", heads[i]);
	}
	parse("GET / HTTP/1.1\r\nHost: a\r\nX-HTTP-Method-Overrides: x\r\nX-Method: y\r\n\r\n");
	assert_false(sl_reqhead_has_method_override(&req));
}

/* "_method" in the query string: Symfony (so Laravel) reads it for a POST
 * when no header says otherwise, and Express's method-override can be
 * told to; PHP turns '.', ' ' ('+') and '[' in a parameter's name into
 * '_' before anyone sees it. */
static void test_method_override_query(void **state)
{
	static const char *const yes[] = {
	    "/x?_method=DELETE", "/x?a=1&_method=PUT", "/x?_METHOD=DELETE", "/x?%5Fmethod=DELETE",
	    "/x?.method=DELETE", "/x?+method=DELETE", "/x?%20method=DELETE", "/x?[method=DELETE",
	    "/x?a;_method=DELETE", "/x?_method", "/x?_meth%6Fd=DELETE", "http://a/x?_method=PUT",
	};
	static const char *const no[] = {
	    "/x", "/x?method=DELETE", "/x?__method=DELETE", "/x?_methods=1", "/x?a=_method",
	    "/_method", "/x?a_method=DELETE", "/x?%5Fmethod%=x",
	};
	char head[256];
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: a\r\n\r\n", yes[i]);
		parse(head);
		if (!sl_reqhead_has_method_override(&req))
			fail_msg("override not seen in: %s", yes[i]);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: a\r\n\r\n", no[i]);
		parse(head);
		if (sl_reqhead_has_method_override(&req))
			fail_msg("override taken from: %s", no[i]);
	}
}

static void test_underscore(void **state)
{
	const struct sl_http_header *h;

	parse("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: p\r\nUser_Agent: x\r\nX_Api_Key: own\r\n\r\n");
	h = sl_reqhead_underscore_credential(&req, "x-api-key");
	assert_non_null(h);
	assert_int_equal(h->name.len, 9);
	assert_memory_equal(h->name.p, "X_Api_Key", 9);
	parse("GET / HTTP/1.1\r\nHost: a\r\nmy_key: x\r\n\r\n");
	assert_null(sl_reqhead_underscore_credential(&req, "x-api-key"));
	assert_non_null(sl_reqhead_underscore_credential(&req, "my-key"));
}

/* On a host where some rule injects: any inject rule's header goes too,
 * though no part of the list names it. */
static void test_host_credential(void **state)
{
	struct sl_rule rules[2] = {{.has_inject = false}, {.has_inject = true}};
	struct sl_policy p = {.rules = rules, .n_rules = 2};
	struct sl_http_span fk = {"fastly_KEY", 10}, other = {"X-Request-Id", 12};
	struct sl_http_span auth = {"Authorization", 13};

	rules[1].inject.header = "Fastly-Key";
	assert_true(sl_reqhead_is_host_credential(&p, &fk));
	assert_true(sl_reqhead_is_host_credential(&p, &auth));
	assert_false(sl_reqhead_is_host_credential(&p, &other));
	parse("GET / HTTP/1.1\r\nHost: a\r\nFastly_Key: own\r\n\r\n");
	assert_non_null(sl_reqhead_underscore_host_credential(&req, &p));
	assert_null(sl_reqhead_underscore_credential(&req, NULL));
	rules[1].has_inject = false;
	assert_false(sl_reqhead_is_host_credential(&p, &fk));
}

static void test_placeholder(void **state)
{
	struct sl_inject bearer = {.header = "Authorization", .prefix = "Bearer "};
	struct sl_inject bare = {.header = "x-api-key", .prefix = ""};

	parse("GET / HTTP/1.1\r\nHost: a\r\nauthorization: bearer " SL_PLACEHOLDER "\r\n\r\n");
	assert_true(sl_reqhead_placeholder_ok(&req, &bearer));
	assert_false(sl_reqhead_placeholder_ok(&req, &bare));
	parse("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: " SL_PLACEHOLDER "\r\n\r\n");
	assert_true(sl_reqhead_placeholder_ok(&req, &bare));
	parse("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: " SL_PLACEHOLDER "x\r\n\r\n");
	assert_false(sl_reqhead_placeholder_ok(&req, &bare));
	parse("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: sk-own\r\n\r\n");
	assert_false(sl_reqhead_placeholder_ok(&req, &bare));
	parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_false(sl_reqhead_placeholder_ok(&req, &bare));
	/* Twice: which one the origin reads is its business, not ours. */
	parse("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: " SL_PLACEHOLDER "\r\nX-Api-Key: " SL_PLACEHOLDER
	      "\r\n\r\n");
	assert_false(sl_reqhead_placeholder_ok(&req, &bare));
}

/* One refusal for every path: which check, its status, its reason. */
static const char *refusal(const char *head, const struct sl_decision *d,
			   const struct sl_policy *p, const struct sl_inject *inj, int *st)
{
	char msg[512] = "";
	const char *r;

	parse(head);
	*st = 0;
	r = sl_reqhead_refusal(&req, d, p, inj, st, msg, sizeof(msg));
	if (r)
		assert_true(msg[0] != '\0');
	return r;
}

static void test_refusal(void **state)
{
	struct sl_rule rules[1] = {{.has_inject = true}};
	struct sl_policy p = {.rules = rules, .n_rules = 1};
	struct sl_inject inj = {.header = "x-api-key", .prefix = "", .require_placeholder = true};
	struct sl_decision none = {0}, methods = {.methods_named = true},
			   injects = {.host_injects = true}, paths = {.path_checked = true};
	int st;

	rules[0].inject.header = "x-api-key";
	assert_null(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n", &none,
			    &p, NULL, &st));
	/* A GET or HEAD with a body, whatever the rules. */
	assert_string_equal(refusal("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
				    &none, &p, NULL, &st),
			    "bad-request");
	assert_int_equal(st, 400);
	assert_string_equal(refusal("HEAD / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
				    &none, &p, NULL, &st),
			    "bad-request");
	assert_null(refusal("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", &none, &p,
			    NULL, &st));
	/* A method override only where a rule names methods. */
	assert_null(refusal("POST / HTTP/1.1\r\nHost: a\r\nX-HTTP-Method: DELETE\r\n\r\n", &none,
			    &p, NULL, &st));
	assert_string_equal(refusal("POST / HTTP/1.1\r\nHost: a\r\nX-HTTP-Method: DELETE\r\n\r\n",
				    &methods, &p, NULL, &st),
			    "method-override");
	assert_int_equal(st, 400);
	/* A path override only where a rule compared the path. */
	assert_null(refusal("GET /ok HTTP/1.1\r\nHost: a\r\nX-Original-URL: /admin\r\n\r\n",
			    &methods, &p, NULL, &st));
	assert_string_equal(refusal("GET /ok HTTP/1.1\r\nHost: a\r\nX-Original-URL: /admin\r\n\r\n",
				    &paths, &p, NULL, &st),
			    "path-override");
	assert_int_equal(st, 400);
	assert_string_equal(refusal("GET /ok HTTP/1.1\r\nHost: a\r\nx_rewrite_url: /admin\r\n\r\n",
				    &paths, &p, NULL, &st),
			    "path-override");
	assert_string_equal(refusal("GET /ok HTTP/1.1\r\nHost: a\r\nX.Original.URL: /admin\r\n\r\n",
				    &paths, &p, NULL, &st),
			    "path-override");
	assert_null(refusal("GET /ok HTTP/1.1\r\nHost: a\r\nX-Original-URLs: /admin\r\n\r\n",
			    &paths, &p, NULL, &st));
	/* '_' credentials and the placeholder only where a rule injects. */
	assert_null(refusal("GET / HTTP/1.1\r\nHost: a\r\nX_Api_Key: own\r\n\r\n", &none, &p,
			    &inj, &st));
	assert_string_equal(refusal("GET / HTTP/1.1\r\nHost: a\r\nX_Api_Key: own\r\n\r\n",
				    &injects, &p, &inj, &st),
			    "credential-header");
	assert_int_equal(st, 400);
	assert_string_equal(refusal("GET / HTTP/1.1\r\nHost: a\r\nX.Api.Key: own\r\n\r\n",
				    &injects, &p, &inj, &st),
			    "credential-header");
	assert_string_equal(refusal("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &injects, &p, &inj, &st),
			    "placeholder-missing");
	assert_int_equal(st, 403);
	assert_null(refusal("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: " SL_PLACEHOLDER "\r\n\r\n",
			    &injects, &p, &inj, &st));
	/* No credential for this request (plain HTTP): no placeholder asked. */
	assert_null(refusal("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &injects, &p, NULL, &st));
}

static void target_ok(const char *in, const char *want)
{
	char *t = NULL;
	const char *why = NULL;

	if (sl_reqhead_forward_target(in, strlen(in), &t, &why) < 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_string_equal(t, want);
	free(t);
}

static void test_forward_target(void **state)
{
	char *t = NULL;
	const char *why = NULL;

	target_ok("/v1/x", "/v1/x");
	target_ok("//v1//x", "/v1/x");
	target_ok("/v1/%78?a=b//c&d=%2F", "/v1/x?a=b//c&d=%2F");
	target_ok("/a%3bb?", "/a%3Bb?");
	target_ok("/?q", "/?q");
	assert_int_equal(sl_reqhead_forward_target("/v1/../x", 8, &t, &why), -EINVAL);
	assert_non_null(why);
	assert_int_equal(sl_reqhead_forward_target("/v1/..%3B/x", 11, &t, &why), -EINVAL);
	assert_int_equal(sl_reqhead_forward_target("*", 1, &t, &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_credential_names), cmocka_unit_test(test_name_is),
	    cmocka_unit_test(test_method_override), cmocka_unit_test(test_method_override_query),  cmocka_unit_test(test_underscore),
	    cmocka_unit_test(test_placeholder), cmocka_unit_test(test_host_credential),	     cmocka_unit_test(test_forward_target),
	    cmocka_unit_test(test_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
