/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the DNS wire parser and builder. Beyond not
 * crashing, it checks the properties the DNS server's safety rests on:
 *   - a name that parses holds only [a-z0-9_.-], at most 253 characters, no
 *     empty label, and spells exactly the question's labels (lower-cased),
 *     so what the policy judges is what the client asked for;
 *   - every reply, to a good query or a rejected one, decodes (with a
 *     separate decoder here) to the id, opcode, RD, rcode and question the
 *     query implies, fits the buffer, sets TC only when the answers did not
 *     fit, and carries an OPT record exactly when the query did;
 *   - a reply turned back into a query parses to the same question;
 *   - a message is rejected with one of the documented errors, and only a
 *     header that is unreadable or a response gets no reply.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns-wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

/* The harness's own cursor, kept apart from the module's on purpose. */
struct cur {
	const uint8_t *b;
	size_t n, pos;
};

static uint8_t get8(struct cur *c)
{
	CHECK(c->pos + 1 <= c->n);
	return c->b[c->pos++];
}

static uint16_t get16(struct cur *c)
{
	uint16_t hi = get8(c);

	return (uint16_t)(hi << 8 | get8(c));
}

static uint32_t get32(struct cur *c)
{
	uint32_t hi = get16(c);

	return hi << 16 | get16(c);
}

struct expect {
	uint16_t id;
	uint8_t opcode;
	bool rd, cd;
	int rcode;
	const uint8_t *question; /* NULL: no question expected */
	size_t question_len;
	bool edns, edns_do;
	const struct sl_dns_answer *answers;
	size_t n_answers;
	uint32_t ttl;
};

static size_t full_len(const struct expect *e)
{
	size_t n = 12 + e->question_len + (e->edns ? 11 : 0), i;

	for (i = 0; i < e->n_answers; i++)
		n += e->answers[i].type == SL_DNS_TYPE_A ? 16 : 28;
	return n;
}

static void check_reply(const uint8_t *r, size_t len, size_t size, const struct expect *e)
{
	struct cur c = { .b = r, .n = len };
	uint16_t flags, qd, an, ns, ar, i;
	bool tc;

	CHECK(len <= size && len <= SL_DNS_MSG_MAX);
	CHECK(get16(&c) == e->id);
	flags = get16(&c);
	CHECK(flags & 0x8000); /* QR */
	CHECK(((flags >> 11) & 0xf) == e->opcode);
	CHECK(!(flags & 0x0400)); /* AA */
	CHECK(!!(flags & 0x0100) == e->rd);
	CHECK(flags & 0x0080);	  /* RA */
	CHECK(!(flags & 0x0020)); /* AD */
	CHECK(!!(flags & 0x0010) == e->cd);
	CHECK((flags & 0xf) == (e->rcode & 0xf));
	tc = flags & 0x0200;
	qd = get16(&c);
	an = get16(&c);
	ns = get16(&c);
	ar = get16(&c);

	CHECK(qd == (e->question ? 1 : 0));
	CHECK(ns == 0);
	CHECK(ar == (e->edns ? 1 : 0));
	/* TC exactly when the whole answer would not have fitted. */
	CHECK(tc == (full_len(e) > size));
	CHECK(an == (tc ? 0 : e->n_answers));

	if (e->question) {
		CHECK(c.n - c.pos >= e->question_len);
		CHECK(memcmp(c.b + c.pos, e->question, e->question_len) == 0);
		c.pos += e->question_len;
	}
	for (i = 0; i < an; i++) {
		const struct sl_dns_answer *a = &e->answers[i];
		uint16_t alen = a->type == SL_DNS_TYPE_A ? 4 : 16;

		CHECK(get16(&c) == 0xc00c);
		CHECK(get16(&c) == a->type);
		CHECK(get16(&c) == SL_DNS_CLASS_IN);
		CHECK(get32(&c) == e->ttl);
		CHECK(get16(&c) == alen);
		CHECK(c.n - c.pos >= alen && memcmp(c.b + c.pos, a->addr, alen) == 0);
		c.pos += alen;
	}
	if (e->edns) {
		uint32_t ttl;

		CHECK(get8(&c) == 0);
		CHECK(get16(&c) == SL_DNS_TYPE_OPT);
		CHECK(get16(&c) == SL_DNS_EDNS_UDP_SIZE);
		ttl = get32(&c);
		CHECK(ttl >> 24 == (uint32_t)e->rcode >> 4);
		CHECK(((ttl >> 16) & 0xff) == 0);
		CHECK(!!(ttl & 0x8000) == e->edns_do);
		CHECK(get16(&c) == 0);
	} else {
		CHECK(e->rcode < 16);
	}
	CHECK(c.pos == len);
}

static void check_name(const struct sl_dns_query *q)
{
	const uint8_t *w = q->question;
	size_t i, wpos = 0, start = 0;

	CHECK(q->qname_len <= SL_DNS_NAME_MAX);
	CHECK(strlen(q->qname) == q->qname_len);
	for (i = 0; i < q->qname_len; i++) {
		char ch = q->qname[i];

		CHECK((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '_' || ch == '.');
	}
	/* Walk the text's labels against the wire labels of the question. */
	for (i = 0; i <= q->qname_len && q->qname_len > 0; i++) {
		if (i < q->qname_len && q->qname[i] != '.')
			continue;
		CHECK(i > start && i - start <= SL_DNS_LABEL_MAX); /* 1..63 bytes */
		CHECK(wpos < q->question_len && w[wpos] == i - start);
		for (size_t k = 0; k < i - start; k++) {
			uint8_t b = w[wpos + 1 + k];

			CHECK((char)(b >= 'A' && b <= 'Z' ? b + 32 : b) == q->qname[start + k]);
		}
		wpos += 1 + (i - start);
		start = i + 1;
	}
	CHECK(wpos + 5 == q->question_len && w[wpos] == 0);
	CHECK(((size_t)w[wpos + 1] << 8 | w[wpos + 2]) == q->qtype);
	CHECK(((size_t)w[wpos + 3] << 8 | w[wpos + 4]) == q->qclass);
}

static uint8_t reply_buf[SL_DNS_MSG_MAX];

static void check_good(const uint8_t *msg, size_t len, const struct sl_dns_query *q,
		       const uint8_t *extra, size_t extra_len)
{
	static const int rcodes[] = {
		SL_DNS_RCODE_NOERROR,  SL_DNS_RCODE_FORMERR, SL_DNS_RCODE_SERVFAIL,
		SL_DNS_RCODE_NXDOMAIN, SL_DNS_RCODE_NOTIMP,  SL_DNS_RCODE_REFUSED,
	};
	static struct sl_dns_answer answers[300];
	size_t sizes[] = { 64, SL_DNS_UDP_PLAIN, sl_dns_udp_limit(q), sizeof(reply_buf), 0, 0 };
	struct expect e;
	size_t n_answers = 0, i, s, rlen;
	uint32_t ttl = 0;

	CHECK(q->id == (uint16_t)(msg[0] << 8 | msg[1]));
	CHECK(q->question_off == SL_DNS_HEADER_LEN);
	CHECK(q->question_len <= len - SL_DNS_HEADER_LEN);
	CHECK(memcmp(q->question, msg + SL_DNS_HEADER_LEN, q->question_len) == 0);
	CHECK(sl_dns_udp_limit(q) >= 512 && sl_dns_udp_limit(q) <= SL_DNS_EDNS_UDP_SIZE);
	check_name(q);

	/* Answers of the type asked for, as many as the fuzzer's extra bytes
	 * say (0..299, enough to need TCP). */
	if (extra_len >= 6 &&
	    (q->qtype == SL_DNS_TYPE_A || q->qtype == SL_DNS_TYPE_AAAA ||
	     q->qtype == SL_DNS_TYPE_ANY) &&
	    (q->qclass == SL_DNS_CLASS_IN || q->qclass == SL_DNS_CLASS_ANY)) {
		n_answers = ((size_t)extra[0] << 8 | extra[1]) % 300;
		ttl = (uint32_t)extra[2] << 24 | (uint32_t)extra[3] << 16 | extra[4] << 8 | extra[5];
		ttl &= 0x7fffffff;
		for (i = 0; i < n_answers; i++) {
			if (q->qtype != SL_DNS_TYPE_ANY)
				answers[i].type = q->qtype;
			else
				answers[i].type = (i + extra[0]) % 2 ? SL_DNS_TYPE_A : SL_DNS_TYPE_AAAA;
			for (size_t k = 0; k < 16; k++)
				answers[i].addr[k] = extra[(6 + i + k) % extra_len];
		}
	}

	/* The edge of truncation: exactly room for every answer, one byte
	 * less. */
	e = (struct expect){
		.question_len = q->question_len,
		.edns = q->edns,
		.answers = answers,
		.n_answers = n_answers,
	};
	sizes[4] = full_len(&e);
	sizes[5] = full_len(&e) - 1;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (i = 0; i < sizeof(rcodes) / sizeof(rcodes[0]); i++) {
			size_t n = rcodes[i] == SL_DNS_RCODE_NOERROR ? n_answers : 0;
			int r = sl_dns_build_response(q, rcodes[i], answers, n, ttl, reply_buf,
						      sizes[s], &rlen);

			e = (struct expect){
				.id = q->id,
				.opcode = 0,
				.rd = q->rd,
				.cd = q->cd,
				.rcode = rcodes[i],
				.question = q->question,
				.question_len = q->question_len,
				.edns = q->edns,
				.edns_do = q->edns_do,
				.answers = answers,
				.n_answers = n,
				.ttl = ttl,
			};
			if (12 + q->question_len + (q->edns ? 11 : 0) > sizes[s]) {
				CHECK(r == -ENOBUFS);
				continue;
			}
			CHECK(r == 0);
			check_reply(reply_buf, rlen, sizes[s], &e);

			/* Without answers, the reply is the query again once QR
			 * and the rcode are cleared. */
			if (!n && sizes[s] >= 512) {
				struct sl_dns_query again;

				reply_buf[2] &= 0x79; /* QR, TC */
				reply_buf[3] &= 0xf0;
				CHECK(sl_dns_parse_query(reply_buf, rlen, &again) == 0);
				CHECK(again.id == q->id && again.rd == q->rd && again.cd == q->cd);
				CHECK(again.qtype == q->qtype && again.qclass == q->qclass);
				CHECK(strcmp(again.qname, q->qname) == 0);
				CHECK(again.question_len == q->question_len);
				CHECK(memcmp(again.question, q->question, q->question_len) == 0);
				CHECK(again.edns == q->edns && again.edns_do == q->edns_do);
			}
		}
	}
}

static void check_bad(const uint8_t *msg, size_t len, int err)
{
	static const size_t sizes[] = { 512, sizeof(reply_buf) };
	int rcode = sl_dns_error_rcode(err);
	size_t s, rlen;

	CHECK(err == -EPROTO || err == -EOPNOTSUPP || err == -EBADMSG || err == -EPROTONOSUPPORT ||
	      err == -EILSEQ);
	if (rcode < 0) {
		CHECK(err == -EPROTO);
		CHECK(len < SL_DNS_HEADER_LEN || (msg[2] & 0x80));
		CHECK(sl_dns_build_error(msg, len, SL_DNS_RCODE_FORMERR, reply_buf,
					 sizeof(reply_buf), &rlen) == -EPROTO);
		return;
	}
	CHECK(len >= SL_DNS_HEADER_LEN && !(msg[2] & 0x80));

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct cur c = { .b = reply_buf };
		struct expect e = {
			.id = (uint16_t)(msg[0] << 8 | msg[1]),
			.opcode = (msg[2] >> 3) & 0xf,
			.rd = msg[2] & 0x01,
			.cd = msg[3] & 0x10,
			.rcode = rcode,
		};

		CHECK(sl_dns_build_error(msg, len, rcode, reply_buf, sizes[s], &rlen) == 0);
		/* Read the counts first to learn what the reply chose to echo,
		 * then hold it to the query. */
		c.n = rlen;
		c.pos = 4;
		if (get16(&c) == 1) {
			/* Only a well-formed question is echoed, and it is the
			 * query's own bytes. */
			CHECK(err != -EOPNOTSUPP);
			e.question = msg + SL_DNS_HEADER_LEN;
			e.question_len = rlen - SL_DNS_HEADER_LEN;
		}
		c.pos = 10;
		e.edns = get16(&c) == 1;
		if (e.edns) {
			e.question_len -= e.question ? 11 : 0;
			e.edns_do = reply_buf[rlen - 4] & 0x80;
		}
		CHECK(e.question_len <= len - SL_DNS_HEADER_LEN);
		/* These errors come after the question and OPT record were
		 * read whole, so both must be echoed. */
		if (err == -EILSEQ || err == -EPROTONOSUPPORT)
			CHECK(e.question);
		if (err == -EPROTONOSUPPORT)
			CHECK(e.edns);
		check_reply(reply_buf, rlen, sizes[s], &e);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_dns_query q;
	size_t msg_len;
	int r;

	/* The first two bytes say how much of the input is the message; the
	 * rest feeds the answers. Without them the whole input is the
	 * message, so plain packet captures make good seeds. */
	msg_len = size;
	if (size >= 2 && data[0] == 0xff && data[1] == 0xfe && size >= 4) {
		size_t want = (size_t)data[2] << 8 | data[3];

		data += 4;
		size -= 4;
		msg_len = want < size ? want : size;
	}

	r = sl_dns_parse_query(data, msg_len, &q);
	if (r == 0)
		check_good(data, msg_len, &q, data + msg_len, size - msg_len);
	else
		check_bad(data, msg_len, r);
	return 0;
}
