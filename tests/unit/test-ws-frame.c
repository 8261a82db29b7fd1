/* SPDX-License-Identifier: MIT */
/* The websocket frame cutter (ws-frame.h): headers and payloads, in reads
 * of any size, and the frames it refuses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ws-frame.h"

/* What came out: "H<len>" per header, "P<len>" per payload piece, "E"
 * after a frame's last, in one string. */
struct trace {
	char s[1024];
	size_t payload;
};

static int on_head(void *userdata, const uint8_t *head, size_t len)
{
	struct trace *t = userdata;

	(void)head;
	snprintf(t->s + strlen(t->s), sizeof(t->s) - strlen(t->s), "H%zu ", len);
	return 0;
}

static int on_payload(void *userdata, const void *p, size_t len, int end)
{
	struct trace *t = userdata;

	(void)p;
	t->payload += len;
	if (len)
		snprintf(t->s + strlen(t->s), sizeof(t->s) - strlen(t->s), "P%zu ", len);
	if (end)
		snprintf(t->s + strlen(t->s), sizeof(t->s) - strlen(t->s), "E ");
	return 0;
}

static int feed_in(const uint8_t *p, size_t n, size_t step, struct trace *t)
{
	struct sl_ws_frames w;
	size_t at;
	int r = 0;

	memset(&w, 0, sizeof(w));
	memset(t, 0, sizeof(*t));
	for (at = 0; at < n && r == 0; at += step)
		r = sl_ws_frames_feed(&w, p + at, n - at < step ? n - at : step, on_head, on_payload, t);
	return r;
}

/* Frames of every length encoding, whole and a byte at a time. */
static void test_lengths(void **state)
{
	static uint8_t in[2 + 5 + 4 + 300 + 10 + 70000 + 2];
	struct trace t;
	size_t n = 0;

	(void)state;
	in[n++] = 0x81;
	in[n++] = 5;
	memcpy(in + n, "hello", 5);
	n += 5;
	in[n++] = 0x82;
	in[n++] = 126;
	in[n++] = 300 >> 8;
	in[n++] = 300 & 0xff;
	n += 300;
	in[n++] = 0x82;
	in[n++] = 127;
	memcpy(in + n, "\0\0\0\0\0\x01\x11\x70", 8); /* 70,000 */
	n += 8;
	n += 70000;
	in[n++] = 0x89; /* a ping, empty */
	in[n++] = 0;
	assert_int_equal(n, sizeof(in));

	assert_int_equal(feed_in(in, n, n, &t), 0);
	assert_string_equal(t.s, "H2 P5 E H4 P300 E H10 P70000 E H2 E ");
	assert_int_equal(feed_in(in, n, 1, &t), 0);
	assert_int_equal(t.payload, 5 + 300 + 70000);
	assert_non_null(strstr(t.s, "H2 P1 P1 P1 P1 P1 E H4 P1 "));
	assert_int_equal(feed_in(in, n, 3, &t), 0);
	assert_int_equal(t.payload, 5 + 300 + 70000);
}

/* A masked frame (a server never masks: the agent would unmask it, a
 * scrubber could not read it) and a 64-bit length with its top bit set
 * are refused, also when their header comes a byte at a time, and stay
 * refused. */
static void test_refused(void **state)
{
	static const uint8_t masked[] = {0x81, 0x84, 'a', 'b', 'c', 'd', 'w', 'x', 'y', 'z'};
	static const uint8_t huge[] = {0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1};
	static const uint8_t ok[] = {0x81, 1, 'k'};
	struct sl_ws_frames w;
	struct trace t;

	(void)state;
	assert_int_equal(feed_in(masked, sizeof(masked), sizeof(masked), &t), -EPROTO);
	assert_string_equal(t.s, "");
	assert_int_equal(feed_in(masked, sizeof(masked), 1, &t), -EPROTO);
	assert_string_equal(t.s, "");
	assert_int_equal(feed_in(huge, sizeof(huge), 1, &t), -EPROTO);
	assert_string_equal(t.s, "");

	memset(&w, 0, sizeof(w));
	memset(&t, 0, sizeof(t));
	assert_int_equal(sl_ws_frames_feed(&w, masked, 2, on_head, on_payload, &t), -EPROTO);
	assert_int_equal(sl_ws_frames_feed(&w, ok, sizeof(ok), on_head, on_payload, &t), -EPROTO);
	assert_string_equal(t.s, "");
}

static int fail_head(void *userdata, const uint8_t *head, size_t len)
{
	(void)userdata;
	(void)head;
	(void)len;
	return -EIO;
}

/* A callback's error stops it, and is what every later call returns. */
static void test_callback_error(void **state)
{
	static const uint8_t ok[] = {0x81, 1, 'k'};
	struct sl_ws_frames w;
	struct trace t;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&t, 0, sizeof(t));
	assert_int_equal(sl_ws_frames_feed(&w, ok, sizeof(ok), fail_head, on_payload, &t), -EIO);
	assert_int_equal(t.payload, 0);
	assert_int_equal(sl_ws_frames_feed(&w, ok, sizeof(ok), on_head, on_payload, &t), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lengths),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_callback_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
