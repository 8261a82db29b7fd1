/* SPDX-License-Identifier: MIT */
#include "path.h"

#include <errno.h>
#include <string.h>

static int fail(const char **ret_why, const char *why)
{
	if (ret_why)
		*ret_why = why;
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Is the segment s[0..n) "." or "..", ignoring ";params" after it? Tomcat
 * and others strip path parameters before resolving dot segments, so
 * "/..;x/" is as much a dot segment as "/../". */
static bool is_dot_segment(const char *s, size_t n)
{
	const char *semi = memchr(s, ';', n);

	if (semi)
		n = (size_t)(semi - s);
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

		if (c == '?' || c == '#')
			break;
		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return fail(ret_why, "bad percent-encoding in path");
			hi = hexval(in[i + 1]);
			lo = hexval(in[i + 2]);
			if (hi < 0 || lo < 0)
				return fail(ret_why, "bad percent-encoding in path");
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
			if (c == '/' || c == '\\')
				return fail(ret_why, "encoded '/' or '\\' in path");
			if (c < 0x20 || c == 0x7f)
				return fail(ret_why, "encoded control character in path");
			escaped = !is_unreserved(c);
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
