/* SPDX-License-Identifier: MIT */
/* sluice learn: the audit-line reader, path collapsing, wildcards, and the
 * escaping of everything the agent put in the log. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "learn.h"

static void feed(struct sl_learn *l, const char *line)
{
	char *buf = malloc(strlen(line) + 1);
	struct sl_learn_record r;
	const char *why = NULL;

	assert_non_null(buf);
	if (sl_learn_parse_line(line, strlen(line), buf, &r, &why) < 0)
		fail_msg("refused: %s: %s", line, why);
	assert_int_equal(sl_learn_add(l, &r), 0);
	free(buf);
}

/* The policy text for these lines; it must load. */
static char *learn(const char *const *lines, const struct sl_policy *base, const char *base_buf)
{
	struct sl_learn l;
	struct sl_policy *p = NULL;
	struct sl_diags d = {0};
	char *out = NULL;
	size_t len = 0, i;

	sl_learn_init(&l, base);
	for (i = 0; lines[i]; i++)
		feed(&l, lines[i]);
	assert_int_equal(sl_learn_emit(&l, "t.log", base_buf ? "base.yaml" : NULL, base_buf,
				       base_buf ? strlen(base_buf) : 0, &out, &len),
			 0);
	sl_learn_done(&l);
	if (sl_policy_load_buffer("out.yaml", out, len, &p, &d) < 0)
		fail_msg("the learned policy does not load: %s\n%s", d.n ? d.msgs[0] : "?", out);
	sl_policy_free(p);
	return out;
}

#define LEARN(...) learn((const char *const[]){__VA_ARGS__, NULL}, NULL, NULL)

static void test_segment_is_id(void **state)
{
	(void)state;
	assert_true(sl_learn_segment_is_id("12345", 5));
	assert_true(sl_learn_segment_is_id("123", 3));
	assert_false(sl_learn_segment_is_id("12", 2));
	assert_false(sl_learn_segment_is_id("v1", 2));
	assert_false(sl_learn_segment_is_id("messages", 8));
	assert_true(sl_learn_segment_is_id("0f3a9c2e71b4", 12));
	assert_false(sl_learn_segment_is_id("deadbeefcafe", 12)); /* a word, no digit */
	assert_true(sl_learn_segment_is_id("123e4567-e89b-12d3-a456-426614174000", 36));
	assert_true(sl_learn_segment_is_id("msg_01XFDUDYJgAACzvnptvVoYEL", 28));
	assert_false(sl_learn_segment_is_id("chat-completions", 16));
	assert_false(sl_learn_segment_is_id("a.b", 3));
}

static void check_paths(const struct sl_learn_path *in, size_t n, const char *want)
{
	struct sl_learn_path *out = NULL;
	char got[1024] = "";
	size_t m = 0, i;

	assert_int_equal(sl_learn_collapse_paths(in, n, &out, &m), 0);
	for (i = 0; i < m; i++) {
		char one[256];

		snprintf(one, sizeof(one), "%s%s%s=%u", i ? " " : "", out[i].path,
			 out[i].prefix ? "*" : "", out[i].hits);
		strncat(got, one, sizeof(got) - strlen(got) - 1);
		free(out[i].path);
	}
	free(out);
	if (strcmp(got, want))
		fail_msg("collapsed to '%s', want '%s'", got, want);
}

#define P(s, h) {.path = (char *)(s), .hits = (h)}

static void test_collapse(void **state)
{
	(void)state;
	/* Siblings share their parent's prefix; a single child stays. */
	check_paths((struct sl_learn_path[]){P("/v1/messages/a", 1), P("/v1/messages/b", 2),
					     P("/v1/messages", 4), P("/v1/models", 1)},
		    4, "/v1/messages=4 /v1/messages/*=3 /v1/models=1");
	/* Never at the root: /a and /b do not make a prefix of "/". */
	check_paths((struct sl_learn_path[]){P("/a", 1), P("/b", 1)}, 2, "/a=1 /b=1");
	/* Three below a one-segment parent make its prefix. */
	check_paths((struct sl_learn_path[]){P("/v1/a", 1), P("/v1/b", 1), P("/v1/c", 1)}, 3,
		    "/v1/*=3");
	/* An identifier ends the path in a prefix; what it covers goes. */
	check_paths((struct sl_learn_path[]){P("/v1/users/12345/repos", 1),
					     P("/v1/users/987/keys", 2), P("/v1/users/", 1)},
		    3, "/v1/users/*=4");
	/* ... but not an identifier at the root. */
	check_paths((struct sl_learn_path[]){P("/12345", 1)}, 1, "/12345=1");
	/* Duplicates add up; the order of input does not matter. */
	check_paths((struct sl_learn_path[]){P("/x/y", 1), P("/x/y", 2)}, 2, "/x/y=3");
	check_paths((struct sl_learn_path[]){P("/b/x/c", 1), P("/a", 1), P("/b/x/d", 1)}, 3,
		    "/a=1 /b/x/*=2");
	check_paths((struct sl_learn_path[]){P("/b/x/d", 1), P("/b/x/c", 1), P("/a", 1)}, 3,
		    "/a=1 /b/x/*=2");
}

static void test_suffix_safe(void **state)
{
	(void)state;
	assert_false(sl_learn_suffix_safe("com"));
	assert_false(sl_learn_suffix_safe("co.uk"));
	assert_false(sl_learn_suffix_safe("com.au"));
	assert_false(sl_learn_suffix_safe("github.io"));
	assert_false(sl_learn_suffix_safe("s3.amazonaws.com"));
	assert_false(sl_learn_suffix_safe("x.herokuapp.com"));
	assert_true(sl_learn_suffix_safe("example.com"));
	assert_true(sl_learn_suffix_safe("example.co.uk"));
	assert_true(sl_learn_suffix_safe("example.de"));
	assert_true(sl_learn_suffix_safe("cdn.example.org"));
}

static void test_parse(void **state)
{
	char buf[512];
	struct sl_learn_record r;
	const char *why;
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"host\":\"a\",\"host\":\"b\"}",
	    "{\"host\":\"a\\u0000b\"}",
	    "{\"host\":\"a\\x41\"}",
	    "{\"host\":\"a}",
	    "{\"host\":\"a\"} trailing",
	    "{\"port\":1.5}",
	    "{\"a\":[[[[[[[[[[1]]]]]]]]]]}",
	    "{\"host\":\"\\ud800\"}",
	    "{\"host\":\"a\tb\"}",
	    NULL,
	};
	size_t i;

	(void)state;
	static const char good[] = "{\"event\":\"http\",\"port\":443,\"x\":{\"y\":[1,null]},"
				   "\"host\":\"a\\u00e9\\\"\",\"path\":\"/\\/x\"}";

	assert_int_equal(sl_learn_parse_line(good, strlen(good), buf, &r, &why), 0);
	assert_string_equal(r.event, "http");
	assert_int_equal(r.port, 443);
	assert_string_equal(r.host, "a\xc3\xa9\"");
	assert_string_equal(r.path, "//x");
	assert_null(r.method);
	assert_int_equal(sl_learn_parse_line("{\"port\":70000}", 14, buf, &r, &why), 0);
	assert_int_equal(r.port, -1);
	for (i = 0; bad[i]; i++) {
		why = NULL;
		if (sl_learn_parse_line(bad[i], strlen(bad[i]), buf, &r, &why) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(why);
	}
}

static void test_quote(void **state)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	(void)state;
	sl_learn_yaml_quote(f, "a\"b\\c\n#: '");
	fclose(f);
	assert_string_equal(out, "\"a\\\"b\\\\c\\x0a#: '\"");
	free(out);
}


/* A path with a ";param" (or "%3B") is allowed only where its bare form
 * is too (policy/decide.c), so an exact rule for it would not allow it:
 * one such request in the log made `sluice learn` refuse to print any
 * policy at all. It is skipped, the rest learned, and every path printed
 * is one the policy allows. */
static void test_param_path(void **state)
{
	struct sl_policy *p = NULL;
	struct sl_request q = {.host = "pp.test", .host_len = 7, .port = 443, .method = "GET"};
	struct sl_decision d;
	char *out = LEARN("{\"event\":\"http\",\"method\":\"GET\",\"host\":\"pp.test\",\"port\":443,"
			  "\"path\":\"/a;1234\",\"decision\":\"observe-deny\"}",
			  "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"pp.test\",\"port\":443,"
			  "\"path\":\"/b%3Bx\",\"decision\":\"observe-deny\"}",
			  "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"pp.test\",\"port\":443,"
			  "\"path\":\"/ok\",\"decision\":\"observe-deny\"}");

	(void)state;
	assert_null(strstr(out, ";1234"));
	assert_null(strstr(out, "%3B"));
	assert_non_null(strstr(out, "2 requests whose path a rule cannot name"));
	assert_int_equal(sl_policy_load_buffer("out.yaml", out, strlen(out), &p, NULL), 0);
	q.path = "/ok";
	q.path_len = 3;
	sl_policy_decide(p, &q, &d);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	sl_policy_free(p);
	free(out);
}
/* A log the agent wrote into: hosts and paths with quotes, newlines,
 * '#', ':' cannot add a key or a rule to the policy. */
static void test_hostile_log(void **state)
{
	char *out = LEARN(
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"evil.test\\\"\\n  - host: \\\"*.com\","
	    "\"port\":80,\"path\":\"/\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"connect\",\"host\":\"a.test\\nprivate_addresses: [0.0.0.0/0]\",\"port\":443,"
	    "\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/x\\\"\\nprivate_addresses: [0.0.0.0/0]\\n#\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/a:b'c\\\"d\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/q\\\\\\\"r\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/star*\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/mid*dle/x\",\"decision\":\"observe-deny\"}",
	    "{\"event\":\"http\",\"method\":\"G\\\"ET\",\"host\":\"ok.test\",\"port\":80,"
	    "\"path\":\"/\",\"decision\":\"observe-deny\"}");

	(void)state;
	assert_null(strstr(out, "private_addresses"));
	assert_null(strstr(out, "*.com"));
	assert_null(strstr(out, "evil"));
	assert_non_null(strstr(out, "      - \"/a:b'c\\\"d\"  # 1\n"));
	assert_non_null(strstr(out, "records whose host is not a valid name"));
	/* A '*' in a path would make an exact path a prefix: skipped. */
	assert_null(strstr(out, "star"));
	assert_null(strstr(out, "mid"));
	assert_non_null(strstr(out, "#   4 requests whose path a rule cannot name"));
	assert_non_null(strstr(out, "method a rule cannot name"));
	free(out);
}

static void test_wildcards_and_private(void **state)
{
	char *out;

	(void)state;
	out = LEARN("{\"event\":\"connect\",\"host\":\"a.cdn.example.org\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"b.cdn.example.org\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"c.cdn.example.org\",\"port\":443,\"decision\":\"allow\"}",
		    "{\"event\":\"connect\",\"host\":\"a.two.example\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"b.two.example\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"x.co.uk\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"y.co.uk\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"z.co.uk\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"10.0.0.7\",\"port\":22,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"meta.test\",\"port\":80,\"decision\":\"deny\",\"reason\":\"private-address\"}");
	assert_non_null(strstr(out, "  - host: \"*.cdn.example.org\"\n    ports: [443]\n"));
	assert_non_null(strstr(out, "(2 observe-deny, 1 allow)"));
	assert_null(strstr(out, "*.two.example"));
	assert_non_null(strstr(out, "  - host: \"a.two.example\"\n"));
	assert_null(strstr(out, "*.co.uk"));
	assert_non_null(strstr(out, "  - host: \"z.co.uk\"\n"));
	assert_non_null(strstr(out, "NOTE: 10.0.0.7 is a special address (private)"));
	assert_null(strstr(out, "private_addresses:"));
	assert_non_null(strstr(out, "1 requests refused as SSRF"));
	assert_null(strstr(out, "meta.test"));
	free(out);
}

/* Addresses share no zone: 20.1.2.3, 77.1.2.3 and 11.1.2.3 are three
 * rules, never "*.1.2.3" (which the loader refuses: the fuzzer found
 * learn printing it); nor names whose parent reads as an address. */
static void test_no_wildcard_over_addresses(void **state)
{
	struct sl_policy *p = NULL;
	char *out;

	(void)state;
	out = LEARN("{\"event\":\"connect\",\"host\":\"20.1.2.3\",\"port\":8080,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"77.1.2.3\",\"port\":8080,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"11.1.2.3\",\"port\":8080,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"a.9.8.7\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"b.9.8.7\",\"port\":443,\"decision\":\"observe-deny\"}",
		    "{\"event\":\"connect\",\"host\":\"c.9.8.7\",\"port\":443,\"decision\":\"observe-deny\"}");
	assert_null(strstr(out, "*."));
	assert_non_null(strstr(out, "  - host: \"77.1.2.3\"\n"));
	assert_int_equal(sl_policy_load_buffer("out.yaml", out, strlen(out), &p, NULL), 0);
	sl_policy_free(p);
	free(out);
}

/* The same records in another order: the same policy. */
static void test_deterministic(void **state)
{
	const char *a = "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"b.test\",\"port\":443,\"path\":\"/x/1\",\"decision\":\"observe-deny\"}";
	const char *b = "{\"event\":\"http\",\"method\":\"POST\",\"host\":\"a.test\",\"port\":443,\"path\":\"/y\",\"decision\":\"observe-deny\"}";
	const char *c = "{\"event\":\"http\",\"method\":\"GET\",\"host\":\"b.test\",\"port\":80,\"path\":\"/x/2\",\"decision\":\"observe-deny\"}";
	char *o1 = LEARN(a, b, c), *o2 = LEARN(c, b, a);

	(void)state;
	assert_string_equal(o1, o2);
	assert_true(strstr(o1, "a.test") < strstr(o1, "b.test"));
	free(o1);
	free(o2);
}

/* With a base policy: its rules as they were, only the rest added. */
static void test_base(void **state)
{
	const char *base_yaml = "version: 1\nsecrets:\n  k: { env: K }\nallow:\n"
				"  - host: api.test\n    methods: [POST]\n    paths: [\"/v1/m\"]\n"
				"    inject: { header: x-api-key, secret: k }\n"
				"deny:\n  - host: no.test\nmode: observe\n";
	struct sl_policy *base = NULL;
	char *out;

	(void)state;
	assert_int_equal(sl_policy_load_buffer("b", base_yaml, strlen(base_yaml), &base, NULL), 0);
	base->mode = SL_MODE_ENFORCE;
	out = learn((const char *const[]){
			"{\"event\":\"http\",\"method\":\"POST\",\"host\":\"api.test\",\"port\":443,\"path\":\"/v1/m\",\"decision\":\"allow\"}",
			"{\"event\":\"http\",\"method\":\"GET\",\"host\":\"api.test\",\"port\":443,\"path\":\"/v1/n\",\"decision\":\"observe-deny\"}",
			"{\"event\":\"connect\",\"host\":\"no.test\",\"port\":443,\"decision\":\"observe-deny\"}",
			NULL},
		    base, base_yaml);
	assert_non_null(strstr(out, "inject: {header: x-api-key, secret: k}"));
	assert_non_null(strstr(out, "  # only if they need it.\n  - host: \"api.test\"\n    ports: [443]\n    methods: [GET]\n"));
	assert_null(strstr(out, "\"no.test\""));
	assert_null(strstr(out, "mode:"));
	assert_non_null(strstr(out, "1 requests the base policy allows already"));
	assert_non_null(strstr(out, "1 requests a deny rule of the base policy refuses"));
	free(out);
	sl_policy_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segment_is_id), cmocka_unit_test(test_collapse),
	    cmocka_unit_test(test_suffix_safe),	  cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_quote),	  cmocka_unit_test(test_hostile_log),
	    cmocka_unit_test(test_wildcards_and_private), cmocka_unit_test(test_no_wildcard_over_addresses),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_base), cmocka_unit_test(test_param_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
