/* SPDX-License-Identifier: MIT */
/* Shared between gateway.c and conn.c; not part of the gateway's API. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dns-map.h"
#include "gateway.h"

#define SL_GW_ROUTE_CACHE 64

struct sl_gw_policy {
	struct sl_policy *p;
	unsigned refs;
};

struct conn;
struct conn_up;
struct sl_gw_hold;

struct sl_gw {
	uv_loop_t *loop;
	struct sl_gw_config cfg;
	struct sl_gw_policy *policy;
	struct sl_gw_resolver *resolver;
	struct sl_audit *audit;
	uv_tcp_t proxy;
	bool proxy_open;
	uv_tcp_t capture;
	bool capture_open;
	bool shutting_down;
	unsigned n_conns;
	struct conn *conns; /* every open connection, for shutdown */
	/* The host's own addresses: never a destination, whatever the policy
	 * says about private ranges. */
	struct sockaddr_storage *local;
	size_t n_local;
	/* NETLINK_ROUTE, subscribed to address changes: the list above is
	 * read again whenever the kernel says one changed. */
	int nl_fd;
	uv_poll_t nl_poll;
	bool nl_open;
	int rt_fd; /* NETLINK_ROUTE for route lookups (route.h) */
	/* What those lookups said, until nl_fd says a route, a rule or an
	 * address changed (only while it listens: without it, every choice
	 * asks the kernel). */
	struct {
		int family;
		uint8_t addr[16];
		bool local;
	} route_cache[SL_GW_ROUTE_CACHE];
	size_t n_route_cache;
	struct sl_gw_dns *dns; /* dns.c; NULL until sl_gw_listen_dns() */
	struct sl_gw_tls *tls; /* inspect.c; NULL unless inspection is enabled */
	struct sl_dns_budget *budget; /* dns-gate.c: new names per wildcard */
	struct sl_splice_pool *splice_pool; /* splice.c: pipes, while a tunnel is spliced */
	/* Peers that are not the sandbox, audited at most REFUSED_PER_SECOND
	 * a second (the rest counted, and the count audited): a flood of
	 * them must not fill the log either. */
	uint64_t refused_window_ms;
	unsigned refused_in_window;
	uint64_t refused_suppressed;
	/* The audit log failed (sl_gw_audit_ok): said, and open connections
	 * closed from fail_timer (never from inside one's own close). */
	bool audit_failed;
	uv_timer_t fail_timer;
	bool fail_timer_open;
	/* Registered by gateway.c, so that gw-core.c, below every part that
	 * calls it, calls nothing above it: free the gateway if it is shut
	 * down and nothing is left open (sl_gw_maybe_free), and close every
	 * connection once the log failed (fail_timer's callback). */
	void (*maybe_free)(struct sl_gw *gw);
	uv_timer_cb on_audit_failed;
	/* The connections' handlers, by enum conn_way (conn-internal.h),
	 * registered by gateway.c: the core that calls them names none. */
	const struct conn_handler *conn_ways[5];
	/* conn-pool.c: plain HTTP's idle upstream connections (newest
	 * first), how many, every upstream handle allocated, owned or not;
	 * the generation a reload moves on. */
	struct conn_up *pool;
	unsigned n_pool, n_ups;
	uint64_t pool_gen;
	uv_timer_t pool_timer;
	bool pool_timer_open;
	/* The audit log's lines of one turn of the loop, written together
	 * before it waits again (sl_audit_batch). */
	uv_prepare_t audit_flush;
	bool audit_flush_open;
	/* metrics-serve.c: the counters (fed by the audit log's observer)
	 * and the --metrics listener with its scrapers (NULL: none). */
	struct sl_metrics *metrics;
	struct sl_gw_metrics_srv *metrics_srv;
	/* approve.c: the requests held for approval, oldest first; and what
	 * the records said so far, for `sluice ps` (control.c). */
	struct sl_gw_hold *holds;
	unsigned n_holds;
};

/* gw-core.c: what every part of the gateway shares, calling none of them. */

struct sl_gw_policy *sl_gw_policy_ref(struct sl_gw_policy *gp);
void sl_gw_policy_unref(struct sl_gw_policy *gp);
/* Free the gateway if it is shut down and nothing is left open: call it
 * whenever a handle the gateway waits for has closed. */
void sl_gw_maybe_free(struct sl_gw *gw);
/* Read the host's addresses again, now; the old list stays on failure. */
int sl_gw_local_load(struct sl_gw *gw);
/* Audit, as one record, the refused peers the rate limit kept out. */
void sl_gw_audit_refused_flush(struct sl_gw *gw, const char *event);

/* conn.c */
void sl_gw_conn_accept(struct sl_gw *gw, uv_stream_t *server, bool captured);
void sl_gw_conn_close_all(struct sl_gw *gw);
/* Close every connection whose exchange observe mode let through (a reload
 * that enforces the rules: an observed tunnel has no next request to be
 * decided under them). */
void sl_gw_conn_close_observed(struct sl_gw *gw);

/* dns.c: close every DNS handle and query (shutdown); whether any handle
 * is still open; free what is left once none is. */
void sl_gw_dns_close(struct sl_gw *gw);
bool sl_gw_dns_open(const struct sl_gw *gw);
void sl_gw_dns_free(struct sl_gw *gw);
/* The summary of the refused queries the last window kept out of the log,
 * if any (dns-answer.c): written when the gateway stops. */
void sl_gw_dns_audit_flush(struct sl_gw *gw);
/* Every name whose DNS answer, still fresh, gave out this address, the
 * most recent first (sl_dns_map_get_all()): how many, 0 for none. */
int sl_gw_dns_names_for(const struct sl_gw *gw, const struct sockaddr *addr,
			char (*names)[SL_DNS_NAME_BUF], size_t max);

/* dns-gate.c: the DNS budget, and the resolver's gate that spends it. */
int sl_gw_budget_init(struct sl_gw *gw);
/* At shutdown, while the resolver still exists (it may be freed before
 * the gateway): from here on it sends nothing upstream that the gate
 * would have been asked about. */
void sl_gw_budget_stop(struct sl_gw *gw);

void sl_gw_budget_free(struct sl_gw *gw);

/* inspect.c: close the idle upstream connections; whether any upstream
 * connection is still allocated; free the TLS state once none is. */
void sl_gw_tls_flush_pool(struct sl_gw *gw);
bool sl_gw_tls_busy(const struct sl_gw *gw);
/* At shutdown: the handles of inspection that outlive connections. */
void sl_gw_tls_close(struct sl_gw *gw);
void sl_gw_tls_free(struct sl_gw *gw);

/* metrics-serve.c: the counters, made with the gateway (registered as
 * the audit log's observer); at shutdown, close the listener and its
 * scrapers; whether any is still open; free it all once none is. */
int sl_gw_metrics_init(struct sl_gw *gw);
void sl_gw_audit_record(struct sl_gw *gw, const struct sl_audit_record *r);
void sl_gw_metrics_close(struct sl_gw *gw);
bool sl_gw_metrics_open(const struct sl_gw *gw);
void sl_gw_metrics_free(struct sl_gw *gw);

/* May this peer be served (cfg.allowed_peer)? An IPv4-mapped IPv6 peer
 * is compared as the IPv4 address it is. */
bool sl_gw_peer_allowed(const struct sl_gw *gw, const struct sockaddr *sa);
/* Audit a refused peer: event "connect" or "dns", decision deny, reason
 * "not-the-sandbox", client "ADDR:PORT". */
void sl_gw_audit_refused_peer(struct sl_gw *gw, const char *event, const char *client);

/* Read the host's addresses again if the kernel said they changed since
 * the last look (a non-blocking read): call it before sl_gw_is_local
 * decides a connection. */
void sl_gw_local_sync(struct sl_gw *gw);

/* Is this address one of the gateway host's own? An IPv6 address that
 * embeds one of the host's IPv4 addresses (sl_gw_addr_embedded_v4) is. */
bool sl_gw_is_local(struct sl_gw *gw, const struct sockaddr *sa);

/* owned.c: is this address in a range sluice owns (cfg.owned), directly
 * or embedded in an IPv6 address (sl_gw_addr_embedded_v4)? */
bool sl_gw_is_owned(const struct sl_gw *gw, const struct sockaddr *sa);

/* "ADDR:PORT" (IPv6 in brackets) of a listener named by flag, for messages. */
int sl_gw_parse_listen(const char *flag, const char *addr_port, struct sockaddr_storage *ret,
		       char *err, size_t errlen);
