/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's trust bundle filled in place, and the shape of the one CA
 * certificate the supervisor takes from the gateway's process for it
 * (ca.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ca.h"
#include "macro.h"

#define PEM_BEGIN "-----BEGIN CERTIFICATE-----\n"
#define PEM_END "-----END CERTIFICATE-----\n"
#define PEM_LINE_MAX 64	  /* RFC 7468 section 2 */
#define ROOTS_MAX (16u << 20) /* as ca.c's ROOTS_FILE_MAX */

static bool base64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

bool sl_ca_pem_is_one_cert(const char *pem, size_t len)
{
	size_t b = sizeof(PEM_BEGIN) - 1, e = sizeof(PEM_END) - 1, i, col = 0, pad = 0;
	size_t body = 0;

	if (!pem || len < b + e || len > SL_CA_PEM_MAX || memcmp(pem, PEM_BEGIN, b) ||
	    memcmp(pem + len - e, PEM_END, e))
		return false;
	/* Lines of base64 (the last may end in one or two '='), each at most
	 * 64 characters and ended by a newline, nothing else: no second
	 * certificate, no key, no NUL, no text a PEM reader would skip. */
	for (i = b; i < len - e; i++) {
		unsigned char c = (unsigned char)pem[i];

		if (c == '\n') {
			if (col == 0)
				return false;
			col = 0;
			continue;
		}
		if (++col > PEM_LINE_MAX)
			return false;
		if (c == '=') {
			if (++pad > 2)
				return false;
		} else if (pad || !base64_char(c)) {
			return false;
		}
		body++;
	}
	return col == 0 && body > 0 && body % 4 == 0;
}

int sl_ca_write_all(int fd, const void *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		p = (const char *)p + n;
		len -= (size_t)n;
	}
	return 0;
}

/* roots_file's bytes to fd: a regular file of at most ROOTS_MAX bytes;
 * missing is no error (the CA alone). */
static int copy_roots(int fd, const char *roots_file, char *err, size_t errlen)
{
	_cleanup_close_ int in = open(roots_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char buf[65536];
	struct stat st;
	size_t total = 0;

	if (in < 0 && errno == ENOENT)
		return 0;
	if (in < 0 || fstat(in, &st) < 0) {
		int r = negative_errno();

		snprintf(err, errlen, "%s: %s", roots_file, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", roots_file);
		return -EINVAL;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = negative_errno();
			snprintf(err, errlen, "%s: %s", roots_file, strerror(-r));
			return r;
		}
		if (n == 0)
			return 0;
		total += (size_t)n;
		if (total > ROOTS_MAX) {
			snprintf(err, errlen, "%s: larger than %u MiB", roots_file, ROOTS_MAX >> 20);
			return -EFBIG;
		}
		r = sl_ca_write_all(fd, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

int sl_ca_bundle_fill(int fd, const char *roots_file, const char *cert_pem, const char *extra,
		      char *err, size_t errlen)
{
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		r = negative_errno();
		snprintf(err, errlen, "emptying the bundle: %s", strerror(-r));
		return r;
	}
	r = roots_file ? copy_roots(fd, roots_file, err, errlen) : 0;
	if (r == 0)
		r = sl_ca_write_all(fd, "\n", 1);
	if (r == 0)
		r = sl_ca_write_all(fd, cert_pem, strlen(cert_pem));
	if (r == 0 && extra)
		r = sl_ca_write_all(fd, extra, strlen(extra));
	if (r < 0 && err && errlen && !err[0])
		snprintf(err, errlen, "writing the bundle: %s", strerror(-r));
	return r;
}
