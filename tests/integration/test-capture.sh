#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Transparent capture: programs that ignore the proxy variables still reach
# what the policy allows, decided by the TLS ClientHello's SNI, else the
# HTTP Host header, else the original destination address (bytes that are
# neither TLS nor HTTP only on a `protocol: tcp` port); everything else is
# refused, and the connection goes only where the gateway resolved
# the decided name, never to the address the client chose.
#
# Usage: test-capture.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-capture.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N denied.test=$N || { echo "not ok - services"; exit 1; }

cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80, 443]
  - host: 203.0.113.2
    ports: [7]
  # Only so that the sandbox captures these ports (a port no rule names is
  # refused at the SYN: test-synreject.sh), and capture's own decisions on
  # them are what is tested here.
  - host: other.test
    ports: [22, 25, 8080]
P
chmod 644 "$T/policy.yaml"

# run CMD...: the command in a sandbox, with the proxy variables REMOVED,
# so every connection it makes is one that ignores the proxy.
run() {
	world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
		--audit "$T/audit.log" -- env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy \
		-u https_proxy -u ALL_PROXY -u all_proxy "$@" 2>&1
}

check "plain HTTP that ignores the proxy is decided by its Host" \
	"origin GET /plain host=allowed.test body=0" \
	"$(run curl -sS -m 10 --resolve allowed.test:80:$N http://allowed.test/plain)"
check_has "... audited as captured http" '"event":"http"' "$(audit_last)"
check_has "... with its decision" '"host":"allowed.test","port":80,"path":"/plain","status":200,"decision":"allow"' \
	"$(audit_last)"
check "HTTPS that ignores the proxy is decided by its SNI (passthrough)" \
	"origin GET /tls host=allowed.test body=0" \
	"$(run curl -sS -m 10 -k --resolve allowed.test:443:$N https://allowed.test/tls)"
check_has "... audited with the SNI" '"tls":"passthrough","sni":"allowed.test"' "$(audit_last)"
check "a denied Host gets a 403 from the gateway" "403" \
	"$(run curl -s -m 10 -o /dev/null -w '%{http_code}' --resolve denied.test:80:$N http://denied.test/x)"
check_has "... audited" '"host":"denied.test","port":80,"path":"/x","status":403,"decision":"deny"' \
	"$(audit_last)"
out=$(run curl -sS -m 10 -k --resolve denied.test:443:$N https://denied.test/x)
check "a denied SNI: the TLS connection is closed" "1" "$(grep -c 'curl: (35)\|curl: (56)\|reset\|closed' <<<"$out")"
check_has "... audited" '"host":"denied.test","port":443' "$(audit_last)"
check "an allowed name on a port the policy does not list is refused" "403" \
	"$(run curl -s -m 10 -o /dev/null -w '%{http_code}' --resolve allowed.test:8080:$N http://allowed.test:8080/)"

# The client aims at the canary while naming an allowed host: the gateway
# connects to its own resolution of the name, never to the client's address.
before=$(world_canary_count)
check "Host: allowed.test sent to the canary's address reaches the real allowed.test" \
	"origin GET /aimed host=allowed.test body=0" \
	"$(run curl -sS -m 10 --resolve allowed.test:80:$WORLD_CANARY http://allowed.test/aimed)"
check "... and the canary saw nothing" "$before" "$(world_canary_count)"

# Neither TLS nor HTTP: decided by the original address, which no name
# rule can allow.
out=$(run python3 -c '
import socket
s = socket.create_connection(("203.0.113.2", 22), timeout=10)
s.sendall(b"SSH-2.0-probe\r\n")
s.settimeout(10)
try:
    print("got", s.recv(100))
except Exception as e:
    print("closed", type(e).__name__)
')
check_has "an opaque protocol to an address no rule allows is closed" "got b''" "$out"
check_has "... audited with the original address" '"host":"203.0.113.2","port":22' \
	"$(audit_last)"
check_has "... and why (the address is allowed, but only on port 7)" '"reason":"port"' \
	"$(audit_last)"

# Neither TLS nor HTTP, to an address the sandbox got from the gateway's
# own DNS: the name that answer was for decides, and its rule carries only
# HTTP and TLS there (no `protocol: tcp`), so the bytes are refused and
# never reach the origin (test-tunnel-http.sh has the tcp ports).
out=$(run python3 -c '
import socket
addr = socket.getaddrinfo("allowed.test", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4]
s = socket.create_connection(addr, timeout=10)
s.sendall(b"\x00opaque\r\n\r\n")
s.settimeout(10)
print("got", s.recv(12))
')
check_has "an opaque protocol to an allowed name's port 80 is closed" "got b''" "$out"
check_has "... decided by that name, refused: not-http" \
	'"host":"allowed.test","port":80,"path":null,"status":403,"decision":"deny","rule":"allow[1]","reason":"not-http"' \
	"$(audit_last)"

# Keep-alive through capture: each request on the connection is decided on
# its own Host, so a second one cannot ride the first one's decision.
out=$(run python3 -c '
import socket
s = socket.create_connection(("203.0.113.2", 80), timeout=10)
s.settimeout(10)
s.sendall(b"GET /ka1 HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
data = b""
while b"ka1 host" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
s.sendall(b"GET /ka2 HTTP/1.1\r\nHost: denied.test\r\n\r\n")
rest = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        rest += chunk
except socket.timeout:
    pass
print(data.split(b"\r\n")[0].decode(), "|", rest.split(b"\r\n")[0].decode())
')
check "a captured kept-alive connection decides its second request again" \
	"HTTP/1.1 200 OK | HTTP/1.1 403 Forbidden" "$out"
check "... and the origin never saw the second" "0" "$(grep -c '/ka2' "$T/origin.log")"

before=$(world_canary_count)
check "TLS naming an allowed host but aimed at the canary reaches the real host" \
	"origin GET /aimed-tls host=allowed.test body=0" \
	"$(run curl -sS -m 10 -k --resolve allowed.test:443:$WORLD_CANARY https://allowed.test/aimed-tls)"
check "... and the canary saw nothing" "$before" "$(world_canary_count)"

# A client that waits for the server to speak first (SMTP-like) sends
# nothing: after the capture wait it is decided by its address, and closed.
out=$(run python3 -c '
import socket, time
t = time.monotonic()
s = socket.create_connection(("203.0.113.2", 25), timeout=10)
s.settimeout(10)
print("got", s.recv(100), "after", round(time.monotonic() - t))
')
check_has "a silent captured client is decided by address after the wait, and closed ($out)" \
	"got b'' after" "$out"
check_has "... audited" '"host":"203.0.113.2","port":25' "$(audit_last)"

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
