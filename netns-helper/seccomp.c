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
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
	/* The kernel reads the request as an unsigned int, so only its low
	 * 32 bits may be compared, whatever the high ones hold: a masked
	 * compare. (SCMP_A1_32's EQ, with libseccomp 2.5, also wants the
	 * high word 0: ioctl(fd, 1ULL << 32 | TIOCSTI) passed it and typed
	 * into the sandbox's terminal, helper 62.) */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX));
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: denying TIOCSTI and TIOCLINUX: %s",
			      strerror(-r));
	return deny_setid_modes(ctx, err, errlen);
}

/* The filter's rules in a new context (for every ABI of an x86_64 machine),
 * or NULL with err set. */
static scmp_filter_ctx command_filter(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx) {
		sl_err(err, errlen, -ENOMEM, "seccomp: out of memory");
		return NULL;
	}
	/* The same rules for the 32-bit system calls of an x86_64 machine: a
	 * filter for the native calls alone would leave int 0x80 open. */
	if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
		r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
		if (r == 0 || r == -EEXIST)
			r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
		if (r < 0 && r != -EEXIST) {
			seccomp_release(ctx);
			sl_err(err, errlen, r, "seccomp: adding the 32-bit ABIs: %s", strerror(-r));
			return NULL;
		}
	}
	if (add_rules(ctx, err, errlen) < 0) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int sl_netns_seccomp_command(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = command_filter(err, errlen);
	int r;

	if (!ctx)
		return -EINVAL;
	r = seccomp_load(ctx);
	if (r < 0)
		sl_err(err, errlen, r, "seccomp: loading the filter: %s", strerror(-r));
	seccomp_release(ctx);
	return r;
}

int sl_netns_filter_build(struct sl_netns_filter *f, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = command_filter(err, errlen);
	_cleanup_close_ int fd = -1;
	struct stat st;
	ssize_t n;
	int r;

	*f = (struct sl_netns_filter){0};
	if (!ctx)
		return -EINVAL;
	/* The program libseccomp would load, as it would load it (2.5 exports
	 * to an fd only). */
	fd = memfd_create("sluice-seccomp", MFD_CLOEXEC);
	r = fd < 0 ? negative_errno() : seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	if (r == 0 && fstat(fd, &st) < 0)
		r = negative_errno();
	if (r == 0 && (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) ||
		       st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS))
		r = -EINVAL;
	if (r < 0)
		return sl_err(err, errlen, r, "seccomp: building the command's filter: %s",
			      strerror(-r));
	f->insns = malloc((size_t)st.st_size);
	if (!f->insns)
		return sl_err(err, errlen, -ENOMEM, "seccomp: out of memory");
	n = pread(fd, f->insns, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		sl_netns_filter_free(f);
		return sl_err(err, errlen, n < 0 ? negative_errno() : -EIO,
			      "seccomp: reading the command's filter back: %s",
			      n < 0 ? strerror(errno) : "short read");
	}
	f->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	return 0;
}

int sl_netns_filter_load(const struct sl_netns_filter *f, char *err, size_t errlen)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};

	/* What seccomp_load() does with our context's attributes: no_new_privs
	 * (set already by the caller, and again here), no flags. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return sl_err(err, errlen, negative_errno(), "seccomp: loading the filter: %m");
	return 0;
}

void sl_netns_filter_free(struct sl_netns_filter *f)
{
	free(f->insns);
	*f = (struct sl_netns_filter){0};
}
