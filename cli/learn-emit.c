/* SPDX-License-Identifier: MIT */
/*
 * The learned policy as text. The log's strings go out only inside
 * double quotes, escaped (sl_learn_yaml_quote), and comments carry only
 * what learning validated (hosts, counts) or what is printed through
 * comment_safe(); BASE's document goes through libyaml's emitter, so that
 * every key it has (including ones this file does not know) is kept as
 * the loader read it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "learn.h"
#include "macro.h"

void sl_learn_yaml_quote(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A file name in a comment: one line, printable. */
static void comment_safe(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?', f);
}

static void stat_line(FILE *f, unsigned long n, const char *what)
{
	if (n)
		fprintf(f, "#   %lu %s\n", n, what);
}

static void header(FILE *f, const struct sl_learn *l, const char *source, const char *base_name)
{
	const struct sl_learn_stats *s = &l->st;

	fputs("# A policy learned by `sluice learn` from ", f);
	comment_safe(f, source);
	fprintf(f, " (%lu lines, %lu records).\n", s->lines, s->records);
	if (base_name) {
		fputs("# It starts from ", f);
		comment_safe(f, base_name);
		fputs(" (its secrets, injects and rules as they were; its mode dropped)\n"
		      "# and adds only what that did not allow.\n",
		      f);
	}
	fputs("# It allows what the agent did, which is not always what it should do:\n"
	      "# review every rule before you enforce it (docs/observe.md).\n"
	      "# Not learned from:\n",
	      f);
	stat_line(f, s->malformed, "malformed lines (stderr named each)");
	stat_line(f, s->ssrf,
		  "requests refused as SSRF (a private, loopback, metadata or the gateway's own\n"
		  "#     address): refused in every mode; list a range under private_addresses\n"
		  "#     yourself only if the agent must reach it");
	stat_line(f, s->denied - s->ssrf,
		  "other denied records (refused by the gateway's own checks, or in enforce mode)");
	stat_line(f, s->other_events, "DNS, blocked-packet and summary records");
	stat_line(f, s->bad_host, "records whose host is not a valid name or address");
	stat_line(f, s->bad_path, "requests whose path a rule cannot name (ambiguous or not ASCII)");
	stat_line(f, s->bad_method, "requests with a method a rule cannot name");
	stat_line(f, s->bad_port, "records without a port");
	stat_line(f, s->base_allowed, "requests the base policy allows already");
	stat_line(f, s->base_denied,
		  "requests a deny rule of the base policy refuses (a deny rule beats any allow\n"
		  "#     rule: none is added for them; remove the deny rule if you mean it)");
	stat_line(f, s->capped, "records past the limit of hosts and ports learning keeps");
	if (!s->malformed && !s->denied && !s->other_events && !s->bad_host && !s->bad_path &&
	    !s->bad_method && !s->bad_port && !s->base_allowed && !s->base_denied && !s->capped)
		fputs("#   nothing: every record was learned from\n", f);
}

static void methods(FILE *f, uint32_t m)
{
	uint32_t bit;
	bool first = true;

	fputs("    methods: [", f);
	for (bit = 1; bit <= SL_METHOD_PATCH; bit <<= 1)
		if (m & bit) {
			fprintf(f, "%s%s", first ? "" : ", ", sl_method_to_string(bit));
			first = false;
		}
	fputs("]\n", f);
}

/* Does a rule of BASE inject a credential on this host? Then the
 * requests learned here went without it, and the operator decides. */
static bool base_injects(const struct sl_policy *base, const struct sl_learn_rule *r)
{
	char w[SL_HOST_BUF + 2];
	struct sl_request q = {.port = r->ports[0]};
	struct sl_decision d;

	if (!base)
		return false;
	snprintf(w, sizeof(w), "%s%s", r->wildcard ? "x." : "", r->host);
	q.host = w;
	q.host_len = strlen(w);
	sl_policy_decide(base, &q, &d);
	return d.host_injects;
}

static void rule(FILE *f, const struct sl_learn_rule *r, const struct sl_policy *base)
{
	size_t i;

	fprintf(f, "\n  # %s%s: %u request%s or connection%s (%u observe-deny, %u allow)\n",
		r->wildcard ? "*." : "", r->host, r->hits, r->hits == 1 ? "" : "s",
		r->hits == 1 ? "" : "s", r->observed, r->allowed);
	if (r->wildcard) {
		fprintf(f, "  # a wildcard: %zu names under %s were seen:", r->n_names, r->host);
		for (i = 0; i < r->n_names; i++)
			fprintf(f, "%s %s", i ? "," : "", r->names[i]);
		fputs("\n  # (it allows every other name under it too; list them instead if not)\n", f);
	}
	if (r->private_addr)
		fprintf(f,
			"  # NOTE: %s is a special address (%s): the gateway refuses it unless\n"
			"  # private_addresses lists it, and this policy does not. Add it there\n"
			"  # yourself only if the agent must reach it.\n",
			r->host, r->special);
	if (base_injects(base, r))
		fputs("  # The base policy injects a credential on this host; these requests went\n"
		      "  # without one (observe mode gives none). Give this rule the same inject\n"
		      "  # only if they need it.\n",
		      f);
	fputs("  - host: ", f);
	if (r->wildcard) {
		char w[SL_HOST_BUF + 2];

		snprintf(w, sizeof(w), "*.%s", r->host);
		sl_learn_yaml_quote(f, w);
	} else {
		sl_learn_yaml_quote(f, r->host);
	}
	fputs("\n    ports: [", f);
	for (i = 0; i < r->n_ports; i++)
		fprintf(f, "%s%u", i ? ", " : "", r->ports[i]);
	fputs("]\n", f);
	if (!r->http)
		return;
	if (r->methods)
		methods(f, r->methods);
	if (!r->paths) {
		fputs("    # more distinct paths than learning keeps: any path\n", f);
		return;
	}
	fputs("    paths:\n", f);
	for (i = 0; i < r->n_paths; i++) {
		char *p;

		if (asprintf(&p, "%s%s", r->paths[i].path, r->paths[i].prefix ? "*" : "") < 0)
			continue;
		fputs("      - ", f);
		sl_learn_yaml_quote(f, p);
		fprintf(f, "  # %u\n", r->paths[i].hits);
		free(p);
	}
}

/* ---- BASE, through libyaml ---- */

struct sink {
	char *buf;
	size_t len, cap;
};

static int sink_write(void *data, unsigned char *p, size_t n)
{
	struct sink *s = data;

	if (s->len + n + 1 > s->cap) {
		size_t cap = (s->len + n + 1) * 2;
		char *b = realloc(s->buf, cap);

		if (!b)
			return 0;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
	return 1;
}

static int copy_node(yaml_document_t *src, int id, yaml_document_t *dst, bool flow, int depth)
{
	yaml_node_t *n = yaml_document_get_node(src, id);
	yaml_node_item_t *it;
	yaml_node_pair_t *pr;
	int out, k, v;

	if (!n || depth > 64)
		return 0;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return yaml_document_add_scalar(dst, NULL, n->data.scalar.value,
						(int)n->data.scalar.length, n->data.scalar.style);
	case YAML_SEQUENCE_NODE:
		out = yaml_document_add_sequence(dst, NULL, flow ? YAML_FLOW_SEQUENCE_STYLE
								  : YAML_BLOCK_SEQUENCE_STYLE);
		for (it = n->data.sequence.items.start; out && it < n->data.sequence.items.top; it++) {
			v = copy_node(src, *it, dst, flow, depth + 1);
			if (!v || !yaml_document_append_sequence_item(dst, out, v))
				return 0;
		}
		return out;
	case YAML_MAPPING_NODE:
		out = yaml_document_add_mapping(dst, NULL, flow ? YAML_FLOW_MAPPING_STYLE
								 : YAML_BLOCK_MAPPING_STYLE);
		for (pr = n->data.mapping.pairs.start; out && pr < n->data.mapping.pairs.top; pr++) {
			k = copy_node(src, pr->key, dst, flow, depth + 1);
			v = k ? copy_node(src, pr->value, dst, flow, depth + 1) : 0;
			if (!v || !yaml_document_append_mapping_pair(dst, out, k, v))
				return 0;
		}
		return out;
	case YAML_NO_NODE:
		break;
	}
	return 0;
}

/* Emit doc (taken) into s; 0 or -ENOMEM. */
static int dump(yaml_document_t *doc, struct sink *s)
{
	yaml_emitter_t e;
	int ok;

	if (!yaml_emitter_initialize(&e)) {
		yaml_document_delete(doc);
		return -ENOMEM;
	}
	yaml_emitter_set_output(&e, sink_write, s);
	yaml_emitter_set_width(&e, -1);
	yaml_emitter_set_unicode(&e, 1);
	ok = yaml_emitter_open(&e) && yaml_emitter_dump(&e, doc) && yaml_emitter_close(&e);
	yaml_emitter_delete(&e);
	return ok ? 0 : -ENOMEM;
}

static bool key_is(yaml_document_t *d, int id, const char *k)
{
	yaml_node_t *n = yaml_document_get_node(d, id);

	return n && n->type == YAML_SCALAR_NODE && !strcmp((const char *)n->data.scalar.value, k);
}

/* Copy root[from] (or the root without allow and mode, item < 0) into a
 * document of its own and emit it. */
static int emit_part(yaml_document_t *src, int id, bool flow, bool drop_keys, struct sink *s)
{
	yaml_document_t d;
	yaml_node_t *root = yaml_document_get_node(src, id);
	yaml_node_pair_t *pr;
	int out;

	if (!yaml_document_initialize(&d, NULL, NULL, NULL, 1, 1))
		return -ENOMEM;
	if (!drop_keys) {
		out = copy_node(src, id, &d, flow, 0);
	} else {
		out = yaml_document_add_mapping(&d, NULL, YAML_BLOCK_MAPPING_STYLE);
		for (pr = root->data.mapping.pairs.start; out && pr < root->data.mapping.pairs.top;
		     pr++) {
			int k, v;

			if (key_is(src, pr->key, "allow") || key_is(src, pr->key, "mode"))
				continue;
			k = copy_node(src, pr->key, &d, false, 0);
			v = k ? copy_node(src, pr->value, &d, false, 0) : 0;
			if (!v || !yaml_document_append_mapping_pair(&d, out, k, v))
				out = 0;
		}
	}
	if (!out) {
		yaml_document_delete(&d);
		return -ENOMEM;
	}
	return dump(&d, s);
}

/* An emitted flow item as one list entry, continuation lines indented
 * under it, the document end marker dropped. */
static void put_item(FILE *f, const char *text)
{
	size_t n = strlen(text);

	while (n && text[n - 1] == '\n')
		n--;
	if (n >= 3 && !strncmp(text + n - 3, "...", 3) && (n == 3 || text[n - 4] == '\n'))
		n -= 3;
	while (n && text[n - 1] == '\n')
		n--;
	fputs("  - ", f);
	for (size_t i = 0; i < n; i++) {
		fputc(text[i], f);
		if (text[i] == '\n')
			fputs("    ", f);
	}
	fputc('\n', f);
}

static int emit_base(FILE *f, const char *buf, size_t len, bool *ret_has_allow)
{
	yaml_parser_t p;
	yaml_document_t doc;
	yaml_node_t *root, *allow = NULL;
	yaml_node_pair_t *pr;
	yaml_node_item_t *it;
	struct sink s = {0};
	int r = 0;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, &doc)) {
		yaml_parser_delete(&p);
		return -EINVAL;
	}
	yaml_parser_delete(&p);
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		yaml_document_delete(&doc);
		return -EINVAL;
	}
	r = emit_part(&doc, 1 + (int)(root - doc.nodes.start), false, true, &s);
	if (r == 0 && s.buf)
		fputs(s.buf, f);
	fputs("allow:\n", f);
	for (pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++)
		if (key_is(&doc, pr->key, "allow"))
			allow = yaml_document_get_node(&doc, pr->value);
	*ret_has_allow = false;
	for (it = allow && allow->type == YAML_SEQUENCE_NODE ? allow->data.sequence.items.start
							     : NULL;
	     r == 0 && it && it < allow->data.sequence.items.top; it++) {
		s.len = 0;
		r = emit_part(&doc, *it, true, false, &s);
		if (r == 0 && s.buf)
			put_item(f, s.buf);
		*ret_has_allow = true;
	}
	free(s.buf);
	yaml_document_delete(&doc);
	return r;
}

int sl_learn_emit(const struct sl_learn *l, const char *source, const char *base_name,
		  const char *base_buf, size_t base_len, char **ret, size_t *ret_len)
{
	struct sl_learn_rule *rules = NULL;
	size_t n = 0, i, len = 0;
	bool base_allow = false;
	char *out = NULL;
	FILE *f;
	int r;

	r = sl_learn_rules(l, &rules, &n);
	if (r < 0)
		return r;
	f = open_memstream(&out, &len);
	if (!f) {
		sl_learn_rules_free(rules, n);
		return -ENOMEM;
	}
	header(f, l, source, base_buf ? base_name : NULL);
	if (base_buf) {
		fputs("\n# ---- from the base policy ----\n", f);
		r = emit_base(f, base_buf, base_len, &base_allow);
	} else {
		fputs("version: 1\nallow:\n", f);
	}
	if (r == 0 && base_buf)
		fprintf(f, "\n  # ---- learned: %zu rule%s ----\n", n, n == 1 ? "" : "s");
	for (i = 0; r == 0 && i < n; i++)
		rule(f, &rules[i], l->base);
	if (r == 0 && !n && !base_allow)
		fputs("  []\n", f);
	sl_learn_rules_free(rules, n);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(out);
		return r;
	}
	*ret = out;
	*ret_len = len;
	return 0;
}
