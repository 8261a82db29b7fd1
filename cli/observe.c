/* SPDX-License-Identifier: MIT */
#include "observe.h"

void sl_cli_observe_force(struct sl_policy *p, bool observe)
{
	if (observe && p)
		p->mode = SL_MODE_OBSERVE;
}

void sl_cli_observe_banner(FILE *f, const char *prog, const struct sl_policy *p)
{
	if (!p || p->mode != SL_MODE_OBSERVE)
		return;
	fprintf(f,
		"%s: ****************************************************************\n"
		"%s: OBSERVE MODE: the policy's rules are NOT enforced. Requests they would\n"
		"%s: deny are let through and audited as \"observe-deny\". Still enforced: the\n"
		"%s: kernel fence (nothing bypasses the gateway), SSRF refusals (private,\n"
		"%s: own and metadata addresses), protocol checks, credentials only where\n"
		"%s: allow rules inject them, the DNS budget. Never run an untrusted agent\n"
		"%s: with secrets in observe mode longer than needed (docs/observe.md);\n"
		"%s: `sluice learn AUDIT.log` turns what was seen into a policy.\n"
		"%s: ****************************************************************\n",
		prog, prog, prog, prog, prog, prog, prog, prog, prog);
}
