/* SPDX-License-Identifier: MIT */
/*
 * sluice check FILE [--decide HOST[:PORT] [METHOD PATH]]
 *
 * Validates a policy and prints it back in normal form (what sluice will
 * actually enforce: normalised hosts, default ports, inspection), or decides
 * one request against it so a policy can be tried without running anything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "macro.h"
#include "observe.h"
#include "policy.h"

static const char *source_name(enum sl_secret_source s)
{
	switch (s) {
	case SL_SECRET_FILE:
		return "file";
	case SL_SECRET_ENV:
		return "env";
	case SL_SECRET_CREDENTIAL:
		return "credential";
	}
	return "?";
}

static void print_rule(const struct sl_policy *p, const struct sl_rule *r)
{
	char id[96];
	size_t i;

	printf("  %s  %s%s", sl_rule_id(r, id, sizeof(id)), r->wildcard ? "*." : "", r->host);
	if (!r->ports)
		printf("  ports any");
	else
		for (i = 0; i < r->n_ports; i++)
			printf("%s%u", i ? "," : "  ports ", r->ports[i]);
	if (r->methods) {
		printf("  methods");
		for (uint32_t bit = 1; bit <= SL_METHOD_PATCH; bit <<= 1)
			if (r->methods & bit)
				printf(" %s", sl_method_to_string(bit));
	}
	if (r->paths) {
		printf("  paths");
		for (i = 0; i < r->n_paths; i++)
			printf(" %s%s", r->paths[i].path, r->paths[i].prefix ? "*" : "");
	}
	if (r->has_inject) {
		printf("  inject %s: \"%s<secret %s>\"", r->inject.header, r->inject.prefix,
		       p->secrets[r->inject.secret].name);
		if (r->inject.placeholder_env)
			printf(" placeholder $%s", r->inject.placeholder_env);
		if (r->inject.require_placeholder)
			printf(" require_placeholder");
	}
	if (r->opaque)
		printf("  protocol tcp");
	if (r->inspect)
		printf("  (inspected)");
	if (r->exact_dns)
		printf("  exact_dns (not answered by the sandbox's DNS)");
	if (r->approve)
		printf("  approve (held for a person's answer, %us at most)",
		       r->approve_timeout_ms / 1000);
	printf("  # line %u\n", r->line);
}

/* A port an inspected rule lists that is not a web port: only TLS (and
 * plain HTTP) gets through there, so an ssh or database client would be
 * refused at run time (inspect-needs-tls); say so now. */
static void warn_inspected_ports(const char *file, const struct sl_policy *p)
{
	size_t i, j;
	char id[96];

	for (i = 0; i < p->n_allow; i++) {
		const struct sl_rule *r = &p->rules[i];

		if (!r->inspect || !r->ports)
			continue;
		for (j = 0; j < r->n_ports; j++) {
			uint16_t port = r->ports[j];

			if (port == 80 || port == 443 || port == 8080 || port == 8443)
				continue;
			fprintf(stderr,
				"%s:%u: warning: %s is inspected, so port %u carries only TLS (its "
				"requests decided inside) or plain HTTP; any other protocol there is "
				"refused (inspect-needs-tls): give that port its own rule with "
				"'protocol: tcp'\n",
				file, r->line, sl_rule_id(r, id, sizeof(id)), port);
		}
	}
}

/* What an allowed connection may carry, as the gateway will enforce it. */
static const char *carries(const struct sl_decision *d)
{
	if (d->verdict != SL_VERDICT_ALLOW)
		return "";
	if (d->inspect)
		return "; requests are inspected: TLS (ended here, each request decided) or plain "
		       "HTTP (each request decided); any other protocol is refused "
		       "(inspect-needs-tls)";
	if (d->rule && d->rule->opaque)
		return "; protocol tcp: any bytes, relayed opaque";
	return "; carries TLS (its SNI must name the host) or plain HTTP (each request's Host "
	       "must name it); any other protocol is refused (not-http)";
}

static void print_summary(const char *file, const struct sl_policy *p)
{
	size_t i;

	printf("%s: valid (version 1): %zu allow rule%s, %zu deny rule%s, %zu secret%s\n", file,
	       p->n_allow, p->n_allow == 1 ? "" : "s", p->n_rules - p->n_allow,
	       p->n_rules - p->n_allow == 1 ? "" : "s", p->n_secrets,
	       p->n_secrets == 1 ? "" : "s");
	if (p->n_secrets) {
		printf("secrets:\n");
		for (i = 0; i < p->n_secrets; i++)
			printf("  %s  %s %s\n", p->secrets[i].name,
			       source_name(p->secrets[i].source), p->secrets[i].ref);
	}
	printf("allow:%s\n", p->n_allow ? "" : " (none: every request is denied)");
	for (i = 0; i < p->n_allow; i++)
		print_rule(p, &p->rules[i]);
	if (p->n_rules > p->n_allow) {
		printf("deny:\n");
		for (i = p->n_allow; i < p->n_rules; i++)
			print_rule(p, &p->rules[i]);
	}
	if (!p->private_allow) {
		printf("private_addresses: deny\n");
	} else {
		printf("private_addresses:");
		for (i = 0; i < p->n_private_allow; i++) {
			const struct sl_cidr *c = &p->private_allow[i];
			char a[64];

			inet_ntop(c->family, c->addr, a, sizeof(a));
			printf(" %s/%u", a, c->prefix);
		}
		printf("%s\n", p->n_private_allow ? "" : " (empty list: none allowed)");
	}
	for (i = 0; i < p->n_allow; i++)
		if (p->rules[i].wildcard) {
			/* What a wildcard costs (docs/policy.md, "dns"). */
			printf("dns: at most %u new names a minute under each wildcard reach the "
			       "upstream resolver\n",
			       sl_policy_dns_new_names(p));
			break;
		}
}

static int decide(const struct sl_policy *p, const char *target, const char *method,
		  const char *path)
{
	struct sl_request req = { 0 };
	struct sl_decision d;
	const char *why = NULL;
	char id[96] = "-", text[512];

	if (sl_host_split(target, strlen(target), &req.host, &req.host_len, &req.port, &why) < 0) {
		fprintf(stderr, "sluice check: --decide '%s': %s\n", target, why);
		return SL_EXIT_USAGE;
	}
	if (req.port == 0)
		req.port = 443;
	if (method) {
		req.method = method;
		req.path = path;
		req.path_len = strlen(path);
	}
	sl_policy_decide(p, &req, &d);
	if (d.rule)
		sl_rule_id(d.rule, id, sizeof(id));
	if (d.observed_rule)
		sl_rule_id(d.observed_rule, id, sizeof(id));
	else if (d.verdict == SL_VERDICT_OBSERVE)
		snprintf(id, sizeof(id), "default");
	printf("%s %s %s: %s%s\n", sl_verdict_to_string(d.verdict), id,
	       sl_reason_to_string(d.reason), sl_policy_explain(p, &req, &d, text, sizeof(text)),
	       !method ? carries(&d)
	       : d.verdict == SL_VERDICT_ALLOW && d.inspect ? "; requests are inspected"
							    : "");
	/* An observe-deny is a deny the rules say: the exit status tells
	 * what enforce mode would do (the line says observe mode lets it by). */
	return d.verdict == SL_VERDICT_ALLOW ? SL_EXIT_OK : SL_EXIT_DENIED;
}

int sl_cmd_check(int argc, char **argv)
{
	_cleanup_(sl_policy_freep) struct sl_policy *p = NULL;
	struct sl_diags diags = { 0 };
	const char *file = NULL, *target = NULL, *method = NULL, *path = NULL;
	int i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--decide")) {
			/* --decide takes the rest of the line: HOST[:PORT], then
			 * optionally METHOD and PATH together. */
			int rest = argc - i - 1;

			if (rest != 1 && rest != 3) {
				fprintf(stderr, "sluice check: --decide takes HOST[:PORT] [METHOD PATH] "
						"and must come last\n");
				return SL_EXIT_USAGE;
			}
			target = argv[i + 1];
			if (rest == 3) {
				method = argv[i + 2];
				path = argv[i + 3];
			}
			break;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: sluice check FILE [--decide HOST[:PORT] [METHOD PATH]]\n");
			return SL_EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "sluice check: unknown option '%s'\n", argv[i]);
			return SL_EXIT_USAGE;
		} else if (!file) {
			file = argv[i];
		} else {
			fprintf(stderr, "sluice check: unexpected argument '%s'\n", argv[i]);
			return SL_EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr, "usage: sluice check FILE [--decide HOST[:PORT] [METHOD PATH]]\n");
		return SL_EXIT_USAGE;
	}

	r = sl_policy_load_file(file, &p, &diags);
	for (size_t k = 0; k < diags.n; k++)
		fprintf(stderr, "%s\n", diags.msgs[k]);
	sl_diags_clear(&diags);
	if (r == -ENOMEM) {
		fprintf(stderr, "sluice check: %s: out of memory\n", file);
		return SL_EXIT_INVALID;
	}
	if (r < 0)
		return SL_EXIT_INVALID;

	warn_inspected_ports(file, p);
	if (target)
		return decide(p, target, method, path);
	print_summary(file, p);
	printf("mode: %s\n", p->mode == SL_MODE_OBSERVE ? "observe (rules NOT enforced)" : "enforce");
	sl_cli_observe_banner(stdout, "sluice check", p);
	return SL_EXIT_OK;
}
