#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An adversarial review of issue #10's merged work (headers, dns, ssrf):
# attacks an agent inside the sandbox could make on what was merged, each
# passing when the attack fails and the evidence (the origin's log and its
# /echo-headers answer, the upstream resolver's log, the audit log) says
# so. Raw requests (lib/hdrclient.py) through `sluice gateway --ca-dir`:
# the agent's own key over plain HTTP to an inject host, another rule's
# inject header, odd header spellings and a second Host, "_method" in the
# query, one admitted name looked up again and again (TTL 0, failures),
# and addresses the kernel delivers to the gateway host without an
# interface listing them (a local route, 0.0.0.0, 127.0.0.2). About 4 s.
#
# Usage: test-review-attacks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-review-attacks.sh ip nft nsenter python3 dnsmasq openssl ss

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR

make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
mkdir -m 700 "$T/ca"
ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	world_services key.test="$N" anyip.test=198.51.100.7 meth.test="$N" wild.test="$N" fk.test="$N" kp.test="$N" || { echo "not ok - services"; exit 1; }

# key.test: the credential goes on 443; another rule lets port 80 through
# (for redirects, say), and injects nothing.
write_policy "$T/policy.yaml" <<P
version: 1
dns: { new_names_per_minute: 2 }
# Broad, as an operator reaching "everything internal" might write it:
# the host's own addresses must stay out even so.
private_addresses: [0.0.0.0/8, 127.0.0.0/8]
secrets:
  anthropic: { file: $T/secrets/anthropic.key }
allow:
  - host: key.test
    ports: [443]
    inject: { header: x-api-key, secret: anthropic }
  - host: key.test
    ports: [80]
  - host: anyip.test
  - host: 0.0.0.0
  - host: 127.0.0.2
  - host: meth.test
    methods: [GET, POST]
  - host: fk.test
    paths: ["/v1/*"]
    inject: { header: Fastly-Key, secret: anthropic }
  - host: fk.test
    paths: ["/echo-headers"]
  - host: kp.test
    ports: [8443]
    inject: { header: x-api-key, secret: anthropic }
  - host: kp.test
    ports: [443]
  - host: "*.wild.test"
  - host: "*.nx.test"
P

. "$here/lib/hdrclient.sh"
hdr_gateway_up || exit 1

# ---- plain HTTP on a host whose (other) rule injects ----
# The agent's own key, for an account it controls, must not reach the
# origin: not over TLS (test-headers.sh), and not in clear text either.
out=$(plain "$(get key.test 'http://key.test/echo-headers?p=1' 'Authorization: Bearer agent-own-1\r\nX-API-Key: agent-own-2\r\nCookie: s=agent-own-3\r\nIdempotency-Key: keep-me\r\n')")
check "plain HTTP on port 80 of an inject host: answered" "HTTP 200 1" \
	"$(status "$out") $(served GET '/echo-headers?p=1')"
check "... none of the agent's credential headers reached the origin in clear text" "0" \
	"$(grep -c 'agent-own' <<<"$out")"
check_has "... other headers go on (Idempotency-Key)" "Idempotency-Key: keep-me" "$out"
# The same inside a CONNECT tunnel to port 80 (its HTTP is decided, and
# re-framed, like plain HTTP to the proxy).
world_host timeout 20 "$PY" - >"$T/tun.out" 2>&1 <<'PY'
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT key.test:80 HTTP/1.1\r\nHost: key.test:80\r\n\r\n")
r = s.recv(4096)
s.sendall(b"GET /echo-headers?tun=1 HTTP/1.1\r\nHost: key.test\r\n"
          b"Authorization: Bearer agent-own-tun\r\nConnection: close\r\n\r\n")
while True:
    d = s.recv(65536)
    if not d:
        break
    r += d
print(r.decode("latin-1"))
PY
check "CONNECT key.test:80, then plain HTTP inside: answered, without the agent's key" "1 0" \
	"$(served GET '/echo-headers?tun=1') $(grep -c 'agent-own' "$T/tun.out")"
out=$(plain "$(get key.test 'http://key.test/echo-headers?p=2' 'X_Api_Key: agent-own-4\r\n')")
check "plain HTTP: a credential header spelled with '_' is refused (400), as inspected" "HTTP 400 0" \
	"$(status "$out") $(served GET '/echo-headers?p=2')"

# ---- an inject header that no part of the credential list names ----
# Fastly-Key holds neither "auth", "token" nor "api-key": on a path whose
# rule injects nothing, the agent's own went on to the origin.
out=$(tls fk.test "$(get fk.test '/echo-headers?fk=1' 'Fastly-Key: agent-own-fk\r\nFastly_Key: agent-own-fk2\r\n')")
check "inspected: another rule's inject header, spelled with '_', is refused (400)" "HTTP 400 0" \
	"$(status "$out") $(served GET '/echo-headers?fk=1')"
out=$(tls fk.test "$(get fk.test '/echo-headers?fk=2' 'Fastly-Key: agent-own-fk\r\n')")
check "inspected: another rule's inject header (Fastly-Key) does not reach the origin" "HTTP 200 0" \
	"$(status "$out") $(grep -c 'agent-own' <<<"$out")"

# ---- another port of an inject host ----
# kp.test injects on 8443; a second rule opens 443 and injects nothing. A
# CONNECT to 443 was an opaque tunnel, so TLS inside it carried the
# agent's own key to the origin (an account the agent controls). The
# client trusts both sluice's CA and the origin's own certificate, so the
# request goes through either way: only the headers tell.
cat "$T/ca/ca-bundle.crt" "$T/cert.pem" >"$T/both.pem"
out=$(world_host timeout 30 "$PY" "$here/lib/hdrclient.py" 127.0.0.1:3128 "$T/both.pem" tls kp.test \
	"$(get kp.test '/echo-headers?kp=1' 'X-API-Key: agent-own-kp\r\nAuthorization: Bearer agent-own-kp2\r\n')" 2>&1)
check "CONNECT to another port of an inject host: answered, without the agent's own keys" "HTTP 200 0" \
	"$(status "$out") $(grep -c 'agent-own' <<<"$out")"
check_has "... because that port is inspected too (audit)" '"host":"kp.test","port":443' "$(grep '"tls":"inspect"' "$T/audit.log")"

# Spellings a parser might read differently from the origin: obs-fold, a
# space before the colon, a tab in the name. Refused, or the key stays out.
for h in 'X-Foo: a\r\n Authorization: Bearer agent-own-f1\r\n' \
	'Authorization : Bearer agent-own-f2\r\n' 'X-Foo: a\r\n\tX-Api-Key: agent-own-f3\r\n' \
	'Author\tization: Bearer agent-own-f4\r\n'; do
	out=$(plain "$(get key.test 'http://key.test/echo-headers?odd=1' "$h")")
	check "plain HTTP on an inject host, '$h': refused, or no key at the origin" "ok" \
		"$([ "$(status "$out")" = "HTTP 400" ] || ! grep -q agent-own <<<"$out" && echo ok)"
done

# ---- a second Host header on plain HTTP ----
# The first names the URL's host and was checked; the second went on to
# an origin (a CDN's edge, a shared host) that may serve the vhost it names.
out=$(plain 'GET http://meth.test/echo-headers?h=2 HTTP/1.1\r\nHost: meth.test\r\nHost: other.example\r\n\r\n')
check "plain HTTP: a second Host header is refused (400)" "HTTP 400 0" \
	"$(status "$out") $(grep -c '^GET /echo-headers?h=2 ' "$T/origin.log")"
out=$(plain 'GET http://meth.test/echo-headers?h=3 HTTP/1.1\r\nhost: other.example\r\nHost: meth.test\r\n\r\n')
check "... whichever comes first" "HTTP 400 0" \
	"$(status "$out") $(grep -c '^GET /echo-headers?h=3 ' "$T/origin.log")"

# ---- method overrides in the query string ----
# Symfony (so Laravel) runs a POST as the method "_method" names in the
# query; PHP reads ".method" and "%5Fmethod" as "_method" too.
post() { printf 'POST %s HTTP/1.1\\r\\nHost: %s\\r\\nContent-Length: 0\\r\\n\\r\\n' "$2" "$1"; }
out=$(plain "$(post meth.test 'http://meth.test/m1?_method=DELETE')")
check "plain HTTP: POST ?_method=DELETE where a rule names methods: refused (400)" "HTTP 400 0" \
	"$(status "$out") $(served POST '/m1?_method=DELETE')"
out=$(plain "$(post meth.test 'http://meth.test/m2?a=1&.method=DELETE')")
check "plain HTTP: POST ?a=1&.method=DELETE (PHP reads '_method'): refused (400)" "HTTP 400 0" \
	"$(status "$out") $(served POST '/m2?a=1&.method=DELETE')"
out=$(tls meth.test "$(post meth.test '/m3?%5Fmethod=DELETE')")
check "inspected: POST ?%5Fmethod=DELETE: refused (400)" "HTTP 400 0" \
	"$(status "$out") $(served POST '/m3?%5Fmethod=DELETE')"
out=$(plain "$(post meth.test 'http://meth.test/m4?method=x&a_method=y')")
check "plain HTTP: other parameters pass (200)" "HTTP 200 1" \
	"$(status "$out") $(served POST '/m4?method=x&a_method=y')"
check "... the refusals are audited, reason method-override" "3" \
	"$(grep -c '"reason":"method-override"' "$T/audit.log")"

# ---- the DNS budget: a name once admitted, looked up again and again ----
# The budget counts new names; an admitted name is free for the minute.
# If every lookup of it went upstream (an answer with TTL 0, dnsmasq's
# default here, is not cached; a failure never was), the agent could
# signal to whoever runs the zone by how often it asks, without limit.
upstream() { grep -c -- "query\[A\] $1 from" "$T/dns.log"; }
for i in 1 2 3 4 5 6 7 8; do plain "$(get rep.wild.test "http://rep.wild.test/rep$i")" >/dev/null; done
check "8 requests to one admitted name (TTL 0), one after the other: all answered" "8" \
	"$(grep -c '^GET /rep[1-8] host=rep.wild.test' "$T/origin.log")"
check "... and its name went upstream once, not 8 times" "1" "$(upstream rep.wild.test)"
# A name upstream cannot resolve (dnsmasq refuses it), asked at once
# by 8 connections: one lookup upstream, the others wait for it.
pids=()
for i in 1 2 3 4 5 6 7 8; do
	plain "$(get fail.nx.test "http://fail.nx.test/f$i")" >"$T/nx$i.out" &
	pids+=($!)
done
wait "${pids[@]}"
check "8 requests at once to an admitted name that does not resolve: all 502" "8" \
	"$(cat "$T"/nx[1-8].out | grep -c '^HTTP 502')"
check "... and its name went upstream as for one lookup (c-ares tries twice), not 8 times" "2" "$(upstream fail.nx.test)"

# ---- a local route: an address the host answers for without holding it ----
# "ip route add local PREFIX dev lo" (AnyIP) makes the kernel deliver a
# whole range to the host's own sockets; getifaddrs() lists none of it.
ip -n "$WORLD_HOST" route add local 198.51.100.0/24 dev lo
world_host_bg "$PY" "$here/lib/listener.py" "$T/host.log" 198.51.100.7:80 127.0.0.1:80 127.0.0.2:80
world_pids+=($!)
wait_for_file "$T/host.log.ready" || { echo "not ok - the host's listener did not start"; exit 1; }
touch "$T/host.log"
out=$(plain "$(get anyip.test 'http://anyip.test/anyip')")
check "a name that resolves into a local route of the gateway host: refused (403)" "HTTP 403" \
	"$(status "$out")"
check "... nothing reached the host's listener there" "0" "$(grep -c 'accept 198.51.100.7' "$T/host.log")"
# 0.0.0.0 is the host's loopback to connect(); 127.0.0.2 is loopback, but
# no interface lists it (lo holds 127.0.0.1/8).
out=$(plain "$(get 0.0.0.0 'http://0.0.0.0/zero')")
check "private_addresses lists 0.0.0.0/8: http://0.0.0.0/ is still refused (403)" "HTTP 403" "$(status "$out")"
out=$(plain "$(get 127.0.0.2 'http://127.0.0.2/lo2')")
check "private_addresses lists 127.0.0.0/8: http://127.0.0.2/ is still refused (403)" "HTTP 403" "$(status "$out")"
check "... nothing reached the host's loopback listeners" "0" "$(grep -c 'accept 127' "$T/host.log")"

hdr_gateway_down
finish
