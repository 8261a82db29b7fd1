/* SPDX-License-Identifier: MIT */
/*
 * SOCKS5's bytes (socks-wire.h): pure, no state, calls nothing of the
 * gateway's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "socks-wire.h"

int sl_socks_parse_greeting(const uint8_t *p, size_t len, bool *ret_no_auth)
{
	size_t n;

	*ret_no_auth = false;
	if (len < 1)
		return 0;
	if (p[0] != SL_SOCKS_VERSION)
		return -EPROTO;
	if (len < 2)
		return 0;
	n = p[1];
	if (len < 2 + n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[2 + i] == SL_SOCKS_METHOD_NO_AUTH)
			*ret_no_auth = true;
	return (int)(2 + n);
}

/* A byte a host name (or a numeric form sl_host_normalize() reads) may
 * hold: printable ASCII, without what would make it an authority, a path
 * or an IPv6 literal (those come as ATYP 4). */
static bool name_byte(uint8_t b)
{
	return b > 0x20 && b < 0x7f && !strchr(":[]/@\\", b);
}

static int refuse(enum sl_socks_reply *ret_reply, enum sl_socks_reply rep, int err)
{
	*ret_reply = rep;
	return err;
}

int sl_socks_parse_request(const uint8_t *p, size_t len, struct sl_socks_request *ret,
			   enum sl_socks_reply *ret_reply)
{
	size_t alen, need;

	memset(ret, 0, sizeof(*ret));
	*ret_reply = SL_SOCKS_GENERAL_FAILURE;
	if (len >= 1 && p[0] != SL_SOCKS_VERSION)
		return -EINVAL;
	if (len < 2)
		return 0;
	if (p[1] != SL_SOCKS_CMD_CONNECT)
		return refuse(ret_reply, SL_SOCKS_CMD_UNSUPPORTED, -ENOTSUP);
	if (len < 4)
		return 0;
	if (p[2] != 0)
		return -EINVAL;
	ret->cmd = p[1];
	ret->atyp = p[3];
	switch (p[3]) {
	case SL_SOCKS_ATYP_IPV4:
		alen = 4;
		need = 4 + alen + 2;
		break;
	case SL_SOCKS_ATYP_IPV6:
		alen = 16;
		need = 4 + alen + 2;
		break;
	case SL_SOCKS_ATYP_DOMAIN:
		if (len < 5)
			return 0;
		alen = p[4];
		if (alen == 0 || alen > SL_SOCKS_NAME_MAX)
			return -EINVAL;
		need = 5 + alen + 2;
		break;
	default:
		return refuse(ret_reply, SL_SOCKS_ATYP_UNSUPPORTED, -EAFNOSUPPORT);
	}
	if (len < need)
		return 0;
	ret->port = (uint16_t)(p[need - 2] << 8 | p[need - 1]);
	if (ret->port == 0)
		return -EINVAL;
	if (p[3] == SL_SOCKS_ATYP_DOMAIN) {
		for (size_t i = 0; i < alen; i++)
			if (!name_byte(p[5 + i]))
				return -EINVAL;
		memcpy(ret->host, p + 5, alen);
		ret->host[alen] = '\0';
	} else if (p[3] == SL_SOCKS_ATYP_IPV4) {
		inet_ntop(AF_INET, p + 4, ret->host, sizeof(ret->host));
	} else {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, p + 4, a, sizeof(a));
		snprintf(ret->host, sizeof(ret->host), "[%s]", a);
	}
	ret->host_len = strlen(ret->host);
	return (int)need;
}

void sl_socks_reply(enum sl_socks_reply rep, uint8_t out[static SL_SOCKS_REPLY_LEN])
{
	memset(out, 0, SL_SOCKS_REPLY_LEN);
	out[0] = SL_SOCKS_VERSION;
	out[1] = (uint8_t)rep;
	out[3] = SL_SOCKS_ATYP_IPV4;
}

enum sl_socks_reply sl_socks_reply_for(int status, const char *reason, int connect_status)
{
	if (status == 403 || status == 429)
		return SL_SOCKS_NOT_ALLOWED;
	if (status == 504)
		return SL_SOCKS_HOST_UNREACHABLE;
	if (status != 502)
		return SL_SOCKS_GENERAL_FAILURE;
	switch (connect_status) {
	case -ECONNREFUSED:
		return SL_SOCKS_REFUSED;
	case -ENETUNREACH:
		return SL_SOCKS_NET_UNREACHABLE;
	case -EHOSTUNREACH:
	case -ETIMEDOUT:
		return SL_SOCKS_HOST_UNREACHABLE;
	default:
		break;
	}
	if (reason && !strcmp(reason, "resolve-failed"))
		return SL_SOCKS_HOST_UNREACHABLE;
	return SL_SOCKS_GENERAL_FAILURE;
}
