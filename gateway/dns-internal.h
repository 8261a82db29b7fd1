/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's DNS server, shared by its two files: dns.c (the sockets:
 * UDP, TCP per RFC 7766, setup and teardown; the top) and dns-answer.c
 * (answering one query: policy, resolving, filtering, the address map,
 * the audit; under it, calling back only through d->send and
 * d->answered). Not part of the gateway's API.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "audit-rate.h"
#include "dns-wire.h"
#include "gateway-internal.h"

/* A query we accept is one question and an OPT record; RFC 7766 lets
 * messages be longer, but nothing longer than this is a query we answer. */
#define DNS_TCP_MSG_MAX 4096

struct dns_tcp;

/* Observe mode: a name the rules deny, answered anyway; what would have
 * refused it, for the record. reason NULL: not observed. */
struct dns_observed {
	const char *reason; /* static */
	char rule[96];
};

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
	struct dns_observed obs;
	bool cached; /* answered from the resolver's cache: nothing went upstream */
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
	/* Set by dns.c, which owns the sockets, for dns-answer.c: send one
	 * reply (a datagram to peer, or a framed message on c), and take c
	 * back once a query on it is answered (it may read on). */
	void (*send)(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
		     const uint8_t *msg, size_t len);
	void (*answered)(struct dns_tcp *c);
	uv_udp_t udp;
	uv_tcp_t tcp;
	bool udp_open, tcp_open, closing;
	unsigned n_queries, n_tcp, n_sends;
	struct dns_query *queries;
	struct dns_tcp *conns;
	uint8_t udp_buf[DNS_TCP_MSG_MAX];
	struct sl_dns_map *map; /* what we answered: address -> name */
	/* Refused queries' records, at most DNS_REFUSED_PER_SECOND a second
	 * (dns-answer.c): the rest counted, and the count audited. */
	struct sl_audit_rate refused;
	/* Allowed queries answered without asking upstream (the cache, NODATA
	 * for other types), as many a second: as cheap to repeat. */
	struct sl_audit_rate local;
};

/* dns-answer.c */
/* One message from a client: parse, decide, and reply now or after
 * resolving. c: NULL for UDP (peer is the client then). msg is only read
 * during the call. */
void dns_handle_message(struct sl_gw_dns *d, struct dns_tcp *c, const struct sockaddr *peer,
			const char *client, const uint8_t *msg, size_t len);
/* Drop a query whose client is gone or whose gateway is stopping. */
void dns_query_cancel(struct dns_query *dq);
/* The audit record of one query. q: NULL for a message that did not
 * parse. status: the rcode sent, or negative when nothing was sent. */
void dns_audit(struct sl_gw_dns *d, const char *client, const struct sl_dns_query *q,
	       uint64_t start_wall_ms, uint64_t start_ms, int status, bool allow,
	       const char *reason, const char *rule);
