#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The inspected path's origin pool (inspect-upstream.c) against an origin
# that does not read a request body (a handler that ignores Content-Length,
# "CL.0"): the body of a POST to an allowed path is read by the origin as a
# request for a path the policy refuses, and answered late; the next
# exchange that takes the kept-alive TLS connection (another client's GET)
# must not receive that answer: the inspect pool keeps a connection that
# carried a body out of the pool, as conn-http.c does for plain HTTP
# (test-http-pool's cl0 checks). A spare connection, that carried nothing,
# takes its place (so a POST's successor does not wait for a handshake),
# and a reload flushes it with the rest of the pool.
#
# Usage: test-inspect-cl0.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-$here/../../build/cli/sluice}")
. "$here/lib/checks.sh"
needs_root test-inspect-cl0.sh ip nft nsenter python3 dnsmasq curl ss openssl
. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw
mkdir -m 777 "$R"
mkdir -m 700 "$T/ca"
cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$N
bind-interfaces
address=/raw.test/$N
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=raw.test \
	-addext subjectAltName=DNS:raw.test -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 443:cl0:tls --cert "$T/cert.pem" --key "$T/key.pem"
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: raw.test
    ports: [443]
    paths: ["/static/*", "/public/*"]
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test \
	--upstream-ca "$T/cert.pem" --ca-dir "$T/ca" || exit 1
cat >"$T/exchange.py" <<'PYC'
import os, re, socket, ssl, sys
ctx = ssl.create_default_context(cafile=os.environ["CA"])
def exchange(req):
    s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
    s.sendall(b"CONNECT raw.test:443 HTTP/1.1\r\nHost: raw.test:443\r\n\r\n")
    b = b""
    while b"\r\n\r\n" not in b:
        c = s.recv(1)
        if not c:
            return "closed during CONNECT: %r" % b
        b += c
    t = ctx.wrap_socket(s, server_hostname="raw.test")
    t.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = t.recv(65536)
        if not c:
            return "closed before the answer: %r" % buf
        buf += c
    head, rest = buf.split(b"\r\n\r\n", 1)
    m = re.search(rb"Content-Length: (\d+)", head)
    cl = int(m.group(1)) if m else 0
    while len(rest) < cl:
        c = t.recv(65536)
        if not c:
            break
        rest += c
    t.close()
    return head.split(b"\r\n")[0].decode() + " | " + rest[:cl].decode(errors="replace")[:30]
inner = b"GET /secret/x HTTP/1.1\r\nHost: raw.test\r\n\r\n"
for what in sys.argv[1:]:
    method, target = what.split(" ", 1)
    if method == "POST":
        req = b"POST %s HTTP/1.1\r\nHost: raw.test\r\nContent-Length: %d\r\n\r\n%s" % (target.encode(), len(inner), inner)
    else:
        req = b"%s %s HTTP/1.1\r\nHost: raw.test\r\n\r\n" % (method.encode(), target.encode())
    print(exchange(req))
PYC
ex() { world_host env CA="$T/ca/ca-bundle.crt" "$PY" "$T/exchange.py" "$@"; }
conns() { find "$R" -name 'conn-*.bin' | grep -c .; } # connections the origin accepted
# shellcheck disable=SC2317 # called through wait_until
conns_are() { [ "$(conns)" = "$1" ]; }
# The connection the origin served "METHOD TARGET" on (its first such request).
served_on() { grep -m1 -F " $1 " "$R/requests.log" | sed -n 's/^conn=\([0-9]*\) .*/\1/p'; }
wait_until() { # wait_until CMD...: up to 5 s for CMD to succeed
	for _ in $(seq 50); do "$@" && return 0; sleep 0.1; done
	return 1
}
out=$(ex "GET /secret/y" "POST /static/a")
check "inspected: /secret/ is refused" "HTTP/1.1 403 Forbidden" "$(echo "$out" | sed -n 1p | cut -d'|' -f1 | sed 's/ *$//')"
check "inspected: the POST to /static/ gets its answer" "echo /static/a" "$(echo "$out" | sed -n 2p | cut -d'|' -f2 | cut -c2-15)"
# The connection that carried the body is not pooled; a new one that
# carried nothing takes its place, made before anyone asks for it.
if wait_until conns_are 2; then
	ok "a connection that carried nothing is made to replace the one that carried a body"
else
	notok "the origin accepted $(conns) connections, not 2 (one for the POST, one spare): $(cat "$R/requests.log")"
fi
check "the spare has carried no request before the next one is sent" "" "$(grep '^conn=2 ' "$R/requests.log")"
out=$(ex "GET /public/b")
check "inspected: another client's GET then gets its own answer, not the body's /secret/" "echo /public/b" \
	"$(echo "$out" | cut -d'|' -f2 | cut -c2-15)"
check "that GET went over the spare (origin connection 2), no new connection" "2 2" \
	"$(served_on "GET /public/b") $(conns)"
check "the POST's connection saw the smuggled request (the origin's flaw the test stands on)" "1" \
	"$(served_on "GET /secret/x")"
# A reload flushes the pool: a spare made under the old policy is not used.
out=$(ex "POST /static/c")
check "a second POST, on the spare" "echo /static/c | 2" "$(echo "$out" | cut -d'|' -f2 | cut -c2-15) | $(served_on "POST /static/c")"
wait_until conns_are 3 || notok "no spare after the second POST: $(conns) connections"
n=$(grep -c ': reloaded' "$T/gw.log")
kill -HUP "$world_gw_pid"
wait_until eval '[ "$(grep -c ": reloaded" "$T/gw.log")" -gt "$n" ]' || notok "the gateway did not say it reloaded: $(tail -3 "$T/gw.log")"
out=$(ex "GET /public/d")
check "after a reload, the spare made before it is not used: a new connection (4)" "echo /public/d | 4 4" \
	"$(echo "$out" | cut -d'|' -f2 | cut -c2-15) | $(served_on "GET /public/d") $(conns)"
finish
