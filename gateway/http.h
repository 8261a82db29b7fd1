/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 request heads from the sandbox, parsed with llhttp and then held
 * to the stricter reading a security boundary needs (RFC 9112): anything
 * two servers could frame differently is refused with 400, because the
 * gateway and the origin must agree on where one request ends and the next
 * begins (request smuggling).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_HTTP_MAX_HEADERS 128

struct sl_http_span {
	const char *p;
	size_t len;
};

struct sl_http_header {
	struct sl_http_span name, value;
};

struct sl_http_request {
	struct sl_http_span method, target;
	unsigned version_minor; /* HTTP/1.x */
	struct sl_http_header headers[SL_HTTP_MAX_HEADERS];
	size_t n_headers;
	size_t head_len; /* bytes of the head, through the empty line */
	bool keep_alive;
	bool chunked;
	bool has_length;
	uint64_t content_length;
};

/*
 * Parse the request head at the start of buf[0..len). Returns the head's
 * length when it is complete, 0 when more bytes are needed, or a negative
 * errno with *ret_status (400, 431, 501) and *ret_why set when it must be
 * refused. A head longer than max_head bytes is refused with 431.
 */
int sl_http_parse_request(const char *buf, size_t len, size_t max_head,
			  struct sl_http_request *ret, int *ret_status, const char **ret_why);

/* The value of the only header called name (case-insensitive); NULL when
 * absent. *ret_count says how many there were. */
const struct sl_http_span *sl_http_header(const struct sl_http_request *r, const char *name,
					  size_t *ret_count);

bool sl_http_span_eq(const struct sl_http_span *s, const char *lit);
bool sl_http_span_caseeq(const struct sl_http_span *s, const char *lit);

/* An absolute-form target, "http://host[:port]/path?query", split. */
struct sl_http_url {
	struct sl_http_span host; /* as written, brackets kept */
	uint16_t port;            /* 80 when absent */
	struct sl_http_span path; /* origin-form: "/..." with query; "/" when absent */
};

/* Parse an absolute-form target. Only http: (https goes through CONNECT);
 * userinfo ("user@host") is refused. Returns 0 or -EINVAL with *ret_why. */
int sl_http_parse_url(const struct sl_http_span *target, struct sl_http_url *ret,
		      const char **ret_why);
