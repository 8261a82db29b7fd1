/* SPDX-License-Identifier: MIT */
/*
 * Files that configure sluice (a policy, a secret) are trusted only where
 * the sandbox cannot change them, as sshd's StrictModes trusts
 * authorized_keys: a policy the agent can rewrite, followed by a reload,
 * binds the operator's key to a host the agent chose.
 *
 * A file is trusted when the file itself, every directory on the way to
 * it from / (of the path as given and of every symlink's target, followed
 * here component by component) and every symlink on the way are owned by
 * root or by trusted_uid; no group or others can write the file or a
 * directory, except a sticky directory (/tmp), where nobody but an entry's
 * owner can rename or remove it; a file in such a sticky directory has a
 * single link (else someone could have linked another file of root's into
 * place); and neither the file nor any directory on the way is one of the
 * sandbox_writable paths (the --rw binds, compared by device and inode,
 * so a second path to the same directory does not hide it).
 *
 * The file checked is the one opened: its fd's fstat must be the entry the
 * walk reaches, so a swap between the open and the walk is refused (and
 * can only be done by someone the walk would have refused anyway).
 *
 * What is not looked at: ACLs (a named entry with write access shows as
 * the group's write bit, which is refused), and who can write the mounts
 * themselves (a bind of the file into a container is for the operator to
 * avoid: docs/policy.md).
 *
 * Messages start with the path as given and end with the fix, e.g.
 * "/home/a/p.yaml: group or others can write it (chmod go-w /home/a/p.yaml)".
 * Nothing here prints or keeps state.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

enum {
	/* The last component may not be a symlink (a secret: one planted in
	 * place of the file is refused, not followed). */
	SL_SAFE_FILE_NOFOLLOW = 1u << 0,
};

/*
 * Check that fd, opened from path, is a trusted regular file (above).
 * trusted_uid: who may own it besides root (sluice's own user when it runs
 * unprivileged; 0 for root alone). sandbox_writable: NULL-terminated, may
 * be NULL; entries that do not exist are skipped (nothing is bound there).
 * Returns 0, or -EPERM (not trusted), -ESTALE (path no longer leads to fd),
 * -ELOOP, -ENOTDIR, -EINVAL (not a regular file), another negative errno
 * when a step could not be looked at; err (errlen bytes) says which.
 */
int sl_safe_file_check_fd(int fd, const char *path, uid_t trusted_uid,
			  const char *const *sandbox_writable, unsigned flags, char *err,
			  size_t errlen);

/* Open path read-only (O_CLOEXEC, never blocking on a FIFO) and check it
 * as above; on success *ret_fd is the checked fd. */
int sl_safe_file_open(const char *path, uid_t trusted_uid, const char *const *sandbox_writable,
		      unsigned flags, int *ret_fd, char *err, size_t errlen);

/* The same, for a caller that only wants the verdict. */
int sl_safe_file_check(const char *path, uid_t trusted_uid, const char *const *sandbox_writable,
		       char *err, size_t errlen);
