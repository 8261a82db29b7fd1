/* SPDX-License-Identifier: MIT */
/*
 * One proxy connection, shared by the files that handle it: conn.c (its
 * lifetime, writes, timers, relay, connect, decide, the proxy's request
 * head, accept), conn-http.c (plain HTTP: forwarding, bodies, responses,
 * keep-alive), conn-tunnel.c (CONNECT and the ClientHello check) and
 * conn-capture.c (transparent capture). Not part of the gateway's API.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "conn-state.h"
#include "gateway-internal.h"
#include "http.h"
#include "policy.h"
#include "resolve.h"

#define READ_CHUNK 65536
#define HELLO_MAX (16384 + 5 + 4096)


struct conn {
	struct sl_gw *gw;
	struct conn *prev, *next;
	struct sl_gw_policy *pol;
	enum state state;

	uv_tcp_t client;
	uv_tcp_t upstream;
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
	bool captured;		 /* redirected to us by the sandbox's nftables */
	bool tunnel;		 /* bytes relayed opaque: CONNECT, or captured non-HTTP */
	bool tls_seen;		 /* a ClientHello was checked */
	bool inspect;		 /* TLS is (to be) ended here: inspect.c */
	struct insp *insp;	 /* inspect.c's state, once started */
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
	bool audited;

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

/* Every change of c->state: aborts on one the table (conn-state.c) does
 * not allow. Entering DONE (an exchange over, the connection kept) or
 * CLOSED (the last handle closed) writes the exchange's record. */
void conn_set_state(struct conn *c, enum state to);
void conn_free(struct conn *c);
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
void conn_decide_and_go(struct conn *c, const char *host, size_t host_len, const char *path,
			size_t path_len);
void conn_head_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void conn_process_head(struct conn *c);
void conn_body_error(struct conn *c);
int conn_keep_pipelined(struct conn *c, const char *p, size_t n);
ssize_t conn_body_forward(struct conn *c, const char *p, size_t n);
void conn_http_upstream_read(struct conn *c, ssize_t nread, const uv_buf_t *buf);
void conn_http_start(struct conn *c);
/* A kept-alive exchange is over and its upstream closed: read, decide and
 * go on with the next request (c->pipelined first). */
void conn_next_request(struct conn *c);
/* The close callback of an exchange's upstream handle: then the next
 * request (conn_next_request), unless the connection is closing. */
void conn_upstream_closed_next(uv_handle_t *h);
void conn_tunnel_start(struct conn *c);
/* A request head inside a tunnel that carries plain HTTP (c->pinned). */
void conn_tunnel_http_head(struct conn *c, const struct sl_http_request *r);
/* Captured, and not inspected: may the decided connection carry what the
 * client sent (or will send)? Refuses it (and returns false) if not. */
bool conn_capture_may_relay(struct conn *c);
/* Captured: decide at once, before the client's first bytes, when the
 * address's name is allowed on this port by a `protocol: tcp` rule (a
 * server-first protocol need not wait out capture_wait_ms). */
bool conn_capture_decide_at_once(struct conn *c);
void conn_decide_by_address(struct conn *c);
void conn_capture_classify(struct conn *c);
void conn_capture_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
const char *conn_status_text(int status);
/* The gateway's own answer: status, a one-line plain-text reason, and
 * Connection: close. Its length (*ret malloc'd), or -1. */
int conn_error_response(int status, const char *why, char **ret);
/* The first of a's addresses the policy lets us reach (never the gateway
 * host's own, never a special range the policy does not list); NULL with
 * *ret_refused saying why the last one was refused. */
const struct sockaddr *conn_pick_address(const struct conn *c, const struct sl_gw_addrs *a,
					 const char **ret_refused);
void conn_literal_addrs(enum sl_host_kind kind, const char *host, struct sl_gw_addrs *a);
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
