/* SPDX-License-Identifier: MIT */
/* The streaming secret scrubber; the contract is in scrub.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scrub.h"

/* Bytes after which the stream may pause without anything held back, when
 * no secret contains one: a secret cannot run across them. The set is
 * fixed here, not drawn from the secrets, so that what is held back says
 * nothing about them (see scrub.h, "What is held back"). */
static bool is_break(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '(' || c == ')' ||
	       c == ',' || c == ';' || c == '<' || c == '>' || c == '[' || c == ']' || c == '{' ||
	       c == '}' || c == '\\' || c == '`';
}

int sl_scrub_init(struct sl_scrub *s, const struct sl_scrub_secret *secrets, size_t n,
		  const char *marker)
{
	size_t order[SL_SCRUB_MAX_SECRETS], total = 0, shortest = SL_SCRUB_MAX_LEN, page, mlen, i, j;
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
		if (secrets[i].len < shortest)
			shortest = secrets[i].len;
	}
	s->flush_max = shortest / 4 < SL_SCRUB_FLUSH_MAX ? shortest / 4 : SL_SCRUB_FLUSH_MAX;

	/* Longest first, so the first secret that matches at a position is
	 * the longest one there (a stable insertion sort of eight). */
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && secrets[order[j - 1]].len < secrets[i].len; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}

	/* The held-back tail (< max_len) and the max_len - 1 bytes that
	 * decide it: the rest of each feed is scanned where it is. */
	s->cap = 2 * s->max_len;
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
		s->second[p[1]] |= (uint8_t)(1u << i);
		for (j = 0; j < sec->len; j++)
			if (is_break(p[j]))
				s->strict = true;
		p += sec->len;
	}
	s->n = n;
	s->buf = p;
	memcpy(s->marker, marker, mlen + 1);
	s->marker_len = mlen;
	return 0;
}

/* The bytes being decided: the held-back buffer, or a caller's bytes
 * scanned where they are. */
struct view {
	const unsigned char *b;
	size_t fill;
	size_t sent; /* the first bytes, already passed on by a flush */
};

/* The length of the longest secret that occurs at v->b[p], wholly inside
 * the fill; 0 if none. */
static size_t match_at(const struct sl_scrub *s, const struct view *v, size_t p)
{
	unsigned mask = s->first[v->b[p]];
	size_t i;

	for (i = 0; mask && i < s->n; i++, mask >>= 1) {
		if (!(mask & 1u))
			continue;
		if (s->len[i] <= v->fill - p && memcmp(v->b + p, s->secret[i], s->len[i]) == 0)
			return s->len[i];
	}
	return 0;
}

/* The first position from p on where some secret could start (the fill if
 * none): memchr per distinct first byte, so that ordinary text is skipped
 * at memchr's speed rather than a byte at a time. */
static size_t next_candidate(const struct sl_scrub *s, const struct view *v, size_t p)
{
	size_t best = v->fill, i;

	for (i = 0; i < s->n_first && p < best; i++) {
		const unsigned char *q = memchr(v->b + p, s->first_bytes[i], best - p);

		if (q)
			best = (size_t)(q - v->b);
	}
	return best;
}

/* The leftmost position from p on where some secret occurs wholly inside
 * the fill (the fill if none): memmem per secret, which skips ordinary
 * text (even text thick with a secret's first letter) far faster than a
 * look at every candidate. Each answer stays in at[] (SIZE_MAX: not
 * searched yet) while it is still ahead of p: no occurrence lies between
 * where it was searched from and it, so a stream with many matches is
 * not searched again from each one. */
static size_t next_match(const struct sl_scrub *s, const struct view *v, size_t p, size_t *at)
{
	size_t best = v->fill, i;

	for (i = 0; i < s->n; i++) {
		if (at[i] == SIZE_MAX || at[i] < p) {
			const unsigned char *q =
			    memmem(v->b + p, v->fill - p, s->secret[i], s->len[i]);

			at[i] = q ? (size_t)(q - v->b) : v->fill;
		}
		if (at[i] < best)
			best = at[i];
	}
	return best;
}

/* Where the tail that must wait begins, from `end` on: after the last
 * break byte (none: `end`). Position and content of the secrets play no
 * part in it, only the public break set and the longest secret's length. */
static size_t hold_from(const struct sl_scrub *s, const struct view *v, size_t end)
{
	size_t q;

	if (s->strict)
		return end;
	for (q = v->fill; q > end; q--)
		if (is_break(v->b[q - 1]))
			return q;
	return end;
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

/* The error a broken scrubber repeats, -EINVAL for one never set up. */
static int unusable(const struct sl_scrub *s)
{
	return s->error ? s->error : s->map ? 0 : -EINVAL;
}

/* v->b[a..b) passed on, less what a flush passed on already. */
static int emit_range(struct sl_scrub *s, const struct view *v, size_t a, size_t b,
		      sl_scrub_out_fn *out, void *userdata)
{
	if (a < v->sent)
		a = v->sent;
	return b > a ? emit(s, v->b + a, b - a, out, userdata) : 0;
}

/* A match of m bytes at q: its marker, or (when a flush passed on its
 * start) a marker for the rest of it, so that what was not out yet stays
 * in. */
static int emit_match(struct sl_scrub *s, const struct view *v, size_t q, size_t m,
		      sl_scrub_out_fn *out, void *userdata)
{
	if (q + m <= v->sent)
		return 0;
	if (q < v->sent)
		m = q + m - v->sent;
	return emit_marker(s, m, out, userdata);
}

/*
 * Decide every position of v whose outcome no later byte can change, and
 * pass those on: while streaming, those with at least max_len bytes after
 * them (every secret that starts there is wholly present, so the result is
 * the whole-stream result) and, unless a secret holds a break byte, those
 * up to the last break byte (no secret that starts before it can run past
 * it); at the end of the stream (or a flush), all of them. Returns in
 * *ret_p where the undecided tail, shorter than max_len, begins: it
 * depends on the bytes' positions and the break set only, never on whether
 * they begin a secret.
 */
static int drain(struct sl_scrub *s, const struct view *v, bool final, sl_scrub_out_fn *out,
		 void *userdata, size_t *ret_p)
{
	size_t end, limit, p = 0, run = 0, m, i, at[SL_SCRUB_MAX_SECRETS];
	int r;

	if (final)
		end = v->fill;
	else if (v->fill >= s->max_len)
		end = v->fill - s->max_len + 1;
	else
		end = 0;
	limit = final ? v->fill : hold_from(s, v, end);

	/* Before `end` every secret that starts at a position is wholly
	 * present: the positions up to the leftmost match are decided at
	 * once, and the longest secret there is the one replaced. */
	for (i = 0; i < s->n; i++)
		at[i] = SIZE_MAX;
	while (p < end) {
		size_t q = next_match(s, v, p, at);

		if (q >= end) {
			p = end;
			break;
		}
		m = match_at(s, v, q);
		if (m == 0) { /* cannot be: a secret occurs at q */
			p = q + 1;
			continue;
		}
		r = emit_range(s, v, run, q, out, userdata);
		if (r == 0)
			r = emit_match(s, v, q, m, out, userdata);
		if (r < 0)
			return r;
		p = q + m;
		run = p;
	}
	/* From `end` to `limit`, position by position: a secret that starts
	 * there is wholly inside the fill or not there at all. */
	while (p < limit) {
		/* No secret starts here. */
		if (!s->first[v->b[p]]) {
			p = next_candidate(s, v, p);
			if (p > limit)
				p = limit;
			continue;
		}
		/* Nor here, if no secret has these first two bytes (every
		 * secret has two): text full of a secret's first letter is
		 * not compared byte by byte. */
		if (p + 1 < v->fill && !(s->first[v->b[p]] & s->second[v->b[p + 1]])) {
			p++;
			continue;
		}
		if ((m = match_at(s, v, p)) == 0) {
			p++;
			continue;
		}
		r = emit_range(s, v, run, p, out, userdata);
		if (r == 0)
			r = emit_match(s, v, p, m, out, userdata);
		if (r < 0)
			return r;
		p += m;
		run = p;
	}
	/* A match may end past `limit`, never past the fill. */
	r = emit_range(s, v, run, p, out, userdata);
	if (r < 0)
		return r;
	*ret_p = p;
	return 0;
}

/* Drain the held-back buffer; its undecided tail moves to the front. */
static int drain_held(struct sl_scrub *s, bool final, sl_scrub_out_fn *out, void *userdata)
{
	struct view v = {s->buf, s->fill, s->sent};
	size_t p;
	int r = drain(s, &v, final, out, userdata, &p);

	if (r < 0)
		return r;
	memmove(s->buf, s->buf + p, s->fill - p);
	s->fill -= p;
	s->sent = s->sent > p ? s->sent - p : 0;
	return 0;
}

/*
 * The held-back tail first, with the max_len - 1 bytes after it: that
 * decides every position of the tail (a secret starting there ends within
 * them). What stays undecided of those bytes is still in the input, so the
 * rest of the input is scanned where it is, without a copy; only its own
 * undecided tail (< max_len bytes) is held back for the next call.
 */
int sl_scrub_feed(struct sl_scrub *s, const void *in, size_t len, sl_scrub_out_fn *out,
		  void *userdata)
{
	const unsigned char *src = in;
	struct view v;
	size_t p;
	int r;

	if ((r = unusable(s)) < 0)
		return r;
	if (len == 0)
		return 0;
	if (s->fill) {
		/* The tail is below max_len and cap is max_len - 1 + a window. */
		size_t k = len < s->max_len - 1 ? len : s->max_len - 1, held;

		memcpy(s->buf + s->fill, src, k);
		s->fill += k;
		if (s->fill > s->dirty)
			s->dirty = s->fill;
		v = (struct view){s->buf, s->fill, s->sent};
		r = drain(s, &v, false, out, userdata, &p);
		if (r < 0)
			return r;
		held = s->fill - p;
		if (k == len) {
			memmove(s->buf, s->buf + p, held);
			s->fill = held;
			s->sent = s->sent > p ? s->sent - p : 0;
			return 0;
		}
		/* p is past the old tail (all of it was decided: `end` is
		 * where it stopped), so the bytes held are the last `held` of
		 * the k taken: take them again from the input. */
		s->fill = 0;
		s->sent = 0;
		src += k - held;
		len -= k - held;
	}
	v = (struct view){src, len, 0};
	r = drain(s, &v, false, out, userdata, &p);
	if (r < 0)
		return r;
	memcpy(s->buf, src + p, len - p);
	s->fill = len - p;
	if (s->fill > s->dirty)
		s->dirty = s->fill;
	return 0;
}

int sl_scrub_flush(struct sl_scrub *s, sl_scrub_out_fn *out, void *userdata)
{
	struct view v = {s->buf, s->fill, s->sent};
	size_t p;
	int r;

	if ((r = unusable(s)) < 0)
		return r;
	if (!sl_scrub_flushable(s))
		return 0;
	/* Decided as if the stream ended here, but kept: bytes that come
	 * next may still complete a secret that begins in them. The fill is
	 * the whole tail, with what earlier flushes passed on of it: no
	 * secret that begins before it runs into it. */
	r = drain(s, &v, true, out, userdata, &p);
	if (r < 0)
		return r;
	s->sent = s->fill;
	return 0;
}

int sl_scrub_whole(struct sl_scrub *s, const void *p, size_t len, sl_scrub_out_fn *out,
		   void *userdata)
{
	struct view v = {p, len, 0};
	size_t end;
	int r;

	if ((r = unusable(s)) < 0)
		return r;
	return len ? drain(s, &v, true, out, userdata, &end) : 0;
}

size_t sl_scrub_held(const struct sl_scrub *s)
{
	return s->fill - s->sent;
}

size_t sl_scrub_flushable(const struct sl_scrub *s)
{
	return s->fill <= s->flush_max ? s->fill - s->sent : 0;
}

int sl_scrub_finish(struct sl_scrub *s, sl_scrub_out_fn *out, void *userdata)
{
	int r;

	if ((r = unusable(s)) < 0)
		return r;
	r = drain_held(s, true, out, userdata);
	if (r < 0)
		return r;
	/* What the stream left in the buffer, not all of it: a websocket
	 * finishes a stream per message, of a few bytes each at will. */
	explicit_bzero(s->buf, s->dirty);
	s->dirty = 0;
	s->sent = 0;
	return 0;
}

void sl_scrub_reset(struct sl_scrub *s)
{
	if (s->map)
		explicit_bzero(s->buf, s->cap);
	s->fill = 0;
	s->dirty = 0;
	s->sent = 0;
	s->error = 0;
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
