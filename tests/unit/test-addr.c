/* SPDX-License-Identifier: MIT */
/* The addresses the gateway refuses to connect to (SSRF, DNS rebinding). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"

static const char *special(const char *text)
{
	uint8_t a[16];

	if (inet_pton(AF_INET, text, a) == 1)
		return sl_gw_addr_special(AF_INET, a);
	if (inet_pton(AF_INET6, text, a) == 1)
		return sl_gw_addr_special(AF_INET6, a);
	fail_msg("bad test address %s", text);
	return NULL;
}

#define SPECIAL(text, want)                                                                        \
	do {                                                                                       \
		const char *_s = special(text);                                                    \
		if (!_s || strcmp(_s, want))                                                       \
			fail_msg("%s: got %s, want %s", text, _s ? _s : "(public)", want);          \
	} while (0)

#define PUBLIC(text)                                                                               \
	do {                                                                                       \
		const char *_s = special(text);                                                    \
		if (_s)                                                                            \
			fail_msg("%s: got %s, want public", text, _s);                             \
	} while (0)

static void test_ipv4(void **state)
{
	SPECIAL("169.254.169.254", "metadata");
	SPECIAL("169.254.1.1", "link-local");
	SPECIAL("127.0.0.1", "loopback");
	SPECIAL("127.255.255.254", "loopback");
	SPECIAL("10.1.2.3", "private");
	SPECIAL("172.16.0.1", "private");
	SPECIAL("172.31.255.255", "private");
	SPECIAL("192.168.0.1", "private");
	SPECIAL("100.64.0.1", "cgnat");
	SPECIAL("100.127.255.255", "cgnat");
	SPECIAL("0.0.0.0", "unspecified");
	SPECIAL("0.1.2.3", "unspecified");
	SPECIAL("224.0.0.1", "multicast");
	SPECIAL("255.255.255.255", "reserved");
	SPECIAL("240.0.0.1", "reserved");
	SPECIAL("192.0.0.170", "ietf-protocol");
	SPECIAL("198.18.0.1", "benchmarking");
	PUBLIC("172.32.0.1");
	PUBLIC("172.15.255.255");
	PUBLIC("100.128.0.1");
	PUBLIC("8.8.8.8");
	/* The test world lives on TEST-NET-3; it must stay reachable. */
	PUBLIC("203.0.113.7");
	PUBLIC("198.51.100.7");
}

static void test_ipv6(void **state)
{
	SPECIAL("::1", "loopback");
	SPECIAL("::", "unspecified");
	SPECIAL("fe80::1", "link-local");
	SPECIAL("febf::1", "link-local");
	SPECIAL("fec0::1", "site-local");
	SPECIAL("fc00::1", "private");
	SPECIAL("fd12:3456::1", "private");
	SPECIAL("ff02::1", "multicast");
	SPECIAL("fd00:ec2::254", "metadata");
	SPECIAL("100::1", "discard");
	PUBLIC("2001:db8::1");
	PUBLIC("2606:4700::1111");
}

static void test_embedded_ipv4(void **state)
{
	/* Each embedding of a special IPv4 address is as special as it. */
	SPECIAL("::ffff:127.0.0.1", "loopback");
	SPECIAL("::ffff:169.254.169.254", "metadata");
	SPECIAL("::ffff:10.0.0.1", "private");
	PUBLIC("::ffff:203.0.113.7");
	SPECIAL("64:ff9b::7f00:1", "loopback");
	SPECIAL("64:ff9b::a9fe:a9fe", "metadata");
	PUBLIC("64:ff9b::cb00:7107");
	SPECIAL("64:ff9b:1::1", "nat64-local");
	SPECIAL("::127.0.0.1", "ipv4-compatible");
	SPECIAL("::8.8.8.8", "ipv4-compatible");
	SPECIAL("2002:7f00:1::1", "loopback");
	SPECIAL("2002:a9fe:a9fe::", "metadata");
	PUBLIC("2002:cb00:7107::1");
	/* Teredo: server in bytes 4..7, client inverted in the last four. */
	SPECIAL("2001:0:7f00:1::", "loopback");
	SPECIAL("2001:0:cb00:7107::80ff:fffe", "loopback");  /* ~7f000001 */
	SPECIAL("2001:0:cb00:7107::5601:5601", "metadata");  /* ~a9fea9fe */
	PUBLIC("2001:0:cb00:7107::34ff:8ef8");               /* ~cb007107 */
}

static void test_other_family(void **state)
{
	uint8_t a[16] = { 0 };

	assert_string_equal(sl_gw_addr_special(AF_UNIX, a), "unknown-family");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_embedded_ipv4),
		cmocka_unit_test(test_other_family),
	};
	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
