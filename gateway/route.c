/* SPDX-License-Identifier: MIT */
#include "route.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int sl_gw_route_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	/* The kernel answers while our sendto() runs; the timeout only
	 * bounds a wait for an answer that somehow never comes. */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int sl_gw_route_local(int fd, int family, const uint8_t *addr)
{
	static uint32_t seq;
	size_t alen = family == AF_INET ? 4 : 16;
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
		struct rtattr a;
		uint8_t addr[16];
	} req = {0};
	union {
		struct nlmsghdr h;
		char buf[4096];
	} ans;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int k;

	if (fd < 0)
		return -EBADF;
	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt)) + RTA_LENGTH(alen);
	req.h.nlmsg_type = RTM_GETROUTE;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = ++seq;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_dst_len = (unsigned char)(alen * 8);
	req.a.rta_type = RTA_DST;
	req.a.rta_len = RTA_LENGTH(alen);
	memcpy(req.addr, addr, alen);
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	/* Skip answers to earlier questions that timed out: a few at most. */
	for (k = 0; k < 8; k++) {
		ssize_t n = recv(fd, &ans, sizeof(ans), 0);
		struct nlmsghdr *h = &ans.h;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!NLMSG_OK(h, (size_t)n))
			return -EBADMSG;
		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EBADMSG;
			/* No route (unreachable, prohibit): connect() fails
			 * too, nothing is reached. Any other error (a
			 * blackhole's EINVAL among them) is taken as local:
			 * refusing an address we cannot judge is safe. */
			if (e->error == -ENETUNREACH || e->error == -EHOSTUNREACH ||
			    e->error == -EACCES)
				return 0;
			return e->error ? e->error : -EBADMSG;
		}
		if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(req.rt)))
			return -EBADMSG;
		switch (((const struct rtmsg *)NLMSG_DATA(h))->rtm_type) {
		case RTN_LOCAL:
		case RTN_BROADCAST:
		case RTN_ANYCAST:
			return 1;
		default:
			return 0;
		}
	}
	return -EAGAIN;
}
