/* SPDX-License-Identifier: MIT */
/*
 * The certificate authority behind TLS inspection; the contract is in ca.h.
 *
 * Each sandbox gets its own CA, so a key that leaks out of one gateway lets
 * an attacker impersonate servers only to that sandbox, and only while it
 * trusts that CA. By default the CA's key is made at start-up and never
 * leaves this process's memory: nothing on disk can be stolen, and a
 * restart makes a new CA (and a new bundle for the sandbox). Only with
 * `--ca-dir` is it kept in a file, which is then held to the rules a
 * secret's file is held to (secret.h): not a symlink, owned by us or root,
 * no access for group or others, in a directory no one else can write.
 *
 * Leaves are minted when a connection first asks for a host. All leaves of
 * one CA share one P-256 key made with the CA, and every extension but the
 * subjectAltName is the same for every leaf, so they are built once:
 * minting a leaf costs one ECDSA signature, not a key generation. A host
 * that the sandbox picks costs us a mint and a cache slot, so the cache is
 * an LRU bounded by max_leaves; a sandbox that names endless hosts evicts
 * its own leaves and pays in signatures, never in our memory.
 *
 * Hosts arrive in normal form (policy and SNI parsing normalise them); we
 * still refuse anything outside the DNS-name alphabet, so that a wildcard
 * or a control character can never become a certificate name.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "macro.h"

#define DAY (24 * 60 * 60)
#define CA_DAYS 825
#define LEAF_DAYS 30
#define BACKDATE (60 * 60) /* tolerate clocks in the sandbox that lag ours */
#define HOST_MAX 253	   /* RFC 1035 section 2.3.4, without the trailing dot */
#define CN_MAX 64	   /* ub-common-name, RFC 5280 appendix A.1 */
#define KEY_FILE_MAX 16384 /* a P-256 PKCS#8 PEM is about 240 bytes */
#define CERT_FILE_MAX 65536
#define ROOTS_FILE_MAX (16u << 20)

struct leaf {
	struct leaf *prev, *next; /* most recently used first */
	X509 *cert;
	time_t not_after;
	char host[]; /* NUL-terminated */
};

struct sl_ca {
	EVP_PKEY *key;
	X509 *cert;
	char *cert_pem;
	time_t not_after;
	EVP_PKEY *leaf_key;
	X509_EXTENSIONS *leaf_exts; /* every leaf's, but its subjectAltName */
	struct leaf *head, *tail;
	size_t nleaves, max_leaves;
	unsigned long mints;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIGNUM *, BN_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct sl_ca *, sl_ca_free)

/* Write the message to err and return r. fail_ssl() appends OpenSSL's
 * reason for the failure and empties its error queue. */
#define fail(err, errlen, r, ...) failf(err, errlen, r, false, __VA_ARGS__)
#define fail_ssl(err, errlen, r, ...) failf(err, errlen, r, true, __VA_ARGS__)

_printf_(5, 6) static int failf(char *err, size_t errlen, int r, bool ssl, const char *fmt, ...)
{
	const char *why = ssl ? ERR_reason_error_string(ERR_peek_last_error()) : NULL;
	size_t n;
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		n = strlen(err);
		if (ssl)
			snprintf(err + n, errlen - n, ": %s", why ? why : "OpenSSL error");
	}
	if (ssl)
		ERR_clear_error();
	return r;
}

/* Refuse a passphrase prompt: a key we cannot read unattended is an error,
 * never a question on whatever terminal sluice happens to have. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static int set_serial(X509 *x)
{
	_cleanup_(BN_freep) BIGNUM *bn = NULL;
	unsigned char b[16];

	/* 128 random bits with the top one clear: positive, and far more
	 * than the 64 bits of entropy CA/B Forum requires. */
	do {
		if (RAND_bytes(b, sizeof(b)) != 1)
			return -EIO;
		b[0] &= 0x7f;
		BN_free(bn);
		bn = BN_bin2bn(b, sizeof(b), NULL);
		if (!bn)
			return -ENOMEM;
	} while (BN_is_zero(bn));
	return BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ? 0 : -ENOMEM;
}

/* Add the extension nid given in openssl.cnf syntax ("critical,CA:TRUE"),
 * to x when x is not NULL, else to the leaf template. */
static int add_ext(struct sl_ca *ca, X509V3_CTX *ctx, X509 *x, int nid, const char *value)
{
	_cleanup_(X509_EXTENSION_freep) X509_EXTENSION *ext = NULL;

	ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	if (!ext)
		return -EIO;
	if (x)
		return X509_add_ext(x, ext, -1) ? 0 : -ENOMEM;
	if (!sk_X509_EXTENSION_push(ca->leaf_exts, ext))
		return -ENOMEM;
	ext = NULL;
	return 0;
}

/* X509_set_pubkey() for a P-256 key without OpenSSL 3.0's encoder and
 * decoder round trip (half a millisecond): id-ecPublicKey, the curve and
 * the uncompressed point (RFC 5480), as i2d_PUBKEY() writes them. Not for
 * a certificate a connection presents: SSL_use_certificate() needs the
 * decoded key that X509_set_pubkey() leaves in it. */
static bool set_pubkey(X509 *x, EVP_PKEY *key)
{
	X509_PUBKEY *pub = X509_get_X509_PUBKEY(x);
	unsigned char pt[65], *copy;
	char curve[32];
	size_t len = 0;

	if (!pub || !EVP_PKEY_is_a(key, "EC") ||
	    EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof(curve),
					   NULL) != 1 ||
	    strcmp(curve, "prime256v1") ||
	    EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pt,
					    sizeof(pt), &len) != 1 ||
	    len != sizeof(pt) || pt[0] != 0x04)
		return X509_set_pubkey(x, key) == 1;
	copy = OPENSSL_memdup(pt, len);
	if (copy && X509_PUBKEY_set0_param(pub, OBJ_nid2obj(NID_X9_62_id_ecPublicKey),
					   V_ASN1_OBJECT, OBJ_nid2obj(NID_X9_62_prime256v1), copy,
					   (int)len))
		return true;
	OPENSSL_free(copy);
	return false;
}

static int make_root(struct sl_ca *ca, const char *name, char *err, size_t errlen)
{
	_cleanup_(X509_freep) X509 *x = NULL;
	X509_NAME *subj;
	X509V3_CTX ctx;
	char cn[CN_MAX + 1];
	time_t now = time(NULL);

	if (name && (size_t)snprintf(cn, sizeof(cn), "sluice sandbox CA %s", name) >= sizeof(cn)) {
		/* Cut off a UTF-8 character the 64 bytes split, or the name
		 * would not encode: back to its lead byte, then drop that too
		 * if the sequence it starts is short. */
		size_t i = CN_MAX;
		unsigned char c;

		while (i > 0 && ((unsigned char)cn[i - 1] & 0xc0) == 0x80)
			i--;
		c = i > 0 ? (unsigned char)cn[i - 1] : 0;
		if (c >= 0xc0 && CN_MAX - (i - 1) < (c >= 0xf0 ? 4u : c >= 0xe0 ? 3u : 2u))
			cn[i - 1] = '\0';
	} else if (!name)
		snprintf(cn, sizeof(cn), "sluice CA");
	ca->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!ca->key)
		return fail_ssl(err, errlen, -EIO, "CA: generating a P-256 key");
	x = X509_new();
	if (!x)
		return fail(err, errlen, -ENOMEM, "CA: out of memory");
	subj = X509_get_subject_name(x);
	if (!X509_set_version(x, X509_VERSION_3) || set_serial(x) < 0 ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), now - BACKDATE) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), CA_DAYS, 0, &now) ||
	    !X509_NAME_add_entry_by_NID(subj, NID_organizationName, MBSTRING_UTF8,
					(const unsigned char *)"sluice", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_NID(subj, NID_commonName, MBSTRING_UTF8,
					(const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, subj) || !set_pubkey(x, ca->key))
		return fail_ssl(err, errlen, -EINVAL, "CA: building the certificate");
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	if (add_ext(ca, &ctx, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(ca, &ctx, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca, &ctx, x, NID_subject_key_identifier, "hash") < 0)
		return fail_ssl(err, errlen, -EIO, "CA: adding extensions");
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return fail_ssl(err, errlen, -EIO, "CA: signing the certificate");
	ca->cert = TAKE_PTR(x);
	return 0;
}

static struct sl_ca *ca_alloc(size_t max_leaves)
{
	_cleanup_(sl_ca_freep) struct sl_ca *ca = calloc(1, sizeof(*ca));

	if (!ca)
		return NULL;
	ca->max_leaves = max_leaves;
	ca->leaf_exts = sk_X509_EXTENSION_new_null();
	if (!ca->leaf_exts)
		return NULL;
	return TAKE_PTR(ca);
}

/* What every CA needs once it has its key and certificate: the PEM text,
 * the leaf key, and the extensions every leaf carries. */
static int ca_finish(struct sl_ca *ca, char *err, size_t errlen)
{
	_cleanup_(BIO_freep) BIO *bio = BIO_new(BIO_s_mem());
	_cleanup_(X509_freep) X509 *tmpl = X509_new();
	X509V3_CTX ctx;
	struct tm tm;
	char *data;
	long len;

	if (!bio || !tmpl || !PEM_write_bio_X509(bio, ca->cert))
		return fail_ssl(err, errlen, -ENOMEM, "CA: writing the certificate as PEM");
	len = BIO_get_mem_data(bio, &data);
	ca->cert_pem = strndup(data, (size_t)len);
	if (!ca->cert_pem)
		return fail(err, errlen, -ENOMEM, "CA: out of memory");
	if (!ASN1_TIME_to_tm(X509_get0_notAfter(ca->cert), &tm))
		return fail_ssl(err, errlen, -EINVAL, "CA: reading the certificate's notAfter");
	ca->not_after = timegm(&tm);

	ca->leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!ca->leaf_key || !set_pubkey(tmpl, ca->leaf_key))
		return fail_ssl(err, errlen, -EIO, "CA: generating the leaf key");
	/* The subject key identifier hashes the leaf key (the template holds
	 * it); the authority key identifier copies the CA's. */
	X509V3_set_ctx(&ctx, ca->cert, tmpl, NULL, NULL, 0);
	if (add_ext(ca, &ctx, NULL, NID_basic_constraints, "CA:FALSE") < 0 ||
	    add_ext(ca, &ctx, NULL, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(ca, &ctx, NULL, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(ca, &ctx, NULL, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(ca, &ctx, NULL, NID_authority_key_identifier, "keyid:always") < 0)
		return fail_ssl(err, errlen, -EIO, "CA: building the leaf extensions");
	return 0;
}

int sl_ca_new(const char *name, size_t max_leaves, struct sl_ca **ret, char *err, size_t errlen)
{
	_cleanup_(sl_ca_freep) struct sl_ca *ca = NULL;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (max_leaves < 1)
		return fail(err, errlen, -EINVAL, "CA: the leaf cache must hold at least one");
	ca = ca_alloc(max_leaves);
	if (!ca)
		return fail(err, errlen, -ENOMEM, "CA: out of memory");
	r = make_root(ca, name, err, errlen);
	if (r < 0)
		return r;
	r = ca_finish(ca, err, errlen);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ca);
	return 0;
}

/*
 * Read dir's file name (path, for messages) into a new buffer of max + 1
 * bytes, which the caller frees (a secret's with OPENSSL_clear_free(buf,
 * *ret_len)). It must be a regular file; a secret one must also not be a
 * symlink (O_NOFOLLOW), be owned by root or us, and give group and others
 * no access. O_NONBLOCK: a FIFO there cannot hang us before fstat.
 */
static int read_file(int dfd, const char *name, const char *path, bool secret, size_t max,
		     char **ret_buf, size_t *ret_len, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t got = 0;
	ssize_t n = 0;
	char *buf;
	int r;

	fd = openat(dfd, name,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (secret ? O_NOFOLLOW : 0));
	if (fd < 0 && errno == ELOOP && secret)
		return fail(err, errlen, -ELOOP, "%s: a symbolic link; put the file itself there",
			    path);
	if (fd < 0 || fstat(fd, &st) < 0)
		return fail(err, errlen, negative_errno(), "%s: %m", path);
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, -EINVAL, "%s: not a regular file", path);
	if (secret && st.st_uid != 0 && st.st_uid != geteuid())
		return fail(err, errlen, -EPERM,
			    "%s: owned by uid %u; it must be owned by root or by sluice's user "
			    "(uid %u): chown it",
			    path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (secret && (st.st_mode & 077))
		return fail(err, errlen, -EPERM,
			    "%s: %s by group or others (mode %04o); chmod 600 it", path,
			    st.st_mode & 044 ? "readable" : "writable",
			    (unsigned)(st.st_mode & 07777));

	buf = OPENSSL_malloc(max + 1);
	if (!buf)
		return fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	while (got <= max) {
		n = read(fd, buf + got, max + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (n < 0 || got > max) {
		r = n < 0 ? fail(err, errlen, negative_errno(), "%s: read: %m", path)
			  : fail(err, errlen, -EFBIG, "%s: longer than %zu bytes", path, max);
		OPENSSL_clear_free(buf, got);
		return r;
	}
	*ret_buf = buf;
	*ret_len = got;
	return 0;
}

/* Load and check dir's ca.key and ca.crt. */
static int load_dir(struct sl_ca *ca, int dfd, const char *key_path, const char *crt_path,
		    char *err, size_t errlen)
{
	const char *fix = "remove ca.key and ca.crt to make a new CA (the sandbox must then "
			  "trust the new one)";
	char group[64], *buf;
	size_t len;
	BIO *bio;
	int r;

	r = read_file(dfd, "ca.key", key_path, true, KEY_FILE_MAX, &buf, &len, err, errlen);
	if (r < 0)
		return r;
	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio)
		ca->key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	/* The PEM text is the key: wipe it. */
	OPENSSL_clear_free(buf, len);
	if (!ca->key)
		return fail_ssl(err, errlen, -EINVAL, "%s: not an unencrypted PEM private key; %s",
				key_path, fix);
	if (!EVP_PKEY_is_a(ca->key, "EC") ||
	    !EVP_PKEY_get_group_name(ca->key, group, sizeof(group), NULL) ||
	    (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0))
		return fail(err, errlen, -EINVAL, "%s: not an EC P-256 key; %s", key_path, fix);

	r = read_file(dfd, "ca.crt", crt_path, false, CERT_FILE_MAX, &buf, &len, err, errlen);
	if (r < 0)
		return r;
	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio)
		ca->cert = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	OPENSSL_free(buf);
	if (!ca->cert)
		return fail_ssl(err, errlen, -EINVAL, "%s: not a PEM certificate; %s", crt_path,
				fix);
	/* X509_check_ca() is 1 only for basicConstraints CA:TRUE; its other
	 * non-zero answers are legacy guesses we do not want. */
	if (X509_check_ca(ca->cert) != 1 || !(X509_get_key_usage(ca->cert) & KU_KEY_CERT_SIGN))
		return fail(err, errlen, -EINVAL, "%s: not a CA certificate; %s", crt_path, fix);
	if (!X509_get0_subject_key_id(ca->cert))
		return fail(err, errlen, -EINVAL,
			    "%s: no subjectKeyIdentifier, which leaves must name; %s", crt_path,
			    fix);
	if (X509_check_private_key(ca->cert, ca->key) != 1)
		return fail_ssl(err, errlen, -EINVAL, "%s: does not match ca.key; %s", crt_path,
				fix);
	if (X509_cmp_current_time(X509_get0_notAfter(ca->cert)) <= 0)
		return fail(err, errlen, -EKEYEXPIRED, "%s: expired; %s", crt_path, fix);
	return 0;
}

/* Write the n pieces of iov to path through a temp file in its directory,
 * then rename: readers see the old file or the new one, never half of one,
 * and a symlink at path is replaced rather than followed. */
static int write_replace(const char *path, const struct iovec *iov, int n, bool durable, char *err,
			 size_t errlen)
{
	_cleanup_free_ char *tmp = NULL, *dircopy = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	int i, r;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		tmp = NULL;
		return fail(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, negative_errno(), "%s: creating a temp file: %m", path);
	/* mkostemp makes it 0600; the umask must not decide who can read it. */
	r = fchmod(fd, 0644) < 0 ? negative_errno() : 0;
	for (i = 0; r == 0 && i < n; i++)
		r = sl_ca_write_all(fd, iov[i].iov_base, iov[i].iov_len);
	if (r == 0 && durable && fsync(fd) < 0)
		r = negative_errno();
	if (r == 0 && rename(tmp, path) < 0)
		r = negative_errno();
	if (r < 0) {
		(void)unlink(tmp);
		return fail(err, errlen, r, "%s: writing: %s", path, strerror(-r));
	}
	if (!durable)
		return 0;
	/* Make the rename itself durable. */
	dircopy = strdup(path);
	if (dircopy && (dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
		(void)fsync(dfd);
	return 0;
}

static int create_in_dir(struct sl_ca *ca, int dfd, const char *name, const char *key_path,
			 const char *crt_path, char *err, size_t errlen)
{
	_cleanup_(BIO_freep) BIO *bio = NULL;
	_cleanup_close_ int fd = -1;
	char *data;
	long len;
	int r;

	r = make_root(ca, name, err, errlen);
	if (r < 0)
		return r;
	/* A secure-heap BIO wipes the PEM text when it is freed, and when it
	 * grows, of the copy it leaves behind. */
	bio = BIO_new(BIO_s_secmem());
	if (!bio || !PEM_write_bio_PrivateKey(bio, ca->key, NULL, NULL, 0, NULL, NULL))
		return fail_ssl(err, errlen, -ENOMEM, "%s: encoding the key", key_path);
	len = BIO_get_mem_data(bio, &data);

	/* O_EXCL: if another sluice made the key since we looked, we fail
	 * instead of overwriting a key its sandbox already trusts. */
	fd = openat(dfd, "ca.key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, negative_errno(), "%s: creating: %m", key_path);
	/* The umask may not loosen (or, for us, tighten) the mode. */
	r = fchmod(fd, 0600) < 0 ? negative_errno() : 0;
	if (r == 0)
		r = sl_ca_write_all(fd, data, (size_t)len);
	if (r == 0 && fsync(fd) < 0)
		r = negative_errno();
	if (r < 0) {
		(void)unlinkat(dfd, "ca.key", 0);
		return fail(err, errlen, r, "%s: writing: %s", key_path, strerror(-r));
	}
	r = ca_finish(ca, err, errlen);
	if (r == 0)
		r = write_replace(crt_path, &(struct iovec){ca->cert_pem, strlen(ca->cert_pem)}, 1,
				  true, err, errlen);
	if (r < 0) {
		/* A key without its certificate would be refused next time. */
		(void)unlinkat(dfd, "ca.key", 0);
		return r;
	}
	(void)fsync(dfd);
	return 0;
}

int sl_ca_open_dir(const char *dir, const char *name, size_t max_leaves, struct sl_ca **ret,
		   char *err, size_t errlen)
{
	_cleanup_(sl_ca_freep) struct sl_ca *ca = NULL;
	_cleanup_free_ char *key_path = NULL, *crt_path = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	bool have_key, have_crt;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (max_leaves < 1)
		return fail(err, errlen, -EINVAL, "CA: the leaf cache must hold at least one");
	if (asprintf(&key_path, "%s/ca.key", dir) < 0 || asprintf(&crt_path, "%s/ca.crt", dir) < 0)
		return fail(err, errlen, -ENOMEM, "%s: out of memory", dir);
	ca = ca_alloc(max_leaves);
	if (!ca)
		return fail(err, errlen, -ENOMEM, "%s: out of memory", dir);

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT)
		return fail(err, errlen, -ENOENT, "%s: no such directory; mkdir -m 700 it", dir);
	if (dfd < 0 && errno == ENOTDIR)
		return fail(err, errlen, -ENOTDIR, "%s: not a directory", dir);
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return fail(err, errlen, negative_errno(), "%s: %m", dir);
	/* Whoever can write the directory can swap the key for their own. */
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return fail(err, errlen, -EPERM,
			    "%s: owned by uid %u; it must be owned by root or by sluice's user "
			    "(uid %u)",
			    dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return fail(err, errlen, -EPERM,
			    "%s: writable by group or others (mode %04o); chmod go-w it", dir,
			    (unsigned)(st.st_mode & 07777));

	have_key = fstatat(dfd, "ca.key", &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!have_key && errno != ENOENT)
		return fail(err, errlen, negative_errno(), "%s: %m", key_path);
	have_crt = fstatat(dfd, "ca.crt", &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (!have_crt && errno != ENOENT)
		return fail(err, errlen, negative_errno(), "%s: %m", crt_path);
	if (have_key != have_crt)
		return fail(err, errlen, -ENOENT,
			    "%s: missing, but %s exists; restore it, or remove %s to make a new CA "
			    "(the sandbox must then trust the new one)",
			    have_key ? crt_path : key_path, have_key ? key_path : crt_path,
			    have_key ? key_path : crt_path);

	if (have_key) {
		r = load_dir(ca, dfd, key_path, crt_path, err, errlen);
		if (r == 0)
			r = ca_finish(ca, err, errlen);
	} else
		r = create_in_dir(ca, dfd, name, key_path, crt_path, err, errlen);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ca);
	return 0;
}

const char *sl_ca_cert_pem(const struct sl_ca *ca)
{
	return ca->cert_pem;
}

int sl_ca_write_bundle(const struct sl_ca *ca, const char *roots_file, const char *path,
		       bool durable, char *err, size_t errlen)
{
	struct iovec iov[3] = {{NULL, 0}, {(char *)"\n", 1}, {ca->cert_pem, strlen(ca->cert_pem)}};
	char *roots = NULL;
	size_t len = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (roots_file) {
		r = read_file(AT_FDCWD, roots_file, roots_file, false, ROOTS_FILE_MAX, &roots, &len,
			      err, errlen);
		if (r < 0 && r != -ENOENT)
			return r;
		if (r == -ENOENT && err && errlen)
			err[0] = '\0'; /* no roots is not an error: the CA alone */
		iov[0] = (struct iovec){roots, len};
	}
	r = roots ? write_replace(path, iov, 3, durable, err, errlen)
		  : write_replace(path, iov + 2, 1, durable, err, errlen);
	OPENSSL_free(roots); /* public text: no need to wipe, or to touch all its pages */
	return r;
}

/* A host in normal form: an IP address (*ret_family, its bytes in addr),
 * or a lower-case DNS name (*ret_family = AF_UNSPEC). */
static int parse_host(const char *host, size_t len, int *ret_family, unsigned char addr[16])
{
	size_t i;

	if (len == 0 || len > HOST_MAX)
		return -EINVAL;
	if (strchr(host, ':')) {
		*ret_family = AF_INET6;
		return inet_pton(AF_INET6, host, addr) == 1 ? 0 : -EINVAL;
	}
	if (inet_pton(AF_INET, host, addr) == 1) {
		*ret_family = AF_INET;
		return 0;
	}
	for (i = 0; i < len; i++) {
		char c = host[i];

		if (c == '.' ? i == 0 || i == len - 1 || host[i - 1] == '.'
			     : !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
				 c == '_'))
			return -EINVAL;
	}
	*ret_family = AF_UNSPEC;
	return 0;
}

static int mint(struct sl_ca *ca, const char *host, size_t len, X509 **ret_cert,
		time_t *ret_not_after)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	_cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	unsigned char addr[16];
	GENERAL_NAME *gn = NULL;
	ASN1_STRING *s = NULL;
	time_t now = time(NULL), end = now + LEAF_DAYS * DAY;
	int family, i, r;

	r = parse_host(host, len, &family, addr);
	if (r < 0)
		return r;
	if (!x || !gens)
		return -ENOMEM;
	if (end > ca->not_after)
		end = ca->not_after;
	if (!X509_set_version(x, X509_VERSION_3) || set_serial(x) < 0 ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), now - BACKDATE) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), end) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
	    !X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, MBSTRING_UTF8,
					(const unsigned char *)host,
					len > CN_MAX ? CN_MAX : (int)len, -1, 0) ||
	    !X509_set_pubkey(x, ca->leaf_key))
		return -ENOMEM;
	for (i = 0; i < sk_X509_EXTENSION_num(ca->leaf_exts); i++)
		if (!X509_add_ext(x, sk_X509_EXTENSION_value(ca->leaf_exts, i), -1))
			return -ENOMEM;

	/* Built from parts, not from a "DNS:%s" string that a comma in host
	 * could extend with names of its own. gens owns gn, and gn owns s. */
	gn = GENERAL_NAME_new();
	if (!gn || !sk_GENERAL_NAME_push(gens, gn)) {
		GENERAL_NAME_free(gn);
		return -ENOMEM;
	}
	if (family == AF_UNSPEC) {
		s = ASN1_IA5STRING_new();
		if (s)
			GENERAL_NAME_set0_value(gn, GEN_DNS, s);
	} else {
		s = ASN1_OCTET_STRING_new();
		if (s)
			GENERAL_NAME_set0_value(gn, GEN_IPADD, s);
	}
	if (!s ||
	    !ASN1_STRING_set(s, family == AF_UNSPEC ? (const void *)host : addr,
			     family == AF_UNSPEC ? (int)len
			     : family == AF_INET ? 4
						 : 16) ||
	    !X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT))
		return -ENOMEM;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return -EIO;
	*ret_cert = TAKE_PTR(x);
	*ret_not_after = end;
	return 0;
}

static void lru_unlink(struct sl_ca *ca, struct leaf *l)
{
	*(l->prev ? &l->prev->next : &ca->head) = l->next;
	*(l->next ? &l->next->prev : &ca->tail) = l->prev;
	l->prev = l->next = NULL;
}

static void lru_push_front(struct sl_ca *ca, struct leaf *l)
{
	l->next = ca->head;
	*(ca->head ? &ca->head->prev : &ca->tail) = l;
	ca->head = l;
}

/*
 * The cache is searched linearly from the most recently used leaf: with
 * max_leaves in the hundreds a miss costs a few microseconds of strcmp,
 * small beside the handshake it serves, and a hot host is found at once.
 * A cache meant for many thousands of hosts would want a hash index.
 */
int sl_ca_use_leaf(struct sl_ca *ca, SSL *ssl, const char *host)
{
	size_t len = strnlen(host, HOST_MAX + 1);
	time_t not_after;
	struct leaf *l;
	X509 *x = NULL;
	int r;

	if (len == 0 || len > HOST_MAX)
		return -EINVAL;
	for (l = ca->head; l; l = l->next)
		if (strcmp(l->host, host) == 0)
			break;

	if (!l || l->not_after - time(NULL) < DAY) {
		r = mint(ca, host, len, &x, &not_after);
		if (r < 0) {
			ERR_clear_error();
			return r;
		}
		if (l)
			X509_free(l->cert);
		else if ((l = calloc(1, sizeof(*l) + len + 1))) {
			memcpy(l->host, host, len + 1);
			lru_push_front(ca, l);
			ca->nleaves++;
		} else {
			X509_free(x);
			return -ENOMEM;
		}
		l->cert = x;
		l->not_after = not_after;
		ca->mints++;
	}
	lru_unlink(ca, l);
	lru_push_front(ca, l);
	if (ca->nleaves > ca->max_leaves) {
		struct leaf *old = ca->tail;

		lru_unlink(ca, old);
		X509_free(old->cert);
		free(old);
		ca->nleaves--;
	}

	/* Both take a reference of their own; the cache keeps ours. */
	if (SSL_use_certificate(ssl, l->cert) != 1 || SSL_use_PrivateKey(ssl, ca->leaf_key) != 1) {
		ERR_clear_error();
		return -EIO;
	}
	return 0;
}

size_t sl_ca_leaf_count(const struct sl_ca *ca)
{
	return ca->nleaves;
}

unsigned long sl_ca_leaf_mints(const struct sl_ca *ca)
{
	return ca->mints;
}

void sl_ca_free(struct sl_ca *ca)
{
	struct leaf *l, *next;

	if (!ca)
		return;
	for (l = ca->head; l; l = next) {
		next = l->next;
		X509_free(l->cert);
		free(l);
	}
	sk_X509_EXTENSION_pop_free(ca->leaf_exts, X509_EXTENSION_free);
	EVP_PKEY_free(ca->leaf_key);
	EVP_PKEY_free(ca->key);
	X509_free(ca->cert);
	free(ca->cert_pem);
	free(ca);
}
