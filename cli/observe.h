/* SPDX-License-Identifier: MIT */
/* Observe mode at the command line (docs/observe.md). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "policy.h"

/* --observe: the policy is in observe mode whatever its `mode:` says. */
void sl_cli_observe_force(struct sl_policy *p, bool observe);

/* When p is in observe mode, say so loudly on f (run's, attach's and
 * gateway's stderr at start and at each reload; check's stdout): the
 * rules do not hold, and what still does. Nothing in enforce mode. */
void sl_cli_observe_banner(FILE *f, const char *prog, const struct sl_policy *p);
