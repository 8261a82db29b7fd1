/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the websocket frame cutter (ws-frame.h), which
 * reads what an inspected origin sends after its 101. Byte 0 picks how
 * the rest is cut into reads (1 + b bytes each, or whole). Beyond not
 * reading past the input (ASan), it checks:
 *   - every byte comes out once, in order, as a header's or a payload's
 *     (but for a header the input's end cut short, which is kept);
 *   - each header is 2, 4 or 10 bytes, unmasked, and the payload after it
 *     is as long as it says (the last frame's may be cut short by the
 *     input's end), with `end` on its last bytes only;
 *   - the verdict and the pieces are the same however the input is cut.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws-frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint8_t out[4096];
	size_t len;
	uint8_t trace[4096]; /* 'H' per header, 'E' per frame end */
	size_t tlen;
	uint64_t want; /* the current frame's payload still to come */
	int in_frame;
	size_t kept; /* a header's first bytes, at the input's end */
};

static void add(struct seen *s, const void *p, size_t n)
{
	if (s->len + n > sizeof(s->out))
		abort();
	memcpy(s->out + s->len, p, n);
	s->len += n;
}

static int on_head(void *userdata, const uint8_t *head, size_t len)
{
	struct seen *s = userdata;
	unsigned k = head[1] & 0x7f;
	uint64_t n = k;
	size_t i;

	if ((head[1] & 0x80) || s->want != 0)
		abort();
	if (len != (k == 126 ? 4u : k == 127 ? 10u : 2u))
		abort();
	if (k >= 126)
		for (n = 0, i = 2; i < len; i++)
			n = n << 8 | head[i];
	if (k == 127 && (n >> 63))
		abort();
	s->want = n;
	s->in_frame = 1;
	add(s, head, len);
	if (s->tlen < sizeof(s->trace))
		s->trace[s->tlen++] = 'H';
	return 0;
}

static int on_payload(void *userdata, const void *p, size_t len, int end)
{
	struct seen *s = userdata;

	if (!s->in_frame || len > s->want || (end != 0) != (len == s->want))
		abort();
	s->want -= len;
	add(s, p, len);
	if (end) {
		s->in_frame = 0;
		if (s->tlen < sizeof(s->trace))
			s->trace[s->tlen++] = 'E';
	}
	return 0;
}

static int run(const uint8_t *p, size_t n, size_t step, struct seen *s)
{
	struct sl_ws_frames w;
	size_t at;
	int r = 0;

	memset(&w, 0, sizeof(w));
	memset(s, 0, sizeof(*s));
	for (at = 0; at < n && r == 0; at += step) {
		size_t k = n - at < step ? n - at : step;

		r = sl_ws_frames_feed(&w, p + at, k, on_head, on_payload, s);
	}
	if (r != 0 && r != -EPROTO)
		abort();
	s->kept = w.head_len;
	/* Refused: refused again. */
	if (r != 0 && sl_ws_frames_feed(&w, p, n, on_head, on_payload, s) != r)
		abort();
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen whole, cut;
	size_t step;
	int r1, r2;

	if (size < 1 || size > 4000)
		return 0;
	step = 1 + data[0];
	data++;
	size--;
	r1 = run(data, size, size ? size : 1, &whole);
	r2 = run(data, size, step, &cut);
	if (r1 != r2 || whole.len != cut.len || memcmp(whole.out, cut.out, whole.len) != 0 ||
	    whole.tlen != cut.tlen || memcmp(whole.trace, cut.trace, whole.tlen) != 0)
		abort();
	/* Accepted: every byte came out, in order. */
	if (r1 == 0 && (whole.len + whole.kept != size || whole.kept >= SL_WS_HEAD_MAX ||
			memcmp(whole.out, data, whole.len) != 0))
		abort();
	return 0;
}
