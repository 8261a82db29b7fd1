/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the first-flight classifier (first-flight.h), which
 * decides whether a tunnel's or a captured connection's first bytes are
 * parsed as TLS, as HTTP, or refused. Beyond not crashing, it checks:
 *   - a verdict other than "more" never changes when more bytes follow, so
 *     reading on never turns a refused flight into an accepted one;
 *   - every prefix of a decided input is "more" or the same verdict;
 *   - HTTP means at most SL_FLIGHT_MAX_SKIP bytes of CR/LF, then 1 to 15
 *     upper-case letters and a space, and classifying from *skip on says
 *     HTTP with nothing to skip;
 *   - TLS means the first byte is a handshake record's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "first-flight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	size_t skip = 0, skip2, i;
	enum sl_flight f = sl_first_flight(p, size, &skip), g;

	if (f != SL_FLIGHT_HTTP && skip != 0)
		abort();
	if (f == SL_FLIGHT_TLS && (size == 0 || data[0] != 0x16))
		abort();
	if (f == SL_FLIGHT_HTTP) {
		size_t m = 0;

		if (skip > SL_FLIGHT_MAX_SKIP || skip >= size)
			abort();
		for (i = 0; i < skip; i++)
			if (p[i] != '\r' && p[i] != '\n')
				abort();
		while (skip + m < size && p[skip + m] >= 'A' && p[skip + m] <= 'Z')
			m++;
		if (m < 1 || m > 15 || skip + m >= size || p[skip + m] != ' ')
			abort();
		if (sl_first_flight(p + skip, size - skip, &skip2) != SL_FLIGHT_HTTP || skip2)
			abort();
	}
	/* Prefixes: "more", or already the final verdict (and skip). */
	for (i = 0; i < size && i < 40; i++) {
		g = sl_first_flight(p, i, &skip2);
		if (g != SL_FLIGHT_MORE && (g != f || skip2 != skip))
			abort();
	}
	return 0;
}
