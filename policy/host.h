/* SPDX-License-Identifier: MIT */
/*
 * Host names as the policy compares them.
 *
 * Egress filters are bypassed far more often through the way they spell a
 * host than through their rules: "API.example.com.", "[example.com]",
 * "ex\u00e4mple.com" and "0x7f.1" each name something a naive string compare
 * misjudges. Every host, from a policy file or from a client, goes through
 * sl_host_normalize() before it is compared, and the comparison is then an
 * exact byte compare of the normal forms:
 *
 *   - names: lower case, no trailing dot, every label 1..63 bytes, at most 253
 *     bytes, only [a-z0-9_-]; a Unicode name is converted to its IDNA A-label
 *     (punycode) form with UTS #46 mapping, as curl and browsers do;
 *   - IPv4 literals: every form inet_aton(3) and URL parsers accept (127.1,
 *     0x7f.0.0.1, 2130706433) become dotted-quad, so a rule for 127.0.0.1
 *     cannot be walked around; a name whose last label is numeric is an IPv4
 *     literal or invalid, never a name (WHATWG URL's rule);
 *   - IPv6 literals: with or without [brackets], in inet_ntop(3) form; an
 *     IPv4-mapped address becomes its IPv4 form. Brackets around anything but
 *     an IPv6 literal, and zone identifiers, are invalid.
 *
 * The functions here do no I/O and keep no state.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest normal form (a 253-byte name) plus its NUL. */
#define SL_HOST_BUF 256

enum sl_host_kind {
	SL_HOST_NAME,
	SL_HOST_IPV4,
	SL_HOST_IPV6,
};

/* Load libidn2 now (sl_host_normalize() otherwise does, for the first
 * name that is not ASCII): 0, or -ENOENT when it cannot be (such names
 * are then refused, with a reason that says so). For a process about to
 * be confined. */
int sl_host_idn_load(void);

/*
 * Normalise the host in in[0..len) (no port) into ret_host, a buffer of
 * SL_HOST_BUF bytes. Returns 0 on success or -EINVAL; on failure *ret_why, if
 * ret_why is not NULL, points to a static sentence saying what is wrong.
 * ret_host and ret_kind are written only on success.
 */
int sl_host_normalize(const char *in, size_t len, char ret_host[static SL_HOST_BUF],
		      enum sl_host_kind *ret_kind, const char **ret_why);

/*
 * Split an authority ("host", "host:port", "[v6]", "[v6]:port") into its host
 * and port. The host is returned as a slice of the input (brackets kept, so
 * sl_host_normalize() still sees that they were there); *ret_port is the port
 * or 0 when there is none. A port must be 1..65535 in plain decimal, and an
 * unbracketed host may not contain ':'. Returns 0 or -EINVAL with *ret_why.
 */
int sl_host_split(const char *in, size_t len, const char **ret_host, size_t *ret_host_len,
		  uint16_t *ret_port, const char **ret_why);

/*
 * Parse a policy host pattern: a host as above, or "*.suffix", which matches
 * every name strictly below suffix (not suffix itself). The wildcard must be
 * the whole leftmost label and appear once; the suffix must be a name, not an
 * address. ret_host receives the normal form without "*.".
 */
int sl_host_pattern_parse(const char *in, size_t len, char ret_host[static SL_HOST_BUF],
			  bool *ret_wildcard, enum sl_host_kind *ret_kind, const char **ret_why);

/* Does the normal-form name host lie strictly below the normal-form suffix? */
bool sl_host_is_below(const char *host, const char *suffix);
