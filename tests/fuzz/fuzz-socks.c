/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for SOCKS5's parsers (socks-wire.h), which read what
 * the sandbox sends first on the proxy port. The input is split in two at
 * its first byte's value: a greeting, then a request. Beyond not reading
 * past either (ASan), it checks:
 *   - a greeting's length is 2 + NMETHODS, never more than was given;
 *   - a request taken is a CONNECT whose host is NUL-terminated, as long
 *     as host_len says, holds no byte a host name may not (and for ATYP 4
 *     is bracketed), and whose port is not 0;
 *   - reading on never changes a verdict: every prefix of the request is
 *     "more" or the same answer (so bytes in pieces decide as bytes whole).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "socks-wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(const uint8_t *p, size_t n)
{
	struct sl_socks_request q, t;
	enum sl_socks_reply rep, r2;
	int k = sl_socks_parse_request(p, n, &q, &rep), k2;

	if (k > (int)n || k > SL_SOCKS_REQUEST_MAX)
		abort();
	if (k > 0) {
		if (q.cmd != SL_SOCKS_CMD_CONNECT || q.port == 0 || q.host_len == 0 ||
		    q.host_len >= SL_SOCKS_HOST_BUF || strlen(q.host) != q.host_len)
			abort();
		for (size_t i = 0; i < q.host_len; i++)
			if ((unsigned char)q.host[i] <= 0x20 || (unsigned char)q.host[i] >= 0x7f)
				abort();
		if (q.atyp == SL_SOCKS_ATYP_IPV6 &&
		    (q.host[0] != '[' || q.host[q.host_len - 1] != ']'))
			abort();
		if (q.atyp == SL_SOCKS_ATYP_DOMAIN && strpbrk(q.host, ":[]/@\\"))
			abort();
	}
	for (size_t i = 0; i < n; i++) {
		k2 = sl_socks_parse_request(p, i, &t, &r2);
		if (k2 != 0 && k2 != k)
			abort();
		if (k2 < 0 && r2 != rep)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cut;
	bool no_auth;
	int k;

	if (size == 0)
		return 0;
	cut = data[0] < size - 1 ? data[0] : size - 1;
	data++;
	size--;
	k = sl_socks_parse_greeting(data, cut, &no_auth);
	if (k > (int)cut || (k > 0 && (k != 2 + data[1] || k > SL_SOCKS_GREETING_MAX)))
		abort();
	if (k <= 0 && no_auth)
		abort();
	check_request(data + cut, size - cut);
	return 0;
}
