/* SPDX-License-Identifier: MIT */
#include "reqhead.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "path.h"

/* A name's byte as some server reads it: letters in lower case, digits,
 * and anything else as '-'. CGI, WSGI, Rack and PHP read '_' as '-';
 * lighttpd hands its CGI, FastCGI and SCGI apps every byte that is no
 * letter or digit as '_' (http_cgi_encode_varname), so X.Original.URL and
 * Accept~Encoding are their X-Original-URL and Accept-Encoding (helper
 * 66, against lighttpd 1.4.69). */
static char fold(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (char)(c - 'A' + 'a');
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
}

/* Spelled with a byte some server reads as '-' ('_', '.', '~'...). */
static bool odd_spelling(const struct sl_http_span *name)
{
	for (size_t i = 0; i < name->len; i++)
		if (fold(name->p[i]) == '-' && name->p[i] != '-')
			return true;
	return false;
}

bool sl_reqhead_name_is(const struct sl_http_span *name, const char *lit)
{
	size_t i, n = strlen(lit);

	if (name->len != n)
		return false;
	for (i = 0; i < n; i++)
		if (fold(name->p[i]) != fold(lit[i]))
			return false;
	return true;
}

/* Does the folded name hold the lower-case needle? */
static bool name_holds(const struct sl_http_span *name, const char *needle)
{
	size_t i, j, n = strlen(needle);

	for (i = 0; i + n <= name->len; i++) {
		for (j = 0; j < n && fold(name->p[i + j]) == needle[j]; j++)
			;
		if (j == n)
			return true;
	}
	return false;
}

bool sl_reqhead_is_credential(const struct sl_http_span *name, const char *inject_header)
{
	/* Substrings, not a list of names: an origin may read any header it
	 * likes as its key, and vendors name theirs freely. None of these is
	 * in a header a model API or registry client needs on a host that
	 * gets its credential from us (Idempotency-Key and friends do not
	 * match). */
	static const char *const parts[] = {
	    "auth",	  "token",	 "api-key",	     "apikey",	   "secret",
	    "password",	  "credential",	 "subscription-key", "access-key", "cookie",
	};
	size_t i;

	if (inject_header && sl_reqhead_name_is(name, inject_header))
		return true;
	for (i = 0; i < ELEMENTSOF(parts); i++)
		if (name_holds(name, parts[i]))
			return true;
	return false;
}

/* Is the query parameter name p[0..n) "_method" as a server reads it:
 * escapes decoded, '+' a space, ASCII case ignored, and a leading ' ',
 * '.' or '[' read as '_' (PHP does that to every parameter name)? */
static bool param_is_method(const char *p, size_t n)
{
	static const char want[] = "_method";
	size_t i, k = 0;

	for (i = 0; i < n; i++, k++) {
		char c = p[i];

		if (c == '%' && i + 2 < n && sl_hexval((unsigned char)p[i + 1]) >= 0 && sl_hexval((unsigned char)p[i + 2]) >= 0) {
			c = (char)(sl_hexval((unsigned char)p[i + 1]) * 16 + sl_hexval((unsigned char)p[i + 2]));
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (k == 0 && (c == ' ' || c == '.' || c == '['))
			c = '_';
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (k >= sizeof(want) - 1 || c != want[k])
			return false;
	}
	return k == sizeof(want) - 1;
}

/* A "_method" parameter in the target's query ('&' or ';' between them). */
static bool query_has_method(const struct sl_http_span *target)
{
	const char *q = memchr(target->p, '?', target->len), *end = target->p + target->len;

	if (!q)
		return false;
	for (q++;; q++) {
		const char *e = q, *eq;

		while (e < end && *e != '&' && *e != ';')
			e++;
		eq = memchr(q, '=', (size_t)(e - q));
		if (param_is_method(q, (size_t)((eq ? eq : e) - q)))
			return true;
		if (e == end)
			return false;
		q = e;
	}
}

bool sl_reqhead_has_method_override(const struct sl_http_request *r)
{
	static const char *const names[] = {"x-http-method-override", "x-http-method",
					    "x-method-override"};
	size_t i, j;

	for (i = 0; i < r->n_headers; i++)
		for (j = 0; j < ELEMENTSOF(names); j++)
			if (sl_reqhead_name_is(&r->headers[i].name, names[j]))
				return true;
	return query_has_method(&r->target);
}

const struct sl_http_header *sl_reqhead_path_override(const struct sl_http_request *r)
{
	static const char *const names[] = {"x-original-url", "x-rewrite-url"};
	size_t i, j;

	for (i = 0; i < r->n_headers; i++)
		for (j = 0; j < ELEMENTSOF(names); j++)
			if (sl_reqhead_name_is(&r->headers[i].name, names[j]))
				return &r->headers[i];
	return NULL;
}

const struct sl_http_header *sl_reqhead_underscore_credential(const struct sl_http_request *r,
							      const char *inject_header)
{
	size_t i;

	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (odd_spelling(&h->name) &&
		    sl_reqhead_is_credential(&h->name, inject_header))
			return h;
	}
	return NULL;
}

bool sl_reqhead_is_host_credential(const struct sl_policy *p, const struct sl_http_span *name)
{
	size_t i;

	if (sl_reqhead_is_credential(name, NULL))
		return true;
	/* Not only the deciding rule's header: on a path whose rule injects
	 * nothing, the agent's own Fastly-Key (no "auth", "token", "api-key"
	 * in it) would still reach an origin that reads it. */
	for (i = 0; i < p->n_rules; i++)
		if (p->rules[i].has_inject && sl_reqhead_name_is(name, p->rules[i].inject.header))
			return true;
	return false;
}

const struct sl_http_header *sl_reqhead_underscore_host_credential(const struct sl_http_request *r,
								   const struct sl_policy *p)
{
	size_t i;

	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (odd_spelling(&h->name) &&
		    sl_reqhead_is_host_credential(p, &h->name))
			return h;
	}
	return NULL;
}

bool sl_reqhead_placeholder_ok(const struct sl_http_request *r, const struct sl_inject *inj)
{
	const size_t pl = strlen(inj->prefix), ph = strlen(SL_PLACEHOLDER);
	const struct sl_http_header *found = NULL;
	size_t i;

	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (h->name.len != strlen(inj->header) ||
		    strncasecmp(h->name.p, inj->header, h->name.len) != 0)
			continue;
		if (found)
			return false; /* which one would the origin read? */
		found = h;
	}
	return found && found->value.len == pl + ph &&
	       strncasecmp(found->value.p, inj->prefix, pl) == 0 &&
	       memcmp(found->value.p + pl, SL_PLACEHOLDER, ph) == 0;
}

int sl_reqhead_forward_target(const char *target, size_t len, char **ret, const char **ret_why)
{
	const char *q = memchr(target, '?', len);
	size_t qlen = q ? len - (size_t)(q - target) : 0;
	char *out = malloc(len + 1);
	int n;

	if (!out)
		return -ENOMEM;
	/* The normal form is never longer than what it came from. */
	n = sl_path_normalize(target, len, out, len + 1, ret_why);
	if (n < 0) {
		free(out);
		return n;
	}
	if (q)
		memcpy(out + n, q, qlen);
	out[(size_t)n + qlen] = '\0';
	*ret = out;
	return 0;
}

const char *sl_reqhead_refusal(const struct sl_http_request *r, const struct sl_decision *d,
			       const struct sl_policy *p, const struct sl_inject *inj,
			       int *ret_status, char *msg, size_t msglen)
{
	const struct sl_http_header *u;

	*ret_status = 400;
	if ((sl_http_span_eq(&r->method, "GET") || sl_http_span_eq(&r->method, "HEAD")) &&
	    (r->chunked || (r->has_length && r->content_length > 0))) {
		snprintf(msg, msglen, "a GET or HEAD request with a body");
		return "bad-request";
	}
	if (d->methods_named && sl_reqhead_has_method_override(r)) {
		/* Many origins run the method such a header names: the rules'
		 * methods (an allow rule's or a deny rule's) would not hold. */
		snprintf(msg, msglen,
			 "a method-override header (X-HTTP-Method-Override, X-HTTP-Method, "
			 "X-Method-Override, or a _method query parameter) is refused where a rule "
			 "for this host names methods");
		return "method-override";
	}
	if (d->path_checked && (u = sl_reqhead_path_override(r))) {
		/* The same for the path: the origin would run the one the
		 * header names, which no rule was asked about. */
		snprintf(msg, msglen,
			 "header '%.*s': a path-override header (X-Original-URL, X-Rewrite-URL) is "
			 "refused where a rule for this host compares paths",
			 (int)(u->name.len > 64 ? 64 : u->name.len), u->name.p);
		return "path-override";
	}
	if (!d->host_injects)
		return NULL;
	u = sl_reqhead_underscore_host_credential(r, p);
	if (u) {
		/* Servers disagree on whether '_' (or '.', '~'...) is '-',
		 * so it is neither dropped nor passed (the credential headers
		 * themselves are dropped as the head is rebuilt). */
		snprintf(msg, msglen,
			 "header '%.*s': a credential header spelled with '_' (or another byte some "
			 "servers read as '-') is refused on a host "
			 "whose rule injects a credential",
			 (int)(u->name.len > 64 ? 64 : u->name.len), u->name.p);
		return "credential-header";
	}
	if (inj && inj->require_placeholder && !sl_reqhead_placeholder_ok(r, inj)) {
		*ret_status = 403;
		snprintf(msg, msglen,
			 "this rule requires the placeholder: send '%s: %s%s' (the value of the "
			 "sandbox's placeholder variable) once",
			 inj->header, inj->prefix, SL_PLACEHOLDER);
		return "placeholder-missing";
	}
	return NULL;
}
