/* SPDX-License-Identifier: MIT */
/*
 * sluice probe: the network. Every attempt here is a socket that waits for
 * an answer; they all run at once in one poll loop, so a fence that drops
 * silently costs one timeout, not one per attempt.
 *
 * How an attempt is judged:
 *  - TCP: connecting is not enough inside sluice, whose nftables capture
 *    redirects every TCP connection to its own gateway. The probe sends an
 *    HTTP request; the gateway refuses a denied one with an HTTP answer
 *    whose body starts "sluice: ". Anything else that connected (an answer
 *    of another server, a close without one, silence) got out.
 *  - UDP and ICMP: with IP_RECVERR the ICMP error that stops a datagram
 *    names who sent it. From this host (sluice's fence rejects with
 *    admin-prohibited) or the host end: blocked. From the target or a
 *    router beyond: it left. Silence counts as an escape too: sluice's
 *    fence always rejects, and a silent drop cannot be told from a datagram
 *    that left, so the probe never reports a pass it cannot show.
 *  - DNS (over UDP, and over TCP to the outside host): port 53 anywhere
 *    leads to sluice's resolver, which answers a denied name NXDOMAIN and
 *    never forwards it. An answer with records (for a name that exists,
 *    example.com by default) came from elsewhere; so did silence, or a TCP
 *    connection that closed without an answer.
 *  - TARGETs go through the proxy and are reported allowed or denied,
 *    which is information, not an escape; the metadata address through
 *    the proxy is an escape unless sluice refuses it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "probe-net.h"

#define TARGET_FACTOR 3 /* TARGETs and the proxy wait this much longer */
#define UDP_PORT 9999	/* nothing listens there: the canary's ICMP says so */

static const uint16_t host_ports[] = { 22, 25, 80, 443, 2222, 5432, 6379, 8080 };

void sl_probe_finish(struct sl_probe_att *a, enum sl_probe_result r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->detail, sizeof(a->detail), fmt, ap);
	va_end(ap);
	a->result = r;
	a->done = true;
	if (a->fd >= 0) {
		close(a->fd);
		a->fd = -1;
	}
}

static struct sl_probe_att *add(struct sl_probe_batch *b, const char *kind,
				enum sl_probe_att_type type, const struct sockaddr *to,
				socklen_t to_len)
{
	struct sl_probe_att *a;

	if (b->n >= ELEMENTSOF(b->a))
		return NULL;
	a = &b->a[b->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->type = type;
	a->fd = -1;
	memcpy(&a->to, to, to_len);
	a->to_len = to_len;
	sl_probe_fmt_addr(to, a->target, sizeof(a->target));
	return a;
}

/* A line for something that cannot be tried, in its place in the report. */
static void add_skipped(struct sl_probe_batch *b, const char *kind, const char *target,
			const char *why)
{
	struct sockaddr_storage none = { .ss_family = AF_UNSPEC };
	struct sl_probe_att *a = add(b, kind, SL_ATT_TCP, (struct sockaddr *)&none, sizeof(none));

	if (!a)
		return;
	snprintf(a->target, sizeof(a->target), "%s", target);
	sl_probe_finish(a, SL_PROBE_SKIPPED, "%s", why);
}

/* ---- what came back ---- */

/* sluice's own refusal: an HTTP answer whose body is "sluice: REASON".
 * Writes the status line and the reason into `out`. */
static bool sluice_refusal(const struct sl_probe_att *a, char *out, size_t outlen)
{
	const char *body, *end = a->buf + a->len;
	size_t rl;

	if (a->len < 12 || memcmp(a->buf, "HTTP/1.", 7))
		return false;
	body = memmem(a->buf, a->len, "\r\n\r\n", 4);
	if (!body || (size_t)(end - body) < 4 + 8 || memcmp(body + 4, "sluice: ", 8))
		return false;
	body += 4;
	for (rl = 0; body + rl < end && body[rl] != '\r' && body[rl] != '\n' && rl < 200; rl++)
		;
	snprintf(out, outlen, "%.3s %.*s", a->buf + 9, (int)rl, body);
	return true;
}

/* The status of an HTTP answer, 0 when it is not one (yet). */
static int http_status(const struct sl_probe_att *a)
{
	if (a->len < 12 || memcmp(a->buf, "HTTP/1.", 7) || a->buf[8] != ' ')
		return 0;
	if (a->buf[9] < '1' || a->buf[9] > '5' || a->buf[10] < '0' || a->buf[10] > '9' ||
	    a->buf[11] < '0' || a->buf[11] > '9')
		return 0;
	return (a->buf[9] - '0') * 100 + (a->buf[10] - '0') * 10 + (a->buf[11] - '0');
}

static void first_line(const struct sl_probe_att *a, char *out, size_t outlen)
{
	size_t n = 0;

	while (n < a->len && n < 60 && a->buf[n] != '\r' && a->buf[n] != '\n')
		n++;
	snprintf(out, outlen, "%.*s", (int)n, a->buf);
}

/* A stream attempt is over (the peer closed, the buffer is full, the time
 * is up or `why` names an error): decide what it was. */
static void judge_stream(struct sl_probe_att *a, const char *why)
{
	char s[256], line[64];
	int status = http_status(a);

	if (sluice_refusal(a, s, sizeof(s))) {
		if (a->type == SL_ATT_PROXY && !a->escape_if_allowed)
			sl_probe_finish(a, SL_PROBE_DENIED, "%s", s);
		else if (a->type == SL_ATT_PROXY)
			sl_probe_finish(a, SL_PROBE_BLOCKED, "refused by the proxy: %s", s);
		else
			sl_probe_finish(a, SL_PROBE_BLOCKED, "captured, refused by the gateway: %s",
					s);
		return;
	}
	first_line(a, line, sizeof(line));
	if (a->type == SL_ATT_PROXY && !a->escape_if_allowed) {
		if (status)
			sl_probe_finish(a, SL_PROBE_ALLOWED, "%s", line);
		else if (a->len)
			sl_probe_finish(a, SL_PROBE_ALLOWED, "answered \"%s\"", line);
		else
			sl_probe_finish(a, SL_PROBE_SKIPPED, "no answer from the proxy (%s)", why);
		return;
	}
	if (a->type == SL_ATT_PROXY) {
		if (a->len)
			sl_probe_finish(a, SL_PROBE_ESCAPED, "the proxy fetched it: \"%s\"", line);
		else
			sl_probe_finish(a, SL_PROBE_ESCAPED, "no refusal from the proxy (%s)", why);
		return;
	}
	if (a->len)
		sl_probe_finish(a, SL_PROBE_ESCAPED, "connected; answered \"%s\"", line);
	else
		sl_probe_finish(a, SL_PROBE_ESCAPED, "connected; %s, with no answer of sluice's",
				why);
}

/* DNS over TCP: an answer is whole when its two-byte length is. Without
 * one (`why` says what ended it), what connected was not sluice's
 * resolver, which answers every query. */
static void judge_dns_stream(struct sl_probe_batch *b, struct sl_probe_att *a, const char *why)
{
	size_t msglen = a->len >= 2 ? ((size_t)(uint8_t)a->buf[0] << 8 | (uint8_t)a->buf[1]) : 0;

	if (a->len >= 2 && a->len - 2 >= msglen)
		sl_probe_judge_dns(a, (const uint8_t *)a->buf + 2, msglen, b->p->denied_name);
	else if (why)
		sl_probe_finish(a, SL_PROBE_ESCAPED, "connected; %s, with no DNS answer", why);
}

static void stream_readable(struct sl_probe_batch *b, struct sl_probe_att *a)
{
	ssize_t n = recv(a->fd, a->buf + a->len, sizeof(a->buf) - 1 - a->len, MSG_DONTWAIT);
	const char *end = NULL;
	int status;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0)
		end = strerror(errno);
	else if (n == 0)
		end = "closed";
	else
		a->len += (size_t)n;
	a->buf[a->len] = '\0';
	if (a->type == SL_ATT_DNS_TCP) {
		if (!end && a->len == sizeof(a->buf) - 1)
			end = "an answer too long";
		judge_dns_stream(b, a, end);
		return;
	}
	if (end) {
		judge_stream(a, end);
		return;
	}
	/* sluice's refusals are never 2xx or 3xx: such a head is enough.
	 * Otherwise wait for the body (sluice closes after it). */
	status = http_status(a);
	if (a->len == sizeof(a->buf) - 1 ||
	    (status >= 200 && status < 400 && memmem(a->buf, a->len, "\r\n\r\n", 4)))
		judge_stream(a, "answered");
}

static void stream_connected(struct sl_probe_att *a)
{
	int e = 0;
	socklen_t l = sizeof(e);

	if (getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
		e = errno;
	if (e) {
		if (a->type == SL_ATT_PROXY && !a->escape_if_allowed)
			sl_probe_finish(a, SL_PROBE_SKIPPED, "connect to the proxy: %s",
					strerror(e));
		else if (a->type == SL_ATT_PROXY)
			sl_probe_finish(a, SL_PROBE_BLOCKED, "connect to the proxy: %s",
					strerror(e));
		else
			sl_probe_finish(a, SL_PROBE_BLOCKED, "connect: %s", strerror(e));
		return;
	}
	a->connecting = false;
	/* A few hundred bytes to a fresh socket: the send buffer takes them. */
	if (send(a->fd, a->req, a->req_len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)a->req_len)
		sl_probe_finish(a, a->type != SL_ATT_PROXY ? SL_PROBE_ESCAPED : SL_PROBE_SKIPPED,
				"connected; send: %s", strerror(errno));
}

/* ---- starting attempts ---- */

static bool is_stream(const struct sl_probe_att *a)
{
	return a->type == SL_ATT_TCP || a->type == SL_ATT_PROXY || a->type == SL_ATT_DNS_TCP;
}

/* A non-blocking connect; the request goes once it is connected. */
static void start_stream(struct sl_probe_att *a, const char *name)
{
	if (a->type == SL_ATT_DNS_TCP) {
		a->req_len = sl_probe_dns_query(name, a->id, a->req + 2, sizeof(a->req) - 2);
		a->req[0] = (char)(a->req_len >> 8);
		a->req[1] = (char)a->req_len;
		a->req_len += 2;
	}
	a->fd = socket(a->to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "socket: %s", strerror(errno));
		return;
	}
	a->connecting = true;
	if (connect(a->fd, (struct sockaddr *)&a->to, a->to_len) == 0)
		stream_connected(a);
	else if (errno != EINPROGRESS)
		sl_probe_finish(a,
				a->type == SL_ATT_PROXY && !a->escape_if_allowed ? SL_PROBE_SKIPPED
										 : SL_PROBE_BLOCKED,
				"connect: %s", strerror(errno));
}

/* A connected datagram socket with IP_RECVERR, and the datagram sent. */
static void start_dgram(struct sl_probe_batch *b, struct sl_probe_att *a)
{
	int family = a->to.ss_family, one = 1;

	if (a->type == SL_ATT_PING) {
		a->fd = sl_probe_open_ping(a, family);
		if (a->fd < 0)
			return; /* finished: no way to send ICMP */
		sl_probe_echo_request(a, family);
	} else {
		a->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (a->fd < 0) {
			sl_probe_finish(a, SL_PROBE_BLOCKED, "socket: %s", strerror(errno));
			return;
		}
		if (a->type == SL_ATT_DNS)
			a->req_len = sl_probe_dns_query(b->p->denied_name, a->id, a->req,
							sizeof(a->req));
		else
			a->req_len = (size_t)snprintf(a->req, sizeof(a->req), "sluice-probe %d",
						      (int)getpid());
	}
	if (family == AF_INET)
		setsockopt(a->fd, SOL_IP, IP_RECVERR, &one, sizeof(one));
	else
		setsockopt(a->fd, SOL_IPV6, IPV6_RECVERR, &one, sizeof(one));
	if (connect(a->fd, (struct sockaddr *)&a->to, a->to_len) < 0) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "connect: %s", strerror(errno));
		return;
	}
	if (send(a->fd, a->req, a->req_len, MSG_DONTWAIT) < 0) {
		if (errno == EHOSTUNREACH || errno == ECONNREFUSED || errno == ENETUNREACH)
			sl_probe_judge_icmp_error(b, a); /* an error queued at once: who sent it */
		else
			sl_probe_finish(a, SL_PROBE_BLOCKED, "send: %s", strerror(errno));
	}
}

static void start(struct sl_probe_batch *b, struct sl_probe_att *a)
{
	struct sl_probe *p = b->p;
	int wait = a->type == SL_ATT_PROXY ? p->timeout_ms * TARGET_FACTOR : p->timeout_ms;

	wait = sl_probe_wait_ms(p, wait);
	if (wait <= 0) {
		sl_probe_finish(a, SL_PROBE_SKIPPED, "out of time (the whole probe is bounded)");
		return;
	}
	a->wait_ms = wait;
	a->until = sl_probe_now_ms() + (uint64_t)wait;
	a->id = (uint16_t)(getpid() ^ (uintptr_t)a);
	if (is_stream(a))
		start_stream(a, p->denied_name);
	else
		start_dgram(b, a);
}

static void readable(struct sl_probe_batch *b, struct sl_probe_att *a, short revents)
{
	uint8_t d[1500];
	ssize_t n;

	if (is_stream(a)) {
		if (a->connecting)
			stream_connected(a);
		else
			stream_readable(b, a);
		return;
	}
	if (revents & POLLERR) {
		sl_probe_judge_icmp_error(b, a);
		return;
	}
	n = recv(a->fd, d, sizeof(d), MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			sl_probe_judge_icmp_error(b, a);
		return;
	}
	switch (a->type) {
	case SL_ATT_DNS:
		sl_probe_judge_dns(a, d, (size_t)n, b->p->denied_name);
		return;
	case SL_ATT_PING:
		if (sl_probe_is_echo_reply(a, d, (size_t)n))
			sl_probe_finish(a, SL_PROBE_ESCAPED, "echo reply from %s%s", a->target,
					a->raw ? " (raw socket)" : "");
		return; /* a raw socket reads other ICMP too: keep waiting */
	case SL_ATT_UDP:
		sl_probe_finish(a, SL_PROBE_ESCAPED, "answered with %zd bytes", n);
		return;
	case SL_ATT_TCP:
	case SL_ATT_PROXY:
	case SL_ATT_DNS_TCP:
		break;
	}
}

static void timed_out(struct sl_probe_batch *b, struct sl_probe_att *a)
{
	char why[64];

	snprintf(why, sizeof(why), "no answer in %d ms", a->wait_ms);
	switch (a->type) {
	case SL_ATT_TCP:
	case SL_ATT_PROXY:
		if (a->connecting && a->type == SL_ATT_PROXY && !a->escape_if_allowed)
			sl_probe_finish(a, SL_PROBE_SKIPPED, "connect to the proxy: %s", why);
		else if (a->connecting)
			sl_probe_finish(a, SL_PROBE_BLOCKED, "connect: %s (dropped)", why);
		else
			judge_stream(a, why);
		return;
	case SL_ATT_DNS_TCP:
		if (a->connecting)
			sl_probe_finish(a, SL_PROBE_BLOCKED, "connect: %s (dropped)", why);
		else
			judge_dns_stream(b, a, why);
		return;
	case SL_ATT_DNS:
		if (a->foreign)
			sl_probe_finish(a, SL_PROBE_ESCAPED,
					"%s and no rejection: the query left (or a "
					"silent drop, which sluice's fence is not)",
					why);
		else
			sl_probe_finish(a, SL_PROBE_BLOCKED, "%s (no address)", why);
		return;
	case SL_ATT_UDP:
	case SL_ATT_PING:
		sl_probe_finish(a, SL_PROBE_ESCAPED,
				"sent; %s and no rejection: nothing here stopped it", why);
		return;
	}
}

static void run(struct sl_probe_batch *b)
{
	struct pollfd pfd[SL_PROBE_MAX_ATTEMPTS];
	size_t idx[SL_PROBE_MAX_ATTEMPTS];

	for (size_t i = 0; i < b->n; i++)
		if (!b->a[i].done)
			start(b, &b->a[i]);
	/* Bounded: every attempt ends by its own deadline. */
	for (;;) {
		uint64_t now = sl_probe_now_ms(), next = UINT64_MAX;
		size_t k = 0;
		int r;

		for (size_t i = 0; i < b->n; i++) {
			struct sl_probe_att *a = &b->a[i];

			if (a->done)
				continue;
			if (a->until <= now) {
				timed_out(b, a);
				continue;
			}
			if (a->until < next)
				next = a->until;
			pfd[k] = (struct pollfd){ .fd = a->fd,
						  .events = a->connecting ? POLLOUT : POLLIN };
			idx[k++] = i;
		}
		if (!k)
			break;
		r = poll(pfd, k, (int)(next - now));
		if (r < 0 && errno != EINTR)
			break;
		for (size_t j = 0; r > 0 && j < k; j++)
			if (pfd[j].revents)
				readable(b, &b->a[idx[j]], pfd[j].revents);
	}
	for (size_t i = 0; i < b->n; i++) {
		struct sl_probe_att *a = &b->a[i];

		if (!a->done)
			sl_probe_finish(a, SL_PROBE_SKIPPED, "the probe could not wait (%s)",
					strerror(errno));
		sl_probe_report(b->p, a->result, a->kind, a->target, "%s", a->detail);
	}
}

/* ---- what to try ---- */

static void add_tcp(struct sl_probe_batch *b, const char *kind, int family, const void *addr,
		    uint16_t port, const char *path)
{
	struct sockaddr_storage ss;
	socklen_t len = sl_probe_make_addr(&ss, family, addr, port);
	char host[INET6_ADDRSTRLEN + 2];
	struct sl_probe_att *a = add(b, kind, SL_ATT_TCP, (struct sockaddr *)&ss, len);

	if (!a)
		return;
	sl_probe_fmt_addr((struct sockaddr *)&ss, host, sizeof(host));
	a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
				      "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sluice-probe\r\n"
				      "Connection: close\r\n\r\n",
				      path, host);
}

static struct sl_probe_att *add_to(struct sl_probe_batch *b, const char *kind,
				   enum sl_probe_att_type type, int family, const void *addr,
				   uint16_t port, bool foreign)
{
	struct sockaddr_storage ss;
	socklen_t len = sl_probe_make_addr(&ss, family, addr, port);
	struct sl_probe_att *a = add(b, kind, type, (struct sockaddr *)&ss, len);

	if (a)
		a->foreign = foreign;
	return a;
}

/* A TARGET: HOST[:PORT], http://HOST[:PORT][/PATH] or https://HOST[:PORT]. */
static void add_target(struct sl_probe_batch *b, const char *t)
{
	char host[256], path[256] = "/";
	const char *h = t, *end;
	bool http = false;
	unsigned port = 443;
	struct sl_probe_att *a;
	size_t n;

	if (!strncmp(t, "http://", 7)) {
		h = t + 7;
		http = true;
		port = 80;
	} else if (!strncmp(t, "https://", 8)) {
		h = t + 8;
	}
	n = strcspn(h, "/");
	if (h[n] == '/')
		snprintf(path, sizeof(path), "%s", h + n);
	if (n >= sizeof(host))
		n = sizeof(host) - 1;
	memcpy(host, h, n);
	host[n] = '\0';
	end = host[0] == '[' ? strchr(host, ']') : host;
	end = end ? strrchr(end, ':') : NULL;
	if (end) {
		port = (unsigned)strtoul(end + 1, NULL, 10);
		host[end - host] = '\0';
	}
	if (!b->p->proxy_len) {
		add_skipped(b, "target", t, "no HTTP_PROXY here: run it inside sluice run");
		return;
	}
	a = add(b, "target", SL_ATT_PROXY, (struct sockaddr *)&b->p->proxy, b->p->proxy_len);
	if (!a)
		return;
	snprintf(a->target, sizeof(a->target), "%s", t);
	if (http || port == 80)
		a->req_len =
		    (size_t)snprintf(a->req, sizeof(a->req),
				     "GET http://%s:%u%s HTTP/1.1\r\nHost: %s\r\n"
				     "User-Agent: sluice-probe\r\nConnection: close\r\n\r\n",
				     host, port, path, host);
	else
		a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
					      "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n"
					      "User-Agent: sluice-probe\r\n\r\n",
					      host, port, host, port);
	if (a->req_len >= sizeof(a->req))
		sl_probe_finish(a, SL_PROBE_SKIPPED, "too long a target");
}

static const uint8_t test_net2[4] = { 198, 51, 100, 99 };

/* Through the proxy, which must refuse a link-local address. */
static void add_metadata_via_proxy(struct sl_probe_batch *b)
{
	struct sl_probe_att *a =
		add(b, "metadata", SL_ATT_PROXY, (struct sockaddr *)&b->p->proxy, b->p->proxy_len);

	if (!a)
		return;
	a->escape_if_allowed = true;
	snprintf(a->target, sizeof(a->target), "http://169.254.169.254/ (proxy)");
	a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
				      "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n"
				      "Host: 169.254.169.254\r\nUser-Agent: sluice-probe\r\n"
				      "Connection: close\r\n\r\n");
}

static void plan_streams(struct sl_probe_batch *b)
{
	static const uint8_t metadata[4] = { 169, 254, 169, 254 };
	struct sl_probe *p = b->p;

	if (sl_probe_wanted(p, "tcp4")) {
		add_tcp(b, "tcp4", AF_INET, &p->outside4, 80, "/");
		add_tcp(b, "tcp4", AF_INET, &p->outside4, 443, "/");
		add_tcp(b, "tcp4", AF_INET, &p->outside4, 22, "/");
		add_tcp(b, "tcp4", AF_INET, test_net2, 80, "/");
	}
	if (sl_probe_wanted(p, "tcp6")) {
		add_tcp(b, "tcp6", AF_INET6, &p->outside6, 80, "/");
		add_tcp(b, "tcp6", AF_INET6, &p->outside6, 443, "/");
	}
	if (sl_probe_wanted(p, "metadata")) {
		add_tcp(b, "metadata", AF_INET, metadata, 80, "/latest/meta-data/");
		if (p->proxy_len)
			add_metadata_via_proxy(b);
	}
	if (sl_probe_wanted(p, "host-port")) {
		if (p->have_host_end)
			for (size_t i = 0; i < ELEMENTSOF(host_ports); i++)
				add_tcp(b, "host-port", AF_INET, &p->host_end, host_ports[i], "/");
		else
			add_skipped(b, "host-port", "-",
				    "no HTTP_PROXY and no default route: no host end known");
	}
}

static void plan_datagrams(struct sl_probe_batch *b)
{
	const struct in_addr *o4 = &b->p->outside4;
	const struct in6_addr *o6 = &b->p->outside6;
	struct sl_probe *p = b->p;
	struct sockaddr_storage ss;
	struct sl_probe_att *tcp;
	socklen_t len;

	if (sl_probe_wanted(p, "udp4"))
		add_to(b, "udp4", SL_ATT_UDP, AF_INET, o4, UDP_PORT, false);
	if (sl_probe_wanted(p, "udp6"))
		add_to(b, "udp6", SL_ATT_UDP, AF_INET6, o6, UDP_PORT, false);
	if (sl_probe_wanted(p, "icmp4"))
		add_to(b, "icmp4", SL_ATT_PING, AF_INET, o4, 0, false);
	if (sl_probe_wanted(p, "icmp6"))
		add_to(b, "icmp6", SL_ATT_PING, AF_INET6, o6, 0, false);
	if (sl_probe_wanted(p, "dns-foreign")) {
		add_to(b, "dns-foreign", SL_ATT_DNS, AF_INET, o4, 53, true);
		add_to(b, "dns-foreign", SL_ATT_DNS, AF_INET, test_net2, 53, true);
		tcp = add_to(b, "dns-foreign", SL_ATT_DNS_TCP, AF_INET, o4, 53, true);
		if (tcp)
			strcat(tcp->target, " (tcp)"); /* an address: room to spare */
		add_to(b, "dns-foreign", SL_ATT_DNS, AF_INET6, o6, 53, true);
	}
	if (sl_probe_wanted(p, "dns-denied")) {
		len = sl_probe_resolv_conf(&ss);
		if (len)
			add(b, "dns-denied", SL_ATT_DNS, (struct sockaddr *)&ss, len);
		else
			add_skipped(b, "dns-denied", "/etc/resolv.conf", "no nameserver in it");
	}
}

void sl_probe_net(struct sl_probe *p)
{
	_cleanup_free_ struct sl_probe_batch *b = calloc(1, sizeof(*b));

	if (!b) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "net", "-", "out of memory");
		return;
	}
	b->p = p;
	if (getifaddrs(&b->ifs) < 0)
		b->ifs = NULL;
	plan_streams(b);
	plan_datagrams(b);
	/* TARGETs were asked for by name: --only does not filter them. */
	for (size_t i = 0; i < p->n_targets; i++)
		add_target(b, p->targets[i]);
	run(b);
	if (b->ifs)
		freeifaddrs(b->ifs);
}
