/* SPDX-License-Identifier: MIT */
/* The inspection CA: its leaves verify as a TLS client would verify them,
 * the leaf cache is a bounded LRU, a CA kept on disk is held to a secret's
 * rules, and the bundle the sandbox trusts holds the roots and the CA. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ca.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

static char dir[64];
static SSL_CTX *server_ctx;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-ca-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	server_ctx = SSL_CTX_new(TLS_server_method());
	return server_ctx ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	SSL_CTX_free(server_ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct sl_ca *new_ca(size_t max_leaves)
{
	struct sl_ca *ca = NULL;
	char err[256];
	int r = sl_ca_new("test", max_leaves, &ca, err, sizeof(err));

	if (r < 0)
		fail_msg("sl_ca_new: %d: %s", r, err);
	return ca;
}

/* The leaf sl_ca_use_leaf makes a server present for host, with a
 * reference of the caller's. */
static X509 *leaf_for(struct sl_ca *ca, const char *host)
{
	SSL *ssl = SSL_new(server_ctx);
	X509 *x;

	assert_non_null(ssl);
	assert_int_equal(sl_ca_use_leaf(ca, ssl, host), 0);
	x = SSL_get_certificate(ssl);
	assert_non_null(x);
	assert_int_equal(X509_up_ref(x), 1);
	SSL_free(ssl);
	return x;
}

static X509 *cert_from_pem(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x;

	assert_non_null(bio);
	x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	assert_non_null(x);
	return x;
}

/* X509_verify_cert against a store holding only the CA whose PEM is given,
 * as strictly as OpenSSL knows how, for a TLS server. */
static int verify(const char *ca_pem, X509 *leaf)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509 *root = cert_from_pem(ca_pem);
	int ok, why;

	assert_non_null(store);
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(store, root), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_X509_STRICT);
	assert_int_equal(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
	ok = X509_verify_cert(ctx);
	why = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(root);
	ERR_clear_error();
	return ok == 1 ? X509_V_OK : (why == X509_V_OK ? -1 : why);
}

static void expect_verifies(const char *ca_pem, X509 *leaf)
{
	int why = verify(ca_pem, leaf);

	if (why != X509_V_OK)
		fail_msg("leaf does not verify: %s", X509_verify_cert_error_string(why));
}

static void test_leaf_dns(void **state)
{
	struct sl_ca *ca = new_ca(8);
	X509 *leaf, *root;
	char cn[128];
	int days, secs;

	(void)state;
	leaf = leaf_for(ca, "api.example.com");
	expect_verifies(sl_ca_cert_pem(ca), leaf);
	assert_int_equal(X509_check_host(leaf, "api.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "other.example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_host(leaf, "x.api.example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, "api.example.com");
	/* From an hour ago for thirty days, give or take the test's run. */
	assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(leaf)), 1);
	assert_in_range(days * 86400 + secs, 30 * 86400 - 60, 30 * 86400);
	assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(leaf), NULL), 1);
	assert_in_range(days * 86400 + secs, 3600, 3600 + 60);
	/* The CA as its subject and constraints say. */
	root = cert_from_pem(sl_ca_cert_pem(ca));
	assert_int_equal(X509_check_ca(root), 1);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(root), NID_commonName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, "sluice sandbox CA test");
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(root)), 0);
	X509_free(root);
	X509_free(leaf);
	sl_ca_free(ca);
}

static void test_leaf_ip(void **state)
{
	struct sl_ca *ca = new_ca(8);
	X509 *v4, *v6;

	(void)state;
	v4 = leaf_for(ca, "203.0.113.7");
	v6 = leaf_for(ca, "2001:db8::1");
	expect_verifies(sl_ca_cert_pem(ca), v4);
	expect_verifies(sl_ca_cert_pem(ca), v6);
	assert_int_equal(X509_check_ip_asc(v4, "203.0.113.7", 0), 1);
	assert_int_equal(X509_check_ip_asc(v4, "203.0.113.8", 0), 0);
	assert_int_equal(X509_check_ip_asc(v6, "2001:db8::1", 0), 1);
	assert_int_equal(X509_check_ip_asc(v6, "2001:0db8:0:0:0:0:0:1", 0), 1);
	assert_int_equal(X509_check_ip_asc(v6, "2001:db8::2", 0), 0);
	/* The address is an iPAddress name, not a dNSName. */
	assert_int_equal(
	    X509_check_host(v4, "203.0.113.7", 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL), 0);
	X509_free(v4);
	X509_free(v6);
	sl_ca_free(ca);
}

static void test_other_ca_rejects(void **state)
{
	struct sl_ca *ca = new_ca(8), *other = new_ca(8);
	X509 *leaf;

	(void)state;
	leaf = leaf_for(ca, "api.example.com");
	/* Same subject name ("test"), different key: must not verify. */
	assert_int_not_equal(verify(sl_ca_cert_pem(other), leaf), X509_V_OK);
	expect_verifies(sl_ca_cert_pem(ca), leaf);
	X509_free(leaf);
	sl_ca_free(other);
	sl_ca_free(ca);
}

/* A TLS handshake over a BIO pair between a server presenting ca's leaf for
 * "api.example.com" and a client that trusts only the CA trusted_pem and
 * wants want_host. Returns the client's verify result, or -1 if the
 * handshake failed for another reason. */
static long handshake(struct sl_ca *ca, const char *trusted_pem, const char *want_host)
{
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	X509 *root = cert_from_pem(trusted_pem);
	SSL *client, *server;
	BIO *cb, *sb;
	int i, rc = 0, rs = 0;
	long result;

	assert_non_null(cctx);
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), root), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	client = SSL_new(cctx);
	server = SSL_new(server_ctx);
	assert_non_null(client);
	assert_non_null(server);
	assert_int_equal(SSL_set1_host(client, want_host), 1);
	assert_int_equal(SSL_set_tlsext_host_name(client, "api.example.com"), 1);
	assert_int_equal(sl_ca_use_leaf(ca, server, "api.example.com"), 0);
	assert_int_equal(BIO_new_bio_pair(&cb, 0, &sb, 0), 1);
	SSL_set_bio(client, cb, cb);
	SSL_set_bio(server, sb, sb);
	SSL_set_connect_state(client);
	SSL_set_accept_state(server);

	for (i = 0; i < 20 && (rc != 1 || rs != 1); i++) {
		if (rc != 1)
			rc = SSL_do_handshake(client);
		if (rs != 1)
			rs = SSL_do_handshake(server);
		if ((rc <= 0 && SSL_get_error(client, rc) != SSL_ERROR_WANT_READ) ||
		    (rs <= 0 && SSL_get_error(server, rs) != SSL_ERROR_WANT_READ))
			break;
	}
	result = SSL_get_verify_result(client);
	if (rc != 1 && result == X509_V_OK)
		result = -1;
	SSL_free(client);
	SSL_free(server);
	SSL_CTX_free(cctx);
	X509_free(root);
	ERR_clear_error();
	return result;
}

static void test_handshake(void **state)
{
	struct sl_ca *ca = new_ca(8), *other = new_ca(8);
	const char *pem = sl_ca_cert_pem(ca);
	long r;

	(void)state;
	assert_int_equal(handshake(ca, pem, "api.example.com"), X509_V_OK);
	assert_int_equal(handshake(ca, pem, "other.example.com"), X509_V_ERR_HOSTNAME_MISMATCH);
	/* The second handshake reused the cached leaf. */
	assert_int_equal(sl_ca_leaf_mints(ca), 1);
	/* A client that trusts another CA refuses the leaf. */
	r = handshake(ca, sl_ca_cert_pem(other), "api.example.com");
	assert_true(r != X509_V_OK && r != -1);
	sl_ca_free(other);
	sl_ca_free(ca);
}

static void test_cache(void **state)
{
	struct sl_ca *ca = new_ca(3);
	const char *hosts[] = {"h1.example", "h2.example", "h3.example", "h4.example",
			       "h5.example"};
	X509 *a, *b;
	size_t i;

	(void)state;
	a = leaf_for(ca, "api.example.com");
	b = leaf_for(ca, "api.example.com");
	assert_int_equal(sl_ca_leaf_mints(ca), 1);
	assert_ptr_equal(a, b);
	X509_free(a);
	X509_free(b);
	sl_ca_free(ca);

	ca = new_ca(3);
	for (i = 0; i < ELEMENTS(hosts); i++)
		X509_free(leaf_for(ca, hosts[i]));
	assert_int_equal(sl_ca_leaf_count(ca), 3);
	assert_int_equal(sl_ca_leaf_mints(ca), 5);
	X509_free(leaf_for(ca, "h5.example")); /* the most recent: cached */
	assert_int_equal(sl_ca_leaf_mints(ca), 5);
	X509_free(leaf_for(ca, "h1.example")); /* evicted: minted again */
	assert_int_equal(sl_ca_leaf_mints(ca), 6);
	assert_int_equal(sl_ca_leaf_count(ca), 3);
	sl_ca_free(ca);

	/* Use, not insertion, decides: touching the oldest saves it. */
	ca = new_ca(3);
	X509_free(leaf_for(ca, "h1.example"));
	X509_free(leaf_for(ca, "h2.example"));
	X509_free(leaf_for(ca, "h3.example"));
	X509_free(leaf_for(ca, "h1.example"));
	X509_free(leaf_for(ca, "h4.example")); /* evicts h2 */
	assert_int_equal(sl_ca_leaf_mints(ca), 4);
	X509_free(leaf_for(ca, "h1.example"));
	X509_free(leaf_for(ca, "h3.example"));
	assert_int_equal(sl_ca_leaf_mints(ca), 4);
	X509_free(leaf_for(ca, "h2.example"));
	assert_int_equal(sl_ca_leaf_mints(ca), 5);
	sl_ca_free(ca);
}

static void test_bad_host(void **state)
{
	struct sl_ca *ca = new_ca(8), *none = NULL;
	SSL *ssl = SSL_new(server_ctx);
	char host[320], label[64], err[256];
	X509 *leaf;
	const char *bad[] = {"",
			     "API.example.com",
			     "example.com.",
			     ".example.com",
			     "a..example.com",
			     "*.example.com",
			     "[2001:db8::1]",
			     "2001:db8::1%eth0",
			     "a b.example",
			     "a,DNS:evil.example"};
	size_t i;

	(void)state;
	assert_non_null(ssl);
	memset(host, 'a', 300);
	host[300] = '\0';
	assert_int_equal(sl_ca_use_leaf(ca, ssl, host), -EINVAL);
	for (i = 0; i < ELEMENTS(bad); i++)
		if (sl_ca_use_leaf(ca, ssl, bad[i]) != -EINVAL)
			fail_msg("\"%s\" was accepted", bad[i]);
	assert_int_equal(sl_ca_leaf_mints(ca), 0);
	assert_int_equal(sl_ca_leaf_count(ca), 0);

	/* 253 bytes is the longest name; its CN is cut to 64, its SAN not. */
	memset(label, 'b', 63);
	label[63] = '\0';
	snprintf(host, sizeof(host), "%s.%s.%s.%.61s", label, label, label, label);
	assert_int_equal(strlen(host), 253);
	leaf = leaf_for(ca, host);
	expect_verifies(sl_ca_cert_pem(ca), leaf);
	assert_int_equal(X509_check_host(leaf, host, 0, 0, NULL), 1);
	assert_int_equal(
	    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, NULL, 0), 64);
	X509_free(leaf);
	strcat(host, "c");
	assert_int_equal(sl_ca_use_leaf(ca, ssl, host), -EINVAL);

	assert_int_equal(sl_ca_new("x", 0, &none, err, sizeof(err)), -EINVAL);
	assert_null(none);
	SSL_free(ssl);
	sl_ca_free(ca);
	sl_ca_free(NULL);
}

/* The CA's name: none, and one too long for the CN whose cut falls inside
 * a UTF-8 character (the CN must still be valid UTF-8, so it is shorter). */
static void test_ca_name(void **state)
{
	char name[128] = "x", cn[128], err[256];
	struct sl_ca *ca = NULL;
	X509 *root;
	size_t i;

	(void)state;
	if (sl_ca_new(NULL, 1, &ca, err, sizeof(err)) < 0)
		fail_msg("no name: %s", err);
	root = cert_from_pem(sl_ca_cert_pem(ca));
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(root), NID_commonName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, "sluice CA");
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(root), NID_organizationName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, "sluice");
	X509_free(root);
	sl_ca_free(ca);

	for (i = 0; i < 30; i++)
		strcat(name, "\xc3\xa9"); /* e-acute */
	/* "sluice sandbox CA x" is 19 bytes; 22 e-acutes fit, the 23rd is split. */
	if (sl_ca_new(name, 1, &ca, err, sizeof(err)) < 0)
		fail_msg("long UTF-8 name: %s", err);
	root = cert_from_pem(sl_ca_cert_pem(ca));
	assert_int_equal(
	    X509_NAME_get_text_by_NID(X509_get_subject_name(root), NID_commonName, cn, sizeof(cn)),
	    19 + 44);
	assert_memory_equal(cn, "sluice sandbox CA x\xc3\xa9", 21);
	X509_free(root);
	sl_ca_free(ca);
}

/* The directory's files, by name. */
static const char *in_dir(const char *d, const char *name)
{
	static char path[2][160];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", d, name);
	return path[k];
}

static const char *new_dir(const char *name)
{
	static char d[128];

	snprintf(d, sizeof(d), "%s/%s", dir, name);
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(chmod(d, 0700), 0);
	return d;
}

static int open_dir(const char *d, struct sl_ca **ca, char *err, size_t errlen)
{
	*ca = NULL;
	return sl_ca_open_dir(d, "dir", 4, ca, err, errlen);
}

static void expect_open_refused(const char *d, const char *want_in_msg)
{
	struct sl_ca *ca;
	char err[512];
	int r = open_dir(d, &ca, err, sizeof(err));

	if (r >= 0)
		fail_msg("%s: opened, wanted a refusal naming \"%s\"", d, want_in_msg);
	assert_null(ca);
	if (!strstr(err, want_in_msg))
		fail_msg("message lacks \"%s\": %s", want_in_msg, err);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char *text = slurp(from);
	FILE *f;

	unlink(to);
	f = fopen(to, "we");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
	assert_int_equal(chmod(to, mode), 0);
	free(text);
}

static void test_dir_create_reload(void **state)
{
	const char *d = new_dir("keep");
	struct sl_ca *ca, *again;
	char err[512], *key;
	struct stat st;
	X509 *leaf;
	mode_t old = umask(0);

	(void)state;
	if (open_dir(d, &ca, err, sizeof(err)) < 0)
		fail_msg("create: %s", err);
	umask(old);
	assert_int_equal(lstat(in_dir(d, "ca.key"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	key = slurp(in_dir(d, "ca.key"));
	assert_non_null(strstr(key, "-----BEGIN PRIVATE KEY-----"));
	free(key);
	assert_int_equal(lstat(in_dir(d, "ca.crt"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);

	if (open_dir(d, &again, err, sizeof(err)) < 0)
		fail_msg("reopen: %s", err);
	assert_string_equal(sl_ca_cert_pem(again), sl_ca_cert_pem(ca));
	/* The same key too: a leaf of the reloaded CA verifies against the
	 * certificate the sandbox was given first. */
	leaf = leaf_for(again, "api.example.com");
	expect_verifies(sl_ca_cert_pem(ca), leaf);
	X509_free(leaf);
	sl_ca_free(again);
	sl_ca_free(ca);
}

static void test_dir_refusals(void **state)
{
	const char *d = new_dir("refuse");
	char aside[160], key[160], crt[160], err[256], file[160];
	struct sl_ca *ca;

	(void)state;
	if (open_dir(d, &ca, err, sizeof(err)) < 0)
		fail_msg("create: %s", err);
	sl_ca_free(ca);
	snprintf(key, sizeof(key), "%s", in_dir(d, "ca.key"));
	snprintf(crt, sizeof(crt), "%s", in_dir(d, "ca.crt"));

	assert_int_equal(chmod(key, 0640), 0);
	expect_open_refused(d, "ca.key: readable by group or others (mode 0640); chmod 600");
	assert_int_equal(chmod(key, 0644), 0);
	expect_open_refused(d, "ca.key: readable by group or others (mode 0644)");
	assert_int_equal(chmod(key, 0602), 0);
	expect_open_refused(d, "ca.key");
	assert_int_equal(chmod(key, 0600), 0);

	/* A symlink in place of the key, even to a good key. */
	snprintf(aside, sizeof(aside), "%s/key-aside", dir);
	assert_int_equal(rename(key, aside), 0);
	assert_int_equal(symlink(aside, key), 0);
	expect_open_refused(d, "ca.key: a symbolic link");
	assert_int_equal(unlink(key), 0);

	/* Only one of the two: neither is made anew over the other. */
	expect_open_refused(d, "ca.key: missing, but");
	assert_int_equal(rename(aside, key), 0);
	assert_int_equal(rename(crt, aside), 0);
	expect_open_refused(d, "ca.crt: missing, but");
	assert_int_equal(rename(aside, crt), 0);
	if (open_dir(d, &ca, err, sizeof(err)) < 0)
		fail_msg("restored: %s", err);
	sl_ca_free(ca);

	/* The directory itself. */
	assert_int_equal(chmod(d, 0777), 0);
	expect_open_refused(d, "writable by group or others");
	assert_int_equal(chmod(d, 0770), 0);
	expect_open_refused(d, "writable by group or others");
	assert_int_equal(chmod(d, 0700), 0);
	snprintf(file, sizeof(file), "%s/missing", dir);
	expect_open_refused(file, "no such directory");
	expect_open_refused(crt, "not a directory");
}

/* Files that are there, safe, and wrong. */
static void test_dir_bad_content(void **state)
{
	const char *a = new_dir("bad-a");
	char da[128], db[128], err[256];
	struct sl_ca *ca;
	EVP_PKEY *p384;
	FILE *f;
	X509 *leaf;

	(void)state;
	snprintf(da, sizeof(da), "%s", a);
	snprintf(db, sizeof(db), "%s", new_dir("bad-b"));
	if (open_dir(da, &ca, err, sizeof(err)) < 0)
		fail_msg("create a: %s", err);
	leaf = leaf_for(ca, "api.example.com");
	sl_ca_free(ca);
	if (open_dir(db, &ca, err, sizeof(err)) < 0)
		fail_msg("create b: %s", err);
	sl_ca_free(ca);

	/* b's key with a's certificate. */
	copy_file(in_dir(da, "ca.crt"), in_dir(db, "ca.crt"), 0644);
	expect_open_refused(db, "ca.crt: does not match ca.key");

	/* A leaf is no CA. */
	f = fopen(in_dir(db, "ca.crt"), "we");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, leaf), 1);
	fclose(f);
	expect_open_refused(db, "ca.crt: not a CA certificate");
	X509_free(leaf);

	/* Not PEM at all. */
	copy_file(in_dir(da, "ca.crt"), in_dir(db, "ca.crt"), 0644);
	f = fopen(in_dir(db, "ca.key"), "we");
	assert_non_null(f);
	fputs("not a key\n", f);
	fclose(f);
	assert_int_equal(chmod(in_dir(db, "ca.key"), 0600), 0);
	expect_open_refused(db, "ca.key: not an unencrypted PEM private key");

	/* A P-384 key. */
	p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	assert_non_null(p384);
	f = fopen(in_dir(db, "ca.key"), "we");
	assert_non_null(f);
	assert_int_equal(PEM_write_PrivateKey(f, p384, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	assert_int_equal(chmod(in_dir(db, "ca.key"), 0600), 0);
	expect_open_refused(db, "ca.key: not an EC P-256 key");
	EVP_PKEY_free(p384);
}

/* Re-sign dir's CA certificate to expire at not_after. */
static void resign_ca(const char *d, time_t not_after)
{
	FILE *f = fopen(in_dir(d, "ca.key"), "re");
	EVP_PKEY *key;
	X509 *x;

	assert_non_null(f);
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(key);
	f = fopen(in_dir(d, "ca.crt"), "re");
	assert_non_null(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(x);
	assert_non_null(ASN1_TIME_set(X509_getm_notAfter(x), not_after));
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	f = fopen(in_dir(d, "ca.crt"), "we");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* A leaf never outlives its CA, and one that expires within a day is
 * minted again rather than served from the cache. */
static void test_short_lived_ca(void **state)
{
	const char *d = new_dir("short");
	time_t end = time(NULL) + 12 * 3600;
	struct sl_ca *ca;
	char err[256];
	X509 *leaf;

	(void)state;
	if (open_dir(d, &ca, err, sizeof(err)) < 0)
		fail_msg("create: %s", err);
	sl_ca_free(ca);
	resign_ca(d, end);
	if (open_dir(d, &ca, err, sizeof(err)) < 0)
		fail_msg("reopen: %s", err);
	leaf = leaf_for(ca, "api.example.com");
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(leaf), end), 0);
	expect_verifies(sl_ca_cert_pem(ca), leaf);
	X509_free(leaf);
	X509_free(leaf_for(ca, "api.example.com"));
	assert_int_equal(sl_ca_leaf_mints(ca), 2);
	assert_int_equal(sl_ca_leaf_count(ca), 1);
	sl_ca_free(ca);

	resign_ca(d, time(NULL) - 60);
	expect_open_refused(d, "ca.crt: expired");
}

static void test_bundle(void **state)
{
	const char *roots_text = "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----";
	struct sl_ca *ca = new_ca(4);
	char roots[160], bundle[160], target[160], err[256], *text;
	struct stat st;
	mode_t old;
	FILE *f;

	(void)state;
	snprintf(roots, sizeof(roots), "%s/roots.crt", dir);
	snprintf(bundle, sizeof(bundle), "%s/bundle.crt", dir);
	snprintf(target, sizeof(target), "%s/bundle-target", dir);
	f = fopen(roots, "we");
	assert_non_null(f);
	fputs(roots_text, f); /* no final newline: the CA must still start a line */
	fclose(f);
	/* A symlink where the bundle goes is replaced, not written through. */
	f = fopen(target, "we");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symlink(target, bundle), 0);

	old = umask(077);
	if (sl_ca_write_bundle(ca, roots, bundle, true, err, sizeof(err)) < 0)
		fail_msg("bundle: %s", err);
	umask(old);
	assert_int_equal(lstat(bundle, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	text = slurp(bundle);
	assert_memory_equal(text, roots_text, strlen(roots_text));
	assert_int_equal(text[strlen(roots_text)], '\n');
	assert_string_equal(text + strlen(roots_text) + 1, sl_ca_cert_pem(ca));
	free(text);

	assert_int_equal(sl_ca_write_bundle(ca, NULL, bundle, true, err, sizeof(err)), 0);
	text = slurp(bundle);
	assert_string_equal(text, sl_ca_cert_pem(ca));
	free(text);
	snprintf(roots, sizeof(roots), "%s/no-such-roots.crt", dir);
	assert_int_equal(sl_ca_write_bundle(ca, roots, bundle, true, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	text = slurp(bundle);
	assert_string_equal(text, sl_ca_cert_pem(ca));
	free(text);
	/* A directory that is not there is an error that names the file. */
	snprintf(bundle, sizeof(bundle), "%s/nowhere/bundle.crt", dir);
	assert_true(sl_ca_write_bundle(ca, NULL, bundle, true, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, bundle));
	sl_ca_free(ca);
}

/* What the supervisor takes from the gateway's process for the bundle: one
 * PEM certificate, nothing before, after or inside it. */
static void test_pem_shape(void **state)
{
	struct sl_ca *ca = new_ca(4);
	const char *pem = sl_ca_cert_pem(ca);
	size_t len = strlen(pem);
	char buf[2 * SL_CA_PEM_MAX + 64], *p;
	static const char *const bad[] = {
	    "",
	    "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9PVFM\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9P\n\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9=VFM=\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9PV===\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9P VFM=\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----",
	    "-----BEGIN PRIVATE KEY-----\nUk9PVFM=\n-----END PRIVATE KEY-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----\n"
	    "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----\n"
	    "-----BEGIN PRIVATE KEY-----\nUk9PVFM=\n-----END PRIVATE KEY-----\n",
	    "text\n-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----\n",
	    "-----BEGIN CERTIFICATE-----\r\nUk9PVFM=\r\n-----END CERTIFICATE-----\r\n",
	};

	(void)state;
	assert_true(sl_ca_pem_is_one_cert(pem, len));
	p = "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----\n";
	assert_true(sl_ca_pem_is_one_cert(p, strlen(p)));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (sl_ca_pem_is_one_cert(bad[i], strlen(bad[i])))
			fail_msg("taken: %s", bad[i]);
	assert_false(sl_ca_pem_is_one_cert(NULL, 0));
	/* Cut anywhere, it is not one. */
	for (size_t n = 0; n < len; n++)
		if (sl_ca_pem_is_one_cert(pem, n))
			fail_msg("taken when cut to %zu bytes", n);
	/* A NUL inside, and a line longer than 64 characters. */
	memcpy(buf, pem, len);
	buf[40] = '\0';
	assert_false(sl_ca_pem_is_one_cert(buf, len));
	memcpy(buf, pem, len);
	p = strchr(buf + 28, '\n'); /* two lines of base64 made one */
	assert_non_null(p);
	memmove(p, p + 1, len - (size_t)(p + 1 - buf));
	assert_false(sl_ca_pem_is_one_cert(buf, len - 1));
	/* Longer than SL_CA_PEM_MAX, however well formed. */
	p = buf + snprintf(buf, sizeof(buf), "-----BEGIN CERTIFICATE-----\n");
	while ((size_t)(p - buf) < SL_CA_PEM_MAX)
		p += snprintf(p, 66, "%s\n",
			      "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB");
	p += snprintf(p, 32, "-----END CERTIFICATE-----\n");
	assert_false(sl_ca_pem_is_one_cert(buf, (size_t)(p - buf)));
	sl_ca_free(ca);
}

/* The bundle filled in place: an fd opened on it before (as the sandbox's
 * bind mount of it is made before the CA exists) reads the new text. */
static void test_bundle_fill(void **state)
{
	const char *roots_text = "-----BEGIN CERTIFICATE-----\nUk9PVFM=\n-----END CERTIFICATE-----";
	struct sl_ca *ca = new_ca(4);
	char roots[160], bundle[160], err[256], got[8192];
	int fd, before;
	ssize_t n;
	FILE *f;

	(void)state;
	snprintf(roots, sizeof(roots), "%s/fill-roots.crt", dir);
	snprintf(bundle, sizeof(bundle), "%s/fill-bundle.crt", dir);
	f = fopen(roots, "we");
	assert_non_null(f);
	fputs(roots_text, f);
	fclose(f);
	fd = open(bundle, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "stale text, longer than nothing\n", 32), 32);
	before = open(bundle, O_RDONLY | O_CLOEXEC);
	assert_true(before >= 0);
	if (sl_ca_bundle_fill(fd, roots, sl_ca_cert_pem(ca), "\nEXTRA\n", err, sizeof(err)) < 0)
		fail_msg("fill: %s", err);
	n = pread(before, got, sizeof(got) - 1, 0);
	assert_true(n > 0);
	got[n] = '\0';
	assert_memory_equal(got, roots_text, strlen(roots_text));
	assert_int_equal(got[strlen(roots_text)], '\n');
	assert_memory_equal(got + strlen(roots_text) + 1, sl_ca_cert_pem(ca),
			    strlen(sl_ca_cert_pem(ca)));
	assert_string_equal(got + strlen(roots_text) + 1 + strlen(sl_ca_cert_pem(ca)), "\nEXTRA\n");
	/* Again, without roots (a missing file is none) and no extra: what
	 * was there is gone, not left behind the shorter text. */
	snprintf(roots, sizeof(roots), "%s/no-such-roots.crt", dir);
	assert_int_equal(sl_ca_bundle_fill(fd, roots, sl_ca_cert_pem(ca), NULL, err, sizeof(err)),
			 0);
	n = pread(before, got, sizeof(got) - 1, 0);
	assert_true(n > 0);
	got[n] = '\0';
	assert_int_equal(got[0], '\n');
	assert_string_equal(got + 1, sl_ca_cert_pem(ca));
	/* Roots that are not a regular file are an error naming them. */
	assert_true(sl_ca_bundle_fill(fd, dir, sl_ca_cert_pem(ca), NULL, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, dir));
	close(before);
	close(fd);
	sl_ca_free(ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_leaf_dns),
	    cmocka_unit_test(test_leaf_ip),
	    cmocka_unit_test(test_other_ca_rejects),
	    cmocka_unit_test(test_handshake),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_ca_name),
	    cmocka_unit_test(test_bad_host),
	    cmocka_unit_test(test_dir_create_reload),
	    cmocka_unit_test(test_dir_refusals),
	    cmocka_unit_test(test_dir_bad_content),
	    cmocka_unit_test(test_short_lived_ca),
	    cmocka_unit_test(test_bundle),
	    cmocka_unit_test(test_pem_shape),
	    cmocka_unit_test(test_bundle_fill),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
