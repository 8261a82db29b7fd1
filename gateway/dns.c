/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's DNS server, on the gateway's loop, over UDP and TCP.
 *
 * It answers A and AAAA for the names the policy allows, with addresses the
 * gateway resolved itself, and nothing else: a name the policy does not
 * allow gets NXDOMAIN and is never resolved or forwarded, so an agent cannot
 * smuggle data out through the labels of the names it asks for (a DNS
 * tunnel). The client's packet itself never leaves the gateway either; only
 * the name, through our own resolver.
 *
 * NXDOMAIN rather than REFUSED for a denied name: stub resolvers stop at
 * NXDOMAIN and report "not found" at once, while REFUSED sends glibc on to
 * the next nameserver and ends in a "temporary failure" that programs retry.
 *
 * Answers are filtered like the proxy's connections: a special address
 * (private, loopback, metadata...) is left out unless private_addresses
 * allows it, and the host's own addresses always are. What was answered is
 * remembered (address -> name) so that transparent capture can decide a
 * connection that carries neither SNI nor Host by the name that led to it.
 *
 * Every resource a client controls is bounded: queries resolving at once
 * per gateway, TCP connections, bytes per TCP message, queries in flight per
 * TCP connection, idle time, and the entries of the address map.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "dns-map.h"
#include "dns-wire.h"
#include "gateway-internal.h"
#include "macro.h"

#define DNS_MAX_QUERIES 256   /* resolving at once, per gateway */
#define DNS_MAX_TCP 64        /* TCP connections open at once */
#define DNS_MAX_UDP_SENDS 256 /* replies queued behind a full socket buffer */
/* A query we accept is one question and an OPT record; RFC 7766 lets
 * messages be longer, but nothing longer than this is a query we answer. */
#define DNS_TCP_MSG_MAX 4096
#define DNS_TCP_PIPELINE 16     /* queries and replies in flight per connection */
#define DNS_TCP_IDLE_MS 10000   /* RFC 7766 6.2.3 suggests seconds, not minutes */
#define DNS_TTL_MAX 60          /* a policy reload takes effect within a minute */
#define DNS_REPLY_MAX 2048      /* 8 addresses, the question and OPT fit easily */
#define DNS_MAP_MAX 4096
/* A client may connect a little after the TTL we gave it runs out (it
 * looked the name up just before; a TTL of 0 still precedes a connect). */
#define DNS_MAP_GRACE_MS 10000

struct dns_tcp;

struct dns_query {
	struct sl_gw_dns *d;
	struct dns_query *prev, *next;
	struct dns_tcp *tcp; /* NULL: UDP */
	struct sockaddr_storage peer;
	char client[INET6_ADDRSTRLEN + 10];
	struct sl_gw_policy *pol;
	struct sl_gw_resolve_req *req;
	uint64_t start_wall_ms, start_ms;
	struct sl_dns_query q;
};

struct dns_tcp {
	struct sl_gw_dns *d;
	struct dns_tcp *prev, *next;
	uv_tcp_t h;
	uv_timer_t idle;
	unsigned open_handles;
	unsigned busy; /* queries resolving + replies being written */
	bool closing, reading, eof;
	char client[INET6_ADDRSTRLEN + 10];
	size_t have;
	uint8_t buf[2 + DNS_TCP_MSG_MAX];
};

struct dns_write {
	uv_write_t w;
	struct dns_tcp *c;
	uint8_t buf[];
};

struct dns_send {
	uv_udp_send_t s;
	struct sl_gw_dns *d;
	uint8_t buf[];
};

struct sl_gw_dns {
	struct sl_gw *gw;
	uv_udp_t udp;
	uv_tcp_t tcp;
	bool udp_open, tcp_open, closing;
	unsigned n_queries, n_tcp, n_sends;
	struct dns_query *queries;
	struct dns_tcp *conns;
	uint8_t udp_buf[DNS_TCP_MSG_MAX];
	struct sl_dns_map *map; /* what we answered: address -> name */
};

/* ---- The address map ---- */

static const uint8_t *addr_bytes(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET)
		return (const uint8_t *)&((const struct sockaddr_in *)addr)->sin_addr;
	if (addr->sa_family == AF_INET6)
		return (const uint8_t *)&((const struct sockaddr_in6 *)addr)->sin6_addr;
	return NULL;
}

int sl_gw_dns_name_for(const struct sl_gw *gw, const struct sockaddr *addr, char *name,
		       size_t size)
{
	const uint8_t *a = addr_bytes(addr);

	if (!gw->dns)
		return -ENOENT;
	if (!a)
		return -EAFNOSUPPORT;
	return sl_dns_map_get(gw->dns->map, addr->sa_family, a, uv_now(gw->loop), name, size);
}

int sl_gw_dns_names_for(const struct sl_gw *gw, const struct sockaddr *addr,
			char (*names)[SL_DNS_NAME_BUF], size_t max)
{
	const uint8_t *a = addr_bytes(addr);

	if (!gw->dns || !a)
		return 0;
	return sl_dns_map_get_all(gw->dns->map, addr->sa_family, a, uv_now(gw->loop), names, max);
}

/* ---- Audit ---- */

static const char *qtype_name(uint16_t t, char *buf, size_t size)
{
	switch (t) {
	case SL_DNS_TYPE_A: return "A";
	case SL_DNS_TYPE_NS: return "NS";
	case SL_DNS_TYPE_CNAME: return "CNAME";
	case SL_DNS_TYPE_SOA: return "SOA";
	case SL_DNS_TYPE_PTR: return "PTR";
	case SL_DNS_TYPE_MX: return "MX";
	case SL_DNS_TYPE_TXT: return "TXT";
	case SL_DNS_TYPE_AAAA: return "AAAA";
	case SL_DNS_TYPE_SRV: return "SRV";
	case SL_DNS_TYPE_SVCB: return "SVCB";
	case SL_DNS_TYPE_HTTPS: return "HTTPS";
	case SL_DNS_TYPE_IXFR: return "IXFR";
	case SL_DNS_TYPE_AXFR: return "AXFR";
	case SL_DNS_TYPE_ANY: return "ANY";
	default: break;
	}
	snprintf(buf, size, "TYPE%u", t); /* RFC 3597 5 */
	return buf;
}

/* q: NULL for a message that did not parse. status: the rcode sent, or
 * negative when nothing was sent. */
static void audit(struct sl_gw_dns *d, const char *client, const struct sl_dns_query *q,
		  uint64_t start_wall_ms, uint64_t start_ms, int status, bool allow,
		  const char *reason, const char *rule)
{
	char tbuf[16];
	struct sl_audit_record r = {
		.ts_ms = start_wall_ms,
		.sandbox = d->gw->cfg.sandbox,
		.event = "dns",
		.client = client,
		.method = q ? qtype_name(q->qtype, tbuf, sizeof(tbuf)) : NULL,
		.host = q ? q->qname : NULL,
		.port = -1,
		.status = status,
		.decision = allow ? "allow" : "deny",
		.rule = rule,
		.reason = reason,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = (int64_t)(uv_now(d->gw->loop) - start_ms),
	};

	if (d->gw->audit)
		(void)sl_audit_write(d->gw->audit, &r);
	(void)sl_gw_audit_ok(d->gw);
}

/* ---- Sending replies ---- */

static void tcp_close(struct dns_tcp *c);
static void tcp_resume(struct dns_tcp *c);

static void udp_sent(uv_udp_send_t *s, int status)
{
	struct dns_send *ds = container_of(s, struct dns_send, s);

	(void)status;
	ds->d->n_sends--;
	free(ds);
}

static void tcp_written(uv_write_t *w, int status)
{
	struct dns_write *dw = container_of(w, struct dns_write, w);
	struct dns_tcp *c = dw->c;

	free(dw);
	c->busy--;
	if (c->closing)
		return;
	if (status < 0) {
		tcp_close(c);
		return;
	}
	uv_timer_again(&c->idle);
	tcp_resume(c);
}

/* Send one reply: a datagram to peer, or a framed message on c. */
static void send_reply(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
		       const uint8_t *msg, size_t len)
{
	if (c) {
		struct dns_write *dw;
		uv_buf_t b;

		if (c->closing)
			return;
		dw = malloc(sizeof(*dw) + 2 + len);
		if (!dw) {
			tcp_close(c);
			return;
		}
		dw->c = c;
		dw->buf[0] = (uint8_t)(len >> 8);
		dw->buf[1] = (uint8_t)len;
		memcpy(dw->buf + 2, msg, len);
		b = uv_buf_init((char *)dw->buf, (unsigned)(2 + len));
		if (uv_write(&dw->w, (uv_stream_t *)&c->h, &b, 1, tcp_written) < 0) {
			free(dw);
			tcp_close(c);
			return;
		}
		c->busy++;
		return;
	}

	uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
	int r;

	if (d->closing)
		return;
	r = uv_udp_try_send(&d->udp, &b, 1, peer);
	if (r != UV_EAGAIN && r != UV_ENOSYS)
		return; /* sent, or lost as a datagram may be */
	if (d->n_sends < DNS_MAX_UDP_SENDS) {
		struct dns_send *ds = malloc(sizeof(*ds) + len);

		if (!ds)
			return;
		ds->d = d;
		memcpy(ds->buf, msg, len);
		b = uv_buf_init((char *)ds->buf, (unsigned)len);
		if (uv_udp_send(&ds->s, &d->udp, &b, 1, peer, udp_sent) < 0) {
			free(ds);
			return;
		}
		d->n_sends++;
	}
}

static size_t reply_limit(const struct dns_tcp *c, const struct sl_dns_query *q)
{
	size_t lim = c ? DNS_REPLY_MAX : sl_dns_udp_limit(q);

	return lim < DNS_REPLY_MAX ? lim : DNS_REPLY_MAX;
}

/* Reply with an rcode and the given answers (none for NODATA and errors). */
static int reply(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
		 const struct sl_dns_query *q, int rcode, const struct sl_dns_answer *ans,
		 size_t n_ans, uint32_t ttl)
{
	uint8_t buf[DNS_REPLY_MAX];
	size_t len;

	if (sl_dns_build_response(q, rcode, ans, n_ans, ttl, buf, reply_limit(c, q), &len) < 0)
		return -1; /* the client gets nothing and retries */
	send_reply(d, c, peer, buf, len);
	return rcode;
}

/* ---- Answering ---- */

/* Take a query off the gateway's list before its reply is sent: sending
 * may close its connection, which cancels the queries still listed. */
static void query_unlink(struct dns_query *dq)
{
	struct sl_gw_dns *d = dq->d;

	if (dq->prev)
		dq->prev->next = dq->next;
	else
		d->queries = dq->next;
	if (dq->next)
		dq->next->prev = dq->prev;
	d->n_queries--;
	if (dq->tcp)
		dq->tcp->busy--;
}

static void query_free(struct dns_query *dq)
{
	sl_gw_policy_unref(dq->pol);
	free(dq);
}

/* Is this resolved address one we may hand out under this policy? */
static bool answer_ok(const struct sl_gw *gw, const struct sl_policy *p,
		      const struct sockaddr_storage *ss, const uint8_t *bytes)
{
	if (sl_gw_is_local(gw, (const struct sockaddr *)ss) ||
	    sl_gw_is_owned(gw, (const struct sockaddr *)ss))
		return false;
	if (sl_gw_addr_special(ss->ss_family, bytes) &&
	    !sl_policy_private_allowed(p, ss->ss_family, bytes))
		return false;
	return true;
}

static void on_resolved(void *data, int status, const struct sl_gw_addrs *addrs)
{
	struct dns_query *dq = data;
	struct sl_gw_dns *d = dq->d;
	struct sl_dns_answer ans[SL_GW_MAX_ADDRS];
	int family = dq->q.qtype == SL_DNS_TYPE_A ? AF_INET : AF_INET6;
	size_t n = 0, seen = 0, i;
	const char *reason = "allowed";
	uint32_t ttl = 0;
	int rcode = SL_DNS_RCODE_NOERROR, sent;

	dq->req = NULL;
	/* The audit log broke while this was resolved: no answer is given
	 * out (it could not be audited). */
	if (status == -EDQUOT || !sl_gw_audit_ok(d->gw)) {
		/* The wildcard's budget of new names is spent (dns-gate.c,
		 * which audited it once for the window: not per query, or
		 * the names kept from upstream would flood the log).
		 * REFUSED, not NXDOMAIN: the name may well exist, and a
		 * stub that cached "no such name" would miss it after the
		 * minute is over; REFUSED reads "try again later". */
		query_unlink(dq);
		(void)reply(d, dq->tcp, (const struct sockaddr *)&dq->peer, &dq->q,
			    SL_DNS_RCODE_REFUSED, NULL, 0, 0);
		if (dq->tcp)
			tcp_resume(dq->tcp);
		query_free(dq);
		return;
	}
	if (status == -ENOENT) {
		/* Upstream has no address for the name (c-ares folds "no
		 * such name" and "no A or AAAA" together): NXDOMAIN lets
		 * the client stop at once instead of retrying a SERVFAIL. */
		rcode = SL_DNS_RCODE_NXDOMAIN;
		reason = "resolve-failed";
	} else if (status < 0) {
		rcode = SL_DNS_RCODE_SERVFAIL;
		reason = "resolve-failed";
	} else {
		uint64_t expires;

		ttl = addrs->ttl < DNS_TTL_MAX ? addrs->ttl : DNS_TTL_MAX;
		for (i = 0; i < addrs->n; i++) {
			const struct sockaddr_storage *ss = &addrs->addr[i];
			const uint8_t *b;

			if (ss->ss_family != family)
				continue;
			b = family == AF_INET
				    ? (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr
				    : (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
			seen++;
			if (!answer_ok(d->gw, dq->pol->p, ss, b))
				continue;
			ans[n].type = dq->q.qtype;
			memcpy(ans[n].addr, b, family == AF_INET ? 4 : 16);
			n++;
		}
		if (seen && !n)
			reason = "private-address";
		expires = uv_now(d->gw->loop) + (uint64_t)ttl * 1000 + DNS_MAP_GRACE_MS;
		for (i = 0; i < n; i++)
			(void)sl_dns_map_put(d->map, family, ans[i].addr, dq->q.qname, expires);
	}
	query_unlink(dq);
	sent = reply(d, dq->tcp, (const struct sockaddr *)&dq->peer, &dq->q, rcode, ans, n, ttl);
	audit(d, dq->client, &dq->q, dq->start_wall_ms, dq->start_ms, sent,
	      rcode == SL_DNS_RCODE_NOERROR && !(seen && !n), reason, NULL);
	/* The connection, if any, is still allocated: it is freed only in
	 * its close callbacks, which run on a later loop turn. */
	if (dq->tcp)
		tcp_resume(dq->tcp);
	query_free(dq);
}

/* Why a name is not answered, as sl_policy_decide() would say it for the
 * usual port: the deny rule that names it, or that no rule does. */
static const char *denied_reason(const struct sl_policy *p, const struct sl_dns_query *q,
				 char *rule, size_t size)
{
	struct sl_request req = { .host = q->qname, .host_len = q->qname_len, .port = 443 };
	struct sl_decision dec;

	sl_policy_decide(p, &req, &dec);
	if (dec.verdict != SL_VERDICT_DENY)
		return "port"; /* a deny rule takes every port some allow rule names */
	if (dec.rule)
		sl_rule_id(dec.rule, rule, size);
	return sl_reason_to_string(dec.reason);
}

/* One message from a client: parse, decide, and reply now or after
 * resolving. msg is only read during the call. */
/* What the policy answers at once, without resolving: the audit log down,
 * a class other than IN, a name no rule allows (or one kept out of the
 * sandbox's DNS), a type other than A and AAAA. True once q was answered
 * (and audited). */
static bool answer_by_policy(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			     const char *client, const struct sl_dns_query *q, uint64_t wall,
			     uint64_t now)
{
	const struct sl_policy *p = d->gw->policy->p;
	const struct sl_rule *wild;
	char rule[96] = "";
	const char *reason;
	int r;

	/* The audit log cannot be written: nothing is decided, nor resolved
	 * (a name sent upstream is data out), nor audited. */
	if (!sl_gw_audit_ok(d->gw)) {
		(void)reply(d, c, peer, q, SL_DNS_RCODE_REFUSED, NULL, 0, 0);
		return true;
	}
	if (q->qclass != SL_DNS_CLASS_IN) {
		/* CHAOS and friends (version.bind...) are not the policy's
		 * business and tell a prober about us: refuse them. */
		r = reply(d, c, peer, q, SL_DNS_RCODE_REFUSED, NULL, 0, 0);
		audit(d, client, q, wall, now, r, false, "class", NULL);
		return true;
	}
	if (!sl_policy_name_allowed(p, q->qname, q->qname_len)) {
		reason = denied_reason(p, q, rule, sizeof(rule));
		r = reply(d, c, peer, q, SL_DNS_RCODE_NXDOMAIN, NULL, 0, 0);
		audit(d, client, q, wall, now, r, false, reason, rule[0] ? rule : NULL);
		return true;
	}
	wild = sl_policy_name_wildcard(p, q->qname, q->qname_len);
	if (wild && wild->exact_dns) {
		/* The rule keeps its names out of the sandbox's DNS: they
		 * are reached through the proxy, which resolves them under
		 * the budget. NXDOMAIN, as for a name no rule allows. */
		r = reply(d, c, peer, q, SL_DNS_RCODE_NXDOMAIN, NULL, 0, 0);
		audit(d, client, q, wall, now, r, false, "exact-dns",
		      sl_rule_id(wild, rule, sizeof(rule)));
		return true;
	}
	if (q->qtype != SL_DNS_TYPE_A && q->qtype != SL_DNS_TYPE_AAAA) {
		/* HTTPS, SVCB, TXT, MX, ANY...: the name exists, but we hold
		 * only addresses, and forwarding the question would let
		 * answers we never checked into the sandbox. NODATA. For
		 * HTTPS and SVCB (RFC 9460) this also means the sandbox is
		 * never handed an ECH configuration: a ClientHello that
		 * hides its real SNI could not be decided by the capture. */
		r = reply(d, c, peer, q, SL_DNS_RCODE_NOERROR, NULL, 0, 0);
		audit(d, client, q, wall, now, r, true, "allowed", NULL);
		return true;
	}
	return false;
}

/* An allowed A or AAAA question: resolved, then answered (on_resolved). */
static void resolve_query(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			  const char *client, const struct sl_dns_query *q, uint64_t wall,
			  uint64_t now)
{
	struct dns_query *dq;
	int r;

	if (d->n_queries >= DNS_MAX_QUERIES || !(dq = calloc(1, sizeof(*dq)))) {
		r = reply(d, c, peer, q, SL_DNS_RCODE_SERVFAIL, NULL, 0, 0);
		audit(d, client, q, wall, now, r, true, "overloaded", NULL);
		return;
	}
	dq->d = d;
	dq->tcp = c;
	if (peer)
		memcpy(&dq->peer, peer,
		       peer->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						  : sizeof(struct sockaddr_in6));
	snprintf(dq->client, sizeof(dq->client), "%s", client);
	dq->start_wall_ms = wall;
	dq->start_ms = now;
	dq->q = *q;
	r = sl_gw_resolve(d->gw->resolver, q->qname, on_resolved, dq, &dq->req);
	if (r < 0) {
		free(dq);
		r = reply(d, c, peer, q, SL_DNS_RCODE_SERVFAIL, NULL, 0, 0);
		audit(d, client, q, wall, now, r, true, "resolve-failed", NULL);
		return;
	}
	/* The policy decided now; the answers are filtered by the same one
	 * even if a reload replaces it meanwhile. */
	dq->pol = sl_gw_policy_ref(d->gw->policy);
	dq->next = d->queries;
	if (d->queries)
		d->queries->prev = dq;
	d->queries = dq;
	d->n_queries++;
	if (c)
		c->busy++;
}

static void handle_message(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			   const char *client, const uint8_t *msg, size_t len)
{
	uint64_t wall = sl_audit_now_ms(), now = uv_now(d->gw->loop);
	struct sl_dns_query q;
	int r, rcode;

	r = sl_dns_parse_query(msg, len, &q);
	if (r < 0) {
		uint8_t buf[SL_DNS_UDP_PLAIN];
		size_t out;

		rcode = sl_dns_error_rcode(r);
		if (rcode >= 0 && sl_dns_build_error(msg, len, rcode, buf, sizeof(buf), &out) == 0)
			send_reply(d, c, peer, buf, out);
		else
			rcode = -1;
		audit(d, client, NULL, wall, now, rcode, false, "malformed", NULL);
		return;
	}
	if (answer_by_policy(d, c, peer, client, &q, wall, now))
		return;
	resolve_query(d, c, peer, client, &q, wall, now);
}

/* Drop a query whose client is gone or whose gateway is stopping. */
static void query_cancel(struct dns_query *dq)
{
	sl_gw_resolve_cancel(dq->req);
	query_unlink(dq);
	audit(dq->d, dq->client, &dq->q, dq->start_wall_ms, dq->start_ms, -1, true, "cancelled",
	      NULL);
	query_free(dq);
}

/* ---- UDP ---- */

static void format_peer(const struct sockaddr *sa, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else {
		snprintf(buf, size, "?");
	}
}

static void udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct sl_gw_dns *d = h->data;

	(void)suggested;
	*b = uv_buf_init((char *)d->udp_buf, sizeof(d->udp_buf));
}

static void udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *b, const struct sockaddr *addr,
		     unsigned flags)
{
	struct sl_gw_dns *d = h->data;
	char client[INET6_ADDRSTRLEN + 10];

	(void)b;
	if (nread <= 0 || !addr || d->closing)
		return;
	format_peer(addr, client, sizeof(client));
	/* Not the sandbox: no answer at all (an answer would make this an
	 * amplifier too), one audit record (rate-limited). */
	if (!sl_gw_peer_allowed(d->gw, addr)) {
		sl_gw_audit_refused_peer(d->gw, "dns", client);
		return;
	}
	if (flags & UV_UDP_PARTIAL) {
		/* Longer than any query we answer: FORMERR from what we have. */
		uint8_t buf[SL_DNS_UDP_PLAIN];
		size_t out;
		int sent = -1;

		if (sl_dns_build_error(d->udp_buf, (size_t)nread, SL_DNS_RCODE_FORMERR, buf,
				       sizeof(buf), &out) == 0) {
			send_reply(d, NULL, addr, buf, out);
			sent = SL_DNS_RCODE_FORMERR;
		}
		audit(d, client, NULL, sl_audit_now_ms(), uv_now(d->gw->loop), sent, false,
		      "malformed", NULL);
		return;
	}
	handle_message(d, NULL, addr, client, d->udp_buf, (size_t)nread);
}

/* ---- TCP (RFC 7766) ---- */

static void tcp_handle_closed(uv_handle_t *h)
{
	struct dns_tcp *c = h->data;
	struct sl_gw_dns *d = c->d;

	if (--c->open_handles > 0)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		d->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	d->n_tcp--;
	free(c);
	if (d->gw->shutting_down)
		sl_gw_maybe_free(d->gw);
}

static void tcp_close(struct dns_tcp *c)
{
	struct dns_query *dq, *next;

	if (c->closing)
		return;
	c->closing = true;
	for (dq = c->d->queries; dq; dq = next) {
		next = dq->next;
		if (dq->tcp == c)
			query_cancel(dq);
	}
	uv_close((uv_handle_t *)&c->idle, tcp_handle_closed);
	uv_close((uv_handle_t *)&c->h, tcp_handle_closed);
}

static void tcp_idle(uv_timer_t *t)
{
	tcp_close(container_of(t, struct dns_tcp, idle));
}

static void tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct dns_tcp *c = h->data;

	(void)suggested;
	*b = uv_buf_init((char *)c->buf + c->have, (unsigned)(sizeof(c->buf) - c->have));
}

/* Answer every whole message in the buffer, as long as the connection has
 * room for more in flight; the rest waits until replies drain. */
static void tcp_process(struct dns_tcp *c)
{
	size_t off = 0;

	while (!c->closing && c->busy < DNS_TCP_PIPELINE && c->have - off >= 2) {
		size_t len = ((size_t)c->buf[off] << 8) | c->buf[off + 1];

		if (len == 0 || len > DNS_TCP_MSG_MAX) {
			/* Framing we cannot follow: the stream cannot be
			 * resynchronised, so it ends here. */
			audit(c->d, c->client, NULL, sl_audit_now_ms(), uv_now(c->d->gw->loop), -1,
			      false, "malformed", NULL);
			tcp_close(c);
			return;
		}
		if (c->have - off < 2 + len)
			break;
		handle_message(c->d, c, NULL, c->client, c->buf + off + 2, len);
		off += 2 + len;
	}
	if (c->closing)
		return;
	memmove(c->buf, c->buf + off, c->have - off);
	c->have -= off;
}

static void tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);

static void tcp_resume(struct dns_tcp *c)
{
	if (c->closing)
		return;
	tcp_process(c);
	if (c->closing)
		return;
	if (c->eof) {
		/* The client said all it will say (RFC 7766 6.2.4 lets it
		 * half-close); close once every reply is out. */
		if (c->busy == 0)
			tcp_close(c);
		return;
	}
	if (!c->reading && c->busy < DNS_TCP_PIPELINE) {
		if (uv_read_start((uv_stream_t *)&c->h, tcp_alloc, tcp_read) < 0) {
			tcp_close(c);
			return;
		}
		c->reading = true;
	}
}

static void tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct dns_tcp *c = s->data;

	(void)b;
	if (c->closing)
		return;
	if (nread == UV_EOF) {
		c->eof = true;
		uv_read_stop(s);
		c->reading = false;
		tcp_resume(c);
		return;
	}
	if (nread < 0) {
		tcp_close(c);
		return;
	}
	c->have += (size_t)nread;
	uv_timer_again(&c->idle);
	tcp_process(c);
	if (!c->closing && c->busy >= DNS_TCP_PIPELINE && c->reading) {
		uv_read_stop(s);
		c->reading = false;
	}
}

static void tcp_accept(uv_stream_t *server, int status)
{
	struct sl_gw_dns *d = server->data;
	struct sockaddr_storage peer;
	int peer_len = sizeof(peer);
	struct dns_tcp *c;

	if (status < 0 || d->closing)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	uv_tcp_init(d->gw->loop, &c->h);
	uv_timer_init(d->gw->loop, &c->idle);
	c->h.data = c->idle.data = c;
	c->open_handles = 2;
	c->next = d->conns;
	if (d->conns)
		d->conns->prev = c;
	d->conns = c;
	d->n_tcp++;
	if (uv_accept(server, (uv_stream_t *)&c->h) < 0) {
		tcp_close(c);
		return;
	}
	snprintf(c->client, sizeof(c->client), "?");
	peer.ss_family = AF_UNSPEC;
	if (uv_tcp_getpeername(&c->h, (struct sockaddr *)&peer, &peer_len) == 0)
		format_peer((const struct sockaddr *)&peer, c->client, sizeof(c->client));
	if (!sl_gw_peer_allowed(d->gw, peer.ss_family == AF_UNSPEC
					       ? NULL
					       : (const struct sockaddr *)&peer)) {
		sl_gw_audit_refused_peer(d->gw, "dns", c->client);
		tcp_close(c);
		return;
	}
	if (d->n_tcp > DNS_MAX_TCP) {
		/* Accepted only to be closed at once, so the backlog does not
		 * fill with connections we will never serve. */
		tcp_close(c);
		return;
	}
	uv_timer_start(&c->idle, tcp_idle, DNS_TCP_IDLE_MS, DNS_TCP_IDLE_MS);
	tcp_resume(c);
}

/* ---- Setup and teardown ---- */

static void udp_closed(uv_handle_t *h)
{
	struct sl_gw_dns *d = h->data;

	d->udp_open = false;
	if (d->gw->shutting_down)
		sl_gw_maybe_free(d->gw);
}

static void listener_closed(uv_handle_t *h)
{
	struct sl_gw_dns *d = h->data;

	d->tcp_open = false;
	if (d->gw->shutting_down)
		sl_gw_maybe_free(d->gw);
}

int sl_gw_listen_dns(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct sl_gw_dns *d;
	int r;

	if (gw->dns) {
		snprintf(err, errlen, "--dns '%s': the DNS server is already listening", addr_port);
		return -EALREADY;
	}
	r = sl_gw_parse_listen("--dns", addr_port, &ss, err, errlen);
	if (r < 0)
		return r;
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "--dns: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	r = sl_dns_map_new(DNS_MAP_MAX, &d->map);
	if (r < 0) {
		free(d);
		snprintf(err, errlen, "--dns: %s", strerror(-r));
		return r;
	}
	d->gw = gw;
	gw->dns = d;

	/* From here on the handles are open, and closed by sl_gw_shutdown()
	 * whatever happens next. */
	uv_udp_init(gw->loop, &d->udp);
	uv_tcp_init(gw->loop, &d->tcp);
	d->udp.data = d->tcp.data = d;
	d->udp_open = d->tcp_open = true;
	r = uv_udp_bind(&d->udp, (const struct sockaddr *)&ss, 0);
	if (r == 0) {
		/* A burst of queries should wait in the socket, not be lost
		 * there; best effort, as net.core.rmem_max caps it. */
		int size = 1 << 20;

		(void)uv_recv_buffer_size((uv_handle_t *)&d->udp, &size);
		r = uv_udp_recv_start(&d->udp, udp_alloc, udp_recv);
	}
	if (r == 0)
		r = uv_tcp_bind(&d->tcp, (const struct sockaddr *)&ss, 0);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&d->tcp, 64, tcp_accept);
	if (r < 0) {
		snprintf(err, errlen, "--dns '%s': %s", addr_port, uv_strerror(r));
		return r;
	}
	return 0;
}

void sl_gw_dns_close(struct sl_gw *gw)
{
	struct sl_gw_dns *d = gw->dns;
	struct dns_tcp *c;

	if (!d || d->closing)
		return;
	d->closing = true;
	while (d->queries)
		query_cancel(d->queries);
	for (c = d->conns; c; c = c->next)
		tcp_close(c);
	if (d->udp_open)
		uv_close((uv_handle_t *)&d->udp, udp_closed);
	if (d->tcp_open)
		uv_close((uv_handle_t *)&d->tcp, listener_closed);
}

bool sl_gw_dns_open(const struct sl_gw *gw)
{
	const struct sl_gw_dns *d = gw->dns;

	return d && (d->udp_open || d->tcp_open || d->conns || d->n_sends);
}

void sl_gw_dns_free(struct sl_gw *gw)
{
	if (!gw->dns)
		return;
	sl_dns_map_free(gw->dns->map);
	free(gw->dns);
	gw->dns = NULL;
}
