/* SPDX-License-Identifier: MIT */
/* The scrubbed websocket relay (ws-scrub.h): messages scrubbed whole
 * across fragments, control frames apart, nothing after a close. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ws-scrub.h"

static const char key[] = "sk-live-Q7rT2xZ9pL4mN8vB3cKw5Yh1Jd6Fs0Ge";

struct out {
	uint8_t b[4096];
	size_t len;
};

static int append(void *userdata, const void *p, size_t n)
{
	struct out *o = userdata;

	assert_true(n <= sizeof(o->b) - o->len);
	memcpy(o->b + o->len, p, n);
	o->len += n;
	return 0;
}

struct out_big {
	uint8_t b[50000];
	size_t len;
};

static int append_big(void *userdata, const void *p, size_t n)
{
	struct out_big *b = userdata;

	assert_true(n <= sizeof(b->b) - b->len);
	memcpy(b->b + b->len, p, n);
	b->len += n;
	return 0;
}

/* A frame from the origin: FIN, opcode, payload (< 126 bytes). */
static size_t frame(uint8_t *to, int fin, uint8_t op, const char *payload)
{
	size_t n = strlen(payload);

	to[0] = (uint8_t)((fin ? 0x80 : 0) | op);
	to[1] = (uint8_t)n;
	memcpy(to + 2, payload, n);
	return 2 + n;
}

/* The frames of o, one per line: "F1 payload" (F: final, 1: opcode). */
static void frames(const struct out *o, char *s, size_t cap)
{
	size_t at = 0;

	s[0] = 0;
	while (at + 2 <= o->len) {
		size_t n = o->b[at + 1] & 0x7f, hl = 2;

		assert_true(n < 126);
		snprintf(s + strlen(s), cap - strlen(s), "%s%x %.*s\n", o->b[at] & 0x80 ? "F" : "-",
			 o->b[at] & 0x0f, (int)n, (const char *)o->b + at + hl);
		at += hl + n;
	}
	assert_int_equal(at, o->len);
}

struct relay {
	struct sl_scrub s;
	struct sl_ws_scrub w;
	struct out o;
};

static void relay_init(struct relay *r)
{
	struct sl_scrub_secret sec = {key, strlen(key)};

	memset(r, 0, sizeof(*r));
	assert_int_equal(sl_scrub_init(&r->s, &sec, 1, NULL), 0);
	sl_ws_scrub_init(&r->w, &r->s, append, &r->o);
}

static void relay_free(struct relay *r)
{
	sl_ws_scrub_free(&r->w);
	sl_scrub_free(&r->s);
}

/* The origin cuts the key across two fragments, a ping between them: the
 * message joined holds the marker, not the key; the ping comes as it is. */
static void test_key_across_fragments(void **state)
{
	struct relay r;
	uint8_t in[512];
	char a[64], b[64], got[1024], want[1024];
	size_t n = 0;

	(void)state;
	relay_init(&r);
	snprintf(a, sizeof(a), "hello key=%.10s", key);
	snprintf(b, sizeof(b), "%s; over", key + 10);
	n += frame(in + n, 0, SL_WS_OP_TEXT, a);
	n += frame(in + n, 1, SL_WS_OP_PING, "keepalive");
	n += frame(in + n, 1, SL_WS_OP_CONT, b);
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	frames(&r.o, got, sizeof(got));
	snprintf(want, sizeof(want), "-1 hello \nF9 keepalive\nF0 key=%s********************; over\n",
		 SL_SCRUB_SAME_LENGTH_MARKER);
	assert_string_equal(got, want);
	relay_free(&r);
}

/* A message that ends in a long word comes whole when its last fragment
 * does; a fragment that ends in one waits for the next, a pause passing on
 * a short word only. */
static void test_words_and_pauses(void **state)
{
	struct relay r;
	uint8_t in[256];
	char got[1024];
	size_t n;

	(void)state;
	relay_init(&r);
	n = frame(in, 1, SL_WS_OP_TEXT, "thanks everyone");
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	frames(&r.o, got, sizeof(got));
	assert_string_equal(got, "F1 thanks everyone\n");

	r.o.len = 0;
	n = frame(in, 0, SL_WS_OP_TEXT, "status: pending");
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	assert_int_equal(sl_ws_scrub_flush(&r.w, false), 0);
	n = frame(in, 0, SL_WS_OP_CONT, " acknowledged");
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	assert_int_equal(sl_ws_scrub_flush(&r.w, false), 0);
	frames(&r.o, got, sizeof(got));
	/* "pending" (7) went at the pause; "acknowledged" (12) waits. */
	assert_string_equal(got, "-1 status: \n-0 pending\n-0  \n");
	n = frame(in, 1, SL_WS_OP_CONT, "");
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	frames(&r.o, got, sizeof(got));
	assert_string_equal(got, "-1 status: \n-0 pending\n-0  \nF0 acknowledged\n");
	relay_free(&r);
}

/* A close in the middle of a message: the close comes, and nothing of the
 * message after it, not at a pause, not at the end, not what the origin
 * sends after its close. A close whose reason quotes the key is scrubbed. */
static void test_close(void **state)
{
	struct relay r;
	uint8_t in[512];
	char reason[96], got[1024], want[1024];
	size_t n = 0;

	(void)state;
	relay_init(&r);
	snprintf(reason, sizeof(reason), "\x03\xf0" "bad key %s", key);
	n += frame(in + n, 0, SL_WS_OP_TEXT, "part superlongword");
	n += frame(in + n, 1, SL_WS_OP_CLOSE, reason);
	n += frame(in + n, 1, SL_WS_OP_CONT, " more");
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, n), 0);
	assert_int_equal(sl_ws_scrub_flush(&r.w, false), 0);
	assert_int_equal(sl_ws_scrub_flush(&r.w, true), 0);
	frames(&r.o, got, sizeof(got));
	snprintf(want, sizeof(want), "-1 part \nF8 \x03\xf0" "bad key %s********************\n",
		 SL_SCRUB_SAME_LENGTH_MARKER);
	assert_string_equal(got, want);
	relay_free(&r);
}

/* A message longer than a frame of ours (SL_WS_SCRUB_OUT_CAP), the key
 * across the place where one of ours ends: as many frames as it takes,
 * each at most that long, the first with the message's opcode, the last
 * final, and joined the message with the key replaced. Fed whole, and in
 * reads of 1000 bytes. */
static void test_long_message(void **state)
{
	static uint8_t in[10 + 40000];
	static struct out_big big;
	static uint8_t joined[40000];
	size_t step;

	(void)state;
	for (step = sizeof(in); step >= 1000; step = step == sizeof(in) ? 1000 : 0) {
		struct sl_scrub_secret sec = {key, strlen(key)};
		struct sl_scrub sc;
		struct sl_ws_scrub w;
		size_t at, n = 0, frames_out = 0;

		in[0] = 0x82;
		in[1] = 127;
		memcpy(in + 2, "\0\0\0\0\0\0\x9c\x40", 8); /* 40,000 */
		memset(in + 10, 'x', 40000);
		memcpy(in + 10 + SL_WS_SCRUB_OUT_CAP - 10, key, strlen(key));
		assert_int_equal(sl_scrub_init(&sc, &sec, 1, NULL), 0);
		memset(&w, 0, sizeof(w));
		big.len = 0;
		sl_ws_scrub_init(&w, &sc, append_big, &big);
		for (at = 0; at < sizeof(in); at += step)
			assert_int_equal(sl_ws_scrub_feed(&w, in + at, sizeof(in) - at < step ? sizeof(in) - at : step), 0);
		for (at = 0; at < big.len;) {
			size_t len = big.b[at + 1] & 0x7f, hl = 2;

			if (len == 126) {
				len = (size_t)big.b[at + 2] << 8 | big.b[at + 3];
				hl = 4;
			}
			assert_true(len <= SL_WS_SCRUB_OUT_CAP);
			assert_int_equal(big.b[at] & 0x0f, frames_out ? SL_WS_OP_CONT : SL_WS_OP_BINARY);
			memcpy(joined + n, big.b + at + hl, len);
			n += len;
			frames_out++;
			at += hl + len;
			assert_int_equal((big.b[at - hl - len] & 0x80) != 0, at == big.len);
		}
		assert_true(frames_out >= 3);
		assert_int_equal(n, 40000);
		assert_null(memmem(joined, n, key, 8));
		assert_memory_equal(joined + SL_WS_SCRUB_OUT_CAP - 10, SL_SCRUB_SAME_LENGTH_MARKER,
				    strlen(SL_SCRUB_SAME_LENGTH_MARKER));
		assert_int_equal(joined[0], 'x');
		assert_int_equal(joined[n - 1], 'x');
		sl_ws_scrub_free(&w);
		sl_scrub_free(&sc);
	}
}

/* A masked frame: refused, nothing of it out. */
static void test_masked(void **state)
{
	static const uint8_t in[] = {0x81, 0x84, 'a', 'b', 'c', 'd', 'w', 'x', 'y', 'z'};
	struct relay r;

	(void)state;
	relay_init(&r);
	assert_int_equal(sl_ws_scrub_feed(&r.w, in, sizeof(in)), -EPROTO);
	assert_int_equal(r.o.len, 0);
	relay_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key_across_fragments),
	    cmocka_unit_test(test_words_and_pauses),
	    cmocka_unit_test(test_close),
	    cmocka_unit_test(test_long_message),
	    cmocka_unit_test(test_masked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
