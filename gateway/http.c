/* SPDX-License-Identifier: MIT */
#include "http.h"

#include <errno.h>
#include <llhttp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy.h"

/* gateway/meson.build builds llhttp strict: a lenient build reads chunk
 * lines and header line ends as no other server does. */
#if !LLHTTP_STRICT_MODE
#error "llhttp must be built with LLHTTP_STRICT_MODE=1"
#endif

struct ctx {
	struct sl_http_request *req;
	const char *field_start;
	size_t field_len;
	bool in_value;
	bool too_many;
};

static int on_method(llhttp_t *p, const char *at, size_t len)
{
	struct ctx *c = p->data;

	if (!c->req->method.p)
		c->req->method.p = at;
	c->req->method.len += len;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
	struct ctx *c = p->data;

	if (!c->req->target.p)
		c->req->target.p = at;
	c->req->target.len += len;
	return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
	struct ctx *c = p->data;
	struct sl_http_request *r = c->req;

	if (c->in_value || r->n_headers == 0 || !r->headers[r->n_headers - 1].name.p ||
	    r->headers[r->n_headers - 1].value.p) {
		if (r->n_headers == SL_HTTP_MAX_HEADERS) {
			c->too_many = true;
			return HPE_USER;
		}
		r->headers[r->n_headers].name.p = at;
		r->headers[r->n_headers].name.len = 0;
		r->headers[r->n_headers].value.p = NULL;
		r->headers[r->n_headers].value.len = 0;
		r->n_headers++;
		c->in_value = false;
	}
	r->headers[r->n_headers - 1].name.len += len;
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
	struct ctx *c = p->data;
	struct sl_http_header *h = &c->req->headers[c->req->n_headers - 1];

	if (!h->value.p)
		h->value.p = at;
	h->value.len += len;
	c->in_value = true;
	return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct ctx *c = p->data;
	struct sl_http_header *h = &c->req->headers[c->req->n_headers - 1];

	/* An empty value gets no on_header_value call; give it a pointer. */
	if (!h->value.p)
		h->value.p = h->name.p + h->name.len;
	c->in_value = true;
	return 0;
}

static int on_headers_complete(llhttp_t *p)
{
	/* Stop here: the body is the caller's to stream. */
	return HPE_PAUSED;
}


bool sl_http_header_has_token(const struct sl_http_request *r, const char *name, const char *tok,
			      size_t tok_len)
{
	for (size_t i = 0; i < r->n_headers; i++) {
		const char *p, *end;

		if (!sl_http_span_caseeq(&r->headers[i].name, name))
			continue;
		p = r->headers[i].value.p;
		end = p + r->headers[i].value.len;
		while (p < end) {
			const char *t;

			while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
				p++;
			t = p;
			while (p < end && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			if ((size_t)(p - t) == tok_len && !strncasecmp(t, tok, tok_len))
				return true;
		}
	}
	return false;
}

const struct sl_http_span *sl_http_header(const struct sl_http_request *r, const char *name,
					  size_t *ret_count)
{
	const struct sl_http_span *found = NULL;
	size_t i, n = 0;

	for (i = 0; i < r->n_headers; i++)
		if (sl_http_span_caseeq(&r->headers[i].name, name)) {
			if (!found)
				found = &r->headers[i].value;
			n++;
		}
	if (ret_count)
		*ret_count = n;
	return found;
}

static int refuse(int status, const char *why, int *ret_status, const char **ret_why)
{
	*ret_status = status;
	*ret_why = why;
	return status == 431 ? -E2BIG : -EINVAL;
}

/* Header checks llhttp leaves to us, each one a framing ambiguity some
 * server resolves differently (RFC 9112 6.1, 6.3). */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 9112 5.1: no whitespace between a field name and its colon
 * ("Host : x" is a classic smuggling vector some servers accept); names
 * are tokens, values hold no control characters but HTAB. */
static int check_header_chars(const struct sl_http_request *r, int *ret_status,
			      const char **ret_why)
{
	size_t i, j;

	for (i = 0; i < r->n_headers; i++) {
		const struct sl_http_header *h = &r->headers[i];

		if (h->name.len == 0)
			return refuse(400, "empty header name", ret_status, ret_why);
		for (j = 0; j < h->name.len; j++)
			if (!is_tchar((unsigned char)h->name.p[j]))
				return refuse(400, "invalid character in a header name", ret_status,
					      ret_why);
		for (j = 0; j < h->value.len; j++) {
			unsigned char c = (unsigned char)h->value.p[j];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return refuse(400, "control character in a header value", ret_status,
					      ret_why);
		}
	}
	return 0;
}

/* A header the Connection header names is dropped by the next hop:
 * naming one that frames or routes the request (Content-Length,
 * Transfer-Encoding, Host) would have us and the origin read the message
 * differently (request smuggling). */
static int check_connection_names(const struct sl_http_request *r, int *ret_status,
				  const char **ret_why)
{
	size_t i;

	for (i = 0; i < r->n_headers; i++) {
		const char *p, *end;

		if (!sl_http_span_caseeq(&r->headers[i].name, "connection"))
			continue;
		p = r->headers[i].value.p;
		end = p + r->headers[i].value.len;
		while (p < end) {
			struct sl_http_span t;

			while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
				p++;
			t.p = p;
			while (p < end && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			t.len = (size_t)(p - t.p);
			if (sl_http_span_caseeq(&t, "content-length") ||
			    sl_http_span_caseeq(&t, "transfer-encoding") ||
			    sl_http_span_caseeq(&t, "host"))
				return refuse(400, "the Connection header names a header that frames "
						   "or routes the request",
					      ret_status, ret_why);
		}
	}
	return 0;
}

/* One Transfer-Encoding (chunked, HTTP/1.1) or one Content-Length (plain
 * digits), never both: r->chunked, r->has_length, r->content_length. */
static int check_body_headers(struct sl_http_request *r, int *ret_status, const char **ret_why)
{
	const struct sl_http_span *te, *cl;
	size_t n_te, n_cl, i;
	uint64_t v = 0;

	te = sl_http_header(r, "transfer-encoding", &n_te);
	cl = sl_http_header(r, "content-length", &n_cl);
	if (n_te && n_cl)
		return refuse(400, "both Transfer-Encoding and Content-Length", ret_status, ret_why);
	if (n_te > 1)
		return refuse(400, "more than one Transfer-Encoding header", ret_status, ret_why);
	if (n_te) {
		/* An HTTP/1.0 server knows no chunked coding, and RFC 9112 6.1
		 * has its framing read as faulty. */
		if (r->version_minor == 0)
			return refuse(400, "Transfer-Encoding in an HTTP/1.0 request", ret_status,
				      ret_why);
		if (!sl_http_span_caseeq(te, "chunked"))
			return refuse(501, "Transfer-Encoding other than chunked", ret_status, ret_why);
		r->chunked = true;
	}
	if (n_cl > 1)
		return refuse(400, "more than one Content-Length header", ret_status, ret_why);
	if (n_cl) {
		if (cl->len == 0 || cl->len > 15)
			return refuse(400, "bad Content-Length", ret_status, ret_why);
		for (i = 0; i < cl->len; i++) {
			if (cl->p[i] < '0' || cl->p[i] > '9')
				return refuse(400, "bad Content-Length", ret_status, ret_why);
			v = v * 10 + (uint64_t)(cl->p[i] - '0');
		}
		r->has_length = true;
		r->content_length = v;
	}
	return 0;
}

static int check_framing(struct sl_http_request *r, int *ret_status, const char **ret_why)
{
	size_t n_host;
	int e;

	e = check_header_chars(r, ret_status, ret_why);
	if (e < 0)
		return e;
	e = check_connection_names(r, ret_status, ret_why);
	if (e < 0)
		return e;
	(void)sl_http_header(r, "host", &n_host);
	if (n_host > 1)
		return refuse(400, "more than one Host header", ret_status, ret_why);
	return check_body_headers(r, ret_status, ret_why);
}

/* Everything but the header array, which n_headers says how much of is
 * filled: 4 KiB less to clear for every head parsed. */
static void request_clear(struct sl_http_request *r)
{
	memset(r, 0, offsetof(struct sl_http_request, headers));
	memset(&r->n_headers, 0,
	       sizeof(*r) - offsetof(struct sl_http_request, n_headers));
}

int sl_http_parse_request(const char *buf, size_t len, size_t max_head,
			  struct sl_http_request *ret, int *ret_status, const char **ret_why)
{
	static llhttp_settings_t settings;
	static bool settings_ready;
	struct sl_http_request *rp = ret;
	struct ctx c = { .req = ret };
	llhttp_t parser;
	llhttp_errno_t e;
	size_t i, scan, lead;
	int k;

	if (!settings_ready) {
		llhttp_settings_init(&settings);
		settings.on_method = on_method;
		settings.on_url = on_url;
		settings.on_header_field = on_header_field;
		settings.on_header_value = on_header_value;
		settings.on_header_value_complete = on_header_value_complete;
		settings.on_headers_complete = on_headers_complete;
		settings_ready = true;
	}

	/* Bare LF, NUL and obs-fold are framing that servers disagree on:
	 * refuse them in the head before llhttp (which accepts some) sees it. */
	scan = len < max_head + 4 ? len : max_head + 4;
	/* Empty lines before the request line (which llhttp skips) are no
	 * end of the head: the scan runs on to the head's own end. */
	for (lead = 0; lead < scan && (buf[lead] == '\r' || buf[lead] == '\n'); lead++)
		;
	for (i = 0; i < scan; i++) {
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return refuse(400, "bare LF in request head", ret_status, ret_why);
		if (buf[i] == '\0')
			return refuse(400, "NUL in request head", ret_status, ret_why);
		if (buf[i] == '\n' && i + 1 < len && (buf[i + 1] == ' ' || buf[i + 1] == '\t'))
			return refuse(400, "obsolete line folding in request head", ret_status,
				      ret_why);
		if (i >= lead + 3 && !memcmp(buf + i - 3, "\r\n\r\n", 4))
			break;
	}

	request_clear(rp);
	llhttp_init(&parser, HTTP_REQUEST, &settings);
	parser.data = &c;
	e = llhttp_execute(&parser, buf, len < max_head + 1 ? len : max_head + 1);

	if (e == HPE_OK) {
		if (len > max_head)
			return refuse(431, "request head too large", ret_status, ret_why);
		return 0;
	}
	if (e != HPE_PAUSED) {
		if (c.too_many)
			return refuse(431, "too many header fields", ret_status, ret_why);
		return refuse(400, llhttp_get_error_reason(&parser), ret_status, ret_why);
	}

	rp->head_len = (size_t)(llhttp_get_error_pos(&parser) - buf);
	if (rp->head_len > max_head)
		return refuse(431, "request head too large", ret_status, ret_why);
	if (llhttp_get_http_major(&parser) != 1)
		return refuse(400, "not HTTP/1.x", ret_status, ret_why);
	rp->version_minor = llhttp_get_http_minor(&parser);
	rp->keep_alive = llhttp_should_keep_alive(&parser);
	k = check_framing(rp, ret_status, ret_why);
	if (k < 0)
		return k;
	return (int)rp->head_len;
}

int sl_http_parse_url(const struct sl_http_span *target, struct sl_http_url *ret,
		      const char **ret_why)
{
	const char *p = target->p, *end = target->p + target->len, *auth, *auth_end;
	struct sl_http_url u = { .port = 80 };
	const char *why;
	size_t hl;

	if (target->len < 7 || strncasecmp(p, "http://", 7) != 0) {
		*ret_why = target->len >= 8 && !strncasecmp(p, "https://", 8)
				   ? "https:// through the proxy needs CONNECT"
				   : "the target must be an absolute http:// URL";
		return -EINVAL;
	}
	auth = p + 7;
	for (auth_end = auth; auth_end < end && *auth_end != '/' && *auth_end != '?'; auth_end++)
		if (*auth_end == '@' || *auth_end == '#' || *auth_end == '\\') {
			*ret_why = "userinfo, '#' or '\\' in the URL's authority";
			return -EINVAL;
		}
	if (sl_host_split(auth, (size_t)(auth_end - auth), &u.host.p, &hl, &u.port, &why) < 0) {
		*ret_why = why;
		return -EINVAL;
	}
	u.host.len = hl;
	if (u.port == 0)
		u.port = 80;
	if (auth_end == end) {
		u.path.p = "/";
		u.path.len = 1;
	} else if (*auth_end == '?') {
		/* "http://h?q" means "/?q"; keep it simple and exact: refuse. */
		*ret_why = "a query without a path";
		return -EINVAL;
	} else {
		u.path.p = auth_end;
		u.path.len = (size_t)(end - auth_end);
	}
	*ret = u;
	return 0;
}

/* ---- body framing ---- */

/* A chunked request body, byte by byte (RFC 9112 7.1, the strict subset:
 * what every origin reads the same way). */
enum {
	B_SIZE,	   /* hex digits of a chunk size */
	B_SIZE_LF, /* the size line's CR seen */
	B_DATA,	   /* a chunk's bytes */
	B_DATA_CR, /* after them, CRLF */
	B_DATA_LF,
	B_END_CR, /* after the last chunk ("0"), the final CRLF: no trailers */
	B_END_LF,
};

int sl_http_body_init(struct sl_http_body *b, const char *head, size_t head_len)
{
	struct sl_http_request r;
	const char *why = NULL;
	int status = 0;

	memset(b, 0, sizeof(*b));
	if (sl_http_parse_request(head, head_len, head_len, &r, &status, &why) != (int)head_len) {
		b->failed = true;
		b->why = why ? why : "bad request head";
		return -EINVAL;
	}
	sl_http_body_init_request(b, &r);
	return 0;
}

void sl_http_body_init_request(struct sl_http_body *b, const struct sl_http_request *r)
{
	memset(b, 0, sizeof(*b));
	b->chunked = r->chunked;
	b->st = B_SIZE;
	b->left = r->has_length ? r->content_length : 0;
	/* Neither: a request without a body (RFC 9112 6.3). */
	b->done = !r->chunked && b->left == 0;
}

static ssize_t body_fail(struct sl_http_body *b, const char *why)
{
	b->failed = true;
	b->why = why;
	return -EINVAL;
}

static ssize_t put_out(char *out, size_t cap, size_t *at, const char *p, size_t n)
{
	if (n > cap - *at)
		return -ENOBUFS;
	memcpy(out + *at, p, n);
	*at += n;
	return 0;
}

/* A stretch of chunk data, framed as a chunk of our own. */
static ssize_t put_chunk(char *out, size_t cap, size_t *at, const char *p, size_t n)
{
	char line[24];
	int k = snprintf(line, sizeof(line), "%zx\r\n", n);

	if (put_out(out, cap, at, line, (size_t)k) < 0 || put_out(out, cap, at, p, n) < 0 ||
	    put_out(out, cap, at, "\r\n", 2) < 0)
		return -ENOBUFS;
	return 0;
}

/* One byte of a chunk size line (B_SIZE): 0 once it is taken, or the
 * failure. */
static ssize_t size_byte(struct sl_http_body *b, unsigned char c)
{
	int h = sl_hexval(c);

	if (h >= 0) {
		/* 16 digits hold any size; more only hide one. */
		if (++b->digits > 16)
			return body_fail(b, "a chunk size longer than 16 digits");
		b->left = (b->left << 4) | (uint64_t)h;
		return 0;
	}
	if (c == '\r' && b->digits) {
		b->st = B_SIZE_LF;
		return 0;
	}
	if (c == ';')
		return body_fail(b, "chunk extensions are refused in a request body");
	if (c == ' ' || c == '\t')
		return body_fail(b, "whitespace in a chunk size line");
	if (c == '\n')
		return body_fail(b, "a bare LF in a chunk size line");
	return body_fail(b, "an invalid character in a chunk size");
}

/* One byte of the line ends around chunk data, and of the last chunk's
 * (every state but B_SIZE and B_DATA): 0 once it is taken, or the
 * failure. The end of the body puts our own last chunk in out. */
static ssize_t line_end_byte(struct sl_http_body *b, unsigned char c, char *out, size_t out_cap,
			     size_t *at)
{
	switch (b->st) {
	case B_SIZE_LF:
		if (c != '\n')
			return body_fail(b, "a bare CR in a chunk size line");
		b->digits = 0;
		b->st = b->left ? B_DATA : B_END_CR;
		break;
	case B_DATA_CR:
	case B_DATA_LF:
		if (c != (b->st == B_DATA_CR ? '\r' : '\n'))
			return body_fail(b, "chunk data not followed by CRLF");
		b->st = b->st == B_DATA_CR ? B_DATA_LF : B_SIZE;
		break;
	case B_END_CR:
		if (c != '\r')
			return body_fail(b, is_tchar(c) ? "trailer fields are refused in a request body"
							: "a chunked body not ended by CRLF");
		b->st = B_END_LF;
		break;
	case B_END_LF:
		if (c != '\n')
			return body_fail(b, "a chunked body not ended by CRLF");
		if (put_out(out, out_cap, at, "0\r\n\r\n", 5) < 0)
			return body_fail(b, "no room for the body");
		b->done = true;
		break;
	}
	return 0;
}

static ssize_t feed_chunked(struct sl_http_body *b, const char *data, size_t len, char *out,
			    size_t out_cap, size_t *ret_out_len)
{
	size_t i = 0, o = 0;

	while (i < len && !b->done) {
		unsigned char c = (unsigned char)data[i];
		ssize_t r;

		if (b->st == B_DATA) {
			size_t n = len - i < b->left ? len - i : (size_t)b->left;

			if (put_chunk(out, out_cap, &o, data + i, n) < 0)
				return body_fail(b, "no room for the body");
			i += n;
			b->left -= n;
			if (b->left == 0)
				b->st = B_DATA_CR;
			continue;
		}
		/* Every other state takes one byte at a time. */
		r = b->st == B_SIZE ? size_byte(b, c) : line_end_byte(b, c, out, out_cap, &o);
		if (r < 0)
			return r;
		i++;
	}
	*ret_out_len = o;
	return (ssize_t)i;
}

ssize_t sl_http_body_feed(struct sl_http_body *b, const char *data, size_t len, char *out,
			  size_t out_cap, size_t *ret_out_len)
{
	size_t o = 0;

	*ret_out_len = 0;
	if (b->failed)
		return -EINVAL;
	if (b->done || len == 0)
		return 0;
	if (!b->chunked) {
		size_t n = b->left < len ? (size_t)b->left : len;

		if (put_out(out, out_cap, &o, data, n) < 0)
			return body_fail(b, "no room for the body");
		b->left -= n;
		b->done = b->left == 0;
		*ret_out_len = o;
		return (ssize_t)n;
	}
	return feed_chunked(b, data, len, out, out_cap, ret_out_len);
}

bool sl_http_body_is_done(const struct sl_http_body *b)
{
	return b->done;
}

void sl_http_body_done(struct sl_http_body *b)
{
	/* Nothing allocated; nothing to release. */
	(void)b;
}

/* ---- responses ---- */

struct resp_ctx {
	struct ctx hdr; /* header spans, as for requests */
	struct sl_http_response *r;
	bool head_request;
};

static int resp_headers_complete(llhttp_t *p)
{
	struct resp_ctx *rc = p->data;
	int status = llhttp_get_status_code(p);
	bool no_body = rc->head_request || status == 204 || status == 304 ||
		       (status >= 100 && status < 200);

	rc->r->status = status;
	rc->r->self_delimited = no_body || !llhttp_message_needs_eof(p);
	rc->r->chunked = !no_body && (p->flags & F_CHUNKED);
	rc->r->no_body = no_body;
	/* HTTP/1.1 without "Connection: close", framed by itself. */
	rc->hdr.req->keep_alive = llhttp_should_keep_alive(p);
	/* 1: this message has no body, whatever its headers say. */
	return no_body ? 1 : 0;
}

static int resp_message_complete(llhttp_t *p)
{
	struct resp_ctx *rc = p->data;

	rc->r->done = true;
	return HPE_PAUSED;
}

static int body_only_data(llhttp_t *p, const char *at, size_t len)
{
	struct sl_http_response *r = p->data;

	if (r->on_data && r->on_data(r->userdata, at, len) < 0) {
		r->sink_failed = true;
		return -1;
	}
	return 0;
}

static int body_only_complete(llhttp_t *p)
{
	struct sl_http_response *r = p->data;

	r->done = true;
	return HPE_PAUSED;
}

int sl_http_response_begin(struct sl_http_response *r, const char *buf, size_t len, size_t max,
			   bool head_request, struct sl_http_request *ret_hdrs)
{
	static llhttp_settings_t head_settings, body_settings_r;
	static bool ready;
	llhttp_t *p = (llhttp_t *)(void *)r->parser;
	struct resp_ctx rc;
	const char *end;
	size_t head_len;
	llhttp_errno_t e;

	if (!ready) {
		llhttp_settings_init(&head_settings);
		head_settings.on_header_field = on_header_field;
		head_settings.on_header_value = on_header_value;
		head_settings.on_header_value_complete = on_header_value_complete;
		head_settings.on_headers_complete = resp_headers_complete;
		head_settings.on_message_complete = resp_message_complete;
		llhttp_settings_init(&body_settings_r);
		body_settings_r.on_message_complete = body_only_complete;
		body_settings_r.on_body = body_only_data;
		ready = true;
	}
	end = memmem(buf, len < max ? len : max, "\r\n\r\n", 4);
	if (!end)
		return len >= max ? -EINVAL : 0;
	head_len = (size_t)(end - buf) + 4;
	/* A bare LF ends the head early for llhttp (at "\r\n\n"), so the
	 * bytes up to the "\r\n\r\n" found above would belong to no framing;
	 * a NUL is framing servers disagree on too. Both are refused, as in a
	 * request's head. */
	for (size_t i = 0; i < head_len; i++)
		if ((buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) || buf[i] == '\0') {
			memset(r, 0, sizeof(*r));
			r->failed = true;
			return -EINVAL;
		}

	memset(r, 0, sizeof(*r));
	request_clear(ret_hdrs);
	memset(&rc, 0, sizeof(rc));
	rc.hdr.req = ret_hdrs;
	rc.r = r;
	rc.head_request = head_request;
	llhttp_init(p, HTTP_RESPONSE, &head_settings);
	p->data = &rc;
	e = llhttp_execute(p, buf, head_len);
	if (e != HPE_OK && !(e == HPE_PAUSED && r->done)) {
		r->failed = true;
		return -EINVAL;
	}
	if (llhttp_get_http_major(p) != 1) {
		r->failed = true;
		return -EINVAL;
	}
	ret_hdrs->head_len = head_len;
	/* The body is parsed with settings that need no context but r. */
	p->settings = &body_settings_r;
	p->data = r;
	return (int)head_len;
}

ssize_t sl_http_response_feed(struct sl_http_response *r, const char *data, size_t len)
{
	llhttp_t *p = (llhttp_t *)(void *)r->parser;
	llhttp_errno_t e;

	if (r->failed)
		return -EINVAL;
	if (r->done || len == 0)
		return 0;
	e = llhttp_execute(p, data, len);
	if (e == HPE_OK)
		return (ssize_t)len;
	if (e == HPE_PAUSED && r->done)
		return (ssize_t)(llhttp_get_error_pos(p) - data);
	r->failed = true;
	return -EINVAL;
}

bool sl_http_auth_binds_connection(const struct sl_http_request *r, const char *name)
{
	/* Any word, not only the first: a challenge may list several schemes
	 * ("Basic realm=x, NTLM"). */
	return sl_http_header_has_token(r, name, "NTLM", 4) ||
	       sl_http_header_has_token(r, name, "Negotiate", 9);
}

size_t sl_http_put_header(char *out, const struct sl_http_header *h)
{
	memcpy(out, h->name.p, h->name.len);
	memcpy(out + h->name.len, ": ", 2);
	memcpy(out + h->name.len + 2, h->value.p, h->value.len);
	memcpy(out + h->name.len + 2 + h->value.len, "\r\n", 2);
	return h->name.len + h->value.len + 4;
}
