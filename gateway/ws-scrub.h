/* SPDX-License-Identifier: MIT */
/*
 * A websocket from the origin, scrubbed and framed again; pure, for the
 * inspected relay (inspect-response.c) and its fuzz harness.
 *
 * Each data message is one stream for the scrubber (scrub.h), across its
 * fragments, finished with its final one: a key the origin cut across two
 * fragments (a server that fragments long messages at a fixed size, the
 * agent padding its own bytes to put the cut in the key) is still one key,
 * and a message that ends in a word comes as soon as it is whole, not with
 * the next (a pause passes on a short word only, sl_scrub_flush). What the
 * scrubber lets out leaves as frames of ours, at most SL_WS_SCRUB_OUT_CAP
 * bytes each, at most one per feed: the first with the message's opcode,
 * the rest continuations, the last final (RFC 6455 5.4 lets an
 * intermediary fragment a message anew). A control frame (5.5: 125 bytes
 * at most, never fragmented) is gathered whole, scrubbed apart
 * (sl_scrub_whole) and sent on where it came, between two fragments if
 * it came between them. After the origin's close nothing of a message
 * follows (5.5.1): the one it cut short is dropped, held bytes and all.
 * What the agent could read past the scrubber is refused (ws-frame.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scrub.h"
#include "ws-frame.h"

#define SL_WS_SCRUB_OUT_CAP 16384

/* Where the frames go. Return 0, or a negative errno to stop. */
typedef int sl_ws_scrub_write_fn(void *userdata, const void *p, size_t len);

struct sl_ws_scrub {
	struct sl_ws_frames frames;
	struct sl_scrub *scrub; /* the connection's; not owned */
	sl_ws_scrub_write_fn *write;
	void *userdata;
	struct sl_ws_head frame; /* the one being read */
	uint8_t op;		 /* the message's opcode, for its first frame out */
	bool started;		 /* a frame of the message has gone out */
	bool closed;		 /* the origin's close has gone out */
	uint8_t ctl[SL_WS_CONTROL_MAX];
	size_t ctl_len;
	char *out; /* SL_WS_SCRUB_OUT_CAP, malloc'd at the first message */
	size_t out_len;
};

/* Ready w (zeroed, or freed) for a websocket whose messages scrub scrubs
 * (from its start: nothing held), whose frames go to write. */
void sl_ws_scrub_init(struct sl_ws_scrub *w, struct sl_scrub *scrub, sl_ws_scrub_write_fn *write,
		      void *userdata);

/* The origin's next bytes. Returns 0, -EPROTO (a frame refused: the
 * websocket must end), -ENOMEM, or what write or the scrubber returned. */
int sl_ws_scrub_feed(struct sl_ws_scrub *w, const void *p, size_t n);

/* The stream paused (finish false: sl_scrub_flush's short word) or ended
 * (finish true): what the scrubber holds of a message, sent on as a
 * fragment of it. */
int sl_ws_scrub_flush(struct sl_ws_scrub *w, bool finish);

/* Wipe and free what w holds (bytes of the origin's, unscrubbed). */
void sl_ws_scrub_free(struct sl_ws_scrub *w);
