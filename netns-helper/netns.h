/* SPDX-License-Identifier: MIT */
/*
 * netns-helper: the sandbox a command runs in.
 *
 * A sandbox is a network namespace of its own, joined to the namespace that
 * created it by one veth pair: the host end ("sluice<N>") carries the
 * gateway's address, the sandbox end ("eth0") is created directly inside
 * the sandbox namespace and holds the sandbox's only route, a default route
 * through the host end. IPv6 is disabled inside. The command is started in
 * that namespace and a private mount namespace (with a resolv.conf naming
 * the gateway), optionally in a cgroup with limits, as an unprivileged user
 * without any capability.
 *
 * Contract shared by every function here (STYLE.md):
 *  - >= 0 on success, a negative errno on failure; on failure, and only
 *    then, `err` (when not NULL) receives one line saying what failed and
 *    why. Nothing here prints.
 *  - ret_ out parameters are written only on success.
 *  - Everything that touches the kernel needs root (CAP_NET_ADMIN,
 *    CAP_SYS_ADMIN) and a single-threaded caller: entering a namespace with
 *    setns() changes only the calling thread.
 *  - All rtnetlink traffic goes through one module (nl.c), never `ip`.
 */
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- Pure parts: parsing and address arithmetic (unit tested). ---- */

/* The pool sandboxes take their addresses from. Each sandbox gets one /30:
 * network, host end (.1), sandbox end (.2), broadcast. */
#define SL_NETNS_DEFAULT_POOL "10.231.0.0/16"

struct sl_netns_pool {
	uint32_t base;	 /* host byte order, aligned to the prefix */
	unsigned prefix; /* 8..30 */
};

/* "A.B.C.D/P" with P in 8..30 and no host bits set. -EINVAL otherwise. */
int sl_netns_pool_parse(const char *s, struct sl_netns_pool *ret);
/* How many /30 slots the pool holds. */
uint32_t sl_netns_pool_slots(const struct sl_netns_pool *pool);
/* The addresses of slot `i` (network byte order). -ERANGE past the end. */
int sl_netns_pool_slot(const struct sl_netns_pool *pool, uint32_t i, struct in_addr *ret_host,
		       struct in_addr *ret_peer);

/* "512M", "1G", "1048576", "64KiB": binary units K, M, G, T, optionally
 * followed by "B" or "iB". Zero and overflow are -ERANGE. */
int sl_netns_parse_size(const char *s, uint64_t *ret);
/* A decimal integer in [min, max]; -EINVAL or -ERANGE. */
int sl_netns_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* "50" or "50%"; 1..(100 * 1024) (more than 100 means several CPUs). */
int sl_netns_parse_percent(const char *s, unsigned *ret);

/* ---- `sluice run` arguments (parsed here so the unit tests reach them). ---- */

struct sl_netns_limits {
	uint64_t memory_bytes; /* 0: no limit */
	uint64_t pids;	       /* 0: no limit */
	unsigned cpu_percent;  /* 0: no limit */
};

/* A path of the host bound into the sandbox's filesystem view at the same
 * place (`--rw PATH`, `--ro PATH`). */
struct sl_netns_bind {
	const char *path; /* absolute, no "..", no trailing slash (canonical) */
	bool writable;
};

#define SL_NETNS_MAX_BINDS 32
#define SL_NETNS_MAX_TRUST 8
#define SL_NETNS_MAX_ENV 64

struct sl_netns_run_args {
	const char *policy;	 /* NULL: deny every egress */
	const char *user;	 /* NULL: the default user */
	const char *audit;	 /* options accepted by the grammar that the */
	const char *resolver;	 /* caller must refuse until the gateway     */
	const char *upstream_ca; /* exists                                   */
	const char *pool;	 /* NULL: SL_NETNS_DEFAULT_POOL */
	const char *metrics;	 /* --metrics ADDR:PORT (NULL: none) */
	struct sl_netns_limits limits;
	/* --rw and --ro as given (not yet canonical), in order. */
	struct sl_netns_bind binds[SL_NETNS_MAX_BINDS];
	size_t n_binds;
	const char *trust[SL_NETNS_MAX_TRUST]; /* --trust FILE: CAs the sandbox trusts too */
	size_t n_trust;
	const char *env[SL_NETNS_MAX_ENV + 1]; /* --env NAME[=VALUE], NULL-terminated */
	size_t n_env;
	char **argv; /* the command, NULL-terminated, at least one word */
	bool help;   /* --help: nothing else is meaningful */
	bool observe; /* --observe: the policy in observe mode (docs/observe.md) */
};

/* argv[0] is "run". Options may come in any order before "--" (or before
 * the first word that is not an option); a repeated option is an error,
 * except --rw, --ro, --trust and --env, which add up. `--audit -` is
 * refused: the command shares sluice's stdout and could print records
 * that look like the gateway's. */
int sl_netns_run_args_parse(int argc, char **argv, struct sl_netns_run_args *ret, char *err,
			    size_t errlen);

/* ---- Who the command runs as. ---- */

struct sl_netns_user {
	uid_t uid;
	gid_t gid;
	/* The passwd name, "sluice-<uid>" for an allocated user, "" for a
	 * uid named by number without a passwd entry. USER and LOGNAME. */
	char name[64];
	char home[256]; /* HOME when not empty; "" for an allocated user */
};

/*
 * The range sandbox users are allocated from (uid = gid): 0x7F000000 to
 * 0x7F00FFFF, of which 0x7F000001..0x7F00FFFD are handed out. It lies in
 * the block systemd leaves unused (UIDS-GIDS.md: above the container ranges
 * 524288..1879048191 that systemd-nspawn and machined use, below the
 * foreign-image range 0x7FFE0000..0x7FFEFFFF) and below 2^31, which some
 * kernel file systems (devpts) and programs mistake for negative; far from
 * the regular (1000..60000), DynamicUser= (61184..65519) and nobody users,
 * and from the subordinate ranges useradd hands out (from 100000, 65536
 * each). Each uid is also checked when allocated (see below).
 */
#define SL_NETNS_UID_BASE 0x7F000000u
#define SL_NETNS_UID_COUNT 0x10000u

/* `spec` is a user name or a numeric uid (`--user`). uid 0 and gid 0 are
 * refused (-EPERM): the point is an unprivileged command; so is a uid or
 * gid in the range above (-EINVAL: it could be a running sandbox's).
 * A numeric uid without a passwd entry gets the gid of the same number
 * and an empty name and home. NULL is -EINVAL: without --user, allocate. */
int sl_netns_user_resolve(const char *spec, struct sl_netns_user *ret, char *err, size_t errlen);

/*
 * A user of the sandbox's own, as systemd's DynamicUser=: a uid (and the
 * gid of the same number) from the range above that has no passwd or group
 * entry, lies in no range of /etc/subuid or /etc/subgid, and that no process
 * of an earlier holder runs with (real, effective, saved or filesystem uid
 * or gid, or a supplementary group). The search starts at a random place,
 * so the next sandbox does not reuse the uid (and files) the last one had.
 * name is "sluice-<uid>", home "".
 *
 * Only lock holders run processes as these uids, and a holder marks the
 * lock file before it uses the uid; only a clean release removes the file
 * (sl_netns_user_release: every process of the uid gone, its keyrings
 * emptied). So a uid whose file we create afresh is handed out at once; one
 * whose file is there (a holder was SIGKILLed, or could not release it
 * clean) is checked first: /proc is read after the lock is taken, and, as
 * root, what a previous holder may have left in the kernel is removed
 * (systemd's RemoveIPC=): its System V IPC objects, and the contents of its
 * user, user-session and persistent keyrings, which outlive its processes;
 * a uid that a process still has, or whose keyrings cannot be emptied (a
 * holder took away even the possessor's write access), is skipped.
 * Unprivileged (the unit tests), the scrub is left out.
 *
 * The uid is locked (flock on <lock_dir>/<uid>, NULL: /run/sluice/uid,
 * created if missing; it must be the caller's and writable by it alone,
 * else -EPERM) and *ret_lock_fd (O_CLOEXEC) holds the lock: keep it for the
 * sandbox's whole life, until every process of the uid is gone (after
 * sl_netns_cgroup_free()), then sl_netns_user_release(). -EUSERS when no
 * uid is free. As root it forks a short-lived child (for the keyrings)
 * and waits for that pid: SIGCHLD must not be ignored.
 */
int sl_netns_user_allocate(const char *lock_dir, struct sl_netns_user *ret, int *ret_lock_fd,
			   char *err, size_t errlen);
/* n of them (at most SL_NETNS_MAX_ALLOC) at once, distinct: one walk of
 * /proc checks them all (`sluice run` needs the command's and its
 * gateway's). On failure none is kept. */
#define SL_NETNS_MAX_ALLOC 4
int sl_netns_user_allocate_n(const char *lock_dir, size_t n, struct sl_netns_user *ret,
			     int *ret_lock_fds, char *err, size_t errlen);
/* Call only once no process of the uid is left. As root, remove what the
 * uid left in the kernel (as above); if that worked, remove the lock file
 * (while still locked, so a concurrent allocator sees it is stale): the uid
 * is clean, its next holder takes it without looking. Then close lock_fd.
 * lock_dir as given to allocate; a negative lock_fd is ignored; a uid
 * outside the range is never scrubbed. When a process of the uid may still
 * live, plain close() instead: the file stays, marked, and the uid's next
 * holder walks /proc and scrubs. */
void sl_netns_user_release(const char *lock_dir, uid_t uid, int lock_fd);

/* Pure parts of the allocation, for the unit tests. Does [start, start +
 * count) overlap no range of a subordinate id file's content
 * ("owner:start:count" lines; NULL: none)? */
bool sl_netns_uid_range_free(const char *subid, uint32_t start, uint32_t count);
/* Does a /proc/PID/status text (len bytes) list `id` on its Uid:, Gid: or
 * Groups: line? */
bool sl_netns_status_has_id(const char *status, size_t len, uint32_t id);

/* ---- cgroups (v2, or v1/hybrid with memory, pids and cpu controllers). ---- */

struct sl_netns_cgroup;

/*
 * Create "sluice-<pid>" beneath the cgroups sluice itself runs in: always
 * one that tracks every process the command forks (in the unified v2
 * hierarchy when it is mounted, as on v2 and hybrid machines; else in the
 * first mounted of the v1 freezer, pids and named systemd hierarchies),
 * plus one per v1 controller a limit needs, with the limits written. All
 * limits may be zero: then only the tracking group exists. Stale
 * sluice-<pid> groups of dead sluices there are removed first (only empty
 * ones). -EOPNOTSUPP when no hierarchy is mounted at all.
 */
int sl_netns_cgroup_new(const struct sl_netns_limits *limits, struct sl_netns_cgroup **ret,
			char *err, size_t errlen);
/* SIGKILL everything inside and wait until it is gone: cgroup.kill on v2
 * (Linux 5.14+), else freeze, kill every member, thaw, and again until the
 * groups are empty, for at most about 5 s. 0 when empty (and for NULL),
 * -EBUSY when something is still inside (a process stuck in the kernel). */
int sl_netns_cgroup_kill(const struct sl_netns_cgroup *cg);
/* sl_netns_cgroup_kill(), then remove the groups. Accepts NULL. 0 when
 * nothing was left inside (the uid the command ran as may be released
 * clean), -EBUSY when a process may still live. */
int sl_netns_cgroup_free(struct sl_netns_cgroup *cg);

/* ---- The sandbox: namespace, veth, addresses, route. ---- */

struct sl_netns_sandbox;

struct sl_netns_sandbox_config {
	struct sl_netns_pool pool;
	const char *lock_dir; /* NULL: /run/sluice/pool */
	/* When set, called once the slot is taken, with the host end's name,
	 * before the namespace is made: run starts its CA's thread there. */
	void (*slot_taken)(void *data, const char *ifname);
	void *slot_data;
};

/*
 * Create a sandbox in the caller's network namespace: take a free /30 from
 * the pool (a lock file per slot, plus a check that no address of the slot
 * is in use here), remove a stale link of that slot left by a sluice that
 * was SIGKILLed, create the namespace and the veth, address and bring up
 * both ends and lo, route the sandbox to the host end, disable IPv6 inside
 * and IPv4 forwarding from the host end. On failure everything done so far
 * is undone.
 */
int sl_netns_sandbox_new(const struct sl_netns_sandbox_config *cfg, struct sl_netns_sandbox **ret,
			 char *err, size_t errlen);
/* Delete the veth (and so both ends), close the namespace, release the slot.
 * For an attached sandbox, sl_netns_sandbox_detach() first. Accepts NULL. */
void sl_netns_sandbox_free(struct sl_netns_sandbox *sb);

/*
 * `sluice attach`: the same veth, but into a network namespace that exists
 * already (`netns_fd`: /proc/PID/ns/net or a bind mount of one; it is
 * duplicated, the caller keeps its own). The peer is created directly in
 * there, named like the host end (the container's own interfaces keep
 * their names), addressed from the pool (a slot none of whose addresses is
 * in use here or there), IPv6 off on it, and left DOWN: nothing changes
 * for the container until sl_netns_sandbox_attach_activate(). The
 * container's lo, other links, addresses and sysctls are not touched.
 * Refused (-EINVAL): the caller's own namespace and that of /proc/1. -EBUSY:
 * another sluice is attached to it (a lock per namespace under lock_dir).
 * On failure everything done so far is undone.
 */
/* May `fd` be attached to? -EINVAL (err says why) when it is no network
 * namespace, or is sluice's own or that of /proc/1. */
int sl_netns_check_attachable(int fd, char *err, size_t errlen);
int sl_netns_sandbox_attach(const struct sl_netns_sandbox_config *cfg, int netns_fd,
			    struct sl_netns_sandbox **ret, char *err, size_t errlen);
/* Call once the fence (nftables on both sides) is in place: bring the
 * container's end up, remember its IPv4 default routes (main table),
 * remove them and route its default through the host end. IPv6 routes are
 * left alone (the sandbox ruleset drops IPv6). On failure the caller
 * detaches, which puts back what was removed. */
int sl_netns_sandbox_attach_activate(struct sl_netns_sandbox *sb, char *err, size_t errlen);
/* Delete the veth (and with it our route), then add the remembered default
 * routes again. Idempotent; 0 for a sandbox that is not attached. The first
 * failure is returned, after every route was tried. The namespace stays
 * open (for sl_netns_sandbox_run_inside) until sl_netns_sandbox_free(). */
int sl_netns_sandbox_detach(struct sl_netns_sandbox *sb, char *err, size_t errlen);

/* ---- The releaser (release.c): the teardown's waiting off its path. ---- */

/* A child that holds copies of fds whose last close makes the closer wait
 * for an RCU grace period, and deletes the veth (the deletion waits, after
 * the link is gone from view), so that the caller waits only for what can
 * be seen. It lives until the caller exits (or is killed), then closes
 * what it holds. */
struct sl_netns_releaser {
	pid_t pid;
	int sock; /* -1: none (closes and deletions are the caller's then) */
};

/* Fork it, while the caller is single-threaded and before anything secret
 * is loaded: it keeps a copy of the memory it was forked with (the
 * environment, which it wipes, aside). */
int sl_netns_releaser_start(struct sl_netns_releaser *r);
/* It holds a copy of fd until the caller is gone. */
int sl_netns_releaser_hold(const struct sl_netns_releaser *r, int fd);
/* It releases `uid` (sl_netns_user_release(): keyrings and IPC objects
 * emptied, the lock file removed) once the caller is gone, with a copy of
 * its lock: the caller then only closes its own. Call it once no process
 * runs as the uid. */
int sl_netns_releaser_user(const struct sl_netns_releaser *r, uid_t uid, int lock_fd);
/* It deletes the link `ifindex` of the caller's namespace. */
int sl_netns_releaser_del_link(const struct sl_netns_releaser *r, int ifindex);
/* sl_netns_sandbox_free() with the slow half left to `r`: it holds the
 * namespace and deletes the veth, and this returns once the host end has
 * left the host's links; if that does not happen in time (or there is no
 * releaser, or an attached sandbox), as sl_netns_sandbox_free(). Call it
 * once the sandbox's processes are gone. */
void sl_netns_sandbox_release(struct sl_netns_sandbox *sb, const struct sl_netns_releaser *r);

int sl_netns_sandbox_fd(const struct sl_netns_sandbox *sb); /* the namespace */
uint32_t sl_netns_sandbox_slot(const struct sl_netns_sandbox *sb);
const char *sl_netns_sandbox_host_ifname(const struct sl_netns_sandbox *sb);
struct in_addr sl_netns_sandbox_host_addr(const struct sl_netns_sandbox *sb);
struct in_addr sl_netns_sandbox_peer_addr(const struct sl_netns_sandbox *sb);

/* Call fn(userdata) with the calling thread inside the sandbox's network
 * namespace, then return to the caller's; returns what fn returned. Used to
 * install the sandbox's nftables rules. Aborts if it cannot return: going on
 * in the wrong namespace would be worse. */
int sl_netns_sandbox_run_inside(const struct sl_netns_sandbox *sb, int (*fn)(void *userdata),
				void *userdata);

/* ---- The command's filesystem view (mounts.c). ---- */

/*
 * What the command sees, in a mount namespace of its own: everything of the
 * host read-only and nosuid; fresh tmpfs on /tmp, /var/tmp, /dev/shm and
 * /run (and /var/run where it is not a link to /run), so no filesystem Unix
 * socket of the host there is reachable; a minimal /dev (null, zero, full,
 * random, urandom, tty, its own devpts, shm); its own /proc (of its pid
 * namespace) and /sys (of its network namespace); /etc/resolv.conf naming
 * the gateway; the binds; the CA bundle over the system's CA files.
 */
struct sl_netns_fs {
	const struct sl_netns_bind *binds; /* canonical paths; any order */
	size_t n_binds;
	/* A file of the host bound read-only at its own path (under /run) and
	 * over the system's CA bundles (/etc/ssl/certs/ca-certificates.crt and
	 * the other distributions' places that exist). NULL: none. */
	const char *ca_bundle;
	/* Created (mode 0700, owned by the user) when it does not exist in the
	 * view, e.g. "/tmp/home"; NULL: none. */
	const char *home;
	/* For a user without a passwd entry (an allocated uid): its name in
	 * the view's /etc/passwd and /etc/group, so whoami, getpwuid() and ssh
	 * work. NULL: the host's files are shown as they are. */
	const char *user_name;
};

/* Is `path` one sluice refuses to bind? (/, and /proc, /sys, /dev, /run,
 * /var/run and anything beneath: they are the sandbox's own or would
 * hand it the host's sockets and devices.) The reason, or NULL. */
const char *sl_netns_bind_refused(const char *path);

/* ---- The command. ---- */

/* The command's system-call filter (seccomp.c), compiled ahead: libseccomp
 * takes most of a millisecond to build it, which a thread of the caller's
 * spends while the network is made, not the command on its way to exec. */
struct sock_filter; /* <linux/filter.h> */
struct sl_netns_filter {
	struct sock_filter *insns;
	unsigned short len;
};

/* Build it (0, or a negative errno with err saying why); free it. */
int sl_netns_filter_build(struct sl_netns_filter *f, char *err, size_t errlen);
void sl_netns_filter_free(struct sl_netns_filter *f);

struct sl_netns_spawn {
	const struct sl_netns_sandbox *sandbox;
	const struct sl_netns_cgroup *cgroup; /* NULL: none */
	struct sl_netns_user user;
	struct sl_netns_fs fs;
	/* The slave side of a pty of the sandbox's own, or -1: it becomes the
	 * command's controlling terminal and replaces each of its fds 0-2 that
	 * is a terminal (the operator's must never reach it). */
	int pty;
	char *const *argv;
	char *const *envp; /* the command's whole environment */
	/* The signal mask the command gets (the caller typically blocks the
	 * signals it forwards); NULL: empty. */
	const sigset_t *sigmask;
	/* The command's filter, built by sl_netns_filter_build(); NULL: the
	 * command builds it itself. */
	const struct sl_netns_filter *filter;
};

/* A started sandbox: its init's pid (in the caller's pid namespace) and the
 * pipes that let the command go. */
struct sl_netns_proc {
	pid_t pid;
	int efd; /* errors of the command's last steps; EOF once it executed */
	int go;	 /* one byte lets the command execute; closing it aborts */
	int alive; /* held open while sluice lives: the init checks it */
};

/*
 * Start the sandbox, in two steps. sl_netns_spawn() makes a child in a new
 * pid and mount namespace: its init (pid 1 there) joins the cgroup and the
 * sandbox's network namespace, builds the filesystem view, and forks the
 * command, which starts a session of its own (and takes `pty` as its
 * controlling terminal), drops to the user (groups reset, every capability
 * dropped including the bounding and ambient sets, no_new_privs), closes
 * every fd but 0-2 and then waits. The init drops privileges too, reaps
 * whatever is reparented to it, passes on the signals its parent sends it
 * (SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH), and exits
 * with the command's status (128+N when signal N killed it); when it exits
 * the kernel kills everything left in its pid namespace. Returns once the
 * command waits (or setup failed: then the child is reaped and err says
 * which step failed and why).
 *
 * Must be called while the caller is single-threaded (the child is made
 * with clone(2), which runs no atfork handlers).
 *
 * sl_netns_spawn_go() then lets the command execute and returns once it did.
 * When the failure was execve() itself (CMD not found, not executable),
 * *exec_errno (if not NULL) is set to its errno, so the caller can exit 127
 * or 126 as shells do; it is set to 0 otherwise. On failure the caller
 * still reaps proc->pid (which exits by itself).
 */
int sl_netns_spawn(const struct sl_netns_spawn *s, struct sl_netns_proc *ret, char *err,
		   size_t errlen);
/* sl_netns_spawn() in two halves, so that the caller can do something
 * (without threads) while the sandbox's init builds the view: the child is
 * made (what sl_netns_spawn_start() returns is only the clone's error),
 * then sl_netns_spawn_ready() waits until the command waits, or reaps the
 * child when setup failed (p->pid is then 0, its pipes closed). */
int sl_netns_spawn_start(const struct sl_netns_spawn *s, struct sl_netns_proc *ret, char *err,
			 size_t errlen);
int sl_netns_spawn_ready(struct sl_netns_proc *p, char *err, size_t errlen);
int sl_netns_spawn_go(struct sl_netns_proc *p, int *exec_errno, char *err, size_t errlen);
/* Close the pipes (a command still waiting is aborted). Accepts a proc whose
 * fds are -1. */
void sl_netns_proc_close(struct sl_netns_proc *p);

/* ---- The command's environment. ---- */

/*
 * The command's whole environment, an allowlist (nothing else of sluice's
 * own environment passes, so root's AWS_SECRET_ACCESS_KEY or GITHUB_TOKEN
 * never reaches the agent), in this order:
 *  1. from `base` (sluice's environment; may be NULL): PATH, LANG,
 *     LANGUAGE, LC_*, TERM, COLORTERM, TZ, SHELL, the first of each name,
 *     except those named in `drop`; PATH=/usr/local/bin:/usr/bin:/bin when
 *     base has none. Never HOME, USER or LOGNAME: those are sluice's user's.
 *  2. HTTP_PROXY, HTTPS_PROXY, http_proxy and https_proxy naming
 *     http://gateway:port, ALL_PROXY and all_proxy socks5h://gateway:port
 *     (the same port serves SOCKS5); NO_PROXY and no_proxy for loopback.
 *  3. HOME=user->home and USER=LOGNAME=user->name, each when not empty.
 *  4. `extra` (--env; NULL-terminated; may be NULL), each replacing an
 *     entry of the same name: "NAME=VALUE" sets NAME; "NAME" takes NAME's
 *     value from `base`, or adds nothing when base has none or when NAME
 *     is in `drop` (the caller should refuse such an --env and say why:
 *     it names the variable a policy secret is read from).
 * `drop` (NULL-terminated; may be NULL) names the variables policy secrets
 * live in. -EINVAL when an extra entry's name is not [A-Za-z_][A-Za-z0-9_]*
 * and -EPERM when it is a proxy variable (see sl_netns_env_extra_check);
 * -ENOMEM. Free with sl_netns_env_free().
 */
int sl_netns_env_build(char *const *base, struct in_addr gateway, uint16_t port,
		       const struct sl_netns_user *user, const char *const *drop,
		       const char *const *extra, char ***ret);
void sl_netns_env_free(char **env);
/* Is `name` a variable name, [A-Za-z_][A-Za-z0-9_]*? */
bool sl_netns_env_name_valid(const char *name);
/* Check one --env argument, "NAME" or "NAME=VALUE": 0; -EINVAL when NAME is
 * not a valid name; -EPERM when it is one of the proxy variables sluice
 * sets itself (the gateway is the sandbox's only way out). */
int sl_netns_env_extra_check(const char *arg);
/* Set NAME=VALUE in an environment built above, replacing NAME if there. */
int sl_netns_env_set(char ***env, const char *name, const char *value);
