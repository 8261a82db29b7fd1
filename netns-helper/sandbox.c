/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's network: a namespace of its own and one veth pair to the
 * namespace sluice runs in.
 *
 * Lifetime: the namespace is held by an fd (and by the processes in it);
 * the veth by the namespaces of its two ends. sl_netns_sandbox_free()
 * deletes the veth synchronously so that nothing is left on the host when
 * sluice returns, whatever the command left running inside;
 * sl_netns_sandbox_release() has the releaser (release.c) delete it and
 * waits only until the host end has left the host's links. If sluice is
 * SIGKILLed instead, the host end vanishes with the namespace once the
 * command is dead, and the next run removes a host end whose owner is gone
 * (its slot lock is free) before using the slot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netns.h"
#include "nl.h"
#include "trace.h"
#include "util.h"

#define DEFAULT_LOCK_DIR "/run/sluice/pool"
#define PEER_IFNAME "eth0"
/* Looking further than this for a free slot means something is wrong
 * (thousands of live sandboxes, or a pool that overlaps the host's). */
#define MAX_SLOT_TRIES 4096
/* How long the releaser may take to have the veth gone (well under a
 * millisecond, unless it is starved) before we delete it ourselves; the
 * fence stays up meanwhile. */
#define RELEASE_MS 1000

struct sl_netns_sandbox {
	int host_ns_fd; /* the caller's network namespace, to return to */
	int ns_fd;	/* the sandbox's */
	int lock_fd;	/* flock on the slot, held for our whole life */
	uint32_t slot;
	struct in_addr host, peer;
	char ifname[IFNAMSIZ];
	int host_idx; /* the host end's ifindex */
	bool link_created;
	struct sl_nl *nl;    /* in the caller's namespace */
	struct sl_nl *nl_sb; /* in the sandbox's */
	/* Attached to a namespace that is not ours (attach.c): */
	bool attached;
	bool routes_taken;	   /* its default routes replaced by ours */
	int ns_lock_fd;		   /* flock: one sluice per namespace */
	struct sl_nl_routes saved; /* its IPv4 default routes, to restore */
};

int sl_netns_sandbox_fd(const struct sl_netns_sandbox *sb)
{
	return sb->ns_fd;
}

uint32_t sl_netns_sandbox_slot(const struct sl_netns_sandbox *sb)
{
	return sb->slot;
}

const char *sl_netns_sandbox_host_ifname(const struct sl_netns_sandbox *sb)
{
	return sb->ifname;
}

struct in_addr sl_netns_sandbox_host_addr(const struct sl_netns_sandbox *sb)
{
	return sb->host;
}

struct in_addr sl_netns_sandbox_peer_addr(const struct sl_netns_sandbox *sb)
{
	return sb->peer;
}

void sl_netns_sandbox_free(struct sl_netns_sandbox *sb)
{
	if (!sb)
		return;
	if (sb->attached)
		(void)sl_netns_sandbox_detach(sb, NULL, 0);
	/* Deleting one end of a veth deletes both: the sandbox is cut off at
	 * once, even if something in it outlives us. */
	if (sb->link_created && sb->nl)
		(void)sl_nl_link_del(sb->nl, sb->ifname, NULL, 0);
	sl_trace("veth deleted");
	sl_nl_routes_clear(&sb->saved);
	sl_closep(&sb->ns_lock_fd);
	sl_nl_close(sb->nl_sb);
	sl_nl_close(sb->nl);
	sl_closep(&sb->ns_fd);
	sl_closep(&sb->host_ns_fd);
	sl_closep(&sb->lock_fd); /* releases the slot */
	free(sb);
}

void sl_netns_sandbox_release(struct sl_netns_sandbox *sb, const struct sl_netns_releaser *r)
{
	int watch;

	if (!sb)
		return;
	if (sb->attached || !sb->link_created || sb->host_idx <= 0 || !r || r->sock < 0) {
		sl_netns_sandbox_free(sb);
		return;
	}
	/* Listening before the deletion is asked for: its RTM_DELLINK
	 * cannot be missed. */
	watch = sl_nl_link_watch();
	if (watch >= 0 && sl_netns_releaser_hold(r, sb->ns_fd) == 0 &&
	    sl_netns_releaser_del_link(r, sb->host_idx) == 0 &&
	    sl_nl_link_gone(sb->nl, watch, sb->host_idx, RELEASE_MS) == 0)
		sb->link_created = false; /* gone: nothing left to delete */
	sl_closep(&watch);
	sl_trace("veth gone");
	sl_netns_sandbox_free(sb);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_netns_sandbox *, sl_netns_sandbox_free)

static void return_or_die(int host_ns_fd)
{
	/* Only EINVAL/EBADF/EPERM are possible and none can happen for an fd
	 * we opened ourselves as root; carrying on in the sandbox's namespace
	 * would configure the wrong network, so stop. */
	if (setns(host_ns_fd, CLONE_NEWNET) < 0)
		abort();
}

int sl_netns_sandbox_run_inside(const struct sl_netns_sandbox *sb, int (*fn)(void *userdata),
				void *userdata)
{
	int r;

	if (setns(sb->ns_fd, CLONE_NEWNET) < 0)
		return negative_errno();
	r = fn(userdata);
	return_or_die(sb->host_ns_fd);
	return r;
}

/* Try to take slot i: its lock, then make sure no address of its /30 is in
 * use here. 1 taken, 0 busy, < 0 error. */
static int try_slot(struct sl_netns_sandbox *sb, const struct sl_netns_pool *pool, const char *dir,
		    uint32_t i, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct in_addr host, peer, net;
	char path[320], a[INET_ADDRSTRLEN];
	int r;

	r = sl_netns_pool_slot(pool, i, &host, &peer);
	if (r < 0)
		return r;
	net.s_addr = htonl(ntohl(host.s_addr) - 1);
	inet_ntop(AF_INET, &net, a, sizeof(a));
	snprintf(path, sizeof(path), "%s/%s", dir, a);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return sl_err(err, errlen, negative_errno(), "opening lock file %s: %m", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return 0;
		return sl_err(err, errlen, negative_errno(), "locking %s: %m", path);
	}
	/* The name follows from the address, so two pools that overlap still
	 * agree on it, and a link of that name whose lock was free belongs to
	 * a sluice that died: remove it (it can only fail closed until then). */
	snprintf(sb->ifname, sizeof(sb->ifname), "sl%08x", ntohl(net.s_addr));
	r = sl_nl_link_del(sb->nl, sb->ifname, err, errlen);
	if (r < 0 && r != -ENODEV)
		return r;
	r = sl_nl_addr_in_use(sb->nl, net, 30, err, errlen);
	if (r != 0)
		return r < 0 ? r : 0;
	/* A namespace we attach to has addresses of its own. */
	if (sb->attached) {
		r = sl_nl_addr_in_use(sb->nl_sb, net, 30, err, errlen);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	sb->lock_fd = TAKE_FD(fd);
	sb->slot = i;
	sb->host = host;
	sb->peer = peer;
	return 1;
}

static int pick_slot(struct sl_netns_sandbox *sb, const struct sl_netns_sandbox_config *cfg,
		     char *err, size_t errlen)
{
	const char *dir = cfg->lock_dir ? cfg->lock_dir : DEFAULT_LOCK_DIR;
	uint32_t n = sl_netns_pool_slots(&cfg->pool);
	int r;

	r = sl_mkdir_p(dir);
	if (r < 0)
		return sl_err(err, errlen, r, "creating %s: %s", dir, strerror(-r));
	for (uint32_t i = 0; i < n && i < MAX_SLOT_TRIES; i++) {
		r = try_slot(sb, &cfg->pool, dir, i, err, errlen);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	return sl_err(err, errlen, -EADDRNOTAVAIL,
		      "no free /30 in the address pool (every slot locked or in use)");
}

/* Sysctls that only exist with IPv6 compiled in: ENOENT means no IPv6. */
static int write_sysctl(const char *path, const char *v, bool may_be_missing, char *err,
			size_t errlen)
{
	int r = sl_write_file(path, v);

	if (r == -ENOENT && may_be_missing)
		return 0;
	if (r < 0)
		return sl_err(err, errlen, r, "writing %s to %s: %s", v, path, strerror(-r));
	return 0;
}

/* Make the namespace; while inside, open the socket that configures it and
 * switch IPv6 off before any interface exists there (so "default" covers
 * eth0 and "all" covers lo). */
static int make_namespace(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	int r;

	sb->host_ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (sb->host_ns_fd < 0)
		return sl_err(err, errlen, negative_errno(), "opening our network namespace: %m");
	if (unshare(CLONE_NEWNET) < 0)
		return sl_err(err, errlen, negative_errno(), "creating a network namespace: %m");
	sb->ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (sb->ns_fd < 0) {
		r = sl_err(err, errlen, negative_errno(), "opening the sandbox namespace: %m");
		goto out;
	}
	r = sl_nl_open(&sb->nl_sb, err, errlen);
	if (r < 0)
		goto out;
	r = write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", true, err, errlen);
	if (r < 0)
		goto out;
	r = write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", true, err, errlen);
out:
	return_or_die(sb->host_ns_fd);
	return r;
}

static int setup_host_end(struct sl_netns_sandbox *sb, const char *peer, char *err, size_t errlen)
{
	char path[128];
	int idx, r;

	r = sl_nl_veth_add(sb->nl, sb->ifname, peer, sb->ns_fd, err, errlen);
	if (r < 0)
		return r;
	sl_trace("veth added");
	sb->link_created = true;
	r = sl_nl_link_index(sb->nl, sb->ifname, &idx, err, errlen);
	if (r < 0)
		return r;
	if (!sb->attached)
		sb->host_idx = idx;
	/* IPv4 forwards a packet only if the interface it came in on has
	 * forwarding on: off here, the sandbox is never routed onwards even
	 * on a host that forwards (defence in depth; nftables drops it too). */
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/forwarding", sb->ifname);
	r = write_sysctl(path, "0", false, err, errlen);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", sb->ifname);
	r = write_sysctl(path, "1", true, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_addr_add(sb->nl, idx, sb->host, 30, err, errlen);
	if (r < 0)
		return r;
	return sl_nl_link_up(sb->nl, idx, "bringing up the host end", err, errlen);
}

static int setup_sandbox_end(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	int lo, idx, r;

	r = sl_nl_link_index(sb->nl_sb, "lo", &lo, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_link_up(sb->nl_sb, lo, "bringing up lo in the sandbox", err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_link_index(sb->nl_sb, PEER_IFNAME, &idx, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_addr_add(sb->nl_sb, idx, sb->peer, 30, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_link_up(sb->nl_sb, idx, "bringing up the sandbox end", err, errlen);
	if (r < 0)
		return r;
	return sl_nl_route_default(sb->nl_sb, idx, sb->host, err, errlen);
}

int sl_netns_sandbox_new(const struct sl_netns_sandbox_config *cfg, struct sl_netns_sandbox **ret,
			 char *err, size_t errlen)
{
	_cleanup_(sl_netns_sandbox_freep) struct sl_netns_sandbox *sb = NULL;
	int r;

	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return sl_err(err, errlen, -ENOMEM, "sandbox: out of memory");
	sb->host_ns_fd = sb->ns_fd = sb->lock_fd = sb->ns_lock_fd = -1;
	r = sl_nl_open(&sb->nl, err, errlen);
	if (r < 0)
		return r;
	r = pick_slot(sb, cfg, err, errlen);
	if (r < 0)
		return r;
	sl_trace("slot picked");
	if (cfg->slot_taken)
		cfg->slot_taken(cfg->slot_data, sb->ifname);
	r = make_namespace(sb, err, errlen);
	if (r < 0)
		return r;
	sl_trace("netns made");
	r = setup_host_end(sb, PEER_IFNAME, err, errlen);
	if (r < 0)
		return r;
	sl_trace("host end set up");
	r = setup_sandbox_end(sb, err, errlen);
	if (r < 0)
		return r;
	sl_trace("sandbox end set up");
	/* The sandbox is configured; its socket is not needed any more. */
	sl_nl_close(TAKE_PTR(sb->nl_sb));
	*ret = TAKE_PTR(sb);
	return 0;
}

/* ---- Attaching to a namespace that exists already (a container's) ---- */

int sl_netns_check_attachable(int fd, char *err, size_t errlen)
{
	static const char *const ours[] = {"/proc/thread-self/ns/net", "/proc/1/ns/net"};
	struct stat st, o;
	int type;

	/* nsfs answers this for every kind of namespace file; anything else
	 * (a regular file, a directory) says ENOTTY. */
	type = ioctl(fd, NS_GET_NSTYPE);
	if (type < 0 && (errno == ENOTTY || errno == EINVAL))
		return sl_err(err, errlen, -EINVAL, "not a namespace file");
	if (type < 0)
		return sl_err(err, errlen, negative_errno(), "asking the namespace's type: %m");
	if (type != CLONE_NEWNET)
		return sl_err(err, errlen, -EINVAL, "not a network namespace");
	if (fstat(fd, &st) < 0)
		return sl_err(err, errlen, negative_errno(), "the namespace: %m");
	/* Refuse our own namespace (attaching would fence and reroute the
	 * host itself) and the one of our pid namespace's init, the machine's
	 * own in the usual case. */
	for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
		if (stat(ours[i], &o) < 0)
			continue; /* /proc/1 may be hidden from us: the first is what counts */
		if (o.st_dev == st.st_dev && o.st_ino == st.st_ino)
			return sl_err(err, errlen, -EINVAL,
				      "that is %s network namespace: attach only to a container's",
				      i == 0 ? "sluice's own" : "the init process's");
	}
	return 0;
}

/* One sluice per namespace: two would fight over its routes and table. The
 * lock is named after the namespace's inode and dies with our fd. */
static int lock_namespace(struct sl_netns_sandbox *sb, const char *dir, char *err, size_t errlen)
{
	struct stat st;
	char path[320];
	int r;

	if (fstat(sb->ns_fd, &st) < 0)
		return sl_err(err, errlen, negative_errno(), "the namespace: %m");
	r = sl_mkdir_p(dir);
	if (r < 0)
		return sl_err(err, errlen, r, "creating %s: %s", dir, strerror(-r));
	snprintf(path, sizeof(path), "%s/netns-%llx-%llu", dir, (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	sb->ns_lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (sb->ns_lock_fd < 0)
		return sl_err(err, errlen, negative_errno(), "opening %s: %m", path);
	if (flock(sb->ns_lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return sl_err(err, errlen, -EBUSY,
				      "another sluice is attached to that namespace");
		return sl_err(err, errlen, negative_errno(), "locking %s: %m", path);
	}
	return 0;
}

/* While inside the target: the socket that configures it, and which of
 * its routes are the default ones. */
static int enter_target(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	int r;

	if (setns(sb->ns_fd, CLONE_NEWNET) < 0) {
		r = negative_errno();
		return sl_err(err, errlen, r, "entering the namespace: %s",
			      r == -EINVAL ? "not a network namespace" : strerror(-r));
	}
	r = sl_nl_open(&sb->nl_sb, err, errlen);
	return_or_die(sb->host_ns_fd);
	return r;
}

/* The container's end: address it, no IPv6 on it (the sysctl is per link
 * and goes with it), and keep it DOWN until the rules are in place, so
 * that it gives no route to anything before the fence exists. */
static int setup_attached_end(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	char path[128];
	int idx, r;

	if (setns(sb->ns_fd, CLONE_NEWNET) < 0)
		return sl_err(err, errlen, negative_errno(), "entering the namespace: %m");
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", sb->ifname);
	r = write_sysctl(path, "1", true, err, errlen);
	return_or_die(sb->host_ns_fd);
	if (r < 0)
		return r;
	r = sl_nl_link_index(sb->nl_sb, sb->ifname, &idx, err, errlen);
	if (r < 0)
		return r;
	return sl_nl_addr_add(sb->nl_sb, idx, sb->peer, 30, err, errlen);
}

int sl_netns_sandbox_attach(const struct sl_netns_sandbox_config *cfg, int netns_fd,
			    struct sl_netns_sandbox **ret, char *err, size_t errlen)
{
	_cleanup_(sl_netns_sandbox_freep) struct sl_netns_sandbox *sb = NULL;
	int r;

	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return sl_err(err, errlen, -ENOMEM, "sandbox: out of memory");
	sb->host_ns_fd = sb->ns_fd = sb->lock_fd = sb->ns_lock_fd = -1;
	sb->attached = true;
	r = sl_netns_check_attachable(netns_fd, err, errlen);
	if (r < 0)
		return r;
	sb->host_ns_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (sb->host_ns_fd < 0)
		return sl_err(err, errlen, negative_errno(), "opening our network namespace: %m");
	sb->ns_fd = fcntl(netns_fd, F_DUPFD_CLOEXEC, 3);
	if (sb->ns_fd < 0)
		return sl_err(err, errlen, negative_errno(), "the namespace: %m");
	r = enter_target(sb, err, errlen);
	if (r < 0)
		return r;
	r = lock_namespace(sb, cfg->lock_dir ? cfg->lock_dir : DEFAULT_LOCK_DIR, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_open(&sb->nl, err, errlen);
	if (r < 0)
		return r;
	r = pick_slot(sb, cfg, err, errlen);
	if (r < 0)
		return r;
	/* The peer takes the host end's name: unique per slot, and unlikely to
	 * be one the container uses (its own eth0 must stay as it is). */
	r = setup_host_end(sb, sb->ifname, err, errlen);
	if (r < 0)
		return r;
	r = setup_attached_end(sb, err, errlen);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(sb);
	return 0;
}

int sl_netns_sandbox_attach_activate(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	int idx, r;

	if (!sb->attached || sb->routes_taken)
		return -EINVAL;
	r = sl_nl_routes_default4(sb->nl_sb, &sb->saved, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_link_index(sb->nl_sb, sb->ifname, &idx, err, errlen);
	if (r < 0)
		return r;
	r = sl_nl_link_up(sb->nl_sb, idx, "bringing up sluice's end in the namespace", err, errlen);
	if (r < 0)
		return r;
	/* From here on detach puts back whatever was removed. */
	sb->routes_taken = true;
	for (size_t i = 0; i < sb->saved.n; i++) {
		r = sl_nl_route_replay(sb->nl_sb, &sb->saved.v[i], false, err, errlen);
		if (r < 0)
			return r;
	}
	return sl_nl_route_default(sb->nl_sb, idx, sb->host, err, errlen);
}

int sl_netns_sandbox_detach(struct sl_netns_sandbox *sb, char *err, size_t errlen)
{
	int r, first = 0;

	if (!sb || !sb->attached)
		return 0;
	/* The veth first: our default route goes with it, so the old one can
	 * be added again without colliding; until it is, the container has
	 * no default route at all, which fails closed. */
	if (sb->link_created) {
		r = sl_nl_link_del(sb->nl, sb->ifname, err, errlen);
		if (r < 0 && r != -ENODEV)
			return r;
		sb->link_created = false;
	}
	if (!sb->routes_taken)
		return 0;
	sb->routes_taken = false;
	/* Every route is tried, the first failure reported. A route that is
	 * there already (the container's owner put it back) is no failure. */
	for (size_t i = 0; i < sb->saved.n; i++) {
		r = sl_nl_route_replay(sb->nl_sb, &sb->saved.v[i], true, first ? NULL : err,
				       first ? 0 : errlen);
		if (r < 0 && r != -EEXIST && !first)
			first = r;
	}
	return first;
}
