/* SPDX-License-Identifier: MIT */
/* Secrets and the sandbox's CA, before the gateway starts (tls-setup.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "macro.h"
#include "tls-setup.h"
#include "trace.h"

const char *const sl_ca_env_vars[] = {
    "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO", "PIP_CERT",	    "AWS_CA_BUNDLE",  "DENO_CERT",
    NULL,
};

int sl_tls_load_secrets(struct sl_tls_setup *s, const struct sl_policy *p, uid_t sandbox_uid,
			char *err, size_t errlen)
{
	size_t i;
	int r;

	/* Secrets and (next) the CA's key live in this process: no core
	 * dump of it, and no ptrace by anyone but root. The command we start
	 * gets its own setting back when it executes. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (p->n_secrets > SL_SCRUB_MAX_SECRETS) {
		snprintf(err, errlen, "%s: %zu secrets; at most %d are supported", p->source,
			 p->n_secrets, SL_SCRUB_MAX_SECRETS);
		return -E2BIG;
	}
	for (i = 0; i < p->n_secrets; i++) {
		const struct sl_secret *sec = &p->secrets[i];

		r = sl_secret_load(sec, sandbox_uid, s->sandbox_writable, &s->secrets[i].v, err,
				   errlen);
		if (r < 0)
			return r;
		s->n_secrets = i + 1;
		s->secrets[i].name = strdup(sec->name);
		s->secrets[i].ref = strdup(sec->ref);
		s->secrets[i].source = sec->source;
		if (!s->secrets[i].name || !s->secrets[i].ref) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	r = sl_tls_reloaded(s, p);
	if (r < 0)
		snprintf(err, errlen, "out of memory");
	return r;
}

int sl_tls_reloaded(struct sl_tls_setup *s, const struct sl_policy *p)
{
	struct sl_policy_bindings *b = NULL;
	int r = sl_policy_bindings_new(p, &b);

	if (r < 0)
		return r;
	sl_policy_bindings_free(s->bindings);
	s->bindings = b;
	return 0;
}

/* The bundle directories of earlier sandboxes of this name, "ca-NAME" and
 * "ca-NAME-PID": we hold the name's slot, so each is one a sluice left
 * when it was killed, or one whose teardown is under way after it let the
 * slot go (its sandbox cut off already; its own removal then finds nothing
 * to do). Only plain directories of root's, and in them only the bundle
 * and its temp files: anything else there keeps the directory. */
static void sweep_bundle_dirs(const char *name)
{
	_cleanup_close_ int run = open("/run/sluice", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char prefix[64];
	size_t plen;
	struct dirent *e;
	DIR *d;

	if (run < 0 || (size_t)snprintf(prefix, sizeof(prefix), "ca-%s", name) >= sizeof(prefix))
		return;
	plen = strlen(prefix);
	d = fdopendir(run);
	if (!d)
		return;
	run = -1; /* the DIR's now */
	for (unsigned n = 0; n < 100000 && (e = readdir(d)); n++) {
		_cleanup_close_ int dfd = -1;
		struct dirent *f;
		struct stat st;
		DIR *sub;

		if (strncmp(e->d_name, prefix, plen) ||
		    (e->d_name[plen] && (e->d_name[plen] != '-' || !e->d_name[plen + 1] ||
					 strspn(e->d_name + plen + 1, "0123456789") !=
					     strlen(e->d_name + plen + 1))))
			continue;
		dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022))
			continue;
		sub = fdopendir(TAKE_FD(dfd));
		if (!sub)
			continue;
		for (unsigned m = 0; m < 1000 && (f = readdir(sub)); m++)
			if (!strncmp(f->d_name, "ca-bundle.crt", 13) &&
			    (!f->d_name[13] || f->d_name[13] == '.'))
				(void)unlinkat(dirfd(sub), f->d_name, 0);
		closedir(sub);
		(void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

void sl_tls_warm_up(void)
{
	/* A key of the kind the CA's are, thrown away: the first one costs
	 * the configuration, the provider's algorithm tables, the random
	 * generator's seeding and the curve's setup, milliseconds that the
	 * next ones do not pay. */
	EVP_PKEY_free(EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"));
	/* And a TLS context: the first one fetches every cipher, digest and
	 * group from the provider (the store keeps them), half a millisecond
	 * that the gateway, forked from us, would pay on its way to ready. */
	SSL_CTX_free(SSL_CTX_new(TLS_method()));
	ERR_clear_error();
}

int sl_tls_bundle_prepare(struct sl_tls_setup *s, const char *sandbox_name, char *err,
			  size_t errlen)
{
	_cleanup_close_ int fd = -1;
	int r;

	if (mkdir("/run/sluice", 0755) < 0 && errno != EEXIST) {
		r = negative_errno();
		snprintf(err, errlen, "/run/sluice: %s", strerror(-r));
		return r;
	}
	sweep_bundle_dirs(sandbox_name);
	/* A directory of our own, readable by the sandbox's user, writable by
	 * root only. Named after the sandbox and us: the sandbox's name is
	 * its slot's, which the next sandbox takes as soon as our teardown
	 * lets it go, before our bundle is removed. */
	if (asprintf(&s->bundle_dir, "/run/sluice/ca-%s-%ld", sandbox_name, (long)getpid()) < 0) {
		s->bundle_dir = NULL;
		return -ENOMEM;
	}
	if (mkdir(s->bundle_dir, 0755) < 0) {
		struct stat st;

		/* Left by a sluice that was killed (and had our pid): only
		 * root can make entries in /run/sluice, so one that is a plain
		 * directory of root's is ours to reuse (the bundle is replaced
		 * whole). */
		r = negative_errno();
		if (r != -EEXIST || lstat(s->bundle_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != 0) {
			snprintf(err, errlen, "%s: %s", s->bundle_dir,
				 r == -EEXIST ? "exists, and is not a directory of root's"
					      : strerror(-r));
			free(TAKE_PTR(s->bundle_dir));
			return r;
		}
	}
	(void)chmod(s->bundle_dir, 0755); /* whatever the umask */
	if (asprintf(&s->bundle, "%s/ca-bundle.crt", s->bundle_dir) < 0) {
		s->bundle = NULL;
		return -ENOMEM;
	}
	/* A new file, empty until sl_tls_bundle_fill(): whatever a killed
	 * sluice left under the name goes first. */
	(void)unlink(s->bundle);
	fd = open(s->bundle, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || fchmod(fd, 0644) < 0) {
		r = negative_errno();
		snprintf(err, errlen, "%s: %s", s->bundle, strerror(-r));
		return r;
	}
	return 0;
}

int sl_tls_bundle_fill(struct sl_tls_setup *s, const char *cert_pem, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	char ebuf[384];
	int r;

	if (!s->bundle)
		return 0;
	fd = open(s->bundle, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? negative_errno()
		   : sl_ca_bundle_fill(fd, SL_SYSTEM_ROOTS, cert_pem, s->trust_pem, ebuf,
				       sizeof(ebuf));
	if (r < 0)
		snprintf(err, errlen, "the sandbox's CA bundle %s: %s", s->bundle,
			 fd < 0 ? strerror(-r) : ebuf);
	return r;
}

int sl_tls_make_ca(struct sl_tls_setup *s, const char *sandbox_name, char *err, size_t errlen)
{
	char ebuf[384];
	int r;

	r = sl_ca_new(sandbox_name, SL_LEAF_CACHE, &s->ca, ebuf, sizeof(ebuf));
	if (r < 0) {
		snprintf(err, errlen, "making the sandbox's CA: %s", ebuf);
		return r;
	}
	sl_trace("CA key and certificate made");
	/* No fsync: the bundle lives as long as the sandbox. */
	r = sl_tls_bundle_prepare(s, sandbox_name, err, errlen);
	return r < 0 ? r : sl_tls_bundle_fill(s, sl_ca_cert_pem(s->ca), err, errlen);
}

int sl_tls_open_ca_dir(struct sl_tls_setup *s, const char *dir, char *err, size_t errlen)
{
	char ebuf[384], *path = NULL;
	int r;

	r = sl_ca_open_dir(dir, "gateway", SL_LEAF_CACHE, &s->ca, ebuf, sizeof(ebuf));
	if (r < 0) {
		snprintf(err, errlen, "--ca-dir: %s", ebuf);
		return r;
	}
	if (asprintf(&path, "%s/ca-bundle.crt", dir) < 0)
		return -ENOMEM;
	r = sl_ca_write_bundle(s->ca, SL_SYSTEM_ROOTS, path, true, ebuf, sizeof(ebuf));
	if (r < 0) {
		snprintf(err, errlen, "--ca-dir: %s", ebuf);
		free(path);
		return r;
	}
	s->bundle = path; /* kept: clients outside us point at it */
	return 0;
}

int sl_tls_apply(struct sl_tls_setup *s, struct sl_gw *gw, const char *upstream_ca, char *err,
		 size_t errlen)
{
	size_t i;
	int r;

	if (!s->ca)
		return 0;
	r = sl_gw_enable_inspection(gw, s->ca, upstream_ca, err, errlen);
	if (r < 0)
		return r;
	for (i = 0; i < s->n_secrets; i++) {
		r = sl_gw_add_secret(gw, s->secrets[i].name, s->secrets[i].v);
		if (r < 0) {
			snprintf(err, errlen, "secret '%s': %s", s->secrets[i].name, strerror(-r));
			return r;
		}
	}
	return 0;
}

bool sl_tls_covers(const struct sl_tls_setup *s, const struct sl_policy *p, char *err,
		   size_t errlen)
{
	size_t i, j;

	for (i = 0; i < p->n_secrets; i++) {
		const struct sl_secret *sec = &p->secrets[i];

		for (j = 0; j < s->n_secrets; j++)
			if (strcmp(s->secrets[j].name, sec->name) == 0 &&
			    s->secrets[j].source == sec->source &&
			    strcmp(s->secrets[j].ref, sec->ref) == 0)
				break;
		if (j == s->n_secrets) {
			snprintf(err, errlen,
				 "%s:%u: secret '%s' was not loaded when sluice started, and a "
				 "reload does not read secrets: restart sluice to use it",
				 p->source, sec->line, sec->name);
			return false;
		}
	}
	/* No note (secrets never loaded): then p names none, as checked. */
	if (s->bindings && sl_policy_bindings_check(s->bindings, p, err, errlen) < 0)
		return false;
	return true;
}

unsigned sl_tls_first_inspected(const struct sl_policy *p)
{
	size_t i;

	for (i = 0; i < p->n_allow; i++)
		if (p->rules[i].inspect)
			return p->rules[i].line ? p->rules[i].line : 1;
	return 0;
}

void sl_tls_setup_done(struct sl_tls_setup *s)
{
	size_t i;

	for (i = 0; i < s->n_secrets; i++) {
		sl_secret_value_free(TAKE_PTR(s->secrets[i].v));
		free(TAKE_PTR(s->secrets[i].name));
		free(TAKE_PTR(s->secrets[i].ref));
	}
	s->n_secrets = 0;
	sl_policy_bindings_free(TAKE_PTR(s->bindings));
	sl_ca_free(TAKE_PTR(s->ca));
	if (s->bundle_dir) {
		(void)unlink(s->bundle);
		(void)rmdir(s->bundle_dir);
	}
	free(TAKE_PTR(s->bundle));
	free(TAKE_PTR(s->bundle_dir));
	free(TAKE_PTR(s->trust_pem));
}

/* Append len bytes to s->trust_pem. */
static int trust_append(struct sl_tls_setup *s, const char *p, size_t len)
{
	size_t have = s->trust_pem ? strlen(s->trust_pem) : 0;
	char *n;

	if (have + len + 2 > SL_TRUST_PEM_MAX)
		return -EFBIG;
	n = realloc(s->trust_pem, have + len + 2);
	if (!n)
		return -ENOMEM;
	n[have] = '\n';
	memcpy(n + have + 1, p, len);
	n[have + 1 + len] = '\0';
	s->trust_pem = n;
	return 0;
}

int sl_tls_add_trust(struct sl_tls_setup *s, const char *path, char *err, size_t errlen)
{
	BIO *in = BIO_new_file(path, "r");
	unsigned n = 0;
	X509 *x;
	int r = 0;

	if (!in) {
		snprintf(err, errlen, "--trust %s: %s", path, strerror(errno ? errno : EIO));
		return -(errno ? errno : EIO);
	}
	/* Certificates only, each written out again by OpenSSL: whatever else
	 * the file holds (a private key by mistake) never reaches the bundle. */
	while ((x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
		BIO *out = BIO_new(BIO_s_mem());
		char *pem;
		long len;

		if (!out || !PEM_write_bio_X509(out, x) || (len = BIO_get_mem_data(out, &pem)) <= 0)
			r = -EIO;
		else
			r = trust_append(s, pem, (size_t)len);
		BIO_free(out);
		X509_free(x);
		if (r < 0) {
			const char *why = "re-encoding a certificate failed";

			if (r == -EFBIG)
				why = "the certificates of --trust come to more than 16 MiB";
			else if (r == -ENOMEM)
				why = "out of memory";
			snprintf(err, errlen, "--trust %s: %s", path, why);
			BIO_free(in);
			return r;
		}
		n++;
	}
	ERR_clear_error(); /* the end of the file reads as an error */
	BIO_free(in);
	if (n == 0) {
		snprintf(err, errlen, "--trust %s: no PEM certificate in it", path);
		return -EINVAL;
	}
	return 0;
}
