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
#include <string.h>
#include <strings.h>
#include <sys/types.h>

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

/* Inline: with a literal, its length is known when compiled (the header
 * checks call these for every header of every message). */
static inline bool sl_http_span_eq(const struct sl_http_span *s, const char *lit)
{
	return s->len == strlen(lit) && memcmp(s->p, lit, s->len) == 0;
}

static inline bool sl_http_span_caseeq(const struct sl_http_span *s, const char *lit)
{
	return s->len == strlen(lit) && strncasecmp(s->p, lit, s->len) == 0;
}
/* Does any header called name (case ignored; every one of them, not only
 * the first) list tok[0..tok_len) in its comma-separated value, case
 * ignored (Connection: keep-alive, Upgrade)? */
bool sl_http_header_has_token(const struct sl_http_request *r, const char *name, const char *tok,
			      size_t tok_len);

/* Does any header called name (Authorization, WWW-Authenticate) name a
 * scheme whose login holds for the connection rather than the request
 * (NTLM, Negotiate)? A connection that carried one is nobody else's. */
bool sl_http_auth_binds_connection(const struct sl_http_request *r, const char *name);

/* Write "Name: value\r\n" at out (name+value+4 bytes, returned). A head
 * rebuilt this way can be longer than the one parsed ("Name:v\n" grows by
 * two): SL_HTTP_REBUILT_MAX says how much room it needs. */
size_t sl_http_put_header(char *out, const struct sl_http_header *h);
#define SL_HTTP_REBUILT_MAX(head_len, n_headers) ((head_len) + 2 * (size_t)(n_headers))

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

/*
 * A request's body, decoded by its own framing (Content-Length, or chunked
 * read strictly: hex digits and CRLF only; no chunk extensions, no
 * whitespace, no bare CR or LF, no trailer fields) and framed again by us,
 * so the origin receives only the bytes the gateway parsed, never the
 * client's framing. Fed the head, then the bytes that follow it, it says
 * how many of them belong to this request; the rest would be a next
 * request, decided on its own.
 */
struct sl_http_body {
	uint64_t left;	 /* bytes still to come: of the body, or of this chunk */
	unsigned st;	 /* where in the chunked framing we are */
	unsigned digits; /* of the chunk size being read */
	bool chunked;
	bool done;
	bool failed;
	const char *why; /* when failed */
};

/* The most a feed's output exceeds its input: a chunk's size line and the
 * last chunk's CRLF may have been read by an earlier feed. */
#define SL_HTTP_BODY_SLACK 32

int sl_http_body_init(struct sl_http_body *b, const char *head, size_t head_len);
/* The same from the head parsed already (sl_http_parse_request). */
void sl_http_body_init_request(struct sl_http_body *b, const struct sl_http_request *r);
/* Returns how many of data[0..len) belong to the body (the rest must not be
 * forwarded), or -EINVAL (b->why says why) when the body's framing is
 * broken. out (out_cap bytes; len + SL_HTTP_BODY_SLACK is always enough)
 * receives *ret_out_len bytes: what to send the origin for them. A chunked
 * body goes out as chunks of our own, one per stretch of data: sizes in
 * lowercase hex, nothing else on the line, CRLF after each. */
ssize_t sl_http_body_feed(struct sl_http_body *b, const char *data, size_t len, char *out,
			  size_t out_cap, size_t *ret_out_len);
bool sl_http_body_is_done(const struct sl_http_body *b);
void sl_http_body_done(struct sl_http_body *b);

/*
 * An origin's response to a plain-HTTP request: its head (status and header
 * spans, so the gateway can rewrite hop-by-hop headers) and where its body
 * ends, so that the client's connection can carry the next request.
 */
/* The bytes of a response body without its framing (chunk sizes taken
 * out). 0, or a negative errno to stop: the feed then fails. */
typedef int sl_http_data_fn(void *userdata, const char *p, size_t len);

struct sl_http_response {
	_Alignas(16) unsigned char parser[128]; /* an llhttp_t */
	int status;
	bool self_delimited; /* Content-Length, chunked, or no body at all */
	bool chunked;	     /* Transfer-Encoding: chunked */
	bool no_body;	     /* HEAD, 1xx, 204, 304 */
	bool done;
	bool failed;
	bool sink_failed; /* on_data returned an error */
	/* Set after sl_http_response_begin() to receive the body's bytes,
	 * unframed, as the feed passes them. */
	sl_http_data_fn *on_data;
	void *userdata;
};

/*
 * Parse the response head at the start of buf[0..len). head_request: the
 * request was HEAD (so no body follows whatever the head says). Returns
 * the head's length when complete, 0 when more bytes are needed, -EINVAL
 * for a head that cannot be parsed or is longer than max. On success
 * ret_hdrs holds the header spans (into buf) and r is ready for the body.
 */
int sl_http_response_begin(struct sl_http_response *r, const char *buf, size_t len, size_t max,
			   bool head_request, struct sl_http_request *ret_hdrs);
/* How many of data[0..len) belong to the response body; r->done once it is
 * complete. -EINVAL when the framing breaks. */
ssize_t sl_http_response_feed(struct sl_http_response *r, const char *data, size_t len);
