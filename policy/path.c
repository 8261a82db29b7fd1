/* SPDX-License-Identifier: MIT */
#include "path.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

static int fail(const char **ret_why, const char *why)
{
	if (ret_why)
		*ret_why = why;
	return -EINVAL;
}

/* Where the first ";param" of the normal-form segment s[0..n) starts: a
 * ';', or its escape "%3B" (kept escaped in the normal form, but a server
 * that decodes before it strips parameters sees a ';' there). n if none. */
static size_t param_start(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == ';' || (s[i] == '%' && i + 2 < n && s[i + 1] == '3' &&
				    (s[i + 2] == 'B' || s[i + 2] == 'b')))
			return i;
	return n;
}

/* Is the segment s[0..n) "." or "..", ignoring ";params" after it? Tomcat
 * and others strip path parameters before resolving dot segments, so
 * "/..;x/" (and "/..%3Bx/" to one that decodes first) is as much a dot
 * segment as "/../". */
static bool is_dot_segment(const char *s, size_t n)
{
	n = param_start(s, n);
	return (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
}

int sl_path_normalize(const char *in, size_t len, char *ret_path, size_t retsz,
		      const char **ret_why)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, out = 0, seg = 0;

	if (!in || len == 0 || in[0] != '/')
		return fail(ret_why, "path must start with '/'");
	if (retsz < 2)
		return fail(ret_why, "path is too long");

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		bool escaped = false;

		if (c == '?')
			break;
		/* A request target never holds a fragment (RFC 9112 3.2), and
		 * servers disagree on what follows one: Go keeps it in the
		 * path, nginx stops there. Refuse rather than pick one. */
		if (c == '#')
			return fail(ret_why, "'#' in request target");
		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return fail(ret_why, "bad percent-encoding in path");
			hi = sl_hexval((unsigned char)in[i + 1]);
			lo = sl_hexval((unsigned char)in[i + 2]);
			if (hi < 0 || lo < 0)
				return fail(ret_why, "bad percent-encoding in path");
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
			if (c == '/' || c == '\\')
				return fail(ret_why, "encoded '/' or '\\' in path");
			if (c < 0x20 || c == 0x7f)
				return fail(ret_why, "encoded control character in path");
			/* Servers decode every escape before they route, so
			 * "%3A" is ":" and "%40" is "@" to them. Keep escaped
			 * only what would change the structure here: '%', '?',
			 * '#', ';' (a parameter delimiter that an escape must
			 * not create), space and bytes beyond ASCII. */
			escaped = c == '%' || c == '?' || c == '#' || c == ';' || c == ' ' || c >= 0x80;
		} else if (c == '\\') {
			return fail(ret_why, "backslash in path");
		} else if (c < 0x21 || c >= 0x7f) {
			return fail(ret_why, "space, control or non-ASCII byte in path");
		}

		if (escaped) {
			if (out + 3 >= retsz)
				return fail(ret_why, "path is too long");
			ret_path[out++] = '%';
			ret_path[out++] = hex[c >> 4];
			ret_path[out++] = hex[c & 15];
			continue;
		}
		if (c == '/') {
			if (out > 0 && is_dot_segment(ret_path + seg, out - seg))
				return fail(ret_why, "dot segment ('.' or '..') in path");
			if (out > 0 && ret_path[out - 1] == '/')
				continue;
			if (out + 1 >= retsz)
				return fail(ret_why, "path is too long");
			ret_path[out++] = '/';
			seg = out;
			continue;
		}
		if (out + 1 >= retsz)
			return fail(ret_why, "path is too long");
		ret_path[out++] = (char)c;
	}

	if (is_dot_segment(ret_path + seg, out - seg))
		return fail(ret_why, "dot segment ('.' or '..') in path");
	ret_path[out] = '\0';
	return (int)out;
}

size_t sl_path_strip_params(const char *path, char *ret_path, size_t retsz)
{
	size_t i, out = 0;
	bool in_param = false;

	for (i = 0; path[i] && out + 1 < retsz; i++) {
		char c = path[i];

		if (c == '/') {
			in_param = false;
			if (out > 0 && ret_path[out - 1] == '/')
				continue;
		} else if (c == ';' || (c == '%' && path[i + 1] == '3' && path[i + 2] == 'B')) {
			/* "%3B" too: a server that decodes before it strips
			 * parameters routes "/admin%3Bx/u" as "/admin/u". */
			in_param = true;
		}
		if (!in_param)
			ret_path[out++] = c;
	}
	ret_path[out] = '\0';
	return out;
}

int sl_path_pattern_parse(const char *in, size_t len, char *ret_path, size_t retsz,
			  bool *ret_prefix, const char **ret_why)
{
	bool prefix = false;
	int r;

	if (!in || len == 0)
		return fail(ret_why, "empty path");
	if (in[len - 1] == '*') {
		prefix = true;
		len--;
	}
	if (memchr(in, '*', len))
		return fail(ret_why, "'*' may only end a path, as in '/v1/*'");
	if (memchr(in, '?', len) || memchr(in, '#', len))
		return fail(ret_why, "paths match without the query string; remove '?' or '#'");
	r = sl_path_normalize(in, len, ret_path, retsz, ret_why);
	if (r < 0)
		return r;
	*ret_prefix = prefix;
	return 0;
}

bool sl_path_match(const char *pattern, bool prefix, const char *path)
{
	if (prefix)
		return strncmp(path, pattern, strlen(pattern)) == 0;
	return strcmp(path, pattern) == 0;
}

/* Length without one trailing '/', except for "/" itself. */
static size_t trim_slash(const char *s)
{
	size_t n = strlen(s);

	return n > 1 && s[n - 1] == '/' ? n - 1 : n;
}

/* Whether path[0..l) is pattern[0..pl) itself, or it with a format
 * suffix: Rails routes every path as "/admin(.:format)", so /admin.json
 * runs /admin's action, and Spring MVC's suffix pattern matching (on by
 * default before 5.3) does the same. A suffix is a '.' and the rest of
 * the last segment. */
static bool same_or_suffixed(const char *pattern, size_t pl, const char *path, size_t l)
{
	if (l < pl || strncasecmp(path, pattern, pl) != 0)
		return false;
	if (l == pl)
		return true;
	return pl > 1 && pattern[pl - 1] != '/' && path[pl] == '.' &&
	       !memchr(path + pl, '/', l - pl);
}

bool sl_path_match_deny(const char *pattern, bool prefix, const char *path)
{
	size_t pl = trim_slash(pattern), l = trim_slash(path);

	if (prefix) {
		size_t full = strlen(pattern);

		if (strncasecmp(path, pattern, full) == 0)
			return true;
		/* A prefix "/admin/" also denies "/admin" itself. */
		return pl < full && same_or_suffixed(pattern, pl, path, l);
	}
	return same_or_suffixed(pattern, pl, path, l);
}
