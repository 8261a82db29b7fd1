/* SPDX-License-Identifier: MIT */
/*
 * The NFLOG reader: the sandbox ruleset copies every packet it blocks to an
 * NFLOG group before rejecting it, and the gateway reads that group here so
 * the attempt reaches the audit log. Two halves:
 *  - sl_nft_blocked_parse() is pure: it reads the copied IP and L4 headers
 *    (bytes a sandboxed program chose) through one bounds-checked reader,
 *    and is unit-tested and fuzzed on its own;
 *  - the subscription owns its NETLINK_NETFILTER socket (NFNL_SUBSYS_ULOG),
 *    checks the bind's ACK with the kernel's extended message, and counts
 *    what the kernel dropped from the sequence numbers it stamps on every
 *    copy, so a loss is reported rather than silent.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include "macro.h"
#include "nft-internal.h"

/* ---- The payload parser (pure) ---- */

/* A window on untrusted bytes: every read says whether it fitted. */
struct rd {
	const uint8_t *p;
	size_t len;
};

static bool rd_has(const struct rd *r, size_t off, size_t n)
{
	return off <= r->len && n <= r->len - off;
}

static bool rd_u8(const struct rd *r, size_t off, uint8_t *v)
{
	if (!rd_has(r, off, 1))
		return false;
	*v = r->p[off];
	return true;
}

static bool rd_be16(const struct rd *r, size_t off, uint16_t *v)
{
	if (!rd_has(r, off, 2))
		return false;
	*v = (uint16_t)(r->p[off] << 8 | r->p[off + 1]);
	return true;
}

/* The L4 fields, from the L4 header at `off` (any of it may be cut off by
 * the copy range: then has_l4 stays false). */
static void parse_l4(const struct rd *r, size_t off, struct sl_nft_blocked *b)
{
	bool icmp = (b->family == AF_INET && b->proto == IPPROTO_ICMP) ||
		    (b->family == AF_INET6 && b->proto == IPPROTO_ICMPV6);

	switch (b->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		/* All five start with source and destination port. */
		if (rd_be16(r, off, &b->sport) && rd_be16(r, off + 2, &b->dport))
			b->has_l4 = true;
		else
			b->sport = b->dport = 0;
		return;
	default:
		if (icmp && rd_u8(r, off, &b->icmp_type))
			b->has_l4 = true;
		return;
	}
}

static int parse_ipv4(const struct rd *pkt, struct sl_nft_blocked *b)
{
	struct rd r = *pkt;
	uint8_t vihl;
	uint16_t tot, frag;
	size_t hlen;

	if (!rd_has(&r, 0, 20) || !rd_u8(&r, 0, &vihl))
		return -EBADMSG;
	hlen = (size_t)(vihl & 0x0f) * 4;
	/* RFC 791: IHL counts 32-bit words and is at least 5. The options
	 * must be in the copy (at most 60 bytes, under the copy range). */
	if (hlen < 20 || !rd_has(&r, 0, hlen))
		return -EBADMSG;
	(void)rd_be16(&r, 2, &tot);
	if (tot < hlen)
		return -EBADMSG;
	/* Bytes past the total length are link padding, not the packet. */
	if (tot < r.len)
		r.len = tot;
	b->family = AF_INET;
	b->proto = r.p[9];
	inet_ntop(AF_INET, r.p + 12, b->src, sizeof(b->src));
	inet_ntop(AF_INET, r.p + 16, b->dst, sizeof(b->dst));
	(void)rd_be16(&r, 6, &frag);
	/* A later fragment carries no L4 header: its first bytes are data. */
	if ((frag & 0x1fff) == 0)
		parse_l4(&r, hlen, b);
	return 0;
}

/* More extension headers than this is no packet our sandbox's stack sends;
 * stop there and report the header reached. */
#define IPV6_MAX_EXT 8

static int parse_ipv6(const struct rd *pkt, struct sl_nft_blocked *b)
{
	struct rd r = *pkt;
	uint16_t plen;
	uint8_t nh;
	size_t off = 40;

	if (!rd_has(&r, 0, 40))
		return -EBADMSG;
	(void)rd_be16(&r, 4, &plen);
	if (off + plen < r.len)
		r.len = off + plen;
	b->family = AF_INET6;
	inet_ntop(AF_INET6, r.p + 8, b->src, sizeof(b->src));
	inet_ntop(AF_INET6, r.p + 24, b->dst, sizeof(b->dst));
	nh = r.p[6];

	/* RFC 8200 section 4: walk the chain only as far as the L4 header.
	 * Where it is cut off, the header reached is what we report. */
	for (int i = 0; i < IPV6_MAX_EXT; i++) {
		uint8_t next, hl;
		uint16_t fo;

		switch (nh) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			if (!rd_u8(&r, off, &next) || !rd_u8(&r, off + 1, &hl))
				goto stop;
			nh = next;
			off += ((size_t)hl + 1) * 8;
			break;
		case IPPROTO_AH: /* RFC 4302: length in 4-byte units, minus 2 */
			if (!rd_u8(&r, off, &next) || !rd_u8(&r, off + 1, &hl))
				goto stop;
			nh = next;
			off += ((size_t)hl + 2) * 4;
			break;
		case IPPROTO_FRAGMENT:
			if (!rd_u8(&r, off, &next) || !rd_be16(&r, off + 2, &fo))
				goto stop;
			b->proto = next;
			/* Only the first fragment has the L4 header. */
			if ((fo & 0xfff8) != 0)
				return 0;
			nh = next;
			off += 8;
			break;
		default:
			b->proto = nh;
			parse_l4(&r, off, b);
			return 0;
		}
	}
stop:
	b->proto = nh;
	return 0;
}

int sl_nft_blocked_parse(const uint8_t *pkt, size_t len, int family_hint,
			 struct sl_nft_blocked *ret)
{
	struct sl_nft_blocked b = {.uid_or_minus1 = (uint32_t)-1};
	struct rd r = {.p = pkt, .len = pkt ? len : 0};
	uint8_t v;
	int family, e;

	if (!ret)
		return -EINVAL;
	if (!rd_u8(&r, 0, &v))
		return -EBADMSG;
	family = v >> 4 == 4 ? AF_INET : v >> 4 == 6 ? AF_INET6 : AF_UNSPEC;
	if (family == AF_UNSPEC || (family_hint != AF_UNSPEC && family_hint != family))
		return -EPROTONOSUPPORT;
	e = family == AF_INET ? parse_ipv4(&r, &b) : parse_ipv6(&r, &b);
	if (e < 0)
		return e;
	*ret = b;
	return 0;
}

/* ---- The subscription ---- */

/* What the rule copies (NFTNL_EXPR_LOG_SNAPLEN) is the limit; ours only
 * caps it again: headers are all the audit needs. */
#define COPY_RANGE 128
/* Far above the kernel's batch size (nlbufsiz, a page by default), so one
 * datagram always fits. */
#define RECV_SIZE 65536
/* The kernel answers the bind while it is being sent; this only bounds a
 * wait that should not happen. */
#define ACK_TIMEOUT_MS 5000

struct sl_nft_nflog {
	struct mnl_socket *nl;
	uint16_t group;
	uint32_t next_seq; /* the sequence number the next copy should carry */
	struct sl_nft_nflog_losses losses;
	uint8_t buf[RECV_SIZE];
};

static int put_config(struct sl_nft_nflog *l, char *buf, uint32_t seq)
{
	struct nfulnl_msg_config_cmd cmd = {.command = NFULNL_CFG_CMD_BIND};
	struct nfulnl_msg_config_mode mode = {.copy_range = htonl(COPY_RANGE),
					      .copy_mode = NFULNL_COPY_PACKET};
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *g;

	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(l->group);
	mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
	mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(mode), &mode);
	/* Every copy numbered, so a gap is a count of lost packets. (NFULA_UID
	 * needs no flag: it comes whenever the sending socket has an owner.) */
	mnl_attr_put_u16(nlh, NFULA_CFG_FLAGS, htons(NFULNL_CFG_F_SEQ));
	/* Send each copy at once. The default batches up to 100 copies for up
	 * to a second in the kernel, and whatever is still batched when the
	 * socket closes is gone: the last attempts before the command exits
	 * would never be audited. */
	mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH, htonl(1));
	return (int)nlh->nlmsg_len;
}

/* The error an ACK carries (0 for success) and the kernel's extended
 * message, if it gave one. */
static int ack_error(const struct nlmsghdr *nlh, char *msg, size_t msglen)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	size_t off = sizeof(*e);

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e))
		return -EBADMSG;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return e->error;
	/* Without NETLINK_CAP_ACK the kernel echoes the request first. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < sizeof(struct nlmsghdr))
			return e->error;
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	}
	if (mnl_nlmsg_get_payload_len(nlh) < off)
		return e->error;
	mnl_attr_for_each(attr, nlh, off) {
		if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
		    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
			snprintf(msg, msglen, ": %s", mnl_attr_get_str(attr));
	}
	return e->error;
}

/* Wait for the ACK of message `seq`. Copies that arrive first (there can
 * be none before the bind, but a packet may be logged between the bind
 * and its ACK) are not delivered: their sequence numbers are then missing,
 * so they are counted as lost, not silently gone. */
static int read_ack(struct sl_nft_nflog *l, uint32_t seq, char *msg, size_t msglen)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd p = {.fd = mnl_socket_get_fd(l->nl), .events = POLLIN};
		long left;
		ssize_t n;
		int len;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = ACK_TIMEOUT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
					 (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		n = mnl_socket_recvfrom(l->nl, l->buf, sizeof(l->buf));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ENOBUFS)
				continue;
			return negative_errno();
		}
		len = (int)n;
		for (const struct nlmsghdr *nlh = (const void *)l->buf; mnl_nlmsg_ok(nlh, len);
		     nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_seq == seq)
				return ack_error(nlh, msg, msglen);
		}
	}
}

int sl_nft_nflog_open(uint16_t group, struct sl_nft_nflog **ret, char *err, size_t errlen)
{
	char req[256];
	char msg[200] = "";
	struct sl_nft_nflog *l;
	uint32_t seq = (uint32_t)time(NULL);
	int one = 1, r, len;

	if (!ret)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->group = group;
	l->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!l->nl) {
		r = negative_errno();
		sl_nft_set_err(err, errlen, "opening the nflog netlink socket: %s", strerror(-r));
		free(l);
		return r;
	}
	if (mnl_socket_bind(l->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = negative_errno();
		sl_nft_set_err(err, errlen, "binding the nflog netlink socket: %s", strerror(-r));
		goto fail;
	}
	/* Best effort, as for the nftables socket: old kernels lack them. */
	(void)mnl_socket_setsockopt(l->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)mnl_socket_setsockopt(l->nl, NETLINK_CAP_ACK, &one, sizeof(one));

	len = put_config(l, req, seq);
	if (mnl_socket_sendto(l->nl, req, (size_t)len) < 0) {
		r = negative_errno();
		sl_nft_set_err(err, errlen, "binding nflog group %u: %s", group, strerror(-r));
		goto fail;
	}
	r = read_ack(l, seq, msg, sizeof(msg));
	if (r < 0) {
		sl_nft_set_err(err, errlen, "binding nflog group %u: %s%s", group, strerror(-r),
			       msg);
		goto fail;
	}
	*ret = l;
	return 0;
fail:
	sl_nft_nflog_close(l);
	return r;
}

int sl_nft_nflog_fd(const struct sl_nft_nflog *l)
{
	return mnl_socket_get_fd(l->nl);
}

/* Account for the copy numbered `seq`: a jump forward is what was lost. */
static void note_seq(struct sl_nft_nflog *l, uint32_t seq)
{
	uint32_t gap = seq - l->next_seq;

	/* Anything "behind" us (a half-range jump back) is not a loss. */
	if (gap < UINT32_C(0x80000000))
		l->losses.packets += gap;
	l->next_seq = seq + 1;
}

static void handle_packet(struct sl_nft_nflog *l, const struct nlmsghdr *nlh, sl_nft_blocked_fn fn,
			  void *userdata)
{
	const struct nfgenmsg *g;
	const struct nlattr *a;
	const char *prefix = NULL;
	const uint8_t *payload = NULL;
	size_t payload_len = 0;
	uint32_t uid = (uint32_t)-1;
	struct sl_nft_blocked b;
	int hint;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return;
	g = mnl_nlmsg_get_payload(nlh);
	/* For an inet table the kernel logs with the packet's own family. */
	hint = AF_UNSPEC;
	if (g->nfgen_family == NFPROTO_IPV4)
		hint = AF_INET;
	else if (g->nfgen_family == NFPROTO_IPV6)
		hint = AF_INET6;
	mnl_attr_for_each(a, nlh, sizeof(*g)) {
		switch (mnl_attr_get_type(a)) {
		case NFULA_PREFIX:
			if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
				prefix = mnl_attr_get_str(a);
			break;
		case NFULA_PAYLOAD:
			payload = mnl_attr_get_payload(a);
			payload_len = mnl_attr_get_payload_len(a);
			break;
		case NFULA_UID:
			if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
				uid = ntohl(mnl_attr_get_u32(a));
			break;
		case NFULA_SEQ:
			if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
				note_seq(l, ntohl(mnl_attr_get_u32(a)));
			break;
		default:
			break;
		}
	}
	/* The group is ours, but only our rule's copies are blocked packets. */
	if (!prefix || strcmp(prefix, SL_NFT_NFLOG_PREFIX) != 0 || !payload)
		return;
	if (sl_nft_blocked_parse(payload, payload_len, hint, &b) < 0)
		return;
	b.uid_or_minus1 = uid;
	fn(&b, userdata);
}

int sl_nft_nflog_read(struct sl_nft_nflog *l, unsigned max_datagrams, sl_nft_blocked_fn fn,
		      void *userdata)
{
	unsigned n_read = 0, rounds = 0;

	/* Overflow reports count against the budget too: under a flood they
	 * could otherwise come back as fast as they are read. */
	while (rounds++ < max_datagrams) {
		ssize_t n = recv(mnl_socket_get_fd(l->nl), l->buf, sizeof(l->buf), 0);
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* The receive buffer overflowed: the kernel threw copies
			 * away. The sequence gap will say how many. */
			if (errno == ENOBUFS) {
				l->losses.overflows++;
				continue;
			}
			return negative_errno();
		}
		n_read++;
		len = (int)(n > (ssize_t)sizeof(l->buf) ? (ssize_t)sizeof(l->buf) : n);
		for (const struct nlmsghdr *nlh = (const void *)l->buf; mnl_nlmsg_ok(nlh, len);
		     nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_type == ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
				handle_packet(l, nlh, fn, userdata);
		}
	}
	return (int)n_read;
}

void sl_nft_nflog_take_losses(struct sl_nft_nflog *l, struct sl_nft_nflog_losses *ret)
{
	*ret = l->losses;
	l->losses = (struct sl_nft_nflog_losses){0};
}

void sl_nft_nflog_close(struct sl_nft_nflog *l)
{
	if (!l)
		return;
	/* Closing the socket unbinds the group (the kernel's release hook). */
	if (l->nl)
		mnl_socket_close(l->nl);
	free(l);
}
