/* SPDX-License-Identifier: MIT */
/* The control socket's lines (control-proto.h, docs/control.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "control-proto.h"

static bool word_is(const char *p, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(p, w, n) == 0;
}

static bool valid_id(const char *p, size_t n)
{
	if (n != SL_CTL_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

int sl_ctl_parse(const char *line, size_t len, struct sl_ctl_request *ret, const char **ret_why)
{
	const char *sp, *arg = NULL;
	size_t vlen, alen = 0;
	struct sl_ctl_request q = {0};

	/* A client may end its line with "\r\n". */
	if (len && line[len - 1] == '\r')
		len--;
	if (len == 0 || len > SL_CTL_LINE_MAX) {
		*ret_why = len ? "request line too long" : "empty request";
		return -EINVAL;
	}
	if (!sl_ctl_printable(line, len)) {
		*ret_why = "a request is printable ASCII";
		return -EINVAL;
	}
	sp = memchr(line, ' ', len);
	vlen = sp ? (size_t)(sp - line) : len;
	if (sp) {
		arg = sp + 1;
		alen = len - vlen - 1;
	}
	if (word_is(line, vlen, "info"))
		q.verb = SL_CTL_INFO;
	else if (word_is(line, vlen, "pending"))
		q.verb = SL_CTL_PENDING;
	else if (word_is(line, vlen, "reload"))
		q.verb = SL_CTL_RELOAD;
	else if (word_is(line, vlen, "approve"))
		q.verb = SL_CTL_APPROVE;
	else if (word_is(line, vlen, "deny"))
		q.verb = SL_CTL_DENY;
	else {
		*ret_why = "unknown request (info, pending, reload, approve ID, deny ID)";
		return -EINVAL;
	}
	if (q.verb == SL_CTL_APPROVE || q.verb == SL_CTL_DENY) {
		if (!arg || !valid_id(arg, alen)) {
			*ret_why = "an ID is 12 lowercase hex digits, as `sluice pending` shows";
			return -EINVAL;
		}
		memcpy(q.id, arg, alen);
		q.id[alen] = '\0';
	} else if (arg) {
		*ret_why = "this request takes no argument";
		return -EINVAL;
	}
	*ret = q;
	return 0;
}

char *sl_ctl_escape(const char *src, size_t n, bool spaces, char *dst, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (size < 8) {
		dst[0] = '\0';
		return dst;
	}
	if (n == 0) {
		snprintf(dst, size, "-");
		return dst;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)src[i];
		bool plain = b > 0x20 && b < 0x7f && b != '\\';

		if (b == ' ' && spaces)
			plain = true;
		/* Room for this byte's form and for "..." after it. */
		if (o + (plain ? 1 : 4) + 3 >= size) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			dst[o++] = (char)b;
		} else {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[b >> 4];
			dst[o++] = hex[b & 15];
		}
	}
	dst[o] = '\0';
	return dst;
}

bool sl_ctl_printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}
