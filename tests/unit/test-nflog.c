/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of sl_nft_blocked_parse(), the parser of the packet headers
 * NFLOG copies: hand-built IPv4 and IPv6 packets of each protocol the
 * sandbox can send, every truncation of each, and the malformed headers a
 * hostile program could make its kernel send. No root, no socket.
 */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "nft.h"

#define IP4_SRC 10, 231, 0, 2
#define IP4_DST 203, 0, 113, 99

/* An IPv4 header (total length = total) with protocol `proto`, no options. */
static size_t ip4(uint8_t *p, uint8_t proto, uint16_t total)
{
	const uint8_t h[20] = {
	    0x45,	    0,	     (uint8_t)(total >> 8),
	    (uint8_t)total, 0x12,    0x34,
	    0x40,	    0,	     64,
	    proto,	    0,	     0,
	    IP4_SRC,	    IP4_DST,
	};

	memcpy(p, h, sizeof(h));
	return sizeof(h);
}

static size_t ip6(uint8_t *p, uint8_t nh, uint16_t plen)
{
	uint8_t h[40] = {0x60, 0, 0, 0, (uint8_t)(plen >> 8), (uint8_t)plen, nh, 64};

	inet_pton(AF_INET6, "2001:db8:1::2", h + 8);
	inet_pton(AF_INET6, "2001:db8::99", h + 24);
	memcpy(p, h, sizeof(h));
	return sizeof(h);
}

static size_t ports(uint8_t *p, uint16_t sport, uint16_t dport, size_t hdrlen)
{
	memset(p, 0, hdrlen);
	p[0] = (uint8_t)(sport >> 8);
	p[1] = (uint8_t)sport;
	p[2] = (uint8_t)(dport >> 8);
	p[3] = (uint8_t)dport;
	return hdrlen;
}

static void parse_ok(const uint8_t *p, size_t len, int hint, struct sl_nft_blocked *b)
{
	memset(b, 0xa5, sizeof(*b));
	assert_int_equal(sl_nft_blocked_parse(p, len, hint, b), 0);
	assert_int_equal(b->uid_or_minus1, (uint32_t)-1);
}

static void test_ipv4_tcp(void **state)
{
	uint8_t p[40];
	struct sl_nft_blocked b;
	size_t n = ip4(p, IPPROTO_TCP, 40);

	n += ports(p + n, 40000, 80, 20);
	(void)state;
	parse_ok(p, n, AF_INET, &b);
	assert_int_equal(b.family, AF_INET);
	assert_int_equal(b.proto, IPPROTO_TCP);
	assert_string_equal(b.src, "10.231.0.2");
	assert_string_equal(b.dst, "203.0.113.99");
	assert_int_equal(b.sport, 40000);
	assert_int_equal(b.dport, 80);
	assert_true(b.has_l4);
	/* The family may come from the version nibble alone. */
	parse_ok(p, n, AF_UNSPEC, &b);
	assert_int_equal(b.family, AF_INET);
	assert_int_equal(b.dport, 80);
}

static void test_ipv4_udp_padding(void **state)
{
	uint8_t p[64] = {0};
	struct sl_nft_blocked b;
	size_t n = ip4(p, IPPROTO_UDP, 28);

	n += ports(p + n, 5353, 53, 8);
	(void)state;
	/* Link padding past the total length is not part of the packet. */
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_int_equal(b.proto, IPPROTO_UDP);
	assert_int_equal(b.sport, 5353);
	assert_int_equal(b.dport, 53);
	assert_true(b.has_l4);
	/* A total length that ends inside the ports: no L4 fields, no
	 * reading into the padding. */
	p[2] = 0;
	p[3] = 22;
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_false(b.has_l4);
	assert_int_equal(b.sport, 0);
	assert_int_equal(b.dport, 0);
}

static void test_ipv4_icmp(void **state)
{
	uint8_t p[28];
	struct sl_nft_blocked b;
	size_t n = ip4(p, IPPROTO_ICMP, 28);

	(void)state;
	memset(p + n, 0, 8);
	p[n] = 8; /* echo request */
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_int_equal(b.proto, IPPROTO_ICMP);
	assert_int_equal(b.icmp_type, 8);
	assert_true(b.has_l4);
	assert_int_equal(b.sport, 0);
	assert_int_equal(b.dport, 0);
}

static void test_ipv4_options(void **state)
{
	uint8_t p[60 + 20] = {0};
	struct sl_nft_blocked b;

	(void)state;
	ip4(p, IPPROTO_TCP, sizeof(p));
	p[0] = 0x4f; /* IHL 15: 40 bytes of options */
	ports(p + 60, 1234, 443, 20);
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_int_equal(b.dport, 443);
	assert_int_equal(b.sport, 1234);
	/* Options cut off by the copy: the header itself is not whole. */
	assert_int_equal(sl_nft_blocked_parse(p, 59, AF_INET, &b), -EBADMSG);
}

static void test_ipv4_bad_ihl(void **state)
{
	uint8_t p[40];
	struct sl_nft_blocked b = {.proto = 77};

	(void)state;
	ip4(p, IPPROTO_TCP, 40);
	ports(p + 20, 1, 2, 20);
	for (uint8_t ihl = 0; ihl < 5; ihl++) {
		p[0] = (uint8_t)(0x40 | ihl);
		assert_int_equal(sl_nft_blocked_parse(p, sizeof(p), AF_INET, &b), -EBADMSG);
	}
	/* IHL 15 claims 60 bytes; only 40 are there. */
	p[0] = 0x4f;
	assert_int_equal(sl_nft_blocked_parse(p, sizeof(p), AF_INET, &b), -EBADMSG);
	/* A total length below the header. */
	p[0] = 0x45;
	p[2] = 0;
	p[3] = 19;
	assert_int_equal(sl_nft_blocked_parse(p, sizeof(p), AF_INET, &b), -EBADMSG);
	/* ret is written only on success. */
	assert_int_equal(b.proto, 77);
}

static void test_ipv4_fragment(void **state)
{
	uint8_t p[40];
	struct sl_nft_blocked b;

	(void)state;
	ip4(p, IPPROTO_UDP, 40);
	ports(p + 20, 1111, 2222, 20);
	p[6] = 0x00;
	p[7] = 0x10; /* offset 16 * 8: data, not a UDP header */
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_int_equal(b.proto, IPPROTO_UDP);
	assert_false(b.has_l4);
	assert_int_equal(b.dport, 0);
	/* The first fragment (MF set, offset 0) has the header. */
	p[6] = 0x20;
	p[7] = 0;
	parse_ok(p, sizeof(p), AF_INET, &b);
	assert_true(b.has_l4);
	assert_int_equal(b.dport, 2222);
}

static void test_ipv6_tcp_udp_icmp(void **state)
{
	uint8_t p[40 + 20];
	struct sl_nft_blocked b;

	(void)state;
	ip6(p, IPPROTO_TCP, 20);
	ports(p + 40, 50000, 443, 20);
	parse_ok(p, sizeof(p), AF_INET6, &b);
	assert_int_equal(b.family, AF_INET6);
	assert_int_equal(b.proto, IPPROTO_TCP);
	assert_string_equal(b.src, "2001:db8:1::2");
	assert_string_equal(b.dst, "2001:db8::99");
	assert_int_equal(b.sport, 50000);
	assert_int_equal(b.dport, 443);

	ip6(p, IPPROTO_UDP, 8);
	ports(p + 40, 7, 53, 8);
	parse_ok(p, 48, AF_UNSPEC, &b);
	assert_int_equal(b.proto, IPPROTO_UDP);
	assert_int_equal(b.dport, 53);

	ip6(p, IPPROTO_ICMPV6, 8);
	memset(p + 40, 0, 8);
	p[40] = 128; /* echo request */
	parse_ok(p, 48, AF_INET6, &b);
	assert_int_equal(b.proto, IPPROTO_ICMPV6);
	assert_int_equal(b.icmp_type, 128);
	assert_true(b.has_l4);
	/* ICMP's number in an IPv6 packet is not ICMPv6. */
	p[6] = IPPROTO_ICMP;
	parse_ok(p, 48, AF_INET6, &b);
	assert_false(b.has_l4);
}

static void test_ipv6_extensions(void **state)
{
	uint8_t p[40 + 8 + 16 + 8 + 8] = {0};
	struct sl_nft_blocked b;
	size_t off = 40;

	(void)state;
	ip6(p, IPPROTO_HOPOPTS, sizeof(p) - 40);
	p[off] = IPPROTO_DSTOPTS; /* hop-by-hop, 8 bytes */
	p[off + 1] = 0;
	off += 8;
	p[off] = IPPROTO_FRAGMENT; /* destination options, 16 bytes */
	p[off + 1] = 1;
	off += 16;
	p[off] = IPPROTO_UDP; /* fragment, offset 0 */
	off += 8;
	ports(p + off, 4000, 5000, 8);
	parse_ok(p, sizeof(p), AF_INET6, &b);
	assert_int_equal(b.proto, IPPROTO_UDP);
	assert_true(b.has_l4);
	assert_int_equal(b.dport, 5000);

	/* Cut off inside the chain: report the header reached. */
	parse_ok(p, 40 + 8 + 1, AF_INET6, &b);
	assert_int_equal(b.proto, IPPROTO_DSTOPTS);
	assert_false(b.has_l4);

	/* A later fragment: the protocol, but no ports. */
	p[40 + 8 + 16 + 3] = 0x08;
	parse_ok(p, sizeof(p), AF_INET6, &b);
	assert_int_equal(b.proto, IPPROTO_UDP);
	assert_false(b.has_l4);
}

static void test_ipv6_ext_loop(void **state)
{
	uint8_t p[40 + 8 * 12];
	struct sl_nft_blocked b;

	(void)state;
	ip6(p, IPPROTO_DSTOPTS, sizeof(p) - 40);
	for (size_t off = 40; off < sizeof(p); off += 8) {
		memset(p + off, 0, 8);
		p[off] = IPPROTO_DSTOPTS;
	}
	/* The walk is bounded: twelve headers are more than it follows. */
	parse_ok(p, sizeof(p), AF_INET6, &b);
	assert_int_equal(b.proto, IPPROTO_DSTOPTS);
	assert_false(b.has_l4);
}

static void test_family(void **state)
{
	uint8_t p[60];
	struct sl_nft_blocked b;

	(void)state;
	ip4(p, IPPROTO_TCP, 40);
	ports(p + 20, 1, 2, 20);
	assert_int_equal(sl_nft_blocked_parse(p, 40, AF_INET6, &b), -EPROTONOSUPPORT);
	ip6(p, IPPROTO_TCP, 20);
	assert_int_equal(sl_nft_blocked_parse(p, 60, AF_INET, &b), -EPROTONOSUPPORT);
	p[0] = 0x50;
	assert_int_equal(sl_nft_blocked_parse(p, 60, AF_UNSPEC, &b), -EPROTONOSUPPORT);
	assert_int_equal(sl_nft_blocked_parse(p, 0, AF_UNSPEC, &b), -EBADMSG);
	assert_int_equal(sl_nft_blocked_parse(NULL, 10, AF_UNSPEC, &b), -EBADMSG);
	assert_int_equal(sl_nft_blocked_parse(p, 60, AF_UNSPEC, NULL), -EINVAL);
}

/* Every prefix of a good packet: an IP header cut short fails; one that is
 * whole parses, with L4 fields exactly when they are all there. Each cut is
 * copied to a buffer of its own size, so ASan sees any read past it. */
static void truncate_all(const uint8_t *p, size_t len, size_t iphdr, size_t l4need)
{
	for (size_t n = 0; n <= len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		struct sl_nft_blocked b;
		int r;

		assert_non_null(cut);
		memcpy(cut, p, n);
		r = sl_nft_blocked_parse(cut, n, AF_UNSPEC, &b);
		if (n < iphdr) {
			assert_int_equal(r, -EBADMSG);
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(b.has_l4, n >= iphdr + l4need);
		}
		free(cut);
	}
}

static void test_truncated(void **state)
{
	uint8_t p[80];
	size_t n;

	(void)state;
	n = ip4(p, IPPROTO_TCP, 40);
	n += ports(p + n, 1, 2, 20);
	truncate_all(p, n, 20, 4);
	n = ip4(p, IPPROTO_UDP, 28);
	n += ports(p + n, 1, 2, 8);
	truncate_all(p, n, 20, 4);
	n = ip4(p, IPPROTO_ICMP, 28);
	memset(p + n, 8, 8);
	truncate_all(p, n + 8, 20, 1);
	n = ip6(p, IPPROTO_TCP, 20);
	n += ports(p + n, 1, 2, 20);
	truncate_all(p, n, 40, 4);
	n = ip6(p, IPPROTO_ICMPV6, 8);
	memset(p + n, 128, 8);
	truncate_all(p, n + 8, 40, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ipv4_tcp),	      cmocka_unit_test(test_ipv4_udp_padding),
	    cmocka_unit_test(test_ipv4_icmp),	      cmocka_unit_test(test_ipv4_options),
	    cmocka_unit_test(test_ipv4_bad_ihl),      cmocka_unit_test(test_ipv4_fragment),
	    cmocka_unit_test(test_ipv6_tcp_udp_icmp), cmocka_unit_test(test_ipv6_extensions),
	    cmocka_unit_test(test_ipv6_ext_loop),     cmocka_unit_test(test_family),
	    cmocka_unit_test(test_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
