/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the ClientHello parser. Beyond not crashing, it
 * checks the properties the gateway relies on when it peeks at a hello:
 *   - every input either parses or fails with -EAGAIN, -EINVAL or -EPROTO,
 *     and *ret is untouched unless it parsed;
 *   - a parsed SNI holds only [a-z0-9._-] and at most 255 bytes, so it can
 *     go to the policy and the audit log as it is;
 *   - every proper prefix of the consumed bytes is -EAGAIN with a want that
 *     is a true lower bound, so waiting for more never misses a hello;
 *   - the result depends on the consumed bytes only, and an error stays the
 *     same error whatever bytes follow;
 *   - the check of the server's first bytes (a HelloRetryRequest or not)
 *     decides within 43 bytes, and a decision never changes with more;
 *   - what is skipped before a retried hello is whole CCS and early-data
 *     records, and never changes with more bytes.
 * The first input byte picks how the rest is fed: as raw bytes; as a
 * handshake body wrapped in one record; or wrapped and split into records of
 * a size the second byte picks. The wrapping spares the fuzzer from learning
 * the outer lengths, so it spends its time inside the hello.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls-hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Room for a capped hello split into one-byte records, plus extra bytes. */
static uint8_t wrapped[6 * (4 + SL_TLS_HELLO_MAX) + 64];
static uint8_t scratch[sizeof(wrapped) + 16];

static int parse(const uint8_t *buf, size_t len, struct sl_tls_hello *ret, size_t *want)
{
	struct sl_tls_hello h;
	const char *why = NULL;
	int r;

	memset(&h, 0x5a, sizeof(h));
	r = sl_tls_parse_client_hello_full(buf, len, &h, want, &why);
	if (r != 0 && r != -EAGAIN && r != -EINVAL && r != -EPROTO)
		abort();
	if (r != 0) {
		struct sl_tls_hello untouched;

		memset(&untouched, 0x5a, sizeof(untouched));
		if (memcmp(&h, &untouched, sizeof(h)) != 0)
			abort();
		if (r != -EAGAIN && !why)
			abort();
		return r;
	}
	*ret = h;
	return 0;
}

static bool same(const struct sl_tls_hello *a, const struct sl_tls_hello *b)
{
	return a->consumed == b->consumed && a->record_version == b->record_version &&
	       a->legacy_version == b->legacy_version && a->max_version == b->max_version &&
	       a->has_supported_versions == b->has_supported_versions && a->tls13 == b->tls13 &&
	       a->ech == b->ech && a->sni_len == b->sni_len &&
	       memcmp(a->sni, b->sni, a->sni_len + 1) == 0 && a->has_alpn == b->has_alpn &&
	       a->alpn_truncated == b->alpn_truncated && a->alpn_len == b->alpn_len &&
	       memcmp(a->alpn, b->alpn, a->alpn_len) == 0 && a->n_extensions == b->n_extensions;
}

static void check_parsed(const uint8_t *buf, size_t len, const struct sl_tls_hello *h)
{
	struct sl_tls_hello again;
	size_t n = h->consumed, step, want;

	if (n > len || n < 5 + 4 + 41)
		abort();
	if (h->sni_len > SL_TLS_NAME_MAX || strlen(h->sni) != h->sni_len)
		abort();
	for (size_t i = 0; i < h->sni_len; i++) {
		char c = h->sni[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			abort();
	}
	if (h->alpn_len > SL_TLS_ALPN_MAX || (!h->has_alpn && (h->alpn_len || h->alpn_truncated)))
		abort();
	if (h->tls13 && (!h->has_supported_versions || h->max_version < 0x0304))
		abort();
	if (h->record_version < 0x0301 || h->record_version > 0x0304)
		abort();

	/* The consumed bytes alone give the same hello. */
	if (parse(buf, n, &again, NULL) != 0 || !same(h, &again))
		abort();

	/* Every proper prefix asks for more, and for no more than needed.
	 * Long inputs are sampled to keep the fuzzer fast. */
	step = n <= 512 ? 1 : n / 256;
	for (size_t k = 0; k < n; k += (k < 16 || k + 16 >= n) ? 1 : step) {
		want = 0;
		if (parse(buf, k, &again, &want) != -EAGAIN || want <= k || want > n)
			abort();
	}
}

static void check(const uint8_t *buf, size_t len)
{
	struct sl_tls_hello h, h2;
	size_t want = 0;
	int r = parse(buf, len, &h, &want);

	if (r == -EAGAIN && want <= len)
		abort();
	if (r == 0)
		check_parsed(buf, len, &h);

	/* Bytes after the input change nothing that was decided. */
	if (r != -EAGAIN && len + 6 <= sizeof(scratch)) {
		if (len)
			memcpy(scratch, buf, len);
		memcpy(scratch + len, "\x16\x03\x01\x00\x01\x01", 6);
		if (parse(scratch, len + 6, &h2, NULL) != r)
			abort();
		if (r == 0 && !same(&h, &h2))
			abort();
	}
}

/* Wrap a handshake body into a ClientHello message cut into records of
 * `chunk` bytes. Returns the length, or 0 when the body is too long. */
static size_t wrap(const uint8_t *body, size_t n, size_t chunk)
{
	uint8_t msg[4 + SL_TLS_HELLO_MAX];
	size_t out = 0, total = n + 4;

	if (n > SL_TLS_HELLO_MAX)
		return 0;
	msg[0] = 1;
	msg[1] = (uint8_t)(n >> 16);
	msg[2] = (uint8_t)(n >> 8);
	msg[3] = (uint8_t)n;
	if (n)
		memcpy(msg + 4, body, n);
	for (size_t from = 0; from < total; from += chunk) {
		size_t m = total - from < chunk ? total - from : chunk;

		wrapped[out++] = 22;
		wrapped[out++] = 3;
		wrapped[out++] = 1;
		wrapped[out++] = (uint8_t)(m >> 8);
		wrapped[out++] = (uint8_t)m;
		memcpy(wrapped + out, msg + from, m);
		out += m;
	}
	return out;
}

/* The server's first bytes (sl_tls_server_first): 0, 1 or -EAGAIN, never
 * -EAGAIN past 43 bytes, and once a prefix decides, every longer one says
 * the same (the tunnel decides on what it has read so far). */
static void check_server_first(const uint8_t *buf, size_t len)
{
	int first = -EAGAIN;

	for (size_t k = 0; k <= len && k <= 64; k++) {
		int r = sl_tls_server_first(buf, k);

		if (r != 0 && r != 1 && r != -EAGAIN)
			abort();
		if (r == -EAGAIN && k >= 43)
			abort();
		if (first != -EAGAIN && r != first)
			abort();
		first = r;
	}
}

/* What is skipped before a retried hello (sl_tls_skip_before_retry):
 * whole CCS and application_data records only, ending at a record's
 * start; a prefix that ends inside one is -EAGAIN, and once the skip is
 * known, no longer input changes it. */
static void check_skip(const uint8_t *buf, size_t len)
{
	size_t skip = (size_t)-1, off = 0, k, again;
	int r = sl_tls_skip_before_retry(buf, len, &skip);

	if (r == -EAGAIN)
		return;
	if (r != 0 || skip > len)
		abort();
	while (off < skip) {
		if (skip - off < 5 || (buf[off] != 20 && buf[off] != 23))
			abort();
		off += 5 + ((size_t)buf[off + 3] << 8 | buf[off + 4]);
	}
	if (off != skip || (skip < len && len - skip >= 5 && (buf[skip] == 20 || buf[skip] == 23)))
		abort();
	for (k = skip; k <= len && k < skip + 8; k++) {
		again = (size_t)-1;
		r = sl_tls_skip_before_retry(buf, k, &again);
		if (r == 0 && again != skip)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n;

	check_server_first(data, size);
	check_skip(data, size);
	if (size == 0) {
		check(data, 0);
		return 0;
	}
	switch (data[0] % 3) {
	case 0:
		check(data + 1, size - 1);
		break;
	case 1:
		n = wrap(data + 1, size - 1, 16384);
		if (n)
			check(wrapped, n);
		break;
	default:
		if (size < 2)
			break;
		n = wrap(data + 2, size - 2, (size_t)data[1] % 97 + 1);
		if (n)
			check(wrapped, n);
		break;
	}
	return 0;
}
