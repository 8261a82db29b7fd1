/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the websocket frame cutter (ws-frame.h), which
 * reads what an inspected origin sends after its 101, and what the client
 * sends up after it. Byte 0's top bit picks the direction (set: the
 * client's), its other bits how the rest is cut into reads (1 + b bytes
 * each); the input is also fed whole. Beyond not reading past the input
 * (ASan), it checks:
 *   - every header given is the input's next bytes, read right (FIN,
 *     opcode, length in its 7-, 16- or 64-bit form, the client's mask key),
 *     with no reserved bit, a mask from the client and none from the
 *     origin, and no reserved opcode; a control frame is final and at most
 *     125 bytes; a continuation comes only inside a message, a new message
 *     only outside one;
 *   - every payload byte given is the input's next, as many as the header
 *     said (the last frame's may be cut short by the input's end), with
 *     `end` on its last bytes only;
 *   - accepted, every byte of the input was given (but for a header the
 *     input's end cut short);
 *   - the verdict and what was given are the same however it is cut, and
 *     a refusal is repeated;
 *   - refused, what was given and kept reaches the input's last byte fed:
 *     the byte refused is the first that cannot be, so that a relay that
 *     passed on every byte before it passed on a valid stream's start.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws-frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	const uint8_t *in;
	size_t size, pos; /* the input, and how far what was given reached */
	uint64_t want;	  /* the current frame's payload still to come */
	int in_frame, in_message, client;
	unsigned frames, ends;
};

static int on_head(void *userdata, const struct sl_ws_head *h)
{
	struct seen *s = userdata;
	const uint8_t *b = s->in + s->pos;
	size_t left = s->size - s->pos, hl = 2, i;
	uint64_t len;
	unsigned k;

	if (s->want != 0 || left < 2 || b[0] != ((h->fin ? 0x80 : 0) | h->opcode) ||
	    !(b[1] & 0x80) != !s->client)
		abort();
	if (h->opcode > SL_WS_OP_PONG ||
	    (h->opcode > SL_WS_OP_BINARY && h->opcode < SL_WS_OP_CLOSE))
		abort();
	k = b[1] & 0x7f;
	len = k;
	if (k >= 126) {
		hl = k == 126 ? 4 : 10;
		if (left < hl)
			abort();
		for (len = 0, i = 2; i < hl; i++)
			len = len << 8 | b[i];
	}
	if (len != h->len || (len >> 63))
		abort();
	if (s->client) {
		if (left < hl + 4 || memcmp(b + hl, h->mask, 4) != 0)
			abort();
		hl += 4;
	} else if (memcmp(h->mask, "\0\0\0\0", 4) != 0) {
		abort();
	}
	if (h->opcode & 0x08) {
		if (!h->fin || len > SL_WS_CONTROL_MAX)
			abort();
	} else {
		if ((h->opcode == SL_WS_OP_CONT) != (s->in_message != 0))
			abort();
		s->in_message = !h->fin;
	}
	s->pos += hl;
	s->want = len;
	s->in_frame = 1;
	s->frames++;
	return 0;
}

static int on_payload(void *userdata, const void *p, size_t len, int end)
{
	struct seen *s = userdata;

	if (!s->in_frame || len > s->want || (end != 0) != (len == s->want))
		abort();
	if (len > s->size - s->pos || memcmp(s->in + s->pos, p, len) != 0)
		abort();
	s->pos += len;
	s->want -= len;
	if (end) {
		s->in_frame = 0;
		s->ends++;
	}
	return 0;
}

/* Feeds p in reads of step; *kept: the header bytes held at the end, *fed:
 * how far the reads went (a refusal stops them). */
static int run(const uint8_t *p, size_t n, size_t step, int client, struct seen *s, size_t *kept,
	       size_t *fed)
{
	struct sl_ws_frames w;
	size_t at;
	int r = 0;

	sl_ws_frames_init(&w, client);
	memset(s, 0, sizeof(*s));
	s->in = p;
	s->size = n;
	s->client = client;
	for (at = 0; at < n && r == 0; at += step)
		r = sl_ws_frames_feed(&w, p + at, n - at < step ? n - at : step, on_head,
				      on_payload, s);
	*fed = at < n ? at : n;
	if (r != 0 && r != -EPROTO)
		abort();
	if (r != 0 && sl_ws_frames_feed(&w, p, n, on_head, on_payload, s) != r)
		abort();
	*kept = w.head_len;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole, cut, one;
	size_t step, k1, k2, k3, f1, f2, f3;
	int r1, r2, r3, client;

	if (size < 1)
		return 0;
	client = (data[0] & 0x80) != 0;
	step = 1 + (data[0] & 0x7f);
	data++;
	size--;
	r1 = run(data, size, size ? size : 1, client, &whole, &k1, &f1);
	r2 = run(data, size, step, client, &cut, &k2, &f2);
	if (r1 != r2 || whole.pos != cut.pos || whole.frames != cut.frames ||
	    whole.ends != cut.ends)
		abort();
	if (r1 == 0 && (whole.pos + k1 != size || k1 != k2 || k1 >= SL_WS_HEAD_MAX))
		abort();
	/* A byte at a time: refused, the last byte fed is the one refused,
	 * and every byte before it was given or is held as a header's. */
	r3 = run(data, size, 1, client, &one, &k3, &f3);
	(void)f1, (void)f2;
	if (r3 != r1 || one.pos != whole.pos)
		abort();
	if (r3 != 0 && one.pos + k3 != f3)
		abort();
	return 0;
}
