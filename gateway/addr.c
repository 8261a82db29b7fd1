/* SPDX-License-Identifier: MIT */
#include "addr.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

struct range {
	uint8_t addr[16];
	unsigned prefix;
	const char *name;
};

/* RFC 6890 and its successors: everything that is not a unicast address
 * on the public internet. Order matters only for the name reported. */
static const struct range v4_ranges[] = {
	{ { 169, 254, 169, 254 }, 32, "metadata" },
	{ { 0, 0, 0, 0 }, 8, "unspecified" },
	{ { 10, 0, 0, 0 }, 8, "private" },
	{ { 100, 64, 0, 0 }, 10, "cgnat" },
	{ { 127, 0, 0, 0 }, 8, "loopback" },
	{ { 169, 254, 0, 0 }, 16, "link-local" },
	{ { 172, 16, 0, 0 }, 12, "private" },
	{ { 192, 0, 0, 0 }, 24, "ietf-protocol" },
	{ { 192, 168, 0, 0 }, 16, "private" },
	{ { 198, 18, 0, 0 }, 15, "benchmarking" },
	{ { 224, 0, 0, 0 }, 4, "multicast" },
	{ { 240, 0, 0, 0 }, 4, "reserved" }, /* includes 255.255.255.255 */
};

static const struct range v6_ranges[] = {
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128, "metadata" }, /* AWS fd00:ec2::254 */
	{ { 0 }, 128, "unspecified" },
	{ { [15] = 1 }, 128, "loopback" },
	{ { 0x01, 0x00 }, 64, "discard" },
	{ { 0xfe, 0x80 }, 10, "link-local" },
	{ { 0xfe, 0xc0 }, 10, "site-local" },
	{ { 0xfc, 0x00 }, 7, "private" },
	{ { 0xff, 0x00 }, 8, "multicast" },
	{ { 0x20, 0x01, 0x00, 0x02 }, 48, "benchmarking" },
	{ { 0x20, 0x01, 0x00, 0x10 }, 28, "orchid" },
};

static bool in_range(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, full) != 0)
		return false;
	return !rest || ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static const char *v4_special(const uint8_t *a)
{
	size_t i;

	for (i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++)
		if (in_range(a, v4_ranges[i].addr, v4_ranges[i].prefix))
			return v4_ranges[i].name;
	return NULL;
}

size_t sl_gw_addr_embedded_v4(const uint8_t *a, uint8_t ret[][4], size_t max)
{
	static const uint8_t zero[12];
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t translated[12] = { [8] = 0xff, [9] = 0xff };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
	/* Where RFC 6052 2.2 puts the IPv4 address for a /48, /56 and /64
	 * prefix (byte 8, "u", is skipped); /96 is the last four bytes. */
	static const uint8_t layouts[3][4] = { { 6, 7, 9, 10 }, { 7, 9, 10, 11 }, { 9, 10, 11, 12 } };
	size_t n = 0, i, j;

#define ADD(p)                                                                                     \
	do {                                                                                       \
		if (n < max)                                                                       \
			memcpy(ret[n++], (p), 4);                                                  \
	} while (0)
	/* ::ffff:a.b.c.d, ::ffff:0:a.b.c.d (SIIT), ::a.b.c.d (deprecated
	 * "IPv4-compatible") and the NAT64 well-known prefix 64:ff9b::/96
	 * all carry it in their last four bytes. */
	if (!memcmp(a, mapped, 12) || !memcmp(a, translated, 12) || !memcmp(a, zero, 12) ||
	    !memcmp(a, nat64, 12))
		ADD(a + 12);
	/* The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) may be used
	 * whole or with a longer prefix inside it: every place an IPv4 address
	 * could be is a candidate. */
	if (!memcmp(a, nat64_local, 6)) {
		uint8_t v4[4];

		for (i = 0; i < 3; i++) {
			for (j = 0; j < 4; j++)
				v4[j] = a[layouts[i][j]];
			ADD(v4);
		}
		ADD(a + 12);
	}
	/* 6to4, 2002:V4ADDR::/48. */
	if (a[0] == 0x20 && a[1] == 0x02)
		ADD(a + 2);
	/* Teredo, 2001:0000::/32 (RFC 4380 4): the server's address is bytes
	 * 4..7, the client's the last 32 bits, inverted. */
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x00 && a[3] == 0x00) {
		uint8_t v4[4];

		ADD(a + 4);
		for (j = 0; j < 4; j++)
			v4[j] = (uint8_t)~a[12 + j];
		ADD(v4);
	}
#undef ADD
	return n;
}

const char *sl_gw_addr_special(int family, const uint8_t *a)
{
	static const uint8_t zero[12];
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	uint8_t v4[4], embedded[8][4];
	size_t i, n;

	if (family == AF_INET)
		return v4_special(a);
	if (family != AF_INET6)
		return "unknown-family";

	for (i = 0; i < sizeof(v6_ranges) / sizeof(v6_ranges[0]); i++)
		if (in_range(a, v6_ranges[i].addr, v6_ranges[i].prefix))
			return v6_ranges[i].name;

	/* ::ffff:a.b.c.d and the NAT64 well-known prefix 64:ff9b::/96 carry
	 * an IPv4 address in their last four bytes: judge that address. */
	if (!memcmp(a, mapped, 12) || !memcmp(a, nat64, 12))
		return v4_special(a + 12);
	/* ::a.b.c.d, "IPv4-compatible", deprecated since 2006 (RFC 4291
	 * 2.5.5.1): nothing legitimate uses it any more. */
	if (!memcmp(a, zero, 12))
		return "ipv4-compatible";
	/* The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) translates into
	 * whatever the operator's network holds. */
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0x00 &&
	    a[5] == 0x01)
		return "nat64-local";
	/* 6to4, 2002:V4ADDR::/48. */
	if (a[0] == 0x20 && a[1] == 0x02)
		return v4_special(a + 2);
	/* Teredo, 2001:0000::/32: the client's address is the last 32 bits,
	 * inverted; the server's is bytes 4..7. */
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x00 && a[3] == 0x00) {
		const char *s = v4_special(a + 4);

		if (s)
			return s;
		for (i = 0; i < 4; i++)
			v4[i] = (uint8_t)~a[12 + i];
		return v4_special(v4);
	}
	/* Every other embedding (SIIT's ::ffff:0:a.b.c.d, the places inside
	 * the local-use NAT64 prefix) is as special as what it carries. */
	n = sl_gw_addr_embedded_v4(a, embedded, sizeof(embedded) / sizeof(embedded[0]));
	for (i = 0; i < n; i++)
		if (v4_special(embedded[i]))
			return v4_special(embedded[i]);
	return NULL;
}
