/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5's bytes (RFC 1928), parsed and written; pure, for socks.c and
 * its fuzz harness. Only what the gateway serves: no authentication
 * (method 0x00) and CONNECT; the rest is parsed as far as needed to
 * refuse it with the right reply. Everything the sandbox sends is
 * untrusted: every length is checked against what was read, and a name
 * is refused unless it could be a host name.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_SOCKS_VERSION 0x05
#define SL_SOCKS_METHOD_NO_AUTH 0x00
#define SL_SOCKS_METHOD_NONE 0xff
#define SL_SOCKS_CMD_CONNECT 0x01
#define SL_SOCKS_ATYP_IPV4 0x01
#define SL_SOCKS_ATYP_DOMAIN 0x03
#define SL_SOCKS_ATYP_IPV6 0x04
/* The longest name taken (DNS's longest, RFC 1035), and the buffer a
 * request's host is written to: a name, dotted IPv4, or "[IPv6]". */
#define SL_SOCKS_NAME_MAX 253
#define SL_SOCKS_HOST_BUF 256
/* A greeting and a request are at most this long (255 methods; a
 * 255-byte name): what may be read before either is whole. */
#define SL_SOCKS_GREETING_MAX (2 + 255)
#define SL_SOCKS_REQUEST_MAX (4 + 1 + 255 + 2)
#define SL_SOCKS_REPLY_LEN 10

/* The reply codes (RFC 1928, section 6). */
enum sl_socks_reply {
	SL_SOCKS_SUCCEEDED = 0x00,
	SL_SOCKS_GENERAL_FAILURE = 0x01,
	SL_SOCKS_NOT_ALLOWED = 0x02, /* connection not allowed by ruleset */
	SL_SOCKS_NET_UNREACHABLE = 0x03,
	SL_SOCKS_HOST_UNREACHABLE = 0x04,
	SL_SOCKS_REFUSED = 0x05,
	SL_SOCKS_TTL_EXPIRED = 0x06,
	SL_SOCKS_CMD_UNSUPPORTED = 0x07,
	SL_SOCKS_ATYP_UNSUPPORTED = 0x08,
};

/*
 * The client's greeting in p[0..len): VER NMETHODS METHODS. Returns its
 * length (> 0) with *ret_no_auth saying whether it offers method 0x00; 0
 * when more bytes are needed; -EPROTO when it is not SOCKS5's (VER other
 * than 5). NMETHODS 0 is a greeting that offers nothing.
 */
int sl_socks_parse_greeting(const uint8_t *p, size_t len, bool *ret_no_auth);

struct sl_socks_request {
	uint8_t cmd;
	uint8_t atyp;
	char host[SL_SOCKS_HOST_BUF]; /* NUL-terminated; host_len bytes */
	size_t host_len;
	uint16_t port;
};

/*
 * The request in p[0..len): VER CMD RSV ATYP DST.ADDR DST.PORT. Returns
 * its length (> 0) and *ret for a CONNECT to a name (1..SL_SOCKS_NAME_MAX
 * bytes of printable ASCII without ':', '[', ']', '/', '@' or '\\'), an
 * IPv4 address (dotted) or an IPv6 one (in brackets, as a CONNECT target
 * spells it), on a port other than 0; 0 when more bytes are needed; or a
 * negative errno with *ret_reply the code to refuse it with: -ENOTSUP and
 * SL_SOCKS_CMD_UNSUPPORTED for BIND, UDP ASSOCIATE and any other command
 * (known as soon as CMD is read), -EAFNOSUPPORT and
 * SL_SOCKS_ATYP_UNSUPPORTED for an unknown ATYP, -EINVAL and
 * SL_SOCKS_GENERAL_FAILURE for the rest (VER, RSV, an empty, over-long or
 * ill-formed name, port 0).
 */
int sl_socks_parse_request(const uint8_t *p, size_t len, struct sl_socks_request *ret,
			   enum sl_socks_reply *ret_reply);

/* A reply (VER REP RSV ATYP BND.ADDR BND.PORT) into out: BND is always
 * 0.0.0.0:0 (the gateway's own side of the upstream connection is
 * nothing the sandbox needs to know). */
void sl_socks_reply(enum sl_socks_reply rep, uint8_t out[static SL_SOCKS_REPLY_LEN]);

/*
 * The reply for a refusal the gateway would answer a CONNECT with HTTP
 * `status` and audit `reason`, with `connect_status` the upstream
 * connect's libuv error (0: none): a policy's refusal (403, and 429 for
 * the DNS budget) is "not allowed by ruleset"; a refused connection,
 * unreachable network or host, and a name that does not resolve say so;
 * a timeout is "host unreachable"; anything else "general failure".
 */
enum sl_socks_reply sl_socks_reply_for(int status, const char *reason, int connect_status);
