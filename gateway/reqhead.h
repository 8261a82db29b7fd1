/* SPDX-License-Identifier: MIT */
/*
 * What a request head may carry past a decision: method overrides,
 * credential headers on a host whose rule injects one, and the target the
 * origin is sent. Pure functions of the parsed head (http.h) and the rule,
 * shared by plain HTTP (conn.c) and inspected requests (inspect-request.c).
 *
 * Header names are compared as servers may read them: ASCII case ignored,
 * and every byte that is no letter or digit read as '-' (CGI, WSGI, Rack
 * and PHP turn '_' and '-' into the same HTTP_X_API_KEY variable, and
 * lighttpd's CGI, FastCGI and SCGI any other byte too), so "X_Api_Key"
 * and "X.Api.Key" are "x-api-key" to them. "case and '_' folded" below
 * means all of that.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "http.h"
#include "policy.h"

/* Is name, case and '_' folded, the lower-case lit? */
bool sl_reqhead_name_is(const struct sl_http_span *name, const char *lit);

/*
 * Does a header of this name carry a credential, one the origin might
 * authenticate the request with instead of the one injected? True for
 * Cookie, for every name holding "auth", "token", "api-key", "apikey",
 * "secret", "password", "credential", "subscription-key" or "access-key"
 * (Authorization, Proxy-Authorization, x-api-key, api-key, x-goog-api-key,
 * X-Auth-Token, Private-Token, Ocp-Apim-Subscription-Key, ...), and for
 * inject_header itself (when not NULL), all case and '_' folded.
 */
bool sl_reqhead_is_credential(const struct sl_http_span *name, const char *inject_header);

/* Does the head hold X-HTTP-Method-Override, X-HTTP-Method or
 * X-Method-Override (case and '_' folded), which many frameworks obey in
 * place of the request line's method, or does its query hold a "_method"
 * parameter (Symfony and Laravel obey it on a POST; escapes decoded, case
 * ignored, and a leading '.', ' ' or '[' read as '_', as PHP does)? */
bool sl_reqhead_has_method_override(const struct sl_http_request *r);

/* The first header (case and '_' folded) that frameworks read as the
 * request's path in place of the request line's: X-Original-URL or
 * X-Rewrite-URL (IIS's rewrite module sets them, and Zend Framework 1 and
 * older Symfony and Laminas route by them), or NULL. */
const struct sl_http_header *sl_reqhead_path_override(const struct sl_http_request *r);

/*
 * On a host whose rule injects: the first credential header spelled with
 * '_' or another byte that is no letter, digit or '-' (which some servers
 * fold to '-', and others drop: no answer of ours would be safe), or NULL. Other credential headers are dropped instead.
 */
const struct sl_http_header *sl_reqhead_underscore_credential(const struct sl_http_request *r,
							      const char *inject_header);

/*
 * On a host where some rule injects (sl_decision.host_injects): a header
 * the agent may not send, a credential header as above, or the header any
 * inject rule of policy p sets (whichever rule decides the request).
 */
bool sl_reqhead_is_host_credential(const struct sl_policy *p, const struct sl_http_span *name);

/* The same as sl_reqhead_underscore_credential(), for those headers. */
const struct sl_http_header *sl_reqhead_underscore_host_credential(const struct sl_http_request *r,
								   const struct sl_policy *p);

/* With require_placeholder: does the head hold inj->header exactly once,
 * its value inj->prefix (case ignored) followed by SL_PLACEHOLDER? */
bool sl_reqhead_placeholder_ok(const struct sl_http_request *r, const struct sl_inject *inj);

/*
 * Why a decided request's head may not go on, the same on every path
 * (plain HTTP, HTTP in a tunnel, inspected): a body on a GET or HEAD (some
 * origins read none after them: its bytes would be a request nobody
 * decided, on a connection kept); a method override where a rule for the
 * host names methods (d->methods_named); on a host where a rule injects
 * (d->host_injects), a credential header spelled with '_', and, when inj
 * (the credential this request gets; NULL: none) requires it, a missing
 * placeholder. NULL when it may go on; else the audit record's reason,
 * with *ret_status and a one-line message for the client in msg.
 */
const char *sl_reqhead_refusal(const struct sl_http_request *r, const struct sl_decision *d,
			       const struct sl_policy *p, const struct sl_inject *inj,
			       int *ret_status, char *msg, size_t msglen);

/*
 * The target to forward for a request whose path the decision compared
 * (sl_decision.path_checked): the normal form of target[0..len)'s path
 * (path.h), and its query as it came. *ret is malloc'd. Returns 0, or
 * -EINVAL with *ret_why set (the path has no normal form), or -ENOMEM.
 */
int sl_reqhead_forward_target(const char *target, size_t len, char **ret, const char **ret_why);
