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
#include <unistd.h>

#include <cmocka.h>

#include "addr.h"
#include "gateway-internal.h"
#include "route.h"

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

static void test_embedded_forms(void **state)
{
	/* SIIT's "IPv4-translated" ::ffff:0:a.b.c.d. */
	SPECIAL("::ffff:0:10.0.0.1", "private");
	SPECIAL("::ffff:0:127.0.0.1", "loopback");
	PUBLIC("::ffff:0:203.0.113.7");
	/* NAT64 with the well-known prefix, written both ways. */
	SPECIAL("64:ff9b::10.0.0.1", "private");
	SPECIAL("64:ff9b::a00:1", "private");
	SPECIAL("64:ff9b::c0a8:101", "private");
	/* 6to4 over each special range, and Teredo whose server is public
	 * but whose (obfuscated) client is private. */
	SPECIAL("2002:a00:1::1", "private");
	SPECIAL("2002:c0a8:101::", "private");
	SPECIAL("2001:0:cb00:7107::f5ff:fffe", "private"); /* ~0a000001 */
}

/* What sl_gw_addr_embedded_v4 finds in one address, as text. */
static size_t embedded(const char *text, char ret[][INET_ADDRSTRLEN], size_t max)
{
	uint8_t a[16], v4[8][4];
	size_t i, n;

	if (inet_pton(AF_INET6, text, a) != 1)
		fail_msg("bad test address %s", text);
	n = sl_gw_addr_embedded_v4(a, v4, max < 8 ? max : 8);
	for (i = 0; i < n; i++)
		inet_ntop(AF_INET, v4[i], ret[i], INET_ADDRSTRLEN);
	return n;
}

static bool embeds(const char *text, const char *want)
{
	char got[8][INET_ADDRSTRLEN];
	size_t i, n = embedded(text, got, 8);

	for (i = 0; i < n; i++)
		if (!strcmp(got[i], want))
			return true;
	return false;
}

static void test_embedded_list(void **state)
{
	char got[8][INET_ADDRSTRLEN];

	assert_true(embeds("::ffff:203.0.113.1", "203.0.113.1"));
	assert_true(embeds("::ffff:0:203.0.113.1", "203.0.113.1"));
	assert_true(embeds("::203.0.113.1", "203.0.113.1"));
	assert_true(embeds("64:ff9b::cb00:7101", "203.0.113.1"));
	/* 64:ff9b:1::/48 with the address where a /48, /56, /64 or /96
	 * prefix puts it (RFC 6052 2.2: byte 8 is skipped). */
	assert_true(embeds("64:ff9b:1:cb00:71:100::", "203.0.113.1"));
	assert_true(embeds("64:ff9b:1:00cb:0:7101::", "203.0.113.1"));
	assert_true(embeds("64:ff9b:1:0:cb:71:100::", "203.0.113.1"));
	assert_true(embeds("64:ff9b:1::cb00:7101", "203.0.113.1"));
	assert_true(embeds("2002:cb00:7101::1", "203.0.113.1"));
	assert_true(embeds("2001:0:cb00:7101::", "203.0.113.1"));     /* Teredo server */
	assert_true(embeds("2001:0:1:1::34ff:8efe", "203.0.113.1"));  /* client ~cb007101 */
	/* An ordinary IPv6 address carries none. */
	assert_int_equal(embedded("2001:db8::1", got, 8), 0);
	assert_int_equal(embedded("fe80::1", got, 8), 0);
	/* max is honoured. */
	assert_int_equal(embedded("64:ff9b:1::cb00:7101", got, 2), 2);
}

/* A test address, IPv4 or IPv6, into ss (zeroed first). */
static void parse_addr(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
	else
		fail_msg("bad test address %s", text);
}

static void add_local(struct sl_gw *gw, const char *text)
{
	parse_addr(text, &gw->local[gw->n_local++]);
}

static bool is_local(struct sl_gw *gw, const char *text)
{
	struct sockaddr_storage ss;

	parse_addr(text, &ss);
	return sl_gw_is_local(gw, (const struct sockaddr *)&ss);
}

#define LOCAL(gw, text)                                                                            \
	do {                                                                                       \
		if (!is_local(gw, text))                                                           \
			fail_msg("%s: not recognised as the host's own", text);                    \
	} while (0)
#define NOT_LOCAL(gw, text)                                                                        \
	do {                                                                                       \
		if (is_local(gw, text))                                                            \
			fail_msg("%s: taken for the host's own", text);                            \
	} while (0)

static void test_own_address(void **state)
{
	struct sockaddr_storage local[4];
	/* The kernel is asked too (route.h): TEST-NET addresses are no
	 * local route of any machine the tests run on. */
	struct sl_gw gw = { .local = local, .rt_fd = sl_gw_route_open() };

	assert_true(gw.rt_fd >= 0);
	add_local(&gw, "203.0.113.1");
	add_local(&gw, "2001:db8::1");
	LOCAL(&gw, "203.0.113.1");
	LOCAL(&gw, "2001:db8::1");
	/* The host's IPv4 address in every IPv6 dress. */
	LOCAL(&gw, "::ffff:203.0.113.1");
	LOCAL(&gw, "::ffff:0:203.0.113.1");
	LOCAL(&gw, "::203.0.113.1");
	LOCAL(&gw, "64:ff9b::203.0.113.1");
	LOCAL(&gw, "64:ff9b:1::cb00:7101");
	LOCAL(&gw, "64:ff9b:1:cb00:71:100::");
	LOCAL(&gw, "2002:cb00:7101::1");
	LOCAL(&gw, "2002:cb00:7101:ffff::");
	LOCAL(&gw, "2001:0:cb00:7101::");
	LOCAL(&gw, "2001:0:1:1::34ff:8efe");
	/* Neighbours are not the host. */
	NOT_LOCAL(&gw, "203.0.113.2");
	NOT_LOCAL(&gw, "::ffff:203.0.113.2");
	NOT_LOCAL(&gw, "64:ff9b::203.0.113.2");
	NOT_LOCAL(&gw, "2002:cb00:7102::1");
	NOT_LOCAL(&gw, "2001:db8::2");
	/* An IPv6 address whose last bytes happen to spell the host's IPv4
	 * address is not an embedding. */
	NOT_LOCAL(&gw, "2001:db8::cb00:7101");
	/* Loopback is routed to the host whatever the list holds. */
	LOCAL(&gw, "127.0.0.2");
	LOCAL(&gw, "::1");
	close(gw.rt_fd);
	/* A kernel that cannot be asked: every address is the host's. */
	gw.rt_fd = -1;
	LOCAL(&gw, "203.0.113.2");
}

static bool is_owned(const struct sl_gw *gw, const char *text)
{
	struct sockaddr_storage ss;

	parse_addr(text, &ss);
	return sl_gw_is_owned(gw, (const struct sockaddr *)&ss);
}

/* sluice's sandbox pool (cfg.owned), in every dress, and only it. */
static void test_owned_ranges(void **state)
{
	struct sl_gw gw = { 0 };
	static const char *in[] = { "10.231.0.2", "10.231.255.254", "::ffff:10.231.0.6",
				    "64:ff9b::10.231.0.1", "2002:ae7:1::1", "10.20.128.1" };
	static const char *out[] = { "10.230.255.255", "10.232.0.0", "10.20.0.1", "203.0.113.1",
				     "2001:db8::10.231.0.2" };
	size_t i;

	assert_false(is_owned(&gw, "10.231.0.2")); /* none configured: nothing owned */
	gw.cfg.owned[0] = (struct sl_cidr){ .family = AF_INET, .addr = { 10, 231 }, .prefix = 16 };
	gw.cfg.owned[1] = (struct sl_cidr){ .family = AF_INET, .addr = { 10, 20, 128 }, .prefix = 17 };
	gw.cfg.n_owned = 2;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		if (!is_owned(&gw, in[i]))
			fail_msg("%s: not taken for sluice's own", in[i]);
	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		if (is_owned(&gw, out[i]))
			fail_msg("%s: taken for sluice's own", out[i]);
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
		cmocka_unit_test(test_embedded_forms),
		cmocka_unit_test(test_embedded_list),
		cmocka_unit_test(test_own_address),
		cmocka_unit_test(test_owned_ranges),
		cmocka_unit_test(test_other_family),
	};
	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
