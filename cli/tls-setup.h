/* SPDX-License-Identifier: MIT */
/*
 * What TLS inspection and credential injection need before the gateway
 * starts, shared by `run`, `attach` and `gateway`: every secret the policy
 * names, read now (while sluice still has the privileges to read them, and
 * refused if the sandbox's user could read the file too), and the CA that
 * the sandbox is told to trust, with a bundle file (the system's roots plus
 * that CA) for the sandbox's programs to point at.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ca.h"
#include "gateway.h"
#include "policy.h"
#include "scrub.h"
#include "secret.h"

/* The system's trust bundle on Debian and its derivatives. */
#define SL_SYSTEM_ROOTS "/etc/ssl/certs/ca-certificates.crt"
/* Leaves cached per CA (one per inspected host name). */
#define SL_LEAF_CACHE 1024
/* What the certificates of every --trust may come to, in PEM. */
#define SL_TRUST_PEM_MAX (16u << 20)

/* The variables programs read their trust bundle from (docs/credentials.md). */
extern const char *const sl_ca_env_vars[];

struct sl_tls_setup {
	const char *prog; /* for messages: "sluice run" */
	struct sl_ca *ca;
	char *bundle_dir; /* made by us, removed by sl_tls_setup_done() */
	char *bundle;	  /* the bundle's path */
	char *trust_pem;  /* --trust's certificates, for the bundle; NULL: none */
	struct {
		char *name;
		enum sl_secret_source source;
		char *ref;
		struct sl_secret_value *v;
	} secrets[SL_SCRUB_MAX_SECRETS];
	size_t n_secrets;
	/* Set before sl_tls_load_secrets(): the paths the sandbox can write
	 * (`run --rw`, NULL-terminated; NULL: none), where no secret file
	 * may lie. Borrowed. */
	const char *const *sandbox_writable;
	/* Where the policy in force sends the secrets: a reload may narrow
	 * that, never widen it (sl_tls_covers). */
	struct sl_policy_bindings *bindings;
};

/* Read every secret p names (sandbox_uid: the user who must not be able to
 * read their files; none may lie where anyone but root or sluice's user
 * could replace it, safe-file.h), and note where p sends them. errlen >=
 * 512. */
int sl_tls_load_secrets(struct sl_tls_setup *s, const struct sl_policy *p, uid_t sandbox_uid,
			char *err, size_t errlen);

/* Have OpenSSL build what its first key generation needs (its tables of
 * algorithms, the random generator): milliseconds of CPU that a thread
 * can spend before the sandbox's CA is made. Nothing of it is secret. */
void sl_tls_warm_up(void);

/* A CA of our own for this sandbox (in memory) and its bundle, written to
 * a directory of its own under /run/sluice named after the sandbox: what
 * sl_tls_bundle_prepare() and sl_tls_bundle_fill() do, with the CA made
 * here. */
int sl_tls_make_ca(struct sl_tls_setup *s, const char *sandbox_name, char *err, size_t errlen);

/* The bundle's directory under /run/sluice, named after the sandbox (and
 * us), with the bundle in it as an empty file (s->bundle): a path the
 * sandbox's view can bind before the CA exists. */
int sl_tls_bundle_prepare(struct sl_tls_setup *s, const char *sandbox_name, char *err,
			  size_t errlen);

/* Fill the prepared bundle, in place: the system's roots, cert_pem (the
 * sandbox's CA), then what sl_tls_add_trust() collected. No bundle
 * prepared: nothing to do. */
int sl_tls_bundle_fill(struct sl_tls_setup *s, const char *cert_pem, char *err, size_t errlen);

/* Collect the certificates of a PEM file (`--trust FILE`), each checked and
 * written out again, for sl_tls_bundle_fill() to add to the bundle, so the
 * sandbox also trusts origins behind the operator's own CA. */
int sl_tls_add_trust(struct sl_tls_setup *s, const char *path, char *err, size_t errlen);

/* The CA kept in dir (sluice gateway --ca-dir): dir/ca.key, dir/ca.crt and
 * the bundle dir/ca-bundle.crt. */
int sl_tls_open_ca_dir(struct sl_tls_setup *s, const char *dir, char *err, size_t errlen);

/* Hand the CA and the secrets to the gateway (they must outlive it). */
int sl_tls_apply(struct sl_tls_setup *s, struct sl_gw *gw, const char *upstream_ca, char *err,
		 size_t errlen);

/* May the gateway take this new policy (a reload)? Only if every secret it
 * names was loaded at start, from the same place, and it sends each one
 * only where the policy in force does (same header and prefix, a host its
 * pattern covers, a port it names: sl_policy_bindings_check): a reload
 * cannot read new secrets (the files may no longer be readable) nor send
 * a key somewhere new, so that whoever gets a file reread cannot widen
 * where the key goes. Both need a restart. */
bool sl_tls_covers(const struct sl_tls_setup *s, const struct sl_policy *p, char *err,
		   size_t errlen);

/* p, which sl_tls_covers() allowed, is now in force: note where it sends
 * the secrets, for the next reload. Call it before handing p over. -ENOMEM
 * leaves the earlier note (then refuse the reload). */
int sl_tls_reloaded(struct sl_tls_setup *s, const struct sl_policy *p);

/* Does any rule of p need inspection? The first one's line, else 0. */
unsigned sl_tls_first_inspected(const struct sl_policy *p);

/* Wipe the secrets, free the CA, remove the bundle we wrote. Call it only
 * once the gateway is gone. */
void sl_tls_setup_done(struct sl_tls_setup *s);
