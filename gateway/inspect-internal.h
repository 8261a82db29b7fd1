/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection, shared by the files that do it. They are layers, each
 * calling only the ones under it (tests/shape checks that no file calls
 * back up):
 *
 *   inspect.c           the client connection: its handshake, reading,
 *                       the request body, the end of an exchange, conn.c's
 *                       entry points; drives the exchange
 *   inspect-request.c   a request head decided and rewritten for the origin
 *   inspect-response.c  the origin's response, scrubbed and framed again
 *   inspect-io.c        writing to the client; refusals inside the tunnel
 *   inspect-upstream.c  upstream TLS connections: connect, handshake, the
 *                       pool of kept-alive ones
 *   inspect-tls.c       the two SSL_CTXs, ALPN, the secrets, the session cache
 *   inspect-bio.c       the BIO under every SSL: a byte queue libuv reads
 *                       into and writes from
 *
 * Where a lower file must tell the driver something happened (an upstream
 * connection is ready or failed, a response is complete), it calls through
 * in->ops, which inspect.c sets: struct insp_ops below. Not part of the
 * gateway's API.
 */
#pragma once

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "conn-internal.h"
#include "http.h"
#include "scrub.h"
#include "secret.h"
#include "ws-scrub.h"

#define TLS_CHUNK 16384
/* Plaintext to the client is gathered into records of this size (TLS's
 * largest), and its records into writes of up to FLUSH_AT bytes: one
 * record and one write(2) per piece would cost a syscall per 8 KiB. */
#define OBUF_CAP 16384
#define FLUSH_AT (64 * 1024)
/* The most read(2) takes at once from either side. */
#define INSP_READ 65536
#define SESS_CACHE 64
#define SCRUB_SPARE 8
/* A response that pauses after a word (the scrubber holds back a word that
 * could still be part of a secret, scrub.h) has it passed on after this
 * long: a websocket's "pong" is not held until the next message. */
#define SCRUB_PAUSE_MS 50
#define DRIVE_ROUNDS 4096

struct up;
struct insp;

/* A byte queue in a buffer we own, p[off, off + len): the BIO under an
 * SSL (inspect-bio.c). Ciphertext that arrived waits in one for the SSL to
 * read it; the records an SSL wrote wait in another to be sent. */
struct insp_q {
	char *p;
	size_t off, len, cap;
	size_t min_cap; /* a buffer starts this big: regrowing copies it */
};

/* What the lower files tell the exchange's driver (inspect.c sets
 * in->ops): the way they signal up without naming the file above. */
struct insp_ops {
	/* inspect-upstream.c: in->up is connected, or came from the pool:
	 * the head may go. */
	void (*up_ready)(struct insp *in);
	/* inspect-upstream.c: the origin sent records, or its end. */
	void (*up_readable)(struct insp *in);
	/* inspect-upstream.c: the queue to the origin drained to half: the
	 * client, paused for it, may be read again. */
	void (*up_drained)(struct insp *in);
	/* inspect-upstream.c: in->up failed before it carried the exchange
	 * (already closed): the client gets the refusal. */
	void (*up_failed)(struct insp *in, int status, const char *reason, const char *why);
	/* inspect-response.c: the response is complete. */
	void (*end_exchange)(struct insp *in, bool reusable);
	/* inspect-response.c: after a 101, the client's bytes may flow. */
	void (*drive_client)(struct insp *in);
};

struct sl_gw_tls {
	struct sl_gw *gw;
	SSL_CTX *server; /* faces the sandbox; the leaf is set per connection */
	SSL_CTX *client; /* faces origins; verifies them */
	struct sl_ca *ca;
	struct {
		char *name;
		const struct sl_secret_value *v;
	} secrets[SL_SCRUB_MAX_SECRETS];
	size_t n_secrets;
	struct up *pool; /* idle upstream connections, most recent first */
	unsigned n_pool;
	unsigned gen; /* bumped by every flush: older connections are not pooled again */
	uint64_t n_made; /* struct up ids */
	/* The system's trust store, read at start (a confined gateway can
	 * open no file later) and parsed at the first upstream connection:
	 * some 150 certificates, tens of milliseconds, off every sandbox's
	 * way up. bundle_err: why it could not be read (then every upstream
	 * connection fails, as it would unverified). */
	bool default_paths_pending;
	char *bundle;
	size_t bundle_len;
	int bundle_err;
	char bundle_path[256];
	unsigned n_ups; /* every struct up still allocated */
	struct {
		char host[SL_HOST_BUF];
		uint16_t port;
		SSL_SESSION *s;
	} sess[SESS_CACHE];
	unsigned sess_next;
	/* Scrubbers of ended connections, for the next ones: a scrubber's
	 * mapping (the secrets' copies, out of core dumps) costs system
	 * calls and a page fault to make, on every inspected connection. */
	struct sl_scrub spare[SCRUB_SPARE];
	unsigned n_spare;
	/* Connections whose scrubber holds bytes back, soonest due first
	 * (each is due SCRUB_PAUSE_MS after its last read, so the order they
	 * came in); the timer flushes them (inspect-response.c). */
	struct insp *held_first, *held_last;
	uv_timer_t held_timer;
	bool held_timer_open;
};

enum ist {
	I_HANDSHAKE, /* the client's TLS handshake */
	I_HEAD,	     /* reading a request head */
	I_UPSTREAM,  /* waiting for an upstream connection */
	I_EXCHANGE,  /* the head went upstream; body and response flow */
	I_WS,	     /* after 101: frames both ways */
	I_CLOSING,
};

struct up {
	struct sl_gw_tls *t;
	struct up *prev, *next; /* in the pool */
	bool pooled;
	struct insp *owner; /* NULL in the pool */
	uv_tcp_t tcp;
	uv_timer_t timer; /* connect deadline; idle limit in the pool */
	uv_connect_t creq;
	bool tcp_open;
	int open_handles;
	bool closing;
	SSL *ssl;
	/* Network side: rq takes what arrives, wq holds what to send. */
	struct insp_q rq, wq;
	bool ready; /* handshake done */
	/* A spare (insp_up_spare) that nothing has been written on: in the
	 * pool for SPARE_IDLE_MS only; a request that takes it before its
	 * handshake is done gets a new connection instead if it fails. */
	bool spare;
	bool paused;
	bool eof;    /* the origin closed its side */
	bool failed; /* TLS failed: its session is not to be resumed */
	char host[SL_HOST_BUF];
	enum sl_host_kind kind;
	uint16_t port;
	unsigned gen;
	uint64_t id; /* numbered by t: an exchange can tell its spare still waits */
	uint64_t ready_at; /* uv_now() when its handshake was done */
	struct sl_gw_resolve_req *rreq;
};

struct insp {
	struct conn *c;
	const struct insp_ops *ops;
	enum ist st;
	SSL *ssl;
	struct insp_q rq, wq; /* as struct up's */
	/* Plaintext for the client not yet made a record (OBUF_CAP). */
	char *obuf;
	size_t olen;
	char host[SL_HOST_BUF]; /* what the connection was decided for */
	enum sl_host_kind kind;
	bool in_drive, redrive;
	bool head_started; /* the request head's deadline is running */

	/* Plaintext from the client not consumed yet: a head, a body's
	 * bytes, the next (pipelined) request. */
	char *cbuf;
	size_t clen, ccap;
	bool client_paused;
	bool client_eof;

	/* The exchange. */
	struct up *up;
	char *uhead; /* the head for upstream; holds the secret: wiped */
	size_t uhead_len;
	struct sl_http_body body;
	bool body_done;
	/* The request had a body: an origin that reads less of it than was
	 * sent (a handler that ignores Content-Length, "CL.0") reads the rest
	 * as a request nobody decided and answers it late, as whatever
	 * exchange takes the connection next: such a connection is not
	 * pooled (conn-http.c does the same for plain HTTP). */
	bool req_body;
	bool head_req, ws_req, client_ka;
	bool reused; /* in->up came from the pool; uhead is kept for a retry */
	uint64_t spare_id; /* the spare made to take in->up's place (req_body), or 0 */

	/* Its response. */
	struct sl_http_response resp;
	char *rbuf;
	size_t rlen;
	bool resp_head_done, resp_started, resp_ka, close_after;
	/* The request or its answer named a login bound to the connection
	 * (NTLM, Negotiate): it is not pooled, whoever would take it next. */
	bool auth_bound;
	bool up_paused;
	struct sl_scrub scrub;
	bool scrub_on;
	/* A scrubbed websocket, from the origin (after 101). */
	struct sl_ws_scrub ws;
	/* The client's frames, checked on their way up (after 101). */
	struct sl_ws_frames ws_up;
	/* What the 101 must say in Sec-WebSocket-Accept (ws_req). */
	char ws_accept[SL_WS_ACCEPT_LEN + 1];
	/* In the tls's held list: the scrubber holds bytes, due at held_due. */
	bool held_listed;
	uint64_t held_due;
	struct insp *held_prev, *held_next;
};

/* inspect.c */
/* Read and act on what the client sent, as far as the state allows;
 * reentrant calls are folded into the running one. */
void insp_drive_client(struct insp *in);
/* The exchange is over: audit it; keep or close each side. */
void insp_end_exchange(struct insp *in, bool reusable);

/* inspect-request.c: a complete request head in in->cbuf, decided; on
 * allow, on to an upstream connection. */
void insp_begin_exchange(struct insp *in, const struct sl_http_request *r);

/* inspect-response.c: read what the origin sent, as far as the client's
 * write queue allows. */
void insp_drive_upstream(struct insp *in);

/* The scrubber may hold bytes back after a read: the connection is put on
 * (or, holding none, taken off) the list the pause timer flushes. */
void insp_held_update(struct insp *in);
void insp_held_unlist(struct insp *in);

/* inspect-io.c */
void insp_wipe_uhead(struct insp *in);
/* The connection, or the inspection in it, is on its way out. */
bool insp_closing(const struct insp *in);
/* Everything written so far out on the client's socket: the plaintext
 * gathered made records, the records sent (or queued); then, with
 * close_after, the connection closes. */
int insp_client_flush(struct insp *in, bool close_after);
/* Plaintext for the client, gathered into full records; it goes out at
 * the next insp_client_flush (or once FLUSH_AT bytes are waiting). */
int insp_client_write(struct insp *in, const void *p, size_t n);
/* close_notify after what was written, then the connection closes. */
void insp_client_shutdown(struct insp *in);
/* libuv's allocation for reading the client: the free tail of in->rq. */
void insp_client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
/* The record of a refused request, now (unless it has one). */
void insp_audit_now(struct conn *c);
void insp_respond(struct insp *in, int status, const char *reason, const char *why);

/* inspect-upstream.c */
/* Plaintext to the origin, through its TLS. */
int insp_up_write(struct up *up, const void *p, size_t n);
void insp_up_close(struct up *up);
/* libuv's callbacks for reading an upstream connection. */
void insp_up_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void insp_up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
/* An exchange is done with up: kept in the pool if it may be, else closed. */
void insp_pool_put(struct up *up);
/* A new connection to old's host, port and address (checked again),
 * made now and put in the pool, where a request may take it before its
 * handshake is done: for an old that may not be pooled because of what
 * it carried. Nothing when the pool is full or flushed since old.
 * Returns the spare's id; 0 if none was made but one may be later (no
 * room yet), INSP_SPARE_NONE if it was tried and failed. */
#define INSP_SPARE_NONE UINT64_MAX
uint64_t insp_up_spare(struct insp *in, struct up *old);
/* Whether the spare numbered id will serve the next request: in the pool,
 * in its handshake or with more than half of its wait ahead (one with
 * less is closed now, for a new one to take its place); or a connection
 * that served a request and went back to the pool. */
bool insp_spare_holds(struct sl_gw_tls *t, uint64_t id);
/* in->up: from the pool (unless fresh), else a new connection; the head
 * goes once it is ready (in->ops->up_ready). */
void insp_get_upstream(struct insp *in, bool fresh);

/* inspect-bio.c */
/* A BIO over q (q must outlive it), or NULL. */
BIO *insp_q_bio(struct insp_q *q);
/* At least room free bytes after the queued ones: 0, or -ENOMEM. */
int insp_q_reserve(struct insp_q *q, size_t room);
/* n bytes from the front are done with. */
void insp_q_consume(struct insp_q *q, size_t n);
/* An empty queue gives its buffer back (an idle connection holds none);
 * a queue with a few bytes moves them to a buffer of their size. */
void insp_q_release(struct insp_q *q);
void insp_q_free(struct insp_q *q);
/* The queued bytes, moved to the front of the buffer, which the caller
 * now owns (free()); the queue is left empty. */
char *insp_q_take(struct insp_q *q, size_t *ret_len);

/* inspect-tls.c */
/* OpenSSL's last error, for a message. */
const char *insp_tls_error(void);
const struct sl_secret_value *insp_secret_by_name(const struct sl_gw_tls *t, const char *name);
/* The SSL_CTX's new-session callback: the session cache. */
int insp_new_session(SSL *ssl, SSL_SESSION *sess);

/* inspect-tls.c: the system's trust store, parsed now from the bytes read
 * at start, if it is still pending. 0, or -1 with why set. */
int insp_trust_pending_load(struct sl_gw_tls *t, char *why, size_t len);
