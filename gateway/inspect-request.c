/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: one request head from inside the tunnel, decided on its
 * own. The Host must name the host the connection (and its leaf) was
 * decided for; method and path are decided by the policy; the head checks
 * a plain-HTTP request gets are made here too; and the head for the
 * origin is rebuilt (hop-by-hop headers out, the rule's credential in
 * place of the agent's). A file because deciding is the one step where a
 * mistake lets a request through: it reads top to bottom on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-headers.h"
#include "conn-internal.h"
#include "inspect-internal.h"
#include "reqhead.h"

/* ---- requests ---- */

/* Request headers that would let a response come back in a form the
 * scrubber cannot see whole: compressed (Accept-Encoding, and websocket's
 * permessage-deflate), or in slices (Range; If-Range only qualifies it).
 * A client that asked for a range gets the whole body, as from any server
 * that ignores Range (RFC 9110 14.2). */
static bool scrub_hides(const struct sl_http_span *name)
{
	/* With '_' for '-' too: CGI, WSGI and Rack servers read
	 * Accept_Encoding as Accept-Encoding (an origin on wsgiref gzipped an
	 * echoed key past the scrubber, helper 61). */
	return sl_reqhead_name_is(name, "accept-encoding") || sl_reqhead_name_is(name, "range") ||
	       sl_reqhead_name_is(name, "if-range") ||
	       sl_reqhead_name_is(name, "sec-websocket-extensions");
}

/* The head we send upstream: the request line with the target that was
 * decided (origin-form), the client's end-to-end headers, the credential
 * in place of every credential header the client sent, and where
 * responses must be scrubbed, what keeps them whole and plain: identity
 * encoding, no ranges (an echoed key sent in slices, each too short to
 * match, is the key), no websocket extensions (permessage-deflate). */
static int build_upstream_head(struct insp *in, const struct sl_http_request *r,
			       const char *target, const struct sl_inject *inj,
			       const struct sl_secret_value *v)
{
	/* The rebuilt headers (see SL_HTTP_REBUILT_MAX), then the lines we add. */
	size_t cap = SL_HTTP_REBUILT_MAX(r->head_len, r->n_headers) + 128 + SL_HOST_BUF + 16 +
		     (inj ? strlen(inj->header) + strlen(inj->prefix) + v->len + 4 : 0);
	const char *eol = memchr(r->method.p, '\n', r->head_len - (size_t)(r->method.p - in->cbuf));
	char *out;
	size_t len, i;

	if (!eol)
		return -EINVAL;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	in->auth_bound = sl_http_auth_binds_connection(r, "Authorization");
	/* "METHOD SP", the target, then " HTTP/1.x" as it came. */
	len = (size_t)(r->target.p - r->method.p);
	memcpy(out, r->method.p, len);
	memcpy(out + len, target, strlen(target));
	len += strlen(target);
	memcpy(out + len, r->target.p + r->target.len,
	       (size_t)(eol + 1 - (r->target.p + r->target.len)));
	len += (size_t)(eol + 1 - (r->target.p + r->target.len));
	if (in->kind == SL_HOST_IPV6)
		len += (size_t)sprintf(out + len, "Host: [%s]", in->host);
	else
		len += (size_t)sprintf(out + len, "Host: %s", in->host);
	if (in->c->port != 443)
		len += (size_t)sprintf(out + len, ":%u", in->c->port);
	memcpy(out + len, "\r\n", 2);
	len += 2;
	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (in->ws_req && (sl_http_span_caseeq(&h->name, "upgrade") ||
				   sl_http_span_caseeq(&h->name, "connection")))
			continue;
		if (conn_http_hop_by_hop(r, &h->name))
			continue;
		/* Not only the injected header: an origin may take any key it
		 * finds, and the agent's own would spend its own account. */
		if (in->c->dec.host_injects &&
		    sl_reqhead_is_host_credential(in->c->pol->p, &h->name))
			continue;
		/* Ours, in the one spelling the decision was made for. */
		if (sl_http_span_caseeq(&h->name, "host"))
			continue;
		if (in->scrub_on && scrub_hides(&h->name))
			continue;
		len += sl_http_put_header(out + len, h);
	}
	if (in->ws_req) {
		memcpy(out + len, "Connection: Upgrade\r\nUpgrade: websocket\r\n", 41);
		len += 41;
	}
	if (in->scrub_on) {
		memcpy(out + len, "Accept-Encoding: identity\r\n", 27);
		len += 27;
	}
	if (inj) {
		len += (size_t)sprintf(out + len, "%s: %s", inj->header, inj->prefix);
		memcpy(out + len, v->value, v->len);
		len += v->len;
		memcpy(out + len, "\r\n", 2);
		len += 2;
	}
	memcpy(out + len, "\r\n", 2);
	len += 2;
	in->uhead = out;
	in->uhead_len = len;
	return 0;
}

/* A new request on the connection: what the audit says of it starts
 * afresh. 0, or -1 when the connection was answered or closed. */
static int start_request(struct insp *in, const struct sl_http_request *r)
{
	struct conn *c = in->c;

	c->tunnel = false;
	c->parsed = true;
	/* The CONNECT's 200 is not this request's. */
	c->status = 0;
	/* Until this request is decided, no rule speaks for it. */
	c->dec.rule = NULL;
	c->dec.observed_rule = NULL;
	conn_policy_refresh(c);
	c->start_wall_ms = sl_audit_now_ms();
	c->start_loop_ms = uv_now(c->gw->loop);
	snprintf(c->method, sizeof(c->method), "%.*s", (int)r->method.len, r->method.p);
	free(c->path);
	c->path = strndup(r->target.p, r->target.len);
	if (!c->path) {
		conn_close(c);
		return -1;
	}
	if (r->target.len == 0 || r->target.p[0] != '/') {
		insp_respond(
		    in, 400, "bad-request",
		    "inside an inspected connection, a request names a path (origin-form)");
		return -1;
	}
	return 0;
}

/* The Host must be the host the connection was decided (and the leaf
 * minted) for: anything else is fronting inside the tunnel. 0, or -1
 * when refused. */
static int check_host(struct insp *in, const struct sl_http_request *r)
{
	struct conn *c = in->c;
	const struct sl_http_span *hh;
	const char *host, *why = NULL;
	size_t host_len, n_host;
	uint16_t hport;
	char norm[SL_HOST_BUF], msg[512];
	enum sl_host_kind kind;

	hh = sl_http_header(r, "host", &n_host);
	if (!hh || n_host != 1 || sl_host_split(hh->p, hh->len, &host, &host_len, &hport, &why) < 0 ||
	    sl_host_normalize(host, host_len, norm, &kind, NULL) < 0 ||
	    strcmp(norm, in->host) != 0 || (hport ? hport : 443) != c->port) {
		snprintf(msg, sizeof(msg),
			 "the Host header must name %s, the host this TLS connection is for", in->host);
		insp_respond(in, 421, "host-mismatch", msg);
		return -1;
	}
	return 0;
}

/* Decide method and path by the policy; an allowing rule that injects
 * gives its credential (*ret_inj) and the secret's value (*ret_v). 0, or
 * -1 when refused or closed. */
static int decide_request(struct insp *in, const struct sl_inject **ret_inj,
			  const struct sl_secret_value **ret_v)
{
	struct conn *c = in->c;
	struct sl_request q = {0};
	const struct sl_inject *inj = NULL;
	const struct sl_secret_value *v = NULL;
	char msg[512];

	if (!sl_gw_audit_ok(c->gw)) {
		conn_close_unaudited(c);
		return -1;
	}
	q.host = in->host;
	q.host_len = strlen(in->host);
	q.port = c->port;
	q.method = c->method;
	q.path = c->path;
	q.path_len = strlen(c->path);
	sl_policy_decide(c->pol->p, &q, &c->dec);
	c->decided = true;
	/* SL_VERDICT_OBSERVE goes on with no credential (its rule is NULL);
	 * the host's credential headers are dropped all the same. */
	if (c->dec.verdict != SL_VERDICT_ALLOW && c->dec.verdict != SL_VERDICT_OBSERVE) {
		insp_respond(in, 403, NULL,
			     sl_policy_explain(c->pol->p, &q, &c->dec, msg, sizeof(msg)));
		return -1;
	}
	if (c->dec.rule && c->dec.rule->has_inject) {
		const char *name = c->pol->p->secrets[c->dec.rule->inject.secret].name;

		inj = &c->dec.rule->inject;
		v = insp_secret_by_name(c->gw->tls, name);
		if (!v) {
			snprintf(msg, sizeof(msg),
				 "the secret '%s' is not loaded (a reload cannot add secrets; "
				 "restart sluice)",
				 name);
			insp_respond(in, 502, "credential-unavailable", msg);
			return -1;
		}
	}
	*ret_inj = inj;
	*ret_v = v;
	return 0;
}

/* The checks an allowed head must pass before it goes (as for plain
 * HTTP, conn-headers.c), and c->path made the target that was decided.
 * 0, or -1 when refused. */
static int check_allowed_head(struct insp *in, const struct sl_http_request *r,
			      const struct sl_inject *inj)
{
	struct conn *c = in->c;
	const char *why = NULL, *refused;
	char msg[512];
	int status;

	/* The same checks as on plain HTTP (conn-headers.c). */
	refused = sl_reqhead_refusal(r, &c->dec, c->pol->p, inj, &status, msg, sizeof(msg));
	if (refused) {
		insp_respond(in, status, refused, msg);
		return -1;
	}
	if (c->dec.path_checked) {
		/* The origin gets the path that was decided, not another
		 * spelling of it ("//v1/x") that it might route elsewhere. */
		char *target;
		int e = sl_reqhead_forward_target(c->path, strlen(c->path), &target, &why);

		if (e < 0) {
			insp_respond(in, 400, "invalid-path", e == -EINVAL ? why : "out of memory");
			return -1;
		}
		free(c->path);
		c->path = target;
	}
	return 0;
}

/* A websocket upgrade as RFC 6455 4.1 has a client send it: one
 * Sec-WebSocket-Key (the 101 must answer it: in->ws_accept) and version
 * 13. 0, or -1 when refused. */
static int check_ws_upgrade(struct insp *in, const struct sl_http_request *r)
{
	const struct sl_http_span *key, *ver;
	size_t n_key, n_ver;

	key = sl_http_header(r, "sec-websocket-key", &n_key);
	ver = sl_http_header(r, "sec-websocket-version", &n_ver);
	if (!key || n_key != 1 || sl_ws_accept(key->p, key->len, in->ws_accept) < 0) {
		insp_respond(in, 400, "bad-request",
			     "a websocket upgrade needs one Sec-WebSocket-Key (16 bytes, base64)");
		return -1;
	}
	if (!ver || n_ver != 1 || !sl_http_span_eq(ver, "13")) {
		insp_respond(in, 400, "bad-request",
			     "a websocket upgrade needs Sec-WebSocket-Version: 13");
		return -1;
	}
	/* Bytes behind the head are refused before it goes upstream
	 * (inspect.c, up_ready), wherever they came from. */
	return 0;
}

/* What follows the head: an upgrade only to a websocket, the body's
 * framing. 0, or -1 when refused. */
static int check_body_and_upgrade(struct insp *in, const struct sl_http_request *r)
{
	const struct sl_http_span *up_hdr;

	in->head_req = sl_http_span_eq(&r->method, "HEAD");
	up_hdr = sl_http_header(r, "upgrade", NULL);
	in->ws_req = up_hdr && sl_http_span_caseeq(up_hdr, "websocket") &&
		     sl_http_span_eq(&r->method, "GET") && sl_http_header_has_token(r, "connection", "upgrade", 7);
	if (up_hdr && !in->ws_req) {
		insp_respond(in, 400, "bad-request", "only websocket upgrades are relayed");
		return -1;
	}
	if (in->ws_req && check_ws_upgrade(in, r) < 0)
		return -1;
	in->client_ka = r->keep_alive && !in->ws_req;
	if (sl_http_body_init(&in->body, in->cbuf, r->head_len) < 0) {
		insp_respond(in, 400, "bad-request", "bad framing in the request head");
		return -1;
	}
	in->body_done = sl_http_body_is_done(&in->body);
	/* Its upstream connection is not kept after it (insp_end_exchange). */
	in->req_body = !in->body_done;
	return 0;
}

/* ---- Held for approval (approve.h) ---- */

/* While held the request waits in I_UPSTREAM, as for an upstream
 * connection: its body gathers in in->cbuf up to the buffer's size (the
 * client is paused past it), which is what `sluice pending` shows. */
static void held_go(void *owner)
{
	struct insp *in = owner;

	in->c->hold = NULL;
	conn_arm_timer(in->c, in->c->gw->cfg.idle_timeout_ms);
	insp_get_upstream(in, false);
}

static void held_refuse(void *owner, const char *reason, const char *why)
{
	struct insp *in = owner;

	in->c->hold = NULL;
	/* Its head, with the credential in it, never goes. */
	insp_wipe_uhead(in);
	in->c->credential = NULL;
	insp_respond(in, 403, reason, why);
}

static void held_gone(void *owner)
{
	struct insp *in = owner;

	in->c->hold = NULL;
	in->c->reason = "client-closed";
	conn_close(in->c);
}

static void held_body(void *owner, const char **ret_p, size_t *ret_n, int64_t *ret_total)
{
	struct insp *in = owner;

	*ret_p = in->cbuf;
	*ret_n = in->clen;
	*ret_total = in->body_done ? 0 : in->body.chunked ? -1 : (int64_t)in->body.left;
	/* Only this request's body: a pipelined request after it is in the
	 * buffer too, and is not what the person approves. */
	if (*ret_total >= 0 && (uint64_t)*ret_n > (uint64_t)*ret_total)
		*ret_n = (size_t)*ret_total;
}

static const struct sl_gw_hold_ops held_ops = {
    .go = held_go, .refuse = held_refuse, .gone = held_gone, .body = held_body};

static void hold_for_approval(struct insp *in)
{
	struct conn *c = in->c;
	struct sl_gw_hold_what w = {
	    .method = c->method, .host = in->host, .port = c->port, .path = c->path};
	uv_os_fd_t fd;
	int r;

	uv_timer_stop(&c->timer);
	if (uv_fileno((uv_handle_t *)&c->client, &fd) < 0)
		r = -EBADF;
	else
		r = sl_gw_hold_start(c->gw, in, &held_ops, fd, c->dec.rule->approve_timeout_ms, &w,
				     &c->approval, &c->hold);
	if (r < 0)
		held_refuse(in, "approval-busy",
			    r == -EBUSY ? "too many requests are waiting for approval"
					: "cannot hold this request for approval");
}

void insp_begin_exchange(struct insp *in, const struct sl_http_request *r)
{
	struct conn *c = in->c;
	const struct sl_inject *inj = NULL;
	const struct sl_secret_value *v = NULL;

	if (start_request(in, r) < 0 || check_host(in, r) < 0 || decide_request(in, &inj, &v) < 0 ||
	    check_allowed_head(in, r, inj) < 0 || check_body_and_upgrade(in, r) < 0)
		return;
	if (build_upstream_head(in, r, c->path, inj, v) < 0) {
		conn_close(c);
		return;
	}
	memmove(in->cbuf, in->cbuf + r->head_len, in->clen - r->head_len);
	in->clen -= r->head_len;
	in->head_started = false;
	conn_arm_timer(c, c->gw->cfg.idle_timeout_ms);
	/* The audit names the secret only once it goes with the request. */
	if (inj)
		c->credential = c->pol->p->secrets[inj->secret].name;
	in->st = I_UPSTREAM;
	if (c->dec.rule && c->dec.rule->approve) {
		hold_for_approval(in);
		return;
	}
	insp_get_upstream(in, false);
}
