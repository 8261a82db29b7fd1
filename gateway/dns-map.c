/* SPDX-License-Identifier: MIT */
/*
 * The address map: a chained hash table for lookups and a list in answer
 * order for eviction, both through the same entries.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "dns-map.h"
#include "dns-wire.h"

struct map_name {
	char *name; /* NULL: unused */
	uint64_t expires_ms;
};

struct map_entry {
	int family;
	uint8_t addr[16];
	struct map_name names[SL_DNS_MAP_NAMES]; /* the most recent first */
	struct map_entry *hnext;         /* hash chain */
	struct map_entry *older, *newer; /* answer order */
};

struct sl_dns_map {
	struct map_entry **buckets;
	size_t mask;
	size_t n, max;
	struct map_entry *oldest, *newest;
	uint64_t seed;
};

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

int sl_dns_map_new(size_t max, struct sl_dns_map **ret)
{
	struct sl_dns_map *m;
	size_t nb = 16;

	if (max == 0)
		return -EINVAL;
	while (nb < max / 2)
		nb *= 2;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->buckets = calloc(nb, sizeof(*m->buckets));
	if (!m->buckets) {
		free(m);
		return -ENOMEM;
	}
	m->mask = nb - 1;
	m->max = max;
	if (getrandom(&m->seed, sizeof(m->seed), GRND_NONBLOCK) != sizeof(m->seed))
		m->seed = (uint64_t)(uintptr_t)m ^ (uint64_t)time(NULL);
	*ret = m;
	return 0;
}

/* FNV-1a with a random seed: the addresses come from answers for names an
 * agent may control, so it must not be able to choose colliding ones. */
static size_t map_hash(const struct sl_dns_map *m, int family, const uint8_t *addr)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ m->seed;
	size_t i;

	h = (h ^ (uint64_t)family) * 0x100000001b3ULL;
	for (i = 0; i < addr_len(family); i++)
		h = (h ^ addr[i]) * 0x100000001b3ULL;
	return (size_t)(h ^ (h >> 31)) & m->mask;
}

static struct map_entry **map_slot(const struct sl_dns_map *m, int family, const uint8_t *addr)
{
	struct map_entry **p = &m->buckets[map_hash(m, family, addr)];

	for (; *p; p = &(*p)->hnext)
		if ((*p)->family == family && !memcmp((*p)->addr, addr, addr_len(family)))
			break;
	return p;
}

static void age_unlink(struct sl_dns_map *m, struct map_entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		m->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		m->newest = e->older;
	e->older = e->newer = NULL;
}

static void age_push(struct sl_dns_map *m, struct map_entry *e)
{
	e->older = m->newest;
	e->newer = NULL;
	if (m->newest)
		m->newest->newer = e;
	else
		m->oldest = e;
	m->newest = e;
}

static void map_remove(struct sl_dns_map *m, struct map_entry *e)
{
	struct map_entry **p = map_slot(m, e->family, e->addr);

	size_t i;

	*p = e->hnext;
	age_unlink(m, e);
	m->n--;
	for (i = 0; i < SL_DNS_MAP_NAMES; i++)
		free(e->names[i].name);
	free(e);
}

int sl_dns_map_put(struct sl_dns_map *m, int family, const uint8_t *addr, const char *name,
		   uint64_t expires_ms)
{
	struct map_entry **p, *e;
	struct map_name got = { NULL, expires_ms };
	size_t len = strlen(name), i;

	if ((family != AF_INET && family != AF_INET6) || len >= SL_DNS_NAME_BUF)
		return -EINVAL;
	p = map_slot(m, family, addr);
	/* Every name this address was answered for is kept (a CDN serves
	 * several allowed names from one address, and which one a client
	 * meant when it connected is not for us to guess), up to
	 * SL_DNS_MAP_NAMES: the one answered longest ago goes first. */
	if (*p)
		for (i = 0; i < SL_DNS_MAP_NAMES && (*p)->names[i].name; i++)
			if (!strcmp((*p)->names[i].name, name)) {
				got.name = (*p)->names[i].name;
				(*p)->names[i].name = NULL;
				break;
			}
	if (!got.name && !(got.name = strdup(name)))
		return -ENOMEM;
	e = *p;
	if (e) {
		age_unlink(m, e);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e) {
			free(got.name);
			return -ENOMEM;
		}
		if (m->n >= m->max) {
			/* Oldest out: the address answered longest ago. */
			map_remove(m, m->oldest);
			p = map_slot(m, family, addr);
		}
		e->family = family;
		memcpy(e->addr, addr, addr_len(family));
		*p = e;
		m->n++;
	}
	/* Close the gap the renewed name left (or drop the oldest), and put
	 * this one first. */
	for (i = 0; i < SL_DNS_MAP_NAMES - 1 && e->names[i].name; i++)
		;
	free(e->names[i].name);
	memmove(&e->names[1], &e->names[0], i * sizeof(e->names[0]));
	e->names[0] = got;
	age_push(m, e);
	return 0;
}

int sl_dns_map_get(const struct sl_dns_map *m, int family, const uint8_t *addr, uint64_t now_ms,
		   char *name, size_t size)
{
	char all[SL_DNS_MAP_NAMES][SL_DNS_NAME_BUF];
	int n = sl_dns_map_get_all(m, family, addr, now_ms, all, 1);
	size_t len;

	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	len = strlen(all[0]);
	if (len >= size)
		return -ENOBUFS;
	memcpy(name, all[0], len + 1);
	return 0;
}

int sl_dns_map_get_all(const struct sl_dns_map *m, int family, const uint8_t *addr,
		       uint64_t now_ms, char (*names)[SL_DNS_NAME_BUF], size_t max)
{
	const struct map_entry *e;
	size_t i, n = 0;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	e = *map_slot(m, family, addr);
	for (i = 0; e && i < SL_DNS_MAP_NAMES && e->names[i].name && n < max; i++)
		if (e->names[i].expires_ms > now_ms)
			snprintf(names[n++], SL_DNS_NAME_BUF, "%s", e->names[i].name);
	return (int)n;
}

size_t sl_dns_map_size(const struct sl_dns_map *m)
{
	return m->n;
}

void sl_dns_map_free(struct sl_dns_map *m)
{
	if (!m)
		return;
	while (m->oldest)
		map_remove(m, m->oldest);
	free(m->buckets);
	free(m);
}
