/* SPDX-License-Identifier: MIT */
/*
 * SLUICE_TRACE set in the environment: one line on stderr per step of a
 * sandbox's start and teardown, "sluice-trace MICROSECONDS STEP", the
 * time on CLOCK_MONOTONIC (the clock bench/run-startup.sh reads too), for
 * the bench's per-step breakdown. Unset, a step costs a branch. Header
 * only: netns-helper and the CLI both mark steps; each file looks the
 * variable up once.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void sl_trace(const char *step)
{
	static int on = -1;
	struct timespec ts;

	if (on < 0)
		on = getenv("SLUICE_TRACE") != NULL;
	if (!on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	dprintf(STDERR_FILENO, "sluice-trace %lld %s\n",
		(long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, step);
}
