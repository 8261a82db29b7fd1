/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn-headers.h"
#include "conn-internal.h"
#include "macro.h"
#include "reqhead.h"

void conn_policy_refresh(struct conn *c)
{
	struct sl_gw_policy *old = c->pol;

	if (old == c->gw->policy)
		return;
	/* Nothing may point into the old policy once it is let go. */
	c->dec.rule = NULL;
	c->dec.observed_rule = NULL;
	c->credential = NULL;
	c->pol = sl_gw_policy_ref(c->gw->policy);
	sl_gw_policy_unref(old);
}

int conn_plain_head_check(struct conn *c)
{
	struct sl_http_request r;
	const char *why = NULL, *refused;
	char *target, msg[512];
	int st = 0;

	if (sl_http_parse_request(c->buf, c->len, c->gw->cfg.max_header_bytes, &r, &st, &why) <=
	    0) {
		conn_respond_error(c, 400, "bad-request", "request head could not be forwarded");
		return -1;
	}
	/* As inside an inspected connection (inspect-request.c); nothing is
	 * injected over plain HTTP, so no placeholder is asked for. */
	refused = sl_reqhead_refusal(&r, &c->dec, c->pol->p, NULL, &st, msg, sizeof(msg));
	if (refused) {
		conn_respond_error(c, st, refused, msg);
		return -1;
	}
	if (c->dec.path_checked) {
		/* The origin gets the path that was decided, not another
		 * spelling of it that it might route elsewhere. */
		if (sl_reqhead_forward_target(c->path, strlen(c->path), &target, &why) < 0) {
			conn_respond_error(c, 400, "invalid-path", why ? why : "out of memory");
			return -1;
		}
		free(c->path);
		c->path = target;
	}
	return 0;
}

bool conn_http_hop_by_hop(const struct sl_http_request *r, const struct sl_http_span *name)
{
	/* With their lengths: this runs for every header of every message. */
#define W(s) {s, sizeof(s) - 1}
	static const struct {
		const char *s;
		size_t n;
	} always[] = {W("connection"),		W("keep-alive"), W("proxy-connection"),
		      W("proxy-authorization"), W("proxy-authenticate"), W("te"),
		      W("upgrade"),		W("trailer")};
#undef W
	size_t i;

	for (i = 0; i < ELEMENTSOF(always); i++)
		if (name->len == always[i].n && strncasecmp(name->p, always[i].s, name->len) == 0)
			return true;
	/* Headers the client listed in Connection are hop-by-hop too; never
	 * those that frame or route a message (a request naming them is
	 * refused; a response is framed as its origin framed it). */
	if (sl_http_span_caseeq(name, "content-length") ||
	    sl_http_span_caseeq(name, "transfer-encoding") || sl_http_span_caseeq(name, "host"))
		return false;
	return sl_http_header_has_token(r, "connection", name->p, name->len);
}
