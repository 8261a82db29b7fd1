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

/* What came out: "H<len>" per header ("F" after it when final, "O<op>"
 * for another opcode than text), "P<len>" per payload piece, "E" after a
 * frame's last, in one string. */
struct trace {
	char s[1024];
	size_t payload;
};

static int on_head(void *userdata, const struct sl_ws_head *h)
{
	struct trace *t = userdata;
	char op[8] = "";

	if (h->opcode != SL_WS_OP_TEXT)
		snprintf(op, sizeof(op), "O%u", h->opcode);
	snprintf(t->s + strlen(t->s), sizeof(t->s) - strlen(t->s), "H%llu%s%s ",
		 (unsigned long long)h->len, h->fin ? "F" : "", op);
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

static int feed_dir(const uint8_t *p, size_t n, size_t step, struct trace *t, int client)
{
	struct sl_ws_frames w;
	size_t at;
	int r = 0;

	sl_ws_frames_init(&w, client);
	memset(t, 0, sizeof(*t));
	for (at = 0; at < n && r == 0; at += step)
		r = sl_ws_frames_feed(&w, p + at, n - at < step ? n - at : step, on_head,
				      on_payload, t);
	return r;
}

static int feed_in(const uint8_t *p, size_t n, size_t step, struct trace *t)
{
	return feed_dir(p, n, step, t, 0);
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
	assert_string_equal(t.s, "H5F P5 E H300FO2 P300 E H70000FO2 P70000 E H0FO9 E ");
	assert_int_equal(feed_in(in, n, 1, &t), 0);
	assert_int_equal(t.payload, 5 + 300 + 70000);
	assert_non_null(strstr(t.s, "H5F P1 P1 P1 P1 P1 E H300FO2 P1 "));
	assert_int_equal(feed_in(in, n, 3, &t), 0);
	assert_int_equal(t.payload, 5 + 300 + 70000);
}

/* A fragmented message with a ping between its fragments. */
static void test_fragments(void **state)
{
	static const uint8_t in[] = {0x01, 2, 'a', 'b', 0x89, 1, 'p', 0x00, 1, 'c', 0x80, 1, 'd', 0x81, 0};
	struct trace t;

	(void)state;
	assert_int_equal(feed_in(in, sizeof(in), sizeof(in), &t), 0);
	assert_string_equal(t.s, "H2 P2 E H1FO9 P1 E H1O0 P1 E H1FO0 P1 E H0F E ");
	assert_int_equal(feed_in(in, sizeof(in), 1, &t), 0);
	assert_int_equal(t.payload, 5);
}

/* Refused, also when the header comes a byte at a time, and refused
 * again: what a scrubbing relay could not read (a masked frame: a server
 * never masks, and the agent would unmask it; a reserved bit: an
 * extension nobody negotiated, compression), and what RFC 6455 has a
 * client fail the connection on. */
static void test_refused(void **state)
{
	/* want: what came out before the refusal, whole or a byte at a time. */
	static const struct {
		const char *what;
		uint8_t in[12];
		size_t len;
		const char *want;
	} bad[] = {
	    {"masked", {0x81, 0x84, 'a', 'b', 'c', 'd', 'w', 'x', 'y', 'z'}, 10, ""},
	    {"64-bit top bit", {0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, 10, ""},
	    {"RSV1 (compressed)", {0xc1, 1, 'k'}, 3, ""},
	    {"RSV2", {0xa1, 1, 'k'}, 3, ""},
	    {"RSV3", {0x91, 1, 'k'}, 3, ""},
	    {"reserved data opcode", {0x83, 1, 'k'}, 3, ""},
	    {"reserved control opcode", {0x8b, 0}, 2, ""},
	    {"control frame over 125 bytes", {0x89, 126, 0, 126}, 4, ""},
	    {"fragmented control frame", {0x09, 1, 'p'}, 3, ""},
	    {"continuation with no message", {0x80, 1, 'k'}, 3, ""},
	    {"a message inside a message", {0x01, 1, 'a', 0x81, 1, 'b'}, 6, "H1 P1 E "},
	};
	static const uint8_t ok[] = {0x81, 1, 'k'};
	struct sl_ws_frames w;
	struct trace t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(feed_in(bad[i].in, bad[i].len, bad[i].len, &t), -EPROTO);
		assert_string_equal(t.s, bad[i].want);
		assert_int_equal(feed_in(bad[i].in, bad[i].len, 1, &t), -EPROTO);
		assert_string_equal(t.s, bad[i].want);
	}

	memset(&w, 0, sizeof(w));
	memset(&t, 0, sizeof(t));
	assert_int_equal(sl_ws_frames_feed(&w, bad[0].in, 2, on_head, on_payload, &t), -EPROTO);
	assert_int_equal(sl_ws_frames_feed(&w, ok, sizeof(ok), on_head, on_payload, &t), -EPROTO);
	assert_string_equal(t.s, "");
}

/* From the client, every frame is masked (RFC 6455 5.1): its key comes
 * after the length, and the payload is passed on as it came (masked). */
static uint8_t mask_seen[4];

static int on_head_mask(void *userdata, const struct sl_ws_head *h)
{
	memcpy(mask_seen, h->mask, 4);
	return on_head(userdata, h);
}

static void test_client(void **state)
{
	/* clang-format off */
	static const uint8_t in[] = {
	    0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2, /* "hi", masked */
	    0x89, 0x80, 9, 9, 9, 9, /* an empty ping */
	    0x02, 0xfe, 0, 200, 5, 6, 7, 8, [221] = 0, /* 200 bytes, 16-bit */
	    0x80, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0xa, 0xb, 0xc, 0xd, 'z', /* 64-bit */
	};
	/* clang-format on */
	struct sl_ws_frames w;
	struct trace t;

	(void)state;
	assert_int_equal(feed_dir(in, sizeof(in), sizeof(in), &t, 1), 0);
	assert_string_equal(t.s, "H2F P2 E H0FO9 E H200O2 P200 E H1FO0 P1 E ");
	assert_int_equal(feed_dir(in, sizeof(in), 1, &t, 1), 0);
	assert_int_equal(t.payload, 2 + 200 + 1);
	assert_int_equal(feed_dir(in, sizeof(in), 5, &t, 1), 0);
	assert_int_equal(t.payload, 2 + 200 + 1);

	sl_ws_frames_init(&w, 1);
	memset(&t, 0, sizeof(t));
	assert_int_equal(sl_ws_frames_feed(&w, in, 8, on_head_mask, on_payload, &t), 0);
	assert_memory_equal(mask_seen, "\x01\x02\x03\x04", 4);
	/* The payload as it came: nothing is unmasked. */
	assert_string_equal(t.s, "H2F P2 E ");
}

/* From the client: an unmasked frame is refused, and so is all the origin
 * direction refuses; a refused byte is refused as it comes, so that a
 * relay that passes on what the cutter took passes on nothing of it: plain
 * HTTP after an upgrade ("GET ...": 'G' has RSV bits) at its first byte. */
static void test_client_refused(void **state)
{
	static const struct {
		const char *what;
		uint8_t in[12];
		size_t len, at; /* refused at its byte at (from 1) */
	} bad[] = {
	    {"unmasked", {0x81, 0x01, 'k'}, 3, 2},
	    {"unmasked control", {0x89, 0x00}, 2, 2},
	    {"plain HTTP", {'G', 'E', 'T', ' ', '/'}, 5, 1},
	    {"RSV1", {0xc1, 0x81, 1, 2, 3, 4, 'k'}, 7, 1},
	    {"reserved opcode", {0x83, 0x81, 1, 2, 3, 4, 'k'}, 7, 1},
	    {"fragmented control", {0x09, 0x80, 1, 2, 3, 4}, 6, 1},
	    {"continuation with no message", {0x80, 0x80, 1, 2, 3, 4}, 6, 1},
	    {"control frame over 125 bytes", {0x88, 0xfe, 0, 126}, 4, 2},
	    {"64-bit top bit", {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1}, 10, 3},
	};
	struct sl_ws_frames w;
	struct trace t;
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(feed_dir(bad[i].in, bad[i].len, bad[i].len, &t, 1), -EPROTO);
		assert_string_equal(t.s, "");
		sl_ws_frames_init(&w, 1);
		for (k = 0; k + 1 < bad[i].at; k++)
			assert_int_equal(
			    sl_ws_frames_feed(&w, bad[i].in + k, 1, on_head, on_payload, &t), 0);
		assert_int_equal(sl_ws_frames_feed(&w, bad[i].in + k, 1, on_head, on_payload, &t),
				 -EPROTO);
	}
}

/* RFC 6455 4.2.2's own example, and what a Sec-WebSocket-Key must look
 * like (4.1: 16 bytes, base64). */
static void test_accept(void **state)
{
	char out[SL_WS_ACCEPT_LEN + 1];
	static const char key[] = "dGhlIHNhbXBsZSBub25jZQ==";

	(void)state;
	assert_int_equal(sl_ws_accept(key, strlen(key), out), 0);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	assert_int_equal(sl_ws_accept("dGhlIHNhbXBsZSBub25jZQ=", 23, out), -EINVAL);
	assert_int_equal(sl_ws_accept("dGhlIHNhbXBsZSBub25jZQ==x", 25, out), -EINVAL);
	assert_int_equal(sl_ws_accept("dGhlIHNhbXBsZSBub25jZ===", 24, out), -EINVAL);
	assert_int_equal(sl_ws_accept("dGhlIHNhbXBsZSBub2 jZQ==", 24, out), -EINVAL);
	assert_int_equal(sl_ws_accept("", 0, out), -EINVAL);
}

static int fail_head(void *userdata, const struct sl_ws_head *h)
{
	(void)userdata;
	(void)h;
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
	    cmocka_unit_test(test_fragments),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_client),
	    cmocka_unit_test(test_client_refused),
	    cmocka_unit_test(test_accept),
	    cmocka_unit_test(test_callback_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
