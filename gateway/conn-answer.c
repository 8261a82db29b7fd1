/* SPDX-License-Identifier: MIT */
/*
 * The gateway's own answers to a plain-HTTP client: a status and a
 * one-line reason, always with Connection: close (conn_respond_error in
 * conn.c sends them). Calls nothing of the connection's.
 */
#include <stdio.h>
#include <string.h>

#include "conn-internal.h"

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

int conn_error_response(int status, const char *why, char **ret)
{
	char body[768];
	int blen, n;

	blen = snprintf(body, sizeof(body), "sluice: %s\n", why);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		blen = (int)strlen(body);
	n = asprintf(ret,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\nConnection: close\r\n\r\n%.*s",
		     status, conn_status_text(status), blen, blen, body);
	if (n < 0)
		*ret = NULL;
	return n;
}
