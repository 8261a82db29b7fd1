/* SPDX-License-Identifier: MIT */
#include "resolve.h"

#include <ares.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dns-budget.h"
#include "macro.h"

/* The cache: CACHE_SOFT entries, and beyond that as many as the last
 * minute's upstream lookups need, up to CACHE_HARD (see cache_put). */
#define CACHE_SOFT 256
#define CACHE_HARD 16384
#define CACHE_BUCKETS 4096 /* a power of two */
#define TTL_MAX 300 /* seconds: re-resolve at least every five minutes */
/* And at most this often: a name the agent chose (under a wildcard) is
 * charged to the DNS budget once a minute however often it is looked up,
 * so each lookup that reaches the zone's owner must not be free for the
 * asking. An answer with TTL 0, or a failure (which the zone's owner can
 * give at will), would otherwise send every lookup upstream: a channel
 * counted in lookups, unbounded. (RFC 9520 asks resolvers to cache
 * failures too, for a second at least.) */
#define TTL_MIN 30	   /* seconds, an answer */
#define FAIL_TTL_MS 5000 /* a failure */

struct poller {
	uv_poll_t poll;
	ares_socket_t fd;
	struct sl_gw_resolver *r;
	struct poller *next;
};

struct cache_entry {
	struct cache_entry *bucket_next;
	struct cache_entry *older, *newer; /* by when it was last put */
	uint32_t hash; /* of name */
	uint64_t put_ms, expires_ms;
	int status; /* 0, or the failure (-ENOENT, -ETIMEDOUT, -EIO) */
	struct sl_gw_addrs addrs;
	char name[256];
};

struct sl_gw_resolve_req {
	struct sl_gw_resolver *r;
	sl_gw_resolve_cb cb;
	void *data;
	char name[256];
	bool cancelled;
	bool in_call;   /* inside ares_getaddrinfo(): results must wait */
	int status;     /* for a deferred delivery */
	uv_idle_t idle; /* delivers cache hits on the next loop turn */
	struct sl_gw_addrs addrs;
	/* A lookup sent upstream is in r->inflight until it is answered;
	 * lookups of the same name meanwhile wait on it (followers) rather
	 * than send the name again. */
	struct sl_gw_resolve_req *next, *followers;
};

struct sl_gw_resolver {
	uv_loop_t *loop;
	ares_channel channel;
	bool channel_ok;
	uv_timer_t timer;
	struct poller *pollers;
	/* By name, and oldest put first (`oldest`..`newest`): an entry put
	 * in the DNS budget's window is never the one made room with. */
	struct cache_entry *bucket[CACHE_BUCKETS];
	uint32_t hash_seed; /* random: names made to share a bucket are guesses */
	struct cache_entry *oldest, *newest;
	size_t n_cache;
	size_t n_inflight;
	sl_gw_resolve_gate gate; /* asked before a name goes upstream */
	void *gate_data;
	struct sl_gw_resolve_req *inflight;
};

static struct poller *poller_find(struct sl_gw_resolver *r, ares_socket_t fd)
{
	struct poller *p;

	for (p = r->pollers; p; p = p->next)
		if (p->fd == fd)
			return p;
	return NULL;
}

static void poller_closed(uv_handle_t *h)
{
	free(container_of(h, struct poller, poll));
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct poller *p = container_of(h, struct poller, poll);
	ares_socket_t rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;

	/* On an error, let c-ares read (and fail) so it drops the socket. */
	if (status < 0 || (events & UV_READABLE))
		rfd = p->fd;
	if (events & UV_WRITABLE)
		wfd = p->fd;
	ares_process_fd(p->r->channel, rfd, wfd);
}

/* c-ares says which of its sockets to watch, and for what. */
static void sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct sl_gw_resolver *r = data;
	struct poller *p = poller_find(r, fd), **pp;
	int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);

	if (!events) {
		if (!p)
			return;
		for (pp = &r->pollers; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		uv_poll_stop(&p->poll);
		uv_close((uv_handle_t *)&p->poll, poller_closed);
		return;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return; /* the query times out; nothing else to do */
		p->fd = fd;
		p->r = r;
		if (uv_poll_init_socket(r->loop, &p->poll, fd) < 0) {
			free(p);
			return;
		}
		p->next = r->pollers;
		r->pollers = p;
	}
	uv_poll_start(&p->poll, events, poll_cb);
}

static void timer_cb(uv_timer_t *t)
{
	struct sl_gw_resolver *r = container_of(t, struct sl_gw_resolver, timer);

	/* Let c-ares retry and time out its queries. */
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

int sl_gw_resolver_new(uv_loop_t *loop, const char *servers, struct sl_gw_resolver **ret,
		       char *err, size_t errlen)
{
	struct ares_options opts = { 0 };
	struct sl_gw_resolver *r;
	int k;

	k = ares_library_init(ARES_LIB_INIT_ALL);
	if (k != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(k));
		return -EIO;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->loop = loop;
	/* Without the kernel's random bytes (never seen), the clock's. */
	if (getrandom(&r->hash_seed, sizeof(r->hash_seed), GRND_NONBLOCK) != sizeof(r->hash_seed))
		r->hash_seed = (uint32_t)uv_hrtime();
	opts.sock_state_cb = sock_state_cb;
	opts.sock_state_cb_data = r;
	/* "b": DNS only. /etc/hosts on the gateway's host is not the
	 * sandbox's business (it maps names to loopback and LAN addresses). */
	opts.lookups = (char *)"b";
	opts.timeout = 2000;
	opts.tries = 2;
	/* Every name we resolve is absolute. Without NOSEARCH c-ares also
	 * tries the host's search domains (resolv.conf's `search`,
	 * LOCALDOMAIN), so a name the agent chose would reach the host's
	 * resolver as NAME.<search-domain>: a query we never decided, to a
	 * zone the policy never named. */
	opts.flags = ARES_FLAG_NOSEARCH;
	k = ares_init_options(&r->channel, &opts,
			      ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS |
				      ARES_OPT_TRIES | ARES_OPT_FLAGS);
	if (k != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(k));
		free(r);
		return -EIO;
	}
	r->channel_ok = true;
	if (servers) {
		k = ares_set_servers_ports_csv(r->channel, servers);
		if (k != ARES_SUCCESS) {
			snprintf(err, errlen, "--resolver '%s': %s", servers, ares_strerror(k));
			ares_destroy(r->channel);
			free(r);
			return -EINVAL;
		}
	}
	uv_timer_init(loop, &r->timer);
	uv_timer_start(&r->timer, timer_cb, 100, 100);
	uv_unref((uv_handle_t *)&r->timer);
	*ret = r;
	return 0;
}

/* FNV-1a from a random start, then mixed (MurmurHash3's finalizer): the
 * name is compared in full after it, and an agent that makes up names
 * under a wildcard cannot aim them all at one bucket and have each lookup
 * walk thousands of entries. Unmixed, the bucket (the low bits) would
 * depend on the seed's low bits alone: 4,096 layouts to guess from. */
static uint32_t name_hash(const struct sl_gw_resolver *r, const char *name)
{
	uint32_t h = 2166136261u ^ r->hash_seed;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static struct cache_entry *cache_find(struct sl_gw_resolver *r, const char *name, uint32_t h)
{
	struct cache_entry *e;

	for (e = r->bucket[h & (CACHE_BUCKETS - 1)]; e; e = e->bucket_next)
		if (e->hash == h && !strcmp(e->name, name))
			return e;
	return NULL;
}

static struct cache_entry *cache_get(struct sl_gw_resolver *r, const char *name)
{
	struct cache_entry *e = cache_find(r, name, name_hash(r, name));

	return e && e->expires_ms > uv_now(r->loop) ? e : NULL;
}

static void age_unlink(struct sl_gw_resolver *r, struct cache_entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		r->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		r->newest = e->older;
	e->older = e->newer = NULL;
}

static void age_append(struct sl_gw_resolver *r, struct cache_entry *e)
{
	e->older = r->newest;
	e->newer = NULL;
	if (r->newest)
		r->newest->newer = e;
	else
		r->oldest = e;
	r->newest = e;
}

static void bucket_unlink(struct sl_gw_resolver *r, struct cache_entry *e)
{
	struct cache_entry **pp = &r->bucket[e->hash & (CACHE_BUCKETS - 1)];

	for (; *pp; pp = &(*pp)->bucket_next)
		if (*pp == e) {
			*pp = e->bucket_next;
			break;
		}
}

/* The oldest entry, if room may be made with it: expired, or put before
 * the DNS budget's window began. A name put since is in the budget's
 * window, which asks nothing for it again (dns-budget.h): dropped from
 * the cache, it would go upstream at every lookup, free, a channel
 * counted in lookups (300 names under five wildcards, asked in turn,
 * went upstream 1500 times in seconds with 256 fixed entries). */
static struct cache_entry *cache_victim(struct sl_gw_resolver *r)
{
	uint64_t now = uv_now(r->loop);
	struct cache_entry *e = r->oldest;

	if (r->n_cache < CACHE_SOFT || !e)
		return NULL;
	if (e->expires_ms <= now || e->put_ms + SL_DNS_BUDGET_WINDOW_MS <= now)
		return e;
	return NULL;
}

/* Whether a lookup of name may go upstream: its answer will find room
 * (its own expired entry, kept for it, is room). */
static bool cache_room(struct sl_gw_resolver *r, const char *name)
{
	return r->n_cache + r->n_inflight < CACHE_HARD || cache_victim(r) ||
	       cache_find(r, name, name_hash(r, name));
}

static void cache_put(struct sl_gw_resolver *r, const char *name, int status,
		      const struct sl_gw_addrs *a)
{
	unsigned ttl = a->ttl < TTL_MIN ? TTL_MIN : a->ttl > TTL_MAX ? TTL_MAX : a->ttl;
	uint32_t h = name_hash(r, name);
	struct cache_entry *e = cache_find(r, name, h);
	bool fresh = !e;

	if (e) {
		age_unlink(r, e);
	} else if ((e = cache_victim(r))) {
		age_unlink(r, e);
		bucket_unlink(r, e);
	} else if (!(e = calloc(1, sizeof(*e)))) {
		return; /* out of memory: not kept */
	} else {
		r->n_cache++;
	}
	if (fresh) {
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->hash = h;
		e->bucket_next = r->bucket[h & (CACHE_BUCKETS - 1)];
		r->bucket[h & (CACHE_BUCKETS - 1)] = e;
	}
	e->addrs = *a;
	e->status = status;
	e->put_ms = uv_now(r->loop);
	e->expires_ms = e->put_ms + (status ? FAIL_TTL_MS : (uint64_t)ttl * 1000);
	age_append(r, e);
}

static void req_idle_closed(uv_handle_t *h)
{
	free(container_of(h, struct sl_gw_resolve_req, idle));
}

/* Deliver a result that was ready before sl_gw_resolve() returned (a
 * cache hit, or c-ares answering synchronously) on the next loop turn, so
 * that callers never see their callback from inside their own call. */
static void deliver_deferred(uv_idle_t *h)
{
	struct sl_gw_resolve_req *q = container_of(h, struct sl_gw_resolve_req, idle);

	uv_idle_stop(h);
	if (!q->cancelled && q->status != -ECANCELED)
		q->cb(q->data, q->status, q->status ? NULL : &q->addrs);
	uv_close((uv_handle_t *)h, req_idle_closed);
}

static void defer(struct sl_gw_resolve_req *q)
{
	uv_idle_init(q->r->loop, &q->idle);
	uv_idle_start(&q->idle, deliver_deferred);
}

static void addrinfo_cb(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct sl_gw_resolve_req *q = arg, **pp, *f;
	struct sl_gw_addrs a = { .ttl = TTL_MAX };
	struct ares_addrinfo_node *n;
	int err = 0;

	if (status == ARES_SUCCESS && res) {
		for (n = res->nodes; n && a.n < SL_GW_MAX_ADDRS; n = n->ai_next) {
			if ((n->ai_family != AF_INET && n->ai_family != AF_INET6) ||
			    n->ai_addrlen > sizeof(a.addr[0]))
				continue;
			memcpy(&a.addr[a.n++], n->ai_addr, n->ai_addrlen);
			if (n->ai_ttl >= 0 && (unsigned)n->ai_ttl < a.ttl)
				a.ttl = (unsigned)n->ai_ttl;
		}
		if (a.n == 0)
			err = -ENOENT;
	} else if (status == ARES_ENOTFOUND || status == ARES_ENODATA || status == ARES_ENONAME) {
		err = -ENOENT;
	} else if (status == ARES_ETIMEOUT) {
		err = -ETIMEDOUT;
	} else if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
		err = -ECANCELED;
	} else {
		err = -EIO;
	}
	if (res)
		ares_freeaddrinfo(res);

	/* No longer in flight: a lookup from here on finds the cache. */
	for (pp = &q->r->inflight; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			q->r->n_inflight--;
			break;
		}
	if (err != -ECANCELED)
		cache_put(q->r, q->name, err, &a);
	/* Those that waited for this answer get it too. Detached first: a
	 * callback may start a lookup of its own. */
	f = q->followers;
	q->followers = NULL;
	while (f) {
		struct sl_gw_resolve_req *next = f->next;

		if (!f->cancelled && err != -ECANCELED)
			f->cb(f->data, err, err ? NULL : &a);
		free(f);
		f = next;
	}
	if (q->in_call) {
		q->status = err;
		q->addrs = a;
		defer(q);
		return;
	}
	if (!q->cancelled && err != -ECANCELED)
		q->cb(q->data, err, err ? NULL : &a);
	free(q);
}

void sl_gw_resolver_set_gate(struct sl_gw_resolver *r, sl_gw_resolve_gate gate, void *data)
{
	r->gate = gate;
	r->gate_data = data;
}

int sl_gw_resolve_cached(struct sl_gw_resolver *r, const char *name, struct sl_gw_addrs *ret)
{
	struct cache_entry *c = cache_get(r, name);

	if (!c || c->status != 0)
		return -ENOENT;
	*ret = c->addrs;
	return 0;
}

bool sl_gw_resolve_in_cache(struct sl_gw_resolver *r, const char *name)
{
	return cache_get(r, name) != NULL;
}

int sl_gw_resolve(struct sl_gw_resolver *r, const char *name, sl_gw_resolve_cb cb, void *data,
		  struct sl_gw_resolve_req **ret_req)
{
	struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC };
	struct sl_gw_resolve_req *q, *lead;
	struct cache_entry *c;
	char absolute[sizeof(q->name) + 1];
	size_t len = strlen(name);
	int k;

	/* The name is in normal form: no trailing dot, so one more makes it
	 * absolute (a second guard besides ARES_FLAG_NOSEARCH). */
	if (len == 0 || len >= sizeof(q->name) || name[len - 1] == '.')
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->r = r;
	q->cb = cb;
	q->data = data;
	snprintf(q->name, sizeof(q->name), "%s", name);

	c = cache_get(r, name);
	for (lead = r->inflight; !c && lead; lead = lead->next)
		if (!strcmp(lead->name, name))
			break;
	if (c) {
		q->status = c->status;
		q->addrs = c->addrs;
		defer(q);
	} else if (lead) {
		/* Already asked, not yet answered: wait for that answer
		 * (addrinfo_cb delivers it, never from inside this call). */
		q->next = lead->followers;
		lead->followers = q;
	} else if (!cache_room(r, name)) {
		/* Its answer could not be kept without dropping one the
		 * budget's window still counts (cache_victim): not asked. */
		q->status = -ENOBUFS;
		defer(q);
	} else if (r->gate && (k = r->gate(r->gate_data, name)) < 0) {
		/* Not asked upstream: the caller hears why, like any
		 * failure, on the next loop turn. */
		q->status = k;
		defer(q);
	} else {
		hints.ai_flags = ARES_AI_NOSORT;
		snprintf(absolute, sizeof(absolute), "%s.", name);
		q->next = r->inflight;
		r->inflight = q;
		r->n_inflight++;
		q->in_call = true;
		ares_getaddrinfo(r->channel, absolute, NULL, &hints, addrinfo_cb, q);
		q->in_call = false;
	}
	*ret_req = q;
	return 0;
}

void sl_gw_resolve_cancel(struct sl_gw_resolve_req *req)
{
	if (req)
		req->cancelled = true;
}

static void resolver_closed(uv_handle_t *h)
{
	struct sl_gw_resolver *r = container_of(h, struct sl_gw_resolver, timer);

	while (r->oldest) {
		struct cache_entry *e = r->oldest;

		r->oldest = e->newer;
		free(e);
	}
	free(r);
}

void sl_gw_resolver_free(struct sl_gw_resolver *r)
{
	if (!r)
		return;
	if (r->channel_ok)
		ares_destroy(r->channel); /* pending callbacks get EDESTRUCTION */
	/* Pollers were closed through sock_state_cb as c-ares released its
	 * sockets; the struct itself goes when its timer is closed. */
	uv_timer_stop(&r->timer);
	uv_close((uv_handle_t *)&r->timer, resolver_closed);
}

const char *sl_gw_resolve_failure(int status, int *ret_http, const char **ret_reason)
{
	*ret_http = 502;
	*ret_reason = "resolve-failed";
	switch (status) {
	case -ENOENT:
		return "no such name";
	case -ETIMEDOUT:
		return "timed out";
	case -ENOBUFS:
		return "too many names in the last minute for the resolver's cache";
	case -EDQUOT:
		/* The budget (dns-gate.c): short enough for the messages
		 * that name the host. */
		*ret_http = 429;
		*ret_reason = "dns-budget";
		return "too many new names under this wildcard this minute (DNS budget)";
	default:
		return "resolver error";
	}
}
