/* SPDX-License-Identifier: MIT */
/*
 * sluice probe, the network: an attempt is one socket waiting for an
 * answer, and a batch runs them all at once in one poll loop (probe-net.c).
 * probe-dgram.c judges what comes back to datagrams: ICMP errors, DNS
 * answers, echo replies.
 */
#pragma once

#include <ifaddrs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "macro.h"
#include "probe.h"

#define SL_PROBE_MAX_ATTEMPTS (40 + SL_PROBE_MAX_TARGETS)

enum sl_probe_att_type {
	SL_ATT_TCP,	/* connect, send an HTTP request: escaped unless sluice refuses */
	SL_ATT_PROXY,	/* a request through the proxy: allowed or denied */
	SL_ATT_UDP,	/* a datagram: judged by the ICMP error that comes back */
	SL_ATT_DNS,	/* a DNS query over UDP: judged by the answer */
	SL_ATT_DNS_TCP, /* the same over TCP (RFC 1035 4.2.2: a length first) */
	SL_ATT_PING,	/* an ICMP echo request */
};

struct sl_probe_att {
	const char *kind;
	char target[96];
	enum sl_probe_att_type type;
	bool escape_if_allowed; /* SL_ATT_PROXY: the metadata address, not a TARGET */
	bool foreign;		/* SL_ATT_DNS*: a resolver that is not ours */
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

struct sl_probe_batch {
	struct sl_probe *p;
	struct sl_probe_att a[SL_PROBE_MAX_ATTEMPTS];
	size_t n;
	struct ifaddrs *ifs; /* this host's addresses, to tell who sent an ICMP error */
};

/* The attempt is over: its result and detail, and its socket closed. */
_printf_(3, 4) void sl_probe_finish(struct sl_probe_att *a, enum sl_probe_result r, const char *fmt,
				    ...);

socklen_t sl_probe_make_addr(struct sockaddr_storage *ss, int family, const void *addr,
			     uint16_t port);

/* An error is queued on a datagram socket: read it (IP_RECVERR) and
 * finish the attempt by who sent it. */
void sl_probe_judge_icmp_error(struct sl_probe_batch *b, struct sl_probe_att *a);

/* A query for NAME's A records with the given ID into buf: its length, or
 * 0 when it does not fit. */
size_t sl_probe_dns_query(const char *name, uint16_t id, char *buf, size_t len);

/* Finish a DNS attempt by the answer `msg` (untrusted: only the header is
 * read, bounds-checked). */
void sl_probe_judge_dns(struct sl_probe_att *a, const uint8_t *msg, size_t len, const char *name);

/* The first nameserver of /etc/resolv.conf, port 53; 0 when there is none. */
socklen_t sl_probe_resolv_conf(struct sockaddr_storage *ss);

/* A socket to send ICMP echo requests (a ping socket, else a raw one, which
 * sets a->raw); -1 after finishing the attempt as blocked. */
int sl_probe_open_ping(struct sl_probe_att *a, int family);

/* The echo request into a->req. */
void sl_probe_echo_request(struct sl_probe_att *a, int family);

/* Whether what the ping socket read is the reply to ours. */
bool sl_probe_is_echo_reply(const struct sl_probe_att *a, const uint8_t *d, size_t n);
