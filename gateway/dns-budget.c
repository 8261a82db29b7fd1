/* SPDX-License-Identifier: MIT */
/*
 * The DNS budget: per suffix, a ring of the names admitted in the last
 * window, oldest first. A sliding window, not a fixed one: a fixed minute
 * would let twice the limit out across its boundary.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dns-budget.h"

struct admitted {
	char *name;
	uint64_t at_ms;
};

struct suffix {
	char *suffix;
	struct admitted *ring; /* cap slots, n used from head, oldest first */
	size_t cap, head, n;
	uint64_t audit_until_ms; /* the next refusal is audited from here on */
	uint64_t suppressed;
};

struct sl_dns_budget {
	struct suffix *s;
	size_t n, max;
	uint64_t now_ms; /* the latest time seen */
};

int sl_dns_budget_new(size_t max_suffixes, struct sl_dns_budget **ret)
{
	struct sl_dns_budget *b;

	if (max_suffixes == 0)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->s = calloc(max_suffixes, sizeof(*b->s));
	if (!b->s) {
		free(b);
		return -ENOMEM;
	}
	b->max = max_suffixes;
	*ret = b;
	return 0;
}

static struct admitted *slot(const struct suffix *s, size_t i)
{
	return &s->ring[(s->head + i) % s->cap];
}

static void drop_oldest(struct suffix *s)
{
	free(s->ring[s->head].name);
	s->ring[s->head].name = NULL;
	s->head = (s->head + 1) % s->cap;
	s->n--;
}

/* Forget what left the window by now. */
static void expire(struct suffix *s, uint64_t now_ms)
{
	while (s->n && slot(s, 0)->at_ms + SL_DNS_BUDGET_WINDOW_MS <= now_ms)
		drop_oldest(s);
}

static void suffix_clear(struct suffix *s)
{
	while (s->n)
		drop_oldest(s);
	free(s->ring);
	free(s->suffix);
	memset(s, 0, sizeof(*s));
}

/* The suffix's slot, or a new one: an unused slot, else one whose names
 * have all left the window and that owes no audit record. NULL: none. */
static struct suffix *find_suffix(struct sl_dns_budget *b, const char *suffix, bool create)
{
	struct suffix *idle = NULL;
	char *copy;
	size_t i;

	for (i = 0; i < b->n; i++) {
		struct suffix *s = &b->s[i];

		if (!strcmp(s->suffix, suffix))
			return s;
		expire(s, b->now_ms);
		if (!idle && !s->n && !s->suppressed && s->audit_until_ms <= b->now_ms)
			idle = s;
	}
	if (!create)
		return NULL;
	if (b->n < b->max)
		idle = &b->s[b->n];
	if (!idle || !(copy = strdup(suffix)))
		return NULL;
	if (idle == &b->s[b->n])
		b->n++;
	else
		suffix_clear(idle);
	idle->suffix = copy;
	return idle;
}

/* Room for one more name (s->n < limit): grow the ring geometrically, up
 * to limit, so a suffix holds memory for the names it was given only. */
static int make_room(struct suffix *s, unsigned limit)
{
	struct admitted *ring;
	size_t cap, i;

	if (s->n < s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 8;
	if (cap > limit)
		cap = limit;
	ring = calloc(cap, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		ring[i] = *slot(s, i);
	free(s->ring);
	s->ring = ring;
	s->cap = cap;
	s->head = 0;
	return 0;
}

int sl_dns_budget_charge(struct sl_dns_budget *b, const char *suffix, const char *name,
			 unsigned limit, uint64_t now_ms, struct sl_dns_budget_refusal *ret_refusal)
{
	struct suffix *s;
	struct admitted *a;
	size_t i;
	char *copy;

	if (limit == 0 || limit > SL_DNS_BUDGET_LIMIT_MAX || !suffix || !name)
		return -EINVAL;
	if (now_ms > b->now_ms)
		b->now_ms = now_ms;
	now_ms = b->now_ms;
	s = find_suffix(b, suffix, true);
	if (!s)
		return -ENOSPC;
	expire(s, now_ms);
	for (i = 0; i < s->n; i++)
		if (!strcmp(slot(s, i)->name, name))
			return 0;
	if (s->n >= limit) {
		struct sl_dns_budget_refusal r = {0};

		if (now_ms >= s->audit_until_ms) {
			r.audit = true;
			r.suppressed = s->suppressed;
			s->suppressed = 0;
			s->audit_until_ms = now_ms + SL_DNS_BUDGET_WINDOW_MS;
		} else {
			s->suppressed++;
		}
		if (ret_refusal)
			*ret_refusal = r;
		return -EDQUOT;
	}
	copy = strdup(name);
	if (!copy || make_room(s, limit) < 0) {
		free(copy);
		return -ENOMEM;
	}
	a = &s->ring[(s->head + s->n) % s->cap];
	a->name = copy;
	a->at_ms = now_ms;
	s->n++;
	return 1;
}

size_t sl_dns_budget_count(struct sl_dns_budget *b, const char *suffix, uint64_t now_ms)
{
	struct suffix *s;

	if (now_ms > b->now_ms)
		b->now_ms = now_ms;
	s = find_suffix(b, suffix, false);
	if (!s)
		return 0;
	expire(s, b->now_ms);
	return s->n;
}

void sl_dns_budget_flush(struct sl_dns_budget *b,
			 void (*fn)(void *data, const char *suffix, uint64_t suppressed),
			 void *data)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->s[i].suppressed) {
			fn(data, b->s[i].suffix, b->s[i].suppressed);
			b->s[i].suppressed = 0;
		}
}

void sl_dns_budget_free(struct sl_dns_budget *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->n; i++)
		suffix_clear(&b->s[i]);
	free(b->s);
	free(b);
}
