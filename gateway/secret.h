/* SPDX-License-Identifier: MIT */
/*
 * Loading the value of a secret the policy names (policy.h, struct
 * sl_secret): from a file, from sluice's own environment, or from a systemd
 * credential in $CREDENTIALS_DIRECTORY. Called during setup, before
 * privileges are dropped; every refusal is meant to be fatal.
 *
 * A value is kept in its own anonymous mapping, excluded from core dumps
 * (MADV_DONTDUMP) and locked in memory where the limit allows (mlock
 * failure is not fatal), and is wiped before it is unmapped.
 *
 * Files (and credentials) must be regular files, not reached through a
 * symlink as the last component, owned by root or by sluice's effective
 * user, not owned by the sandbox's user, and carry no permission bits for
 * group or others (mode & 077 == 0): nothing but their owner and root can
 * read them, so the sandbox cannot. Nor may anyone else be able to replace
 * them: every directory on the way must pass safe-file.h (owned by root or
 * sluice's user, not writable by group or others, not a --rw path of the
 * sandbox's). A systemd credential's directory passes as systemd makes it.
 *
 * Values become an HTTP header, so trailing newlines are stripped and any
 * other control character (CR, LF and NUL above all: header injection) is
 * refused; a value must be SL_SECRET_MIN_LEN..SL_SECRET_MAX_LEN bytes, the
 * range the scrubber (scrub.h) can replace in responses.
 *
 * A variable read from the environment stays there: the caller must keep
 * it out of the sandbox's environment.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "policy.h"

#define SL_SECRET_MIN_LEN 8
#define SL_SECRET_MAX_LEN 4096

struct sl_secret_value {
	size_t len;
	size_t map_len; /* of the mapping that holds this struct and value */
	char value[];	/* len bytes, then a NUL */
};

/*
 * Load sec's value. sandbox_uid is the user the sandbox runs as;
 * sandbox_writable (NULL-terminated, may be NULL) the paths it can write
 * (`run --rw`), where no secret file may lie. On success
 * returns 0 and sets *ret_value (free with sl_secret_value_free). On
 * failure returns a negative errno and, when err is not NULL, writes a
 * message naming the secret and its file or variable to err (errlen bytes,
 * NUL-terminated).
 */
int sl_secret_load(const struct sl_secret *sec, uid_t sandbox_uid,
		   const char *const *sandbox_writable, struct sl_secret_value **ret_value,
		   char *err, size_t errlen);

/* Wipe, unlock and unmap. Accepts NULL. */
void sl_secret_value_free(struct sl_secret_value *v);
