/* SPDX-License-Identifier: MIT */
/*
 * ClientHello parsing (RFC 8446 sections 4.1.2 and 5.1, RFC 6066 section 3,
 * RFC 7301). Two layers: the record layer gathers the handshake message from
 * as many handshake records as the client split it into, then the hello
 * itself is read from the reassembled bytes. Every read of untrusted bytes
 * goes through the reader below, which knows how much is left and says when
 * a read would run past it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "macro.h"
#include "tls-hello.h"

enum {
	TLS_RECORD_HANDSHAKE = 22,
	TLS_RECORD_HEADER = 5,
	TLS_RECORD_MAX = 16384, /* 2^14, RFC 8446 section 5.1 */
	TLS_HANDSHAKE_CLIENT_HELLO = 1,
	TLS_HANDSHAKE_HEADER = 4,
	/* version, random, empty session id, one suite, one method */
	TLS_HELLO_MIN = 2 + 32 + 1 + 2 + 2 + 1 + 1,
};

enum {
	EXT_SERVER_NAME = 0,
	EXT_ALPN = 16,
	EXT_SUPPORTED_VERSIONS = 43,
	EXT_ECH = 0xfe0d,  /* draft-ietf-tls-esni, encrypted_client_hello */
	EXT_ESNI = 0xffce, /* the older encrypted_server_name drafts */
};

enum {
	SNI_HOST_NAME = 0,
};

/*
 * The bounds-checked reader: a cursor and the number of bytes left after it.
 * Each read either succeeds whole and advances, or fails and leaves the
 * cursor where it was. A length-prefixed vector becomes a sub-reader limited
 * to its body, so a lying inner length cannot reach past its parent.
 */
struct reader {
	const uint8_t *p;
	size_t left;
};

static void rd_init(struct reader *r, const uint8_t *p, size_t n)
{
	*r = (struct reader){ .p = p, .left = n };
}

static size_t rd_left(const struct reader *r)
{
	return r->left;
}

/* Take the next n bytes: *ret points at them, valid while the input is. */
_warn_unused_result_ static bool rd_bytes(struct reader *r, size_t n, const uint8_t **ret)
{
	if (n > r->left)
		return false;
	*ret = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

_warn_unused_result_ static bool rd_be(struct reader *r, size_t n, uint32_t *ret)
{
	const uint8_t *p;
	uint32_t v = 0;

	if (!rd_bytes(r, n, &p))
		return false;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	*ret = v;
	return true;
}

_warn_unused_result_ static bool rd_u8(struct reader *r, uint8_t *ret)
{
	uint32_t v;

	if (!rd_be(r, 1, &v))
		return false;
	*ret = (uint8_t)v;
	return true;
}

_warn_unused_result_ static bool rd_u16(struct reader *r, uint16_t *ret)
{
	uint32_t v;

	if (!rd_be(r, 2, &v))
		return false;
	*ret = (uint16_t)v;
	return true;
}

_warn_unused_result_ static bool rd_u24(struct reader *r, uint32_t *ret)
{
	return rd_be(r, 3, ret);
}

/* A vector with a length prefix of prefix_len bytes (TLS's <0..2^8-1> and
 * <0..2^16-1>): its body becomes *ret. */
_warn_unused_result_ static bool rd_vector(struct reader *r, size_t prefix_len, struct reader *ret)
{
	struct reader save = *r;
	const uint8_t *body;
	uint32_t n;

	if (!rd_be(r, prefix_len, &n) || !rd_bytes(r, n, &body)) {
		*r = save;
		return false;
	}
	rd_init(ret, body, n);
	return true;
}

_warn_unused_result_ static bool rd_vec8(struct reader *r, struct reader *ret)
{
	return rd_vector(r, 1, ret);
}

_warn_unused_result_ static bool rd_vec16(struct reader *r, struct reader *ret)
{
	return rd_vector(r, 2, ret);
}

/* What a failed parse reports besides its errno. */
struct status {
	size_t want;
	const char *why;
};

static int fail(struct status *st, int err, const char *why)
{
	st->why = why;
	return err;
}

static int again(struct status *st, size_t want)
{
	st->want = want;
	return -EAGAIN;
}

/* The handshake message being gathered from its records. */
struct reassembly {
	uint8_t msg[TLS_HANDSHAKE_HEADER + SL_TLS_HELLO_MAX];
	size_t have; /* bytes of msg filled */
	size_t need; /* bytes msg must reach: the header until it is known */
};

/*
 * Read one record header. first tells the client's first record, whose
 * opening bytes decide whether this is TLS at all. Checks run on whatever
 * bytes are present, so garbage fails as early as its first byte, and a
 * prefix of an acceptable input never fails.
 */
static int record_header(struct reader *in, bool first, uint16_t *ret_version,
			 uint16_t *ret_len, struct status *st)
{
	uint8_t type, major, minor;
	uint16_t rlen;

	if (!rd_u8(in, &type))
		return -EAGAIN;
	if (type != TLS_RECORD_HANDSHAKE) {
		if (!first)
			/* RFC 8446 section 5.1: handshake messages are not
			 * interleaved with other records. */
			return fail(st, -EPROTO, "another record type inside the ClientHello");
		/* SSLv2's hello starts with a length whose top bit is set;
		 * it has no SNI and nobody should speak it. */
		if (type & 0x80)
			return fail(st, -EPROTO, "SSLv2-style ClientHello");
		return fail(st, -EINVAL, "not a TLS handshake record");
	}
	if (!rd_u8(in, &major))
		return -EAGAIN;
	if (major != 3)
		return fail(st, first ? -EINVAL : -EPROTO, "record version is not TLS");
	if (!rd_u8(in, &minor))
		return -EAGAIN;
	if (minor < 1 || minor > 4)
		return fail(st, -EPROTO, "record version outside TLS 1.0 to 1.3");
	if (!rd_u16(in, &rlen))
		return -EAGAIN;
	/* Empty handshake records are forbidden (RFC 8446 section 5.1) and
	 * would let a client keep us reading for nothing. */
	if (rlen == 0)
		return fail(st, -EPROTO, "empty handshake record");
	if (rlen > TLS_RECORD_MAX)
		return fail(st, -EPROTO, "record longer than 2^14 bytes");
	*ret_version = (uint16_t)(major << 8 | minor);
	*ret_len = rlen;
	return 0;
}

/* Append up to n bytes of a record's fragment to the message. */
static void take(struct reassembly *ra, struct reader *frag, size_t n)
{
	const uint8_t *p;

	if (n > rd_left(frag))
		n = rd_left(frag);
	/* Cannot fail after the clamp; n <= need - have keeps msg in bounds. */
	if (n == 0 || !rd_bytes(frag, n, &p))
		return;
	memcpy(ra->msg + ra->have, p, n);
	ra->have += n;
}

/* Add one record's fragment: first the handshake header, checked as soon
 * as it is whole, then the body. */
static int add_fragment(struct reassembly *ra, struct reader *frag, struct status *st)
{
	if (ra->have < TLS_HANDSHAKE_HEADER) {
		take(ra, frag, TLS_HANDSHAKE_HEADER - ra->have);
		/* Its first byte already tells whether it is a hello. */
		if (ra->have > 0 && ra->msg[0] != TLS_HANDSHAKE_CLIENT_HELLO)
			return fail(st, -EPROTO, "handshake message is not a ClientHello");
		if (ra->have == TLS_HANDSHAKE_HEADER) {
			struct reader hdr;
			uint8_t type;
			uint32_t body_len;

			rd_init(&hdr, ra->msg, TLS_HANDSHAKE_HEADER);
			if (!rd_u8(&hdr, &type) || !rd_u24(&hdr, &body_len))
				return fail(st, -EPROTO, "internal: handshake header");
			if (body_len > SL_TLS_HELLO_MAX)
				return fail(st, -EPROTO, "ClientHello longer than the cap");
			if (body_len < TLS_HELLO_MIN)
				return fail(st, -EPROTO, "ClientHello too short");
			ra->need = TLS_HANDSHAKE_HEADER + body_len;
		}
	}
	/* Nothing may share a record with the end of the hello: in TLS 1.3
	 * the keys change right after it (RFC 8446 section 5.1), and before
	 * 1.3 the client has nothing else to send. */
	if (rd_left(frag) > ra->need - ra->have)
		return fail(st, -EPROTO, "data after the ClientHello in its record");
	take(ra, frag, rd_left(frag));
	return 0;
}

/*
 * The record layer: gather the ClientHello handshake message (header and
 * body) from consecutive handshake records at the start of buf. On success
 * ra->msg holds it whole and *ret_consumed counts the records' bytes.
 */
static int reassemble(const uint8_t *buf, size_t len, struct reassembly *ra,
		      size_t *ret_consumed, uint16_t *ret_record_version, struct status *st)
{
	struct reader in;
	uint16_t first_version = 0;

	ra->have = 0;
	ra->need = TLS_HANDSHAKE_HEADER;
	rd_init(&in, buf, len);
	for (bool first = true;; first = false) {
		size_t start = len - rd_left(&in);
		const uint8_t *p;
		struct reader frag;
		uint16_t version, rlen;
		int r;

		/* At least another header and the handshake bytes still
		 * missing, however the client splits them. */
		st->want = start + TLS_RECORD_HEADER + (ra->need - ra->have);
		r = record_header(&in, first, &version, &rlen, st);
		if (r < 0)
			return r;
		if (!rd_bytes(&in, rlen, &p)) {
			/* Check what of the record is here: a handshake
			 * header that is no ClientHello fails now, not at a
			 * deadline, while the client waits for an answer
			 * and sends nothing more. A prefix of a fragment
			 * fails only where the whole one would. */
			size_t have = rd_left(&in);

			if (!rd_bytes(&in, have, &p))
				return fail(st, -EPROTO, "internal: partial record");
			rd_init(&frag, p, have);
			r = add_fragment(ra, &frag, st);
			if (r < 0)
				return r;
			if (ra->need > TLS_HANDSHAKE_HEADER && ra->have == ra->need)
				return fail(st, -EPROTO, "data after the ClientHello in its record");
			return again(st, start + TLS_RECORD_HEADER + rlen);
		}
		if (first)
			first_version = version;

		rd_init(&frag, p, rlen);
		r = add_fragment(ra, &frag, st);
		if (r < 0)
			return r;
		if (ra->need > TLS_HANDSHAKE_HEADER && ra->have == ra->need) {
			*ret_consumed = len - rd_left(&in);
			*ret_record_version = first_version;
			return 0;
		}
	}
}

static int parse_server_name(struct reader *data, struct sl_tls_hello *h, struct status *st)
{
	struct reader list, name;
	const uint8_t *p;
	uint8_t name_type;
	size_t n;

	if (!rd_vec16(data, &list) || rd_left(data) != 0)
		return fail(st, -EPROTO, "malformed server_name extension");
	if (!rd_u8(&list, &name_type))
		return fail(st, -EPROTO, "empty server_name list");
	/* Like OpenSSL, take exactly one host_name and nothing else: RFC
	 * 6066 left other name types' syntax unknowable, and two names would
	 * let us decide on one while the server serves the other. */
	if (name_type != SNI_HOST_NAME)
		return fail(st, -EPROTO, "server_name entry is not a host_name");
	if (!rd_vec16(&list, &name))
		return fail(st, -EPROTO, "malformed server_name entry");
	if (rd_left(&list) != 0)
		return fail(st, -EPROTO, "more than one server_name entry");

	n = rd_left(&name);
	if (n == 0)
		return fail(st, -EPROTO, "empty server name");
	if (n > SL_TLS_NAME_MAX)
		return fail(st, -EPROTO, "server name longer than 255 bytes");
	if (!rd_bytes(&name, n, &p))
		return fail(st, -EPROTO, "internal: server name");
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];

		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
			   c == '-' || c == '_'))
			/* NUL would cut the name short for C code further
			 * on; controls and non-ASCII have no place in an
			 * A-label (RFC 6066 section 3: no U-labels). */
			return fail(st, -EPROTO, "server name has a byte outside [A-Za-z0-9._-]");
		h->sni[i] = (char)c;
	}
	h->sni[n] = '\0';
	h->sni_len = n;
	return 0;
}

static int parse_alpn(struct reader *data, struct sl_tls_hello *h, struct status *st)
{
	struct reader list;

	/* RFC 7301 section 3.1: ProtocolNameList protocol_name_list<2..2^16-1>,
	 * each ProtocolName <1..2^8-1>. */
	if (!rd_vec16(data, &list) || rd_left(data) != 0 || rd_left(&list) == 0)
		return fail(st, -EPROTO, "malformed ALPN extension");
	while (rd_left(&list) > 0) {
		struct reader proto;
		const uint8_t *p;
		size_t n;

		if (!rd_vec8(&list, &proto) || rd_left(&proto) == 0)
			return fail(st, -EPROTO, "malformed ALPN protocol name");
		n = rd_left(&proto);
		if (!rd_bytes(&proto, n, &p))
			return fail(st, -EPROTO, "internal: ALPN");
		if (h->alpn_truncated || n + 1 > SL_TLS_ALPN_MAX - h->alpn_len) {
			h->alpn_truncated = true;
			continue;
		}
		h->alpn[h->alpn_len++] = (uint8_t)n;
		memcpy(h->alpn + h->alpn_len, p, n);
		h->alpn_len += n;
	}
	h->has_alpn = true;
	return 0;
}

static int parse_supported_versions(struct reader *data, struct sl_tls_hello *h,
				    struct status *st)
{
	struct reader list;
	uint16_t v, max = 0;

	/* RFC 8446 section 4.2.1: ProtocolVersion versions<2..254> in a
	 * ClientHello. */
	if (!rd_vec8(data, &list) || rd_left(data) != 0 || rd_left(&list) < 2 ||
	    rd_left(&list) % 2 != 0)
		return fail(st, -EPROTO, "malformed supported_versions extension");
	while (rd_u16(&list, &v)) {
		/* Only 0x03xx are versions we know; this skips GREASE
		 * (0x?a?a, RFC 8701) and old drafts (0x7fxx). */
		if (v >> 8 != 3)
			continue;
		if (v == 0x0304)
			h->tls13 = true;
		if (v > max)
			max = v;
	}
	h->has_supported_versions = true;
	if (max)
		h->max_version = max;
	return 0;
}

static int parse_extensions(struct reader *exts, struct sl_tls_hello *h, struct status *st)
{
	/* One bit per extension type: RFC 8446 section 4.2 forbids two
	 * extensions of a type, and two server_names or ALPN lists would be
	 * read one way here and maybe another upstream. */
	uint64_t seen[65536 / 64] = { 0 };

	while (rd_left(exts) > 0) {
		struct reader data;
		uint16_t type;
		int r = 0;

		if (!rd_u16(exts, &type) || !rd_vec16(exts, &data))
			return fail(st, -EPROTO, "truncated extension");
		if (seen[type / 64] & (UINT64_C(1) << (type % 64)))
			return fail(st, -EPROTO, "duplicate extension");
		seen[type / 64] |= UINT64_C(1) << (type % 64);
		h->n_extensions++;

		switch (type) {
		case EXT_SERVER_NAME:
			r = parse_server_name(&data, h, st);
			break;
		case EXT_ALPN:
			r = parse_alpn(&data, h, st);
			break;
		case EXT_SUPPORTED_VERSIONS:
			r = parse_supported_versions(&data, h, st);
			break;
		case EXT_ECH:
		case EXT_ESNI:
			h->ech = true;
			break;
		default:
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* The ClientHello body, RFC 8446 section 4.1.2 (RFC 5246 section 7.4.1.2
 * for the versions before, where the extensions may be absent). */
static int parse_body(struct reader *r, struct sl_tls_hello *h, struct status *st)
{
	struct reader session_id, suites, compression, exts;
	const uint8_t *random;

	if (!rd_u16(r, &h->legacy_version))
		return fail(st, -EPROTO, "truncated ClientHello");
	if (h->legacy_version < 0x0301 || h->legacy_version > 0x0304)
		return fail(st, -EPROTO, "ClientHello version outside TLS 1.0 to 1.3");
	h->max_version = h->legacy_version;
	if (!rd_bytes(r, 32, &random))
		return fail(st, -EPROTO, "truncated ClientHello");
	if (!rd_vec8(r, &session_id) || rd_left(&session_id) > 32)
		return fail(st, -EPROTO, "malformed session id");
	if (!rd_vec16(r, &suites) || rd_left(&suites) < 2 || rd_left(&suites) % 2 != 0)
		return fail(st, -EPROTO, "malformed cipher suites");
	if (!rd_vec8(r, &compression) || rd_left(&compression) < 1)
		return fail(st, -EPROTO, "malformed compression methods");
	if (rd_left(r) == 0)
		return 0;
	if (!rd_vec16(r, &exts))
		return fail(st, -EPROTO, "malformed extensions");
	if (rd_left(r) != 0)
		return fail(st, -EPROTO, "bytes after the extensions");
	return parse_extensions(&exts, h, st);
}

int sl_tls_parse_client_hello_full(const uint8_t *buf, size_t len, struct sl_tls_hello *ret,
				   size_t *ret_want, const char **ret_why)
{
	/* About 16 KiB: a reassembly buffer the size of the cap, on the stack
	 * so that parsing never allocates. */
	struct reassembly ra;
	struct status st = { 0 };
	struct sl_tls_hello h = { 0 };
	int r;

	if (!buf && len > 0)
		r = fail(&st, -EINVAL, "no buffer");
	else
		r = reassemble(buf, len, &ra, &h.consumed, &h.record_version, &st);
	if (r == 0) {
		struct reader body;
		uint8_t type;
		uint32_t body_len;

		/* reassemble() checked the header; step over it. */
		rd_init(&body, ra.msg, ra.have);
		if (!rd_u8(&body, &type) || !rd_u24(&body, &body_len))
			r = fail(&st, -EPROTO, "internal: handshake header");
		else
			r = parse_body(&body, &h, &st);
	}
	if (r == -EAGAIN) {
		if (ret_want)
			*ret_want = st.want;
		return r;
	}
	if (r < 0) {
		if (ret_why)
			*ret_why = st.why;
		return r;
	}
	if (ret)
		*ret = h;
	return 0;
}

int sl_tls_parse_client_hello(const uint8_t *buf, size_t len, struct sl_tls_hello *ret)
{
	return sl_tls_parse_client_hello_full(buf, len, ret, NULL, NULL);
}

bool sl_tls_hello_offers_alpn(const struct sl_tls_hello *hello, const char *proto)
{
	struct reader list, name;
	size_t plen = strlen(proto);

	if (!hello->has_alpn)
		return false;
	rd_init(&list, hello->alpn, hello->alpn_len);
	while (rd_vec8(&list, &name)) {
		const uint8_t *p;

		if (rd_left(&name) == plen && rd_bytes(&name, plen, &p) &&
		    memcmp(p, proto, plen) == 0)
			return true;
	}
	return false;
}

/* The random of a ServerHello that is a HelloRetryRequest (RFC 8446 4.1.3). */
static const uint8_t hrr_random[32] = {
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

/* A record header, a handshake header, the version, the random: 43 bytes. */
int sl_tls_skip_before_retry(const uint8_t *buf, size_t len, size_t *ret_skip)
{
	size_t off = 0;

	for (;;) {
		size_t rlen;

		if (len - off < TLS_RECORD_HEADER) {
			/* A record's start that could be one to skip. */
			if (off < len && (buf[off] == 20 || buf[off] == 23))
				return -EAGAIN;
			break;
		}
		if (buf[off] != 20 && buf[off] != 23)
			break;
		rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (len - off - TLS_RECORD_HEADER < rlen)
			return -EAGAIN;
		off += TLS_RECORD_HEADER + rlen;
	}
	*ret_skip = off;
	return 0;
}

int sl_tls_server_first(const uint8_t *p, size_t n)
{
	if (n < 6)
		return n && p[0] != 22 ? 0 : -EAGAIN;
	if (p[0] != 22 || p[5] != 2 || ((size_t)p[3] << 8 | p[4]) < 38)
		return 0; /* not a handshake record, not a ServerHello, too short for one */
	if (n < 43)
		return -EAGAIN;
	return memcmp(p + 11, hrr_random, sizeof(hrr_random)) == 0;
}
