/* SPDX-License-Identifier: MIT */
/*
 * Classifying a connection's first bytes (first-flight.h). Deliberately
 * narrow: a method is 1 to 15 upper-case letters and a space, as every
 * method the policy can name is; anything else that is not a TLS record is
 * "other", so it can never slip through as HTTP nor as opaque bytes by
 * default.
 */
#include "first-flight.h"

#define METHOD_MAX 15

enum sl_flight sl_first_flight(const char *p, size_t len, size_t *skip)
{
	size_t i = 0, m;

	*skip = 0;
	if (len == 0)
		return SL_FLIGHT_MORE;
	if ((unsigned char)p[0] == 0x16)
		return SL_FLIGHT_TLS;
	/* Empty lines before the request line: what a server skips must be
	 * skipped here too, or "\r\nGET" would pass as something else. */
	while (i < len && (p[i] == '\r' || p[i] == '\n')) {
		if (p[i] == '\r' && (i + 1 == len || p[i + 1] != '\n')) {
			if (i + 1 == len)
				return SL_FLIGHT_MORE;
			return SL_FLIGHT_OTHER; /* a bare CR */
		}
		i += p[i] == '\r' ? 2 : 1;
		if (i > SL_FLIGHT_MAX_SKIP)
			return SL_FLIGHT_OTHER;
	}
	for (m = 0; i + m < len; m++) {
		char ch = p[i + m];

		if (ch == ' ') {
			if (m == 0)
				return SL_FLIGHT_OTHER;
			*skip = i;
			return SL_FLIGHT_HTTP;
		}
		if (ch < 'A' || ch > 'Z' || m == METHOD_MAX)
			return SL_FLIGHT_OTHER;
	}
	return SL_FLIGHT_MORE;
}
