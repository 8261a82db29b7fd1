/* SPDX-License-Identifier: MIT */
#include "dns-wire.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* RFC 1035 4.1.1: the flags word of the header. */
#define FLAG_QR 0x8000u
#define FLAG_TC 0x0200u
#define FLAG_RD 0x0100u
#define FLAG_RA 0x0080u
#define FLAG_CD 0x0010u
#define OPCODE_SHIFT 11
#define OPCODE_MASK 0xfu
#define OPCODE_QUERY 0

/* RFC 6891 6.1.3: the DO bit in the flags half of the OPT record's TTL. */
#define EDNS_FLAG_DO 0x8000u

/* The size of an OPT record with no options: root name, type, class, TTL,
 * RDLENGTH. */
#define OPT_RR_LEN 11
/* An answer: name pointer, type, class, TTL, RDLENGTH, then the address. */
#define ANSWER_FIXED_LEN 12

/*
 * Every byte of an untrusted message is read through this cursor (the idea
 * of c-ares's ares_buf): each read checks the bytes left first, and a read
 * that fails leaves the cursor where it was. Nothing else in this file
 * indexes into the message.
 */
struct reader {
	const uint8_t *data;
	size_t len;
	size_t pos;
};

static size_t rd_left(const struct reader *r)
{
	return r->len - r->pos;
}

static int rd_bytes(struct reader *r, size_t n, const uint8_t **ret)
{
	if (rd_left(r) < n)
		return -EBADMSG;
	*ret = r->data + r->pos;
	r->pos += n;
	return 0;
}

static int rd_u8(struct reader *r, uint8_t *ret)
{
	const uint8_t *p;

	if (rd_bytes(r, 1, &p) < 0)
		return -EBADMSG;
	*ret = p[0];
	return 0;
}

static int rd_u16(struct reader *r, uint16_t *ret)
{
	const uint8_t *p;

	if (rd_bytes(r, 2, &p) < 0)
		return -EBADMSG;
	*ret = (uint16_t)(p[0] << 8 | p[1]);
	return 0;
}

static int rd_u32(struct reader *r, uint32_t *ret)
{
	const uint8_t *p;

	if (rd_bytes(r, 4, &p) < 0)
		return -EBADMSG;
	*ret = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

/* The bytes from offset start up to the cursor, already read and checked. */
static const uint8_t *rd_consumed(const struct reader *r, size_t start)
{
	return r->data + (start < r->pos ? start : r->pos);
}

/* A reader over the next n bytes, which the parent skips. */
static int rd_sub(struct reader *r, size_t n, struct reader *ret)
{
	const uint8_t *p;

	if (rd_bytes(r, n, &p) < 0)
		return -EBADMSG;
	*ret = (struct reader){ .data = p, .len = n };
	return 0;
}

/* The bytes a label may hold and still reach the policy as a host name. */
static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/*
 * Read an uncompressed name into its lower-cased presentation form (without
 * the trailing dot; "" for the root). *ret_representable says whether every
 * label byte is a host_char(); the text is meaningless if not.
 *
 * A length byte over 63 is a compression pointer (0xc0, RFC 1035 4.1.4) or
 * an extended label type (0x40, 0x80, RFC 6891 5): neither belongs in the
 * question of a query, which is the first name in the message, so both are
 * malformed. Refusing pointers outright also rules out pointer loops.
 */
static int rd_name(struct reader *r, char ret_text[SL_DNS_NAME_BUF], size_t *ret_len,
		   bool *ret_representable)
{
	struct reader c = *r;
	char text[SL_DNS_NAME_BUF];
	bool representable = true;
	size_t wire = 0, n = 0, i;

	for (;;) {
		const uint8_t *label;
		uint8_t l;

		if (rd_u8(&c, &l) < 0)
			return -EBADMSG;
		wire++;
		if (l == 0)
			break;
		if (l > SL_DNS_LABEL_MAX)
			return -EBADMSG;
		/* RFC 1035 3.1: at most 255 bytes with the root label, so the
		 * text below never exceeds 253 characters. */
		wire += l;
		if (wire + 1 > SL_DNS_NAME_WIRE_MAX)
			return -EBADMSG;
		if (rd_bytes(&c, l, &label) < 0)
			return -EBADMSG;
		if (n > 0)
			text[n++] = '.';
		for (i = 0; i < l; i++) {
			uint8_t b = label[i];

			if (!host_char(b))
				representable = false;
			text[n++] = (char)(b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b);
		}
	}
	text[n] = '\0';

	*r = c;
	memcpy(ret_text, text, n + 1);
	*ret_len = n;
	*ret_representable = representable;
	return 0;
}

/* How far a message got through the parser: a reply to a bad message
 * echoes only the parts that were well-formed. */
enum {
	HAVE_HEADER = 1 << 0,
	HAVE_QUESTION = 1 << 1,
	HAVE_EDNS = 1 << 2,
};

struct parsed {
	struct sl_dns_query q;
	unsigned have;
	uint8_t opcode;
	uint8_t edns_version;
	bool representable;
};

/*
 * RFC 6891 6.1: the OPT pseudo-record. Its name must be the root, its class
 * is the sender's UDP payload size, its TTL holds the extended rcode, the
 * version and the flags. The options are checked to be well-formed TLVs
 * but not otherwise used (none we support; RFC 6891 6.1.2 lets us ignore
 * them).
 */
static int parse_opt(struct reader *r, struct parsed *p)
{
	struct reader rdata;
	uint16_t type, udp_size, rdlen;
	uint32_t ttl;
	uint8_t root;

	if (rd_u8(r, &root) < 0 || root != 0)
		return -EBADMSG;
	if (rd_u16(r, &type) < 0 || type != SL_DNS_TYPE_OPT)
		return -EBADMSG;
	if (rd_u16(r, &udp_size) < 0 || rd_u32(r, &ttl) < 0 || rd_u16(r, &rdlen) < 0)
		return -EBADMSG;
	if (rd_sub(r, rdlen, &rdata) < 0)
		return -EBADMSG;
	while (rd_left(&rdata) > 0) {
		uint16_t code, olen;
		const uint8_t *skip;

		if (rd_u16(&rdata, &code) < 0 || rd_u16(&rdata, &olen) < 0 ||
		    rd_bytes(&rdata, olen, &skip) < 0)
			return -EBADMSG;
	}

	p->q.edns = true;
	p->q.edns_udp_size = udp_size;
	p->q.edns_do = (ttl & EDNS_FLAG_DO) != 0;
	p->edns_version = (uint8_t)(ttl >> 16);
	p->have |= HAVE_EDNS;
	return 0;
}

/* Parse as far as the message allows, recording in p->have what was
 * well-formed, and return the first error (see sl_dns_parse_query()). */
static int parse_message(const uint8_t *msg, size_t len, struct parsed *p)
{
	struct reader r = { .data = msg, .len = len };
	uint16_t flags, qdcount, ancount, nscount, arcount;
	size_t qstart;

	*p = (struct parsed){ 0 };

	if (rd_u16(&r, &p->q.id) < 0 || rd_u16(&r, &flags) < 0 || rd_u16(&r, &qdcount) < 0 ||
	    rd_u16(&r, &ancount) < 0 || rd_u16(&r, &nscount) < 0 || rd_u16(&r, &arcount) < 0)
		return -EPROTO;
	if (flags & FLAG_QR)
		return -EPROTO;
	p->q.rd = (flags & FLAG_RD) != 0;
	p->q.cd = (flags & FLAG_CD) != 0;
	p->opcode = (flags >> OPCODE_SHIFT) & OPCODE_MASK;
	p->have |= HAVE_HEADER;

	/* Other opcodes (NOTIFY, UPDATE, ...) give the sections other
	 * meanings; we read no further. */
	if (p->opcode != OPCODE_QUERY)
		return -EOPNOTSUPP;
	/* RFC 9619: a QUERY has exactly one question. */
	if (qdcount != 1)
		return -EBADMSG;

	qstart = r.pos;
	if (rd_name(&r, p->q.qname, &p->q.qname_len, &p->representable) < 0 ||
	    rd_u16(&r, &p->q.qtype) < 0 || rd_u16(&r, &p->q.qclass) < 0)
		return -EBADMSG;
	p->q.question_off = qstart;
	p->q.question_len = r.pos - qstart;
	memcpy(p->q.question, rd_consumed(&r, qstart), p->q.question_len);
	p->have |= HAVE_QUESTION;

	/* A query carries no answers or authority; the additional section may
	 * hold one OPT record and nothing else. */
	if (ancount != 0 || nscount != 0 || arcount > 1)
		return -EBADMSG;
	if (arcount == 1 && parse_opt(&r, p) < 0)
		return -EBADMSG;
	if (rd_left(&r) != 0)
		return -EBADMSG;

	if (p->q.edns && p->edns_version != 0)
		return -EPROTONOSUPPORT;
	if (!p->representable)
		return -EILSEQ;
	return 0;
}

int sl_dns_parse_query(const uint8_t *msg, size_t len, struct sl_dns_query *ret)
{
	struct parsed p;
	int r;

	if (!msg || !ret)
		return -EINVAL;
	r = parse_message(msg, len, &p);
	if (r < 0)
		return r;
	*ret = p.q;
	return 0;
}

int sl_dns_error_rcode(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return SL_DNS_RCODE_NOTIMP;
	case -EBADMSG:
		return SL_DNS_RCODE_FORMERR;
	case -EPROTONOSUPPORT:
		return SL_DNS_RCODE_BADVERS;
	case -EILSEQ:
		return SL_DNS_RCODE_REFUSED;
	default:
		return err < 0 ? err : -EINVAL;
	}
}

size_t sl_dns_udp_limit(const struct sl_dns_query *q)
{
	/* RFC 6891 6.2.5: a size below 512 is treated as 512. */
	if (!q->edns || q->edns_udp_size <= SL_DNS_UDP_PLAIN)
		return SL_DNS_UDP_PLAIN;
	if (q->edns_udp_size > SL_DNS_EDNS_UDP_SIZE)
		return SL_DNS_EDNS_UDP_SIZE;
	return q->edns_udp_size;
}

/* The writing twin of struct reader: every write checks the room left. */
struct writer {
	uint8_t *data;
	size_t size;
	size_t len;
};

static int wr_bytes(struct writer *w, const void *src, size_t n)
{
	if (w->size - w->len < n)
		return -ENOBUFS;
	memcpy(w->data + w->len, src, n);
	w->len += n;
	return 0;
}

static int wr_u8(struct writer *w, uint8_t v)
{
	return wr_bytes(w, &v, 1);
}

static int wr_u16(struct writer *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	return wr_bytes(w, b, sizeof(b));
}

static int wr_u32(struct writer *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	return wr_bytes(w, b, sizeof(b));
}

/* What a reply says, whether to a parsed query or to a rejected message. */
struct reply {
	uint16_t id;
	uint8_t opcode;
	bool rd, cd;
	const uint8_t *question; /* NULL for a reply without a question */
	size_t question_len;
	bool edns, edns_do;
	int rcode;
};

static size_t answer_len(const struct sl_dns_answer *a)
{
	return ANSWER_FIXED_LEN + (a->type == SL_DNS_TYPE_A ? 4 : 16);
}

static int write_answer(struct writer *w, const struct sl_dns_answer *a, uint32_t ttl)
{
	uint16_t alen = a->type == SL_DNS_TYPE_A ? 4 : 16;

	/* RFC 1035 4.1.4: the owner is a pointer to the question's name,
	 * which always starts right after the header. */
	if (wr_u16(w, 0xc000u | SL_DNS_HEADER_LEN) < 0 || wr_u16(w, a->type) < 0 ||
	    wr_u16(w, SL_DNS_CLASS_IN) < 0 || wr_u32(w, ttl) < 0 || wr_u16(w, alen) < 0 ||
	    wr_bytes(w, a->addr, alen) < 0)
		return -ENOBUFS;
	return 0;
}

/* RFC 6891 6.1.3: the OPT record of a reply, which carries the upper
 * eight bits of the rcode. RFC 3225 3: the DO bit is copied. */
static int write_opt(struct writer *w, const struct reply *rp)
{
	uint32_t ttl = (uint32_t)(rp->rcode >> 4) << 24 | (rp->edns_do ? EDNS_FLAG_DO : 0);

	if (wr_u8(w, 0) < 0 || wr_u16(w, SL_DNS_TYPE_OPT) < 0 ||
	    wr_u16(w, SL_DNS_EDNS_UDP_SIZE) < 0 || wr_u32(w, ttl) < 0 || wr_u16(w, 0) < 0)
		return -ENOBUFS;
	return 0;
}

static int write_reply(const struct reply *rp, const struct sl_dns_answer *answers,
		       size_t n_answers, uint32_t ttl, uint8_t *buf, size_t size, size_t *ret_len)
{
	struct writer w = { .data = buf, .size = size < SL_DNS_MSG_MAX ? size : SL_DNS_MSG_MAX };
	size_t base, need, i;
	uint16_t flags;
	bool tc = false;

	/* Everything but the answers must fit; the OPT record too, since RFC
	 * 6891 7 keeps it in a truncated reply. */
	base = SL_DNS_HEADER_LEN + rp->question_len + (rp->edns ? OPT_RR_LEN : 0);
	if (base > w.size)
		return -ENOBUFS;
	need = base;
	for (i = 0; i < n_answers && !tc; i++) {
		need += answer_len(&answers[i]);
		tc = need > w.size;
	}
	if (tc)
		n_answers = 0;

	flags = (uint16_t)(FLAG_QR | (unsigned)rp->opcode << OPCODE_SHIFT | (tc ? FLAG_TC : 0) |
			   (rp->rd ? FLAG_RD : 0) | FLAG_RA | (rp->cd ? FLAG_CD : 0) |
			   ((unsigned)rp->rcode & 0xfu));
	if (wr_u16(&w, rp->id) < 0 || wr_u16(&w, flags) < 0 ||
	    wr_u16(&w, rp->question ? 1 : 0) < 0 || wr_u16(&w, (uint16_t)n_answers) < 0 ||
	    wr_u16(&w, 0) < 0 || wr_u16(&w, rp->edns ? 1 : 0) < 0)
		return -ENOBUFS;
	if (rp->question && wr_bytes(&w, rp->question, rp->question_len) < 0)
		return -ENOBUFS;
	for (i = 0; i < n_answers; i++)
		if (write_answer(&w, &answers[i], ttl) < 0)
			return -ENOBUFS;
	if (rp->edns && write_opt(&w, rp) < 0)
		return -ENOBUFS;

	*ret_len = w.len;
	return 0;
}

static bool plain_rcode(int rcode)
{
	switch (rcode) {
	case SL_DNS_RCODE_NOERROR:
	case SL_DNS_RCODE_FORMERR:
	case SL_DNS_RCODE_SERVFAIL:
	case SL_DNS_RCODE_NXDOMAIN:
	case SL_DNS_RCODE_NOTIMP:
	case SL_DNS_RCODE_REFUSED:
		return true;
	default:
		return false;
	}
}

/* An answer must be an address of the type asked for, in class IN: a
 * caller's mix-up here would poison the client's cache. */
static bool answer_fits_question(const struct sl_dns_query *q, const struct sl_dns_answer *a)
{
	if (a->type != SL_DNS_TYPE_A && a->type != SL_DNS_TYPE_AAAA)
		return false;
	if (q->qtype != a->type && q->qtype != SL_DNS_TYPE_ANY)
		return false;
	return q->qclass == SL_DNS_CLASS_IN || q->qclass == SL_DNS_CLASS_ANY;
}

int sl_dns_build_response(const struct sl_dns_query *q, int rcode,
			  const struct sl_dns_answer *answers, size_t n_answers, uint32_t ttl,
			  uint8_t *buf, size_t size, size_t *ret_len)
{
	struct reply rp;
	size_t i;

	if (!q || !buf || !ret_len || (n_answers > 0 && !answers))
		return -EINVAL;
	if (!plain_rcode(rcode) || (rcode != SL_DNS_RCODE_NOERROR && n_answers > 0))
		return -EINVAL;
	/* RFC 2181 8: a TTL is at most 2^31 - 1. */
	if (ttl > INT32_MAX)
		return -EINVAL;
	/* The smallest question is the root name plus type and class. */
	if (q->question_len < 5 || q->question_len > SL_DNS_QUESTION_MAX)
		return -EINVAL;
	for (i = 0; i < n_answers; i++)
		if (!answer_fits_question(q, &answers[i]))
			return -EINVAL;

	rp = (struct reply){
		.id = q->id,
		.opcode = OPCODE_QUERY,
		.rd = q->rd,
		.cd = q->cd,
		.question = q->question,
		.question_len = q->question_len,
		.edns = q->edns,
		.edns_do = q->edns_do,
		.rcode = rcode,
	};
	return write_reply(&rp, answers, n_answers, ttl, buf, size, ret_len);
}

int sl_dns_build_error(const uint8_t *msg, size_t len, int rcode, uint8_t *buf, size_t size,
		       size_t *ret_len)
{
	struct parsed p;
	struct reply rp;

	if (!msg || !buf || !ret_len)
		return -EINVAL;
	if (rcode == SL_DNS_RCODE_NOERROR || (!plain_rcode(rcode) && rcode != SL_DNS_RCODE_BADVERS))
		return -EINVAL;

	(void)parse_message(msg, len, &p);
	if (!(p.have & HAVE_HEADER))
		return -EPROTO;
	if (rcode == SL_DNS_RCODE_BADVERS && !(p.have & HAVE_EDNS))
		return -EINVAL;

	rp = (struct reply){
		.id = p.q.id,
		.opcode = p.opcode,
		.rd = p.q.rd,
		.cd = p.q.cd,
		.question = (p.have & HAVE_QUESTION) ? p.q.question : NULL,
		.question_len = (p.have & HAVE_QUESTION) ? p.q.question_len : 0,
		.edns = (p.have & HAVE_EDNS) != 0,
		.edns_do = p.q.edns_do,
		.rcode = rcode,
	};
	return write_reply(&rp, NULL, 0, 0, buf, size, ret_len);
}
