/* SPDX-License-Identifier: MIT */
/*
 * The gateway: one libuv loop serving a sandbox's explicit proxy (CONNECT
 * and absolute-form HTTP/1.1). A request's path reads top to bottom in
 * conn.c: accept -> parse -> decide -> resolve -> connect -> relay -> audit.
 * No global state: several gateways (one per loop) can live in a process.
 */
#pragma once

#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#include "audit.h"
#include "policy.h"
#include "resolve.h"

struct sl_gw_config {
	const char *sandbox;           /* name in audit records */
	unsigned connect_timeout_ms;   /* upstream connect */
	unsigned idle_timeout_ms;      /* no bytes either way */
	unsigned header_timeout_ms;    /* the whole request head (slowloris) */
	size_t max_header_bytes;       /* 431 past it */
	unsigned max_connections;      /* open at once; more are refused */
	size_t max_buffered_bytes;     /* per direction, before reading pauses */
	unsigned capture_wait_ms;      /* captured: wait this long for the client's first bytes */
	/* The sandbox's address (AF_INET or AF_INET6; the port is ignored):
	 * the only client the proxy and the DNS serve. Any other peer is
	 * closed at once (proxy, DNS over TCP) or not answered (DNS over
	 * UDP), and audited with decision "deny", reason "not-the-sandbox".
	 * Defence in depth behind the host's nftables rules, which drop such
	 * peers first. AF_UNSPEC (the default): anyone, as `sluice gateway`
	 * serves. Captured connections are not checked: their listener lives
	 * inside the sandbox's namespace, where every peer is the sandbox. */
	struct sockaddr_storage allowed_peer;
	/* Ranges sluice itself owns (the sandboxes' address pool: every veth
	 * end, ours and other sandboxes'): never a destination, whatever the
	 * policy's private_addresses says, for proxied, captured and inspected
	 * connections and DNS answers alike (owned.c). An IPv6 address that
	 * embeds an IPv4 one in them is refused too. None by default, as
	 * `sluice gateway` serves. */
#define SL_GW_MAX_OWNED 4
	struct sl_cidr owned[SL_GW_MAX_OWNED];
	size_t n_owned;
	/* Called once, on the gateway's loop, when the audit log cannot be
	 * written (sl_audit_error): from then on the gateway decides nothing
	 * new (new connections closed at once, DNS queries REFUSED, no
	 * request relayed, open connections closed), and it has said so on
	 * stderr. NULL: nobody to tell. */
	void (*audit_failed)(void *data, int err);
	void *audit_failed_data;
	/* --observe: every policy the gateway is given, at start and on each
	 * reload, is in observe mode whatever its `mode:` says (policy.h,
	 * docs/observe.md). */
	bool observe;
};

void sl_gw_config_defaults(struct sl_gw_config *c);

/*
 * Make room for max_connections in this process's RLIMIT_NOFILE (limits.c):
 * raise the soft limit to sl_gw_fds_needed(), and the hard one too where
 * that is allowed (CAP_SYS_RESOURCE). 0, or a negative errno with err
 * saying how many files are needed, the limit, and the most connections
 * that fit. Call it before the gateway opens anything.
 */
unsigned long sl_gw_fds_needed(unsigned max_connections);
int sl_gw_reserve_fds(unsigned max_connections, char *err, size_t errlen);

struct sl_gw;

/* policy: taken over. resolver, audit: borrowed, must outlive the gateway. */
int sl_gw_new(uv_loop_t *loop, const struct sl_gw_config *cfg, struct sl_policy *policy,
	      struct sl_gw_resolver *resolver, struct sl_audit *audit, struct sl_gw **ret);

/* Serve the explicit proxy on "ADDR:PORT" ("[v6]:PORT"). */
int sl_gw_listen_proxy(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen);

/*
 * Serve transparent capture on a listening TCP socket that the caller made
 * inside the sandbox's namespace (where the redirect happens, so that
 * SO_ORIGINAL_DST can answer). The fd is taken over. Connections are
 * decided by the ClientHello's SNI, else the HTTP Host header, else their
 * original destination address.
 */
int sl_gw_listen_capture_fd(struct sl_gw *gw, int fd, char *err, size_t errlen);

/*
 * Serve the sandbox's DNS on "ADDR:PORT", UDP and TCP (dns.c): A and AAAA
 * for names the policy allows, resolved by the gateway and stripped of
 * special addresses; NXDOMAIN for every other name, which is never
 * resolved or forwarded; NODATA for other types of allowed names.
 */
int sl_gw_listen_dns(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen);

/* The name whose DNS answer, still fresh, gave out this address (the most
 * recent one if several did): for a captured connection that names no
 * host. 0, -ENOENT (never answered, or expired), or -ENOBUFS. Call it on
 * the gateway's loop. */
int sl_gw_dns_name_for(const struct sl_gw *gw, const struct sockaddr *addr, char *name,
		       size_t size);

/*
 * Serve the gateway's counters as Prometheus text on "ADDR:PORT"
 * (metrics-serve.c, docs/metrics.md): GET /metrics only. Refused with
 * -EINVAL (err naming --metrics) for an address a sandbox could reach:
 * one in cfg.owned, cfg.allowed_peer itself, and, when either is set (a
 * sandbox's gateway), a wildcard (0.0.0.0, ::). Call it before confining.
 */
int sl_gw_listen_metrics(struct sl_gw *gw, const char *addr_port, char *err, size_t errlen);

/* The same checks before there is a gateway, for a flag's early error:
 * ADDR:PORT, and no wildcard when sandboxed. 0 or -EINVAL. */
int sl_gw_metrics_addr_check(const char *addr_port, bool sandboxed, char *err, size_t errlen);

/* The gateway's counters (metrics.h), whether served or not: for a
 * control socket's `ps` (sl_metrics_requests), its own rendering, and
 * approval holds (sl_metrics_approval_wait). Lives as long as gw. */
struct sl_metrics;
struct sl_metrics *sl_gw_metrics(struct sl_gw *gw);

struct sl_ca;
struct sl_secret_value;

/*
 * Inspect TLS for hosts whose rules need it (methods, paths, a credential;
 * inspect*.c): the sandbox's TLS ends at the gateway with a leaf from ca
 * (borrowed: it must outlive the gateway), and origins are verified
 * against upstream_ca (a PEM file, parsed now) or, when NULL, the
 * system's trust store (SSL_CERT_FILE, else OpenSSL's bundle file: read
 * now, while files can still be opened, and parsed at the first upstream
 * connection, off the way up). Without it, such hosts are refused.
 */
int sl_gw_enable_inspection(struct sl_gw *gw, struct sl_ca *ca, const char *upstream_ca,
			    char *err, size_t errlen);

/* A secret's value, by the name the policy gives it, for injection
 * (borrowed: it must outlive the gateway). Every inspected response is
 * scrubbed of every secret added. At most 8. Needs inspection enabled. */
int sl_gw_add_secret(struct sl_gw *gw, const char *name, const struct sl_secret_value *v);

/* Can the audit log still be written? Once it cannot (a write failed:
 * disk full, EIO; sl_audit_error), false for good: the gateway says so
 * once on stderr, closes every open connection and calls
 * cfg.audit_failed; it decides nothing new from then on. The gateway
 * calls it before every decision and after every record it writes; call
 * it after writing to the gateway's audit log yourself (on its loop). */
bool sl_gw_audit_ok(struct sl_gw *gw);

/* Replace the policy (taken over). Connections already deciding keep the
 * policy they started with; the old one is freed when the last is done. */
void sl_gw_set_policy(struct sl_gw *gw, struct sl_policy *p);

/* Stop accepting and close every connection; the loop then runs dry once
 * the caller has closed its own handles. Frees the gateway when done. */
void sl_gw_shutdown(struct sl_gw *gw);
