/* SPDX-License-Identifier: MIT */
/*
 * The three rulesets, as plans (pure: see nft-internal.h). The rule order
 * inside each chain is the policy: read the chains top to bottom.
 */
/* Before any linux/ header, which would define these types again. */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "nft-internal.h"

/* The loopback device has this index in every namespace (Linux's
 * LOOPBACK_IFINDEX), so rules need not look it up. */
#define LO_IFINDEX 1u

/* Chain priorities as nft names them: "filter", "dstnat" and "srcnat". */
#define PRIO_FILTER 0
#define PRIO_DSTNAT (-100)
#define PRIO_SRCNAT 100

#define TRY(expr)                                                              \
	do {                                                                   \
		int _r = (expr);                                               \
		if (_r < 0)                                                    \
			return _r;                                             \
	} while (0)

static bool port_in(const uint16_t *ports, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

static int check_ports(const char *what, const uint16_t *ports, size_t n, char *err,
		       size_t errlen)
{
	if (n > SL_NFT_MAX_PORTS) {
		sl_nft_set_err(err, errlen, "%s: %zu ports, at most %d", what, n,
			       SL_NFT_MAX_PORTS);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!ports[i]) {
			sl_nft_set_err(err, errlen, "%s: port 0 is not a port", what);
			return -EINVAL;
		}
	return 0;
}

/* "accept tcp to gateway 10.0.0.1:3128" for each port; with ifname and
 * saddr, only from that interface and source ("... from 10.0.0.2"). Every
 * rule names the IPv4 destination (and so nfproto ipv4) and the L4
 * protocol: UDP and TCP alike, nothing to the port on another address or
 * over IPv6 passes. */
static int accept_ports4(struct sl_nft_plan *plan, const char *table, const char *chain,
			 const char *ifname, const struct in_addr *saddr, struct in_addr addr,
			 uint8_t proto, const uint16_t *ports, size_t n)
{
	char a[INET_ADDRSTRLEN], from[INET_ADDRSTRLEN + 8] = "", comment[112];
	struct sl_nft_rb rb;

	inet_ntop(AF_INET, &addr, a, sizeof(a));
	if (saddr) {
		char sa[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, saddr, sa, sizeof(sa));
		snprintf(from, sizeof(from), " from %s", sa);
	}
	for (size_t i = 0; i < n; i++) {
		sl_nft_rb_start(&rb, table, chain);
		if (ifname)
			sl_nft_match_iifname(&rb, ifname);
		if (saddr)
			sl_nft_match_saddr4(&rb, *saddr);
		sl_nft_match_daddr4(&rb, addr);
		sl_nft_match_dport(&rb, proto, ports[i]);
		sl_nft_act_verdict(&rb, NF_ACCEPT);
		snprintf(comment, sizeof(comment), "accept %s to gateway %s:%u%s",
			 proto == IPPROTO_TCP ? "tcp" : "udp", a, ports[i], from);
		TRY(sl_nft_plan_add_rule(plan, &rb, comment));
	}
	return 0;
}

/* Reject: a reset for TCP, admin-prohibited for the rest, so the client
 * fails at once instead of waiting for a timeout. With `uid`, only packets
 * of that uid's sockets are matched. */
static int reject_rest(struct sl_nft_plan *plan, const char *table, const char *chain,
		       const uid_t *uid)
{
	struct sl_nft_rb rb;

	sl_nft_rb_start(&rb, table, chain);
	if (uid)
		sl_nft_match_skuid(&rb, *uid, true);
	sl_nft_match_l4proto(&rb, IPPROTO_TCP);
	sl_nft_act_reject_tcp(&rb);
	TRY(sl_nft_plan_add_rule(plan, &rb, "reject tcp with reset"));

	sl_nft_rb_start(&rb, table, chain);
	if (uid)
		sl_nft_match_skuid(&rb, *uid, true);
	sl_nft_act_reject_admin(&rb);
	TRY(sl_nft_plan_add_rule(plan, &rb, "reject the rest, admin-prohibited"));

	/* Not reached (reject drops), but says what the chain ends in even
	 * when read by someone who does not know that. */
	sl_nft_rb_start(&rb, table, chain);
	if (uid)
		sl_nft_match_skuid(&rb, *uid, true);
	sl_nft_act_verdict(&rb, NF_DROP);
	return sl_nft_plan_add_rule(plan, &rb, "drop");
}

/* ---- sandbox ---- */

/* The rules of chain nat_output (made already). */
static int nat_output_rules(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg)
{
	const char *t = SL_NFT_SANDBOX_TABLE, *c = "nat_output";
	struct sl_nft_rb rb;

	sl_nft_rb_start(&rb, t, c);
	sl_nft_match_oif(&rb, LO_IFINDEX);
	sl_nft_act_verdict(&rb, NF_ACCEPT);
	TRY(sl_nft_plan_add_rule(plan, &rb, "no redirection on lo"));

	sl_nft_rb_start(&rb, t, c);
	sl_nft_match_daddr4(&rb, cfg->gateway);
	sl_nft_act_verdict(&rb, NF_ACCEPT);
	TRY(sl_nft_plan_add_rule(plan, &rb, "no redirection to the gateway itself"));

	if (cfg->dns_port) {
		static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP };

		/* IPv4 only, UDP as TCP: the DNAT is to an IPv4 address, and
		 * IPv6 to port 53 (an attached container may keep IPv6 on its
		 * own links) must meet the filter's reject, not slip through
		 * a NAT rule that cannot apply to it. */
		for (size_t i = 0; i < ELEMENTSOF(protos); i++) {
			sl_nft_rb_start(&rb, t, c);
			sl_nft_match_nfproto(&rb, NFPROTO_IPV4);
			sl_nft_match_dport(&rb, protos[i], 53);
			sl_nft_act_dnat4(&rb, cfg->gateway, cfg->dns_port);
			TRY(sl_nft_plan_add_rule(plan, &rb,
						 protos[i] == IPPROTO_UDP ? "dns over udp to the gateway"
									  : "dns over tcp to the gateway"));
		}
	}
	if (cfg->capture_port && cfg->capture_listed) {
		char comment[64];

		/* Only the ports a rule could allow: the SYN to any other is
		 * not redirected, and the filter's block resets it (and logs
		 * it), as it does every packet that is not for the gateway. */
		for (size_t i = 0; i < cfg->n_capture_tcp_ports; i++) {
			sl_nft_rb_start(&rb, t, c);
			sl_nft_match_nfproto(&rb, NFPROTO_IPV4);
			sl_nft_match_dport(&rb, IPPROTO_TCP, cfg->capture_tcp_ports[i]);
			sl_nft_act_redirect(&rb, cfg->capture_port);
			snprintf(comment, sizeof(comment), "capture tcp to port %u",
				 cfg->capture_tcp_ports[i]);
			TRY(sl_nft_plan_add_rule(plan, &rb, comment));
		}
	} else if (cfg->capture_port) {
		sl_nft_rb_start(&rb, t, c);
		sl_nft_match_nfproto(&rb, NFPROTO_IPV4);
		sl_nft_match_l4proto(&rb, IPPROTO_TCP);
		/* To a listener inside the sandbox itself: there the
		 * connection's original destination can be asked for
		 * (SO_ORIGINAL_DST answers only in the namespace that did the
		 * NAT), and when sluice is gone the port is simply closed. */
		sl_nft_act_redirect(&rb, cfg->capture_port);
		TRY(sl_nft_plan_add_rule(plan, &rb, "capture every other tcp connection"));
	}
	return 0;
}

static int check_capture(const struct sl_nft_sandbox *cfg, char *err, size_t errlen)
{
	if (!cfg->capture_listed)
		return 0;
	if (cfg->n_capture_tcp_ports > SL_NFT_MAX_CAPTURE_PORTS) {
		sl_nft_set_err(err, errlen, "sandbox ruleset: %zu captured ports, at most %d",
			       cfg->n_capture_tcp_ports, SL_NFT_MAX_CAPTURE_PORTS);
		return -EINVAL;
	}
	if (cfg->n_capture_tcp_ports && !cfg->capture_tcp_ports) {
		sl_nft_set_err(err, errlen, "sandbox ruleset: captured ports missing");
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_capture_tcp_ports; i++)
		if (!cfg->capture_tcp_ports[i]) {
			sl_nft_set_err(err, errlen, "sandbox ruleset: captured port 0 is not a port");
			return -EINVAL;
		}
	return 0;
}

static int sandbox_nat(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg)
{
	const char *t = SL_NFT_SANDBOX_TABLE, *c = "nat_output";
	struct sl_nft_rb rb;

	TRY(sl_nft_plan_add_chain(plan, t, c, "nat", NF_INET_LOCAL_OUT, PRIO_DSTNAT, NF_ACCEPT));
	TRY(nat_output_rules(plan, cfg));
	if (cfg->dns_port) {
		/* A query to a resolver on one of an attached container's own
		 * links left with that link's address as its source, and the
		 * DNAT keeps it. To the gateway it must come from the
		 * sandbox's own address, the only one the host side serves:
		 * the veth's, which masquerade picks. */
		TRY(sl_nft_plan_add_chain(plan, t, "nat_postrouting", "nat", NF_INET_POST_ROUTING,
					  PRIO_SRCNAT, NF_ACCEPT));
		sl_nft_rb_start(&rb, t, "nat_postrouting");
		sl_nft_match_daddr4(&rb, cfg->gateway);
		sl_nft_act_masquerade(&rb);
		TRY(sl_nft_plan_add_rule(plan, &rb, "to the gateway from the sandbox's own address"));
	}
	return 0;
}

int sl_nft_sandbox_capture_plan(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg,
				char *err, size_t errlen)
{
	if (cfg->gateway.s_addr == htonl(INADDR_ANY) || !cfg->capture_port) {
		sl_nft_set_err(err, errlen, "sandbox capture: no gateway address or capture port");
		return -EINVAL;
	}
	TRY(check_capture(cfg, err, errlen));
	/* Flush and refill in one batch: no moment without the chain's
	 * rules, nor with both lists. */
	TRY(sl_nft_plan_flush_chain(plan, SL_NFT_SANDBOX_TABLE, "nat_output"));
	return nat_output_rules(plan, cfg);
}

int sl_nft_sandbox_plan(struct sl_nft_plan *plan, const struct sl_nft_sandbox *cfg, char *err,
			size_t errlen)
{
	const char *t = SL_NFT_SANDBOX_TABLE;
	uint16_t tcp[SL_NFT_MAX_PORTS + 2], udp[SL_NFT_MAX_PORTS + 1];
	size_t n_tcp, n_udp;
	struct sl_nft_rb rb;

	if (cfg->gateway.s_addr == htonl(INADDR_ANY)) {
		sl_nft_set_err(err, errlen, "sandbox ruleset: no gateway address");
		return -EINVAL;
	}
	TRY(check_ports("sandbox ruleset: gateway tcp ports", cfg->tcp_ports, cfg->n_tcp_ports,
			err, errlen));
	TRY(check_ports("sandbox ruleset: gateway udp ports", cfg->udp_ports, cfg->n_udp_ports,
			err, errlen));
	TRY(check_capture(cfg, err, errlen));

	/* The DNS port is a gateway port too: what the NAT chain sends there
	 * must then pass the filter. (Capture goes to lo, which passes.) */
	memcpy(tcp, cfg->tcp_ports, cfg->n_tcp_ports * sizeof(tcp[0]));
	n_tcp = cfg->n_tcp_ports;
	memcpy(udp, cfg->udp_ports, cfg->n_udp_ports * sizeof(udp[0]));
	n_udp = cfg->n_udp_ports;
	if (cfg->dns_port && !port_in(tcp, n_tcp, cfg->dns_port))
		tcp[n_tcp++] = cfg->dns_port;
	if (cfg->dns_port && !port_in(udp, n_udp, cfg->dns_port))
		udp[n_udp++] = cfg->dns_port;

	/* Add, delete, add: the batch replaces whatever table of that name
	 * was there (the idiom `nft` uses), and works when there was none. */
	TRY(sl_nft_plan_add_table(plan, t, 0));
	TRY(sl_nft_plan_del_table(plan, t));
	TRY(sl_nft_plan_add_table(plan, t, 0));
	TRY(sl_nft_plan_add_counter(plan, t, SL_NFT_COUNTER_BLOCKED));
	TRY(sl_nft_plan_add_counter(plan, t, SL_NFT_COUNTER_LOGGED));
	TRY(sl_nft_plan_add_chain(plan, t, "output", "filter", NF_INET_LOCAL_OUT, PRIO_FILTER,
				  NF_DROP));
	TRY(sl_nft_plan_add_chain(plan, t, "input", "filter", NF_INET_LOCAL_IN, PRIO_FILTER,
				  NF_ACCEPT));

	sl_nft_rb_start(&rb, t, "output");
	sl_nft_match_oif(&rb, LO_IFINDEX);
	sl_nft_act_verdict(&rb, NF_ACCEPT);
	TRY(sl_nft_plan_add_rule(plan, &rb, "accept lo"));

	/* No "accept established,related": every packet the sandbox may send
	 * is to the gateway's ports or on lo, and those rules match it
	 * already. Such a rule would only add answers to connections opened
	 * from outside, which in an attached container's namespace (with
	 * links of its own) is a way out: a peer connects in and the agent
	 * streams to it. */
	TRY(accept_ports4(plan, t, "output", NULL, NULL, cfg->gateway, IPPROTO_TCP, tcp, n_tcp));
	TRY(accept_ports4(plan, t, "output", NULL, NULL, cfg->gateway, IPPROTO_UDP, udp, n_udp));
	if (cfg->capture_port) {
		/* A redirected connection still carries its first output
		 * device (the veth) through this hook, not lo: accept it by
		 * its rewritten destination, the capture listener. */
		struct in_addr loopback = { .s_addr = htonl(INADDR_LOOPBACK) };

		TRY(accept_ports4(plan, t, "output", NULL, NULL, loopback, IPPROTO_TCP,
				  &cfg->capture_port, 1));
	}

	/* Every packet from here on is blocked. Each is counted; copies to
	 * NFLOG (one audit record each) are rate-limited, so that a loop of
	 * sends cannot fill the disk or drown the log; packets over the limit
	 * are rejected all the same. The gateway reports the difference of
	 * the two counters as a record of its own. */
	sl_nft_rb_start(&rb, t, "output");
	sl_nft_act_counter_ref(&rb, SL_NFT_COUNTER_BLOCKED);
	TRY(sl_nft_plan_add_rule(plan, &rb, "count blocked packets"));

	sl_nft_rb_start(&rb, t, "output");
	sl_nft_match_limit(&rb, cfg->log_rate ? cfg->log_rate : SL_NFT_LOG_RATE_DEFAULT,
			   cfg->log_burst ? cfg->log_burst : SL_NFT_LOG_BURST_DEFAULT);
	sl_nft_act_counter_ref(&rb, SL_NFT_COUNTER_LOGGED);
	sl_nft_act_log(&rb, cfg->nflog_group, SL_NFT_NFLOG_PREFIX);
	TRY(sl_nft_plan_add_rule(plan, &rb, "copy blocked packets to nflog, rate-limited"));
	TRY(reject_rest(plan, t, "output", NULL));

	/* No IPv6 at all: not even router advertisements or answers. */
	sl_nft_rb_start(&rb, t, "input");
	sl_nft_match_nfproto(&rb, NFPROTO_IPV6);
	sl_nft_match_iif_not(&rb, LO_IFINDEX);
	sl_nft_act_verdict(&rb, NF_DROP);
	TRY(sl_nft_plan_add_rule(plan, &rb, "drop ipv6 not on lo"));

	if (cfg->capture_port || cfg->dns_port)
		TRY(sandbox_nat(plan, cfg));
	return 0;
}

/* ---- host side ---- */

int sl_nft_host_plan(struct sl_nft_plan *plan, const struct sl_nft_host *cfg, bool owner,
		     char *err, size_t errlen)
{
	char t[64];
	struct sl_nft_rb rb;

	if (!cfg->name || !*cfg->name || strlen(cfg->name) > 24 || strchr(cfg->name, '/')) {
		sl_nft_set_err(err, errlen, "host ruleset: bad sandbox name '%s'",
			       cfg->name ? cfg->name : "");
		return -EINVAL;
	}
	if (!cfg->ifname || !*cfg->ifname || strlen(cfg->ifname) >= IFNAMSIZ) {
		sl_nft_set_err(err, errlen, "host ruleset: bad interface name '%s'",
			       cfg->ifname ? cfg->ifname : "");
		return -EINVAL;
	}
	if (cfg->addr.s_addr == htonl(INADDR_ANY)) {
		sl_nft_set_err(err, errlen, "host ruleset: no host end address");
		return -EINVAL;
	}
	if (cfg->peer.s_addr == htonl(INADDR_ANY) || cfg->peer.s_addr == cfg->addr.s_addr) {
		sl_nft_set_err(err, errlen, "host ruleset: no sandbox end address");
		return -EINVAL;
	}
	TRY(check_ports("host ruleset: gateway tcp ports", cfg->tcp_ports, cfg->n_tcp_ports, err,
			errlen));
	TRY(check_ports("host ruleset: gateway udp ports", cfg->udp_ports, cfg->n_udp_ports, err,
			errlen));
	snprintf(t, sizeof(t), SL_NFT_HOST_TABLE_PREFIX "%s", cfg->name);

	/* Replace a leftover of the same name (a run that lost its owner
	 * flag to an old kernel, or crashed); an owned table of a live
	 * sluice is refused by the kernel with EPERM instead. */
	TRY(sl_nft_plan_add_table(plan, t, 0));
	TRY(sl_nft_plan_del_table(plan, t));
	TRY(sl_nft_plan_add_table(plan, t, owner ? NFT_TABLE_F_OWNER : 0));
	/* Policy accept: these chains see every interface and must decide
	 * only about the veth. */
	TRY(sl_nft_plan_add_chain(plan, t, "input", "filter", NF_INET_LOCAL_IN, PRIO_FILTER,
				  NF_ACCEPT));
	TRY(sl_nft_plan_add_chain(plan, t, "forward", "filter", NF_INET_FORWARD, PRIO_FILTER,
				  NF_ACCEPT));

	/* The sandbox's own address on its own veth, both: a local process
	 * can bind any source (IP_FREEBIND, no privilege needed) but its
	 * packets come in on lo; a neighbour can spoof the source but not
	 * the interface. */
	TRY(accept_ports4(plan, t, "input", cfg->ifname, &cfg->peer, cfg->addr, IPPROTO_TCP,
			  cfg->tcp_ports, cfg->n_tcp_ports));
	TRY(accept_ports4(plan, t, "input", cfg->ifname, &cfg->peer, cfg->addr, IPPROTO_UDP,
			  cfg->udp_ports, cfg->n_udp_ports));
	sl_nft_rb_start(&rb, t, "input");
	sl_nft_match_iifname(&rb, cfg->ifname);
	sl_nft_act_verdict(&rb, NF_DROP);
	TRY(sl_nft_plan_add_rule(plan, &rb, "drop the rest from the sandbox"));

	/* Whatever else reaches the host end's address is not the sandbox:
	 * another uid here (on lo, whatever source it chose), a host on the
	 * LAN or a namespace that routes the pool's range to us. The
	 * gateway injects the operator's credentials: it must not serve
	 * them. Dropped, every protocol and port. */
	sl_nft_rb_start(&rb, t, "input");
	sl_nft_match_daddr4(&rb, cfg->addr);
	sl_nft_act_verdict(&rb, NF_DROP);
	TRY(sl_nft_plan_add_rule(plan, &rb, "drop anything else to the host end: not the sandbox"));

	sl_nft_rb_start(&rb, t, "forward");
	sl_nft_match_iifname(&rb, cfg->ifname);
	sl_nft_act_verdict(&rb, NF_DROP);
	TRY(sl_nft_plan_add_rule(plan, &rb, "never forward from the sandbox"));

	sl_nft_rb_start(&rb, t, "forward");
	sl_nft_match_oifname(&rb, cfg->ifname);
	sl_nft_act_verdict(&rb, NF_DROP);
	return sl_nft_plan_add_rule(plan, &rb, "never forward to the sandbox");
}

/* ---- guard ---- */

void sl_nft_guard_chain_name(uid_t uid, char *buf, size_t len)
{
	snprintf(buf, len, "uid-%u", (unsigned)uid);
}

int sl_nft_guard_plan(struct sl_nft_plan *plan, const struct sl_nft_guard *cfg, char *err,
		      size_t errlen)
{
	const char *t = SL_NFT_GUARD_TABLE;
	char c[32], a[INET6_ADDRSTRLEN], comment[96];
	struct sl_nft_rb rb;

	if (cfg->family != AF_INET && cfg->family != AF_INET6) {
		sl_nft_set_err(err, errlen, "guard: the gateway must be IPv4 or IPv6");
		return -EINVAL;
	}
	if (!cfg->port) {
		sl_nft_set_err(err, errlen, "guard: gateway port 0 is not a port");
		return -EINVAL;
	}
	if (cfg->uid == (uid_t)-1) {
		sl_nft_set_err(err, errlen, "guard: uid %u is not a uid", (unsigned)cfg->uid);
		return -EINVAL;
	}
	sl_nft_guard_chain_name(cfg->uid, c, sizeof(c));

	/* One base chain per uid: created if missing, emptied, refilled, all
	 * in this batch, so a second guard replaces and never duplicates, and
	 * no packet ever sees the chain empty (the batch is atomic). */
	TRY(sl_nft_plan_add_table(plan, t, 0));
	TRY(sl_nft_plan_add_chain(plan, t, c, "filter", NF_INET_LOCAL_OUT, PRIO_FILTER,
				  NF_ACCEPT));
	TRY(sl_nft_plan_flush_chain(plan, t, c));

	/* Every rule matches the uid with "==", never one "!= uid accept" up
	 * front: packets without a full socket (the kernel's resets and ICMP
	 * errors, a listener's SYN-ACK, IPv6 neighbour discovery) have no uid,
	 * so "!=" would not match them either and they would fall through to
	 * the rejects. They carry nothing the uid chose and pass untouched.
	 *
	 * Neither "oif lo" nor "ct state established" is accepted: the first
	 * would open every local service (sshd, a database, an unfiltered
	 * proxy), the second lets the uid answer anyone who connects to it.
	 * Every packet of a connection to the gateway matches this rule. */
	sl_nft_rb_start(&rb, t, c);
	sl_nft_match_skuid(&rb, cfg->uid, true);
	if (cfg->family == AF_INET) {
		sl_nft_match_daddr4(&rb, cfg->addr4);
		inet_ntop(AF_INET, &cfg->addr4, a, sizeof(a));
	} else {
		sl_nft_match_daddr6(&rb, &cfg->addr6);
		inet_ntop(AF_INET6, &cfg->addr6, a, sizeof(a));
	}
	sl_nft_match_dport(&rb, IPPROTO_TCP, cfg->port);
	sl_nft_act_verdict(&rb, NF_ACCEPT);
	snprintf(comment, sizeof(comment), cfg->family == AF_INET ? "accept tcp to gateway %s:%u"
								  : "accept tcp to gateway [%s]:%u",
		 a, cfg->port);
	TRY(sl_nft_plan_add_rule(plan, &rb, comment));

	return reject_rest(plan, t, c, &cfg->uid);
}

int sl_nft_guard_remove_plan(struct sl_nft_plan *plan, uid_t uid, bool last)
{
	char c[32];

	if (last)
		return sl_nft_plan_del_table(plan, SL_NFT_GUARD_TABLE);
	sl_nft_guard_chain_name(uid, c, sizeof(c));
	return sl_nft_plan_del_chain(plan, SL_NFT_GUARD_TABLE, c);
}

/* ---- egress (attach) ---- */

int sl_nft_egress_plan(struct sl_nft_plan *plan, const struct sl_nft_egress *cfg, char *err,
		       size_t errlen)
{
	const char *t = SL_NFT_EGRESS_TABLE;
	char chain[IFNAMSIZ + 16];

	if (cfg->n_devices > SL_NFT_EGRESS_MAX_DEVICES) {
		sl_nft_set_err(err, errlen, "egress ruleset: %zu devices, at most %d",
			       cfg->n_devices, SL_NFT_EGRESS_MAX_DEVICES);
		return -EINVAL;
	}
	for (size_t i = 0; i < cfg->n_devices; i++) {
		const char *d = cfg->devices[i];

		if (!d || !*d || strlen(d) >= IFNAMSIZ) {
			sl_nft_set_err(err, errlen, "egress ruleset: bad device name '%s'",
				       d ? d : "");
			return -EINVAL;
		}
	}
	/* Add and delete: whatever was there goes (also when nothing was);
	 * then, with devices, the table again, in the same batch. */
	TRY(sl_nft_plan_add_netdev_table(plan, t));
	TRY(sl_nft_plan_del_netdev_table(plan, t));
	if (!cfg->n_devices)
		return 0;
	TRY(sl_nft_plan_add_netdev_table(plan, t));
	/* No rules: the policy drops every frame, IP or not, whoever wrote
	 * it (an AF_PACKET socket, the kernel's own ARP and neighbour
	 * discovery). Nothing of ours leaves by these devices: the sandbox
	 * ruleset allows only the gateway, which is on the veth. */
	for (size_t i = 0; i < cfg->n_devices; i++) {
		snprintf(chain, sizeof(chain), "egress-%s", cfg->devices[i]);
		TRY(sl_nft_plan_add_egress_chain(plan, t, chain, cfg->devices[i], PRIO_FILTER,
						 NF_DROP));
	}
	return 0;
}
