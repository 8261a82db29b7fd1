/* SPDX-License-Identifier: MIT */
/*
 * The gateway's own answers to a plain-HTTP client: a status and a
 * one-line reason, always with Connection: close (conn_respond_error in
 * conn.c sends them). Calls nothing of the connection's.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "socks-wire.h"

const char *conn_status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 421:
		return "Misdirected Request";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

/* A reason is one of our own tokens ("no-rule", "bad-framing"): anything
 * else is left out of the header rather than sent. */
static bool reason_token(const char *r)
{
	size_t n = r ? strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") : 0;

	return n > 0 && n < 64 && r[n] == '\0';
}

int conn_error_response(int status, const char *reason, const char *why, char **ret)
{
	char body[768], hdr[96] = "";
	int blen, n;

	blen = snprintf(body, sizeof(body), "sluice: %s\n", why);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		blen = (int)strlen(body);
	/* Clients that show only the status (git, npm, pip: "403") still
	 * carry the headers into their verbose output, and scripts can read
	 * it: the audit record's reason, the body's why in words. */
	if (reason_token(reason))
		snprintf(hdr, sizeof(hdr), "X-Sluice-Reason: %s\r\n", reason);
	n = asprintf(ret,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\n%sConnection: close\r\n\r\n%.*s",
		     status, conn_status_text(status), blen, hdr, blen, body);
	if (n < 0)
		*ret = NULL;
	return n;
}

int conn_refusal(const struct conn *c, int status, const char *reason, const char *why,
		 char **ret)
{
	uint8_t rep[SL_SOCKS_REPLY_LEN];

	*ret = NULL;
	if (c->socks == CONN_SOCKS_GREETING)
		return -1;
	if (c->socks != CONN_SOCKS_REQUEST)
		return conn_error_response(status, reason, why, ret);
	sl_socks_reply(sl_socks_reply_for(status, reason, c->up_status), rep);
	*ret = malloc(sizeof(rep));
	if (!*ret)
		return -1;
	memcpy(*ret, rep, sizeof(rep));
	return (int)sizeof(rep);
}
