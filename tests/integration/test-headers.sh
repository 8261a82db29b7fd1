#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a request head may carry past the gateway's decision (issue #10):
# method overrides on every path, the path forwarded as it was decided,
# the agent's own credential headers on a host whose rule injects one,
# require_placeholder, Accept-Encoding where responses are scrubbed, an
# audit record for a refusal after the first request on an inspected
# connection, and a reload reaching connections that are already open.
# Raw requests (lib/hdrclient.py) through `sluice gateway --ca-dir`; the
# origin (lib/origin.py) logs every request it served, and /echo-headers
# answers with the header lines that reached it. Run it with an ASan+UBSan
# build as well: the gateway's stderr is checked for a report at exit.
# About 10 s.
#
# Usage: test-headers.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-headers.sh ip nft nsenter python3 dnsmasq openssl ss

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR

make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
mkdir -m 700 "$T/ca"
ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	world_services api.test="$N" req.test="$N" scrub.test="$N" plain.test="$N" \
	denym.test="$N" free.test="$N" || { echo "not ok - services"; exit 1; }

policy() { # policy FILE API-PATHS API-INJECT PLAIN-PATHS
	write_policy "$1" <<P
version: 1
secrets:
  anthropic: { file: $T/secrets/anthropic.key }
allow:
  - host: api.test
    methods: [GET, POST]
    paths: [$2]
$3
  - host: api.test
    methods: [GET]
    paths: ["/echo-headers-chunked"]
  - host: req.test
    inject: { header: x-api-key, secret: anthropic, require_placeholder: true }
  - host: scrub.test
    methods: [GET]
  - host: plain.test
    methods: [GET]
    paths: [$4]
  - host: denym.test
  - host: free.test
deny:
  - host: denym.test
    methods: [DELETE]
P
}
INJ="    inject: { header: x-api-key, secret: anthropic }"
policy "$T/policy.yaml" '"/echo-headers", "/v1/*"' "$INJ" '"/echo-headers", "/v1/*"'
# After the reload: api.test keeps /echo-headers only, and injects nothing;
# plain.test loses /v1/*.
policy "$T/policy2.yaml" '"/echo-headers"' "" '"/echo-headers"'

. "$here/lib/hdrclient.sh"
hdr_gateway_up || exit 1

# Records are written as exchanges end: wait (bounded) for one.
wait_audit() {
	for _ in $(seq 50); do [ "$(audit_count "$@")" -gt 0 ] && return 0; sleep 0.05; done
	return 1
}

# ---- method overrides: refused wherever a rule for the host names methods ----
out=$(tls api.test "POST /v1/ov1 HTTP/1.1\\r\\nHost: api.test\\r\\nX-HTTP-Method-Override: DELETE\\r\\nContent-Length: 0\\r\\n\\r\\n")
check "inspected: POST with X-HTTP-Method-Override is refused (400)" "HTTP 400" "$(status "$out")"
out=$(tls api.test "$(get api.test /v1/ov2 'X_HTTP_METHOD_OVERRIDE: DELETE\r\n')")
check "inspected: the same header spelled with '_' is refused (400)" "HTTP 400" "$(status "$out")"
out=$(plain "$(get plain.test http://plain.test/v1/ov3 'X-Method-Override: POST\r\n')")
check "plain HTTP: X-Method-Override is refused where the allow rule names methods (400)" "HTTP 400" "$(status "$out")"
out=$(plain "$(get denym.test http://denym.test/ov4 'X-HTTP-Method: DELETE\r\n')")
check "plain HTTP: X-HTTP-Method is refused where only a deny rule names methods (400)" "HTTP 400" "$(status "$out")"
out=$(tls denym.test "$(get denym.test /ov6 'X-HTTP-Method-Override: DELETE\r\n')")
check "inspected: the same where only a deny rule names methods (400)" "HTTP 400" "$(status "$out")"
check "... none of the five reached the origin" "0 0 0 0 0" \
	"$(served POST /v1/ov1) $(served GET /v1/ov2) $(served GET /v1/ov3) $(served GET /ov4) $(served GET /ov6)"
wait_audit '"path":"/ov6"' '"reason":"method-override"'
check "... each has an audit record, reason method-override" "5" \
	"$(audit_count '"reason":"method-override"' '"decision":"deny"')"
out=$(plain "$(get free.test http://free.test/ov5 'X-HTTP-Method-Override: DELETE\r\n')")
check "plain HTTP: where no rule names methods, the header passes (200)" "HTTP 200 1" \
	"$(status "$out") $(served GET /ov5)"

# ---- the path the origin gets is the path that was decided ----
out=$(tls api.test "$(get api.test '/v1//p1?a=b//c')")
check "inspected: /v1//p1 is decided as /v1/p1, and /v1/p1 is what the origin gets (query as sent)" \
	"HTTP 200 1 0" "$(status "$out") $(served GET '/v1/p1?a=b//c') $(served GET '/v1//p1?a=b//c')"
out=$(plain "$(get plain.test 'http://plain.test/v1///%70%32')")
check "plain HTTP: /v1///%70%32 reaches the origin as /v1/p2" "HTTP 200 1" \
	"$(status "$out") $(served GET /v1/p2)"
# (Not a leading "//": the origin's http.server collapses that itself.)
out=$(plain "$(get free.test 'http://free.test/raw//p3')")
check "plain HTTP: where no rule names paths, the path goes as sent" "HTTP 200 1" \
	"$(status "$out") $(served GET /raw//p3)"
out=$(tls api.test "$(get api.test '/v1/..%3B/echo-headers')")
check "inspected: /v1/..%3B/ (a dot segment to a server that decodes, then strips ';') is refused (403)" \
	"HTTP 403 0" "$(status "$out") $(grep -c '%3B' "$T/origin.log")"

# ---- the agent's own credentials, on a host whose rule injects one ----
swap='Authorization: Bearer agent-own-1\r\nX-API-KEY: agent-own-2\r\nx-goog-api-key: agent-own-3\r\napi-key: agent-own-4\r\nCookie: s=agent-own-5\r\nX-Auth-Token: agent-own-6\r\nOcp-Apim-Subscription-Key: agent-own-7\r\nIdempotency-Key: keep-me\r\n'
out=$(tls api.test "$(get api.test '/echo-headers?swap=1' "$swap")")
check "inspected: a request carrying the agent's own keys is answered" "HTTP 200" "$(status "$out")"
check "... none of the agent's 7 credential headers reached the origin" "0" "$(grep -c 'agent-own' <<<"$out")"
check "... one x-api-key did, the injected one (the origin saw the real key)" "1 1" \
	"$(grep -ci '^x-api-key:' <<<"$out") $(grep -c '^GET /echo-headers?swap=1 host=api.test auth=real$' "$T/origin.log")"
check_has "... other headers go on (Idempotency-Key)" "Idempotency-Key: keep-me" "$out"
out=$(tls api.test "$(get api.test /echo-headers-chunked 'Authorization: Bearer agent-own-8\r\n')")
check "inspected: the same where the rule that allows the request injects nothing, but another for the host does" \
	"HTTP 200 0 0" "$(status "$out") $(grep -c 'agent-own' <<<"$out") $(grep -ci '^x-api-key:' <<<"$out")"
out=$(tls api.test "$(get api.test '/echo-headers?swap=2' 'X_Api_Key: agent-own\r\n')")
check "inspected: a credential header spelled with '_' is refused (400), not passed" "HTTP 400 0" \
	"$(status "$out") $(served GET '/echo-headers?swap=2')"
wait_audit '"reason":"credential-header"'
check "... audited, reason credential-header" "1" "$(audit_count '"reason":"credential-header"')"

# require_placeholder: the header must hold the sandbox's placeholder.
out=$(tls req.test "$(get req.test '/echo-headers?ph=1')")
check "require_placeholder: a request without the placeholder is refused (403)" "HTTP 403" "$(status "$out")"
out=$(tls req.test "$(get req.test '/echo-headers?ph=2' 'x-api-key: sk-agent-own\r\n')")
check "require_placeholder: a request with another key is refused (403)" "HTTP 403" "$(status "$out")"
check "... neither reached the origin" "0 0" "$(served GET '/echo-headers?ph=1') $(served GET '/echo-headers?ph=2')"
out=$(tls req.test "$(get req.test '/echo-headers?ph=3' 'x-api-key: sluice-placeholder-the-gateway-injects-the-key\r\n')")
check "require_placeholder: with the placeholder, the request goes with the real key" "HTTP 200 1" \
	"$(status "$out") $(grep -c '^GET /echo-headers?ph=3 host=req.test auth=real$' "$T/origin.log")"
wait_audit '"reason":"placeholder-missing"'
check "... the two refusals are audited, reason placeholder-missing" "2" \
	"$(audit_count '"reason":"placeholder-missing"' '"host":"req.test"')"
check_has "sluice check shows require_placeholder" "require_placeholder" \
	"$("$SLUICE" check "$T/policy.yaml" 2>&1)"

# ---- Accept-Encoding where responses are scrubbed ----
# Not named in Connection: only the gateway's rewrite can take it out.
out=$(tls scrub.test "$(get scrub.test /echo-headers 'Accept-Encoding: gzip, br\r\n')")
check "scrubbed host: the client's Accept-Encoding: gzip, br does not reach the origin; identity does" \
	"HTTP 200 0 1" "$(status "$out") $(grep -ci 'gzip' <<<"$out") $(grep -ci '^accept-encoding: identity$' <<<"$out")"

# ---- a refusal after the first request on an inspected connection is audited ----
smuggle='GET /v1/s2 HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
n0=$(audit_count '"host":"api.test"' '"status":400' '"reason":"bad-request"')
out=$(tls api.test "$(get api.test /v1/s1)" "$smuggle")
check "inspected: the second request, a CL+TE smuggling attempt, is refused (400)" "HTTP 200|HTTP 400" \
	"$(grep '^HTTP' <<<"$out" | paste -sd '|')"
wait_audit '"host":"api.test"' '"status":400' '"reason":"bad-request"'
check "... and audited, naming the host" "$((n0 + 1))" \
	"$(audit_count '"host":"api.test"' '"status":400' '"reason":"bad-request"')"
check "... it never reached the origin" "0" "$(served GET /v1/s2)"
tls api.test "$(get api.test /v1/s3)" '@partial:GET /v1/s4 HTTP/1.1\r\nHost: api.test\r\n' >/dev/null
wait_audit '"host":"api.test"' '"reason":"incomplete-request"'
check "inspected: a second head cut short has a record of its own" "1" \
	"$(audit_count '"host":"api.test"' '"reason":"incomplete-request"')"

# ---- a reload reaches connections that are already open ----
# One inspected and one plain connection, a request on each, a reload
# (the policy revokes api.test's inject and /v1/*, and plain.test's /v1/*),
# then the next requests on the same connections.
tls api.test "$(get api.test '/echo-headers?r=1')" \
	"@reload:$T/policy2.yaml:$T/policy.yaml:$GW:$T/gw.err" \
	"$(get api.test '/echo-headers?r=2')" "$(get api.test /v1/r3)" >"$T/reload.out"
check "inspected, before the reload: the key goes" "1" \
	"$(grep -c '^GET /echo-headers?r=1 host=api.test auth=real$' "$T/origin.log")"
check "... after it, on the same connection: the revoked inject is not applied (no x-api-key at the origin)" \
	"1 0" "$(grep -c '^GET /echo-headers?r=2 host=api.test auth=none$' "$T/origin.log") $(sed -n '/^reloaded$/,$p' "$T/reload.out" | grep -ci '^x-api-key:')"
check "... and the revoked path is refused (403), audited" "HTTP 200|HTTP 200|HTTP 403 0 1" \
	"$(grep '^HTTP' "$T/reload.out" | paste -sd '|') $(served GET /v1/r3) $(wait_audit '"path":"/v1/r3"' '"reason":"path"' && audit_count '"path":"/v1/r3"' '"reason":"path"')"
# The same for a kept-alive plain connection (a reload cannot give the
# inject back: a third policy revokes plain.test's /echo-headers).
policy "$T/policy3.yaml" '"/echo-headers"' "" '"/nothing"'
plain "$(get plain.test 'http://plain.test/echo-headers?k=1')" \
	"@reload:$T/policy3.yaml:$T/policy.yaml:$GW:$T/gw.err" \
	"$(get plain.test 'http://plain.test/echo-headers?k=2')" >"$T/reload2.out"
check "plain kept-alive: allowed before the reload, the revoked path refused after it (403)" \
	"HTTP 200|HTTP 403 1 0" "$(grep '^HTTP' "$T/reload2.out" | paste -sd '|') $(served GET '/echo-headers?k=1') $(served GET '/echo-headers?k=2')"

hdr_gateway_down
finish
