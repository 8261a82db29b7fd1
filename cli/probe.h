/* SPDX-License-Identifier: MIT */
/*
 * sluice probe: what the probes share. The command (probe.c) owns the
 * options, the report and the time budget; each probe-*.c file tries one
 * family of escapes and reports one line per attempt through
 * sl_probe_report().
 *
 * The probes are deliberately independent of sluice's own libraries: they
 * act as an attacker inside the sandbox would, with the kernel's interfaces
 * only (sockets, netlink, /proc, ioctls), so that they test the boundary and
 * not our idea of it.
 */
#pragma once

#include <dirent.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "macro.h"

/* At most this many TARGETs: each is one connection at the same time. */
#define SL_PROBE_MAX_TARGETS 32

static inline void sl_probe_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void sl_probe_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

enum sl_probe_result {
	SL_PROBE_BLOCKED,
	SL_PROBE_ESCAPED,
	SL_PROBE_SKIPPED,
	SL_PROBE_ALLOWED, /* a TARGET the gateway let through: informational */
	SL_PROBE_DENIED,  /* a TARGET the gateway refused: informational */
};

struct sl_probe {
	/* The "outside host": a TEST-NET address unless --outside names one.
	 * It must be an address the policy does not allow. */
	struct in_addr outside4;
	struct in6_addr outside6;

	pid_t outside_pid; /* --outside-pid, 0 when not given */
	char **allow_write;
	size_t n_allow_write;
	char **secret_files;
	size_t n_secret_files;
	const char *denied_name;
	char **only; /* --only KIND,... (NULL: every probe) */
	size_t n_only;
	char **targets;
	size_t n_targets;

	/* The explicit proxy from HTTP_PROXY (sluice run sets it) and the
	 * host end: the proxy's address, else the default route's gateway. */
	struct sockaddr_storage proxy;
	socklen_t proxy_len;
	struct in_addr host_end;
	bool have_host_end;

	int timeout_ms;      /* each wait for an answer */
	uint64_t deadline;   /* the whole run, CLOCK_MONOTONIC in ms */
	unsigned counts[5];  /* by enum sl_probe_result */
};

/* One line of the report: RESULT KIND TARGET DETAIL. Flushed at once, so a
 * probe that hangs (it should not) still leaves what came before. */
_printf_(5, 6) void sl_probe_report(struct sl_probe *p, enum sl_probe_result r, const char *kind,
				    const char *target, const char *fmt, ...);

/* Whether --only lets KIND run. */
bool sl_probe_wanted(const struct sl_probe *p, const char *kind);

/* Milliseconds now (CLOCK_MONOTONIC), and what is left of the whole run's
 * budget, never more than `want`, never less than 0. */
uint64_t sl_probe_now_ms(void);
int sl_probe_wait_ms(const struct sl_probe *p, int want);

/* "203.0.113.99:80", "[2001:db8::99]:443", or the address alone when
 * port is 0; always NUL-terminated. */
void sl_probe_fmt_addr(const struct sockaddr *sa, char *buf, size_t len);

/* Whether NAME can be asked for in a DNS query (labels of 1 to 63 bytes,
 * at most 253 in all). */
bool sl_probe_dns_name_ok(const char *name);

/* The families of probes, in the order the report lists them. */
void sl_probe_net(struct sl_probe *p);     /* probe-net.c: TCP, UDP, ICMP, DNS, TARGETs */
void sl_probe_sockets(struct sl_probe *p); /* probe-local.c: raw, packet, Unix sockets */
void sl_probe_files(struct sl_probe *p);   /* probe-local.c: writes, reads, /tmp */
void sl_probe_procs(struct sl_probe *p);   /* probe-proc.c: pid namespace, kill, ptrace, tty */
void sl_probe_kernel(struct sl_probe *p);  /* probe-proc.c: privileges, nft, route, sysctl... */
