/* SPDX-License-Identifier: MIT */
/*
 * One proxy connection, shared by the files that handle it. The core:
 * conn.c (lifetime and state, writes, timers, reading heads, the relay,
 * the next request, the audit record), with conn-pool.c (kept-alive origin
 * connections) and conn-answer.c (the gateway's own answers) below it and
 * conn-accept.c (accept, the peer checked) above it; above them
 * conn-decide.c (decide, resolve, connect); conn-headers.c (request-head
 * checks) between the two. The handlers, one per way in, above the core: conn-http.c
 * (plain HTTP: the proxy's requests, bodies, responses, keep-alive),
 * conn-tunnel.c (CONNECT and the ClientHello check, opaque relays),
 * conn-capture.c (transparent capture), conn-inspect.c (inspect.c's
 * entry). The arrows run one way: core <- handlers <- gateway.c.
 * docs/architecture.md, "A connection", draws it. Not the gateway's API.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "approve.h"
#include "conn-pool.h"
#include "conn-state.h"
#include "gateway-internal.h"
#include "http.h"
#include "policy.h"
#include "resolve.h"

#define READ_CHUNK 65536
#define HELLO_MAX (16384 + 5 + 4096)

/* The ways in (struct conn_handler, below). */
enum conn_way {
	CONN_HTTP,
	CONN_TUNNEL,
	CONN_CAPTURE,
	CONN_INSPECT,
	CONN_SOCKS,
};

/* SOCKS5 (socks.c): where a connection is in its handshake. Until the
 * request is answered, a refusal is SOCKS5's reply (conn_refusal). */
enum conn_socks {
	CONN_SOCKS_NO,	      /* not SOCKS5 */
	CONN_SOCKS_GREETING,  /* no method chosen yet: refused by closing */
	CONN_SOCKS_REQUEST,   /* the request's reply is owed */
	CONN_SOCKS_ANSWERED,  /* succeeded: the tunnel's bytes are the client's */
};

/*
 * Where the connection is, is c->state (conn-state.h) and c->handler; the
 * booleans that remain are facts, mostly for the audit record, and none
 * of them says where it is:
 * - is_connect, captured, tunnel, tls_seen, inspect, pinned: what the
 *   connection is (how it came, what it carries, what was decided for
 *   it), which the record reports and the handlers branch on; they do not
 *   change where it goes next (the handler and the state do).
 * - parsed, decided, refused: what is known of this exchange, for the
 *   record (method and path, the decision, a deny the policy did not say).
 * - audited: this exchange's record is written (or it has none, as a
 *   refused peer's); the one writer, conn_write_audit(), sets it, so
 *   conn_set_state()'s DONE and CLOSED cannot double it.
 * - body_active, body_done, resp_head_done, keep_alive, client_keep_alive,
 *   head_request: the framing of the plain-HTTP message in RELAY (where
 *   the body ends, whether the response allows another request), which
 *   http.c's parsers report; state_was_relay and status_seen: history.
 * - upstream_open, client_eof, upstream_eof, *_paused: the handles' and
 *   each direction's condition (half-close, backpressure), below states.
 */
struct conn {
	struct sl_gw *gw;
	struct conn *prev, *next;
	struct sl_gw_policy *pol;
	enum state state;			 /* changed by conn_set_state() only */
	const struct conn_handler *handler; /* the way in at work now */
	enum conn_way way_in;		 /* the one that reads the next request */

	uv_tcp_t client;
	/* The upstream: c's own while upstream_open (a handle counted in
	 * open_handles), from the pool or connected anew (conn-pool.h). */
	struct conn_up *up;
	uv_timer_t timer;
	uv_connect_t connect_req;
	uv_shutdown_t shutdown_client, shutdown_upstream;
	bool upstream_open;
	int open_handles;

	/* The head (and, for CONNECT, the peeked hello) as it arrives. */
	char *buf;
	size_t len;

	/* What was asked and decided, for the audit record. */
	bool is_connect;	 /* a CONNECT through the explicit proxy */
	enum conn_socks socks;	 /* ... asked for in SOCKS5 (socks.c) */
	int up_status;		 /* the upstream connect's libuv error, for SOCKS5 */
	bool captured;		 /* redirected to us by the sandbox's nftables */
	bool tunnel;		 /* bytes relayed opaque: CONNECT, or captured non-HTTP */
	bool tls_seen;		 /* a ClientHello was checked */
	bool tls_retried;	 /* the server asked for a second one (HelloRetryRequest) */
	size_t hello_len;	 /* bytes of c->buf that are the checked hello's records */
	char *tls_rest;		 /* the client's bytes after it, held until the server answers */
	size_t tls_rest_len;
	bool inspect;		 /* TLS is (to be) ended here: inspect.c */
	struct insp *insp;	 /* inspect.c's state, once started */
	struct conn_splice *splice; /* splice.c's, once an opaque tunnel is spliced */
	const char *credential;	 /* the injected secret's name, for the audit */
	struct sockaddr_in orig; /* captured: where the client was going */
	char orig_str[INET_ADDRSTRLEN];
	bool parsed;
	char method[16];
	char *path;
	uint16_t port;
	struct sl_decision dec;
	bool decided;
	const char *reason; /* overrides the decision's reason when set */
	bool refused;	    /* we refused it, whatever the policy said */
	char sni[256];
	int status;
	char client_addr[INET6_ADDRSTRLEN + 8];
	uint64_t start_wall_ms, start_loop_ms;
	uint64_t bytes_up, bytes_down;

	struct sl_gw_resolve_req *rreq;

	/* Plain HTTP: where the request body ends (no second request may
	 * follow it to the origin undecided). */
	struct sl_http_body body;
	bool body_active;
	bool body_done;

	/* Plain HTTP responses, and keep-alive to the client. */
	struct sl_http_response resp;
	char *rbuf; /* the response head as it arrives */
	size_t rlen;
	bool resp_head_done;
	bool head_request;
	bool client_keep_alive; /* the request allows it (HTTP/1.1's default) */
	bool keep_alive;	/* ... and the response's framing does too */
	char *pipelined;	/* client bytes after this request's body */
	size_t pipelined_len;
	unsigned n_exchanges; /* finished and audited on this connection */
	/* The upstream's side of keep-alive (conn-pool.h): the origin keeps
	 * the connection; it sent bytes beyond the response (never reused);
	 * the request can be sent again on a new connection should a pooled
	 * one turn out closed (idempotent, no body: c->buf kept for it); it
	 * was. */
	bool origin_keep_alive;
	bool up_dirty;
	bool auth_bound; /* a login bound to the connection (NTLM): never pooled */
	bool retry_ok;
	bool retried;
	char *retry_head; /* the head, kept while retry_ok */
	size_t retry_len;

	bool audited;

	/* Held for approval (approve.h): the hold while it lasts; the
	 * outcome, for this exchange's record. */
	struct sl_gw_hold *hold;
	struct sl_gw_approval approval;

	/* A CONNECT tunnel that carries plain HTTP: every request in it must
	 * name this host and port (conn-tunnel.c). */
	bool pinned;
	uint16_t pin_port;
	char pin_host[SL_HOST_BUF];

	/* Relay state, per direction. */
	bool client_eof, upstream_eof;
	bool client_paused, upstream_paused;
	bool status_seen;
	bool state_was_relay; /* for the audit: the tunnel carried bytes */
};

struct insp;
struct conn_splice;

/*
 * A way in: explicit HTTP (the proxy's requests, conn-http.c), a CONNECT
 * tunnel or a captured non-HTTP connection relayed opaque (conn-tunnel.c),
 * capture (conn-capture.c: the first bytes say which of the others it
 * is), inspection (conn-inspect.c, inspect.c). The core (conn.c,
 * conn-decide.c) calls the connection's handler through c->handler and
 * names none of them; gateway.c registers them (sl_gw.conn_ways). A NULL
 * op is the core's default, or never called for that handler.
 */
struct conn_handler {
	const char *name;
	/* Its upstreams may come from and go to the pool (conn-pool.h). */
	bool pooled;
	/* c is this handler's from now on: accepted (the way in), or handed
	 * over (conn_hand_to). */
	void (*start)(struct conn *c);
	/* More of a request head, or of the first bytes, is in c->buf. */
	void (*head)(struct conn *c);
	/* The policy allowed c: true to resolve and connect, false when the
	 * handler answered or took the connection on itself. */
	bool (*decided)(struct conn *c);
	/* The upstream is connected. */
	void (*connected)(struct conn *c);
	/* Relayed bytes from the client (p malloc'd, n > 0): true when the
	 * handler took them; false, the core forwards them as they are. */
	bool (*client_bytes)(struct conn *c, char *p, size_t n);
	/* Relayed bytes (or the end, nread < 0) from the upstream, instead of
	 * the core's relay. */
	void (*upstream_read)(struct conn *c, ssize_t nread, const uv_buf_t *buf);
	/* A write to the client is done (instead of resuming the relay). */
	void (*written)(struct conn *c);
	/* The timer fired: true when the handler dealt with it. */
	bool (*timer)(struct conn *c);
	/* conn_close() is under way; conn_free() is. */
	void (*close)(struct conn *c);
	void (*free)(struct conn *c);
};

extern const struct conn_handler conn_http_handler;
extern const struct conn_handler conn_tunnel_handler;
extern const struct conn_handler conn_capture_handler;
extern const struct conn_handler conn_inspect_handler;
extern const struct conn_handler conn_socks_handler;

/* ---- conn.c: the core ---- */

static inline uv_stream_t *conn_upstream(struct conn *c)
{
	return (uv_stream_t *)&c->up->tcp;
}

/* Every change of c->state: aborts on one the table (conn-state.c) does
 * not allow. Entering DONE (an exchange over, the connection kept) or
 * CLOSED (the last handle closed) writes the exchange's record. */
void conn_set_state(struct conn *c, enum state to);
void conn_free(struct conn *c);
/* Keep n client bytes as the next request's (c->pipelined), whole (a head
 * and part of its body can come in one read); the head's own cap applies
 * when it is parsed. 0 or -ENOMEM. */
int conn_keep_pipelined(struct conn *c, const char *p, size_t n);
void conn_write_audit(struct conn *c);
void conn_close(struct conn *c);
/* Close with no record: a refused peer has its own, rate-limited one
 * (sl_gw_audit_refused_peer), and a broken audit log nowhere to go. */
void conn_close_unaudited(struct conn *c);
/* The last of c's handles has closed: CLOSED (the record), then freed. */
void conn_last_handle_closed(struct conn *c);
int conn_send_owned(struct conn *c, bool to_client, char *data, size_t len, bool close_after);
int conn_send_copy(struct conn *c, bool to_client, const char *data, size_t len, bool close_after);
void conn_respond_error(struct conn *c, int status, const char *reason, const char *why);
void conn_arm_timer(struct conn *c, unsigned ms);
void conn_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
int conn_buf_append(struct conn *c, const uv_buf_t *buf, size_t n);
void conn_maybe_pause(struct conn *c, bool client);
void conn_half_close(struct conn *c, bool from_client);
void conn_start_relay(struct conn *c);
/* The upstream read as the relay reads it (the handler's upstream_read,
 * if it has one, sees the bytes). */
void conn_read_upstream(struct conn *c);
/* The read callback of a request head (or first bytes): gathers c->buf,
 * then the handler's head op (conn_process_head). */
void conn_head_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void conn_process_head(struct conn *c);
/* A kept-alive exchange is over and its upstream closed: read, decide and
 * go on with the next request (c->pipelined first), by c's way in. */
void conn_next_request(struct conn *c);
/* The exchange's upstream connection ended cleanly: into the pool
 * (conn-pool.h), no longer c's; false when the pool will not have it. */
bool conn_release_upstream(struct conn *c);
/* The next request on c (conn_next_request), once its upstream is gone:
 * closed first, unless released. */
void conn_next_after_upstream(struct conn *c);
/* Close c's upstream and let go of it at once (c->up NULL): a retry
 * connects another. Its writes still in flight are called back for
 * nothing. */
void conn_drop_upstream(struct conn *c);
const char *conn_status_text(int status);
/* The gateway's own answer: status, X-Sluice-Reason (reason, when it is
 * one of our tokens), a one-line plain-text why, and Connection: close.
 * Its length (*ret malloc'd), or -1. */
int conn_error_response(int status, const char *reason, const char *why, char **ret);
/* The answer to c, refused: SOCKS5's reply while its request waits for
 * one, nothing (-1: just close) before its greeting is answered, else
 * conn_error_response()'s. */
int conn_refusal(const struct conn *c, int status, const char *reason, const char *why,
		 char **ret);
/* The reason c's audit record gives: the one set, else the decision's. */
const char *conn_reason(const struct conn *c);

/* ---- conn-accept.c: the ways in, and handing over ---- */

/* c's handler from now on is way's; conn_hand_to also starts it. */
void conn_use(struct conn *c, enum conn_way way);
void conn_hand_to(struct conn *c, enum conn_way way);
/* The handler that reads c's next request (a tunnel that carries plain
 * HTTP reads them as the proxy's). */
void conn_set_way_in(struct conn *c, enum conn_way way);

/* ---- conn-decide.c: decide -> resolve -> connect ---- */

void conn_decide_and_go(struct conn *c, const char *host, size_t host_len, const char *path,
			size_t path_len);
/* Connect again to the address c's upstream has, on a new connection
 * (the pooled one was closed under the request), once per exchange. */
void conn_connect_again(struct conn *c);
/* sa (an IPv4 or IPv6 address) with port, into to. */
void conn_addr_with_port(struct sockaddr_storage *to, const struct sockaddr *sa, uint16_t port);
/* The first of a's addresses the policy lets us reach (never the gateway
 * host's own, read afresh first: for a new connection; never a special
 * range the policy does not list); NULL with
 * *ret_refused saying why the last one was refused. */
const struct sockaddr *conn_pick_address(const struct conn *c, const struct sl_gw_addrs *a,
					 const char **ret_refused);
void conn_literal_addrs(enum sl_host_kind kind, const char *host, struct sl_gw_addrs *a);

/* conn-headers.c: headers that are the hop's, not the message's. */
bool conn_http_hop_by_hop(const struct sl_http_request *r, const struct sl_http_span *name);

/* inspect.c: TLS ended here. start: c is decided (c->dec, inspect) and
 * c->buf holds the ClientHello. written: a write to the client is done.
 * close: conn_close() is under way. free: conn_free() is. */
void conn_inspect_start(struct conn *c);
void conn_inspect_written(struct conn *c);
/* The connection's timer fired while inspect.c had it. */
void conn_inspect_timer(struct conn *c);
void conn_inspect_close(struct conn *c);
void conn_inspect_free(struct conn *c);
