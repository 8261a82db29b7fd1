/* SPDX-License-Identifier: MIT */
/*
 * The one place that owns rtnetlink sockets (internal to netns-helper).
 *
 * A socket is bound to the network namespace it was opened in, so the
 * sandbox side is configured through a socket opened while inside it.
 * Every request asks for an ACK and every ACK is read; an error comes back
 * as "<what>: <strerror>: <the kernel's extended ACK message>".
 */
#pragma once

#include <libmnl/libmnl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_nl;

/* Open a NETLINK_ROUTE socket in the calling thread's namespace. */
int sl_nl_open(struct sl_nl **ret, char *err, size_t errlen);
void sl_nl_close(struct sl_nl *nl);

/* A buffer for one request; the header is zeroed and typed. */
struct nlmsghdr *sl_nl_msg(struct sl_nl *nl, uint16_t type, uint16_t flags);

/* Send the request built with sl_nl_msg() and read replies until its ACK
 * (or, for a dump, its DONE). `cb` sees every data message; may be NULL. */
int sl_nl_call(struct sl_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what,
	       char *err, size_t errlen);

/* ---- Requests built on sl_nl_call(). ---- */

/* The index of link `name`; -ENODEV when there is none. */
int sl_nl_link_index(struct sl_nl *nl, const char *name, int *ret, char *err, size_t errlen);
/* Create a veth pair: `name` here, `peer` directly inside namespace
 * `peer_netns_fd`, so it never exists here, not even briefly. */
int sl_nl_veth_add(struct sl_nl *nl, const char *name, const char *peer, int peer_netns_fd,
		   char *err, size_t errlen);
int sl_nl_link_del(struct sl_nl *nl, const char *name, char *err, size_t errlen);
/* The same by index, which the kernel does not hand out again soon: a late
 * request cannot hit a link made meanwhile under the same name. */
int sl_nl_link_del_index(struct sl_nl *nl, int ifindex, char *err, size_t errlen);
/* A socket that hears of links as they go (RTNLGRP_LINK) in the caller's
 * namespace, nonblocking: open it before a link is made to go, so that its
 * RTM_DELLINK cannot be missed. A negative errno on failure. */
int sl_nl_link_watch(void);
/* Until the link `ifindex` is gone: its RTM_DELLINK heard on `watch`, or
 * (when the watch overflowed) a lookup that no longer finds it. 0, or
 * -ETIMEDOUT once `timeout_ms` passed with the link still there. */
int sl_nl_link_gone(struct sl_nl *nl, int watch, int ifindex, int timeout_ms);
int sl_nl_link_up(struct sl_nl *nl, int ifindex, const char *what, char *err, size_t errlen);
int sl_nl_addr_add(struct sl_nl *nl, int ifindex, struct in_addr addr, unsigned prefix, char *err,
		   size_t errlen);
int sl_nl_route_default(struct sl_nl *nl, int ifindex, struct in_addr gateway, char *err,
			size_t errlen);
/* Is any IPv4 address of this namespace inside net/prefix? 1 yes, 0 no. */
int sl_nl_addr_in_use(struct sl_nl *nl, struct in_addr net, unsigned prefix, char *err,
		      size_t errlen);

/* ---- Default routes of a namespace we do not own (`sluice attach`). ---- */

/* One route as the kernel listed it, reduced to what adding it again
 * needs: the rtmsg (flags other than onlink cleared: the kernel refuses
 * "dead" and "linkdown" in a request) and the attributes that define it. */
struct sl_nl_route {
	size_t len;
	uint8_t buf[512] __attribute__((aligned(8)));
};

struct sl_nl_routes {
	struct sl_nl_route *v;
	size_t n;
};

/* The IPv4 default routes (dst/0) of the main table. Routes too large to
 * keep (a multipath route of many hops) are -E2BIG: better to refuse than
 * to restore something else. */
int sl_nl_routes_default4(struct sl_nl *nl, struct sl_nl_routes *ret, char *err, size_t errlen);
/* Add (RTM_NEWROUTE, exclusive) or delete (RTM_DELROUTE) exactly that route. */
int sl_nl_route_replay(struct sl_nl *nl, const struct sl_nl_route *rt, bool add, char *err,
		       size_t errlen);
void sl_nl_routes_clear(struct sl_nl_routes *r);
