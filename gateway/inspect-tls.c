/* SPDX-License-Identifier: MIT */
/*
 * TLS inspection: the gateway's part, set up once. The SSL_CTX that faces
 * the sandbox (HTTP/1.1 only by ALPN; the leaf is set per connection from
 * ca.c) and the one that faces origins (verified against --upstream-ca or
 * the system's store), the cache of sessions to resume, and the secrets
 * the rules inject. A file because it is configuration, not a connection:
 * the bottom of inspection's layers, calling none of the others.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect-internal.h"

const char *insp_tls_error(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *s = e ? ERR_reason_error_string(e) : NULL;

	return s ? s : "TLS failed";
}

/* The client SSL_CTX's new-session callback: the cache of sessions to
 * resume, one per origin (host and port), the oldest replaced. */
int insp_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct up *up = SSL_get_app_data(ssl);
	struct sl_gw_tls *t;
	unsigned i, slot;

	if (!up)
		return 0;
	t = up->t;
	slot = t->sess_next;
	for (i = 0; i < SESS_CACHE; i++)
		if (t->sess[i].s && t->sess[i].port == up->port &&
		    strcmp(t->sess[i].host, up->host) == 0) {
			slot = i;
			break;
		}
	if (i == SESS_CACHE)
		t->sess_next = (t->sess_next + 1) % SESS_CACHE;
	if (t->sess[slot].s)
		SSL_SESSION_free(t->sess[slot].s);
	snprintf(t->sess[slot].host, sizeof(t->sess[slot].host), "%s", up->host);
	t->sess[slot].port = up->port;
	t->sess[slot].s = sess;
	return 1; /* we keep the reference */
}

/* ---- the gateway's part ---- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";
	unsigned i;

	(void)ssl;
	(void)arg;
	/* Only HTTP/1.1 is inspected; a client that offers nothing else
	 * must not get a protocol it would then speak past us. */
	for (i = 0; i < inlen; i += 1u + in[i]) {
		if (in[i] == 8 && i + 9 <= inlen && memcmp(in + i, h11, 9) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	}
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* The sandbox's leg is a veth inside this host: its cipher protects the
 * bytes from nobody the gateway's own memory does not already lie open to
 * (the client holds the keys; only root sees the link). There the fastest
 * suite wins, by our preference, not the client's: AES-128-GCM costs the
 * gateway and the client about 40 % less than AES-256-GCM (which OpenSSL's
 * clients put first) per byte re-encrypted. The set of TLS 1.3 suites is
 * still the one the system's OpenSSL configuration allows, only reordered;
 * ChaCha20 is kept first for a client that asks for it first (one without
 * AES instructions). The origin's leg leaves the host: its offer is the
 * system's, untouched. */
static int prefer_fast_suite(SSL_CTX *ctx)
{
	static const char fast[] = "TLS_AES_128_GCM_SHA256";
	STACK_OF(SSL_CIPHER) *sk = SSL_CTX_get_ciphers(ctx);
	char list[512];
	size_t len = sizeof(fast) - 1;
	bool has_fast = false;
	int i;

	memcpy(list, fast, len + 1);
	for (i = 0; sk && i < sk_SSL_CIPHER_num(sk); i++) {
		const SSL_CIPHER *c = sk_SSL_CIPHER_value(sk, i);
		const char *name = SSL_CIPHER_get_name(c);
		int n;

		if (!name || strcmp(SSL_CIPHER_get_version(c), "TLSv1.3") != 0)
			continue;
		if (!strcmp(name, fast)) {
			has_fast = true;
			continue;
		}
		n = snprintf(list + len, sizeof(list) - len, ":%s", name);
		if (n < 0 || (size_t)n >= sizeof(list) - len)
			return 0; /* more suites than we know: the order stays */
		len += (size_t)n;
	}
	if (!has_fast)
		return 0; /* not allowed here: nothing to prefer */
	if (SSL_CTX_set_ciphersuites(ctx, list) != 1)
		return -1;
	SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA);
	return 0;
}

/* The system's store as OpenSSL finds it (SSL_CERT_FILE, else its default
 * bundle file; the hashed directory is not read: on Debian the bundle holds
 * every certificate it does), read whole now: parsing waits. */
static void read_bundle(struct sl_gw_tls *t)
{
	const char *env = getenv(X509_get_default_cert_file_env());
	size_t cap = 0;
	FILE *f;

	snprintf(t->bundle_path, sizeof(t->bundle_path), "%s",
		 env && *env ? env : X509_get_default_cert_file());
	f = fopen(t->bundle_path, "re");
	if (!f) {
		t->bundle_err = errno;
		return;
	}
	for (;;) {
		size_t n;

		if (t->bundle_len == cap) {
			char *b = realloc(t->bundle, cap ? cap * 2 : 256 * 1024);

			if (!b) {
				t->bundle_err = ENOMEM;
				break;
			}
			t->bundle = b;
			cap = cap ? cap * 2 : 256 * 1024;
		}
		n = fread(t->bundle + t->bundle_len, 1, cap - t->bundle_len, f);
		t->bundle_len += n;
		if (n == 0) {
			if (ferror(f))
				t->bundle_err = EIO;
			break;
		}
	}
	fclose(f);
}

int insp_trust_pending_load(struct sl_gw_tls *t, char *why, size_t len)
{
	STACK_OF(X509_INFO) *infos = NULL;
	X509_STORE *store = SSL_CTX_get_cert_store(t->client);
	BIO *b = NULL;
	int n = 0;

	if (!t->default_paths_pending)
		return 0;
	if (t->bundle_err) {
		snprintf(why, len, "cannot read the system's trust store %s: %s", t->bundle_path,
			 strerror(t->bundle_err));
		return -1;
	}
	b = BIO_new_mem_buf(t->bundle, (int)t->bundle_len);
	if (b)
		infos = PEM_X509_INFO_read_bio(b, NULL, NULL, NULL);
	for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *xi = sk_X509_INFO_value(infos, i);

		if (xi->x509 && X509_STORE_add_cert(store, xi->x509) == 1)
			n++;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(b);
	if (n == 0) {
		snprintf(why, len, "the system's trust store %s holds no certificate: %s",
			 t->bundle_path, insp_tls_error());
		ERR_clear_error();
		return -1;
	}
	ERR_clear_error(); /* a trailing non-certificate block */
	free(t->bundle);
	t->bundle = NULL;
	t->bundle_len = 0;
	t->default_paths_pending = false;
	return 0;
}

int sl_gw_enable_inspection(struct sl_gw *gw, struct sl_ca *ca, const char *upstream_ca,
			    char *err, size_t errlen)
{
	static const unsigned char h11[] = "\x08http/1.1";
	struct sl_gw_tls *t;

	if (gw->tls) {
		snprintf(err, errlen, "inspection is already enabled");
		return -EEXIST;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->gw = gw;
	t->ca = ca;
	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->server || !t->client)
		goto fail_ssl;
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	SSL_CTX_set_options(t->server, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_options(t->client, SSL_OP_NO_RENEGOTIATION);
	if (prefer_fast_suite(t->server) < 0)
		goto fail_ssl;
	/* One session ticket, not OpenSSL's two: each costs the session's
	 * encoding and encryption on every full handshake, and the clients
	 * that resume (curl, Node's agents) keep only the last one. */
	if (SSL_CTX_set_num_tickets(t->server, 1) != 1)
		goto fail_ssl;

	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (upstream_ca) {
		if (SSL_CTX_load_verify_locations(t->client, upstream_ca, NULL) != 1) {
			snprintf(err, errlen, "--upstream-ca %s: cannot load it: %s", upstream_ca,
				 insp_tls_error());
			goto fail;
		}
	} else {
		read_bundle(t);
		t->default_paths_pending = true;
	}
	if (SSL_CTX_set_alpn_protos(t->client, h11, sizeof(h11) - 1) != 0)
		goto fail_ssl;
	SSL_CTX_set_session_cache_mode(t->client,
				       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(t->client, insp_new_session);
	uv_timer_init(gw->loop, &t->held_timer);
	t->held_timer.data = t;
	t->held_timer_open = true;
	gw->tls = t;
	return 0;

fail_ssl:
	snprintf(err, errlen, "cannot set up TLS: %s", insp_tls_error());
fail:
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t);
	return -EINVAL;
}

int sl_gw_add_secret(struct sl_gw *gw, const char *name, const struct sl_secret_value *v)
{
	struct sl_gw_tls *t = gw->tls;

	if (!t)
		return -EINVAL;
	if (t->n_secrets >= SL_SCRUB_MAX_SECRETS)
		return -E2BIG;
	t->secrets[t->n_secrets].name = strdup(name);
	if (!t->secrets[t->n_secrets].name)
		return -ENOMEM;
	t->secrets[t->n_secrets++].v = v;
	/* A spare scrubber knows only the secrets it was made with. */
	while (t->n_spare)
		sl_scrub_free(&t->spare[--t->n_spare]);
	return 0;
}

static void held_timer_closed(uv_handle_t *h)
{
	struct sl_gw_tls *t = h->data;

	t->held_timer_open = false;
	sl_gw_maybe_free(t->gw);
}

void sl_gw_tls_close(struct sl_gw *gw)
{
	struct sl_gw_tls *t = gw->tls;

	if (t && t->held_timer_open && !uv_is_closing((uv_handle_t *)&t->held_timer))
		uv_close((uv_handle_t *)&t->held_timer, held_timer_closed);
}

const struct sl_secret_value *insp_secret_by_name(const struct sl_gw_tls *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->n_secrets; i++)
		if (strcmp(t->secrets[i].name, name) == 0)
			return t->secrets[i].v;
	return NULL;
}

void sl_gw_tls_free(struct sl_gw *gw)
{
	struct sl_gw_tls *t = gw->tls;
	size_t i;

	if (!t)
		return;
	for (i = 0; i < SESS_CACHE; i++)
		if (t->sess[i].s)
			SSL_SESSION_free(t->sess[i].s);
	for (i = 0; i < t->n_secrets; i++)
		free(t->secrets[i].name);
	for (i = 0; i < t->n_spare; i++)
		sl_scrub_free(&t->spare[i]);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t->bundle);
	free(t);
	gw->tls = NULL;
}
