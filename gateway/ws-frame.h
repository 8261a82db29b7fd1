/* SPDX-License-Identifier: MIT */
/*
 * A websocket's frames from the origin (RFC 6455 5.2), cut into headers
 * and payloads as the bytes come, in reads of any size; pure, for the
 * inspected websocket relay (inspect-response.c) and its fuzz harness.
 * Nothing is decoded but the lengths: the payload is passed on as it
 * came. A masked frame (RFC 6455 5.1: a server never masks, a client
 * closes on one) and a 64-bit length with its top bit set are refused.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SL_WS_HEAD_MAX 14

/* A frame's whole header (2, 4 or 10 bytes), once it has come. */
typedef int sl_ws_head_fn(void *userdata, const uint8_t *head, size_t len);
/* Payload bytes; end: they are the frame's last (also for an empty frame,
 * with len 0). */
typedef int sl_ws_payload_fn(void *userdata, const void *p, size_t len, int end);

struct sl_ws_frames {
	uint8_t head[SL_WS_HEAD_MAX];
	uint8_t head_len;
	uint64_t left; /* of the current frame's payload; 0: in a header */
	int error;
};

/* Cut p[0..n) into headers and payload, calling head and payload in
 * order. Returns 0, -EPROTO (refused: and every later call), or what a
 * callback returned (negative: it stops, and is returned again). */
int sl_ws_frames_feed(struct sl_ws_frames *w, const void *p, size_t n, sl_ws_head_fn *head,
		      sl_ws_payload_fn *payload, void *userdata);
