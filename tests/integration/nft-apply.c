/* SPDX-License-Identifier: MIT */
/*
 * Test helper for tests/integration/test-nft-sandbox.sh (root, inside a
 * namespace the test made). Not installed; sluice has no such command.
 *
 *   nft-apply sandbox GATEWAY TCP_PORTS UDP_PORTS GROUP [CAPTURE_PORT [DNS_PORT]]
 *       apply the sandbox ruleset in the current namespace (ports: "3128,3129")
 *   nft-apply nflog GROUP COUNT TIMEOUT_MS
 *       subscribe to NFLOG GROUP, print "ready", then one line per packet:
 *       "nflog PREFIX proto=N dst=ADDR"; exit 0 after COUNT, 1 on timeout
 *   nft-apply host NAME IFNAME ADDR PEER TCP_PORTS UDP_PORTS
 *       apply the host ruleset with the owner flag, print "applied owner=0|1",
 *       and keep the socket (so the table) until stdin reaches EOF
 */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "nft.h"

static int parse_ports(const char *s, uint16_t *ports, size_t *n)
{
	char *copy = strdup(s), *save = NULL, *tok;

	*n = 0;
	if (!copy)
		return -1;
	if (strcmp(s, "-"))
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (*n == SL_NFT_MAX_PORTS)
				break;
			ports[(*n)++] = (uint16_t)atoi(tok);
		}
	free(copy);
	return 0;
}

static int cmd_sandbox(int argc, char **argv)
{
	struct sl_nft_sandbox cfg = { 0 };
	char err[512] = "";
	int r;

	if (argc < 6 || inet_pton(AF_INET, argv[2], &cfg.gateway) != 1)
		return 2;
	parse_ports(argv[3], cfg.tcp_ports, &cfg.n_tcp_ports);
	parse_ports(argv[4], cfg.udp_ports, &cfg.n_udp_ports);
	cfg.nflog_group = (uint16_t)atoi(argv[5]);
	if (argc > 6)
		cfg.capture_port = (uint16_t)atoi(argv[6]);
	if (argc > 7)
		cfg.dns_port = (uint16_t)atoi(argv[7]);
	r = sl_nft_sandbox_apply(&cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "nft-apply: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_host(int argc, char **argv)
{
	struct sl_nft_host cfg = { 0 };
	struct sl_nft *nft = NULL;
	char err[512] = "", c;
	bool owned = false;
	int r;

	if (argc < 8 || inet_pton(AF_INET, argv[4], &cfg.addr) != 1 ||
	    inet_pton(AF_INET, argv[5], &cfg.peer) != 1)
		return 2;
	cfg.name = argv[2];
	cfg.ifname = argv[3];
	parse_ports(argv[6], cfg.tcp_ports, &cfg.n_tcp_ports);
	parse_ports(argv[7], cfg.udp_ports, &cfg.n_udp_ports);
	r = sl_nft_open(&nft, err, sizeof(err));
	if (r >= 0)
		r = sl_nft_host_apply(nft, &cfg, &owned, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "nft-apply: %s\n", err);
		sl_nft_close(nft);
		return 1;
	}
	printf("applied owner=%d\n", owned);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	sl_nft_close(nft);
	return 0;
}

static struct mnl_socket *nflog_bind(uint16_t group)
{
	char buf[8192];
	struct nfulnl_msg_config_cmd cmd = { .command = NFULNL_CFG_CMD_BIND };
	struct nfulnl_msg_config_mode mode = { .copy_range = htonl(256),
					       .copy_mode = NFULNL_COPY_PACKET };
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	struct nlmsghdr *nlh;
	struct nfgenmsg *g;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return NULL;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
	mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(mode), &mode);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return NULL;
	return nl;
}

static void print_packet(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;
	const char *prefix = "";
	const uint8_t *pl = NULL;
	uint16_t plen = 0;
	char dst[INET6_ADDRSTRLEN] = "?";
	int proto = -1;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) == NFULA_PREFIX)
			prefix = mnl_attr_get_str(a);
		else if (mnl_attr_get_type(a) == NFULA_PAYLOAD) {
			pl = mnl_attr_get_payload(a);
			plen = mnl_attr_get_payload_len(a);
		}
	}
	if (pl && plen >= sizeof(struct iphdr) && (pl[0] >> 4) == 4) {
		const struct iphdr *ip = (const void *)pl;

		proto = ip->protocol;
		inet_ntop(AF_INET, &ip->daddr, dst, sizeof(dst));
	} else if (pl && plen >= sizeof(struct ip6_hdr) && (pl[0] >> 4) == 6) {
		const struct ip6_hdr *ip6 = (const void *)pl;

		proto = ip6->ip6_nxt;
		inet_ntop(AF_INET6, &ip6->ip6_dst, dst, sizeof(dst));
	}
	printf("nflog %s proto=%d dst=%s\n", prefix, proto, dst);
	fflush(stdout);
}

static int cmd_nflog(int argc, char **argv)
{
	char buf[65536];
	struct mnl_socket *nl;
	struct timespec start, now;
	int count, timeout_ms, seen = 0;

	if (argc < 5)
		return 2;
	count = atoi(argv[3]);
	timeout_ms = atoi(argv[4]);
	nl = nflog_bind((uint16_t)atoi(argv[2]));
	if (!nl) {
		perror("nft-apply: binding nflog");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (seen < count) {
		struct pollfd p = { .fd = mnl_socket_get_fd(nl), .events = POLLIN };
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout_ms - ((now.tv_sec - start.tv_sec) * 1000 +
				     (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n < 0)
			break;
		int len = (int)n;

		for (const struct nlmsghdr *nlh = (const void *)buf; mnl_nlmsg_ok(nlh, len);
		     nlh = mnl_nlmsg_next(nlh, &len))
			if ((nlh->nlmsg_type & 0xff) == NFULNL_MSG_PACKET) {
				print_packet(nlh);
				seen++;
			}
	}
	mnl_socket_close(nl);
	return seen >= count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "sandbox"))
		return cmd_sandbox(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "host"))
		return cmd_host(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "nflog"))
		return cmd_nflog(argc, argv);
	fprintf(stderr, "usage: see the comment at the top of nft-apply.c\n");
	return 2;
}
