/* SPDX-License-Identifier: MIT */
/*
 * One audit line, as untrusted bytes: a flat JSON object (RFC 8259) read
 * through one cursor that never passes the end. Strings are decoded into
 * the caller's buffer (never longer than the line); \u escapes become
 * UTF-8, which learning then refuses unless printable ASCII.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "learn.h"
#include "macro.h"

#define NEST_MAX 8

struct cur {
	const char *p, *end;
	char *out; /* where the next decoded string goes */
	const char *why;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static bool eat(struct cur *c, char ch)
{
	ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static int fail(struct cur *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return -EINVAL;
}

static int hex4(struct cur *c, unsigned *ret)
{
	unsigned v = 0;
	int i;

	if (c->end - c->p < 4)
		return fail(c, "a short \\u escape");
	for (i = 0; i < 4; i++) {
		int h = sl_hexval((unsigned char)c->p[i]);

		if (h < 0)
			return fail(c, "a bad \\u escape");
		v = v * 16 + (unsigned)h;
	}
	c->p += 4;
	*ret = v;
	return 0;
}

/* UTF-8 of cp into o (at most 4 bytes, never more than the 6 the escape
 * took: the buffer holds the line). */
static char *put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | (cp >> 6));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | (cp >> 12));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | (cp >> 18));
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

static int unicode_escape(struct cur *c, char **o)
{
	unsigned cp, lo;

	if (hex4(c, &cp) < 0)
		return -EINVAL;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(c, "a lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
			return fail(c, "a lone high surrogate");
		c->p += 2;
		if (hex4(c, &lo) < 0)
			return -EINVAL;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail(c, "a bad surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return fail(c, "a NUL in a string");
	*o = put_utf8(*o, cp);
	return 0;
}

/* A string at c->p (its '"' included), decoded into c->out; *ret points
 * at it, NUL-terminated. */
static int string(struct cur *c, const char **ret)
{
	char *o = c->out;

	ws(c);
	if (c->p >= c->end || *c->p != '"')
		return fail(c, "a string was expected");
	c->p++;
	for (;;) {
		unsigned char ch;

		if (c->p >= c->end)
			return fail(c, "an unterminated string");
		ch = (unsigned char)*c->p++;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return fail(c, "a control character in a string");
		if (ch != '\\') {
			*o++ = (char)ch;
			continue;
		}
		if (c->p >= c->end)
			return fail(c, "an unterminated escape");
		ch = (unsigned char)*c->p++;
		switch (ch) {
		case '"': case '\\': case '/': *o++ = (char)ch; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (unicode_escape(c, &o) < 0)
				return -EINVAL;
			break;
		default:
			return fail(c, "an unknown escape");
		}
	}
	*o++ = '\0';
	*ret = c->out;
	c->out = o;
	return 0;
}

/* An integer (an audit record's port, status, sizes); *ret clamped to
 * what an int holds, the caller range-checks. Fractions and exponents
 * are refused: no record has them. */
static int number(struct cur *c, long *ret)
{
	bool neg = false;
	long v = 0;
	int digits = 0;

	if (c->p < c->end && *c->p == '-') {
		neg = true;
		c->p++;
	}
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (v < 1000000000L)
			v = v * 10 + (*c->p - '0');
		c->p++;
		digits++;
	}
	if (!digits)
		return fail(c, "a bad value");
	if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
		return fail(c, "a number that is not an integer");
	*ret = neg ? -v : v;
	return 0;
}

static bool literal(struct cur *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, lit, n)) {
		c->p += n;
		return true;
	}
	return false;
}

static int value(struct cur *c, int depth, const char **ret_s, long *ret_n);

/* An object or array inside the record: skipped, bounded. */
static int nested(struct cur *c, int depth, char close)
{
	const char *s;
	long n;

	if (depth >= NEST_MAX)
		return fail(c, "nested too deep");
	if (eat(c, close))
		return 0;
	for (;;) {
		if (close == '}') {
			if (string(c, &s) < 0 || !eat(c, ':'))
				return fail(c, "a bad object");
		}
		if (value(c, depth + 1, &s, &n) < 0)
			return -EINVAL;
		if (eat(c, close))
			return 0;
		if (!eat(c, ','))
			return fail(c, "a ',' was expected");
	}
}

/* A value: a string (*ret_s), an integer (*ret_n), or anything else
 * (neither set). */
static int value(struct cur *c, int depth, const char **ret_s, long *ret_n)
{
	*ret_s = NULL;
	ws(c);
	if (c->p >= c->end)
		return fail(c, "a value was expected");
	if (*c->p == '"')
		return string(c, ret_s);
	if (*c->p == '{' || *c->p == '[') {
		char close = *c->p == '{' ? '}' : ']';

		c->p++;
		return nested(c, depth, close);
	}
	if (literal(c, "null") || literal(c, "true") || literal(c, "false"))
		return 0;
	return number(c, ret_n);
}

/* The fields learning reads. */
static const char *const fields[] = {"event", "method", "host", "path", "decision", "reason",
				     "port"};

static int set_field(struct cur *c, struct sl_learn_record *r, bool seen[], const char *key,
		     const char *s, long n, bool is_num)
{
	const char **slots[] = {&r->event, &r->method, &r->host, &r->path, &r->decision, &r->reason};
	size_t i;

	for (i = 0; i < ELEMENTSOF(fields); i++)
		if (!strcmp(key, fields[i]))
			break;
	if (i == ELEMENTSOF(fields))
		return 0;
	/* Which of two would the reader take? Neither. */
	if (seen[i])
		return fail(c, "a repeated key");
	seen[i] = true;
	if (i == ELEMENTSOF(fields) - 1) {
		r->port = is_num && n >= 0 && n <= 65535 ? (int)n : -1;
		return 0;
	}
	*slots[i] = s;
	return 0;
}

int sl_learn_parse_line(const char *line, size_t len, char *buf, struct sl_learn_record *ret,
			const char **ret_why)
{
	struct cur c = {.p = line, .end = line + len, .out = buf};
	struct sl_learn_record r = {.port = -1};
	bool seen[ELEMENTSOF(fields)] = {false};

	if (memchr(line, '\0', len)) {
		*ret_why = "a NUL byte";
		return -EINVAL;
	}
	if (!eat(&c, '{'))
		goto bad;
	if (!eat(&c, '}'))
		for (;;) {
			const char *key, *s;
			long n = -1;

			if (string(&c, &key) < 0 || !eat(&c, ':'))
				goto bad;
			n = -1;
			if (value(&c, 1, &s, &n) < 0)
				goto bad;
			if (set_field(&c, &r, seen, key, s, n, !s) < 0)
				goto bad;
			if (eat(&c, '}'))
				break;
			if (!eat(&c, ','))
				goto bad;
		}
	ws(&c);
	if (c.p != c.end)
		goto bad;
	*ret = r;
	return 0;
bad:
	*ret_why = c.why ? c.why : "not a JSON object";
	return -EINVAL;
}
