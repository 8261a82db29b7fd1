/* SPDX-License-Identifier: MIT */
/*
 * File descriptors for --max-connections. Each connection holds two (the
 * client's and the origin's); the rest is a fixed reserve. With the usual
 * soft limit of 1024, the default 512 connections would run out before
 * the cap, and the first to fail would be c-ares' sockets and upstream
 * connects: lookups and connects refused for no reason anyone could see.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "gateway.h"
#include "splice.h"

/* Beyond two per connection: idle pooled origin connections (inspect-upstream.c's
 * POOL_MAX, 32, and conn-pool.c's for plain HTTP, 64), DNS over TCP clients
 * (dns.c's DNS_MAX_TCP, 64), and a margin for the listeners, c-ares'
 * sockets, the loop's own descriptors, the audit log, the netlink watch,
 * the pipes of splice.c (made at start, two descriptors each), and
 * connections accepted past the cap that are answered 503. */
#define FD_RESERVE (32 + 64 + 64 + 128)
_Static_assert(2 * SL_SPLICE_PIPES_MAX <= 128 / 4, "splice.c's pipes would take the margin");

unsigned long sl_gw_fds_needed(unsigned max_connections)
{
	return 2UL * max_connections + FD_RESERVE;
}

int sl_gw_reserve_fds(unsigned max_connections, char *err, size_t errlen)
{
	unsigned long need = sl_gw_fds_needed(max_connections);
	struct rlimit rl, want;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		snprintf(err, errlen, "reading the open-file limit: %s", strerror(errno));
		return -errno;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	want.rlim_cur = need;
	want.rlim_max = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? rl.rlim_max : need;
	/* Raising the soft limit up to the hard one is always allowed; past
	 * it needs CAP_SYS_RESOURCE (and fs.nr_open's room). */
	if (setrlimit(RLIMIT_NOFILE, &want) == 0)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max > FD_RESERVE)
		snprintf(err, errlen,
			 "%u connections need %lu open files, more than the limit of %lu (and it "
			 "cannot be raised: %s): raise it (ulimit -n, LimitNOFILE=) or allow at most "
			 "%lu connections",
			 max_connections, need, (unsigned long)rl.rlim_max, strerror(errno),
			 (unsigned long)(rl.rlim_max - FD_RESERVE) / 2);
	else
		snprintf(err, errlen,
			 "%u connections need %lu open files, more than the limit of %lu (and it "
			 "cannot be raised: %s): raise it (ulimit -n, LimitNOFILE=)",
			 max_connections, need, (unsigned long)rl.rlim_max, strerror(errno));
	return -EMFILE;
}
