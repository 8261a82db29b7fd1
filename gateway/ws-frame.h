/* SPDX-License-Identifier: MIT */
/*
 * A websocket's frames from the origin (RFC 6455 5.2), cut into headers
 * and payloads as the bytes come, in reads of any size; pure, for the
 * inspected websocket relay (inspect-response.c) and its fuzz harness.
 * Nothing is decoded but the header: the payload is passed on as it came.
 *
 * Refused (-EPROTO), as RFC 6455 has a client fail the connection on
 * them, and because a relay that scrubs the payload could not read it: a
 * masked frame (5.1: a server never masks; the agent would unmask it), a
 * reserved bit set (5.2: no extension is negotiated, and one could
 * compress), a reserved opcode, a control frame longer than 125 bytes or
 * fragmented (5.5), a continuation with no message begun or a new message
 * before the last one's final fragment (5.4), a 64-bit length with its
 * top bit set.
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
};

/* A frame's header, once all of it (2, 4 or 10 bytes) has come. */
typedef int sl_ws_head_fn(void *userdata, const struct sl_ws_head *h);
/* Payload bytes of the frame whose header came last; end: they are its
 * last (also for an empty frame, with len 0). */
typedef int sl_ws_payload_fn(void *userdata, const void *p, size_t len, int end);

struct sl_ws_frames {
	uint8_t head[SL_WS_HEAD_MAX];
	uint8_t head_len;
	uint8_t in_message; /* a data message's final fragment is still to come */
	uint64_t left; /* of the current frame's payload; 0: in a header */
	int error;
};

/* Cut p[0..n) into headers and payloads, calling head and payload in
 * order. Returns 0, -EPROTO (refused: and every later call), or what a
 * callback returned (negative: it stops, and is returned again). */
int sl_ws_frames_feed(struct sl_ws_frames *w, const void *p, size_t n, sl_ws_head_fn *head,
		      sl_ws_payload_fn *payload, void *userdata);
