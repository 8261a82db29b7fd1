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

struct sl_nft;

struct sl_nft_sandbox {
	struct in_addr gateway;                /* host end of the veth */
	uint16_t tcp_ports[SL_NFT_MAX_PORTS];  /* gateway TCP ports allowed */
	size_t n_tcp_ports;
	uint16_t udp_ports[SL_NFT_MAX_PORTS];  /* gateway UDP ports allowed */
	size_t n_udp_ports;
	uint16_t nflog_group;                  /* NFLOG group for blocked packets */
	/* Transparent capture: when non-zero, every other outbound TCP
	 * connection (any port) is redirected to 127.0.0.1:capture_port in
	 * the sandbox, where the caller keeps a listener. */
	uint16_t capture_port;
	/* With capture_port and capture_listed, only TCP connections to
	 * these ports are captured (the ports some rule could allow):
	 * another port's SYN is not redirected, so it meets the output
	 * chain's block (counted, copied to NFLOG, reset) and the client
	 * fails at once instead of being accepted and then closed. Without
	 * capture_listed, every port is captured. */
	bool capture_listed;
	const uint16_t *capture_tcp_ports;
	size_t n_capture_tcp_ports; /* at most SL_NFT_MAX_CAPTURE_PORTS */
	/* When non-zero, IPv4 UDP and TCP to port 53 anywhere is DNATed to
	 * gateway:dns_port, for programs that ignore resolv.conf. (IPv6 to
	 * port 53 is never redirected: it is blocked like any other IPv6.) */
	uint16_t dns_port;
	/* NFLOG copies of blocked packets, at most log_rate a second with
	 * bursts of log_burst (0: SL_NFT_LOG_RATE_DEFAULT, _BURST_DEFAULT).
	 * Packets over the limit are rejected all the same, only not copied;
	 * sl_nft_sandbox_counters() tells how many. */
	uint32_t log_rate;
	uint32_t log_burst;
};

/* More listed ports than this are refused (-EINVAL): one rule each, and a
 * policy that needs more is better captured whole (capture_listed off). */
#define SL_NFT_MAX_CAPTURE_PORTS 1024

#define SL_NFT_LOG_RATE_DEFAULT 20
#define SL_NFT_LOG_BURST_DEFAULT 100
/* The sandbox table's named counters: every packet the output chain
 * blocks, and those of them copied to NFLOG (under the rate limit). */
#define SL_NFT_COUNTER_BLOCKED "blocked"
#define SL_NFT_COUNTER_LOGGED "logged"


/*
 * Replace table `inet sluice` in the current namespace with:
 *  - output (filter, policy drop): accept oif lo; accept IPv4 TCP/UDP to
 *    the gateway's address on its ports (the capture and DNS ports are
 *    always among them); count everything else (counter "blocked"), copy
 *    it to NFLOG `nflog_group` with prefix SL_NFT_NFLOG_PREFIX under the
 *    rate limit (counter "logged"), then reject it (TCP reset, ICMP/ICMPv6
 *    admin-prohibited otherwise) so clients fail at once instead of timing
 *    out.
 *  - input (filter, policy accept): drop every IPv6 packet not on lo, so the
 *    sandbox cannot use IPv6 at all, not even to answer.
 *  - nat_output (nat, dstnat), only with capture_port or dns_port: the
 *    redirections described above.
 * No owner flag: the table dies with the namespace. Applying again replaces
 * the previous table atomically.
 */
int sl_nft_sandbox_apply(const struct sl_nft_sandbox *cfg, char *err, size_t errlen);
/* The same through `nft`, a socket of the caller's made in the sandbox's
 * namespace and kept open: closing an nftables socket waits (in the kernel,
 * for the closer) until the namespace's last commit is an RCU grace period
 * old, so a socket closed at once makes the start that much longer. */
int sl_nft_sandbox_apply_nft(struct sl_nft *nft, const struct sl_nft_sandbox *cfg, char *err,
			     size_t errlen);

/* Replace only which TCP ports are captured (cfg->capture_listed and its
 * ports; the rest of cfg as the table was made with), in one batch that
 * flushes and refills chain nat_output: a reload's new policy, applied
 * atomically. Connections already captured keep going. */
int sl_nft_sandbox_capture_update(struct sl_nft *nft, const struct sl_nft_sandbox *cfg,
				  char *err, size_t errlen);

/* Delete table `inet sluice` from the current namespace (`sluice attach`
 * leaves a container's namespace as it found it). -ENOENT if there is none. */
int sl_nft_sandbox_delete(char *err, size_t errlen);

#define SL_NFT_NFLOG_PREFIX "sluice-blocked: "

/* ---- A netlink socket kept open (for owner tables). ---- */

struct sl_nft;

/* Opens a NETLINK_NETFILTER socket in the current namespace. It stays
 * bound to that namespace, whichever thread uses it later. */
int sl_nft_open(struct sl_nft **ret, char *err, size_t errlen);
/* Its socket's fd, for handing a copy to a process that closes it later. */
int sl_nft_fd(const struct sl_nft *nft);
/* Closes it; every table created through it with the owner flag vanishes
 * with it (the kernel removes them). Accepts NULL. */
void sl_nft_close(struct sl_nft *nft);

/* The two counters of table inet sluice in nft's namespace, as packets
 * since the table was made: blocked, and copied to NFLOG. Their difference
 * is what the rate limit kept out of the log. -ENOENT without the table. */
int sl_nft_sandbox_counters(struct sl_nft *nft, uint64_t *ret_blocked, uint64_t *ret_logged,
			    char *err, size_t errlen);

/* ---- Raw frames: the netdev egress fence (`sluice attach`). ---- */

/* Table `netdev sluice`, in the namespace of an attached container. */
#define SL_NFT_EGRESS_TABLE "sluice"
#define SL_NFT_EGRESS_MAX_DEVICES 64

struct sl_nft_egress {
	const char *const *devices; /* interface names, each < IFNAMSIZ */
	size_t n_devices;           /* at most SL_NFT_EGRESS_MAX_DEVICES */
};

/*
 * Replace table `netdev sluice` in nft's namespace with one base chain per
 * device on the egress hook (Linux >= 5.16), policy drop and no rules: no
 * frame leaves those devices, also none an AF_PACKET socket writes (which
 * no inet hook sees, PACKET_QDISC_BYPASS included). With no device, the
 * table is removed instead. No owner flag: like table inet sluice it
 * fails closed if sluice dies, and goes with the namespace.
 * -EOPNOTSUPP (err says so) when the kernel has no egress hook.
 */
int sl_nft_egress_apply(struct sl_nft *nft, const struct sl_nft_egress *cfg, char *err,
			size_t errlen);
/* Delete table `netdev sluice`. -ENOENT if there is none. */
int sl_nft_egress_delete(struct sl_nft *nft, char *err, size_t errlen);

/* ---- The host-side ruleset for one sandbox's veth. ---- */

struct sl_nft_host {
	const char *name;   /* sandbox name: table "sluice-<name>", <= 24 chars */
	const char *ifname; /* host end of the veth */
	struct in_addr addr; /* host end's address (the gateway's) */
	struct in_addr peer; /* the sandbox end's: the only source served */
	uint16_t tcp_ports[SL_NFT_MAX_PORTS];
	size_t n_tcp_ports;
	uint16_t udp_ports[SL_NFT_MAX_PORTS];
	size_t n_udp_ports;
};

/*
 * Replace table `inet sluice-<name>` (through `nft`'s socket) with:
 *  - input (filter, policy accept): from iifname `ifname` and source
 *    `peer`, accept only TCP and UDP to `addr` on the listed ports; drop
 *    the rest from `ifname` (the host's sshd, other addresses, other
 *    sandboxes' veths, 169.254.169.254); and drop anything else to `addr`
 *    whatever it came in on: the gateway answers its sandbox only, not
 *    another uid on the host (whose packets come in on lo, with any local
 *    source address, also a freebound copy of `peer`), nor a neighbour or
 *    namespace that routes the pool's range here;
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

/* ---- Blocked packets: the NFLOG copies of the sandbox ruleset. ---- */

/* One blocked packet, as far as its headers say. Strings are NUL-terminated
 * addresses in inet_ntop form. */
struct sl_nft_blocked {
	int family;     /* AF_INET or AF_INET6 */
	uint8_t proto;  /* IPPROTO_*: IPv6's after the extension headers */
	char src[46], dst[46];
	uint16_t sport, dport; /* host order; 0 without has_l4 or for ICMP */
	uint8_t icmp_type;     /* ICMP / ICMPv6 with has_l4 */
	bool has_l4;           /* the ports (or ICMP type) were in the copy */
	uint32_t uid_or_minus1; /* the sending socket's uid, (uint32_t)-1 if none */
};

/*
 * Parse `pkt`, the first `len` bytes of a packet from its network header on
 * (NFLOG's payload: cut at the copy range, so a total length beyond `len`
 * is normal). `family_hint` is AF_INET, AF_INET6, or AF_UNSPEC to go by the
 * version nibble. Every read is bounds-checked; nothing beyond `len` or the
 * IP header's own length is touched. Returns 0 and fills *ret (with
 * uid_or_minus1 = (uint32_t)-1) when the IP header is whole and sound; the
 * L4 fields only when the copy holds them and the packet is a first (or
 * only) fragment. IPv6 extension headers are walked only as far as the L4
 * header (at most 8); where the copy or that limit ends the walk, proto is
 * the header reached and has_l4 is false. -EPROTONOSUPPORT: not IPv4/IPv6,
 * or not the hinted family; -EBADMSG: a truncated or inconsistent IP header
 * (under 20/40 bytes, IHL < 5, options past the copy, total length below
 * the header).
 */
int sl_nft_blocked_parse(const uint8_t *pkt, size_t len, int family_hint,
			 struct sl_nft_blocked *ret);

/*
 * A subscription to one NFLOG group, in the network namespace of the
 * calling thread (the sandbox's: NFLOG groups are per namespace). The fd
 * stays bound to that namespace wherever it is polled from.
 */
struct sl_nft_nflog;

/* Bind `group` (needs CAP_NET_ADMIN there; -EBUSY when another socket has
 * it) with packet copies of the first 128 bytes, per-group sequence numbers
 * (so losses are counted) and the sender's uid, and wait for the kernel's
 * ACK. The socket is non-blocking and close-on-exec. */
int sl_nft_nflog_open(uint16_t group, struct sl_nft_nflog **ret, char *err, size_t errlen);
/* The fd to poll for reading. */
int sl_nft_nflog_fd(const struct sl_nft_nflog *l);

typedef void (*sl_nft_blocked_fn)(const struct sl_nft_blocked *b, void *userdata);

/*
 * Make at most `max_datagrams` reads (a datagram holds one or more
 * packets) of what is readable now, and call fn for every packet that
 * carries SL_NFT_NFLOG_PREFIX and parses; others are skipped. Never blocks,
 * so a flood cannot hold the caller: what is left stays readable. Returns
 * the number of datagrams read (0: nothing was readable), or a negative
 * errno from recv other than EAGAIN and ENOBUFS. An ENOBUFS (the socket's
 * buffer overflowed, copies were lost) is counted, not returned.
 */
int sl_nft_nflog_read(struct sl_nft_nflog *l, unsigned max_datagrams, sl_nft_blocked_fn fn,
		      void *userdata);

/* Packets the kernel copied but that never reached us, counted from gaps
 * in the sequence numbers since the last call (so a loss shows once the
 * next packet arrives), and the ENOBUFS overflows seen; both reset. */
struct sl_nft_nflog_losses {
	uint64_t packets;
	uint64_t overflows;
};
void sl_nft_nflog_take_losses(struct sl_nft_nflog *l, struct sl_nft_nflog_losses *ret);

/* Unbinds (by closing) and frees. Accepts NULL. */
void sl_nft_nflog_close(struct sl_nft_nflog *l);
