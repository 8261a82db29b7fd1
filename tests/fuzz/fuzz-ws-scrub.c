/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the scrubbed websocket relay (ws-scrub.h): the
 * origin's frames in, the frames the agent reads out. Input: byte 0 the
 * number of secrets (1..3), each a length byte (8 + b % 41) and that many
 * bytes; then a byte of read sizes (1 + b); then a byte whose bits say
 * after which reads a pause flush comes (0: none); the rest is the
 * origin's bytes. Checks, beyond ASan's:
 *   - the output parses as RFC 6455 frames from a server: no mask, no
 *     reserved bit or opcode, control frames final and <= 125 bytes,
 *     continuations only inside a message;
 *   - it holds as many messages and control frames as the input did up to
 *     where it stopped, each the same length as the input's;
 *   - without pauses, each message is exactly the input's message scrubbed
 *     whole by a scrubber of its own, each control frame its payload
 *     scrubbed whole;
 *   - with pauses, each output byte of a message is the input's byte there
 *     or a marker's;
 *   - nothing follows a close.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"
#include "ws-frame.h"
#include "ws-scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 65536

struct buf {
	uint8_t b[CAP];
	size_t len;
};

static int append(void *userdata, const void *p, size_t n)
{
	struct buf *o = userdata;

	if (n > CAP - o->len)
		abort();
	memcpy(o->b + o->len, p, n);
	o->len += n;
	return 0;
}

/* A stream of frames, joined: each message's payload, in order, and
 * each control frame's, in order, as (kind, bytes) pieces in `msgs`
 * (messages and control frames apart: a control frame may come out
 * before a message whose first bytes the scrubber still holds). */
struct parsed {
	struct buf msgs[64];
	uint8_t kind[64]; /* the message's opcode, or the control frame's */
	bool whole[64];   /* the message's final fragment came */
	size_t n;
	bool after_close; /* a frame came after a close */
};

/* Parses out as a client would; 0, or -1 for framing a client refuses. */
static int parse(const uint8_t *p, size_t len, struct parsed *ps, struct parsed *ctl, bool strict)
{
	size_t at = 0;
	bool in_msg = false, closed = false;
	size_t cur = 0;

	memset(ps, 0, sizeof(*ps));
	memset(ctl, 0, sizeof(*ctl));
	while (at < len) {
		uint64_t n;
		size_t hl = 2, i;
		uint8_t op;
		bool fin;

		if (len - at < 2)
			return strict ? -1 : 0;
		fin = p[at] & 0x80;
		op = p[at] & 0x0f;
		if ((p[at] & 0x70) || (p[at + 1] & 0x80))
			return -1;
		n = p[at + 1] & 0x7f;
		if (n >= 126) {
			hl = n == 126 ? 4 : 10;
			if (len - at < hl)
				return strict ? -1 : 0;
			for (n = 0, i = 2; i < hl; i++)
				n = n << 8 | p[at + i];
		}
		if (n > len - at - hl) {
			/* Cut short by the input's end: a message's bytes so
			 * far count (the relay sends them on at the end), a
			 * control frame's do not (it never sends half of one). */
			if (strict)
				return -1;
			if (!(op & 0x08) && !closed && !(op == SL_WS_OP_CONT && !in_msg) &&
			    !(op != SL_WS_OP_CONT && in_msg) && op <= SL_WS_OP_BINARY && ps->n < 64) {
				if (!in_msg) {
					cur = ps->n++;
					ps->kind[cur] = op;
				}
				append(&ps->msgs[cur], p + at + hl, len - at - hl);
				ps->whole[cur] = false;
			}
			return 0;
		}
		if (closed)
			ps->after_close = true;
		if (op & 0x08) {
			if (!fin || n > 125 || op > SL_WS_OP_PONG || ctl->n >= 64)
				return -1;
			ctl->kind[ctl->n] = op;
			ctl->whole[ctl->n] = true;
			append(&ctl->msgs[ctl->n++], p + at + hl, (size_t)n);
			closed = closed || op == SL_WS_OP_CLOSE;
		} else {
			if (op > SL_WS_OP_BINARY || (op == SL_WS_OP_CONT) != in_msg)
				return -1;
			if (!in_msg) {
				if (ps->n >= 64)
					return -1;
				cur = ps->n++;
				ps->kind[cur] = op;
			}
			append(&ps->msgs[cur], p + at + hl, (size_t)n);
			in_msg = !fin;
			ps->whole[cur] = fin;
		}
		at += hl + (size_t)n;
	}
	return 0;
}

static int to_sink(void *userdata, const void *p, size_t n)
{
	return append(userdata, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct buf out, ref;
	static struct parsed pin, pout, cin, cout;
	struct sl_scrub_secret sec[3];
	struct sl_scrub s, r;
	struct sl_ws_scrub w;
	size_t nsec, i, at, step, reads = 0;
	uint8_t pauses;
	int rc = 0;

	if (size < 1 || size > 8192)
		return 0;
	nsec = 1 + data[0] % 3;
	at = 1;
	for (i = 0; i < nsec; i++) {
		size_t l;

		if (at >= size)
			return 0;
		l = 8 + data[at++] % 41;
		if (size - at < l)
			return 0;
		sec[i].value = data + at;
		sec[i].len = l;
		at += l;
	}
	if (size - at < 2)
		return 0;
	step = 1 + data[at++];
	pauses = data[at++];
	data += at;
	size -= at;

	if (sl_scrub_init(&s, sec, nsec, NULL) < 0)
		abort();
	memset(&w, 0, sizeof(w));
	sl_ws_scrub_init(&w, &s, append, &out);
	out.len = 0;
	for (at = 0; at < size && rc == 0; at += step, reads++) {
		size_t k = size - at < step ? size - at : step;

		rc = sl_ws_scrub_feed(&w, data + at, k);
		if (rc == 0 && (pauses >> (reads % 8) & 1))
			rc = sl_ws_scrub_flush(&w, false);
	}
	if (rc != 0 && rc != -EPROTO)
		abort();
	if (rc == 0 && sl_ws_scrub_flush(&w, true) != 0)
		abort();
	sl_ws_scrub_free(&w);

	/* What the origin sent (as far as it was taken) and what came out. */
	if (parse(out.b, out.len, &pout, &cout, true) < 0)
		abort();
	if (pout.after_close)
		abort();
	if (rc == 0 && parse(data, size, &pin, &cin, false) == 0 && !pin.after_close) {
		if (pout.n > pin.n || cout.n != cin.n)
			abort();
		for (i = 0; i < cout.n; i++) {
			/* A control frame: its payload scrubbed whole. */
			ref.len = 0;
			if (cout.kind[i] != cin.kind[i] ||
			    sl_scrub_whole(&s, cin.msgs[i].b, cin.msgs[i].len, to_sink, &ref) < 0 ||
			    ref.len != cout.msgs[i].len || memcmp(ref.b, cout.msgs[i].b, ref.len) != 0)
				abort();
		}
		for (i = 0; i < pout.n; i++) {
			const struct buf *a = &pin.msgs[i], *b = &pout.msgs[i];
			size_t j;

			if (pout.kind[i] != pin.kind[i])
				abort();
			if (pin.whole[i] && b->len != a->len)
				abort();
			if (b->len > a->len)
				abort();
			if (!pin.whole[i])
				continue;
			if (!pauses) {
				/* Exactly the message scrubbed whole. */
				if (sl_scrub_init(&r, sec, nsec, NULL) < 0)
					abort();
				ref.len = 0;
				if (sl_scrub_feed(&r, a->b, a->len, to_sink, &ref) < 0 ||
				    sl_scrub_finish(&r, to_sink, &ref) < 0)
					abort();
				sl_scrub_free(&r);
				if (ref.len != b->len || memcmp(ref.b, b->b, b->len) != 0)
					abort();
			} else {
				for (j = 0; j < b->len; j++)
					if (b->b[j] != a->b[j] && b->b[j] != '*' &&
					    !memchr(SL_SCRUB_SAME_LENGTH_MARKER, b->b[j],
						    sizeof(SL_SCRUB_SAME_LENGTH_MARKER) - 1))
						abort();
			}
		}
	}
	sl_scrub_free(&s);
	return 0;
}
