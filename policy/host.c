/* SPDX-License-Identifier: MIT */
#include "host.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <idn2.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "macro.h"

/* A Unicode name may be longer in UTF-8 than its A-label form; anything past
 * this is not a host anybody can reach and is refused before IDNA runs. */
#define HOST_INPUT_MAX 1024

/* libidn2, loaded the first time a name needs it (an ASCII name never
 * does): mapping and binding it and libunistring were 0.2 ms of every
 * start of sluice. RTLD_NOW, as the executable is bound.
 * The gateway's process loads it before it is confined (sl_host_idn_load),
 * so that no request makes it open a library. */
static pthread_once_t idn_once = PTHREAD_ONCE_INIT;
static int (*to_ascii_fn)(const char *, char **, int);
static void (*free_fn)(void *);

static void idn_load(void)
{
	void *lib = dlopen("libidn2.so.0", RTLD_NOW | RTLD_LOCAL);
	void *to, *fr;

	if (!lib)
		return;
	to = dlsym(lib, "idn2_to_ascii_8z");
	fr = dlsym(lib, "idn2_free");
	if (!to || !fr)
		return;
	/* Copied: ISO C has no cast from void * to a function pointer; POSIX
	 * guarantees dlsym's result is one, of the same representation. */
	memcpy(&to_ascii_fn, &to, sizeof(to));
	memcpy(&free_fn, &fr, sizeof(fr));
}

int sl_host_idn_load(void)
{
	(void)pthread_once(&idn_once, idn_load);
	return to_ascii_fn ? 0 : -ENOENT;
}

static int fail(const char **ret_why, const char *why)
{
	if (ret_why)
		*ret_why = why;
	return -EINVAL;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* WHATWG URL "ends in a number": the last label is all decimal digits, or
 * "0x" followed by hex digits. Such a host is an IPv4 address or nothing. */
static bool label_is_numeric(const char *label, size_t len)
{
	size_t i;

	if (len >= 2 && label[0] == '0' && label[1] == 'x') {
		for (i = 2; i < len; i++)
			if (!is_hex(label[i]))
				return false;
		return true;
	}
	for (i = 0; i < len; i++)
		if (label[i] < '0' || label[i] > '9')
			return false;
	return len > 0;
}

static int ipv6_normalize(const char *in, size_t len, char ret_host[static SL_HOST_BUF],
			  enum sl_host_kind *ret_kind, const char **ret_why)
{
	char buf[INET6_ADDRSTRLEN + 1];
	struct in6_addr a6;

	if (len == 0 || len >= sizeof(buf))
		return fail(ret_why, "not a valid IPv6 address");
	memcpy(buf, in, len);
	buf[len] = '\0';
	/* A zone ("fe80::1%eth0") names an interface of whoever parses it;
	 * it has no meaning across the gateway and is refused. */
	if (memchr(buf, '%', len))
		return fail(ret_why, "IPv6 zone identifiers are not allowed");
	if (inet_pton(AF_INET6, buf, &a6) != 1)
		return fail(ret_why, "not a valid IPv6 address");

	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		/* ::ffff:127.0.0.1 is 127.0.0.1 to every socket API. */
		if (!inet_ntop(AF_INET, &a6.s6_addr[12], ret_host, SL_HOST_BUF))
			return fail(ret_why, "not a valid IPv6 address");
		*ret_kind = SL_HOST_IPV4;
		return 0;
	}
	if (!inet_ntop(AF_INET6, &a6, ret_host, SL_HOST_BUF))
		return fail(ret_why, "not a valid IPv6 address");
	*ret_kind = SL_HOST_IPV6;
	return 0;
}

/* buf is lower-case ASCII without a trailing dot, len > 0. */
static int ascii_normalize(const char *buf, size_t len, char ret_host[static SL_HOST_BUF],
			   enum sl_host_kind *ret_kind, const char **ret_why)
{
	const char *label = buf, *last_label = buf;
	size_t i, label_len = 0, last_len = 0;

	if (len > 253)
		return fail(ret_why, "name is longer than 253 bytes");

	for (i = 0; i <= len; i++) {
		if (i == len || buf[i] == '.') {
			if (label_len == 0)
				return fail(ret_why, "name has an empty label");
			if (label_len > 63)
				return fail(ret_why, "name has a label longer than 63 bytes");
			last_label = label;
			last_len = label_len;
			label = buf + i + 1;
			label_len = 0;
			continue;
		}
		if (!is_name_char(buf[i]))
			return fail(ret_why, "name has a character other than letters, digits, '-', "
					     "'_' and '.'");
		label_len++;
	}

	if (label_is_numeric(last_label, last_len)) {
		struct in_addr a4;

		/* Every character is already [a-z0-9_.-]; inet_aton() takes
		 * only digits, 'x', hex letters and dots, and nothing after. */
		for (i = 0; i < len; i++)
			if (!(is_hex(buf[i]) || buf[i] == 'x' || buf[i] == '.'))
				return fail(ret_why, "a name whose last label is a number must be an "
						     "IPv4 address");
		if (inet_aton(buf, &a4) == 0)
			return fail(ret_why, "a name whose last label is a number must be an IPv4 "
					     "address");
		if (!inet_ntop(AF_INET, &a4, ret_host, SL_HOST_BUF))
			return fail(ret_why, "not a valid IPv4 address");
		*ret_kind = SL_HOST_IPV4;
		return 0;
	}

	memcpy(ret_host, buf, len);
	ret_host[len] = '\0';
	*ret_kind = SL_HOST_NAME;
	return 0;
}

int sl_host_normalize(const char *in, size_t len, char ret_host[static SL_HOST_BUF],
		      enum sl_host_kind *ret_kind, const char **ret_why)
{
	char buf[HOST_INPUT_MAX + 1];
	bool ascii = true;
	size_t i;

	if (!in || len == 0)
		return fail(ret_why, "empty host");
	if (len > HOST_INPUT_MAX)
		return fail(ret_why, "host is too long");
	if (memchr(in, '\0', len))
		return fail(ret_why, "host contains a NUL byte");

	if (in[0] == '[') {
		if (len < 2 || in[len - 1] != ']')
			return fail(ret_why, "unbalanced '[' in host");
		if (ipv6_normalize(in + 1, len - 2, ret_host, ret_kind, NULL) < 0)
			return fail(ret_why, "brackets must enclose an IPv6 address");
		return 0;
	}
	if (memchr(in, '[', len) || memchr(in, ']', len))
		return fail(ret_why, "stray bracket in host");
	if (memchr(in, ':', len))
		return ipv6_normalize(in, len, ret_host, ret_kind, ret_why);

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x80)
			ascii = false;
		buf[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : (char)c;
	}
	buf[len] = '\0';

	if (!ascii) {
		/* UTS #46 non-transitional processing with NFC, as curl (through
		 * libidn2) and browsers do, so the name we compare is the name
		 * the client would have resolved. Its result is checked again
		 * as ASCII below: UTS #46 without STD3 rules can map a Unicode
		 * character to '/' or ':'. */
		char *a = NULL;
		int r;

		if (sl_host_idn_load() < 0)
			return fail(ret_why, "an internationalised domain name, and libidn2.so.0 "
					     "could not be loaded to read it");
		r = to_ascii_fn(buf, &a, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
		if (r != IDN2_OK || !a)
			return fail(ret_why, "not a valid internationalised domain name");
		len = strlen(a);
		if (len > HOST_INPUT_MAX) {
			free_fn(a);
			return fail(ret_why, "host is too long");
		}
		for (i = 0; i < len; i++) {
			char c = a[i];
			buf[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		}
		buf[len] = '\0';
		free_fn(a);
	}

	/* One trailing dot is the fully-qualified spelling of the same name;
	 * a second one is an empty label and invalid. */
	if (len > 0 && buf[len - 1] == '.')
		buf[--len] = '\0';
	if (len == 0)
		return fail(ret_why, "empty host");

	return ascii_normalize(buf, len, ret_host, ret_kind, ret_why);
}

int sl_host_split(const char *in, size_t len, const char **ret_host, size_t *ret_host_len,
		  uint16_t *ret_port, const char **ret_why)
{
	const char *colon = NULL;
	size_t host_len, i;
	unsigned long port = 0;

	if (!in || len == 0)
		return fail(ret_why, "empty host");

	if (in[0] == '[') {
		const char *close = memchr(in, ']', len);

		if (!close)
			return fail(ret_why, "unbalanced '[' in host");
		host_len = (size_t)(close - in) + 1;
		if (host_len < len) {
			if (in[host_len] != ':')
				return fail(ret_why, "unexpected characters after ']'");
			colon = in + host_len;
		}
	} else {
		colon = memchr(in, ':', len);
		if (colon && memchr(colon + 1, ':', len - (size_t)(colon - in) - 1))
			return fail(ret_why, "an IPv6 address must be written in [brackets]");
		host_len = colon ? (size_t)(colon - in) : len;
	}

	if (host_len == 0)
		return fail(ret_why, "empty host");

	if (colon) {
		size_t plen = len - (size_t)(colon - in) - 1;

		if (plen == 0)
			return fail(ret_why, "empty port");
		if (plen > 5)
			return fail(ret_why, "port is not a number from 1 to 65535");
		for (i = 0; i < plen; i++) {
			char c = colon[1 + i];

			if (c < '0' || c > '9')
				return fail(ret_why, "port is not a number from 1 to 65535");
			port = port * 10 + (unsigned long)(c - '0');
		}
		if (port == 0 || port > 65535)
			return fail(ret_why, "port is not a number from 1 to 65535");
	}

	*ret_host = in;
	*ret_host_len = host_len;
	*ret_port = (uint16_t)port;
	return 0;
}

int sl_host_pattern_parse(const char *in, size_t len, char ret_host[static SL_HOST_BUF],
			  bool *ret_wildcard, enum sl_host_kind *ret_kind, const char **ret_why)
{
	enum sl_host_kind kind;
	char host[SL_HOST_BUF];
	bool wildcard = false;
	int r;

	if (!in || len == 0)
		return fail(ret_why, "empty host");

	if (in[0] == '*') {
		if (len == 1)
			return fail(ret_why, "'*' alone would match every host; list the hosts "
					     "instead");
		if (in[1] != '.')
			return fail(ret_why, "a wildcard must be a whole label, as in "
					     "'*.example.com'");
		in += 2;
		len -= 2;
		if (len == 0)
			return fail(ret_why, "'*.' needs a suffix, as in '*.example.com'");
		wildcard = true;
	}
	if (memchr(in, '*', len))
		return fail(ret_why, "'*' may only be the whole leftmost label, as in "
				     "'*.example.com'");

	r = sl_host_normalize(in, len, host, &kind, ret_why);
	if (r < 0)
		return r;
	if (wildcard && kind != SL_HOST_NAME)
		return fail(ret_why, "a wildcard suffix must be a name, not an address");

	memcpy(ret_host, host, strlen(host) + 1);
	*ret_wildcard = wildcard;
	*ret_kind = kind;
	return 0;
}

bool sl_host_is_below(const char *host, const char *suffix)
{
	size_t hl = strlen(host), sl = strlen(suffix);

	return hl > sl + 1 && host[hl - sl - 1] == '.' && memcmp(host + hl - sl, suffix, sl) == 0;
}
