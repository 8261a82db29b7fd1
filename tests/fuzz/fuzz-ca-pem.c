/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the check of the CA certificate the supervisor
 * takes from the gateway's process (sl_ca_pem_is_one_cert, ca-bundle.c):
 * what it takes starts with the BEGIN line, ends with the END line, holds
 * no other "-----", no NUL, no byte outside base64 and newlines between
 * them, and is at most SL_CA_PEM_MAX bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----\n";
	static const char end[] = "-----END CERTIFICATE-----\n";
	const char *p = (const char *)data;
	size_t b = sizeof(begin) - 1, e = sizeof(end) - 1;

	if (!sl_ca_pem_is_one_cert(p, size))
		return 0;
	if (size > SL_CA_PEM_MAX || size < b + e || memcmp(p, begin, b) ||
	    memcmp(p + size - e, end, e))
		abort();
	for (size_t i = b; i < size - e; i++) {
		unsigned char c = (unsigned char)p[i];

		if (!(c == '\n' || c == '+' || c == '/' || c == '=' || (c >= '0' && c <= '9') ||
		      (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
			abort();
	}
	return 0;
}
