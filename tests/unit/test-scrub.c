/* SPDX-License-Identifier: MIT */
/* The streaming scrubber: every occurrence of a secret is replaced, however
 * the stream is cut, and nothing else is touched. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scrub.h"

#define MARKER "[REDACTED by sluice]"
#define OUT_MAX (1u << 20)

struct sink {
	char *buf;
	size_t len;
	size_t calls;
};

static int collect(void *userdata, const void *p, size_t len)
{
	struct sink *k = userdata;

	assert_true(len > 0);
	assert_true(k->len + len <= OUT_MAX);
	memcpy(k->buf + k->len, p, len);
	k->len += len;
	k->calls++;
	return 0;
}

static void sink_init(struct sink *k)
{
	k->buf = malloc(OUT_MAX);
	assert_non_null(k->buf);
	k->len = 0;
	k->calls = 0;
}

/* The whole-buffer rule, written independently: at each position the
 * longest secret found there is replaced, else the byte is copied. */
static size_t reference(const struct sl_scrub_secret *sec, size_t n, const char *in, size_t len,
			char *out)
{
	size_t i = 0, o = 0, j, best;

	while (i < len) {
		best = 0;
		for (j = 0; j < n; j++)
			if (sec[j].len <= len - i && sec[j].len > best &&
			    memcmp(in + i, sec[j].value, sec[j].len) == 0)
				best = sec[j].len;
		if (best) {
			memcpy(out + o, MARKER, strlen(MARKER));
			o += strlen(MARKER);
			i += best;
		} else {
			out[o++] = in[i++];
		}
	}
	return o;
}

/* Scrub `in` cut at the given points and check it against the reference;
 * also that no more than max_len - 1 bytes are ever held. */
static void check_cuts(const struct sl_scrub_secret *sec, size_t n, const char *in, size_t len,
		       const size_t *cuts, size_t n_cuts)
{
	struct sl_scrub s;
	struct sink k;
	char *want = malloc(OUT_MAX);
	size_t want_len, prev = 0, i, max_len = 0;

	assert_non_null(want);
	for (i = 0; i < n; i++)
		if (sec[i].len > max_len)
			max_len = sec[i].len;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, n, MARKER), 0);
	for (i = 0; i <= n_cuts; i++) {
		size_t to = i < n_cuts ? cuts[i] : len;
		/* Each piece in a buffer of its own, after a byte no text
		 * holds: a scrubber that reads outside what it was given
		 * (the text around it, as one buffer would have it) shows. */
		char *piece = malloc(to - prev + 1);

		assert_non_null(piece);
		piece[0] = '\xff';
		memcpy(piece + 1, in + prev, to - prev);
		assert_int_equal(sl_scrub_feed(&s, piece + 1, to - prev, collect, &k), 0);
		free(piece);
		assert_true(s.fill <= max_len - 1);
		prev = to;
	}
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(s.fill, 0);
	want_len = reference(sec, n, in, len, want);
	if (k.len != want_len || memcmp(k.buf, want, want_len) != 0)
		fail_msg("mismatch: got %.*s\nwant %.*s", (int)k.len, k.buf, (int)want_len, want);
	sl_scrub_free(&s);
	free(k.buf);
	free(want);
}

static size_t count(const char *hay, size_t len, const char *needle)
{
	size_t c = 0, nl = strlen(needle), i;

	for (i = 0; i + nl <= len; i++)
		if (memcmp(hay + i, needle, nl) == 0)
			c++;
	return c;
}

static struct sl_scrub_secret S(const char *v) {
	return (struct sl_scrub_secret){v, strlen(v)};
}

/* One split point, everywhere: the secret straddles two calls. */
static void
test_every_split(void **state)
{
	const char *key = "sk-ant-api03-SECRETSECRETSECRET";
	struct sl_scrub_secret sec[] = {S(key)};
	char text[256];
	size_t len, cut;

	(void)state;
	len = (size_t)snprintf(text, sizeof(text), "{\"echo\":\"Bearer %s\",\"again\":\"%s\"}", key,
			       key);
	for (cut = 0; cut <= len; cut++) {
		size_t cuts[] = {cut};

		check_cuts(sec, 1, text, len, cuts, 1);
	}
}

/* Two split points, everywhere: the secret spans three calls. */
static void test_every_double_split(void **state)
{
	const char *key = "0123456789abcdef";
	struct sl_scrub_secret sec[] = {S(key)};
	const char *text = "xx0123456789abcdefyy0123456789abcdef";
	size_t len = strlen(text), a, b;

	(void)state;
	for (a = 0; a <= len; a++)
		for (b = a; b <= len; b++) {
			size_t cuts[] = {a, b};

			check_cuts(sec, 1, text, len, cuts, 2);
		}
}

/* Text thick with a secret's first byte, near misses and secrets that
 * overlap themselves (a secret's first bytes again inside it), at every
 * single and double split: the candidates skipped on their first two
 * bytes are skipped only where no secret can start. */
static void test_first_bytes_everywhere(void **state)
{
	struct sl_scrub_secret sec[] = {S("sk-live-0123456789"), S("aaaaaaab"), S("ssssssss")};
	const char *text = "ssk-live-0123456789 sk sk-live-012345678 sssssssss "
			   "aaaaaaaaab aaaaaaa sk-live-0123456789";
	size_t len = strlen(text), a, b;

	(void)state;
	for (a = 0; a <= len; a++)
		for (b = a; b <= len; b += 3) {
			size_t cuts[] = {a, b};

			check_cuts(sec, 3, text, len, cuts, 2);
		}
}

/* Byte by byte: the most calls a stream can take. */
static void test_byte_at_a_time(void **state)
{
	struct sl_scrub_secret sec[] = {S("secretAAAA"), S("otherBBBBBBBBBBBB")};
	const char *text =
	    "a secretAAAA b otherBBBBBBBBBBBB c secretAAAAotherBBBBBBBBBBBBsecretAAA";
	size_t len = strlen(text), cuts[128], i;

	(void)state;
	for (i = 0; i < len; i++)
		cuts[i] = i;
	check_cuts(sec, 2, text, len, cuts, len);
}

/* The marker appears once per occurrence, the secret never, and the text
 * around it is untouched. */
static void test_marker_once(void **state)
{
	const char *key = "ABCDEFGH12345678";
	struct sl_scrub_secret sec[] = {S(key)};
	const char *text = "pre ABCDEFGH12345678 mid ABCDEFGH12345678ABCDEFGH12345678 post";
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, MARKER), 0);
	assert_int_equal(sl_scrub_feed(&s, text, strlen(text), collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(count(k.buf, k.len, MARKER), 3);
	assert_int_equal(count(k.buf, k.len, key), 0);
	assert_int_equal(k.len, strlen("pre  mid  post") + 3 * strlen(MARKER));
	assert_memory_equal(k.buf, "pre " MARKER " mid " MARKER MARKER " post", k.len);
	sl_scrub_free(&s);
	free(k.buf);
}

/* Near misses pass unchanged: a prefix, the secret minus its last byte at
 * the end of the stream, one byte different. */
static void test_no_false_replacement(void **state)
{
	const char *key = "sk-proj-ZZZZZZZZ";
	struct sl_scrub_secret sec[] = {S(key)};
	const char *text = "sk-proj-ZZZZZZZY sk-proj- sk-proj-ZZZZZZZ sk-sk-proj-ZZZZZZZ";
	struct sl_scrub s;
	struct sink k;
	size_t i;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, MARKER), 0);
	for (i = 0; text[i]; i++)
		assert_int_equal(sl_scrub_feed(&s, text + i, 1, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(k.len, strlen(text));
	assert_memory_equal(k.buf, text, k.len);
	sl_scrub_free(&s);
	free(k.buf);
}

/* Secrets that share a prefix, overlap, or contain one another. */
static void test_overlapping(void **state)
{
	struct sl_scrub_secret sec[] = {
	    S("abcdefgh"),
	    S("abcdefghijkl"),
	    S("efghijklmnop"),
	    S("aaaaaaaaa"),
	};
	const char *texts[] = {
	    "abcdefghijkl",	     /* the longer of two sharing a prefix */
	    "abcdefghijk",	     /* only the shorter is complete */
	    "abcdefghijklmnop",	     /* the leftmost wins, the overlap is gone */
	    "xxabcdefgefghijklmnop", /* a prefix, then the other */
	    "aaaaaaaaaaaaaaaaaaa",   /* a self-overlapping secret: 2 + 1 left */
	    "abcdabcdefghabcdefgh",
	};
	size_t t, cut;

	(void)state;
	for (t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		size_t len = strlen(texts[t]);

		check_cuts(sec, 4, texts[t], len, NULL, 0);
		for (cut = 0; cut <= len; cut++) {
			size_t cuts[] = {cut};

			check_cuts(sec, 4, texts[t], len, cuts, 1);
		}
	}
}

/* The longest secret the scrubber takes, straddling the internal window. */
static void test_long_secret(void **state)
{
	static char key[SL_SCRUB_MAX_LEN + 1], text[40000];
	struct sl_scrub_secret sec[] = {{key, SL_SCRUB_MAX_LEN}, S("shortkey")};
	size_t i, len = 0, cuts[] = {1, 4095, 4097, 12000, 12001, 20000};

	(void)state;
	for (i = 0; i < SL_SCRUB_MAX_LEN; i++)
		key[i] = (char)('A' + i % 26);
	for (i = 0; i < 5; i++) {
		memset(text + len, '.', 3000 + i);
		len += 3000 + i;
		memcpy(text + len, key, SL_SCRUB_MAX_LEN);
		len += SL_SCRUB_MAX_LEN;
		memcpy(text + len, "shortkey", 8);
		len += 8;
	}
	check_cuts(sec, 2, text, len, cuts, 6);
	check_cuts(sec, 2, text, len, NULL, 0);
}

/* Random text over a small alphabet, random secrets drawn from it, random
 * chunking, checked against the reference. */
static void test_random(void **state)
{
	static char text[20000];
	static char keys[8][64];
	struct sl_scrub_secret sec[8];
	size_t cuts[512];
	unsigned seed = 12345;
	int round;

	(void)state;
	for (round = 0; round < 300; round++) {
		size_t n = 1 + (size_t)rand_r(&seed) % 8, len = (size_t)rand_r(&seed) % 20000;
		size_t n_cuts = 0, i, at = 0;
		int alpha = 2 + rand_r(&seed) % 3;

		for (i = 0; i < n; i++) {
			size_t kl = 8 + (size_t)rand_r(&seed) % 56, j;

			for (j = 0; j < kl; j++)
				keys[i][j] = (char)('a' + rand_r(&seed) % alpha);
			sec[i] = (struct sl_scrub_secret){keys[i], kl};
		}
		for (i = 0; i < len; i++)
			text[i] = (char)('a' + rand_r(&seed) % alpha);
		/* Plant some whole secrets so there is something to find. */
		for (i = 0; i < 20 && len > 64; i++) {
			size_t which = (size_t)rand_r(&seed) % n;
			size_t pos = (size_t)rand_r(&seed) % (len - sec[which].len);

			memcpy(text + pos, sec[which].value, sec[which].len);
		}
		while (n_cuts < 512 && at < len) {
			at += 1 + (size_t)rand_r(&seed) % (rand_r(&seed) % 2 ? 8 : 3000);
			if (at < len)
				cuts[n_cuts++] = at;
		}
		check_cuts(sec, n, text, len, cuts, n_cuts);
	}
}

/* Same-length markers: the output is exactly as long as the input, holds
 * no secret, and says who redacted it where there is room. */
static void test_same_length(void **state)
{
	const char *longk = "sk-proj-0123456789abcdefghijklmnopqrstuvwxyz";
	const char *shortk = "sk-12345678";
	struct sl_scrub_secret sec[] = {S(longk), S(shortk)};
	char text[512];
	struct sl_scrub s;
	struct sink k;
	size_t len, i;

	(void)state;
	len = (size_t)snprintf(text, sizeof(text), "a=%s;b=%s;c=%s%s", longk, shortk, shortk, longk);
	for (i = 0; i <= len; i++) {
		sink_init(&k);
		assert_int_equal(sl_scrub_init(&s, sec, 2, NULL), 0);
		assert_int_equal(sl_scrub_feed(&s, text, i, collect, &k), 0);
		assert_int_equal(sl_scrub_feed(&s, text + i, len - i, collect, &k), 0);
		assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
		assert_int_equal(k.len, len);
		assert_int_equal(count(k.buf, k.len, longk), 0);
		assert_int_equal(count(k.buf, k.len, shortk), 0);
		assert_int_equal(count(k.buf, k.len, SL_SCRUB_SAME_LENGTH_MARKER), 2);
		assert_memory_equal(k.buf, "a=[redacted by sluice]", 22);
		assert_memory_equal(k.buf + 2 + strlen(longk), ";b=***********;c=", 17);
		sl_scrub_free(&s);
		free(k.buf);
	}
}

/* A stream that pauses is passed on at once, up to the bytes that could
 * still begin a secret: a streamed event is not held back for the next. */
static void test_no_needless_holding(void **state)
{
	struct sl_scrub_secret sec[] = {S("sk-SECRETSECRETSECRET")};
	const char ev[] = "data: {\"delta\":\"hi\"}\n\n";
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, ev, strlen(ev), collect, &k), 0);
	assert_int_equal(k.len, strlen(ev));
	assert_int_equal(s.fill, 0);
	/* "sk-SEC", a word after the last break byte, could still be the
	 * key: held; the rest is not. */
	assert_int_equal(sl_scrub_feed(&s, "x sk-SEC", 8, collect, &k), 0);
	assert_int_equal(k.len, strlen(ev) + 2);
	assert_int_equal(s.fill, 6);
	/* ...and it was not: the line ends. */
	assert_int_equal(sl_scrub_feed(&s, "RET!\n", 5, collect, &k), 0);
	assert_int_equal(k.len, strlen(ev) + 13);
	assert_int_equal(s.fill, 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	sl_scrub_free(&s);
	free(k.buf);
}

/* Held back for a fresh stream that is just `text`. */
static size_t held_after(const struct sl_scrub_secret *sec, size_t n, const char *text,
			 size_t len)
{
	struct sl_scrub s;
	struct sink k;
	size_t held;

	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, n, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, text, len, collect, &k), 0);
	held = sl_scrub_held(&s);
	assert_int_equal(k.len + held, len);
	sl_scrub_free(&s);
	free(k.buf);
	return held;
}

/* What is held back must not tell the agent whether its guess begins the
 * key. An agent that makes an origin echo its guesses, streamed (an echo
 * endpoint, a model told to repeat them), sees what came through before
 * the pause: were a guess that begins the key held and others not, it
 * would learn the key a byte at a time. Every prefix of the key, after
 * the key's public start or after none, is held exactly as a wrong guess
 * of the same length is. */
static void test_no_prefix_oracle(void **state)
{
	const char key[] = "sk-ant-api03-Zq8xY2vB7nM4kL1pR9tW3sD6fG0hJ5cV";
	struct sl_scrub_secret sec[] = {S(key), S("ghp_abcdefghijklmnopqrstuvwxyz012345")};
	char guess[128], wrong[128];
	size_t len, pre;

	(void)state;
	for (pre = 0; pre < 3; pre++) {
		static const char *const before[] = {"", "key=", "text \"x\": "};

		for (len = 1; len < strlen(key); len++) {
			size_t b = strlen(before[pre]), i;

			snprintf(guess, sizeof(guess), "%s%.*s", before[pre], (int)len, key);
			memcpy(wrong, guess, b + len + 1);
			/* Each byte changed within the same kind (letter, digit). */
			for (i = b; i < b + len; i++)
				wrong[i] = (char)(wrong[i] == 'z' || wrong[i] == 'Z' || wrong[i] == '9' ? wrong[i] - 1
					  : (wrong[i] >= 'a' && wrong[i] <= 'y') || (wrong[i] >= 'A' && wrong[i] <= 'Y') ||
					    (wrong[i] >= '0' && wrong[i] <= '8') ? wrong[i] + 1 : wrong[i]);
			assert_int_equal(held_after(sec, 2, guess, b + len),
					 held_after(sec, 2, wrong, b + len));
			/* The last byte of the guess changed alone, too. */
			wrong[b + len - 1] = guess[b + len - 1] == 'Q' ? 'R' : 'Q';
			memcpy(wrong, guess, b + len - 1);
			assert_int_equal(held_after(sec, 2, guess, b + len),
					 held_after(sec, 2, wrong, b + len));
		}
	}
}

/* A stream that pauses after a word: held until sl_scrub_flush, which
 * passes a short one on; should the bytes after the pause complete the key
 * that began before it, the rest of the key does not come out, and pauses
 * let out SL_SCRUB_FLUSH_MAX bytes of it at most. */
static void test_flush(void **state)
{
	static const char key[] = "sk-SECRETSECRETSECRETSECRETSECRET";
	struct sl_scrub_secret sec[] = {S(key)};
	struct sl_scrub s;
	struct sink k;
	char want[128];

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, "pong", 4, collect, &k), 0);
	assert_int_equal(k.len, 0);
	assert_int_equal(sl_scrub_held(&s), 4);
	assert_int_equal(sl_scrub_flushable(&s), 4);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(sl_scrub_held(&s), 0);
	assert_memory_equal(k.buf, "pong", 4);
	/* A second flush has nothing to pass on. */
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 4);
	/* The key cut by pauses: its first bytes are out, seven at most. */
	assert_int_equal(sl_scrub_feed(&s, " sk-SE", 6, collect, &k), 0);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 10);
	assert_int_equal(sl_scrub_feed(&s, "CR", 2, collect, &k), 0);
	assert_int_equal(sl_scrub_flushable(&s), 2);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 12);
	assert_int_equal(sl_scrub_feed(&s, "E", 1, collect, &k), 0);
	assert_int_equal(sl_scrub_held(&s), 1);
	assert_int_equal(sl_scrub_flushable(&s), 0);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 12);
	assert_int_equal(sl_scrub_held(&s), 1);
	assert_int_equal(sl_scrub_feed(&s, key + 8, strlen(key) - 8, collect, &k), 0);
	assert_int_equal(sl_scrub_feed(&s, " and on\n", 8, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	snprintf(want, sizeof(want), "pong sk-SECR%s****** and on\n", SL_SCRUB_SAME_LENGTH_MARKER);
	assert_int_equal(k.len, strlen(want));
	assert_memory_equal(k.buf, want, k.len);
	sl_scrub_free(&s);
	free(k.buf);
}

/* Whether out holds n bytes of key in a row. */
static bool holds_run(const struct sink *out, const char *key, size_t n)
{
	size_t i;

	for (i = 0; i + n <= strlen(key); i++)
		if (memmem(out->buf, out->len, key + i, n))
			return true;
	return false;
}

/* A pause wherever the agent puts it. It can stop reading (the gateway
 * then stops reading the origin, and the scrubber's timer fires), or ask
 * an origin far away for a page whose first window of bytes comes a round
 * trip before the rest, and pad the page so that the key is cut where it
 * wants. A flush that passed on all it held would give it the key but
 * for its last byte, cut by cut, and an echo of each guess at that byte
 * (the one replaced is right) the rest. Cut at every byte, by one pause
 * or by a pause after every byte, with the key after a space or after a
 * word: never more than SL_SCRUB_FLUSH_MAX bytes of it come out before it
 * is complete, and none after. */
static void test_pause_cut(void **state)
{
	static const char key[] = "sk-live-Q7rT2xZ9pL4mN8vB3cKw5Yh1Jd6Fs0Ge";
	static const char *const before[] = {"{\"k\": \"", "text key="};
	struct sl_scrub_secret sec[] = {S(key), S("ghp_abcdefghijklmnopqrstuvwxyz012345")};
	size_t cut, b, i, len = strlen(key);

	(void)state;
	for (b = 0; b < 2; b++) {
		for (cut = 1; cut < len; cut++) {
			for (i = 0; i < 2; i++) {
				struct sl_scrub s;
				struct sink k;
				size_t at;

				sink_init(&k);
				assert_int_equal(sl_scrub_init(&s, sec, 2, NULL), 0);
				assert_int_equal(sl_scrub_feed(&s, before[b], strlen(before[b]), collect, &k), 0);
				for (at = 0; at < cut; at++) {
					/* One pause at the cut, or one after every byte. */
					if (i == 1 || at + 1 == cut) {
						assert_int_equal(sl_scrub_feed(&s, key + at, 1, collect, &k), 0);
						assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
						assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
					} else {
						assert_int_equal(sl_scrub_feed(&s, key + at, 1, collect, &k), 0);
					}
				}
				assert_false(holds_run(&k, key, SL_SCRUB_FLUSH_MAX + 1));
				assert_int_equal(sl_scrub_feed(&s, key + cut, len - cut, collect, &k), 0);
				assert_int_equal(sl_scrub_feed(&s, "\"}\n", 3, collect, &k), 0);
				assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
				assert_false(holds_run(&k, key, SL_SCRUB_FLUSH_MAX + 1));
				assert_int_equal(k.len, strlen(before[b]) + len + 3);
				sl_scrub_free(&s);
				free(k.buf);
			}
		}
	}
}

/* A whole buffer scrubbed apart (a websocket's control frame between two
 * fragments of a message): replaced as a stream of its own, and the
 * stream being fed goes on as if it had not happened. */
static void test_whole(void **state)
{
	static const char key[] = "sk-live-Q7rT2xZ9pL4mN8vB3cKw5Yh1Jd6Fs0Ge";
	struct sl_scrub_secret sec[] = {S(key)};
	struct sl_scrub s;
	struct sink k, w;
	char ctl[128], want[256];

	(void)state;
	sink_init(&k);
	sink_init(&w);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, "msg sk-live-Q7rT", 16, collect, &k), 0);
	snprintf(ctl, sizeof(ctl), "bad key %s", key);
	assert_int_equal(sl_scrub_whole(&s, ctl, strlen(ctl), collect, &w), 0);
	assert_int_equal(w.len, strlen(ctl));
	snprintf(want, sizeof(want), "bad key %s********************", SL_SCRUB_SAME_LENGTH_MARKER);
	assert_memory_equal(w.buf, want, w.len);
	assert_int_equal(sl_scrub_feed(&s, key + 12, strlen(key) - 12, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	snprintf(want, sizeof(want), "msg %s********************", SL_SCRUB_SAME_LENGTH_MARKER);
	assert_int_equal(k.len, strlen(want));
	assert_memory_equal(k.buf, want, k.len);
	sl_scrub_free(&s);
	free(k.buf);
	free(w.buf);
}

/* After a finish nothing of the stream is left in the buffer, wherever
 * it wrote (the finish wipes only what the stream dirtied, not the whole
 * buffer: a websocket finishes a stream per message). */
static void test_finish_wipes(void **state)
{
	static const char key[] = "sk-live-Q7rT2xZ9pL4mN8vB3cKw5Yh1Jd6Fs0Ge";
	struct sl_scrub_secret sec[] = {S(key)};
	struct sl_scrub s;
	struct sink k;
	size_t i, round;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	for (round = 0; round < 3; round++) {
		/* A tail held by one feed (round 0), or of the longest kind,
		 * moved by feeds of every size. */
		assert_int_equal(sl_scrub_feed(&s, "text sk-live-Q7rT2xZ9pL4", 24, collect, &k), 0);
		for (i = 0; round > 0 && i < 5; i++)
			assert_int_equal(sl_scrub_feed(&s, "Z", 1, collect, &k), 0);
		if (round > 0)
			assert_int_equal(sl_scrub_feed(&s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", 36, collect, &k), 0);
		assert_true(s.fill > 0);
		assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
		for (i = 0; i < s.cap; i++)
			assert_int_equal(s.buf[i], 0);
	}
	sl_scrub_free(&s);
	free(k.buf);
}

/* A short secret loses less to pauses: a quarter of it at most. */
static void test_flush_short_secret(void **state)
{
	struct sl_scrub_secret sec[] = {S("Zq8x1234")};
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, "a Zq", 4, collect, &k), 0);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 4);
	assert_int_equal(sl_scrub_feed(&s, "8", 1, collect, &k), 0);
	assert_int_equal(sl_scrub_flushable(&s), 0);
	assert_int_equal(sl_scrub_flush(&s, collect, &k), 0);
	assert_int_equal(k.len, 4);
	assert_int_equal(sl_scrub_feed(&s, "x1234 b", 7, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(k.len, 12);
	assert_memory_equal(k.buf, "a Zq****** b", 12);
	sl_scrub_free(&s);
	free(k.buf);
}

/* A secret with a break byte in it (a space): a pause after that byte
 * might be inside the secret, so the last (longest - 1) bytes are held,
 * whatever they are. */
static void test_secret_with_space(void **state)
{
	struct sl_scrub_secret sec[] = {S("user pass1234")};
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, NULL), 0);
	assert_int_equal(sl_scrub_feed(&s, "hello\n\nabc user ", 16, collect, &k), 0);
	assert_int_equal(sl_scrub_held(&s), 12);
	assert_int_equal(sl_scrub_feed(&s, "pass1234 ok\n", 12, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(k.len, 28);
	assert_memory_equal(k.buf, "hello\n\nabc ************* ok\n", 28);
	sl_scrub_free(&s);
	free(k.buf);
}

static void test_bad_args(void **state)
{
	char big[SL_SCRUB_MAX_LEN + 1];
	struct sl_scrub_secret shortk[] = {S("1234567")};
	struct sl_scrub_secret longk[] = {{big, sizeof(big)}};
	struct sl_scrub_secret nine[9];
	struct sl_scrub s;
	size_t i;

	(void)state;
	memset(big, 'x', sizeof(big));
	for (i = 0; i < 9; i++)
		nine[i] = S("12345678");
	assert_int_equal(sl_scrub_init(&s, shortk, 1, MARKER), -EINVAL);
	sl_scrub_free(&s);
	assert_int_equal(sl_scrub_init(&s, longk, 1, MARKER), -EINVAL);
	assert_int_equal(sl_scrub_init(&s, nine, 0, MARKER), -EINVAL);
	assert_int_equal(sl_scrub_init(&s, nine, 9, MARKER), -EINVAL);
	assert_int_equal(sl_scrub_init(&s, nine, 8, MARKER), 0);
	sl_scrub_free(&s);
	sl_scrub_free(&s);
	sl_scrub_free(NULL);
}

static int failing(void *userdata, const void *p, size_t len)
{
	(void)userdata;
	(void)p;
	(void)len;
	return -EPIPE;
}

/* A sink that fails breaks the stream for good. */
static void test_sink_error(void **state)
{
	struct sl_scrub_secret sec[] = {S("12345678")};
	struct sl_scrub s;

	(void)state;
	assert_int_equal(sl_scrub_init(&s, sec, 1, MARKER), 0);
	assert_int_equal(sl_scrub_feed(&s, "123", 3, failing, NULL), 0); /* could be the secret: held */
	assert_int_equal(sl_scrub_feed(&s, "abcdefghijkl", 12, failing, NULL), -EPIPE);
	assert_int_equal(sl_scrub_feed(&s, "x", 1, failing, NULL), -EPIPE);
	assert_int_equal(sl_scrub_finish(&s, failing, NULL), -EPIPE);
	sl_scrub_free(&s);
}

/* finish leaves the scrubber ready for a new stream. */
static void test_reuse(void **state)
{
	struct sl_scrub_secret sec[] = {S("12345678")};
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, MARKER), 0);
	assert_int_equal(sl_scrub_feed(&s, "a1234", 5, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(sl_scrub_feed(&s, "5678b12345678", 13, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_memory_equal(k.buf, "a12345678b" MARKER, k.len);
	sl_scrub_free(&s);
	free(k.buf);
}

/* reset after a stream cut short (a connection that ended mid-response):
 * what was held back is dropped, not sent down the next stream; a failed
 * sink is forgotten; the secrets still scrub. */
static void test_reset(void **state)
{
	struct sl_scrub_secret sec[] = {S("12345678")};
	struct sl_scrub s;
	struct sink k;

	(void)state;
	sink_init(&k);
	assert_int_equal(sl_scrub_init(&s, sec, 1, MARKER), 0);
	assert_int_equal(sl_scrub_feed(&s, "old1234", 7, collect, &k), 0);
	assert_int_equal(sl_scrub_feed(&s, "5x", 2, failing, NULL), -EPIPE);
	sl_scrub_reset(&s);
	k.len = 0;
	assert_int_equal(sl_scrub_feed(&s, "5678new1234", 11, collect, &k), 0);
	assert_int_equal(sl_scrub_feed(&s, "5678", 4, collect, &k), 0);
	assert_int_equal(sl_scrub_finish(&s, collect, &k), 0);
	assert_int_equal(k.len, strlen("5678new" MARKER));
	assert_memory_equal(k.buf, "5678new" MARKER, k.len);
	sl_scrub_free(&s);
	free(k.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_split),
	    cmocka_unit_test(test_every_double_split),
	    cmocka_unit_test(test_first_bytes_everywhere),
	    cmocka_unit_test(test_byte_at_a_time),
	    cmocka_unit_test(test_marker_once),
	    cmocka_unit_test(test_no_false_replacement),
	    cmocka_unit_test(test_overlapping),
	    cmocka_unit_test(test_long_secret),
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_same_length),
	    cmocka_unit_test(test_no_needless_holding),
	    cmocka_unit_test(test_no_prefix_oracle),
	    cmocka_unit_test(test_flush),
    cmocka_unit_test(test_pause_cut),
    cmocka_unit_test(test_flush_short_secret),
    cmocka_unit_test(test_whole),
    cmocka_unit_test(test_finish_wipes),
	    cmocka_unit_test(test_secret_with_space),
	    cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_sink_error),
	    cmocka_unit_test(test_reuse),
	    cmocka_unit_test(test_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
