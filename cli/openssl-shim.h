/* SPDX-License-Identifier: MIT */
/*
 * OpenSSL, loaded when first needed (openssl-shim.c). The sluice executable
 * does not link libssl and libcrypto: their loading and relocation are
 * 1.7 ms of every start, and `sluice run` without --policy (nothing can be
 * inspected) and most other commands never call them. Each OpenSSL
 * function the executable calls is a stub (gen-openssl-shim.py, from
 * openssl.syms; one missing there links libssl back, which
 * tests/cli/test-lazy-libraries.sh catches) that jumps through a
 * table sl_ossl_load() fills, then makes read-only. Called before it, a
 * stub aborts. Only on x86_64 (SL_OSSL_LAZY); elsewhere OpenSSL is linked.
 */
#pragma once

#include <stddef.h>

#ifdef SL_OSSL_LAZY
/* Load libssl.so.3 (and with it libcrypto.so.3) and bind every stub, once
 * (thread-safe; later calls say the first one's result). 0, or a negative
 * errno with err saying what is missing. */
int sl_ossl_load(char *err, size_t errlen);
#else
static inline int sl_ossl_load(char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return 0;
}
#endif
