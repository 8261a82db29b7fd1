/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD for test-run: a gateway taken over, as far as its CA message
 * to the supervisor goes (cli/serve-internal.h, SL_SERVE_MSG_CA: 16 bytes
 * of head, 2048 of PEM). SLT_FORGE says how the certificate is changed on
 * its way out: "keep" (not at all), "two" (a second copy of it appended),
 * "text" (a line before it), "long" (its length said as 4096); each time,
 * SLT_FORGE_SEEN (a file) is written, so that a test sees the message was
 * met. Nothing else is touched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CA_TYPE 11
#define CA_LEN (16 + 2048)

static const char *mode, *seen;

__attribute__((constructor)) static void forge_init(void)
{
	/* Read now: the gateway wipes its environment later. */
	mode = getenv("SLT_FORGE");
	seen = getenv("SLT_FORGE_SEEN");
}

ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);
	unsigned char *b;
	uint32_t type;
	uint64_t v;

	if (!real)
		real = (ssize_t(*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	if (!mode || mh->msg_iovlen != 1 || mh->msg_iov[0].iov_len != CA_LEN)
		return real(fd, mh, flags);
	b = mh->msg_iov[0].iov_base;
	memcpy(&type, b, 4);
	memcpy(&v, b + 8, 8);
	if (type != CA_TYPE || v > 2048)
		return real(fd, mh, flags);
	if (seen) {
		int s = open(seen, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (s >= 0)
			close(s);
	}
	if (!strcmp(mode, "two") && 2 * v <= 2048) {
		memcpy(b + 16 + v, b + 16, v);
		v *= 2;
	} else if (!strcmp(mode, "text") && v + 11 <= 2048) {
		memmove(b + 16 + 11, b + 16, v);
		memcpy(b + 16, "# injected\n", 11);
		v += 11;
	} else if (!strcmp(mode, "long")) {
		v = 4096;
	}
	memcpy(b + 8, &v, 8);
	return real(fd, mh, flags);
}
