/* SPDX-License-Identifier: MIT */
/*
 * The ClientHello parser against real hellos (the .bin files in tests/unit/tls-hello,
 * captured from Python's ssl module and openssl s_client by gen.py there)
 * and against hellos built here to break one rule each. Every prefix is
 * parsed from a heap copy of exactly that length, so under ASan a read past
 * the end is caught.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tls-hello.h"

#define BUF_MAX 70000

/* ---- helpers ---------------------------------------------------------- */

struct bytes {
	uint8_t b[BUF_MAX];
	size_t n;
};

static void put(struct bytes *o, const void *p, size_t n)
{
	assert_true(o->n + n <= sizeof(o->b));
	if (n)
		memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put8(struct bytes *o, unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(o, &b, 1);
}

static void put16(struct bytes *o, unsigned v)
{
	put8(o, v >> 8);
	put8(o, v);
}

static void put24(struct bytes *o, unsigned v)
{
	put8(o, v >> 16);
	put16(o, v);
}

/* Open a vector of `width` length bytes; close_vec() fills in its length. */
static size_t open_vec(struct bytes *o, size_t width)
{
	size_t at = o->n;

	for (size_t i = 0; i < width; i++)
		put8(o, 0);
	return at;
}

static void close_vec(struct bytes *o, size_t at, size_t width)
{
	size_t n = o->n - at - width;

	for (size_t i = 0; i < width; i++)
		o->b[at + i] = (uint8_t)(n >> (8 * (width - 1 - i)));
}

static void ext(struct bytes *o, unsigned type, const void *data, size_t n)
{
	put16(o, type);
	put16(o, (unsigned)n);
	put(o, data, n);
}

/* A server_name extension with one host_name entry. */
static void ext_sni(struct bytes *o, const char *name, size_t n)
{
	size_t e, l, h;

	put16(o, 0);
	e = open_vec(o, 2);
	l = open_vec(o, 2);
	put8(o, 0);
	h = open_vec(o, 2);
	put(o, name, n);
	close_vec(o, h, 2);
	close_vec(o, l, 2);
	close_vec(o, e, 2);
}

/* The handshake message of a ClientHello with the given extensions block
 * (exts NULL: no block at all, as TLS 1.2 allows). */
static void hello_msg(struct bytes *o, const struct bytes *exts)
{
	static const uint8_t random[32] = { 1, 2, 3, 4 };
	size_t body, v;

	put8(o, 1);
	body = open_vec(o, 3);
	put16(o, 0x0303);
	put(o, random, sizeof(random));
	put8(o, 0);
	put16(o, 4);
	put16(o, 0x1301);
	put16(o, 0xc02f);
	put8(o, 1);
	put8(o, 0);
	if (exts) {
		v = open_vec(o, 2);
		put(o, exts->b, exts->n);
		close_vec(o, v, 2);
	}
	close_vec(o, body, 3);
}

/* Wrap a handshake message into records, cutting it after each offset in
 * cuts (ascending, inside the message). */
static void records(struct bytes *o, const uint8_t *msg, size_t n, const size_t *cuts,
		    size_t ncuts)
{
	size_t from = 0;

	for (size_t i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : n;

		put8(o, 22);
		put16(o, 0x0301);
		put16(o, (unsigned)(to - from));
		put(o, msg + from, to - from);
		from = to;
	}
}

static struct bytes *new_bytes(void)
{
	struct bytes *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	return b;
}

/* One record holding a hello with these extensions. */
static struct bytes *built(const struct bytes *exts)
{
	struct bytes *msg = new_bytes(), *out = new_bytes();

	hello_msg(msg, exts);
	records(out, msg->b, msg->n, NULL, 0);
	free(msg);
	return out;
}

/* Parse a heap copy of exactly len bytes; *ret is left untouched unless
 * the parse succeeded, which is checked here for every call. */
static int parse_full(const uint8_t *buf, size_t len, struct sl_tls_hello *ret, size_t *want,
		      const char **why)
{
	static struct sl_tls_hello sentinel;
	struct sl_tls_hello h;
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	if (len)
		memcpy(copy, buf, len);
	memset(&sentinel, 0xa5, sizeof(sentinel));
	memcpy(&h, &sentinel, sizeof(h));
	r = sl_tls_parse_client_hello_full(copy, len, &h, want, why);
	free(copy);
	if (r != 0)
		assert_memory_equal(&h, &sentinel, sizeof(h));
	else if (ret)
		*ret = h;
	return r;
}

static int parse(const uint8_t *buf, size_t len, struct sl_tls_hello *ret)
{
	return parse_full(buf, len, ret, NULL, NULL);
}

#define EXPECT_ERR(buf, len, err)                                                                  \
	do {                                                                                       \
		const char *_why = NULL;                                                           \
		int _r = parse_full(buf, len, NULL, NULL, &_why);                                  \
		if (_r != (err))                                                                   \
			fail_msg("got %d (%s), want %d", _r, _why ? _why : "-", err);              \
		assert_non_null(_why);                                                             \
	} while (0)

static struct bytes *load(const char *name)
{
	char path[4096];
	struct bytes *b = new_bytes();
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/unit/tls-hello/%s", SOURCE_ROOT, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	b->n = fread(b->b, 1, sizeof(b->b), f);
	fclose(f);
	assert_true(b->n > 5);
	return b;
}

static const char *const vectors[] = {
	"python-tls13.bin", "python-tls12.bin", "python-nosni.bin",
	"openssl-tls13.bin", "openssl-tls12.bin",
};

/* Every proper prefix is -EAGAIN with a want that is a true lower bound. */
static void check_prefixes(const uint8_t *buf, size_t len)
{
	for (size_t k = 0; k < len; k++) {
		size_t want = 0;
		int r = parse_full(buf, k, NULL, &want, NULL);

		if (r != -EAGAIN)
			fail_msg("prefix %zu of %zu: got %d, want -EAGAIN", k, len, r);
		if (want <= k || want > len)
			fail_msg("prefix %zu of %zu: want %zu is no lower bound", k, len, want);
	}
}

/* ---- real hellos ------------------------------------------------------ */

static void test_real_hellos(void **state)
{
	static const struct {
		const char *file, *sni;
		bool tls13;
		uint16_t max_version;
		const char *alpn; /* wire format */
		size_t alpn_len;
	} want[] = {
		{ "python-tls13.bin", "api.example.com", true, 0x0304, "\2h2\10http/1.1", 12 },
		{ "python-tls12.bin", "api.example.com", false, 0x0303, NULL, 0 },
		{ "python-nosni.bin", "", true, 0x0304, NULL, 0 },
		{ "openssl-tls13.bin", "www.example.org", true, 0x0304, "\10http/1.1", 9 },
		{ "openssl-tls12.bin", "tls12.example.net", false, 0x0303, NULL, 0 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct bytes *b = load(want[i].file);
		struct sl_tls_hello h;

		assert_int_equal(parse(b->b, b->n, &h), 0);
		assert_string_equal(h.sni, want[i].sni);
		assert_int_equal(h.sni_len, strlen(want[i].sni));
		assert_int_equal(h.tls13, want[i].tls13);
		assert_int_equal(h.has_supported_versions, want[i].tls13);
		assert_int_equal(h.max_version, want[i].max_version);
		assert_int_equal(h.legacy_version, 0x0303);
		assert_int_equal(h.record_version, 0x0301);
		assert_int_equal(h.consumed, b->n);
		assert_false(h.ech);
		assert_int_equal(h.has_alpn, want[i].alpn != NULL);
		assert_false(h.alpn_truncated);
		if (want[i].alpn) {
			assert_int_equal(h.alpn_len, want[i].alpn_len);
			assert_memory_equal(h.alpn, want[i].alpn, want[i].alpn_len);
			assert_true(sl_tls_hello_offers_alpn(&h, "http/1.1"));
		} else {
			assert_false(sl_tls_hello_offers_alpn(&h, "http/1.1"));
		}
		assert_false(sl_tls_hello_offers_alpn(&h, "http/1"));
		assert_false(sl_tls_hello_offers_alpn(&h, "spdy/3"));
		assert_true(h.n_extensions >= 7);
		free(b);
	}
}

static void test_alpn_h2(void **state)
{
	struct bytes *b = load("python-tls13.bin");
	struct sl_tls_hello h;

	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_true(sl_tls_hello_offers_alpn(&h, "h2"));
	free(b);

	b = load("openssl-tls13.bin");
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_false(sl_tls_hello_offers_alpn(&h, "h2"));
	free(b);
}

static void test_truncated_everywhere(void **state)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		struct bytes *b = load(vectors[i]);

		check_prefixes(b->b, b->n);
		free(b);
	}
}

/* Re-split one real hello into two records at every byte boundary. */
static void test_fragmented_everywhere(void **state)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		struct bytes *b = load(vectors[i]), *out = new_bytes();
		const uint8_t *msg = b->b + 5;
		size_t n = b->n - 5;
		struct sl_tls_hello whole, h;

		assert_int_equal(parse(b->b, b->n, &whole), 0);
		for (size_t cut = 1; cut < n; cut++) {
			out->n = 0;
			records(out, msg, n, &cut, 1);
			check_prefixes(out->b, out->n);
			assert_int_equal(parse(out->b, out->n, &h), 0);
			assert_string_equal(h.sni, whole.sni);
			assert_int_equal(h.consumed, out->n);
			assert_int_equal(h.n_extensions, whole.n_extensions);
		}
		free(out);
		free(b);
	}
}

/* One byte per record, the most a client can split it, and three pieces. */
static void test_fragmented_many(void **state)
{
	struct bytes *b = load("python-tls13.bin"), *out = new_bytes();
	size_t n = b->n - 5, *cuts = calloc(n, sizeof(*cuts));
	struct sl_tls_hello h;
	size_t three[] = { 2, 100, 101 };

	assert_non_null(cuts);
	for (size_t i = 0; i + 1 < n; i++)
		cuts[i] = i + 1;
	records(out, b->b + 5, n, cuts, n - 1);
	assert_int_equal(out->n, 6 * n);
	assert_int_equal(parse(out->b, out->n, &h), 0);
	assert_string_equal(h.sni, "api.example.com");
	assert_int_equal(h.consumed, out->n);
	check_prefixes(out->b, out->n);

	out->n = 0;
	records(out, b->b + 5, n, three, 3);
	assert_int_equal(parse(out->b, out->n, &h), 0);
	assert_string_equal(h.sni, "api.example.com");
	check_prefixes(out->b, out->n);
	free(cuts);
	free(out);
	free(b);
}

/* What follows the hello's records (a ChangeCipherSpec, early data) is
 * left alone and not counted. */
static void test_bytes_after(void **state)
{
	static const uint8_t ccs[] = { 20, 3, 3, 0, 1, 1, 23, 3, 3, 0, 5, 'x' };
	struct bytes *b = load("openssl-tls13.bin");
	size_t n = b->n;
	struct sl_tls_hello h;

	put(b, ccs, sizeof(ccs));
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_int_equal(h.consumed, n);
	assert_string_equal(h.sni, "www.example.org");
	free(b);
}

/* ---- built hellos ----------------------------------------------------- */

static void test_no_sni(void **state)
{
	struct bytes *e = new_bytes(), *b;
	struct sl_tls_hello h;

	ext(e, 23, NULL, 0);
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_int_equal(h.sni_len, 0);
	assert_string_equal(h.sni, "");
	assert_int_equal(h.n_extensions, 1);
	assert_false(h.tls13);
	assert_int_equal(h.max_version, 0x0303);
	free(b);

	/* No extensions block at all, as a TLS 1.2 client may send. */
	b = built(NULL);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_int_equal(h.sni_len, 0);
	assert_int_equal(h.n_extensions, 0);
	free(b);

	/* An empty block. */
	e->n = 0;
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_int_equal(h.n_extensions, 0);
	free(b);
	free(e);
}

static void test_names(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out; /* NULL: rejected */
	} cases[] = {
		{ "Example.COM", 11, "example.com" },
		{ "example.com.", 12, "example.com." },
		{ "_dmarc.x-y.example", 18, "_dmarc.x-y.example" },
		{ "192.0.2.1", 9, "192.0.2.1" },
		{ "a", 1, "a" },
		{ "", 0, NULL },
		{ "a\0.evil.example", 15, NULL },
		{ "example.com\0", 12, NULL },
		{ "exa mple.com", 12, NULL },
		{ "example.com\r\n", 13, NULL },
		{ "ex\x01.com", 7, NULL },
		{ "b\xc3\xbc" "cher.example", 15, NULL },
		{ "example.com:443", 15, NULL },
		{ "a/b", 3, NULL },
		{ "a*.example", 10, NULL },
		{ "\x7f", 1, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bytes *e = new_bytes(), *b;
		struct sl_tls_hello h;
		int r;

		ext_sni(e, cases[i].in, cases[i].len);
		b = built(e);
		r = parse(b->b, b->n, &h);
		if (cases[i].out) {
			if (r != 0)
				fail_msg("case %zu: got %d", i, r);
			assert_string_equal(h.sni, cases[i].out);
			assert_int_equal(h.sni_len, cases[i].len);
		} else {
			if (r != -EPROTO)
				fail_msg("case %zu: got %d, want -EPROTO", i, r);
		}
		free(b);
		free(e);
	}
}

static void test_name_length(void **state)
{
	char name[300];
	struct sl_tls_hello h;

	memset(name, 'a', sizeof(name));
	for (size_t n = 250; n <= 260; n++) {
		struct bytes *e = new_bytes(), *b;

		ext_sni(e, name, n);
		b = built(e);
		if (n <= SL_TLS_NAME_MAX) {
			assert_int_equal(parse(b->b, b->n, &h), 0);
			assert_int_equal(h.sni_len, n);
			assert_int_equal(strlen(h.sni), n);
		} else {
			EXPECT_ERR(b->b, b->n, -EPROTO);
		}
		free(b);
		free(e);
	}
}

static void test_two_sni_extensions(void **state)
{
	struct bytes *e = new_bytes(), *b;

	ext_sni(e, "allowed.example", 15);
	ext(e, 23, NULL, 0);
	ext_sni(e, "evil.example", 12);
	b = built(e);
	EXPECT_ERR(b->b, b->n, -EPROTO);
	free(b);
	free(e);
}

static void test_two_host_names(void **state)
{
	struct bytes *e = new_bytes(), *b;
	size_t x, l, h;

	put16(e, 0);
	x = open_vec(e, 2);
	l = open_vec(e, 2);
	put8(e, 0);
	h = open_vec(e, 2);
	put(e, "allowed.example", 15);
	close_vec(e, h, 2);
	put8(e, 0);
	h = open_vec(e, 2);
	put(e, "evil.example", 12);
	close_vec(e, h, 2);
	close_vec(e, l, 2);
	close_vec(e, x, 2);
	b = built(e);
	EXPECT_ERR(b->b, b->n, -EPROTO);
	free(b);
	free(e);
}

static void test_bad_server_name_ext(void **state)
{
	static const struct {
		const uint8_t *data;
		size_t len;
	} cases[] = {
		{ (const uint8_t *)"", 0 },                           /* empty extension */
		{ (const uint8_t *)"\0\0", 2 },                       /* empty list */
		{ (const uint8_t *)"\0\4\1\0\1x", 6 },                /* name_type 1 */
		{ (const uint8_t *)"\0\4\0\0\2x", 6 },                /* name runs past list */
		{ (const uint8_t *)"\0\4\0\0\1x\0", 7 },              /* bytes after list */
		{ (const uint8_t *)"\0\5\0\0\1x\0", 7 },              /* half an entry after */
		{ (const uint8_t *)"\0\3\0\0\0", 5 },                 /* empty name */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bytes *e = new_bytes(), *b;

		ext(e, 0, cases[i].data, cases[i].len);
		b = built(e);
		EXPECT_ERR(b->b, b->n, -EPROTO);
		free(b);
		free(e);
	}
}

static void test_duplicate_extension(void **state)
{
	struct bytes *e = new_bytes(), *b;

	ext_sni(e, "example.com", 11);
	ext(e, 23, NULL, 0);
	ext(e, 0x1a1a, NULL, 0); /* GREASE values are extensions too */
	ext(e, 23, NULL, 0);
	b = built(e);
	EXPECT_ERR(b->b, b->n, -EPROTO);
	free(b);

	e->n = 0;
	ext(e, 16, "\0\3\2h2", 5);
	ext(e, 16, "\0\11\10http/1.1", 11);
	b = built(e);
	EXPECT_ERR(b->b, b->n, -EPROTO);
	free(b);
	free(e);
}

static void test_ech(void **state)
{
	static const uint8_t ech[] = { 0, 0, 1, 0, 1, 0x42, 0, 0, 0, 0 };
	struct bytes *e = new_bytes(), *b;
	struct sl_tls_hello h;

	ext_sni(e, "public.example", 14);
	ext(e, 43, "\4\3\4\3\3", 5);
	ext(e, 0xfe0d, ech, sizeof(ech));
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_true(h.ech);
	assert_true(h.tls13);
	assert_string_equal(h.sni, "public.example");
	free(b);

	/* The older encrypted_server_name draft hides the name just as well. */
	e->n = 0;
	ext(e, 0xffce, ech, sizeof(ech));
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_true(h.ech);
	assert_int_equal(h.sni_len, 0);
	free(b);
	free(e);
}

static void test_supported_versions(void **state)
{
	struct bytes *e = new_bytes(), *b;
	struct sl_tls_hello h;

	ext(e, 43, "\6\x1a\x1a\3\4\3\3", 7);
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_true(h.has_supported_versions);
	assert_true(h.tls13);
	assert_int_equal(h.max_version, 0x0304);
	free(b);

	/* Only 1.2 offered, GREASE and a draft version ignored. */
	e->n = 0;
	ext(e, 43, "\6\x7f\x1c\x3a\x3a\3\3", 7);
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_false(h.tls13);
	assert_int_equal(h.max_version, 0x0303);
	free(b);

	static const struct {
		const char *d;
		size_t n;
	} bad[] = { { "", 0 }, { "\0", 1 }, { "\3\3\4\3", 4 }, { "\2\3\4\0", 4 }, { "\4\3\4", 3 } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e->n = 0;
		ext(e, 43, bad[i].d, bad[i].n);
		b = built(e);
		EXPECT_ERR(b->b, b->n, -EPROTO);
		free(b);
	}
	free(e);
}

static void test_alpn(void **state)
{
	struct bytes *e = new_bytes(), *b;
	struct sl_tls_hello h;
	size_t x, l;

	/* A long list: the names that fit are kept whole, the rest noted. */
	put16(e, 16);
	x = open_vec(e, 2);
	l = open_vec(e, 2);
	put(e, "\10http/1.1", 9);
	for (int i = 0; i < 30; i++)
		put(e, "\11proto-xyz", 10);
	put(e, "\2h2", 3);
	close_vec(e, l, 2);
	close_vec(e, x, 2);
	b = built(e);
	assert_int_equal(parse(b->b, b->n, &h), 0);
	assert_true(h.has_alpn);
	assert_true(h.alpn_truncated);
	assert_int_equal(h.alpn_len, 9 + 24 * 10);
	assert_true(sl_tls_hello_offers_alpn(&h, "http/1.1"));
	assert_true(sl_tls_hello_offers_alpn(&h, "proto-xyz"));
	assert_false(sl_tls_hello_offers_alpn(&h, "h2"));
	free(b);

	static const struct {
		const char *d;
		size_t n;
	} bad[] = {
		{ "", 0 }, { "\0\0", 2 }, { "\0\1\0", 3 }, { "\0\2\2h", 4 },
		{ "\0\3\2h2\0", 6 }, { "\0\4\2h2\0", 6 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e->n = 0;
		ext(e, 16, bad[i].d, bad[i].n);
		b = built(e);
		EXPECT_ERR(b->b, b->n, -EPROTO);
		free(b);
	}
	free(e);
}

/* ---- not a (good) ClientHello ----------------------------------------- */

static void test_not_tls(void **state)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";
	static const char connect[] = "CONNECT example.com:443 HTTP/1.1\r\n\r\n";
	static const uint8_t ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
	static const uint8_t alert[] = { 21, 3, 3, 0, 2, 2, 40 };
	uint8_t garbage[512];
	uint32_t x = 12345;

	EXPECT_ERR((const uint8_t *)http, strlen(http), -EINVAL);
	EXPECT_ERR((const uint8_t *)http, 1, -EINVAL);
	EXPECT_ERR((const uint8_t *)connect, strlen(connect), -EINVAL);
	EXPECT_ERR(ssh, sizeof(ssh) - 1, -EINVAL);
	EXPECT_ERR(alert, sizeof(alert), -EINVAL);
	EXPECT_ERR((const uint8_t *)"\x16GET", 4, -EINVAL);
	/* A record header, then what is no handshake header, in a record
	 * that claims more bytes than come: refused now, not after waiting
	 * for the rest (the client is waiting for an answer). */
	EXPECT_ERR((const uint8_t *)"\x16\x03\x01\x00\x40GET / HTTP/1.1\r\n\r\n", 23, -EPROTO);
	EXPECT_ERR((const uint8_t *)"\x16\x03\x01\x00\x40\x02", 6, -EPROTO);

	for (int round = 0; round < 1000; round++) {
		int r;

		for (size_t i = 0; i < sizeof(garbage); i++) {
			x = x * 1103515245 + 12345;
			garbage[i] = (uint8_t)(x >> 16);
		}
		if (round % 2)
			garbage[0] = 22;
		r = parse(garbage, sizeof(garbage), NULL);
		assert_true(r == -EINVAL || r == -EPROTO || r == -EAGAIN);
	}
}

static void test_sslv2(void **state)
{
	/* An SSLv2-compatible CLIENT-HELLO offering TLS 1.0: 2-byte length
	 * with the top bit set, msg type 1, version, then the specs. */
	static const uint8_t v2[] = { 0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15, 0x00, 0x00,
				      0x00, 0x10, 0x00, 0x00, 0x35, 0x00, 0x00, 0x2f, 0x00,
				      0x00, 0x0a, 0x07, 0x00, 0xc0, 0x01, 0x00, 0x80, 0x03,
				      0x00, 0x80, 0x00, 0x00, 0xff, 0x11, 0x22, 0x33, 0x44,
				      0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
				      0xee, 0xff, 0x00 };

	EXPECT_ERR(v2, sizeof(v2), -EPROTO);
	EXPECT_ERR(v2, 1, -EPROTO);
}

static void test_bad_records(void **state)
{
	struct bytes *b = load("openssl-tls12.bin"), *c = new_bytes();
	const uint8_t *msg = b->b + 5;
	size_t n = b->n - 5, cut = 50;
	struct sl_tls_hello h;

	/* A record that claims more than its whole hello: the rest can only
	 * be data after the hello, refused before it arrives. */
	memcpy(c->b, b->b, b->n);
	c->n = b->n;
	c->b[4] = (uint8_t)(c->b[4] + 10);
	if (c->b[4] < 10)
		c->b[3]++;
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* Record versions: SSL 3.0 and beyond TLS 1.3 are refused, each TLS
	 * version accepted. */
	for (unsigned v = 0x0300; v <= 0x0305; v++) {
		memcpy(c->b, b->b, b->n);
		c->n = b->n;
		c->b[1] = (uint8_t)(v >> 8);
		c->b[2] = (uint8_t)v;
		if (v >= 0x0301 && v <= 0x0304) {
			assert_int_equal(parse(c->b, c->n, &h), 0);
			assert_int_equal(h.record_version, v);
		} else {
			EXPECT_ERR(c->b, c->n, -EPROTO);
			EXPECT_ERR(c->b, 3, -EPROTO);
		}
	}

	/* Another handshake message (ServerHello). */
	memcpy(c->b, b->b, b->n);
	c->b[5] = 2;
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* A handshake length beyond the cap, and one too short to be a hello. */
	memcpy(c->b, b->b, b->n);
	c->b[6] = 0x00, c->b[7] = 0x40, c->b[8] = 0x01;
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->b[6] = 0, c->b[7] = 0, c->b[8] = 0;
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* A record length beyond 2^14. */
	memcpy(c->b, b->b, b->n);
	c->b[3] = 0x40, c->b[4] = 0x01;
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* An empty handshake record, first or in the middle. */
	c->n = 0;
	put(c, "\x16\x03\x01\x00\x00", 5);
	put(c, b->b, b->n);
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->n = 0;
	records(c, msg, cut, NULL, 0);
	put(c, "\x16\x03\x01\x00\x00", 5);
	records(c, msg + cut, n - cut, NULL, 0);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* Another record type in the middle of the hello. */
	c->n = 0;
	records(c, msg, cut, NULL, 0);
	put(c, "\x14\x03\x03\x00\x01\x01", 6);
	records(c, msg + cut, n - cut, NULL, 0);
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->n = 0;
	records(c, msg, cut, NULL, 0);
	put(c, "\x16\x02\x03\x00\x01\x01", 6);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* Bytes after the hello in its own record. */
	c->n = 0;
	put8(c, 22);
	put16(c, 0x0301);
	put16(c, (unsigned)n + 4);
	put(c, msg, n);
	put(c, "\x0b\0\0\0", 4);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* Bytes after the extensions inside the hello. */
	c->n = 0;
	memcpy(c->b, b->b, b->n);
	c->n = b->n;
	put8(c, 0);
	c->b[4]++;
	c->b[8]++;
	EXPECT_ERR(c->b, c->n, -EPROTO);

	free(c);
	free(b);
}

static void test_bad_body(void **state)
{
	struct bytes *m = new_bytes(), *c = new_bytes();
	uint8_t random[32] = { 0 };

	/* legacy_version SSL 3.0 */
	put8(m, 1);
	put24(m, 41);
	put16(m, 0x0300);
	put(m, random, 32);
	put8(m, 0);
	put16(m, 2);
	put16(m, 0x002f);
	put8(m, 1);
	put8(m, 0);
	records(c, m->b, m->n, NULL, 0);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* The same with 0x0303 parses; then break one field at a time. */
	c->b[9] = 3;
	c->b[10] = 3;
	assert_int_equal(parse(c->b, c->n, NULL), 0);

	c->b[43] = 33; /* session id longer than 32 and than the hello */
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->b[43] = 0;
	c->b[45] = 3; /* odd cipher suites length */
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->b[45] = 0; /* no cipher suites */
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->b[45] = 2;
	c->b[48] = 0; /* no compression methods */
	EXPECT_ERR(c->b, c->n, -EPROTO);
	c->b[48] = 1;
	assert_int_equal(parse(c->b, c->n, NULL), 0);

	/* An extensions block cut short: one length byte only. */
	m->n = 0;
	put8(m, 1);
	put24(m, 42);
	put16(m, 0x0303);
	put(m, random, 32);
	put8(m, 0);
	put16(m, 2);
	put16(m, 0x002f);
	put8(m, 1);
	put8(m, 0);
	put8(m, 0);
	c->n = 0;
	records(c, m->b, m->n, NULL, 0);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	/* An extension whose length runs past the block. */
	m->n = 0;
	put8(m, 1);
	put24(m, 41 + 2 + 4);
	put16(m, 0x0303);
	put(m, random, 32);
	put8(m, 0);
	put16(m, 2);
	put16(m, 0x002f);
	put8(m, 1);
	put8(m, 0);
	put16(m, 4);
	put16(m, 23);
	put16(m, 1);
	c->n = 0;
	records(c, m->b, m->n, NULL, 0);
	EXPECT_ERR(c->b, c->n, -EPROTO);

	free(c);
	free(m);
}

static void test_want(void **state)
{
	struct bytes *b = load("openssl-tls12.bin");
	size_t want = 0;

	assert_int_equal(parse_full(b->b, 0, NULL, &want, NULL), -EAGAIN);
	assert_int_equal(want, 9);
	assert_int_equal(parse_full(b->b, 3, NULL, &want, NULL), -EAGAIN);
	assert_int_equal(want, 9);
	/* Once the record header is in, the whole record is wanted. */
	assert_int_equal(parse_full(b->b, 5, NULL, &want, NULL), -EAGAIN);
	assert_int_equal(want, b->n);
	assert_int_equal(parse_full(b->b, b->n - 1, NULL, &want, NULL), -EAGAIN);
	assert_int_equal(want, b->n);
	/* NULL out-parameters are fine. */
	assert_int_equal(sl_tls_parse_client_hello(b->b, 5, NULL), -EAGAIN);
	assert_int_equal(sl_tls_parse_client_hello(b->b, b->n, NULL), 0);
	assert_int_equal(sl_tls_parse_client_hello(NULL, 0, NULL), -EAGAIN);
	free(b);
}

/* Before a retried hello: whole CCS and early-data records are skipped,
 * one cut short waits for its end, and anything else begins the hello. */
static void test_skip_before_retry(void **state)
{
	static const uint8_t ccs[] = {20, 3, 3, 0, 1, 1};
	static const uint8_t early[] = {23, 3, 3, 0, 3, 'a', 'b', 'c'};
	static const uint8_t hs[] = {22, 3, 1, 0, 40};
	uint8_t b[64];
	size_t skip, n = 0;

	(void)state;
	assert_int_equal(sl_tls_skip_before_retry(hs, sizeof(hs), &skip), 0);
	assert_int_equal(skip, 0);
	assert_int_equal(sl_tls_skip_before_retry(NULL, 0, &skip), 0);
	assert_int_equal(skip, 0);
	memcpy(b, ccs, sizeof(ccs));
	n += sizeof(ccs);
	memcpy(b + n, early, sizeof(early));
	n += sizeof(early);
	memcpy(b + n, hs, sizeof(hs));
	assert_int_equal(sl_tls_skip_before_retry(b, n + sizeof(hs), &skip), 0);
	assert_int_equal(skip, n);
	/* Cut inside either record, or inside the CCS's header: more. */
	for (size_t k = 1; k < n; k++)
		if (k != sizeof(ccs))
			assert_int_equal(sl_tls_skip_before_retry(b, k, &skip), -EAGAIN);
	/* A handshake record cut short is the hello's to wait for. */
	assert_int_equal(sl_tls_skip_before_retry(b, n + 2, &skip), 0);
	assert_int_equal(skip, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_hellos),
		cmocka_unit_test(test_alpn_h2),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_fragmented_everywhere),
		cmocka_unit_test(test_fragmented_many),
		cmocka_unit_test(test_bytes_after),
		cmocka_unit_test(test_no_sni),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_name_length),
		cmocka_unit_test(test_two_sni_extensions),
		cmocka_unit_test(test_two_host_names),
		cmocka_unit_test(test_bad_server_name_ext),
		cmocka_unit_test(test_duplicate_extension),
		cmocka_unit_test(test_ech),
		cmocka_unit_test(test_supported_versions),
		cmocka_unit_test(test_alpn),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_sslv2),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_bad_body),
		cmocka_unit_test(test_want),
		cmocka_unit_test(test_skip_before_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
