/* SPDX-License-Identifier: MIT */
/*
 * sluice's nftables rules, installed through libnftnl + libmnl (never by
 * running `nft`).
 *
 * Contract shared by every function here:
 *  - Each ruleset change is sent as ONE nfnetlink batch (BEGIN ... END), so
 *    the kernel applies all of it or none of it: there is never a moment
 *    with half a ruleset in force.
 *  - Every function returns >= 0 on success and a negative errno on failure.
 *    On failure, and only then, `err` (if not NULL and errlen > 0) receives a
 *    NUL-terminated message naming what was being installed and why the
 *    kernel refused it (its extended ACK message when it gave one), e.g.
 *    "installing chain 'output' in table inet sluice: Operation not
 *    permitted". Nothing here prints.
 *  - Every function works on the network namespace of the calling thread.
 *    Changing rules needs CAP_NET_ADMIN in that namespace (-EPERM otherwise).
 *  - Addresses and ports are in host byte order in the config structs; IPv4
 *    and IPv6 addresses as struct in_addr / in6_addr (network order, as
 *    inet_pton writes them).
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SL_NFT_MAX_PORTS 8

/* Table names. The sandbox table lives inside the sandbox's own namespace;
 * host tables are "sluice-<name>", one per sandbox; guard rules share one
 * persistent table with one chain per uid ("uid-<UID>"). */
#define SL_NFT_SANDBOX_TABLE "sluice"
#define SL_NFT_HOST_TABLE_PREFIX "sluice-"
#define SL_NFT_GUARD_TABLE "sluice-guard"

/* ---- The sandbox ruleset (applied inside the sandbox's namespace). ---- */

struct sl_nft_sandbox {
	struct in_addr gateway;                /* host end of the veth */
	uint16_t tcp_ports[SL_NFT_MAX_PORTS];  /* gateway TCP ports allowed */
	size_t n_tcp_ports;
	uint16_t udp_ports[SL_NFT_MAX_PORTS];  /* gateway UDP ports allowed */
	size_t n_udp_ports;
	uint16_t nflog_group;                  /* NFLOG group for blocked packets */
	/* Transparent capture: when non-zero, every other outbound TCP
	 * connection (any port) is DNATed to gateway:capture_port. */
	uint16_t capture_port;
	/* When non-zero, UDP and TCP to port 53 anywhere is DNATed to
	 * gateway:dns_port, for programs that ignore resolv.conf. */
	uint16_t dns_port;
};

/*
 * Replace table `inet sluice` in the current namespace with:
 *  - output (filter, policy drop): accept oif lo; accept IPv4
 *    established/related; accept TCP/UDP to the gateway on its ports (the
 *    capture and DNS ports are always among them); copy everything else to
 *    NFLOG `nflog_group` with prefix SL_NFT_NFLOG_PREFIX, then reject it
 *    (TCP reset, ICMP/ICMPv6 admin-prohibited otherwise) so clients fail at
 *    once instead of timing out.
 *  - input (filter, policy accept): drop every IPv6 packet not on lo, so the
 *    sandbox cannot use IPv6 at all, not even to answer.
 *  - nat_output (nat, dstnat), only with capture_port or dns_port: the
 *    redirections described above.
 * No owner flag: the table dies with the namespace. Applying again replaces
 * the previous table atomically.
 */
int sl_nft_sandbox_apply(const struct sl_nft_sandbox *cfg, char *err, size_t errlen);

#define SL_NFT_NFLOG_PREFIX "sluice-blocked: "

/* ---- A netlink socket kept open (for owner tables). ---- */

struct sl_nft;

/* Opens a NETLINK_NETFILTER socket in the current namespace. */
int sl_nft_open(struct sl_nft **ret, char *err, size_t errlen);
/* Closes it; every table created through it with the owner flag vanishes
 * with it (the kernel removes them). Accepts NULL. */
void sl_nft_close(struct sl_nft *nft);

/* ---- The host-side ruleset for one sandbox's veth. ---- */

struct sl_nft_host {
	const char *name;   /* sandbox name: table "sluice-<name>", <= 24 chars */
	const char *ifname; /* host end of the veth */
	struct in_addr addr; /* host end's address (the gateway's) */
	uint16_t tcp_ports[SL_NFT_MAX_PORTS];
	size_t n_tcp_ports;
	uint16_t udp_ports[SL_NFT_MAX_PORTS];
	size_t n_udp_ports;
};

/*
 * Replace table `inet sluice-<name>` (through `nft`'s socket) with:
 *  - input (filter, policy accept): from iifname `ifname`, accept only TCP
 *    and UDP to `addr` on the listed ports; drop the rest (the host's sshd,
 *    other addresses, other sandboxes' veths, 169.254.169.254);
 *  - forward (filter, policy accept): drop anything in or out of `ifname`,
 *    whatever net.ipv4.ip_forward says.
 * Only packets on `ifname` are matched; other interfaces are untouched.
 *
 * The table carries NFT_TABLE_F_OWNER (Linux >= 5.12): the kernel removes
 * it when `nft` is closed, also when sluice is SIGKILLed, and no other
 * socket may change it. Where the kernel refuses the flag (EOPNOTSUPP) the
 * table is created without it and *ret_owned is set to false: the caller
 * must then call sl_nft_host_delete() itself, and a later run must remove
 * leftovers (they fail closed: the veth stays blocked until then).
 * ret_owned may be NULL.
 */
int sl_nft_host_apply(struct sl_nft *nft, const struct sl_nft_host *cfg, bool *ret_owned,
		      char *err, size_t errlen);

/* Delete table `inet sluice-<name>`. -ENOENT if there is none. */
int sl_nft_host_delete(struct sl_nft *nft, const char *name, char *err, size_t errlen);

/* ---- Per-uid guard rules (host namespace, persistent). ---- */

struct sl_nft_guard {
	uid_t uid;
	int family;             /* AF_INET or AF_INET6: the gateway's */
	struct in_addr addr4;   /* with AF_INET */
	struct in6_addr addr6;  /* with AF_INET6 */
	uint16_t port;          /* gateway TCP port */
};

/*
 * Install or replace the rules for cfg->uid in the persistent table
 * `inet sluice-guard` (no owner flag: the rules must outlive sluice), as a
 * base chain "uid-<UID>" on hook output: packets from sockets of that uid
 * may go only to addr:port over TCP; TCP elsewhere gets a reset, anything
 * else (UDP, ICMP, IPv4 or IPv6, any protocol) an ICMP admin-prohibited,
 * and is dropped. Other uids are not matched. A second call for the same
 * uid flushes and refills that chain in the same batch: never duplicates.
 */
int sl_nft_guard_apply(const struct sl_nft_guard *cfg, char *err, size_t errlen);

/*
 * Remove the rules for `uid`; the table goes too when no other uid is left.
 * -ENOENT if that uid had none. Atomic against concurrent changes: the batch
 * carries the ruleset generation it was decided on, and is retried if the
 * ruleset changed in between.
 */
int sl_nft_guard_remove(uid_t uid, char *err, size_t errlen);
