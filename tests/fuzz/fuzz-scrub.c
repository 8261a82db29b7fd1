/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the streaming scrubber. The fuzzer chooses the
 * secrets, the text and how it is cut into calls; the streamed output must
 * equal a whole-buffer reference (at each position the longest secret
 * there is replaced), and no call may leave more than the longest secret
 * minus one byte held back. A second pass flushes after the pieces whose
 * size byte has its top bit set, with same-length markers: the output is
 * as long as the text, and each byte of it is the text's byte there or a
 * marker's, and what the flushes let out of a held tail is never more than
 * SL_SCRUB_FLUSH_MAX bytes.
 *
 * Input: byte 0 picks the number of secrets (1..8); each secret is a length
 * byte (8 + b % 57) and that many bytes; then a count byte and that many
 * chunk sizes (1 + b each, cycled); the rest is the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MARKER "[REDACTED]"
#define MARKER_LEN (sizeof(MARKER) - 1)

struct sink {
	uint8_t *buf;
	size_t len, cap;
};

static int collect(void *userdata, const void *p, size_t len)
{
	struct sink *k = userdata;

	if (len == 0 || k->len + len > k->cap)
		abort();
	memcpy(k->buf + k->len, p, len);
	k->len += len;
	return 0;
}

static size_t reference(const struct sl_scrub_secret *sec, size_t n, const uint8_t *in, size_t len,
			uint8_t *out)
{
	size_t i = 0, o = 0, j, best;

	while (i < len) {
		best = 0;
		for (j = 0; j < n; j++)
			if (sec[j].len <= len - i && sec[j].len > best &&
			    memcmp(in + i, sec[j].value, sec[j].len) == 0)
				best = sec[j].len;
		if (best) {
			memcpy(out + o, MARKER, MARKER_LEN);
			o += MARKER_LEN;
			i += best;
		} else {
			out[o++] = in[i++];
		}
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_scrub_secret sec[SL_SCRUB_MAX_SECRETS];
	const uint8_t *chunks, *text;
	size_t n, i, at = 0, n_chunks, text_len, max_len = 0, want_len, c = 0;
	struct sink k;
	struct sl_scrub s;
	uint8_t *want;

	if (size < 1)
		return 0;
	n = 1 + data[at++] % SL_SCRUB_MAX_SECRETS;
	for (i = 0; i < n; i++) {
		size_t len;

		if (at >= size)
			return 0;
		len = 8 + data[at++] % 57;
		if (size - at < len)
			return 0;
		sec[i] = (struct sl_scrub_secret){data + at, len};
		at += len;
		if (len > max_len)
			max_len = len;
	}
	if (at >= size)
		return 0;
	n_chunks = data[at++];
	if (size - at < n_chunks)
		return 0;
	chunks = data + at;
	at += n_chunks;
	text = data + at;
	text_len = size - at;

	/* The output grows at most by the marker per byte of input. */
	k.cap = text_len * (MARKER_LEN + 1) + 1;
	k.buf = malloc(k.cap);
	want = malloc(k.cap);
	if (!k.buf || !want)
		abort();
	k.len = 0;

	if (sl_scrub_init(&s, sec, n, MARKER) < 0)
		abort();
	for (at = 0; at < text_len;) {
		size_t step = n_chunks ? 1 + (size_t)chunks[c++ % n_chunks] : text_len;

		uint8_t *piece;

		if (step > text_len - at)
			step = text_len - at;
		/* A buffer of its own, as a read's would be: the sanitizer
		 * sees any byte read outside it. */
		piece = malloc(step);
		if (!piece)
			abort();
		memcpy(piece, text + at, step);
		if (sl_scrub_feed(&s, piece, step, collect, &k) < 0)
			abort();
		free(piece);
		if (s.fill > max_len - 1)
			abort();
		at += step;
	}
	if (sl_scrub_finish(&s, collect, &k) < 0 || s.fill != 0)
		abort();
	sl_scrub_free(&s);

	want_len = reference(sec, n, text, text_len, want);
	if (k.len != want_len || memcmp(k.buf, want, want_len) != 0)
		abort();

	k.len = 0;
	if (sl_scrub_init(&s, sec, n, NULL) < 0)
		abort();
	for (at = 0, c = 0; at < text_len;) {
		uint8_t b = n_chunks ? chunks[c++ % n_chunks] : 0;
		size_t step = n_chunks ? 1 + (size_t)(b & 0x7f) : text_len;

		if (step > text_len - at)
			step = text_len - at;
		if (sl_scrub_feed(&s, text + at, step, collect, &k) < 0)
			abort();
		if ((b & 0x80) && sl_scrub_flush(&s, collect, &k) < 0)
			abort();
		if (sl_scrub_held(&s) > max_len - 1 || s.fill > max_len - 1)
			abort();
		/* Pauses let out no more of a tail than a short word. */
		if (s.sent > s.flush_max || s.flush_max > SL_SCRUB_FLUSH_MAX)
			abort();
		at += step;
		if (k.len + sl_scrub_held(&s) != at)
			abort();
	}
	if (sl_scrub_finish(&s, collect, &k) < 0 || s.fill != 0 || k.len != text_len)
		abort();
	for (i = 0; i < text_len; i++)
		if (k.buf[i] != text[i] && k.buf[i] != '*' &&
		    !memchr(SL_SCRUB_SAME_LENGTH_MARKER, k.buf[i], sizeof(SL_SCRUB_SAME_LENGTH_MARKER) - 1))
			abort();
	sl_scrub_free(&s);
	free(k.buf);
	free(want);
	return 0;
}
