/* SPDX-License-Identifier: MIT */
/*
 * What `sluice attach` must know about a namespace that is not its own, and
 * keep knowing while attached (attach-watch.c):
 *
 *  - who could undo the fence: a namespace owned by another user namespace
 *    (rootless Podman, LXC: root in there has CAP_NET_ADMIN over it), or a
 *    process in it that holds CAP_NET_ADMIN (it can delete table inet
 *    sluice and add a route);
 *  - which interfaces it has besides lo and sluice's veth, now and whenever
 *    one is added or renamed: their raw frames (AF_PACKET, which no inet
 *    hook sees) are dropped at the netdev egress hook;
 *  - whether anything but sluice still holds it: a process in it, an open
 *    file of it, a bind mount of it. Until nothing does, it can be entered
 *    again, so the fence stays.
 *
 * Same conventions as netns.h: negative errno, err filled on failure only,
 * nothing printed.
 */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "netns.h"

/*
 * Refuse a namespace sluice cannot fence for good (-EPERM, err says why and
 * what to do): one owned by a user namespace other than sluice's own, or
 * one with a process in it (sluice's user namespace; also `pid` when > 0,
 * the --pid target) that holds CAP_NET_ADMIN (in its effective, permitted
 * or ambient set). Processes are found through /proc, which must show the
 * whole pid namespace they live in. Not seen: a process that could gain it
 * later (root executing a program, with CAP_NET_ADMIN in its bounding set
 * and without SECBIT_NOROOT; a setuid or file-capability binary), or one
 * that enters the namespace later (`docker exec --privileged`).
 */
int sl_netns_check_fenceable(int ns_fd, pid_t pid, char *err, size_t errlen);

/*
 * Does anything other than this process hold the namespace, so that it
 * could be entered again? Looks, in order, at every process's (and
 * thread's) network namespace, the nsfs bind mounts of every mount
 * namespace, and every open file of every process; stops at the first
 * holder and names it in `what` (e.g. "process 123 (sleep)", "a mount at
 * /run/netns/x", "fd 5 of process 77"). 1 held, 0 not, negative errno.
 * Not seen: sockets made in the namespace and passed to a process outside
 * it, and processes in pid namespaces /proc does not show. Bounded by the
 * number of processes, their files and their mounts; one pass.
 */
int sl_netns_in_use(int ns_fd, char *what, size_t whatlen);

/* ---- The namespace's links, and their changes ---- */

struct sl_netns_link_watch;

#define SL_NETNS_MAX_LINKS 64

/* Opened inside the attached namespace of `sb` (its links are there): a
 * socket subscribed to its link changes, and one to list them. */
int sl_netns_link_watch_open(const struct sl_netns_sandbox *sb, struct sl_netns_link_watch **ret,
			     char *err, size_t errlen);
/* Poll for reading; then sl_netns_link_watch_read(). */
int sl_netns_link_watch_fd(const struct sl_netns_link_watch *w);
/* Drain what is readable (never blocks). 1 when a link appeared, changed
 * (a rename, a move into the namespace) or when notifications were lost,
 * so the list must be read again; 0 when nothing that matters; < 0 error. */
int sl_netns_link_watch_read(struct sl_netns_link_watch *w);
/* Every link of the namespace but lo and sluice's veth, by name (at most
 * SL_NETNS_MAX_LINKS; -E2BIG beyond). */
int sl_netns_link_watch_list(struct sl_netns_link_watch *w, char names[][IFNAMSIZ], size_t max,
			     size_t *ret_n, char *err, size_t errlen);
void sl_netns_link_watch_free(struct sl_netns_link_watch *w);
