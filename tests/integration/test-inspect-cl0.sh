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
# (test-http-pool's cl0 checks).
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
out=$(world_host env CA="$T/ca/ca-bundle.crt" "$PY" - <<'PYC'
import os, re, socket, ssl
ctx = ssl.create_default_context(cafile=os.environ["CA"])
def exchange(req):
    s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
    s.sendall(b"CONNECT raw.test:443 HTTP/1.1\r\nHost: raw.test:443\r\n\r\n")
    b = b""
    while b"\r\n\r\n" not in b:
        b += s.recv(1)
    t = ctx.wrap_socket(s, server_hostname="raw.test")
    t.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += t.recv(65536)
    head, rest = buf.split(b"\r\n\r\n", 1)
    m = re.search(rb"Content-Length: (\d+)", head)
    cl = int(m.group(1)) if m else 0
    while len(rest) < cl:
        rest += t.recv(65536)
    t.close()
    return head.split(b"\r\n")[0].decode() + " | " + rest[:cl].decode(errors="replace")[:30]
inner = b"GET /secret/x HTTP/1.1\r\nHost: raw.test\r\n\r\n"
print(exchange(b"GET /secret/y HTTP/1.1\r\nHost: raw.test\r\n\r\n"))
print(exchange(b"POST /static/a HTTP/1.1\r\nHost: raw.test\r\nContent-Length: %d\r\n\r\n%s" % (len(inner), inner)))
print(exchange(b"GET /public/b HTTP/1.1\r\nHost: raw.test\r\n\r\n"))
PYC
)
check "inspected: /secret/ is refused" "HTTP/1.1 403 Forbidden" "$(echo "$out" | sed -n 1p | cut -d'|' -f1 | sed 's/ *$//')"
check "inspected: the POST to /static/ gets its answer" "echo /static/a" "$(echo "$out" | sed -n 2p | cut -d'|' -f2 | cut -c2-15)"
check "inspected: another client's GET then gets its own answer, not the body's /secret/" "echo /public/b" \
	"$(echo "$out" | sed -n 3p | cut -d'|' -f2 | cut -c2-15)"
finish
