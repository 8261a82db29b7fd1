/* SPDX-License-Identifier: MIT */
/*
 * A websocket's frames (RFC 6455 5.2), from the origin or from the client,
 * cut into headers and payloads as the bytes come, in reads of any size;
 * pure, for the inspected websocket relay (the origin's frames scrubbed,
 * inspect-response.c; the client's checked on their way up, inspect.c)
 * and its fuzz harness. Nothing is decoded but the header: the payload is
 * passed on as it came (from the client: masked).
 *
 * Refused (-EPROTO), as RFC 6455 has either end fail the connection on
 * them, because a relay that scrubs the payload could not read it, and
 * because an origin must not read anything but frames after its 101 (an
 * agent's plain HTTP behind the upgrade would be a request nobody
 * decided): from the origin a masked frame (5.1: a server never masks;
 * the agent would unmask it), from the client an unmasked one (5.1: a
 * client always masks); either way a reserved bit set (5.2: no extension
 * is negotiated, and one could compress), a reserved opcode, a control
 * frame longer than 125 bytes or fragmented (5.5), a continuation with no
 * message begun or a new message before the last one's final fragment
 * (5.4), a 64-bit length with its top bit set. A byte is refused as soon
 * as it comes (a frame's first byte on its own), so that a relay that
 * passes on what the cutter took passes on nothing of what it refused:
 * plain HTTP ("GET": 'G' has reserved bits set) at its first byte.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SL_WS_HEAD_MAX 14
#define SL_WS_CONTROL_MAX 125

#define SL_WS_OP_CONT 0x0
#define SL_WS_OP_TEXT 0x1
#define SL_WS_OP_BINARY 0x2
#define SL_WS_OP_CLOSE 0x8
#define SL_WS_OP_PING 0x9
#define SL_WS_OP_PONG 0xa

struct sl_ws_head {
	int fin;
	uint8_t opcode;
	uint64_t len;
	uint8_t mask[4]; /* the client's masking key; zeros from the origin */
};

/* A frame's header, once all of it (2, 4 or 10 bytes, and 4 more with a
 * mask) has come. */
typedef int sl_ws_head_fn(void *userdata, const struct sl_ws_head *h);
/* Payload bytes of the frame whose header came last; end: they are its
 * last (also for an empty frame, with len 0). */
typedef int sl_ws_payload_fn(void *userdata, const void *p, size_t len, int end);

struct sl_ws_frames {
	uint8_t head[SL_WS_HEAD_MAX];
	uint8_t head_len;
	uint8_t in_message; /* a data message's final fragment is still to come */
	uint8_t client;	    /* the client's frames: masked; else the origin's: not */
	uint64_t left;	    /* of the current frame's payload; 0: in a header */
	int error;
};

/* Ready w for a websocket's frames from the client (client nonzero) or
 * from the origin (0; a zeroed struct is the same). */
void sl_ws_frames_init(struct sl_ws_frames *w, int client);

/* Cut p[0..n) into headers and payloads, calling head and payload in
 * order. Returns 0, -EPROTO (refused: and every later call), or what a
 * callback returned (negative: it stops, and is returned again). */
int sl_ws_frames_feed(struct sl_ws_frames *w, const void *p, size_t n, sl_ws_head_fn *head,
		      sl_ws_payload_fn *payload, void *userdata);

/* Sec-WebSocket-Accept for a request's Sec-WebSocket-Key key[0..len)
 * (RFC 6455 4.2.2: base64 of the SHA-1 of the key and a fixed GUID), in
 * out, NUL-terminated. 0, or -EINVAL when the key is not what 4.1 has a
 * client send (16 bytes in base64: 22 characters and "=="), -EIO if
 * OpenSSL fails. */
#define SL_WS_ACCEPT_LEN 28
int sl_ws_accept(const char *key, size_t len, char out[SL_WS_ACCEPT_LEN + 1]);
