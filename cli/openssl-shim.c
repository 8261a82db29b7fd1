/* SPDX-License-Identifier: MIT */
/* OpenSSL, loaded when first needed (openssl-shim.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "openssl-shim-names.h"
#include "openssl-shim.h"

/* The stubs' table (openssl-shim.S): pages of its own. */
extern void *sl_ossl_slots[SL_OSSL_N];

void sl_ossl_unloaded(void);
void sl_ossl_unloaded(void)
{
	static const char msg[] = "sluice: internal error: an OpenSSL function was called "
				  "before OpenSSL was loaded\n";

	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	abort();
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int result;
static char why[256];

static void load(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)sl_ossl_slots, len;
	void *lib, *fn[SL_OSSL_N];

	/* By soname, as the dynamic linker would have found it. */
	lib = dlopen("libssl.so.3", RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		snprintf(why, sizeof(why), "loading OpenSSL: %s", dlerror());
		result = -ENOENT;
		return;
	}
	for (size_t i = 0; i < SL_OSSL_N; i++) {
		fn[i] = dlsym(lib, sl_ossl_names[i]); /* libssl's, or libcrypto's */
		if (!fn[i]) {
			snprintf(why, sizeof(why), "OpenSSL has no %s", sl_ossl_names[i]);
			result = -ENOENT;
			return;
		}
	}
	memcpy(sl_ossl_slots, fn, sizeof(fn));
	/* Read-only from now, as the rest of what the dynamic linker bound
	 * (full RELRO): no pointer here to overwrite. */
	len = (sizeof(fn) + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	if (page <= 0 || start % (uintptr_t)page ||
	    mprotect((void *)start, len, PROT_READ) < 0) {
		snprintf(why, sizeof(why), "making OpenSSL's table read-only: %s",
			 strerror(page <= 0 || start % (uintptr_t)page ? EINVAL : errno));
		result = -EIO;
	}
}

int sl_ossl_load(char *err, size_t errlen)
{
	(void)pthread_once(&once, load);
	if (result < 0 && err && errlen)
		snprintf(err, errlen, "%s", why);
	return result;
}
