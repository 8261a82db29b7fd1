/* SPDX-License-Identifier: MIT */
/* The streaming secret scrubber; the contract is in scrub.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scrub.h"

/* Fresh bytes taken per pass on top of the held-back tail: large enough
 * that callbacks carry big runs, small enough to stay cheap per stream. */
#define SCRUB_WINDOW 8192

int sl_scrub_init(struct sl_scrub *s, const struct sl_scrub_secret *secrets, size_t n,
		  const char *marker)
{
	size_t order[SL_SCRUB_MAX_SECRETS], total = 0, page, mlen, i, j;
	unsigned char *p;
	void *map;

	memset(s, 0, sizeof(*s));
	if (!secrets || n == 0 || n > SL_SCRUB_MAX_SECRETS)
		return -EINVAL;
	if (!marker) {
		s->same_length = true;
		marker = SL_SCRUB_SAME_LENGTH_MARKER;
	}
	mlen = strlen(marker);
	if (mlen >= SL_SCRUB_MAX_MARKER)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!secrets[i].value || secrets[i].len < SL_SCRUB_MIN_LEN ||
		    secrets[i].len > SL_SCRUB_MAX_LEN)
			return -EINVAL;
		total += secrets[i].len;
		if (secrets[i].len > s->max_len)
			s->max_len = secrets[i].len;
	}

	/* Longest first, so the first secret that matches at a position is
	 * the longest one there (a stable insertion sort of eight). */
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && secrets[order[j - 1]].len < secrets[i].len; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}

	s->cap = s->max_len - 1 + SCRUB_WINDOW;
	page = (size_t)sysconf(_SC_PAGESIZE);
	s->map_len = (total + s->cap + page - 1) / page * page;
	map = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		s->map_len = 0;
		return -ENOMEM;
	}
	s->map = map;
	/* Secrets and the bytes in flight stay out of core dumps; best effort,
	 * as the kernel may not support it. */
	(void)madvise(map, s->map_len, MADV_DONTDUMP);

	p = s->map;
	for (i = 0; i < n; i++) {
		const struct sl_scrub_secret *sec = &secrets[order[i]];

		memcpy(p, sec->value, sec->len);
		s->secret[i] = p;
		s->len[i] = sec->len;
		if (!s->first[p[0]])
			s->first_bytes[s->n_first++] = p[0];
		s->first[p[0]] |= (uint8_t)(1u << i);
		p += sec->len;
	}
	s->n = n;
	s->buf = p;
	memcpy(s->marker, marker, mlen + 1);
	s->marker_len = mlen;
	return 0;
}

/* The length of the longest secret that occurs at buf[p], wholly inside
 * the fill; 0 if none. */
static size_t match_at(const struct sl_scrub *s, size_t p)
{
	unsigned mask = s->first[s->buf[p]];
	size_t i;

	for (i = 0; mask && i < s->n; i++, mask >>= 1) {
		if (!(mask & 1u))
			continue;
		if (s->len[i] <= s->fill - p && memcmp(s->buf + p, s->secret[i], s->len[i]) == 0)
			return s->len[i];
	}
	return 0;
}

/* The first position from p on where some secret could start (the fill if
 * none): memchr per distinct first byte, so that ordinary text is skipped
 * at memchr's speed rather than a byte at a time. */
static size_t next_candidate(const struct sl_scrub *s, size_t p)
{
	size_t best = s->fill, i;

	for (i = 0; i < s->n_first && p < best; i++) {
		const unsigned char *q = memchr(s->buf + p, s->first_bytes[i], best - p);

		if (q)
			best = (size_t)(q - s->buf);
	}
	return best;
}

/* At p, in the undecided tail: could a secret that starts here still be
 * completed by bytes not seen yet? Only then must p wait for them. */
static bool pending_at(const struct sl_scrub *s, size_t p)
{
	unsigned mask = s->first[s->buf[p]];
	size_t have = s->fill - p, i;

	for (i = 0; mask && i < s->n; i++, mask >>= 1)
		if ((mask & 1u) && s->len[i] > have && memcmp(s->buf + p, s->secret[i], have) == 0)
			return true;
	return false;
}

static int emit(struct sl_scrub *s, const void *p, size_t len, sl_scrub_out_fn *out, void *userdata)
{
	int r;

	if (len == 0)
		return 0;
	r = out(userdata, p, len);
	if (r < 0)
		s->error = r;
	return r < 0 ? r : 0;
}

/* The marker for a match of m bytes: as it is, or (same-length mode) the
 * marker's text cut or padded with '*' to exactly m bytes, so that
 * Content-Length and chunk sizes stay true. */
static int emit_marker(struct sl_scrub *s, size_t m, sl_scrub_out_fn *out, void *userdata)
{
	static const char stars[64] = "****************************************************************";
	size_t k;
	int r;

	if (!s->same_length)
		return emit(s, s->marker, s->marker_len, out, userdata);
	k = m < s->marker_len ? m : s->marker_len;
	if (m < s->marker_len)
		return emit(s, stars, m, out, userdata);
	r = emit(s, s->marker, k, out, userdata);
	for (m -= k; r == 0 && m > 0; m -= k) {
		k = m < sizeof(stars) ? m : sizeof(stars);
		r = emit(s, stars, k, out, userdata);
	}
	return r;
}

/*
 * Decide every position of buf whose outcome no later byte can change:
 * while streaming, those with at least max_len bytes after them (every
 * secret that starts there is wholly present, so the result is the
 * whole-stream result); at the end of the stream, all of them. The
 * undecided tail, shorter than max_len, moves to the front.
 */
static int drain(struct sl_scrub *s, bool final, sl_scrub_out_fn *out, void *userdata)
{
	size_t end, p = 0, run = 0, m;
	int r;

	if (final)
		end = s->fill;
	else if (s->fill >= s->max_len)
		end = s->fill - s->max_len + 1;
	else
		end = 0;

	while (p < s->fill) {
		/* No secret starts here: decided, wherever p is. */
		if (!s->first[s->buf[p]]) {
			p = next_candidate(s, p);
			continue;
		}
		/* Past `end`, a position is decided too unless a secret could
		 * still begin there: a stream that pauses on bytes no secret
		 * starts with (an event's "\n\n") is passed on whole. */
		if (p >= end && pending_at(s, p))
			break;
		if (!s->first[s->buf[p]] || (m = match_at(s, p)) == 0) {
			p++;
			continue;
		}
		r = emit(s, s->buf + run, p - run, out, userdata);
		if (r < 0)
			return r;
		r = emit_marker(s, m, out, userdata);
		if (r < 0)
			return r;
		p += m;
		run = p;
	}
	/* A match may end past `end`, never past the fill. */
	r = emit(s, s->buf + run, p - run, out, userdata);
	if (r < 0)
		return r;
	memmove(s->buf, s->buf + p, s->fill - p);
	s->fill -= p;
	return 0;
}

int sl_scrub_feed(struct sl_scrub *s, const void *in, size_t len, sl_scrub_out_fn *out,
		  void *userdata)
{
	const unsigned char *src = in;
	int r;

	if (s->error)
		return s->error;
	if (!s->map)
		return -EINVAL;
	while (len > 0) {
		/* The tail left by drain is below max_len, so there is room. */
		size_t k = s->cap - s->fill;

		if (k > len)
			k = len;
		memcpy(s->buf + s->fill, src, k);
		s->fill += k;
		src += k;
		len -= k;
		r = drain(s, false, out, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

int sl_scrub_finish(struct sl_scrub *s, sl_scrub_out_fn *out, void *userdata)
{
	int r;

	if (s->error)
		return s->error;
	if (!s->map)
		return -EINVAL;
	r = drain(s, true, out, userdata);
	if (r < 0)
		return r;
	explicit_bzero(s->buf, s->cap);
	return 0;
}

void sl_scrub_free(struct sl_scrub *s)
{
	if (!s)
		return;
	if (s->map) {
		explicit_bzero(s->map, s->map_len);
		munmap(s->map, s->map_len);
	}
	explicit_bzero(s, sizeof(*s));
}
