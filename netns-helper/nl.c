/* SPDX-License-Identifier: MIT */
/*
 * rtnetlink through libmnl: the one place that owns the sockets, sets
 * NETLINK_EXT_ACK, reads every ACK and turns an extended ACK into a message
 * (the idea of iproute2's lib/mnl_utils.c). The requests below are the few
 * `ip link`, `ip addr` and `ip route` commands a sandbox needs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "nl.h"
#include "util.h"

#define RX_SIZE 32768 /* a dump of a busy host's addresses fits a few reads */

struct sl_nl {
	struct mnl_socket *sock;
	uint32_t portid;
	uint32_t seq;
	char req[4096] __attribute__((aligned(8)));
	char rx[RX_SIZE] __attribute__((aligned(8)));
};

int sl_nl_open(struct sl_nl **ret, char *err, size_t errlen)
{
	struct sl_nl *nl;
	int one = 1;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return sl_err(err, errlen, -ENOMEM, "rtnetlink socket");
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->sock) {
		int r = negative_errno();

		free(nl);
		return sl_err(err, errlen, r, "opening an rtnetlink socket");
	}
	/* Extended ACKs carry the kernel's own reason ("Permission denied"
	 * alone rarely says which attribute was wrong); capped ACKs do not
	 * echo our whole request back. Old kernels lack both: not fatal. */
	(void)mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = negative_errno();

		mnl_socket_close(nl->sock);
		free(nl);
		return sl_err(err, errlen, r, "binding an rtnetlink socket");
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (uint32_t)time(NULL);
	*ret = nl;
	return 0;
}

void sl_nl_close(struct sl_nl *nl)
{
	if (!nl)
		return;
	mnl_socket_close(nl->sock);
	free(nl);
}

struct nlmsghdr *sl_nl_msg(struct sl_nl *nl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	memset(nl->req, 0, sizeof(nl->req));
	nlh = mnl_nlmsg_put_header(nl->req);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	return nlh;
}

struct call {
	mnl_cb_t cb;
	void *data;
	char ext[256]; /* NLMSGERR_ATTR_MSG */
};

static int ext_attr_cb(const struct nlattr *a, void *data)
{
	struct call *c = data;

	if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
	    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		snprintf(c->ext, sizeof(c->ext), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

static int error_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	struct call *c = data;
	size_t off = sizeof(*e);

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (e->error == 0)
		return MNL_CB_STOP; /* the ACK */
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		/* The TLVs follow our request, or only its header when the
		 * kernel capped it (NETLINK_CAP_ACK). */
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += MNL_ALIGN(e->msg.nlmsg_len) - sizeof(e->msg);
		if (off < mnl_nlmsg_get_payload_len(nlh))
			(void)mnl_attr_parse(nlh, (unsigned)off, ext_attr_cb, c);
	}
	errno = e->error < 0 ? -e->error : EPROTO;
	return MNL_CB_ERROR;
}

/* The end of a dump; its payload is the dump's error, if any. */
static int done_cb(const struct nlmsghdr *nlh, void *data)
{
	int error = 0;

	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(error))
		memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(error));
	if (error < 0) {
		errno = -error;
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

static int data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct call *c = data;

	return c->cb ? c->cb(nlh, c->data) : MNL_CB_OK;
}

int sl_nl_call(struct sl_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what,
	       char *err, size_t errlen)
{
	/* With our own table, a type left NULL is ignored: DONE needs one. */
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = {[NLMSG_ERROR] = error_cb, [NLMSG_DONE] = done_cb};
	struct call c = {.cb = cb, .data = data};
	ssize_t n;
	int r;

	/* A dump ends with DONE; anything else is acknowledged. NLM_F_DUMP
	 * shares its bits with NLM_F_EXCL and NLM_F_REPLACE, so only a GET
	 * (rtnetlink types RTM_GET* = 4n + 2) can be a dump. */
	if ((nlh->nlmsg_type & 3) != 2 || (nlh->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP)
		nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return sl_err(err, errlen, negative_errno(), "%s: sending", what);
	for (;;) {
		n = mnl_socket_recvfrom(nl->sock, nl->rx, sizeof(nl->rx));
		if (n < 0)
			return sl_err(err, errlen, negative_errno(), "%s: receiving", what);
		r = mnl_cb_run2(nl->rx, (size_t)n, nl->seq, nl->portid, data_cb, &c, ctl,
				ELEMENTSOF(ctl));
		if (r == MNL_CB_STOP)
			return 0;
		if (r == MNL_CB_ERROR) {
			r = negative_errno();
			if (c.ext[0])
				return sl_err(err, errlen, r, "%s: %s (%s)", what, strerror(-r),
					      c.ext);
			return sl_err(err, errlen, r, "%s: %s", what, strerror(-r));
		}
	}
}

static struct ifinfomsg *put_ifinfo(struct nlmsghdr *nlh, int ifindex)
{
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return ifm;
}

static int link_index_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type == RTM_NEWLINK)
		*(int *)data = ifm->ifi_index;
	return MNL_CB_OK;
}

int sl_nl_link_index(struct sl_nl *nl, const char *name, int *ret, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_GETLINK, 0);
	char what[64];
	int idx = 0, r;

	put_ifinfo(nlh, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	snprintf(what, sizeof(what), "looking up link %s", name);
	/* A GET answers with the object, then the ACK. */
	r = sl_nl_call(nl, nlh, link_index_cb, &idx, what, err, errlen);
	if (r < 0)
		return r;
	if (idx <= 0)
		return sl_err(err, errlen, -ENODEV, "%s: no such link", what);
	*ret = idx;
	return 0;
}

int sl_nl_veth_add(struct sl_nl *nl, const char *name, const char *peer, int peer_netns_fd,
		   char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct nlattr *linkinfo, *info, *peer_nest;
	char what[96];

	put_ifinfo(nlh, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	/* One queue each way, on both ends: the kernel's default is one per
	 * possible CPU, each with its sysfs entries made and removed, and
	 * veth then cuts the real count back to one, a synchronize_net() per
	 * end under the RTNL lock (the one queue is all it uses without XDP
	 * anyway). */
	mnl_attr_put_u32(nlh, IFLA_NUM_TX_QUEUES, 1);
	mnl_attr_put_u32(nlh, IFLA_NUM_RX_QUEUES, 1);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	info = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	peer_nest = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* VETH_INFO_PEER holds a whole ifinfomsg, then the peer's own
	 * attributes (linux/veth.h; drivers/net/veth.c veth_newlink()). */
	put_ifinfo(nlh, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	mnl_attr_put_u32(nlh, IFLA_NUM_TX_QUEUES, 1);
	mnl_attr_put_u32(nlh, IFLA_NUM_RX_QUEUES, 1);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	mnl_attr_nest_end(nlh, peer_nest);
	mnl_attr_nest_end(nlh, info);
	mnl_attr_nest_end(nlh, linkinfo);
	snprintf(what, sizeof(what), "creating veth %s (peer %s in the sandbox)", name, peer);
	return sl_nl_call(nl, nlh, NULL, NULL, what, err, errlen);
}

int sl_nl_link_del(struct sl_nl *nl, const char *name, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_DELLINK, 0);
	char what[64];

	put_ifinfo(nlh, 0);
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	snprintf(what, sizeof(what), "deleting link %s", name);
	return sl_nl_call(nl, nlh, NULL, NULL, what, err, errlen);
}

int sl_nl_link_del_index(struct sl_nl *nl, int ifindex, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_DELLINK, 0);

	put_ifinfo(nlh, ifindex);
	return sl_nl_call(nl, nlh, NULL, NULL, "deleting a link", err, errlen);
}

int sl_nl_link_watch(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1u << (RTNLGRP_LINK - 1)};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);

	if (fd < 0)
		return negative_errno();
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = negative_errno();

		close(fd);
		return r;
	}
	return fd;
}

/* Does the link still exist? A lookup by index: ENODEV is the answer no. */
static bool link_exists(struct sl_nl *nl, int ifindex)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_GETLINK, 0);

	put_ifinfo(nlh, ifindex);
	return sl_nl_call(nl, nlh, NULL, NULL, "looking up a link", NULL, 0) != -ENODEV;
}

/* 1 when the datagram holds the RTM_DELLINK of `ifindex`. */
static bool says_gone(const char *buf, size_t len, int ifindex)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	int left = (int)len;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

		if (nlh->nlmsg_type == RTM_DELLINK && mnl_nlmsg_get_payload_len(nlh) >= sizeof(*ifm) &&
		    ifm->ifi_index == ifindex)
			return true;
	}
	return false;
}

int sl_nl_link_gone(struct sl_nl *nl, int watch, int ifindex, int timeout_ms)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct timespec now, end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000)
		end.tv_sec++, end.tv_nsec -= 1000000000;
	for (;;) {
		ssize_t n = recv(watch, buf, sizeof(buf), 0);
		long left;

		if (n > 0 && says_gone(buf, (size_t)n, ifindex))
			return 0;
		/* Notifications were dropped (ENOBUFS): ours may be one. */
		if (n < 0 && errno == ENOBUFS && !link_exists(nl, ifindex))
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR && errno != ENOBUFS)
			return negative_errno();
		/* Bounded even while other links come and go. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
		if (left <= 0)
			return link_exists(nl, ifindex) ? -ETIMEDOUT : 0;
		if (n < 0 && errno == EAGAIN)
			(void)poll(&(struct pollfd){.fd = watch, .events = POLLIN}, 1, (int)left + 1);
	}
}

int sl_nl_link_up(struct sl_nl *nl, int ifindex, const char *what, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_NEWLINK, 0);
	struct ifinfomsg *ifm = put_ifinfo(nlh, ifindex);

	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return sl_nl_call(nl, nlh, NULL, NULL, what, err, errlen);
}

int sl_nl_addr_add(struct sl_nl *nl, int ifindex, struct in_addr addr, unsigned prefix, char *err,
		   size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	uint32_t mask = prefix ? htonl(~0u << (32 - prefix)) : 0;
	struct in_addr brd = {.s_addr = addr.s_addr | ~mask};
	char what[96], a[INET_ADDRSTRLEN];

	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (uint8_t)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;
	mnl_attr_put(nlh, IFA_LOCAL, sizeof(addr), &addr);
	mnl_attr_put(nlh, IFA_ADDRESS, sizeof(addr), &addr);
	if (prefix < 31)
		mnl_attr_put(nlh, IFA_BROADCAST, sizeof(brd), &brd);
	inet_ntop(AF_INET, &addr, a, sizeof(a));
	snprintf(what, sizeof(what), "adding address %s/%u to link %d", a, prefix, ifindex);
	return sl_nl_call(nl, nlh, NULL, NULL, what, err, errlen);
}

int sl_nl_route_default(struct sl_nl *nl, int ifindex, struct in_addr gateway, char *err,
			size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 0;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_GATEWAY, sizeof(gateway), &gateway);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	return sl_nl_call(nl, nlh, NULL, NULL, "adding the sandbox's default route", err, errlen);
}

struct in_use {
	uint32_t net, mask; /* network order */
	int found;
};

static int addr_attr_cb(const struct nlattr *a, void *data)
{
	struct in_use *u = data;
	uint16_t type = mnl_attr_get_type(a);

	if ((type == IFA_LOCAL || type == IFA_ADDRESS) &&
	    mnl_attr_get_payload_len(a) == sizeof(uint32_t)) {
		uint32_t v;

		memcpy(&v, mnl_attr_get_payload(a), sizeof(v));
		if ((v & u->mask) == u->net)
			u->found = 1;
	}
	return MNL_CB_OK;
}

static int addr_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type == RTM_NEWADDR && ifa->ifa_family == AF_INET)
		(void)mnl_attr_parse(nlh, sizeof(*ifa), addr_attr_cb, data);
	return MNL_CB_OK;
}

int sl_nl_addr_in_use(struct sl_nl *nl, struct in_addr net, unsigned prefix, char *err,
		      size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_GETADDR, NLM_F_DUMP);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	struct in_use u = {.mask = prefix ? htonl(~0u << (32 - prefix)) : 0};
	int r;

	ifa->ifa_family = AF_INET;
	u.net = net.s_addr & u.mask;
	r = sl_nl_call(nl, nlh, addr_dump_cb, &u, "listing addresses", err, errlen);
	if (r < 0)
		return r;
	return u.found;
}

/* ---- Saving and restoring a namespace's default routes ---- */

struct routes_dump {
	struct sl_nl_routes *out;
	int error;
};

/* The attributes that say which route this is and where it goes; the rest
 * (RTA_CACHEINFO, RTA_TABLE's duplicate in rtm_table...) the kernel fills. */
static bool route_attr_kept(uint16_t type)
{
	switch (type) {
	case RTA_TABLE:
	case RTA_PRIORITY:
	case RTA_GATEWAY:
	case RTA_OIF:
	case RTA_PREFSRC:
	case RTA_METRICS:
	case RTA_MULTIPATH:
	case RTA_FLOW:
	case RTA_VIA:
	case RTA_NH_ID:
		return true;
	default:
		return false;
	}
}

static int route_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct routes_dump *d = data;
	char scratch[sizeof(((struct sl_nl_route *)0)->buf) + MNL_NLMSG_HDRLEN]
	    __attribute__((aligned(8)));
	struct nlmsghdr *copy;
	struct rtmsg *crtm;
	const struct nlattr *a;
	struct sl_nl_route *v, *rt;
	uint32_t table;

	if (nlh->nlmsg_type != RTM_NEWROUTE || d->error ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return MNL_CB_OK;
	if (rtm->rtm_family != AF_INET || rtm->rtm_dst_len != 0 || rtm->rtm_type != RTN_UNICAST)
		return MNL_CB_OK;
	table = rtm->rtm_table;
	mnl_attr_for_each(a, nlh, sizeof(*rtm))
		if (mnl_attr_get_type(a) == RTA_TABLE && mnl_attr_get_payload_len(a) == 4)
			table = mnl_attr_get_u32(a);
	if (table != RT_TABLE_MAIN)
		return MNL_CB_OK;

	copy = mnl_nlmsg_put_header(scratch);
	crtm = mnl_nlmsg_put_extra_header(copy, sizeof(*crtm));
	*crtm = *rtm;
	crtm->rtm_flags &= RTNH_F_ONLINK;
	mnl_attr_for_each(a, nlh, sizeof(*rtm)) {
		uint16_t len = mnl_attr_get_payload_len(a);

		if (!route_attr_kept(mnl_attr_get_type(a)))
			continue;
		if (copy->nlmsg_len + MNL_ATTR_HDRLEN + MNL_ALIGN(len) > sizeof(scratch)) {
			d->error = -E2BIG;
			return MNL_CB_OK;
		}
		/* The whole type, NLA_F_NESTED included (RTA_METRICS). */
		mnl_attr_put(copy, a->nla_type, len, mnl_attr_get_payload(a));
	}
	v = realloc(d->out->v, (d->out->n + 1) * sizeof(*v));
	if (!v) {
		d->error = -ENOMEM;
		return MNL_CB_OK;
	}
	d->out->v = v;
	rt = &v[d->out->n++];
	rt->len = copy->nlmsg_len - MNL_NLMSG_HDRLEN;
	memcpy(rt->buf, mnl_nlmsg_get_payload(copy), rt->len);
	return MNL_CB_OK;
}

int sl_nl_routes_default4(struct sl_nl *nl, struct sl_nl_routes *ret, char *err, size_t errlen)
{
	struct nlmsghdr *nlh = sl_nl_msg(nl, RTM_GETROUTE, NLM_F_DUMP);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	struct sl_nl_routes out = {0};
	struct routes_dump d = {.out = &out};
	int r;

	rtm->rtm_family = AF_INET;
	r = sl_nl_call(nl, nlh, route_dump_cb, &d, "listing the default routes", err, errlen);
	if (r >= 0 && d.error < 0)
		r = sl_err(err, errlen, d.error, "listing the default routes: %s",
			   d.error == -E2BIG ? "a route too large to keep and restore"
					     : strerror(-d.error));
	if (r < 0) {
		sl_nl_routes_clear(&out);
		return r;
	}
	*ret = out;
	return 0;
}

int sl_nl_route_replay(struct sl_nl *nl, const struct sl_nl_route *rt, bool add, char *err,
		       size_t errlen)
{
	struct nlmsghdr *nlh =
	    sl_nl_msg(nl, add ? RTM_NEWROUTE : RTM_DELROUTE, add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	const struct rtmsg *rtm = (const void *)rt->buf;
	char what[96], gw[INET_ADDRSTRLEN] = "?";
	const struct nlattr *a;

	memcpy(mnl_nlmsg_put_extra_header(nlh, rt->len), rt->buf, rt->len);
	mnl_attr_for_each(a, nlh, sizeof(*rtm))
		if (mnl_attr_get_type(a) == RTA_GATEWAY && mnl_attr_get_payload_len(a) == 4)
			inet_ntop(AF_INET, mnl_attr_get_payload(a), gw, sizeof(gw));
	snprintf(what, sizeof(what), "%s the default route via %s", add ? "restoring" : "removing",
		 gw);
	return sl_nl_call(nl, nlh, NULL, NULL, what, err, errlen);
}

void sl_nl_routes_clear(struct sl_nl_routes *r)
{
	free(r->v);
	r->v = NULL;
	r->n = 0;
}
