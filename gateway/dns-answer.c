/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's DNS server: answering one query (dns.c has the sockets).
 *
 * A message is parsed; what the policy answers at once is answered (the
 * audit log down, a class other than IN, a name no rule allows or one
 * kept out of the sandbox's DNS, a type other than A and AAAA); an allowed
 * A or AAAA question is resolved by the gateway's own resolver and the
 * answers filtered (special addresses, the host's own) before they go,
 * and remembered in the address map. Every query has its audit record,
 * but for refused ones past a rate limit, which are counted and summarized
 * (DNS_REFUSED_PER_SECOND).
 *
 * The layer under dns.c: it names nothing there. A reply goes out, and a
 * TCP connection is handed back once its query is answered, through the
 * two functions dns.c stores in struct sl_gw_dns (dns-internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "dns-internal.h"
#include "dns-map.h"

#define DNS_MAX_QUERIES 256     /* resolving at once, per gateway */
#define DNS_TTL_MAX 60          /* a policy reload takes effect within a minute */
#define DNS_REPLY_MAX 2048      /* 8 addresses, the question and OPT fit easily */
/* A client may connect a little after the TTL we gave it runs out (it
 * looked the name up just before; a TTL of 0 still precedes a connect). */
#define DNS_MAP_GRACE_MS 10000
/* Refused queries audited one by one, per gateway (sandbox), per second;
 * the rest are answered all the same, counted, and their number audited
 * as one "dns-not-logged: N" record when the next second's first refusal
 * comes, or the gateway stops. A refusal costs the agent one datagram, and
 * unbounded they wrote ~100k records (~50 MB) a second: the log's disk
 * full within minutes, and every other sandbox logging there ended. An
 * honest agent asks for a denied name by mistake: one lookup is A and
 * AAAA, at most a few more through resolv.conf's search list, and a tool
 * that retries does so a few times a second; 200 is some 50 such lookups
 * every second, sustained, so none of theirs is ever summarized. A record
 * is at most ~700 bytes (a 253-byte name, a 95-byte rule id), so a flood
 * writes at most ~140 KB a second. */
#define DNS_REFUSED_PER_SECOND 200
#define DNS_REFUSED_WINDOW_MS 1000
enum { DNS_HELD_REFUSED, DNS_HELD_LOCAL };

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

/* The two kinds of record a rate limit holds back (DNS_REFUSED_PER_SECOND
 * each): refused queries; and allowed ones answered without asking
 * upstream (from the cache, or NODATA for a type we hold no answers of),
 * as cheap to send, since every policy allows some name (its model API)
 * to ask again and again. What went upstream is always audited: the DNS
 * budget bounds it, and its record says which names left, which a flood
 * of these must not push out of the log. A limit each, so that a flood of
 * one kind crowds out none of the other's records. */
static const char *const held_what[] = {
    "refused queries",
    "allowed queries answered without asking upstream",
};

static void held_summary(struct sl_gw *gw, int kind, uint64_t n)
{
	(void)sl_audit_write_summary(gw->audit, gw->cfg.sandbox, "dns", 0,
				     "dns-not-logged: %llu more %s (rate limit)",
				     (unsigned long long)n, held_what[kind]);
}

static struct sl_audit_rate *held_rate(struct sl_gw_dns *d, int kind)
{
	return kind == DNS_HELD_REFUSED ? &d->refused : &d->local;
}

/* May a record of this kind be written? The summary of the last window's
 * held back, if any, is written first. */
static bool held_take(struct sl_gw_dns *d, int kind)
{
	uint64_t unlogged;
	bool take = sl_audit_rate_take(held_rate(d, kind), DNS_REFUSED_PER_SECOND,
				       DNS_REFUSED_WINDOW_MS, uv_now(d->gw->loop), &unlogged);

	if (unlogged)
		held_summary(d->gw, kind, unlogged);
	return take;
}

void sl_gw_dns_audit_flush(struct sl_gw *gw)
{
	bool wrote = false;

	for (int kind = DNS_HELD_REFUSED; gw->dns && gw->audit && kind <= DNS_HELD_LOCAL; kind++) {
		uint64_t n = sl_audit_rate_drain(held_rate(gw->dns, kind));

		if (n) {
			held_summary(gw, kind, n);
			wrote = true;
		}
	}
	if (wrote)
		(void)sl_gw_audit_ok(gw);
}

/* The record of a query: decision "allow", "deny" or (observe mode, a
 * name the rules deny that was answered) "observe-deny". */
static void dns_audit_as(struct sl_gw_dns *d, const char *client, const struct sl_dns_query *q,
			 uint64_t start_wall_ms, uint64_t start_ms, int status,
			 const char *decision, const char *reason, const char *rule)
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
		.decision = decision,
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

void dns_audit(struct sl_gw_dns *d, const char *client, const struct sl_dns_query *q,
	       uint64_t start_wall_ms, uint64_t start_ms, int status, bool allow,
	       const char *reason, const char *rule)
{
	dns_audit_as(d, client, q, start_wall_ms, start_ms, status, allow ? "allow" : "deny",
		     reason, rule);
}

/* The record of a query the policy refused at once, nothing sent
 * upstream (a name no rule allows, exact-dns, a class, a malformed
 * message): under DNS_REFUSED_PER_SECOND. What went upstream and failed
 * (resolve-failed, private-address) is not: the upstream's pace and the
 * DNS budget bound it, and its record says what left. */
static void dns_audit_refused(struct sl_gw_dns *d, const char *client, const struct sl_dns_query *q,
			      uint64_t wall, uint64_t start, int status, const char *reason,
			      const char *rule)
{
	if (d->gw->audit && !held_take(d, DNS_HELD_REFUSED))
		return;
	dns_audit(d, client, q, wall, start, status, false, reason, rule);
}

/* An answered query for a name observe mode let through: its record says
 * what would have refused it; a name that was not answered after all
 * (resolve-failed, private-address) is a plain deny. */
static void dns_audit_answered(struct sl_gw_dns *d, const char *client,
			       const struct sl_dns_query *q, uint64_t wall, uint64_t start,
			       int status, bool allow, const char *reason,
			       const struct dns_observed *obs, bool local)
{
	if (local && d->gw->audit && !held_take(d, DNS_HELD_LOCAL))
		return;
	if (allow && obs->reason)
		dns_audit_as(d, client, q, wall, start, status, "observe-deny", obs->reason,
			     obs->rule);
	else
		dns_audit(d, client, q, wall, start, status, allow, reason, NULL);
}

/* ---- Replies ---- */

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
	d->send(d, c, peer, buf, len);
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
static bool answer_ok(struct sl_gw *gw, const struct sl_policy *p,
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
			d->answered(dq->tcp);
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
	dns_audit_answered(d, dq->client, &dq->q, dq->start_wall_ms, dq->start_ms, sent,
			   rcode == SL_DNS_RCODE_NOERROR && !(seen && !n), reason, &dq->obs,
			   dq->cached);
	/* The connection, if any, is still allocated: it is freed only in
	 * its close callbacks, which run on a later loop turn. */
	if (dq->tcp)
		d->answered(dq->tcp);
	query_free(dq);
}

/* Why a name is not answered, as sl_policy_decide() would say it for the
 * usual port: the deny rule that names it, or that no rule does. In
 * observe mode *ret_observe says whether the name is answered anyway: a
 * name (never an IP literal) the rules alone refuse. */
static const char *denied_reason(const struct sl_policy *p, const struct sl_dns_query *q,
				 char *rule, size_t size, bool *ret_observe)
{
	struct sl_request req = { .host = q->qname, .host_len = q->qname_len, .port = 443 };
	struct sl_decision dec;
	const struct sl_rule *r;

	sl_policy_decide(p, &req, &dec);
	*ret_observe = dec.verdict == SL_VERDICT_OBSERVE && dec.host_kind == SL_HOST_NAME;
	if (dec.verdict == SL_VERDICT_ALLOW)
		return "port"; /* a deny rule takes every port some allow rule names */
	r = dec.rule ? dec.rule : dec.observed_rule;
	if (r)
		sl_rule_id(r, rule, size);
	else if (*ret_observe)
		snprintf(rule, size, "default");
	return sl_reason_to_string(dec.reason);
}

/* What the policy answers at once, without resolving: the audit log down,
 * a class other than IN, a name no rule allows (or one kept out of the
 * sandbox's DNS), a type other than A and AAAA. True once q was answered
 * (and audited). */
static bool answer_by_policy(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			     const char *client, const struct sl_dns_query *q, uint64_t wall,
			     uint64_t now, struct dns_observed *obs)
{
	const struct sl_policy *p = d->gw->policy->p;
	const struct sl_rule *wild;
	char rule[96] = "";
	const char *reason;
	bool observe = false;
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
		dns_audit_refused(d, client, q, wall, now, r, "class", NULL);
		return true;
	}
	if (!sl_policy_name_allowed(p, q->qname, q->qname_len)) {
		reason = denied_reason(p, q, rule, sizeof(rule), &observe);
		if (observe) {
			/* Observe mode: answered (nothing could be observed
			 * otherwise), under the DNS budget of its suffix
			 * (dns-gate.c), and audited "observe-deny". */
			obs->reason = reason;
			snprintf(obs->rule, sizeof(obs->rule), "%s", rule);
			goto by_type;
		}
		r = reply(d, c, peer, q, SL_DNS_RCODE_NXDOMAIN, NULL, 0, 0);
		dns_audit_refused(d, client, q, wall, now, r, reason, rule[0] ? rule : NULL);
		return true;
	}
	wild = sl_policy_name_wildcard(p, q->qname, q->qname_len);
	if (wild && wild->exact_dns) {
		/* The rule keeps its names out of the sandbox's DNS: they
		 * are reached through the proxy, which resolves them under
		 * the budget. NXDOMAIN, as for a name no rule allows. */
		r = reply(d, c, peer, q, SL_DNS_RCODE_NXDOMAIN, NULL, 0, 0);
		dns_audit_refused(d, client, q, wall, now, r, "exact-dns",
				  sl_rule_id(wild, rule, sizeof(rule)));
		return true;
	}
by_type:
	if (q->qtype != SL_DNS_TYPE_A && q->qtype != SL_DNS_TYPE_AAAA) {
		/* HTTPS, SVCB, TXT, MX, ANY...: the name exists, but we hold
		 * only addresses, and forwarding the question would let
		 * answers we never checked into the sandbox. NODATA. For
		 * HTTPS and SVCB (RFC 9460) this also means the sandbox is
		 * never handed an ECH configuration: a ClientHello that
		 * hides its real SNI could not be decided by the capture. */
		r = reply(d, c, peer, q, SL_DNS_RCODE_NOERROR, NULL, 0, 0);
		dns_audit_answered(d, client, q, wall, now, r, true, "allowed", obs, true);
		return true;
	}
	return false;
}

/* An allowed A or AAAA question: resolved, then answered (on_resolved). */
static void resolve_query(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			  const char *client, const struct sl_dns_query *q, uint64_t wall,
			  uint64_t now, const struct dns_observed *obs)
{
	struct dns_query *dq;
	int r;

	if (d->n_queries >= DNS_MAX_QUERIES || !(dq = calloc(1, sizeof(*dq)))) {
		r = reply(d, c, peer, q, SL_DNS_RCODE_SERVFAIL, NULL, 0, 0);
		dns_audit(d, client, q, wall, now, r, true, "overloaded", NULL);
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
	dq->obs = *obs;
	dq->cached = sl_gw_resolve_in_cache(d->gw->resolver, q->qname);
	r = sl_gw_resolve(d->gw->resolver, q->qname, on_resolved, dq, &dq->req);
	if (r < 0) {
		free(dq);
		r = reply(d, c, peer, q, SL_DNS_RCODE_SERVFAIL, NULL, 0, 0);
		dns_audit(d, client, q, wall, now, r, true, "resolve-failed", NULL);
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

void dns_handle_message(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			   const char *client, const uint8_t *msg, size_t len)
{
	uint64_t wall = sl_audit_now_ms(), now = uv_now(d->gw->loop);
	struct dns_observed obs = {0};
	struct sl_dns_query q;
	int r, rcode;

	r = sl_dns_parse_query(msg, len, &q);
	if (r < 0) {
		uint8_t buf[SL_DNS_UDP_PLAIN];
		size_t out;

		rcode = sl_dns_error_rcode(r);
		if (rcode >= 0 && sl_dns_build_error(msg, len, rcode, buf, sizeof(buf), &out) == 0)
			d->send(d, c, peer, buf, out);
		else
			rcode = -1;
		dns_audit_refused(d, client, NULL, wall, now, rcode, "malformed", NULL);
		return;
	}
	if (answer_by_policy(d, c, peer, client, &q, wall, now, &obs))
		return;
	resolve_query(d, c, peer, client, &q, wall, now, &obs);
}

void dns_query_cancel(struct dns_query *dq)
{
	sl_gw_resolve_cancel(dq->req);
	query_unlink(dq);
	dns_audit(dq->d, dq->client, &dq->q, dq->start_wall_ms, dq->start_ms, -1, true, "cancelled",
		  NULL);
	query_free(dq);
}
