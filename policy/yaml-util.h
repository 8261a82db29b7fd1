/* SPDX-License-Identifier: MIT */
/* Walking a libyaml document with located errors; internal to the policy library. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "macro.h"
#include "policy.h"

struct sl_yaml {
	const char *file;       /* for messages */
	struct sl_diags *diags; /* where messages go; may be NULL */
	size_t n_errors;
	bool oom;
	yaml_document_t doc;
};

/* Record "file:line:col: message" (0-based line and col in, 1-based out). */
_printf_(4, 5) void sl_yaml_error_at_mark(struct sl_yaml *l, size_t line, size_t col,
					  const char *fmt, ...);
#define sl_yaml_error_at(l, node, ...)                                                             \
	sl_yaml_error_at_mark(l, (node)->start_mark.line, (node)->start_mark.column, __VA_ARGS__)

yaml_node_t *sl_yaml_node_get(struct sl_yaml *l, int id);
char *sl_yaml_xstrndup(struct sl_yaml *l, const char *s, size_t n);

/* A scalar as printable ASCII for a message, cut short. */
const char *sl_yaml_shown(const yaml_node_t *n, char *buf, size_t size);
const char *sl_yaml_type_name(const yaml_node_t *n);
bool sl_yaml_is_null(const yaml_node_t *n);

/* The scalar's text, or NULL (with an error) when n is not a usable string. */
const char *sl_yaml_scalar(struct sl_yaml *l, const yaml_node_t *n, const char *what,
			   size_t *ret_len);
/* A plain (unquoted) decimal integer in [min, max]; -1 with an error otherwise. */
long sl_yaml_integer(struct sl_yaml *l, const yaml_node_t *n, const char *what, long min,
		     long max);
bool sl_yaml_expect_type(struct sl_yaml *l, const yaml_node_t *n, yaml_node_type_t t,
			 const char *what);

/*
 * Walk a mapping whose keys must come from `keys` (NULL-terminated). Fills
 * values[i] with the value node of keys[i], or NULL. Unknown and repeated
 * keys are errors: a misspelt "alow:" must not silently allow nothing, and a
 * second "host:" must not silently win.
 */
bool sl_yaml_mapping_keys(struct sl_yaml *l, const yaml_node_t *map, const char *what,
			  const char *const *keys, yaml_node_t **values);

void sl_yaml_parser_error(struct sl_yaml *l, const yaml_parser_t *parser);

/* Refuse aliases, several documents, deep nesting, too many nodes and syntax
 * errors before any tree is built. */
bool sl_yaml_scan_events(struct sl_yaml *l, const char *buf, size_t len);
