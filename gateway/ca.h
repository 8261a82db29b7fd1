/* SPDX-License-Identifier: MIT */
/*
 * A per-sandbox certificate authority for TLS inspection. The gateway
 * terminates TLS from the sandbox for hosts whose rules need to see inside
 * the connection; the sandbox trusts this CA (sl_ca_write_bundle), and the
 * gateway presents a leaf certificate for the host it was asked for,
 * minted on demand (sl_ca_use_leaf).
 *
 * The CA's key lives only in this process's memory unless the caller asks
 * for it to be kept in a directory (sl_ca_open_dir, `--ca-dir`). The design
 * and its reasons are in the comment at the top of ca.c.
 *
 * Single-threaded: one gateway loop uses a CA.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

struct sl_ca;

/*
 * A new CA held only in memory (never written to disk): ECDSA P-256 key,
 * subject "O=sluice, CN=sluice sandbox CA <name>" (name may be NULL, which
 * gives "CN=sluice CA"; a long name is truncated to fit the CN's 64 bytes),
 * random 128-bit positive serial, valid from 1 hour ago for 825 days,
 * basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
 * keyCertSign+cRLSign, subjectKeyIdentifier, self-signed ECDSA-SHA256.
 * max_leaves bounds the leaf cache (>= 1). Returns 0 and sets *ret, or a
 * negative errno with a message in err (errlen bytes, NUL-terminated; err
 * may be NULL).
 */
int sl_ca_new(const char *name, size_t max_leaves, struct sl_ca **ret, char *err, size_t errlen);

/*
 * A CA kept in directory dir across restarts (`sluice gateway --ca-dir DIR`):
 * dir/ca.key (PKCS#8 PEM, unencrypted, mode 0600) and dir/ca.crt (PEM, mode
 * 0644). If both exist they are loaded (name is then unused); if neither
 * exists a new CA is made as by sl_ca_new and written there. Refused, with a
 * negative errno and a message in err that names the file, says why and
 * how to fix it:
 *  - dir missing, not a directory, not owned by the effective uid or root,
 *    or writable by group or others;
 *  - only one of the two files exists;
 *  - ca.key a symlink, not a regular file, not owned by the effective uid or
 *    root, or with any permission bit for group or others;
 *  - a key that is not an unencrypted EC P-256 key; a cert that is not a CA
 *    certificate, has no subjectKeyIdentifier, has expired, or whose public
 *    key does not match the key.
 */
int sl_ca_open_dir(const char *dir, const char *name, size_t max_leaves, struct sl_ca **ret,
		   char *err, size_t errlen);

/* The CA certificate in PEM, NUL-terminated, valid for the CA's lifetime. */
const char *sl_ca_cert_pem(const struct sl_ca *ca);

/*
 * Write path (mode 0644, via a temp file in the same directory, fsync,
 * rename; the final file is never a symlink) holding the PEM text of
 * roots_file (the system's trust bundle, normally
 * /etc/ssl/certs/ca-certificates.crt; NULL or a missing file gives only the
 * CA) followed by a newline and the CA certificate. Programs in the sandbox
 * point SSL_CERT_FILE and its kin at it, so it must hold the system roots
 * too. Without `durable`, no fsync: for a bundle that lives only as long
 * as its sandbox (a crash ends both; the rename still makes it appear
 * whole), where the fsyncs were milliseconds of every start on a
 * disk-backed /run. Returns 0 or a negative errno with a message in err.
 */
int sl_ca_write_bundle(const struct sl_ca *ca, const char *roots_file, const char *path,
		       bool durable, char *err, size_t errlen);

/* The longest CA certificate PEM sl_ca_pem_is_one_cert() takes (a P-256 CA
 * of ours is about 700 bytes). */
#define SL_CA_PEM_MAX 2048

/*
 * Is pem (len bytes, no NUL needed) one PEM certificate and nothing else:
 * "-----BEGIN CERTIFICATE-----", lines of base64 of at most 64 characters
 * (padding only at the end), "-----END CERTIFICATE-----", each line ended
 * by a newline, at most SL_CA_PEM_MAX bytes? What the supervisor takes
 * from the gateway's process (which makes the sandbox's CA) before it
 * writes it into the sandbox's bundle: no second certificate, no key, no
 * text for a PEM reader to skip.
 */
bool sl_ca_pem_is_one_cert(const char *pem, size_t len);

/*
 * Fill fd, a bundle file opened for writing, from its start (what it held
 * is truncated): roots_file's bytes (NULL or a missing file: none; at most
 * 16 MiB of a regular file), a newline, cert_pem, then extra (NULL: none).
 * In place, not by a rename, so that a bind mount of the file made before
 * (the sandbox's view of it) shows the new text. 0, or a negative errno
 * with a message in err.
 */
int sl_ca_bundle_fill(int fd, const char *roots_file, const char *cert_pem, const char *extra,
		      char *err, size_t errlen);

/* All of len bytes to fd (EINTR retried): 0, or a negative errno. */
int sl_ca_write_all(int fd, const void *p, size_t len);

/*
 * Make ssl (a server-side SSL, before its handshake) present a leaf
 * certificate for host, which is in normal form: a lower-case DNS name (no
 * trailing dot), a dotted-quad IPv4 address, or an IPv6 address without
 * brackets. Leaves are minted on first use and cached by host in an LRU of
 * at most max_leaves entries; a cached leaf that expires within a day is
 * minted again. Leaf: random 128-bit positive serial, valid from 1 hour ago
 * for 30 days but never past the CA, subject CN=host (truncated to 64
 * bytes), subjectAltName dNSName or iPAddress host, basicConstraints
 * CA:FALSE, keyUsage critical digitalSignature, extendedKeyUsage
 * serverAuth, subject and authority key identifiers, ECDSA-SHA256. Every
 * leaf of one CA shares one P-256 key. Only the leaf is set on ssl
 * (SSL_use_certificate + SSL_use_PrivateKey): clients trust the CA directly.
 *
 * Returns 0; -EINVAL for a host that is empty, longer than 253 bytes, or
 * not in normal form (upper case, a character other than letters, digits,
 * '-', '_' and '.', an empty label); -ENOMEM or -EIO. On failure the
 * OpenSSL error queue is cleared.
 */
int sl_ca_use_leaf(struct sl_ca *ca, SSL *ssl, const char *host);

/* For tests: leaves in the cache now; leaves minted since the CA was made. */
size_t sl_ca_leaf_count(const struct sl_ca *ca);
unsigned long sl_ca_leaf_mints(const struct sl_ca *ca);

/* Free everything (the keys are freed with EVP_PKEY_free, which clears
 * them). Accepts NULL. */
void sl_ca_free(struct sl_ca *ca);
