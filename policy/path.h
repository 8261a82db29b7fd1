/* SPDX-License-Identifier: MIT */
/*
 * Request paths as the policy compares them.
 *
 * A path rule is only as good as its agreement with the origin about what a
 * path means. sl_path_normalize() brings a request target to one spelling
 * before it is compared, and refuses the spellings on which servers disagree,
 * so that neither an allow rule nor a deny rule can be walked around:
 *
 *   - the query is cut off (rules match the path alone); a '#' is refused;
 *   - percent-escapes of printable ASCII are decoded, as servers do before
 *     they route ("/%61dmin" is "/admin", "%3A" is ":"), except those of
 *     '%', '?', '#', ';' and space, which keep their escape with upper-case
 *     hex digits;
 *   - runs of '/' collapse to one, as most servers and frameworks do;
 *   - dot segments ("." and "..", also "%2e%2e", "..;param" and
 *     "..%3Bparam"), encoded '/'
 *     and '\', backslashes, control and non-ASCII bytes are refused outright:
 *     servers resolve them differently, so no answer of ours would be safe.
 *
 * Matching is case-sensitive, as RFC 3986 says paths are.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Longest path we compare, with its NUL; a longer one is refused. */
#define SL_PATH_BUF 8192

/*
 * Normalise the request target in[0..len) into ret_path (retsz bytes).
 * Returns the normal form's length, or -EINVAL with *ret_why set.
 */
int sl_path_normalize(const char *in, size_t len, char *ret_path, size_t retsz,
		      const char **ret_why);

/*
 * Parse a policy path pattern: a path, optionally ending in '*', which then
 * matches every path that starts with what precedes it. On success ret_path
 * holds the normal form without '*' and *ret_prefix says whether it had one.
 */
int sl_path_pattern_parse(const char *in, size_t len, char *ret_path, size_t retsz,
			  bool *ret_prefix, const char **ret_why);

/*
 * Remove ";params" from every segment of a normal-form path, as Servlet
 * containers (Tomcat, Jetty, Spring) do before they route: "/admin;x=1/u" is
 * "/admin/u" to them. An escaped ';' ("%3B") starts a parameter too, for
 * servers that decode before they strip. Returns the length written into
 * ret_path.
 */
size_t sl_path_strip_params(const char *path, char *ret_path, size_t retsz);

/* Does the normal-form path match an allow rule's pattern? Exact and
 * case-sensitive: an allow rule only ever allows less by being strict. */
bool sl_path_match(const char *pattern, bool prefix, const char *path);

/*
 * Does the normal-form path match a deny rule's pattern? Generous, because a
 * deny rule must cover every spelling some server routes to the same place:
 * ASCII case is ignored (Express, ASP.NET and IIS route without it), one
 * trailing '/' is ignored ("/export/" is "/export" to Express and older
 * Spring), and "/admin/" + '*' also covers "/admin".
 */
bool sl_path_match_deny(const char *pattern, bool prefix, const char *path);
