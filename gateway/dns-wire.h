/* SPDX-License-Identifier: MIT */
/*
 * The DNS wire format, as far as the gateway's DNS server needs it: parse a
 * query from an untrusted client and build the reply. Pure functions over
 * byte buffers: no sockets, no allocation, no printing.
 *
 * The server answers only names the policy allows and never forwards a
 * query, so the parser is deliberately narrow. It accepts exactly one
 * question with an uncompressed name whose labels hold only [A-Za-z0-9_-],
 * no answer or authority records, at most one OPT record (EDNS0) in the
 * additional section, and nothing after it. Anything else is an error that
 * sl_dns_error_rcode() maps to the reply to send, or to silence.
 *
 * A message over UDP is the datagram; over TCP it is the payload after the
 * two-byte length (RFC 1035 4.2.2), which the caller strips and adds.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RFC 1035 4.1.1: the fixed header; the question always starts after it. */
#define SL_DNS_HEADER_LEN 12
/* RFC 1035 3.1: a name is at most 255 bytes on the wire, so at most 253
 * characters in presentation form without the trailing dot. */
#define SL_DNS_NAME_WIRE_MAX 255
#define SL_DNS_NAME_MAX 253
#define SL_DNS_NAME_BUF (SL_DNS_NAME_MAX + 1)
#define SL_DNS_LABEL_MAX 63
/* A question is a name plus its type and class. */
#define SL_DNS_QUESTION_MAX (SL_DNS_NAME_WIRE_MAX + 4)
/* RFC 1035 4.2.1: the most a plain UDP reply may carry. */
#define SL_DNS_UDP_PLAIN 512
/* The UDP payload size we advertise and honour at most with EDNS0: the DNS
 * flag day 2020 value, small enough never to fragment on common paths. */
#define SL_DNS_EDNS_UDP_SIZE 1232
/* A message over TCP is limited by its two-byte length prefix. */
#define SL_DNS_MSG_MAX 65535

enum {
	SL_DNS_TYPE_A = 1,
	SL_DNS_TYPE_NS = 2,
	SL_DNS_TYPE_CNAME = 5,
	SL_DNS_TYPE_SOA = 6,
	SL_DNS_TYPE_PTR = 12,
	SL_DNS_TYPE_MX = 15,
	SL_DNS_TYPE_TXT = 16,
	SL_DNS_TYPE_AAAA = 28,
	SL_DNS_TYPE_SRV = 33,
	SL_DNS_TYPE_OPT = 41,
	SL_DNS_TYPE_SVCB = 64,
	SL_DNS_TYPE_HTTPS = 65,
	SL_DNS_TYPE_IXFR = 251,
	SL_DNS_TYPE_AXFR = 252,
	SL_DNS_TYPE_ANY = 255,
};

enum {
	SL_DNS_CLASS_IN = 1,
	SL_DNS_CLASS_CH = 3,
	SL_DNS_CLASS_ANY = 255,
};

/* RFC 1035 4.1.1 and RFC 6891 9 (BADVERS is an extended rcode: its upper
 * eight bits travel in the OPT record, so it needs EDNS0). */
enum {
	SL_DNS_RCODE_NOERROR = 0,
	SL_DNS_RCODE_FORMERR = 1,
	SL_DNS_RCODE_SERVFAIL = 2,
	SL_DNS_RCODE_NXDOMAIN = 3,
	SL_DNS_RCODE_NOTIMP = 4,
	SL_DNS_RCODE_REFUSED = 5,
	SL_DNS_RCODE_BADVERS = 16,
};

struct sl_dns_query {
	uint16_t id;
	bool rd; /* recursion desired: copied into the reply */
	bool cd; /* checking disabled: copied too (RFC 6840 5.9) */
	uint16_t qtype;
	uint16_t qclass;
	/* The name lower-cased, labels joined by '.', no trailing dot; only
	 * [a-z0-9_-] and '.'. The root name is the empty string: callers must
	 * treat it like any other name the policy does not allow. */
	char qname[SL_DNS_NAME_BUF];
	size_t qname_len;
	/* The question section exactly as it arrived (offset in the message and
	 * a copy), echoed in the reply byte for byte: resolvers that randomise
	 * the case of the name (DNS 0x20) check that it comes back unchanged. */
	size_t question_off;
	size_t question_len;
	uint8_t question[SL_DNS_QUESTION_MAX];
	/* EDNS0 (RFC 6891): whether the query carried an OPT record, the UDP
	 * payload size it advertised (raw, may be below 512), and its DO bit. */
	bool edns;
	uint16_t edns_udp_size;
	bool edns_do;
};

/* One address record for the answer section. */
struct sl_dns_answer {
	uint16_t type;	  /* SL_DNS_TYPE_A (addr[0..3]) or SL_DNS_TYPE_AAAA */
	uint8_t addr[16]; /* network byte order */
};

/*
 * Parse a query. On success fills *ret and returns 0. Errors, each a
 * different reply (sl_dns_error_rcode()):
 *   -EPROTO           shorter than a header, or a response (QR=1): drop it;
 *                     answering a response invites reflection loops
 *   -EOPNOTSUPP       an opcode other than QUERY: NOTIMP
 *   -EBADMSG          malformed: truncated, counts other than one question
 *                     and at most one OPT record, a compression pointer or
 *                     extended label in the question, a label over 63 or a
 *                     name over 255 bytes, a bad OPT record, trailing bytes:
 *                     FORMERR
 *   -EPROTONOSUPPORT  an EDNS version other than 0: BADVERS (RFC 6891 6.1.3)
 *   -EILSEQ           a well-formed name with a byte outside [A-Za-z0-9_-]
 *                     in a label ('.', NUL, space, non-ASCII...): a name we
 *                     cannot represent is never allowed, so REFUSED
 */
int sl_dns_parse_query(const uint8_t *msg, size_t len, struct sl_dns_query *ret);

/* The rcode to answer a parse error with, or a negative errno when the
 * message must be dropped without a reply. */
int sl_dns_error_rcode(int err);

/* The most bytes a UDP reply to this query may take: 512 without EDNS0,
 * otherwise the client's advertised size, at least 512 and at most
 * SL_DNS_EDNS_UDP_SIZE. Over TCP use SL_DNS_MSG_MAX. */
size_t sl_dns_udp_limit(const struct sl_dns_query *q);

/*
 * Build the reply to a parsed query in buf[0..size): the question echoed,
 * QR=1, AA=0, RA=1, RD and CD copied, the rcode given, an OPT record if the
 * query had one. With SL_DNS_RCODE_NOERROR, `answers` (A or AAAA records
 * matching the question's type; both for ANY) follow with the given TTL,
 * each owned by a compression pointer to the question's name; zero answers
 * is NODATA. Other rcodes (FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED)
 * take no answers. If the answers do not fit in `size`, the reply is sent
 * without them and with TC set, so the client retries over TCP.
 *
 * Returns 0 and the length in *ret_len, -EINVAL for arguments that make no
 * valid reply (an unknown rcode, answers of the wrong type or with an error
 * rcode, a TTL over 2^31-1), or -ENOBUFS if not even the reply without
 * answers fits.
 */
int sl_dns_build_response(const struct sl_dns_query *q, int rcode,
			  const struct sl_dns_answer *answers, size_t n_answers, uint32_t ttl,
			  uint8_t *buf, size_t size, size_t *ret_len);

/*
 * Build an error reply to a message sl_dns_parse_query() rejected, with
 * rcode FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED or BADVERS (usually
 * sl_dns_error_rcode() of the error). The reply copies the id, opcode, RD
 * and CD; it echoes the question and carries an OPT record only when those
 * parts of the message were well-formed, so a resolver can match it, and
 * otherwise has no question (QDCOUNT=0).
 *
 * Returns 0 and the length in *ret_len; -EPROTO when the message gets no
 * reply at all (no readable header, or a response); -EINVAL for an rcode
 * outside that list or BADVERS without EDNS0; -ENOBUFS if it does not fit.
 */
int sl_dns_build_error(const uint8_t *msg, size_t len, int rcode, uint8_t *buf, size_t size,
		       size_t *ret_len);
