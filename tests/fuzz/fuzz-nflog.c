/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for sl_nft_blocked_parse(), the parser of the packet
 * headers NFLOG copies from the sandbox (bytes a sandboxed program chose).
 * Beyond not reading out of bounds, it checks what the audit record rests
 * on:
 *   - a parsed packet's family is the version nibble's, its addresses are
 *     the header's own bytes in text form, and for IPv4 its protocol is the
 *     header's;
 *   - ports are set only with has_l4, and only for port protocols;
 *   - the family hint is obeyed: the other family's hint is refused, and
 *     AF_UNSPEC gives the same answer as the right hint;
 *   - a failure leaves the result untouched.
 */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

static void check_addr(int family, const char *text, const uint8_t *raw)
{
	uint8_t back[16];

	CHECK(memchr(text, '\0', 46) != NULL);
	CHECK(inet_pton(family, text, back) == 1);
	CHECK(memcmp(back, raw, family == AF_INET ? 4 : 16) == 0);
}

/* Field by field: padding bytes need not survive a struct copy. */
static int same(const struct sl_nft_blocked *a, const struct sl_nft_blocked *b)
{
	return a->family == b->family && a->proto == b->proto && !strcmp(a->src, b->src) &&
	       !strcmp(a->dst, b->dst) && a->sport == b->sport && a->dport == b->dport &&
	       a->icmp_type == b->icmp_type && a->has_l4 == b->has_l4 &&
	       a->uid_or_minus1 == b->uid_or_minus1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_nft_blocked b, again, untouched;
	int r, r2, other;

	memset(&untouched, 0x5a, sizeof(untouched));
	b = untouched;
	r = sl_nft_blocked_parse(data, size, AF_UNSPEC, &b);
	if (r < 0) {
		CHECK(r == -EBADMSG || r == -EPROTONOSUPPORT);
		CHECK(memcmp(&b, &untouched, sizeof(b)) == 0);
		return 0;
	}
	CHECK(r == 0 && size >= 20);
	CHECK(b.uid_or_minus1 == (uint32_t)-1);
	if (b.family == AF_INET) {
		CHECK(data[0] >> 4 == 4);
		CHECK((size_t)(data[0] & 0xf) * 4 <= size);
		CHECK(b.proto == data[9]);
		check_addr(AF_INET, b.src, data + 12);
		check_addr(AF_INET, b.dst, data + 16);
		other = AF_INET6;
	} else {
		CHECK(b.family == AF_INET6 && data[0] >> 4 == 6 && size >= 40);
		check_addr(AF_INET6, b.src, data + 8);
		check_addr(AF_INET6, b.dst, data + 24);
		other = AF_INET;
	}
	switch (b.proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		if (!b.has_l4)
			CHECK(b.sport == 0 && b.dport == 0);
		break;
	default:
		CHECK(b.sport == 0 && b.dport == 0);
		if (b.has_l4)
			CHECK((b.family == AF_INET && b.proto == IPPROTO_ICMP) ||
			      (b.family == AF_INET6 && b.proto == IPPROTO_ICMPV6));
		break;
	}

	again = untouched;
	r2 = sl_nft_blocked_parse(data, size, b.family, &again);
	CHECK(r2 == 0 && same(&again, &b));
	again = untouched;
	CHECK(sl_nft_blocked_parse(data, size, other, &again) == -EPROTONOSUPPORT);
	CHECK(memcmp(&again, &untouched, sizeof(again)) == 0);
	return 0;
}
