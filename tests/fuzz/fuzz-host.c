/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for host and path normalisation and matching. Beyond not
 * crashing, it checks the properties the policy's safety rests on:
 *   - a normal form is a fixed point (normalising it again changes nothing),
 *     so the policy and the request side can never disagree on a spelling;
 *   - a name's normal form holds only [a-z0-9_.-];
 *   - a decision on any host against a fixed policy is deny unless the
 *     normal form really is the allowed name or lies below the wildcard.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-idn.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sl_policy *policy;

static const char policy_yaml[] = "version: 1\n"
				  "allow:\n"
				  "  - host: allowed.example\n"
				  "  - host: \"*.wild.example\"\n"
				  "  - host: 203.0.113.9\n"
				  "  - host: api.example\n"
				  "    methods: [POST]\n"
				  "    paths: [\"/v1/*\"]\n"
				  "deny:\n"
				  "  - host: bad.wild.example\n"
				  "  - host: api.example\n"
				  "    paths: [\"/v1/admin/*\"]\n";

static void check_host(const char *in, size_t len)
{
	char out[SL_HOST_BUF], again[SL_HOST_BUF];
	enum sl_host_kind kind, kind2;
	const char *why = NULL;
	size_t i, n;

	if (sl_host_normalize(in, len, out, &kind, &why) < 0) {
		if (!why)
			abort();
		return;
	}
	n = strlen(out);
	if (n == 0 || n > 253)
		abort();
	if (kind == SL_HOST_NAME)
		for (i = 0; i < n; i++)
			if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= '0' && out[i] <= '9') ||
			      out[i] == '-' || out[i] == '_' || out[i] == '.'))
				abort();
	if (sl_host_normalize(out, n, again, &kind2, &why) < 0)
		abort();
	if (strcmp(out, again) != 0 || kind != kind2)
		abort();

	/* The decision agrees with the plain meaning of the fixed policy. */
	{
		struct sl_request req = { .host = in, .host_len = len, .port = 443 };
		struct sl_decision d;
		bool should = kind == SL_HOST_NAME
				      ? (!strcmp(out, "allowed.example") || !strcmp(out, "api.example") ||
					 (sl_host_is_below(out, "wild.example") &&
					  strcmp(out, "bad.wild.example") != 0))
				      : !strcmp(out, "203.0.113.9");

		sl_policy_decide(policy, &req, &d);
		if ((d.verdict == SL_VERDICT_ALLOW) != should)
			abort();
	}
}

static void check_path(const char *in, size_t len)
{
	char out[SL_PATH_BUF], again[SL_PATH_BUF];
	const char *why = NULL;
	int n, m;

	n = sl_path_normalize(in, len, out, sizeof(out), &why);
	if (n < 0)
		return;
	if ((size_t)n != strlen(out) || out[0] != '/')
		abort();
	m = sl_path_normalize(out, (size_t)n, again, sizeof(again), &why);
	if (m != n || strcmp(out, again) != 0)
		abort();

	/* Nothing that normalises into /v1/admin/ may be allowed. */
	{
		struct sl_request req = {
			.host = "api.example", .host_len = 11, .port = 443,
			.method = "POST", .path = in, .path_len = len,
		};
		struct sl_decision d;

		sl_policy_decide(policy, &req, &d);
		if (d.verdict == SL_VERDICT_ALLOW && strncmp(out, "/v1/admin/", 10) == 0)
			abort();
		if (d.verdict == SL_VERDICT_ALLOW && strncmp(out, "/v1/", 4) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	if (!policy) {
		struct sl_diags d = { 0 };

		if (sl_policy_load_buffer("fuzz", policy_yaml, sizeof(policy_yaml) - 1, &policy,
					  &d) < 0)
			abort();
	}
	if (size == 0)
		return 0;

	switch (data[0] % 3) {
	case 0:
		check_host(in + 1, size - 1);
		break;
	case 1: {
		const char *host, *why;
		size_t hlen;
		uint16_t port;

		if (sl_host_split(in + 1, size - 1, &host, &hlen, &port, &why) == 0) {
			if (hlen == 0 || hlen > size - 1)
				abort();
			check_host(host, hlen);
		}
		break;
	}
	default:
		check_path(in + 1, size - 1);
		break;
	}
	return 0;
}
