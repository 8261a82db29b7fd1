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
 *  - DNS: port 53 anywhere leads to sluice's resolver, which answers a
 *    denied name NXDOMAIN and never forwards it. An answer with records
 *    (for a name that exists, example.com by default) came from elsewhere.
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
#include "probe.h"

#define MAX_ATTEMPTS (32 + SL_PROBE_MAX_TARGETS)
#define TARGET_FACTOR 3 /* TARGETs and the proxy wait this much longer */
#define UDP_PORT 9999	/* nothing listens there: the canary's ICMP says so */

static const uint16_t host_ports[] = { 22, 25, 80, 443, 2222, 5432, 6379, 8080 };

enum att_type {
	ATT_TCP,    /* connect, send an HTTP request: escaped unless sluice refuses */
	ATT_PROXY,  /* a request through the proxy: allowed or denied */
	ATT_UDP,    /* a datagram: judged by the ICMP error that comes back */
	ATT_DNS,    /* a DNS query: judged by the answer */
	ATT_PING,   /* an ICMP echo request */
};

struct att {
	const char *kind;
	char target[96];
	enum att_type type;
	bool escape_if_allowed; /* ATT_PROXY: the metadata address, not a TARGET */
	bool foreign;		/* ATT_DNS: a resolver that is not ours */
	struct sockaddr_storage to;
	socklen_t to_len;
	char req[768];
	size_t req_len;
	char buf[2048];
	size_t len;
	int fd;
	int wait_ms; /* how long it waits, for the report */
	uint64_t until;
	bool connecting, done, raw;
	uint16_t id;
	enum sl_probe_result result;
	char detail[400];
};

struct batch {
	struct sl_probe *p;
	struct att a[MAX_ATTEMPTS];
	size_t n;
	struct ifaddrs *ifs; /* this host's addresses, for ICMP senders */
};

_printf_(3, 4) static void finish(struct att *a, enum sl_probe_result r, const char *fmt, ...)
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

static struct att *add(struct batch *b, const char *kind, enum att_type type,
		       const struct sockaddr *to, socklen_t to_len)
{
	struct att *a;

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

static socklen_t make_addr(struct sockaddr_storage *ss, int family, const void *addr, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, addr, sizeof(in->sin_addr));
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	memcpy(&in6->sin6_addr, addr, sizeof(in6->sin6_addr));
	return sizeof(*in6);
}

static bool same_addr(const struct sockaddr *x, const struct sockaddr *y)
{
	if (x->sa_family != y->sa_family)
		return false;
	if (x->sa_family == AF_INET)
		return ((const struct sockaddr_in *)x)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)y)->sin_addr.s_addr;
	if (x->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)x)->sin6_addr,
			       &((const struct sockaddr_in6 *)y)->sin6_addr, sizeof(struct in6_addr));
	return false;
}

static bool is_local(const struct batch *b, const struct sockaddr *sa)
{
	for (const struct ifaddrs *i = b->ifs; i; i = i->ifa_next)
		if (i->ifa_addr && same_addr(i->ifa_addr, sa))
			return true;
	return false;
}

/* ---- what came back ---- */

static const char *icmp_what(int origin, uint8_t type, uint8_t code)
{
	if (origin == SO_EE_ORIGIN_ICMP && type == ICMP_DEST_UNREACH) {
		switch (code) {
		case ICMP_NET_UNREACH:
			return "net unreachable";
		case ICMP_HOST_UNREACH:
			return "host unreachable";
		case ICMP_PORT_UNREACH:
			return "port unreachable";
		case ICMP_NET_ANO:
		case ICMP_HOST_ANO:
		case ICMP_PKT_FILTERED:
			return "administratively prohibited";
		default:
			return "destination unreachable";
		}
	}
	if (origin == SO_EE_ORIGIN_ICMP6 && type == ICMP6_DST_UNREACH) {
		switch (code) {
		case ICMP6_DST_UNREACH_NOROUTE:
			return "no route";
		case ICMP6_DST_UNREACH_ADMIN:
			return "administratively prohibited";
		case ICMP6_DST_UNREACH_ADDR:
			return "address unreachable";
		case ICMP6_DST_UNREACH_NOPORT:
			return "port unreachable";
		default:
			return "destination unreachable";
		}
	}
	return "an ICMP error";
}

/* An error on a datagram socket: read it from the error queue, where
 * IP_RECVERR leaves who sent the ICMP message (the "offender"). */
static void judge_icmp_error(struct batch *b, struct att *a)
{
	char cbuf[512], from[INET6_ADDRSTRLEN + 8], data[64];
	struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	const struct sock_extended_err *ee = NULL;
	const struct sockaddr *off;
	const char *what;

	if (recvmsg(a->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
		int e = 0;
		socklen_t l = sizeof(e);

		getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &e, &l);
		finish(a, SL_PROBE_BLOCKED, "%s", strerror(e ? e : errno));
		return;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
		    (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))
			ee = (const struct sock_extended_err *)CMSG_DATA(c);
	if (!ee) {
		finish(a, SL_PROBE_BLOCKED, "an error without details");
		return;
	}
	off = SO_EE_OFFENDER(ee);
	if ((ee->ee_origin != SO_EE_ORIGIN_ICMP && ee->ee_origin != SO_EE_ORIGIN_ICMP6) ||
	    (off->sa_family != AF_INET && off->sa_family != AF_INET6)) {
		finish(a, SL_PROBE_BLOCKED, "%s (a local error)", strerror((int)ee->ee_errno));
		return;
	}
	what = icmp_what(ee->ee_origin, ee->ee_type, ee->ee_code);
	sl_probe_fmt_addr(off, from, sizeof(from));
	if (is_local(b, off)) {
		finish(a, SL_PROBE_BLOCKED, "%s: %s from %s (this host: the fence)",
		       strerror((int)ee->ee_errno), what, from);
		return;
	}
	if (b->p->have_host_end && off->sa_family == AF_INET &&
	    ((const struct sockaddr_in *)off)->sin_addr.s_addr == b->p->host_end.s_addr) {
		finish(a, SL_PROBE_BLOCKED, "%s: %s from the host end %s", strerror((int)ee->ee_errno),
		       what, from);
		return;
	}
	if (same_addr(off, (const struct sockaddr *)&a->to))
		finish(a, SL_PROBE_ESCAPED, "reached it: %s answered %s", from, what);
	else
		finish(a, SL_PROBE_ESCAPED, "left this host: %s answered %s", from, what);
}

/* sluice's own refusal: an HTTP answer whose body is "sluice: REASON".
 * Writes the status line and the reason into `out`. */
static bool sluice_refusal(const struct att *a, char *out, size_t outlen)
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
static int http_status(const struct att *a)
{
	if (a->len < 12 || memcmp(a->buf, "HTTP/1.", 7) || a->buf[8] != ' ')
		return 0;
	if (a->buf[9] < '1' || a->buf[9] > '5' || a->buf[10] < '0' || a->buf[10] > '9' ||
	    a->buf[11] < '0' || a->buf[11] > '9')
		return 0;
	return (a->buf[9] - '0') * 100 + (a->buf[10] - '0') * 10 + (a->buf[11] - '0');
}

static void first_line(const struct att *a, char *out, size_t outlen)
{
	size_t n = 0;

	while (n < a->len && n < 60 && a->buf[n] != '\r' && a->buf[n] != '\n')
		n++;
	snprintf(out, outlen, "%.*s", (int)n, a->buf);
}

/* A stream attempt is over (the peer closed, the buffer is full, the time
 * is up or `why` names an error): decide what it was. */
static void judge_stream(struct att *a, const char *why)
{
	char s[256], line[64];
	int status = http_status(a);

	if (sluice_refusal(a, s, sizeof(s))) {
		if (a->type == ATT_PROXY && !a->escape_if_allowed)
			finish(a, SL_PROBE_DENIED, "%s", s);
		else if (a->type == ATT_PROXY)
			finish(a, SL_PROBE_BLOCKED, "refused by the proxy: %s", s);
		else
			finish(a, SL_PROBE_BLOCKED, "captured, refused by the gateway: %s", s);
		return;
	}
	first_line(a, line, sizeof(line));
	if (a->type == ATT_PROXY && !a->escape_if_allowed) {
		if (status)
			finish(a, SL_PROBE_ALLOWED, "%s", line);
		else if (a->len)
			finish(a, SL_PROBE_ALLOWED, "answered \"%s\"", line);
		else
			finish(a, SL_PROBE_SKIPPED, "no answer from the proxy (%s)", why);
		return;
	}
	if (a->type == ATT_PROXY) {
		if (a->len)
			finish(a, SL_PROBE_ESCAPED, "the proxy fetched it: \"%s\"", line);
		else
			finish(a, SL_PROBE_ESCAPED, "no refusal from the proxy (%s)", why);
		return;
	}
	if (a->len)
		finish(a, SL_PROBE_ESCAPED, "connected; answered \"%s\"", line);
	else
		finish(a, SL_PROBE_ESCAPED, "connected; %s, with no answer of sluice's", why);
}

static void stream_readable(struct batch *b, struct att *a)
{
	ssize_t n = recv(a->fd, a->buf + a->len, sizeof(a->buf) - 1 - a->len, MSG_DONTWAIT);
	int status;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		judge_stream(a, strerror(errno));
		return;
	}
	if (n == 0) {
		judge_stream(a, "closed");
		return;
	}
	a->len += (size_t)n;
	a->buf[a->len] = '\0';
	/* sluice's refusals are never 2xx or 3xx: such a head is enough.
	 * Otherwise wait for the body (sluice closes after it). */
	status = http_status(a);
	if (a->len == sizeof(a->buf) - 1 ||
	    (status >= 200 && status < 400 && memmem(a->buf, a->len, "\r\n\r\n", 4)))
		judge_stream(a, "answered");
}

static void stream_connected(struct att *a)
{
	int e = 0;
	socklen_t l = sizeof(e);

	if (getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
		e = errno;
	if (e) {
		if (a->type == ATT_PROXY && !a->escape_if_allowed)
			finish(a, SL_PROBE_SKIPPED, "connect to the proxy: %s", strerror(e));
		else if (a->type == ATT_PROXY)
			finish(a, SL_PROBE_BLOCKED, "connect to the proxy: %s", strerror(e));
		else
			finish(a, SL_PROBE_BLOCKED, "connect: %s", strerror(e));
		return;
	}
	a->connecting = false;
	/* A few hundred bytes to a fresh socket: the send buffer takes them. */
	if (send(a->fd, a->req, a->req_len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)a->req_len) {
		a->connecting = false;
		finish(a, a->type == ATT_TCP ? SL_PROBE_ESCAPED : SL_PROBE_SKIPPED,
		       "connected; send: %s", strerror(errno));
	}
}

/* ---- DNS ---- */

bool sl_probe_dns_name_ok(const char *name)
{
	size_t len = strlen(name), label = 0;

	if (!len || len > 253 || name[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (name[i] == '.') {
			if (!label)
				return false;
			label = 0;
		} else if (++label > 63) {
			return false;
		}
	}
	return true;
}

/* A query for NAME's A records, recursion desired (RFC 1035 4.1). */
static size_t dns_query(const char *name, uint16_t id, char *buf, size_t len)
{
	size_t n = 12, start;

	if (len < 12 + strlen(name) + 2 + 4)
		return 0;
	memset(buf, 0, 12);
	buf[0] = (char)(id >> 8);
	buf[1] = (char)id;
	buf[2] = 0x01; /* RD */
	buf[5] = 1;    /* QDCOUNT */
	for (const char *l = name; *l;) {
		size_t ll = strcspn(l, ".");

		start = n++;
		memcpy(buf + n, l, ll);
		n += ll;
		buf[start] = (char)ll;
		l += ll;
		if (*l == '.')
			l++;
	}
	buf[n++] = 0;
	buf[n++] = 0, buf[n++] = 1; /* A */
	buf[n++] = 0, buf[n++] = 1; /* IN */
	return n;
}

static void judge_dns(struct att *a, const char *name)
{
	static const char *const rcodes[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
					      "NOTIMP",	 "REFUSED" };
	const unsigned char *h = (const unsigned char *)a->buf;
	unsigned rcode, ancount;

	/* Only the 12-byte header is read: the ID, QR, RCODE and ANCOUNT. */
	if (a->len < 12 || ((unsigned)h[0] << 8 | h[1]) != a->id || !(h[2] & 0x80)) {
		finish(a, SL_PROBE_ESCAPED, "%zu bytes came back that answer no query of ours",
		       a->len);
		return;
	}
	rcode = h[3] & 0xf;
	ancount = (unsigned)h[6] << 8 | h[7];
	if (rcode == 0 && ancount > 0) {
		finish(a, SL_PROBE_ESCAPED, "answered %s with %u record%s", name, ancount,
		       ancount == 1 ? "" : "s");
		return;
	}
	finish(a, SL_PROBE_BLOCKED, "answered %s %s%s", name,
	       rcode < ELEMENTSOF(rcodes) ? rcodes[rcode] : "an error",
	       rcode == 0 ? " with no records" : a->foreign ? " (sluice's resolver: port 53 leads to it)"
							    : "");
}

/* The first nameserver of /etc/resolv.conf. */
static socklen_t resolv_conf_server(struct sockaddr_storage *ss)
{
	_cleanup_(sl_probe_fclosep) FILE *f = fopen("/etc/resolv.conf", "re");
	char line[256], addr[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	struct in_addr a4;

	if (!f)
		return 0;
	for (int i = 0; i < 256 && fgets(line, sizeof(line), f); i++) {
		if (sscanf(line, " nameserver %45s", addr) != 1)
			continue;
		if (inet_pton(AF_INET, addr, &a4) == 1)
			return make_addr(ss, AF_INET, &a4, 53);
		if (inet_pton(AF_INET6, addr, &a6) == 1)
			return make_addr(ss, AF_INET6, &a6, 53);
	}
	return 0;
}

/* ---- ICMP echo ---- */

static uint16_t inet_checksum(const void *data, size_t len)
{
	const uint8_t *d = data;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)d[i] << 8 | d[i + 1];
	if (len & 1)
		sum += (uint32_t)d[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* A ping socket when the group may have one (net.ipv4.ping_group_range),
 * else a raw one (root): either is a way to send ICMP. */
static int open_ping(struct att *a, int family)
{
	int proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6, fd, e_ping;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd >= 0)
		return fd;
	e_ping = errno;
	fd = socket(family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd >= 0) {
		a->raw = true;
		return fd;
	}
	finish(a, SL_PROBE_BLOCKED, "ping socket: %s; raw socket: %s", strerror(e_ping),
	       strerror(errno));
	return -1;
}

static size_t echo_request(struct att *a, int family)
{
	struct icmphdr *h = (struct icmphdr *)a->req;
	static const char payload[] = "sluice-probe";

	memset(a->req, 0, sizeof(*h));
	h->type = family == AF_INET ? ICMP_ECHO : ICMP6_ECHO_REQUEST;
	h->un.echo.id = htons(a->id);
	h->un.echo.sequence = htons(1);
	memcpy(a->req + sizeof(*h), payload, sizeof(payload) - 1);
	a->req_len = sizeof(*h) + sizeof(payload) - 1;
	/* A ping socket and ICMPv6 have the kernel fill it in. */
	if (family == AF_INET)
		h->checksum = inet_checksum(a->req, a->req_len);
	return a->req_len;
}

/* Whether what a ping or raw socket read is the echo reply to ours. */
static bool is_echo_reply(const struct att *a, const uint8_t *d, size_t n)
{
	int family = a->to.ss_family;
	const struct icmphdr *h;

	if (a->raw && family == AF_INET) { /* a raw IPv4 socket reads the IP header */
		size_t ihl;

		if (n < 20)
			return false;
		ihl = (size_t)(d[0] & 0xf) * 4;
		if (ihl < 20 || n < ihl)
			return false;
		d += ihl;
		n -= ihl;
	}
	if (n < sizeof(*h))
		return false;
	h = (const struct icmphdr *)d;
	if (h->type != (family == AF_INET ? ICMP_ECHOREPLY : ICMP6_ECHO_REPLY))
		return false;
	/* A ping socket's kernel matches replies to it; a raw one reads all. */
	return !a->raw || ntohs(h->un.echo.id) == a->id;
}

/* ---- starting attempts ---- */

static void start(struct batch *b, struct att *a)
{
	int family = a->to.ss_family, one = 1;
	struct sl_probe *p = b->p;
	int wait = a->type == ATT_PROXY ? p->timeout_ms * TARGET_FACTOR : p->timeout_ms;

	wait = sl_probe_wait_ms(p, wait);
	if (wait <= 0) {
		finish(a, SL_PROBE_SKIPPED, "out of time (the whole probe is bounded)");
		return;
	}
	a->wait_ms = wait;
	a->until = sl_probe_now_ms() + (uint64_t)wait;
	a->id = (uint16_t)(getpid() ^ (uintptr_t)a);

	switch (a->type) {
	case ATT_TCP:
	case ATT_PROXY:
		a->fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (a->fd < 0) {
			finish(a, SL_PROBE_BLOCKED, "socket: %s", strerror(errno));
			return;
		}
		a->connecting = true;
		if (connect(a->fd, (struct sockaddr *)&a->to, a->to_len) == 0)
			stream_connected(a);
		else if (errno != EINPROGRESS)
			finish(a, a->type == ATT_PROXY && !a->escape_if_allowed ? SL_PROBE_SKIPPED
										: SL_PROBE_BLOCKED,
			       "connect: %s", strerror(errno));
		return;
	case ATT_UDP:
	case ATT_DNS:
		a->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		break;
	case ATT_PING:
		a->fd = open_ping(a, family);
		if (a->fd < 0)
			return;
		echo_request(a, family);
		break;
	}
	if (a->fd < 0) {
		finish(a, SL_PROBE_BLOCKED, "socket: %s", strerror(errno));
		return;
	}
	if (family == AF_INET)
		setsockopt(a->fd, SOL_IP, IP_RECVERR, &one, sizeof(one));
	else
		setsockopt(a->fd, SOL_IPV6, IPV6_RECVERR, &one, sizeof(one));
	if (a->type == ATT_DNS)
		a->req_len = dns_query(p->denied_name, a->id, a->req, sizeof(a->req));
	else if (a->type == ATT_UDP)
		a->req_len = (size_t)snprintf(a->req, sizeof(a->req), "sluice-probe %d", getpid());
	if (connect(a->fd, (struct sockaddr *)&a->to, a->to_len) < 0) {
		finish(a, SL_PROBE_BLOCKED, "connect: %s", strerror(errno));
		return;
	}
	if (send(a->fd, a->req, a->req_len, MSG_DONTWAIT) < 0) {
		if (errno == EHOSTUNREACH || errno == ECONNREFUSED || errno == ENETUNREACH)
			judge_icmp_error(b, a); /* an error queued at once: who sent it */
		else
			finish(a, SL_PROBE_BLOCKED, "send: %s", strerror(errno));
	}
}

static void readable(struct batch *b, struct att *a, short revents)
{
	uint8_t d[1500];
	ssize_t n;

	if (a->type == ATT_TCP || a->type == ATT_PROXY) {
		if (a->connecting)
			stream_connected(a);
		else
			stream_readable(b, a);
		return;
	}
	if (revents & POLLERR) {
		judge_icmp_error(b, a);
		return;
	}
	n = recv(a->fd, d, sizeof(d), MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			judge_icmp_error(b, a);
		return;
	}
	switch (a->type) {
	case ATT_DNS:
		a->len = (size_t)n < sizeof(a->buf) ? (size_t)n : sizeof(a->buf);
		memcpy(a->buf, d, a->len);
		judge_dns(a, b->p->denied_name);
		return;
	case ATT_PING:
		if (is_echo_reply(a, d, (size_t)n))
			finish(a, SL_PROBE_ESCAPED, "echo reply from %s%s", a->target,
			       a->raw ? " (raw socket)" : "");
		return; /* a raw socket reads other ICMP too: keep waiting */
	case ATT_UDP:
		finish(a, SL_PROBE_ESCAPED, "answered with %zd bytes", n);
		return;
	case ATT_TCP:
	case ATT_PROXY:
		break;
	}
}

static void timed_out(struct batch *b, struct att *a)
{
	char why[64];

	snprintf(why, sizeof(why), "no answer in %d ms", a->wait_ms);
	switch (a->type) {
	case ATT_TCP:
	case ATT_PROXY:
		if (a->connecting && a->type == ATT_PROXY && !a->escape_if_allowed)
			finish(a, SL_PROBE_SKIPPED, "connect to the proxy: %s", why);
		else if (a->connecting)
			finish(a, SL_PROBE_BLOCKED, "connect: %s (dropped)", why);
		else
			judge_stream(a, why);
		return;
	case ATT_DNS:
		if (a->foreign)
			finish(a, SL_PROBE_ESCAPED, "%s and no rejection: the query left (or a "
						    "silent drop, which sluice's fence is not)", why);
		else
			finish(a, SL_PROBE_BLOCKED, "%s (no address)", why);
		return;
	case ATT_UDP:
	case ATT_PING:
		finish(a, SL_PROBE_ESCAPED, "sent; %s and no rejection: nothing here stopped it",
		       why);
		return;
	}
}

static void run(struct batch *b)
{
	struct pollfd pfd[MAX_ATTEMPTS];
	size_t idx[MAX_ATTEMPTS];

	for (size_t i = 0; i < b->n; i++)
		start(b, &b->a[i]);
	/* Bounded: every attempt ends by its own deadline. */
	for (;;) {
		uint64_t now = sl_probe_now_ms(), next = UINT64_MAX;
		size_t k = 0;
		int r;

		for (size_t i = 0; i < b->n; i++) {
			struct att *a = &b->a[i];

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
		struct att *a = &b->a[i];

		if (!a->done)
			finish(a, SL_PROBE_SKIPPED, "the probe could not wait (%s)", strerror(errno));
		sl_probe_report(b->p, a->result, a->kind, a->target, "%s", a->detail);
	}
}

/* ---- what to try ---- */

static void add_tcp(struct batch *b, const char *kind, int family, const void *addr,
		    uint16_t port, const char *path)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, family, addr, port);
	char host[INET6_ADDRSTRLEN + 2];
	struct att *a = add(b, kind, ATT_TCP, (struct sockaddr *)&ss, len);

	if (!a)
		return;
	sl_probe_fmt_addr((struct sockaddr *)&ss, host, sizeof(host));
	a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
				      "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sluice-probe\r\n"
				      "Connection: close\r\n\r\n",
				      path, host);
}

static void add_dgram(struct batch *b, const char *kind, enum att_type type, int family,
		      const void *addr, uint16_t port, bool foreign)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(&ss, family, addr, port);
	struct att *a = add(b, kind, type, (struct sockaddr *)&ss, len);

	if (a)
		a->foreign = foreign;
}

/* A TARGET: HOST[:PORT], http://HOST[:PORT][/PATH] or https://HOST[:PORT]. */
static void add_target(struct batch *b, const char *t)
{
	char host[256], path[256] = "/";
	const char *h = t, *end;
	bool http = false;
	unsigned port = 443;
	struct att *a;
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
		sl_probe_report(b->p, SL_PROBE_SKIPPED, "target", t,
				"no HTTP_PROXY here: run it inside sluice run");
		return;
	}
	a = add(b, "target", ATT_PROXY, (struct sockaddr *)&b->p->proxy, b->p->proxy_len);
	if (!a)
		return;
	snprintf(a->target, sizeof(a->target), "%s", t);
	if (http || port == 80)
		a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
					      "GET http://%s:%u%s HTTP/1.1\r\nHost: %s\r\n"
					      "User-Agent: sluice-probe\r\nConnection: close\r\n\r\n",
					      host, port, path, host);
	else
		a->req_len = (size_t)snprintf(a->req, sizeof(a->req),
					      "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n"
					      "User-Agent: sluice-probe\r\n\r\n",
					      host, port, host, port);
	if (a->req_len >= sizeof(a->req))
		finish(a, SL_PROBE_SKIPPED, "too long a target");
}

void sl_probe_net(struct sl_probe *p)
{
	static const uint8_t test_net1[4] = { 192, 0, 2, 1 };
	static const uint8_t metadata[4] = { 169, 254, 169, 254 };
	struct batch *b = calloc(1, sizeof(*b));
	struct sockaddr_storage ss;
	const struct in_addr *o4 = &p->outside4;
	const struct in6_addr *o6 = &p->outside6;
	socklen_t len;

	if (!b) {
		sl_probe_report(p, SL_PROBE_SKIPPED, "net", "-", "out of memory");
		return;
	}
	b->p = p;
	if (getifaddrs(&b->ifs) < 0)
		b->ifs = NULL;

	if (sl_probe_wanted(p, "tcp4") && p->have_outside4) {
		add_tcp(b, "tcp4", AF_INET, o4, 80, "/");
		add_tcp(b, "tcp4", AF_INET, o4, 443, "/");
		add_tcp(b, "tcp4", AF_INET, o4, 22, "/");
		add_tcp(b, "tcp4", AF_INET, test_net1, 80, "/");
	}
	if (sl_probe_wanted(p, "tcp6") && p->have_outside6) {
		add_tcp(b, "tcp6", AF_INET6, o6, 80, "/");
		add_tcp(b, "tcp6", AF_INET6, o6, 443, "/");
	}
	if (sl_probe_wanted(p, "metadata")) {
		add_tcp(b, "metadata", AF_INET, metadata, 80, "/latest/meta-data/");
		if (p->proxy_len) {
			struct att *a = add(b, "metadata", ATT_PROXY, (struct sockaddr *)&p->proxy,
					    p->proxy_len);

			if (a) {
				a->escape_if_allowed = true;
				snprintf(a->target, sizeof(a->target), "http://169.254.169.254/ (proxy)");
				a->req_len = (size_t)snprintf(
					a->req, sizeof(a->req),
					"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n"
					"Host: 169.254.169.254\r\nUser-Agent: sluice-probe\r\n"
					"Connection: close\r\n\r\n");
			}
		}
	}
	if (sl_probe_wanted(p, "host-port")) {
		if (p->have_host_end)
			for (size_t i = 0; i < ELEMENTSOF(host_ports); i++)
				add_tcp(b, "host-port", AF_INET, &p->host_end, host_ports[i], "/");
		else
			sl_probe_report(p, SL_PROBE_SKIPPED, "host-port", "-",
					"no HTTP_PROXY and no default route: no host end known");
	}
	if (sl_probe_wanted(p, "udp4") && p->have_outside4)
		add_dgram(b, "udp4", ATT_UDP, AF_INET, o4, UDP_PORT, false);
	if (sl_probe_wanted(p, "udp6") && p->have_outside6)
		add_dgram(b, "udp6", ATT_UDP, AF_INET6, o6, UDP_PORT, false);
	if (sl_probe_wanted(p, "icmp4") && p->have_outside4)
		add_dgram(b, "icmp4", ATT_PING, AF_INET, o4, 0, false);
	if (sl_probe_wanted(p, "icmp6") && p->have_outside6)
		add_dgram(b, "icmp6", ATT_PING, AF_INET6, o6, 0, false);
	if (sl_probe_wanted(p, "dns-foreign")) {
		if (p->have_outside4)
			add_dgram(b, "dns-foreign", ATT_DNS, AF_INET, o4, 53, true);
		add_dgram(b, "dns-foreign", ATT_DNS, AF_INET, test_net1, 53, true);
		if (p->have_outside6)
			add_dgram(b, "dns-foreign", ATT_DNS, AF_INET6, o6, 53, true);
	}
	if (sl_probe_wanted(p, "dns-denied")) {
		len = resolv_conf_server(&ss);
		if (len)
			add(b, "dns-denied", ATT_DNS, (struct sockaddr *)&ss, len);
		else
			sl_probe_report(p, SL_PROBE_SKIPPED, "dns-denied", "/etc/resolv.conf",
					"no nameserver in it");
	}
	if (sl_probe_wanted(p, "target"))
		for (size_t i = 0; i < p->n_targets; i++)
			add_target(b, p->targets[i]);

	run(b);
	if (b->ifs)
		freeifaddrs(b->ifs);
	free(b);
}
