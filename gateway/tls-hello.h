/* SPDX-License-Identifier: MIT */
/*
 * A parser for the TLS ClientHello, the first thing a client sends on a TLS
 * connection. The gateway peeks at it without terminating TLS: on a CONNECT
 * tunnel or a transparently captured port-443 connection, the SNI names the
 * destination the policy decides on. Pure functions over the bytes received
 * so far; no I/O, no allocation, no printing.
 *
 * The input is untrusted and the parser is strict: whatever it accepts must
 * mean one thing only, so that the name the gateway decides on is the name
 * the upstream server will act on (RFC 8446 section 4.1.2, RFC 6066
 * section 3). A hello that might be read two ways is rejected.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest server name kept: a DNS name (253) with a trailing dot fits. */
#define SL_TLS_NAME_MAX 255

/*
 * The longest ClientHello body reassembled across records. A plaintext
 * record holds at most 2^14 bytes (RFC 8446 section 5.1); real hellos,
 * post-quantum key shares included, stay well below that.
 */
#define SL_TLS_HELLO_MAX 16384

/* The ALPN protocol list kept, in wire format (see alpn_truncated). */
#define SL_TLS_ALPN_MAX 256

struct sl_tls_hello {
	/* Bytes of the input taken by the records that carry the hello. Any
	 * bytes after them (a ChangeCipherSpec, early data) are not parsed. */
	size_t consumed;

	uint16_t record_version; /* of the first record: 0x0301..0x0304 */
	uint16_t legacy_version; /* ClientHello.legacy_version */
	/* The highest version offered: from supported_versions (GREASE
	 * ignored) when present, legacy_version otherwise. */
	uint16_t max_version;
	bool has_supported_versions;
	bool tls13; /* supported_versions offers TLS 1.3 (0x0304) */

	/*
	 * encrypted_client_hello (0xfe0d) or the older draft's
	 * encrypted_server_name (0xffce) is present: the SNI seen here is the
	 * public, outer name and not where the client is going. The caller
	 * must treat such a hello as undecidable.
	 */
	bool ech;

	/* host_name from server_name, lower-cased, NUL-terminated; only
	 * [a-z0-9._-], 1..255 bytes, a trailing dot kept as sent. Empty
	 * (sni_len == 0) when the client sent no server_name. */
	char sni[SL_TLS_NAME_MAX + 1];
	size_t sni_len;

	/* application_layer_protocol_negotiation: the ProtocolNameList as
	 * on the wire (each name preceded by its length byte), which is the
	 * form OpenSSL's ALPN calls take. When the client's list is longer
	 * than SL_TLS_ALPN_MAX, the names that fit whole are kept and
	 * alpn_truncated is set. */
	bool has_alpn;
	bool alpn_truncated;
	uint8_t alpn[SL_TLS_ALPN_MAX];
	size_t alpn_len;

	unsigned n_extensions;
};

/*
 * Parse the ClientHello at the start of buf, which holds the bytes the client
 * has sent so far (TLS records of type handshake, the hello possibly split
 * across several of them).
 *
 * Returns 0 and fills *ret when a complete ClientHello was parsed;
 *   -EAGAIN when buf is a valid beginning but the hello is not complete yet;
 *   -EINVAL when buf does not start with a TLS handshake record at all
 *           (plaintext HTTP, garbage): decided from the first bytes;
 *   -EPROTO when it is TLS but not an acceptable ClientHello: an SSLv2-style
 *           hello, another handshake message, a malformed or oversized
 *           hello, duplicate extensions (RFC 8446 section 4.2), a
 *           server_name with more than one entry, a non-host_name entry, or
 *           a name that is empty, longer than SL_TLS_NAME_MAX or has bytes
 *           outside [A-Za-z0-9._-].
 * An error is final: more bytes will not turn it into success. Any prefix of
 * a hello that parses gives -EAGAIN. *ret is written only on success; ret
 * may be NULL to classify the bytes only. Uses about 24 KiB of stack.
 */
int sl_tls_parse_client_hello(const uint8_t *buf, size_t len, struct sl_tls_hello *ret);

/*
 * The same, with two optional (NULL) out-parameters for the caller's
 * bookkeeping, each written only on the return it belongs to:
 *   ret_want on -EAGAIN: a lower bound on the total length buf must have
 *            before another call can make progress (always > len);
 *   ret_why  on -EINVAL/-EPROTO: a short static reason for the audit log.
 */
int sl_tls_parse_client_hello_full(const uint8_t *buf, size_t len, struct sl_tls_hello *ret,
				   size_t *ret_want, const char **ret_why);

/* Whether the client's ALPN list (as kept) offers proto, e.g. "http/1.1". */
bool sl_tls_hello_offers_alpn(const struct sl_tls_hello *hello, const char *proto);

/* Before the second ClientHello (after a HelloRetryRequest), what a
 * server reads past: whole ChangeCipherSpec records (RFC 8446 D.4) and
 * whole application_data records (early data the first flight carried,
 * which a server that asked for a retry skips, 4.2.10). 0 with *ret_skip
 * the bytes of those records at the start of buf (the hello, or whatever
 * else, begins there); -EAGAIN when buf ends inside one of them. Counted
 * record by record, as the server does, so that the hello checked next
 * is the one the server reads next. */
int sl_tls_skip_before_retry(const uint8_t *buf, size_t len, size_t *ret_skip);

/* The start of what a server sent back to a ClientHello: 1 when it is a
 * HelloRetryRequest (TLS 1.3: the client sends a second ClientHello),
 * 0 when it is anything else (a ServerHello, an alert, not TLS), -EAGAIN
 * when more bytes are needed (at most 43 decide). */
int sl_tls_server_first(const uint8_t *p, size_t n);
