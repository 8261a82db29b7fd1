/* SPDX-License-Identifier: MIT */
/*
 * A streaming scrubber: bytes flowing back to the sandbox (response heads
 * and bodies of inspected connections) pass through it, and every
 * occurrence of an injected secret's value is replaced by a fixed marker,
 * also where the value straddles two reads, two chunks or many tiny ones.
 * A secret that comes back (an origin that echoes request headers, an error
 * page that quotes them) must never reach the agent.
 *
 * Matching is greedy, leftmost then longest: at each position of the
 * stream, the longest secret that occurs there is replaced and scanning
 * resumes after it; otherwise the byte passes and scanning moves on one
 * byte. The output is exactly what that rule gives on the whole stream at
 * once, however the stream is cut into calls (unless sl_scrub_flush cut
 * it short).
 *
 * What is held back. Between calls at most (longest secret - 1) bytes are
 * held back: the trailing run of bytes after the last break byte (control
 * characters, space, quotes, brackets, braces, comma, semicolon: a fixed
 * set, scrub.c is_break), which could still be part of a secret. Which
 * bytes are held depends only on that public set and the longest secret's
 * length, never on whether the bytes begin a secret: a scrubber that held
 * back only a secret's beginnings would tell an agent that makes an origin
 * echo its guesses (a streaming echo, a model asked to repeat them) which
 * guess begins the key, one byte at a time. A stream that pauses after a
 * break byte (a server-sent event's blank line, a JSON message's brace)
 * is passed on whole, at once; one that pauses after a word waits for its
 * next bytes, or (a short word) for sl_scrub_flush. When a secret itself
 * holds a break byte, the last (longest - 1) bytes are always held.
 * Memory is fixed
 * at init (one mapping, kept out of core dumps, wiped on free); feeding
 * allocates nothing. Each feed is searched where it lies (memmem per
 * secret), only the held-back tail position by position: O(n * m) in the
 * worst case for a secret of length m <= SL_SCRUB_MAX_LEN, sublinear on
 * ordinary text.
 *
 * The marker is emitted verbatim; a secret that shares bytes with the
 * marker could in principle be spelled out by a marker and its neighbours.
 * Secrets are random API keys and the marker is plain text, so this is not
 * guarded against.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_SCRUB_MAX_SECRETS 8
/* Shorter values would be replaced where they occur by chance. */
#define SL_SCRUB_MIN_LEN 8
#define SL_SCRUB_MAX_LEN 4096
#define SL_SCRUB_MAX_MARKER 64
/* sl_scrub_flush passes on a held tail only while it is at most this long
 * (and at most a quarter of the shortest secret), counting what earlier
 * flushes passed on of it. */
#define SL_SCRUB_FLUSH_MAX 7
/* With marker NULL, each match is replaced by this text cut or padded with
 * '*' to the match's own length (shorter matches: all '*'), so the bytes
 * keep their count: Content-Length and chunk sizes stay true. */
#define SL_SCRUB_SAME_LENGTH_MARKER "[redacted by sluice]"

/* Where the scrubbed bytes go. Return 0, or a negative errno to stop: the
 * feed or finish that called it returns that value, and the scrubber is
 * then broken (every later call returns the same error). */
typedef int sl_scrub_out_fn(void *userdata, const void *buf, size_t len);

struct sl_scrub_secret {
	const void *value;
	size_t len;
};

/* Fields are private to scrub.c; the struct is public so that it can live
 * inside a connection. `fill` is the number of bytes held back. */
struct sl_scrub {
	unsigned char *map; /* one mapping: the secrets' copies, then buf */
	size_t map_len;
	const unsigned char *secret[SL_SCRUB_MAX_SECRETS]; /* longest first */
	size_t len[SL_SCRUB_MAX_SECRETS];
	size_t n;
	size_t max_len;
	uint8_t first[256]; /* bit i: secret[i] starts with this byte */
	uint8_t second[256]; /* bit i: this byte is secret[i]'s second */
	unsigned char first_bytes[SL_SCRUB_MAX_SECRETS]; /* the distinct ones */
	size_t n_first;
	unsigned char *buf;
	size_t cap, fill;
	size_t dirty; /* of buf, the bytes the stream may have written */
	size_t sent; /* of the fill, passed on already by sl_scrub_flush */
	bool strict; /* a secret holds a break byte: always hold max_len - 1 */
	size_t flush_max; /* the longest tail a flush passes on */
	char marker[SL_SCRUB_MAX_MARKER];
	size_t marker_len;
	bool same_length;
	int error;
};

/*
 * Initialise s with n (1..SL_SCRUB_MAX_SECRETS) secrets, each
 * SL_SCRUB_MIN_LEN..SL_SCRUB_MAX_LEN bytes, and a marker of at most
 * SL_SCRUB_MAX_MARKER - 1 bytes (NULL: same-length markers, see above).
 * The secrets are copied. Returns 0, -EINVAL for arguments out of range,
 * or -ENOMEM. On failure s is left so that
 * sl_scrub_free is harmless.
 */
int sl_scrub_init(struct sl_scrub *s, const struct sl_scrub_secret *secrets, size_t n,
		  const char *marker);

/* Pass len bytes of the stream through, calling out with the bytes that are
 * decided (possibly several times, possibly not at all). Returns 0 or the
 * error out returned. */
int sl_scrub_feed(struct sl_scrub *s, const void *in, size_t len, sl_scrub_out_fn *out,
		  void *userdata);

/*
 * The stream pauses (nothing came for a while): pass on what is held back,
 * as if the stream ended here, but remember it, if the held tail is short
 * (sl_scrub_flushable); a longer one waits for the next bytes or the end.
 * Should the bytes that come next complete a secret that began in it, the
 * rest of that secret is replaced. So what pauses let out of a secret
 * before it is complete is its first SL_SCRUB_FLUSH_MAX bytes at most
 * (fewer for a short secret), however many pauses cut it and wherever
 * they fall: an agent can place a pause (it stops reading, and the gateway
 * stops reading the origin; an origin far away sends its first window of
 * bytes a round trip before the rest) and move its own bytes so that the
 * key is cut where it wants, so that a flush that passed on all it held
 * would let out all but the last byte of a key, and the echo of a guess
 * at that byte, replaced or not, the rest. The limit depends on the
 * tail's length alone, which the break set decides, never on whether it
 * begins a secret. Returns 0 or the error out returned.
 */
int sl_scrub_flush(struct sl_scrub *s, sl_scrub_out_fn *out, void *userdata);

/* Scrub p[0..len) as a whole stream of its own (a websocket's control
 * frame, between two fragments of a message), calling out with it,
 * replaced where a secret occurs; the stream being fed is not touched.
 * Returns 0 or the error out returned. */
int sl_scrub_whole(struct sl_scrub *s, const void *p, size_t len, sl_scrub_out_fn *out,
		   void *userdata);

/* How many bytes are held back and not passed on yet. */
size_t sl_scrub_held(const struct sl_scrub *s);

/* How many of them sl_scrub_flush would pass on now (0: a flush does
 * nothing). */
size_t sl_scrub_flushable(const struct sl_scrub *s);

/* The stream has ended: decide and emit the held-back bytes. Afterwards s
 * is empty and may carry a new stream. */
int sl_scrub_finish(struct sl_scrub *s, sl_scrub_out_fn *out, void *userdata);

/* Ready s for a new stream of the same secrets, as if just initialised:
 * the bytes held back (of the stream that was cut short, say) are wiped
 * and dropped, an error is forgotten; the secrets' copies stay. */
void sl_scrub_reset(struct sl_scrub *s);

/* Wipe and unmap the buffers. Accepts a zeroed or failed-init s; safe to
 * call twice. */
void sl_scrub_free(struct sl_scrub *s);
