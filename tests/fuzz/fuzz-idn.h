/* SPDX-License-Identifier: MIT */
/*
 * For the harnesses whose input reaches host normalisation: names in
 * Unicode take libidn2, loaded when first needed (policy/host.c). Without
 * it every one would be refused, and IDNA go unfuzzed unseen: the harness
 * loads it first and aborts if it cannot. Included once, by the harness.
 */
#pragma once

#include <stdlib.h>

#include "host.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (sl_host_idn_load() < 0)
		abort();
	return 0;
}
