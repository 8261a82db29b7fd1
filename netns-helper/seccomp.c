/* SPDX-License-Identifier: MIT */
/*
 * The command's system-call filter (netns-internal.h).
 *
 * The sandbox's boundary is namespaces, a uid of its own and no
 * capabilities; what is left is the kernel's own surface, which an
 * unprivileged process can still reach. This filter takes away the parts
 * that a sandboxed agent has no use for and that have carried privilege
 * escalations, as Docker's default profile does:
 *  - new user namespaces (unshare, clone with CLONE_NEWUSER; clone3, whose
 *    flags a filter cannot see, answers ENOSYS, so libc falls back to
 *    clone): root in a namespace of its own reaches code paths (nftables,
 *    mounts, network drivers) that only root should;
 *  - keyrings (keyctl, add_key, request_key), which are not namespaced and
 *    outlive the sandbox under its uid;
 *  - bpf, userfaultfd, perf_event_open, io_uring;
 *  - TIOCSTI and TIOCLINUX on any terminal: typing into a terminal, even
 *    the sandbox's own pty, is never what an agent needs;
 *  - the set-user-ID and set-group-ID bits (chmod and friends, and a mode
 *    given when a file is made): a file the command leaves setuid in a
 *    --rw directory runs as the sandbox's uid for whoever on the host
 *    executes it there, where no nosuid mount stands in the way, and that
 *    process could then reach a later sandbox given the same uid (ptrace,
 *    signals). openat2, whose mode a filter cannot see, answers ENOSYS;
 *    libc does not use it;
 *  - sockets of any family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK:
 *    some families are not scoped by network namespaces and no nftables
 *    hook sees them (AF_VSOCK: in a VM with a vsock device, Firecracker,
 *    Kata, QEMU's vhost-vsock, WSL2, it reaches the hypervisor's services
 *    past the gateway; AF_QIPCRTR, AF_NFC, AF_CAIF reach hardware), and a
 *    family a later kernel adds could be another. socket() answers
 *    EAFNOSUPPORT, as on a kernel without the family (systemd's
 *    RestrictAddressFamilies does the same; Docker's profile refuses
 *    AF_VSOCK). For the 32-bit x86 ABI libseccomp also denies
 *    socketcall(SYS_SOCKET), whose arguments are in memory where a filter
 *    cannot see them (int 0x80 would be a way around): a 32-bit program
 *    whose libc makes sockets through socketcall() gets none; the direct
 *    socket() call of 32-bit programs built for Linux >= 4.3 is judged by
 *    the family alone.
 * Everything else is allowed: the agent is arbitrary code, and an allowlist
 * would break it. A refused call fails with EPERM (ENOSYS for clone3), so
 * programs see an ordinary error, not a kill.
 */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "netns-internal.h"
#include "util.h"

struct deny {
	const char *name;
	int error;
};

static const struct deny denied[] = {
    {"keyctl", EPERM},		 {"add_key", EPERM},	     {"request_key", EPERM},
    {"bpf", EPERM},		 {"userfaultfd", EPERM},     {"perf_event_open", EPERM},
    {"io_uring_setup", EPERM},	 {"io_uring_enter", EPERM},  {"io_uring_register", EPERM},
    {"clone3", ENOSYS},		 {"openat2", ENOSYS},
};

/* Each call that sets a file's mode, and the argument that holds it. */
static const struct {
	const char *name;
	unsigned arg;
} mode_calls[] = {
    {"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1},
    {"open", 2},  {"openat", 3}, {"mknod", 1},	  {"mknodat", 2},
};

static int deny_setid_modes(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	for (size_t i = 0; i < ELEMENTSOF(mode_calls); i++) {
		int nr = seccomp_syscall_resolve_name(mode_calls[i].name);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture (or libseccomp) */
		/* The bit alone is compared (masked): whatever else the
		 * register holds, as for an open without O_CREAT. */
		for (unsigned bit = 0; bit < 2; bit++) {
			const unsigned m = bit ? S_ISGID : S_ISUID;
			struct scmp_arg_cmp cmp = {
			    .arg = mode_calls[i].arg, .op = SCMP_CMP_MASKED_EQ,
			    .datum_a = m, .datum_b = m,
			};
			int r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);

			if (r < 0)
				return sl_err(err, errlen, r, "seccomp: denying %s with %s: %s",
					      mode_calls[i].name, bit ? "S_ISGID" : "S_ISUID",
					      strerror(-r));
		}
	}
	return 0;
}

/* socket() for the four families only (the comment at the top says why):
 * a rule refuses each value below AF_NETLINK that is none of them, and one
 * every value from AF_NETLINK + 1 up (an int's high values too: the
 * comparison is of its 32 bits, unsigned). */
static int deny_socket_families(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	int r = 0;

	for (uint32_t f = 0; f < AF_NETLINK && r == 0; f++)
		if (f != AF_UNIX && f != AF_INET && f != AF_INET6)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					     SCMP_A0_32(SCMP_CMP_EQ, f));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0_32(SCMP_CMP_GT, AF_NETLINK));
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: limiting socket families: %s",
			      strerror(-r));
	return 0;
}

static int add_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	int r;

	for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i].name);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(denied[i].error), nr, 0);
		if (r < 0)
			return sl_err(err, errlen, r, "seccomp: denying %s: %s", denied[i].name,
				      strerror(-r));
	}
	/* The flags are the first argument of unshare, and of clone on every
	 * architecture this runs on (x86, arm). */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: denying new user namespaces: %s",
			      strerror(-r));
	r = deny_socket_families(ctx, err, errlen);
	if (r < 0)
		return r;
	/* The request is an int: compare its low 32 bits only. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			     SCMP_A1_32(SCMP_CMP_EQ, TIOCSTI));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1_32(SCMP_CMP_EQ, TIOCLINUX));
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: denying TIOCSTI and TIOCLINUX: %s",
			      strerror(-r));
	return deny_setid_modes(ctx, err, errlen);
}

int sl_netns_seccomp_command(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return sl_err(err, errlen, -ENOMEM, "seccomp: out of memory");
	/* The same rules for the 32-bit system calls of an x86_64 machine: a
	 * filter for the native calls alone would leave int 0x80 open. */
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
		if (r == 0 || r == -EEXIST)
			r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
		if (r < 0 && r != -EEXIST) {
			seccomp_release(ctx);
			return sl_err(err, errlen, r, "seccomp: adding the 32-bit ABIs: %s",
				      strerror(-r));
		}
	}
	r = add_rules(ctx, err, errlen);
	if (r == 0) {
		r = seccomp_load(ctx);
		if (r < 0)
			sl_err(err, errlen, r, "seccomp: loading the filter: %s", strerror(-r));
	}
	seccomp_release(ctx);
	return r;
}
