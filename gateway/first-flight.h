/* SPDX-License-Identifier: MIT */
/*
 * What a client's first bytes on a connection are, before anything about
 * them is decided: a TLS ClientHello, an HTTP request, or something else
 * (which is relayed only where a rule declares `protocol: tcp`). Used for
 * the bytes inside a CONNECT tunnel and for captured connections.
 */
#pragma once

#include <stddef.h>

enum sl_flight {
	SL_FLIGHT_MORE,  /* too few bytes to tell */
	SL_FLIGHT_TLS,   /* a TLS handshake record: parse it as a ClientHello */
	SL_FLIGHT_HTTP,  /* an HTTP request line begins (after *skip bytes) */
	SL_FLIGHT_OTHER, /* neither */
};

/* At most this many bytes of empty lines ("\r\n" or "\n") before a request
 * line are skipped, as servers do (RFC 9112 section 2.2); more is not HTTP. */
#define SL_FLIGHT_MAX_SKIP 16

/* Classify p[0..len). *skip: how many leading bytes are empty lines (only
 * for SL_FLIGHT_HTTP; 0 otherwise). Pure; never reads past len. */
enum sl_flight sl_first_flight(const char *p, size_t len, size_t *skip);
