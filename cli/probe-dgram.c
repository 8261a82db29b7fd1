/* SPDX-License-Identifier: MIT */
/*
 * sluice probe: what comes back to a datagram. Three kinds of answer, each
 * from bytes the probe did not write, so each is read with its length
 * checked first:
 *  - an ICMP error, read from the socket's error queue (IP_RECVERR), which
 *    names the sender: this host (sluice's fence rejects with
 *    admin-prohibited) or the host end means blocked; the target itself or
 *    a router beyond means the datagram left;
 *  - a DNS answer, of which only the header is read: records for a name
 *    the policy denies came from a resolver other than sluice's;
 *  - an ICMP echo reply.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/ip_icmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "probe-net.h"

/* ---- addresses ---- */

socklen_t sl_probe_make_addr(struct sockaddr_storage *ss, int family, const void *addr,
			     uint16_t port)
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
			       &((const struct sockaddr_in6 *)y)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

static bool is_local(const struct sl_probe_batch *b, const struct sockaddr *sa)
{
	for (const struct ifaddrs *i = b->ifs; i; i = i->ifa_next)
		if (i->ifa_addr && same_addr(i->ifa_addr, sa))
			return true;
	return false;
}

/* ---- ICMP errors ---- */

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
void sl_probe_judge_icmp_error(struct sl_probe_batch *b, struct sl_probe_att *a)
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
		sl_probe_finish(a, SL_PROBE_BLOCKED, "%s", strerror(e ? e : errno));
		return;
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
		    (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))
			ee = (const struct sock_extended_err *)CMSG_DATA(c);
	if (!ee) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "an error without details");
		return;
	}
	off = SO_EE_OFFENDER(ee);
	if ((ee->ee_origin != SO_EE_ORIGIN_ICMP && ee->ee_origin != SO_EE_ORIGIN_ICMP6) ||
	    (off->sa_family != AF_INET && off->sa_family != AF_INET6)) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "%s (a local error)",
				strerror((int)ee->ee_errno));
		return;
	}
	what = icmp_what(ee->ee_origin, ee->ee_type, ee->ee_code);
	sl_probe_fmt_addr(off, from, sizeof(from));
	if (is_local(b, off)) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "%s: %s from %s (this host: the fence)",
				strerror((int)ee->ee_errno), what, from);
		return;
	}
	if (b->p->have_host_end && off->sa_family == AF_INET &&
	    ((const struct sockaddr_in *)off)->sin_addr.s_addr == b->p->host_end.s_addr) {
		sl_probe_finish(a, SL_PROBE_BLOCKED, "%s: %s from the host end %s",
				strerror((int)ee->ee_errno), what, from);
		return;
	}
	if (same_addr(off, (const struct sockaddr *)&a->to))
		sl_probe_finish(a, SL_PROBE_ESCAPED, "reached it: %s answered %s", from, what);
	else
		sl_probe_finish(a, SL_PROBE_ESCAPED, "left this host: %s answered %s", from, what);
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
size_t sl_probe_dns_query(const char *name, uint16_t id, char *buf, size_t len)
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

void sl_probe_judge_dns(struct sl_probe_att *a, const uint8_t *h, size_t len, const char *name)
{
	static const char *const rcodes[] = { "NOERROR", "FORMERR", "SERVFAIL",
					      "NXDOMAIN", "NOTIMP", "REFUSED" };
	unsigned rcode, ancount;

	/* Only the 12-byte header is read: the ID, QR, RCODE and ANCOUNT. */
	if (len < 12 || ((unsigned)h[0] << 8 | h[1]) != a->id || !(h[2] & 0x80)) {
		sl_probe_finish(a, SL_PROBE_ESCAPED,
				"%zu bytes came back that answer no query of ours", len);
		return;
	}
	rcode = h[3] & 0xf;
	ancount = (unsigned)h[6] << 8 | h[7];
	if (rcode == 0 && ancount > 0) {
		sl_probe_finish(a, SL_PROBE_ESCAPED, "answered %s with %u record%s", name, ancount,
				ancount == 1 ? "" : "s");
		return;
	}
	sl_probe_finish(a, SL_PROBE_BLOCKED, "answered %s %s%s", name,
			rcode < ELEMENTSOF(rcodes) ? rcodes[rcode] : "an error",
			rcode == 0   ? " with no records"
			: a->foreign ? " (sluice's resolver: port 53 leads to it)"
				     : "");
}

/* The first nameserver of /etc/resolv.conf. */
socklen_t sl_probe_resolv_conf(struct sockaddr_storage *ss)
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
			return sl_probe_make_addr(ss, AF_INET, &a4, 53);
		if (inet_pton(AF_INET6, addr, &a6) == 1)
			return sl_probe_make_addr(ss, AF_INET6, &a6, 53);
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
int sl_probe_open_ping(struct sl_probe_att *a, int family)
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
	sl_probe_finish(a, SL_PROBE_BLOCKED, "ping socket: %s; raw socket: %s", strerror(e_ping),
			strerror(errno));
	return -1;
}

void sl_probe_echo_request(struct sl_probe_att *a, int family)
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
}

/* Whether what a ping or raw socket read is the echo reply to ours. */
bool sl_probe_is_echo_reply(const struct sl_probe_att *a, const uint8_t *d, size_t n)
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
