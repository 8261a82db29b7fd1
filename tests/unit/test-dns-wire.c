/* SPDX-License-Identifier: MIT */
/* The DNS wire parser and builder: what the gateway's DNS server accepts
 * from the sandbox, and the replies it sends back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dns-wire.h"

/* A message under construction, written the way a client would. */
struct msg {
	uint8_t b[1024];
	size_t n;
};

static void put(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put8(struct msg *m, uint8_t v)
{
	put(m, &v, 1);
}

static void put16(struct msg *m, uint16_t v)
{
	put8(m, (uint8_t)(v >> 8));
	put8(m, (uint8_t)v);
}

static void put32(struct msg *m, uint32_t v)
{
	put16(m, (uint16_t)(v >> 16));
	put16(m, (uint16_t)v);
}

static void header(struct msg *m, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
		   uint16_t ns, uint16_t ar)
{
	m->n = 0;
	put16(m, id);
	put16(m, flags);
	put16(m, qd);
	put16(m, an);
	put16(m, ns);
	put16(m, ar);
}

/* A dotted name as labels; "" is the root. */
static void name(struct msg *m, const char *dotted)
{
	const char *p = dotted;

	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		put8(m, (uint8_t)l);
		put(m, p, l);
		p += l;
		if (*p == '.')
			p++;
	}
	put8(m, 0);
}

static void opt(struct msg *m, uint16_t udp, uint8_t version, bool dnssec_ok,
		const uint8_t *options, size_t options_len)
{
	put8(m, 0);
	put16(m, SL_DNS_TYPE_OPT);
	put16(m, udp);
	put32(m, (uint32_t)version << 16 | (dnssec_ok ? 0x8000u : 0));
	put16(m, (uint16_t)options_len);
	if (options_len)
		put(m, options, options_len);
}

static void query(struct msg *m, uint16_t id, const char *qname, uint16_t qtype, bool edns)
{
	header(m, id, 0x0100 /* RD */, 1, 0, 0, edns ? 1 : 0);
	name(m, qname);
	put16(m, qtype);
	put16(m, SL_DNS_CLASS_IN);
	if (edns)
		opt(m, 4096, 0, false, NULL, 0);
}

static int parse(const struct msg *m, struct sl_dns_query *q)
{
	return sl_dns_parse_query(m->b, m->n, q);
}

static uint16_t get16(const uint8_t *b, size_t off)
{
	return (uint16_t)(b[off] << 8 | b[off + 1]);
}

static void test_simple(void **state)
{
	struct sl_dns_query q;
	struct msg m;

	query(&m, 0xbeef, "WwW.Example.COM", SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(q.id, 0xbeef);
	assert_true(q.rd);
	assert_false(q.cd);
	assert_int_equal(q.qtype, SL_DNS_TYPE_A);
	assert_int_equal(q.qclass, SL_DNS_CLASS_IN);
	assert_string_equal(q.qname, "www.example.com");
	assert_int_equal(q.qname_len, strlen("www.example.com"));
	assert_false(q.edns);
	/* The question is kept as sent, case and all (DNS 0x20). */
	assert_int_equal(q.question_off, SL_DNS_HEADER_LEN);
	assert_int_equal(q.question_len, m.n - SL_DNS_HEADER_LEN);
	assert_memory_equal(q.question, m.b + SL_DNS_HEADER_LEN, q.question_len);
	assert_int_equal(sl_dns_udp_limit(&q), 512);
}

static void test_names_accepted(void **state)
{
	static const char *const names[] = {
		"_dmarc.x-y.example",
		"a",
		"1.2.3.4.in-addr.arpa",
		"xn--bcher-kva.example",
		"-leading.example",
		"under_score",
		"0.0.0.0",
	};
	struct sl_dns_query q;
	struct msg m;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		query(&m, 1, names[i], SL_DNS_TYPE_AAAA, false);
		assert_int_equal(parse(&m, &q), 0);
		assert_string_equal(q.qname, names[i]);
	}

	/* The root: an empty name, which no policy allows. */
	query(&m, 1, "", SL_DNS_TYPE_NS, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_string_equal(q.qname, "");
	assert_int_equal(q.qname_len, 0);
	assert_int_equal(q.question_len, 5);
}

/* Names whose bytes a host name cannot hold: never allowed, never forwarded,
 * and never passed on to the policy in some lossy spelling. */
static void test_names_unrepresentable(void **state)
{
	static const struct {
		const char *label;
		size_t len;
	} bad[] = {
		{ "a.b", 3 },  /* a dot inside a label: "a.b" would be two labels */
		{ "a\0b", 3 }, /* NUL: C strings would cut the name short */
		{ "a b", 3 },
		{ "\xc3\xa9t\xc3\xa9", 6 }, /* UTF-8: must come as punycode */
		{ "*", 1 },                 /* a wildcard is not a name to ask for */
		{ "a/b", 3 },
		{ "a:b", 3 },
		{ "\x7f", 1 },
		{ "a\\b", 3 },
		{ "@", 1 },
	};
	struct sl_dns_query q;
	struct msg m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		header(&m, 7, 0x0100, 1, 0, 0, 0);
		put8(&m, (uint8_t)bad[i].len);
		put(&m, bad[i].label, bad[i].len);
		name(&m, "example.com");
		put16(&m, SL_DNS_TYPE_A);
		put16(&m, SL_DNS_CLASS_IN);
		assert_int_equal(parse(&m, &q), -EILSEQ);
		assert_int_equal(sl_dns_error_rcode(-EILSEQ), SL_DNS_RCODE_REFUSED);
	}
}

static void test_label_and_name_limits(void **state)
{
	char label[80], longname[300];
	struct sl_dns_query q;
	struct msg m;
	size_t i;

	/* 63 is the longest label. */
	memset(label, 'a', 63);
	label[63] = '\0';
	query(&m, 1, label, SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(q.qname_len, 63);

	memset(label, 'a', 64);
	label[64] = '\0';
	query(&m, 1, label, SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), -EBADMSG);

	/* Four labels of 63 and one of 1: 4*64 + 2 + 1 = 259 wire bytes. Three
	 * of 63 and one of 61: 3*64 + 62 + 1 = 255, the largest name. */
	longname[0] = '\0';
	for (i = 0; i < 3; i++) {
		memset(label, 'b', 63);
		label[63] = '\0';
		strcat(longname, label);
		strcat(longname, ".");
	}
	memset(label, 'c', 61);
	label[61] = '\0';
	strcat(longname, label);
	query(&m, 1, longname, SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(q.qname_len, 253);
	assert_string_equal(q.qname, longname);
	assert_int_equal(q.question_len, 255 + 4);

	/* One more byte is one too many. */
	strcat(longname, "c");
	query(&m, 1, longname, SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), -EBADMSG);

	/* 0x40 and 0x80 are the extended and reserved label types. */
	for (i = 0; i < 2; i++) {
		header(&m, 1, 0, 1, 0, 0, 0);
		put8(&m, i ? 0x80 : 0x41);
		put(&m, "xxxxxxxx", 8);
		put8(&m, 0);
		put16(&m, 1);
		put16(&m, 1);
		assert_int_equal(parse(&m, &q), -EBADMSG);
	}
}

/* A compression pointer in the question, to itself or anywhere else, is
 * malformed: no pointer is ever followed, so no loop can be built. */
static void test_compression_pointers(void **state)
{
	static const uint8_t loops[][8] = {
		{ 0xc0, 0x0c },                   /* to itself */
		{ 3, 'f', 'o', 'o', 0xc0, 0x0c }, /* back to the start */
		{ 3, 'f', 'o', 'o', 0xc0, 0x10 }, /* to itself, mid-name */
		{ 0xc0, 0x00 },                   /* into the header */
		{ 0xff, 0xff },                   /* far away */
	};
	static const size_t lens[] = { 2, 6, 6, 2, 2 };
	struct sl_dns_query q;
	struct msg m;
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		header(&m, 1, 0, 1, 0, 0, 0);
		put(&m, loops[i], lens[i]);
		put16(&m, 1);
		put16(&m, 1);
		assert_int_equal(parse(&m, &q), -EBADMSG);
	}
}

static void test_truncated(void **state)
{
	struct sl_dns_query q;
	struct msg m;
	size_t n;

	query(&m, 0x1234, "api.example", SL_DNS_TYPE_A, true);
	assert_int_equal(parse(&m, &q), 0);
	for (n = 0; n < m.n; n++) {
		int r = sl_dns_parse_query(m.b, n, &q);

		assert_int_equal(r, n < SL_DNS_HEADER_LEN ? -EPROTO : -EBADMSG);
	}

	/* A byte past the end is as wrong as one missing. */
	put8(&m, 0);
	assert_int_equal(parse(&m, &q), -EBADMSG);
}

static void test_header(void **state)
{
	struct sl_dns_query q;
	struct msg m;
	unsigned opcode;

	/* A response is never answered (reflection loops). */
	query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
	m.b[2] |= 0x80;
	assert_int_equal(parse(&m, &q), -EPROTO);
	assert_true(sl_dns_error_rcode(-EPROTO) < 0);

	/* IQUERY, STATUS, NOTIFY, UPDATE, DSO and the unassigned rest. */
	for (opcode = 1; opcode < 16; opcode++) {
		query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
		m.b[2] = (uint8_t)(opcode << 3);
		assert_int_equal(parse(&m, &q), -EOPNOTSUPP);
	}

	/* CD is copied; TC, AA, Z in a query are ignored. */
	query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
	m.b[2] = 0x06; /* AA, TC */
	m.b[3] = 0x70; /* Z, AD, CD */
	assert_int_equal(parse(&m, &q), 0);
	assert_false(q.rd);
	assert_true(q.cd);
}

static void test_counts(void **state)
{
	static const uint16_t counts[][4] = {
		{ 0, 0, 0, 0 }, { 2, 0, 0, 0 }, { 1, 1, 0, 0 },
		{ 1, 0, 1, 0 }, { 1, 0, 0, 2 }, { 0xffff, 0, 0, 0 },
	};
	struct sl_dns_query q;
	struct msg m;
	size_t i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		header(&m, 1, 0, counts[i][0], counts[i][1], counts[i][2], counts[i][3]);
		name(&m, "a.example");
		put16(&m, 1);
		put16(&m, 1);
		/* Supply a real record for each count so only the count is wrong. */
		for (size_t k = 1; k < 4; k++)
			for (uint16_t j = 0; j < counts[i][k]; j++)
				opt(&m, 512, 0, false, NULL, 0);
		assert_int_equal(parse(&m, &q), -EBADMSG);
	}
}

static void test_edns(void **state)
{
	static const uint8_t cookie[] = { 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t bad_option[] = { 0, 10, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct sl_dns_query q;
	struct msg m;

	header(&m, 1, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	opt(&m, 4096, 0, true, cookie, sizeof(cookie));
	assert_int_equal(parse(&m, &q), 0);
	assert_true(q.edns);
	assert_true(q.edns_do);
	assert_int_equal(q.edns_udp_size, 4096);
	assert_int_equal(sl_dns_udp_limit(&q), SL_DNS_EDNS_UDP_SIZE);
	q.edns_udp_size = 100;
	assert_int_equal(sl_dns_udp_limit(&q), 512);
	q.edns_udp_size = 1000;
	assert_int_equal(sl_dns_udp_limit(&q), 1000);

	/* An option that runs past RDLENGTH. */
	header(&m, 1, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	opt(&m, 4096, 0, false, bad_option, sizeof(bad_option));
	assert_int_equal(parse(&m, &q), -EBADMSG);

	/* The OPT record's owner must be the root. */
	header(&m, 1, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	name(&m, "x");
	put16(&m, SL_DNS_TYPE_OPT);
	put16(&m, 512);
	put32(&m, 0);
	put16(&m, 0);
	assert_int_equal(parse(&m, &q), -EBADMSG);

	/* Anything but OPT in the additional section (a TSIG, an A record). */
	header(&m, 1, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	put8(&m, 0);
	put16(&m, SL_DNS_TYPE_A);
	put16(&m, 1);
	put32(&m, 0);
	put16(&m, 4);
	put32(&m, 0x7f000001);
	assert_int_equal(parse(&m, &q), -EBADMSG);

	/* An EDNS version we do not speak. */
	header(&m, 1, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	opt(&m, 1232, 1, false, NULL, 0);
	assert_int_equal(parse(&m, &q), -EPROTONOSUPPORT);
	assert_int_equal(sl_dns_error_rcode(-EPROTONOSUPPORT), SL_DNS_RCODE_BADVERS);
}

/* ret_ parameters are written only on success. */
static void test_untouched_on_failure(void **state)
{
	struct sl_dns_query q, before;
	uint8_t buf[512];
	size_t len = 12345;
	struct msg m;

	memset(&q, 0xa5, sizeof(q));
	before = q;
	query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
	put8(&m, 0); /* trailing garbage */
	assert_int_equal(parse(&m, &q), -EBADMSG);
	assert_memory_equal(&q, &before, sizeof(q));

	query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(sl_dns_build_response(&q, 9, NULL, 0, 60, buf, sizeof(buf), &len),
			 -EINVAL);
	assert_int_equal(len, 12345);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, NULL, 0, 60, buf, 20, &len), -ENOBUFS);
	assert_int_equal(len, 12345);
}

static void test_response_a(void **state)
{
	/* id 0xbeef, QR RD RA, 1 question, 2 answers: checked byte by byte. */
	static const uint8_t want[] = {
		0xbe, 0xef, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0,
		1, 'A', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1,
		0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 203, 0, 113, 7,
		0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 203, 0, 113, 8,
	};
	const struct sl_dns_answer ans[] = {
		{ .type = SL_DNS_TYPE_A, .addr = { 203, 0, 113, 7 } },
		{ .type = SL_DNS_TYPE_A, .addr = { 203, 0, 113, 8 } },
	};
	struct sl_dns_query q;
	uint8_t buf[512];
	size_t len;
	struct msg m;

	query(&m, 0xbeef, "A.example", SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 2, 3600, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_response_aaaa_any_and_mismatch(void **state)
{
	const struct sl_dns_answer a = { .type = SL_DNS_TYPE_A, .addr = { 203, 0, 113, 1 } };
	const struct sl_dns_answer aaaa = { .type = SL_DNS_TYPE_AAAA,
					   .addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } };
	const struct sl_dns_answer both[] = { a, aaaa };
	struct sl_dns_query q;
	uint8_t buf[512];
	size_t len;
	struct msg m;

	query(&m, 2, "v6.example", SL_DNS_TYPE_AAAA, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, &aaaa, 1, 60, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(len, 12 + q.question_len + 28);
	assert_int_equal(get16(buf, 6), 1);
	assert_int_equal(get16(buf, 12 + q.question_len + 2), SL_DNS_TYPE_AAAA);
	assert_int_equal(get16(buf, 12 + q.question_len + 10), 16);
	assert_memory_equal(buf + len - 16, aaaa.addr, 16);

	/* An A record for an AAAA question would poison the client's cache. */
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, &a, 1, 60, buf, sizeof(buf), &len),
	    -EINVAL);
	/* Answers with an error rcode, a TTL over 2^31-1. */
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NXDOMAIN, &aaaa, 1, 60, buf, sizeof(buf), &len),
	    -EINVAL);
	assert_int_equal(sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, &aaaa, 1, 0x80000000u, buf,
					       sizeof(buf), &len),
			 -EINVAL);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_BADVERS, NULL, 0, 60, buf, sizeof(buf), &len),
	    -EINVAL);

	query(&m, 3, "any.example", SL_DNS_TYPE_ANY, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, both, 2, 60, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(get16(buf, 6), 2);

	/* Another type asked for (MX): NODATA, no answers allowed. */
	query(&m, 4, "mx.example", SL_DNS_TYPE_MX, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, &a, 1, 60, buf, sizeof(buf), &len),
	    -EINVAL);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, NULL, 0, 60, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(get16(buf, 2) & 0xf, 0);
	assert_int_equal(get16(buf, 6), 0);
}

static void test_response_truncation(void **state)
{
	static struct sl_dns_answer ans[40];
	static uint8_t big[SL_DNS_MSG_MAX];
	struct sl_dns_query q;
	uint8_t buf[512];
	size_t len, i;
	struct msg m;

	for (i = 0; i < 40; i++)
		ans[i] = (struct sl_dns_answer){ .type = SL_DNS_TYPE_A,
						.addr = { 203, 0, 113, (uint8_t)i } };

	query(&m, 5, "many.example", SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 40, 60, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(len, 12 + q.question_len);
	assert_true(get16(buf, 2) & 0x0200); /* TC */
	assert_int_equal(get16(buf, 6), 0);

	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 40, 60, big, sizeof(big), &len),
	    0);
	assert_false(get16(big, 2) & 0x0200);
	assert_int_equal(get16(big, 6), 40);
	assert_int_equal(len, 12 + q.question_len + 40 * 16);

	/* With EDNS0 the OPT record stays in the truncated reply. */
	query(&m, 6, "many.example", SL_DNS_TYPE_A, true);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 40, 60, buf, sizeof(buf), &len),
	    0);
	assert_true(get16(buf, 2) & 0x0200);
	assert_int_equal(get16(buf, 6), 0);
	assert_int_equal(get16(buf, 10), 1);
	assert_int_equal(len, 12 + q.question_len + 11);

	/* Exactly enough room for every answer: no truncation. */
	query(&m, 7, "many.example", SL_DNS_TYPE_A, false);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 3, 60, buf,
					       12 + q.question_len + 48, &len),
			 0);
	assert_int_equal(get16(buf, 6), 3);
	assert_int_equal(sl_dns_build_response(&q, SL_DNS_RCODE_NOERROR, ans, 3, 60, buf,
					       12 + q.question_len + 47, &len),
			 0);
	assert_int_equal(get16(buf, 6), 0);
	assert_true(get16(buf, 2) & 0x0200);
}

static void test_response_edns(void **state)
{
	struct sl_dns_query q;
	uint8_t buf[512];
	size_t len, o;
	struct msg m;

	header(&m, 9, 0x0110, 1, 0, 0, 1); /* RD, CD */
	name(&m, "blocked.example");
	put16(&m, SL_DNS_TYPE_A);
	put16(&m, SL_DNS_CLASS_IN);
	opt(&m, 4096, 0, true, NULL, 0);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_REFUSED, NULL, 0, 0, buf, sizeof(buf), &len), 0);
	assert_int_equal(get16(buf, 0), 9);
	assert_int_equal(get16(buf, 2), 0x8000 | 0x0100 | 0x0080 | 0x0010 | 5);
	assert_int_equal(get16(buf, 4), 1);
	assert_int_equal(get16(buf, 10), 1);
	o = 12 + q.question_len;
	assert_int_equal(len, o + 11);
	assert_int_equal(buf[o], 0);
	assert_int_equal(get16(buf, o + 1), SL_DNS_TYPE_OPT);
	assert_int_equal(get16(buf, o + 3), SL_DNS_EDNS_UDP_SIZE);
	assert_int_equal(get16(buf, o + 5), 0);	     /* extended rcode, version */
	assert_int_equal(get16(buf, o + 7), 0x8000); /* DO copied (RFC 3225) */
	assert_int_equal(get16(buf, o + 9), 0);
}

/* A reply to a refused name, turned back into a query, parses to the same
 * question: the echo is exact. */
static void test_round_trip(void **state)
{
	struct sl_dns_query q, again;
	uint8_t buf[512];
	size_t len;
	struct msg m;

	query(&m, 0x4242, "MiXeD.Case.example", SL_DNS_TYPE_HTTPS, true);
	assert_int_equal(parse(&m, &q), 0);
	assert_int_equal(
	    sl_dns_build_response(&q, SL_DNS_RCODE_NXDOMAIN, NULL, 0, 0, buf, sizeof(buf), &len),
	    0);
	assert_int_equal(get16(buf, 2) & 0xf, SL_DNS_RCODE_NXDOMAIN);
	buf[2] &= 0x7f; /* QR */
	buf[3] &= 0xf0; /* rcode */
	assert_int_equal(sl_dns_parse_query(buf, len, &again), 0);
	assert_int_equal(again.id, q.id);
	assert_string_equal(again.qname, "mixed.case.example");
	assert_int_equal(again.qtype, SL_DNS_TYPE_HTTPS);
	assert_int_equal(again.question_len, q.question_len);
	assert_memory_equal(again.question, q.question, q.question_len);
	assert_true(again.edns);
}

static void test_error_replies(void **state)
{
	uint8_t buf[512];
	size_t len = 999;
	struct msg m;
	int r;

	/* Malformed in the question: the header alone, id and RD copied. */
	header(&m, 0x7777, 0x0100, 1, 0, 0, 0);
	put(&m, "\xc0\x0c\x00\x01\x00\x01", 6);
	r = sl_dns_parse_query(m.b, m.n, &(struct sl_dns_query){ 0 });
	assert_int_equal(r, -EBADMSG);
	assert_int_equal(
	    sl_dns_build_error(m.b, m.n, sl_dns_error_rcode(r), buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 12);
	assert_int_equal(get16(buf, 0), 0x7777);
	assert_int_equal(get16(buf, 2), 0x8000 | 0x0100 | 0x0080 | SL_DNS_RCODE_FORMERR);
	assert_int_equal(get16(buf, 4), 0);
	assert_int_equal(get16(buf, 6), 0);
	assert_int_equal(get16(buf, 10), 0);

	/* Malformed after a good question and OPT: both are echoed. */
	query(&m, 0x7778, "a.example", SL_DNS_TYPE_A, true);
	put8(&m, 0);
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_FORMERR, buf, sizeof(buf), &len),
			 0);
	assert_int_equal(len, m.n - 1);
	assert_int_equal(get16(buf, 4), 1);
	assert_int_equal(get16(buf, 10), 1);
	assert_memory_equal(buf + 12, m.b + 12, len - 12 - 11);

	/* A name we cannot represent: REFUSED with the question echoed, so a
	 * stub resolver (glibc checks the question) accepts it. */
	header(&m, 0x7779, 0x0100, 1, 0, 0, 0);
	put(&m,
		"\x03"
		"a.b\x07"
		"example\x00\x00\x01\x00\x01",
	    17);
	assert_int_equal(sl_dns_parse_query(m.b, m.n, &(struct sl_dns_query){ 0 }), -EILSEQ);
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_REFUSED, buf, sizeof(buf), &len),
			 0);
	assert_int_equal(len, m.n);
	assert_int_equal(get16(buf, 2) & 0xf, SL_DNS_RCODE_REFUSED);
	assert_memory_equal(buf + 12, m.b + 12, m.n - 12);

	/* NOTIMP copies the opcode. */
	query(&m, 0x777a, "a.example", SL_DNS_TYPE_SOA, false);
	m.b[2] = 4 << 3; /* NOTIFY */
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_NOTIMP, buf, sizeof(buf), &len),
			 0);
	assert_int_equal(len, 12);
	assert_int_equal(get16(buf, 2), 0x8000 | 4 << 11 | 0x0080 | SL_DNS_RCODE_NOTIMP);

	/* BADVERS: rcode 16 travels as 1 in the OPT record's upper bits. */
	header(&m, 0x777b, 0, 1, 0, 0, 1);
	name(&m, "a.example");
	put16(&m, 1);
	put16(&m, 1);
	opt(&m, 1232, 3, false, NULL, 0);
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_BADVERS, buf, sizeof(buf), &len),
			 0);
	assert_int_equal(get16(buf, 2) & 0xf, 0);
	assert_int_equal(buf[len - 11 + 5], 1);
	assert_int_equal(buf[len - 11 + 6], 0);

	/* BADVERS needs an OPT record to carry it. */
	query(&m, 1, "a.example", SL_DNS_TYPE_A, false);
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_BADVERS, buf, sizeof(buf), &len),
			 -EINVAL);
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_NOERROR, buf, sizeof(buf), &len),
			 -EINVAL);

	/* No header, or a response: no reply at all. */
	len = 999;
	assert_int_equal(sl_dns_build_error(m.b, 11, SL_DNS_RCODE_FORMERR, buf, sizeof(buf), &len),
			 -EPROTO);
	m.b[2] |= 0x80;
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_FORMERR, buf, sizeof(buf), &len),
			 -EPROTO);
	assert_int_equal(len, 999);
	m.b[2] &= 0x7f;
	assert_int_equal(sl_dns_build_error(m.b, m.n, SL_DNS_RCODE_FORMERR, buf, 11, &len),
			 -ENOBUFS);
}

static void test_error_rcode(void **state)
{
	assert_int_equal(sl_dns_error_rcode(-EBADMSG), SL_DNS_RCODE_FORMERR);
	assert_int_equal(sl_dns_error_rcode(-EOPNOTSUPP), SL_DNS_RCODE_NOTIMP);
	assert_int_equal(sl_dns_error_rcode(-EILSEQ), SL_DNS_RCODE_REFUSED);
	assert_int_equal(sl_dns_error_rcode(-EPROTONOSUPPORT), SL_DNS_RCODE_BADVERS);
	assert_int_equal(sl_dns_error_rcode(-EPROTO), -EPROTO);
	assert_int_equal(sl_dns_error_rcode(-EINVAL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simple),
	    cmocka_unit_test(test_names_accepted),
	    cmocka_unit_test(test_names_unrepresentable),
	    cmocka_unit_test(test_label_and_name_limits),
	    cmocka_unit_test(test_compression_pointers),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_header),
	    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_edns),
	    cmocka_unit_test(test_untouched_on_failure),
	    cmocka_unit_test(test_response_a),
	    cmocka_unit_test(test_response_aaaa_any_and_mismatch),
	    cmocka_unit_test(test_response_truncation),
	    cmocka_unit_test(test_response_edns),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_error_replies),
	    cmocka_unit_test(test_error_rcode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
