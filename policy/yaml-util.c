/* SPDX-License-Identifier: MIT */
/*
 * Walking a libyaml document with located errors: the schema-neutral half of
 * the policy loader. Every error is "file:line:col: message"; scalars are
 * checked for type, emptiness and NUL bytes before anyone reads them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "yaml-util.h"

#define MAX_ERRORS 50
#define MAX_DEPTH 16
#define MAX_NODES 1000000

static void sl_yaml_add_diag(struct sl_yaml *l, char *msg)
{
	char **m;

	if (!l->diags) {
		free(msg);
		return;
	}
	m = realloc(l->diags->msgs, (l->diags->n + 1) * sizeof(char *));
	if (!m) {
		free(msg);
		l->oom = true;
		return;
	}
	l->diags->msgs = m;
	m[l->diags->n++] = msg;
}

_printf_(4, 5) void sl_yaml_error_at_mark(struct sl_yaml *l, size_t line, size_t col,
					 const char *fmt, ...)
{
	char text[512], *msg;
	va_list ap;

	l->n_errors++;
	if (l->n_errors > MAX_ERRORS)
		return;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);

	if (l->n_errors == MAX_ERRORS)
		snprintf(text, sizeof(text), "too many errors; stopping here");
	if (asprintf(&msg, "%s:%zu:%zu: %s", l->file, line + 1, col + 1, text) < 0) {
		l->oom = true;
		return;
	}
	sl_yaml_add_diag(l, msg);
}


yaml_node_t *sl_yaml_node_get(struct sl_yaml *l, int id)
{
	return yaml_document_get_node(&l->doc, id);
}

char *sl_yaml_xstrndup(struct sl_yaml *l, const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (!d)
		l->oom = true;
	return d;
}

/* Print a scalar for a message: printable ASCII, cut short. */
const char *sl_yaml_shown(const yaml_node_t *n, char *buf, size_t size)
{
	size_t i, o = 0;

	if (n->type != YAML_SCALAR_NODE) {
		snprintf(buf, size, "%s", n->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
		return buf;
	}
	for (i = 0; i < n->data.scalar.length && o + 4 < size; i++) {
		unsigned char c = n->data.scalar.value[i];
		buf[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (i < n->data.scalar.length && o + 4 <= size) {
		buf[o++] = '.';
		buf[o++] = '.';
		buf[o++] = '.';
	}
	buf[o] = '\0';
	return buf;
}

const char *sl_yaml_type_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_NO_NODE:
		break;
	}
	return "nothing";
}

bool sl_yaml_is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* The scalar's text, or NULL (with an error) when n is not a usable string. */
const char *sl_yaml_scalar(struct sl_yaml *l, const yaml_node_t *n, const char *what,
			  size_t *ret_len)
{
	if (n->type != YAML_SCALAR_NODE) {
		sl_yaml_error_at(l, n, "%s must be a string, not %s", what, sl_yaml_type_name(n));
		return NULL;
	}
	if (sl_yaml_is_null(n)) {
		sl_yaml_error_at(l, n, "%s is empty", what);
		return NULL;
	}
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length)) {
		sl_yaml_error_at(l, n, "%s contains a NUL byte", what);
		return NULL;
	}
	if (ret_len)
		*ret_len = n->data.scalar.length;
	return (const char *)n->data.scalar.value;
}

/* A plain (unquoted) decimal integer in [min, max]; -1 with an error otherwise. */
long sl_yaml_integer(struct sl_yaml *l, const yaml_node_t *n, const char *what, long min, long max)
{
	const char *v;
	size_t i, len;
	long x = 0;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
		sl_yaml_error_at(l, n, "%s must be a number from %ld to %ld, not %s", what, min, max,
			 n->type == YAML_SCALAR_NODE ? "a quoted string" : sl_yaml_type_name(n));
		return -1;
	}
	v = (const char *)n->data.scalar.value;
	len = n->data.scalar.length;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || i >= 9) {
			char b[64];
			sl_yaml_error_at(l, n, "%s must be a number from %ld to %ld, not '%s'", what, min,
				 max, sl_yaml_shown(n, b, sizeof(b)));
			return -1;
		}
		x = x * 10 + (v[i] - '0');
	}
	if (len == 0 || x < min || x > max) {
		sl_yaml_error_at(l, n, "%s must be a number from %ld to %ld, not '%s'", what, min, max, v);
		return -1;
	}
	return x;
}

bool sl_yaml_expect_type(struct sl_yaml *l, const yaml_node_t *n, yaml_node_type_t t,
			const char *what)
{
	if (n->type == t)
		return true;
	sl_yaml_error_at(l, n, "%s must be %s, not %s", what,
		 t == YAML_MAPPING_NODE ? "a mapping" : t == YAML_SEQUENCE_NODE ? "a list" : "a string",
		 sl_yaml_type_name(n));
	return false;
}

static size_t sl_yaml_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, prev[33], cur[33];

	if (la > 32 || lb > 32)
		return 99;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) !=
						    tolower((unsigned char)b[j - 1]));
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[lb];
}

/*
 * Walk a mapping whose keys must come from `keys` (NULL-terminated). Fills
 * values[i] with the value node of keys[i], or NULL. Unknown and repeated
 * keys are errors: a misspelt "alow:" must not silently allow nothing, and
 * a second "host:" must not silently win.
 */
bool sl_yaml_mapping_keys(struct sl_yaml *l, const yaml_node_t *map, const char *what,
			 const char *const *keys, yaml_node_t **values)
{
	yaml_node_pair_t *pair;
	size_t k, n_keys = 0;
	bool ok = true;

	while (keys[n_keys])
		n_keys++;
	for (k = 0; k < n_keys; k++)
		values[k] = NULL;

	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = sl_yaml_node_get(l, pair->key), *value = sl_yaml_node_get(l, pair->value);
		const char *name;
		char b[80];

		if (!key || !value)
			continue;
		if (key->type != YAML_SCALAR_NODE) {
			sl_yaml_error_at(l, key, "keys in %s must be strings", what);
			ok = false;
			continue;
		}
		name = (const char *)key->data.scalar.value;
		for (k = 0; k < n_keys; k++)
			if (!strcmp(name, keys[k]))
				break;
		if (k == n_keys) {
			char expected[256] = "", *hint = NULL;
			size_t best = 3;

			for (k = 0; k < n_keys; k++) {
				size_t d = sl_yaml_edit_distance(name, keys[k]);

				if (d < best) {
					best = d;
					hint = (char *)keys[k];
				}
				snprintf(expected + strlen(expected), sizeof(expected) - strlen(expected),
					 "%s%s", k ? ", " : "", keys[k]);
			}
			if (hint)
				sl_yaml_error_at(l, key, "unknown key '%s' in %s (did you mean '%s'?)",
					 sl_yaml_shown(key, b, sizeof(b)), what, hint);
			else
				sl_yaml_error_at(l, key, "unknown key '%s' in %s (expected one of: %s)",
					 sl_yaml_shown(key, b, sizeof(b)), what, expected);
			ok = false;
			continue;
		}
		if (values[k]) {
			sl_yaml_error_at(l, key, "'%s' appears twice in %s", keys[k], what);
			ok = false;
			continue;
		}
		values[k] = value;
	}
	return ok;
}

void sl_yaml_parser_error(struct sl_yaml *l, const yaml_parser_t *parser)
{
	const yaml_mark_t *m = &parser->problem_mark;

	if (parser->error == YAML_MEMORY_ERROR) {
		l->oom = true;
		return;
	}
	if (parser->context)
		sl_yaml_error_at_mark(l, m->line, m->column, "YAML: %s %s", parser->problem,
			      parser->context);
	else
		sl_yaml_error_at_mark(l, m->line, m->column, "YAML: %s",
			      parser->problem ? parser->problem : "syntax error");
}

/* Refuse aliases, several documents, deep nesting and too many nodes before
 * building any tree. */
/* Explicit tags ("!!binary", "!!str 80", "!custom") make a value mean
 * something other than its text to other YAML readers; a policy never
 * needs one. The non-specific tag "!" only says "a string". */
static bool tag_ok(struct sl_yaml *l, const yaml_event_t *ev, const yaml_char_t *tag)
{
	if (!tag || !strcmp((const char *)tag, "!"))
		return true;
	sl_yaml_error_at_mark(l, ev->start_mark.line, ev->start_mark.column,
			      "YAML tags are not allowed in a policy");
	return false;
}

bool sl_yaml_scan_events(struct sl_yaml *l, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	size_t depth = 0, nodes = 0, docs = 0;
	bool ok = true, done = false;

	if (!yaml_parser_initialize(&parser)) {
		l->oom = true;
		return false;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			sl_yaml_parser_error(l, &parser);
			ok = false;
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				sl_yaml_error_at_mark(l, ev.start_mark.line, ev.start_mark.column,
					      "a policy file holds one YAML document");
				ok = false;
				done = true;
			}
			break;
		case YAML_ALIAS_EVENT:
			sl_yaml_error_at_mark(l, ev.start_mark.line, ev.start_mark.column,
				      "YAML aliases ('*name') are not allowed in a policy");
			ok = false;
			done = true;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (!tag_ok(l, &ev, ev.type == YAML_SEQUENCE_START_EVENT
						    ? ev.data.sequence_start.tag
						    : ev.data.mapping_start.tag)) {
				ok = false;
				done = true;
				break;
			}
			if (++depth > MAX_DEPTH) {
				sl_yaml_error_at_mark(l, ev.start_mark.line, ev.start_mark.column,
					      "nested too deeply");
				ok = false;
				done = true;
			}
			_fallthrough_;
		case YAML_SCALAR_EVENT:
			if (ev.type == YAML_SCALAR_EVENT) {
				if (!tag_ok(l, &ev, ev.data.scalar.tag)) {
					ok = false;
					done = true;
					break;
				}
				/* "\0" in a double-quoted string is a NUL byte;
				 * C string compares would stop there and read
				 * "allow\0junk" as "allow". */
				if (memchr(ev.data.scalar.value, '\0', ev.data.scalar.length)) {
					sl_yaml_error_at_mark(l, ev.start_mark.line, ev.start_mark.column,
							      "a NUL byte in a string is not allowed");
					ok = false;
				}
			}
			if (++nodes > MAX_NODES) {
				sl_yaml_error_at_mark(l, ev.start_mark.line, ev.start_mark.column,
					      "too many YAML nodes");
				ok = false;
				done = true;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_NO_EVENT:
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return ok;
}

