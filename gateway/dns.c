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
 *
 * This file is the server's sockets, the top of its two layers: UDP, TCP
 * (RFC 7766: framing, pipelining, idle limit), sending replies, setup and
 * teardown. Each message goes down to dns-answer.c, which answers it and
 * sends through d->send (send_reply here); dns-internal.h has the map.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns-internal.h"
#include "dns-map.h"
#include "macro.h"

#define DNS_MAX_TCP 64        /* TCP connections open at once */
#define DNS_MAX_UDP_SENDS 256 /* replies queued behind a full socket buffer */
#define DNS_TCP_PIPELINE 16   /* queries and replies in flight per connection */
#define DNS_TCP_IDLE_MS 10000 /* RFC 7766 6.2.3 suggests seconds, not minutes */
#define DNS_MAP_MAX 4096

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
		dns_audit(d, client, NULL, sl_audit_now_ms(), uv_now(d->gw->loop), sent, false,
			  "malformed", NULL);
		return;
	}
	dns_handle_message(d, NULL, addr, client, d->udp_buf, (size_t)nread);
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
			dns_query_cancel(dq);
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
			dns_audit(c->d, c->client, NULL, sl_audit_now_ms(), uv_now(c->d->gw->loop),
				  -1, false, "malformed", NULL);
			tcp_close(c);
			return;
		}
		if (c->have - off < 2 + len)
			break;
		dns_handle_message(c->d, c, NULL, c->client, c->buf + off + 2, len);
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
	d->send = send_reply;
	d->answered = tcp_resume;
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
		dns_query_cancel(d->queries);
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
