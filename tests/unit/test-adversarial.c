/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review of the policy engine (policy/).
 *
 * Two kinds of tests live here:
 *
 *   - "stopped_*": spellings and YAML tricks we tried that the engine
 *     handles correctly today. They pass, and keep those attacks stopped.
 *   - "regression_*": findings of the review. Each failed against the code
 *     it was written for and passes since its fix. The comment above each
 *     says what an origin server, resolver or YAML reader does differently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"

/* ---- helpers ---- */

static struct sl_policy *load(const char *yaml)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };

	if (sl_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, &d) < 0)
		fail_msg("policy refused: %s", d.n ? d.msgs[0] : "?");
	sl_diags_clear(&d);
	return p;
}

/* Load yaml[0..len) (which may hold NUL bytes); returns the loader's result
 * and frees whatever it produced. *ret_first gets a copy of the first
 * message, if any and if ret_first is not NULL. */
static int try_load_n(const char *yaml, size_t len, char **ret_first)
{
	struct sl_policy *p = NULL;
	struct sl_diags d = { 0 };
	int r = sl_policy_load_buffer("t.yaml", yaml, len, &p, &d);

	if (ret_first)
		*ret_first = d.n ? strdup(d.msgs[0]) : NULL;
	sl_diags_clear(&d);
	sl_policy_free(p);
	return r;
}

static int try_load(const char *yaml)
{
	return try_load_n(yaml, strlen(yaml), NULL);
}

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
				 why);                                                             \
	} while (0)

/* Denied, for whatever reason (a fix may choose deny-rule or invalid-path). */
#define DENIED(p, host, port, m, path)                                                             \
	do {                                                                                       \
		struct sl_decision _d = decide(p, host, port, m, path);                            \
		if (_d.verdict != SL_VERDICT_DENY)                                                 \
			fail_msg("%s:%u %s %s allowed, must be denied: %s", host, port, m ? m : "", \
				 path ? path : "", why);                                           \
	} while (0)

#define DENY_AS(p, host, port, m, path, want)                                                     \
	do {                                                                                       \
		struct sl_decision _d = decide(p, host, port, m, path);                            \
		if (_d.verdict != SL_VERDICT_DENY)                                                 \
			fail_msg("%s:%u %s %s allowed: %s", host, port, m ? m : "", path ? path : "", \
				 why);                                                             \
		if (_d.reason != (want))                                                         \
			fail_msg("%s:%u %s: reason %s, want %s (%s)", host, port,                 \
				 path ? path : "", sl_reason_to_string(_d.reason),                \
				 sl_reason_to_string(want), why);                                  \
	} while (0)

/* An application host with deny rules on paths and a method, and a catch-all
 * allow for the rest of it. */
static const char app_policy[] = "version: 1\n"
				 "allow:\n"
				 "  - host: app.x.com\n"
				 "  - host: api.x.com\n"
				 "    paths: [\"/public/*\", \"/v1/x\"]\n"
				 "deny:\n"
				 "  - host: app.x.com\n"
				 "    paths: [\"/admin\", \"/admin/*\", \"/v1/foo:delete\", "
				 "\"/users/me@x.com\", \"/export\"]\n"
				 "  - host: app.x.com\n"
				 "    methods: [DELETE]\n";

/* ======================================================================
 * Findings (these fail until fixed)
 * ====================================================================== */

/*
 * Path parameters. Tomcat, Jetty, Spring (and anything on the Servlet API)
 * strip ";params" from every segment before they route: "/admin;x" is
 * "/admin", "/admin;jsessionid=1/users" is "/admin/users". The normaliser
 * knows this for dot segments ("..;x" is refused) but not for the comparison
 * itself, so every deny path is walked around by appending ";".
 */
static void regression_path_params_walk_around_deny(void **state)
{
	struct sl_policy *p = load(app_policy);

	DENY_AS(p, "app.x.com", 443, "GET", "/admin", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "GET", "/admin;");
	DENIED(p, "app.x.com", 443, "GET", "/admin;x=1");
	DENIED(p, "app.x.com", 443, "GET", "/admin;jsessionid=1/users");
	DENIED(p, "app.x.com", 443, "GET", "/export;.csv");
	sl_policy_free(p);
}

/*
 * Percent-encoded reserved characters. Only unreserved characters are
 * decoded, so "%3A" and ":" (or "%40" and "@") stay different; but Go's
 * r.URL.Path, Express/Node, Python, Tomcat and nginx all decode them before
 * routing, so "/v1/foo%3Adelete" reaches the handler for "/v1/foo:delete".
 */
static void regression_encoded_reserved_chars_walk_around_deny(void **state)
{
	struct sl_policy *p = load(app_policy);

	DENY_AS(p, "app.x.com", 443, "POST", "/v1/foo:delete", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "POST", "/v1/foo%3Adelete");
	DENIED(p, "app.x.com", 443, "POST", "/v1/foo%3adelete");
	DENY_AS(p, "app.x.com", 443, "GET", "/users/me@x.com", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "GET", "/users/me%40x.com");
	sl_policy_free(p);

	/* And the other way round: a rule written with the escape. */
	p = load("version: 1\nallow:\n  - host: app.x.com\n"
		 "deny:\n  - host: app.x.com\n    paths: [\"/v1/foo%3Adelete\"]\n");
	DENIED(p, "app.x.com", 443, "POST", "/v1/foo%3Adelete");
	DENIED(p, "app.x.com", 443, "POST", "/v1/foo:delete");
	sl_policy_free(p);
}

/*
 * Case. Express routes case-insensitively by default (caseSensitive: false),
 * as do ASP.NET Core and IIS; "/ADMIN" reaches app.get('/admin'). A deny rule
 * compared case-sensitively is walked around by changing case. (Allow rules
 * may stay case-sensitive: that only ever denies more.)
 */
static void regression_case_walks_around_deny(void **state)
{
	struct sl_policy *p = load(app_policy);

	DENIED(p, "app.x.com", 443, "GET", "/Admin");
	DENIED(p, "app.x.com", 443, "GET", "/ADMIN/users");
	DENIED(p, "app.x.com", 443, "GET", "/%41dmin");
	sl_policy_free(p);
}

/*
 * Trailing slash. Express (strict: false, the default) and Spring MVC before
 * 6.0 (trailing-slash matching on by default) route "/export/" to the handler
 * of "/export". An exact deny path does not cover it.
 */
static void regression_trailing_slash_walks_around_exact_deny(void **state)
{
	struct sl_policy *p = load(app_policy);

	DENY_AS(p, "app.x.com", 443, "GET", "/export", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "GET", "/export/");
	DENIED(p, "app.x.com", 443, "GET", "//export//");
	sl_policy_free(p);
}

/*
 * '#' in a request target. A request-target never holds a fragment (RFC 9112
 * 3.2), and servers disagree about it: nginx and Node's url.parse stop at
 * '#', but Go's net/http (url.ParseRequestURI) keeps it in r.URL.Path, and
 * http.FileServer then serves path.Clean("/public/#/../secret") = "/secret".
 * The engine cuts at '#', so whatever follows is never normalised: dot
 * segments after it pass both deny and allow-path rules.
 */
static void regression_fragment_hides_dot_segments(void **state)
{
	struct sl_policy *p = load(app_policy);

	/* Outside an allow rule's paths. */
	DENIED(p, "api.x.com", 443, "GET", "/public/#/../secret");
	DENIED(p, "api.x.com", 443, "GET", "/public/x#/../../secret");
	/* Into a deny rule's paths. */
	DENIED(p, "app.x.com", 443, "GET", "/home#/../admin");
	sl_policy_free(p);
}

/*
 * Method case. Methods are case-sensitive (RFC 9110 9.1) and the engine
 * compares them so; but Werkzeug (Flask) upper-cases request.method, so
 * "delete /x" runs a methods=["DELETE"] view. A deny rule for DELETE lets
 * "delete" through because an unknown token matches no deny method, while an
 * allow rule without methods allows it. Deny rules should match methods
 * ASCII-case-insensitively.
 */
static void regression_method_case_walks_around_deny(void **state)
{
	struct sl_policy *p = load(app_policy);

	DENY_AS(p, "app.x.com", 443, "DELETE", "/home", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "delete", "/home");
	DENIED(p, "app.x.com", 443, "Delete", "/home");
	sl_policy_free(p);
}

/*
 * A request target that is not origin-form is not looked at unless some rule
 * names paths. An absolute-form target names its own host, and the origin
 * must use it over the Host header (RFC 9112 3.2.2): on a shared front end
 * (CDN, virtual hosting) "GET http://secret.x.com/ HTTP/1.1" sent to the
 * allowed app.x.com is served as secret.x.com, which a deny rule names.
 * The engine decided on app.x.com and allowed it.
 */
static void regression_absolute_form_target_not_checked(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: app.x.com\n"
				   "deny:\n  - host: secret.x.com\n");

	ALLOW(p, "app.x.com", 443, "GET", "/");
	DENY_AS(p, "secret.x.com", 443, "GET", "/", SL_REASON_DENY_RULE);
	DENIED(p, "app.x.com", 443, "GET", "http://secret.x.com/");
	DENIED(p, "app.x.com", 443, "GET", "https://secret.x.com/x");
	sl_policy_free(p);
}

/*
 * Mapping keys are compared with strcmp(), so a quoted key with an escaped
 * NUL ("allow\0anything") is taken for "allow". Any other YAML reader (and a
 * reviewer) sees an unknown key; sluice enforces it. The docs promise that
 * every unknown key is an error.
 */
static void regression_nul_in_key_is_taken_for_known_key(void **state)
{
	/* libyaml decodes "\0" in a double-quoted scalar to a NUL byte. */
	assert_int_equal(try_load("version: 1\n\"allow\\0 (ignored)\":\n  - host: evil.com\n"),
			 -EINVAL);
	assert_int_equal(try_load("version: 1\nallow:\n  - \"host\\0\": evil.com\n"), -EINVAL);
	assert_int_equal(try_load("version: 1\nprivate_addresses: \"deny\\0[10.0.0.0/8]\"\n"),
			 -EINVAL);
}

/*
 * Explicit YAML tags are ignored. "host: !!binary c2VjcmV0LnguY29t" is
 * "secret.x.com" to every YAML reader; sluice denies a host literally named
 * "c2vjcmv0lnguy29t" and says the policy is valid. "!!str 80" is a string to
 * YAML, yet taken as the port 80 (while "80" quoted is refused). Tags other
 * than the default ones should be refused.
 */
static void regression_yaml_tags_are_ignored(void **state)
{
	assert_int_equal(try_load("version: 1\nallow:\n  - host: \"*.x.com\"\n"
				  "deny:\n  - host: !!binary c2VjcmV0LnguY29t\n"),
			 -EINVAL);
	assert_int_equal(try_load("version: 1\nallow:\n  - host: a.com\n    ports: [!!str 80]\n"),
			 -EINVAL);
}

/*
 * Messages carry raw scalars: control characters and newlines from the
 * policy reach the terminal or log, and a newline forges a whole
 * "file:line:col: ..." line. sl_yaml_shown() exists for this and is not used
 * for secret refs, secret names in 'inject', env names or the version.
 */
static void regression_messages_echo_control_characters(void **state)
{
	static const char *const bad[] = {
		"version: 1\nsecrets:\n  k: {file: \"rel\\e[2J\\nforged.yaml:1:1: ok\"}\n",
		"version: 1\nsecrets:\n  k: {env: \"A\\nforged.yaml:1:1: ok\"}\n",
		"version: 1\nallow:\n  - host: a.com\n    inject: {header: x, "
		"secret: \"s\\nforged.yaml:1:1: ok\"}\n",
		"version: 1\nallow:\n  - host: a.com\n    inject: {header: x, secret: k, "
		"placeholder_env: \"A\\nforged\"}\nsecrets:\n  k: {env: K}\n",
		NULL,
	};

	for (size_t i = 0; bad[i]; i++) {
		char *msg = NULL;

		assert_int_equal(try_load(bad[i]), -EINVAL);
		try_load_n(bad[i], strlen(bad[i]), &msg);
		assert_non_null(msg);
		for (const char *c = msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f) {
				unsigned char bad_c = (unsigned char)*c;

				free(msg);
				fail_msg("message %zu holds control character 0x%02x", i, bad_c);
			}
		free(msg);
	}
}

/* Load buf in a child that gets SIGPROF after `seconds` of its own CPU
 * time: a slow load fails the test quickly instead of stalling the whole
 * suite. CPU time, not the clock, so a loaded machine does not fail it: a
 * quadratic load costs many times the bound in CPU wherever it runs.
 * Returns the child's exit status, or -signal when it was killed. */
static int load_within(const char *buf, size_t len, unsigned seconds)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct itimerval it = { .it_value = { .tv_sec = seconds } };

		setitimer(ITIMER_PROF, &it, NULL);
		_exit(try_load_n(buf, len, NULL) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		return -WTERMSIG(status);
	return WEXITSTATUS(status);
}

/*
 * Quadratic loading. Secrets are checked for duplicates by a linear scan and
 * the array grows by one each time; a 1.6 MB file of 90,000 secrets takes
 * many seconds (about 15 s for 80,000 at -O2), and the 4 MiB limit allows
 * about 230,000. The same holds for 'ports' (a dedup scan per entry: a
 * 3.8 MB list of every port ten times takes 12 s). A SIGHUP reload blocks
 * for that long. A file well under the size limit should load in well under
 * a few seconds, even under ASan.
 */
static void regression_quadratic_secrets(void **state)
{
	const size_t n = 90000;
	size_t cap = n * 24 + 64, len = 0, i;
	char *buf = malloc(cap);
	int r;

	assert_non_null(buf);
	len += (size_t)snprintf(buf + len, cap - len, "version: 1\nsecrets:\n");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, " s%zu: {env: A}\n", i);
	r = load_within(buf, len, 5);
	free(buf);
	if (r == -SIGPROF)
		fail_msg("%zu secrets (%zu bytes) took more than 5 s of CPU to load", n, len);
	assert_int_equal(r, 0);
}

static void regression_quadratic_ports(void **state)
{
	const size_t n = 65535 * 4;
	size_t cap = n * 7 + 128, len = 0, i;
	char *buf = malloc(cap);
	int r;

	assert_non_null(buf);
	len += (size_t)snprintf(buf + len, cap - len,
				"version: 1\nallow:\n  - host: a.com\n    ports: [");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%zu", i ? "," : "", i % 65535 + 1);
	len += (size_t)snprintf(buf + len, cap - len, "]\n");
	r = load_within(buf, len, 5);
	free(buf);
	if (r == -SIGPROF)
		fail_msg("a list of %zu ports (%zu bytes) took more than 5 s of CPU to load", n, len);
	assert_int_equal(r, 0);
}

/* ======================================================================
 * Attacks that are stopped today (these pass; keep them passing)
 * ====================================================================== */

static void stopped_host_spellings(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: \"*.x.com\"\n  - host: \"*.de\"\n"
				   "deny:\n  - host: secret.x.com\n  - host: xn--bcher-kva.de\n");

	ALLOW(p, "ok.x.com", 443, NULL, NULL);
	DENY_AS(p, "secret.x.com", 443, NULL, NULL, SL_REASON_DENY_RULE);
	/* Case, trailing dot, IDNA mapping: all the same name. */
	DENY_AS(p, "SECRET.X.COM.", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "secret\xef\xbc\x8ex.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* U+FF0E */
	DENY_AS(p, "secret\xe3\x80\x82x.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* U+3002 */
	DENY_AS(p, "secret\xef\xbd\xa1x.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* U+FF61 */
	DENY_AS(p, "secret.x.com\xe3\x80\x82", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "\xef\xbd\x93\xef\xbd\x85\xef\xbd\x83\xef\xbd\x92\xef\xbd\x85\xef\xbd\x94.x.com",
		443, NULL, NULL, SL_REASON_DENY_RULE);                      /* fullwidth */
	DENY_AS(p, "sec\xc2\xadret.x.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* soft hyphen */
	DENY_AS(p, "sec\xe2\x80\x8bret.x.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* ZWSP */
	DENY_AS(p, "\xc5\xbf" "ecret.x.com", 443, NULL, NULL, SL_REASON_DENY_RULE); /* long s */
	DENIED(p, "secret\xe2\x80\xa4x.com", 443, NULL, NULL); /* U+2024: refused */
	DENY_AS(p, "b\xc3\xbc" "cher.de", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "B\xc3\x9c" "CHER.DE", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "XN--BCHER-KVA.DE", 443, NULL, NULL, SL_REASON_DENY_RULE);
	/* Spellings a resolver might read as secret.x.com are invalid here. */
	DENY_AS(p, "secret.x.com..", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "\\115ecret.x.com", 443, NULL, NULL, SL_REASON_INVALID_HOST); /* res_mkquery */
	DENY_AS(p, "secret\\.x.com", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "secret%2ex.com", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "secret.x.com%00", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "secret.x.com:443", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "secret.x.com\xef\xbc\x9a" "443", 443, NULL, NULL,
		SL_REASON_INVALID_HOST); /* fullwidth colon maps to ':' */
	DENY_AS(p, "secret.x.com ", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "[secret.x.com]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "secret.ex\xe2\x80\x8d" "ample.x.com", 443, NULL, NULL,
		SL_REASON_INVALID_HOST); /* ZWJ: curl would retry transitional; we refuse */
	{
		struct sl_request req = { .host = "ok.x.com\0secret.x.com", .host_len = 21,
					  .port = 443 };
		struct sl_decision d;

		sl_policy_decide(p, &req, &d);
		assert_int_equal(d.verdict, SL_VERDICT_DENY);
		assert_int_equal(d.reason, SL_REASON_INVALID_HOST);
	}
	/* Labels are compared whole. */
	DENY_AS(p, "x.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "evilx.com", 443, NULL, NULL, SL_REASON_NO_RULE);
	/* Too long: a 64-byte label, a 254-byte name. */
	{
		char h[300];

		memset(h, 'a', 64);
		strcpy(h + 64, ".x.com");
		DENY_AS(p, h, 443, NULL, NULL, SL_REASON_INVALID_HOST);
		for (int i = 0; i < 62; i++)
			memcpy(h + 4 * i, "aaa.", 4);
		strcpy(h + 248, "x.com"); /* 253 bytes: fine */
		ALLOW(p, h, 443, NULL, NULL);
		strcpy(h + 248, "xx.com"); /* 254 */
		DENY_AS(p, h, 443, NULL, NULL, SL_REASON_INVALID_HOST);
	}
	sl_policy_free(p);
}

static void stopped_ipv4_spellings(void **state)
{
	static const char *const loopback[] = {
		"127.0.0.1", "127.1", "127.0.1", "0x7f.1", "0X7F.0.0.1", "2130706433",
		"017700000001", "0x7f000001", "0177.0.0.1", "127.0.0.01", "127.0.0.0x1",
		"127.000.000.001", "127.0.0.1.", "0x00000000007f.1",
		"[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "[::ffff:7f00:1]",
		"[0:0:0:0:0:ffff:7f00:1]",
		"\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", /* fullwidth digits */
		"127\xe3\x80\x82" "0\xe3\x80\x82" "0\xe3\x80\x82" "1", /* ideographic dots */
		NULL,
	};
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: \"*.com\"\n  - host: 8.8.8.8\n"
				   "  - host: \"2001:db8::1\"\n"
				   "deny:\n  - host: 127.0.0.1\n  - host: 169.254.169.254\n"
				   "  - host: \"::1\"\n");

	for (size_t i = 0; loopback[i]; i++)
		DENY_AS(p, loopback[i], 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "169.254.43518", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "0xa9fea9fe", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "[0:0:0:0:0:0:0:1]", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "[::0001]", 80, NULL, NULL, SL_REASON_DENY_RULE);
	/* Every spelling of an allowed address is allowed, and only that. */
	ALLOW(p, "8.8.2056", 443, NULL, NULL);
	ALLOW(p, "[2001:DB8:0::1]", 443, NULL, NULL);
	/* "Ends in a number" is an address or nothing: never a *.com name. */
	DENY_AS(p, "a.1", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "x.com.0x7f", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "1.2.3.4.5", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "0x", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "127.0.0.1 x", 443, NULL, NULL, SL_REASON_INVALID_HOST); /* inet_aton tail */
	/* Other embeddings of 127.0.0.1 in IPv6 are not the IPv4 address (the
	 * socket API does not treat them so), and no rule allows them. */
	DENY_AS(p, "[::127.0.0.1]", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "[64:ff9b::127.0.0.1]", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "[2002:7f00:1::]", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "[::ffff:0:127.0.0.1]", 443, NULL, NULL, SL_REASON_NO_RULE);
	/* Zones, brackets around IPv4. */
	DENY_AS(p, "[::1%eth0]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "[::1%25eth0]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	DENY_AS(p, "[127.0.0.1]", 443, NULL, NULL, SL_REASON_INVALID_HOST);
	sl_policy_free(p);
}

static void stopped_path_spellings(void **state)
{
	struct sl_policy *p = load(app_policy);

	/* Into a deny rule's paths. */
	DENY_AS(p, "app.x.com", 443, "GET", "/%61dmin", SL_REASON_DENY_RULE);
	DENY_AS(p, "app.x.com", 443, "GET", "/ad%6din", SL_REASON_DENY_RULE);
	DENY_AS(p, "app.x.com", 443, "GET", "//admin", SL_REASON_DENY_RULE);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin?x=/../y", SL_REASON_DENY_RULE);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin/", SL_REASON_DENY_RULE);
	DENY_AS(p, "app.x.com", 443, "GET", "/x/../admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/./admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x/%2e%2e/admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x/%2E./admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x/..;a/admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x/.;a/admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x%2fadmin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x%5cadmin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/x\\..\\admin", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin%00.html", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin%09", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin\xc3\xa9", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin%", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin%4", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "/admin%zz", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "GET", "*", SL_REASON_INVALID_PATH);
	DENY_AS(p, "app.x.com", 443, "DELETE", "/home", SL_REASON_DENY_RULE);

	/* Outside an allow rule's paths. */
	ALLOW(p, "api.x.com", 443, "GET", "/public/a");
	ALLOW(p, "api.x.com", 443, "GET", "/v1/%78");
	DENY_AS(p, "api.x.com", 443, "GET", "/public", SL_REASON_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/../secret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/..;/secret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public;/../secret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/.%2e/secret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/%2e%2e%2fsecret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/..%5csecret", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/..", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/public/..?x", SL_REASON_INVALID_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "http://api.x.com/public/a", SL_REASON_INVALID_REQUEST);
	DENY_AS(p, "api.x.com", 443, "GET", "/v1/X", SL_REASON_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/v1/x/", SL_REASON_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/v1/x;a", SL_REASON_PATH);
	DENY_AS(p, "api.x.com", 443, "GET", "/publicity", SL_REASON_PATH);
	/* Escapes we do not decode stay escaped: no server decodes twice. */
	DENY_AS(p, "api.x.com", 443, "GET", "/%2570ublic/a", SL_REASON_PATH);
	/* Too long to compare. */
	{
		static char big[SL_PATH_BUF + 32];

		memset(big, 'a', sizeof(big) - 1);
		memcpy(big, "/public/", 8);
		big[sizeof(big) - 1] = '\0';
		const char *bp = big;

		DENY_AS(p, "api.x.com", 443, "GET", bp, SL_REASON_INVALID_PATH);
	}
	sl_policy_free(p);
}

static void stopped_methods(void **state)
{
	struct sl_policy *p = load("version: 1\nallow:\n  - host: r.x.com\n"
				   "    methods: [GET, HEAD]\n");

	ALLOW(p, "r.x.com", 443, "GET", "/");
	DENY_AS(p, "r.x.com", 443, "get", "/", SL_REASON_METHOD);
	DENY_AS(p, "r.x.com", 443, "GET ", "/", SL_REASON_METHOD);
	DENY_AS(p, "r.x.com", 443, "PROPFIND", "/", SL_REASON_METHOD);
	DENY_AS(p, "r.x.com", 443, "", "/", SL_REASON_METHOD);
	DENY_AS(p, "r.x.com", 443, "POST", "/", SL_REASON_METHOD);
	sl_policy_free(p);
}

/* inspect must be set whenever any rule for this host and port needs to see
 * requests; it is what tells the gateway not to pass TLS through. */
static void stopped_inspect_bypass(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "secrets:\n  k: {env: K}\n"
				   "allow:\n"
				   "  - host: \"*.x.com\"\n"
				   "  - host: api.x.com\n"
				   "    inject: {header: x-api-key, secret: k}\n"
				   "  - host: m.x.com\n"
				   "    ports: [443]\n"
				   "    methods: [GET]\n"
				   "  - host: m.x.com\n"
				   "    ports: [443, 8443]\n"
				   "deny:\n"
				   "  - host: \"*.x.com\"\n"
				   "    paths: [\"/admin/*\"]\n"
				   "    ports: [8080]\n"
				   "  - host: d.x.com\n"
				   "    methods: [DELETE]\n");
	struct sl_decision d;

	/* An earlier rule without inspection does not hide a later one. */
	d = decide(p, "api.x.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);
	d = decide(p, "m.x.com", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);
	/* A deny rule with methods, reached through an exact name. */
	d = decide(p, "D.X.COM.", 443, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);
	/* A wildcard deny rule with paths, on its own port only. */
	d = decide(p, "a.b.x.com", 80, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_false(d.inspect);
	d = decide(p, "plain.x.com", 443, NULL, NULL);
	assert_false(d.inspect);
	/* The inspected host's requests then meet the rules. */
	DENY_AS(p, "d.x.com", 443, "DELETE", "/", SL_REASON_DENY_RULE);
	ALLOW(p, "d.x.com", 443, "GET", "/");
	sl_policy_free(p);

	p = load("version: 1\nallow:\n  - host: \"*.x.com\"\n    ports: [8080]\n"
		 "deny:\n  - host: \"*.x.com\"\n    paths: [\"/admin/*\"]\n    ports: [8080]\n");
	d = decide(p, "a.b.x.com", 8080, NULL, NULL);
	assert_int_equal(d.verdict, SL_VERDICT_ALLOW);
	assert_true(d.inspect);
	DENY_AS(p, "a.b.x.com", 8080, "GET", "/admin/x", SL_REASON_DENY_RULE);
	DENY_AS(p, "a.b.x.com", 8080, "GET", "/x/..;/admin/x", SL_REASON_INVALID_PATH);
	sl_policy_free(p);
}

static void stopped_precedence(void **state)
{
	struct sl_policy *p = load("version: 1\n"
				   "allow:\n  - host: a.x.com\n    ports: [443, 8443]\n"
				   "  - host: \"*.x.com\"\n"
				   "deny:\n  - host: \"*.a.x.com\"\n  - host: a.x.com\n    ports: [8443]\n");

	ALLOW(p, "a.x.com", 443, NULL, NULL);
	DENY_AS(p, "a.x.com", 8443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "b.a.x.com", 443, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "c.b.a.x.com", 80, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "b.a.x.com", 9, NULL, NULL, SL_REASON_DENY_RULE);
	DENY_AS(p, "a.x.com", 0, NULL, NULL, SL_REASON_INVALID_REQUEST);
	/* A name rule never matches an address, however broad. */
	sl_policy_free(p);
	p = load("version: 1\nallow:\n  - host: \"*.com\"\n  - host: \"*.in-addr.arpa\"\n");
	DENY_AS(p, "1.2.3.4", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "[::1]", 443, NULL, NULL, SL_REASON_NO_RULE);
	DENY_AS(p, "com", 443, NULL, NULL, SL_REASON_NO_RULE);
	sl_policy_free(p);
}

static void stopped_yaml_tricks(void **state)
{
	static const char *const bad[] = {
		/* duplicate keys, block and flow */
		"version: 1\nallow:\n  - {host: a.com, host: b.com}\n",
		"version: 1\nallow:\n  - host: a.com\n    host: b.com\n",
		"version: 1\nallow: []\nallow:\n  - host: a.com\n",
		"version: 1\nsecrets:\n  k: {env: A}\n  k: {env: B}\n",
		/* anchors and merge keys */
		"version: 1\nallow:\n  - &r {host: a.com}\n  - <<: *r\n",
		"version: 1\nallow:\n  - <<: {host: a.com}\n",
		"version: 1\nallow:\n  - &a {host: a.com}\ndeny: [*a]\n",
		/* several documents */
		"version: 1\n---\nversion: 1\nallow:\n  - host: evil.com\n",
		"--- \nversion: 1\n...\n---\nallow:\n  - host: evil.com\n",
		/* tabs, bad syntax */
		"version: 1\nallow:\n\t- host: a.com\n",
		/* type coercion */
		"version: \"1\"\n",
		"version: 1.0\n",
		"version: 0x1\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [\"80\"]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [0x50]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [1e2]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [443.0]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [65536]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: [0]\n",
		"version: 1\nallow:\n  - host: a.com\n    ports: 443\n",
		"version: 1\nallow:\n  - host: a.com\n    methods: [get]\n",
		"version: 1\nallow:\n  - host: a.com\n    methods: GET\n",
		"version: 1\nallow:\n  - host: [a.com]\n",
		"version: 1\nallow:\n  - host: ~\n",
		"version: 1\nallow:\n  - host: \"\"\n",
		"version: 1\nallow:\n  - host: \"a.com\\0.evil.com\"\n",
		"version: 1\nallow:\n  - {? [host]: a.com}\n",
		"version: 1\nallow:\n  - host: a.com\n    paths: []\n",
		"version: 1\nallow:\n  - host: a.com\n    paths: [\"/a/*/b\"]\n",
		"version: 1\nallow:\n  - host: a.com\n    paths: [\"/a?b\"]\n",
		"version: 1\nallow:\n  - host: a.com\n    paths: [\"/a/../b\"]\n",
		"version: 1\nallow:\n  - host: \"*\"\n",
		"version: 1\nallow:\n  - host: \"*.*.a.com\"\n",
		"version: 1\nallow:\n  - host: \"*.10.0.0.1\"\n",
		"version: 1\nalow:\n  - host: a.com\n",
		"version: 1\nprivate_addresses: [10.0.0.1/8]\n",
		"version: 1\nprivate_addresses: allow\n",
		NULL,
	};

	for (size_t i = 0; bad[i]; i++) {
		char *msg = NULL;
		int r = try_load_n(bad[i], strlen(bad[i]), &msg);

		if (r != -EINVAL) {
			free(msg);
			fail_msg("accepted (%d): %s", r, bad[i]);
		}
		if (!msg)
			fail_msg("refused without a message: %s", bad[i]);
		if (strncmp(msg, "t.yaml:", 7) != 0) {
			free(msg);
			fail_msg("message without a location for: %s", bad[i]);
		}
		free(msg);
	}

	/* Accepted and meaning what they say. */
	{
		const char bom[] = "\xef\xbb\xbfversion: 1\nallow:\n  - host: a.com\n";
		struct sl_policy *p = load(bom);

		ALLOW(p, "a.com", 443, NULL, NULL);
		DENY_AS(p, "b.com", 443, NULL, NULL, SL_REASON_NO_RULE);
		sl_policy_free(p);
	}
	{
		struct sl_policy *p = load("version: 1\nallow:\n  - host: a.com\n"
					   "deny:\n  - host: a.com\n    ports: [080]\n");

		DENY_AS(p, "a.com", 80, NULL, NULL, SL_REASON_DENY_RULE);
		ALLOW(p, "a.com", 443, NULL, NULL);
		sl_policy_free(p);
	}
	/* Deep nesting is refused before a tree is built. */
	{
		char buf[512] = "version: 1\nallow: ";
		size_t len = strlen(buf);

		for (int i = 0; i < 40; i++)
			buf[len++] = '[';
		for (int i = 0; i < 40; i++)
			buf[len++] = ']';
		buf[len++] = '\n';
		buf[len] = '\0';
		assert_int_equal(try_load(buf), -EINVAL);
	}
	/* A billion laughs needs aliases, which are refused. */
	assert_int_equal(try_load("version: 1\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"),
			 -EINVAL);
	/* Bytes past the length are not read; embedded NULs are not a terminator. */
	{
		const char y[] = "version: 1\nallow:\n  - host: a.com\n\0deny: []\n";

		assert_int_equal(try_load_n(y, sizeof(y) - 1, NULL), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* findings: fail until fixed */
		cmocka_unit_test(regression_path_params_walk_around_deny),
		cmocka_unit_test(regression_encoded_reserved_chars_walk_around_deny),
		cmocka_unit_test(regression_case_walks_around_deny),
		cmocka_unit_test(regression_trailing_slash_walks_around_exact_deny),
		cmocka_unit_test(regression_fragment_hides_dot_segments),
		cmocka_unit_test(regression_method_case_walks_around_deny),
		cmocka_unit_test(regression_absolute_form_target_not_checked),
		cmocka_unit_test(regression_nul_in_key_is_taken_for_known_key),
		cmocka_unit_test(regression_yaml_tags_are_ignored),
		cmocka_unit_test(regression_messages_echo_control_characters),
		cmocka_unit_test(regression_quadratic_secrets),
		cmocka_unit_test(regression_quadratic_ports),
		/* attacks that are stopped */
		cmocka_unit_test(stopped_host_spellings),
		cmocka_unit_test(stopped_ipv4_spellings),
		cmocka_unit_test(stopped_path_spellings),
		cmocka_unit_test(stopped_methods),
		cmocka_unit_test(stopped_inspect_bypass),
		cmocka_unit_test(stopped_precedence),
		cmocka_unit_test(stopped_yaml_tricks),
	};
	return cmocka_run_group_tests_name("adversarial", tests, NULL, NULL);
}
