#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice gateway` against real clients in the test world: it runs in the
# world's host namespace, an origin (HTTP and HTTPS) and dnsmasq live in the
# "internet" namespace on TEST-NET addresses, and every check is a real
# request. Denied requests must fail fast with their reason in the audit
# log, and must not reach the origin or the canary.
#
# Usage: test-gateway.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-gateway.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"
PY=/usr/bin/python3

gw_pid=
cleanup() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
GW=203.0.113.1:3128
# A private address inside our own internet namespace, to test
# private_addresses; nothing outside the namespaces is ever addressed.
ip -n "$WORLD_NET" addr add 10.99.0.2/32 dev lo
ip -n "$WORLD_HOST" route add 10.99.0.2/32 via "$WORLD_NET_ADDR"

cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$WORLD_NET_ADDR
bind-interfaces
address=/allowed.test/$WORLD_NET_ADDR
address=/denied.test/$WORLD_NET_ADDR
address=/other.test/$WORLD_NET_ADDR
address=/app.test/$WORLD_NET_ADDR
address=/opaque.test/$WORLD_NET_ADDR
address=/private.test/10.99.0.2
address=/loop.test/127.0.0.1
address=/meta.test/169.254.169.254
address=/canary.test/$WORLD_CANARY
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=allowed.test \
	-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
world_bg "$WORLD_NET" "$PY" "$here/lib/origin.py" "$T/origin.log" "$T/cert.pem" "$T/key.pem" \
	"$WORLD_NET_ADDR" 10.99.0.2
wait_for_file "$T/origin.log.ready"
[ -e "$T/origin.log.ready" ] || { echo "not ok - the origin did not start"; exit 1; }
touch "$T/origin.log"

# Port 9 of the internet drops SYNs: a connect there never completes.
world_net nft -f - <<'NFT'
table inet blackhole {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp dport 9 drop
	}
}
NFT

policy() {
	cat >"$T/policy.yaml"
}
policy <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80, 443, 9, 81]
  - host: nxname.test
  - host: private.test
  - host: loop.test
  - host: meta.test
  - host: canary.test
  - host: other.test
    methods: [GET]
    paths: ["/ok/*"]
  - host: app.test
  - host: opaque.test
    ports: [80]
    protocol: tcp
deny:
  - host: app.test
    paths: ["/secret", "/secret/*"]
P

start_gateway() {
	world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
		--resolver "$WORLD_NET_ADDR:53" --audit "$T/audit.log" --sandbox test \
		--header-timeout 1000 --max-connections 20 --max-header-bytes 4096 \
		--connect-timeout 1500 --idle-timeout 3000 "$@" \
		>>"$T/gw.log" 2>&1
	gw_pid=$!
	for _ in $(seq 50); do
		world_host "$PY" -c "import socket; socket.create_connection(('203.0.113.1', 3128), 1)" \
			2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
start_gateway || { echo "not ok - the gateway did not start: $(cat "$T/gw.log")"; exit 1; }
ok "the gateway serves the proxy on $GW"

curl_() { world_host curl -sS -m 10 -x "http://$GW" "$@" 2>&1; }
code() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" "$@" 2>/dev/null; }
# The proxy's answer to a CONNECT.
connect_code() {
	world_host curl -s -m 10 -p -o /dev/null -w '%{http_connect}' -x "http://$GW" "$@" 2>/dev/null
}
raw() { world_host "$PY" "$here/lib/rawclient.py" 203.0.113.1 3128 "$@" 2>&1; }
origin_has() { grep -c -- "$1" "$T/origin.log"; }

# ---- allowed and denied, through the proxy variables ----
check "plain HTTP to an allowed host" "origin GET /hello host=allowed.test body=0" \
	"$(curl_ http://allowed.test/hello)"
check_has "its audit record" '"event":"http","client":"203.0.113.1:' "$(audit_last)"
check_has "its audit record says allow, rule and status" \
	'"host":"allowed.test","port":80,"path":"/hello","status":200,"decision":"allow","rule":"allow[1]"' \
	"$(audit_again)"
check "POST with a body" "origin POST /post host=allowed.test body=11" \
	"$(curl_ -d 'hello world' http://allowed.test/post)"
# "Name:v" grows to "Name: v" when a head is rebuilt: 90 of them in the
# request (the origin takes no more than 100), 120 in the response.
hdrs=$(for i in $(seq 90); do printf -- '-H X-%d:v ' "$i"; done)
# shellcheck disable=SC2086
check "compact headers in the request and in the response get through whole" "compact 200" \
	"$(world_host curl -sS -m 10 -x "http://$GW" $hdrs -w ' %{http_code}' http://allowed.test/compact-headers 2>&1 | tr -d '\n')"
check "a 4 MiB response streams through" "4194304" \
	"$(world_host curl -s -m 20 -x "http://$GW" -o /dev/null -w '%{size_download}' http://allowed.test/big)"
check "CONNECT tunnel (curl -p) to an allowed host" "origin GET /tunnel host=allowed.test body=0" \
	"$(curl_ -p http://allowed.test/tunnel)"
# Plain HTTP inside the tunnel is decided request by request: the CONNECT
# has its record, and the request inside its own (written when its
# exchange ends: wait for it, audit_last takes the newest of what is there).
wait_grep "$T/audit.log" '"path":"/tunnel"'
check_has "the request inside the tunnel is audited as http" \
	'"event":"http","client"' "$(audit_last)"
check_has "... after the tunnel's own record" '"event":"connect"' "$(tail -n 2 "$T/audit.log" | head -n 1)"
check "HTTPS through CONNECT with the right SNI" "origin GET /tls host=allowed.test body=0" \
	"$(curl_ -k https://allowed.test/tls)"
check_has "its audit record names the SNI" '"tls":"passthrough","sni":"allowed.test"' \
	"$(audit_last)"
before=$(wc -l <"$T/origin.log")
check "a denied host gets 403" "403" "$(code http://denied.test/x)"
check "the 403 names the host and why" \
	"sluice: denied.test is not allowed by the policy (no rule names it)" \
	"$(curl_ http://denied.test/x)"
check_has "the denial is audited" '"host":"denied.test","port":80,"path":"/x","status":403,"decision":"deny","rule":null,"reason":"no-rule"' \
	"$(audit_last)"
check "... and its X-Sluice-Reason header is the record's reason" "X-Sluice-Reason: no-rule" \
	"$(world_host curl -s -m 10 -i -x "http://$GW" http://denied.test/x | tr -d '\r' |
		grep -i '^x-sluice-reason:')"
check "a denied CONNECT gets 403" "403" "$(connect_code http://denied.test/x)"
check "a denied port gets 403" "403" "$(code http://allowed.test:8080/x)"
check "a deny path rule holds" "403" "$(code http://app.test/secret/x)"
check "... in any spelling" "403" "$(code --path-as-is 'http://app.test/%73ecret/x')"
check "... and with ;params" "403" "$(code --path-as-is 'http://app.test/secret;x=1')"
check "... and case" "403" "$(code --path-as-is 'http://app.test/SECRET')"
check "dot segments are refused" "403" "$(code --path-as-is 'http://app.test/a/../secret')"
check "the rest of that host is allowed" "200" "$(code http://app.test/public)"
check "a method rule holds" "403" "$(code -X POST http://other.test/ok/x)"
check "a path rule holds" "403" "$(code http://other.test/no)"
check "... and allows what it names" "200" "$(code http://other.test/ok/x)"
check "CONNECT to a host whose rules need inspection is refused (not passed through)" \
	"403" "$(connect_code http://other.test/ok/x)"
check "nothing denied reached the origin" "$((before + 2))" "$(wc -l <"$T/origin.log")"
check "no denied name was ever looked up (no DNS leak)" "0" "$(grep -c 'denied.test' "$T/dns.log")"

# ---- keep-alive and pipelining ----
out=$(world_host curl -sS -m 10 -x "http://$GW" http://allowed.test/ka1 http://allowed.test/ka2 2>&1)
check "two requests on one kept-alive connection" \
	"origin GET /ka1 host=allowed.test body=0
origin GET /ka2 host=allowed.test body=0" "$out"
wait_grep "$T/audit.log" '"path":"/ka2"'
c1=$(tail -n 2 "$T/audit.log" | head -1 | sed 's/.*"client":"\([^"]*\)".*/\1/')
c2=$(tail -n 1 "$T/audit.log" | sed 's/.*"client":"\([^"]*\)".*/\1/')
check "... each audited, both from the same client connection" "$c1" "$c2"
audit_seen=$(wc -l <"$T/audit.log")
check "pipelined requests are each decided: allowed, denied (then closed)" "200 200 403" \
	"$(raw pipeline http://allowed.test/p1 http://allowed.test/p2 http://denied.test/p3 http://allowed.test/p4)"
sleep 0.3
check "... and the origin saw only the allowed ones" "0" "$(origin_has "/p3")"
check "... nor anything after the denied one" "0" "$(origin_has "/p4")"
audit_seen=$(wc -l <"$T/audit.log")

# ---- SSRF and rebinding ----
check "a name that resolves to a private address is refused" "403" "$(code http://private.test/)"
check_has "... with the reason in the audit log" '"reason":"private-address"' "$(audit_last)"
check "a name that resolves to loopback is refused" "403" "$(code http://loop.test/)"
check "a name that resolves to the metadata address is refused" "403" "$(code http://meta.test/)"
check_has "... and says so" "(metadata)" "$(curl_ http://meta.test/)"
check "an IP literal is not a name rule's" "403" "$(code http://203.0.113.2/)"

# ---- fronting ----
check "CONNECT to an allowed host, then the SNI of a denied one: closed" "closed" \
	"$(raw sni allowed.test denied.test)"
check_has "... audited as sni-mismatch" '"reason":"sni-mismatch"' "$(audit_last)"
check "CONNECT with a matching SNI completes the handshake" "handshake-ok HTTP/1.1 200 OK" \
	"$(raw sni allowed.test allowed.test)"
check "absolute URI and Host disagree: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'GET http://allowed.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n')"
check_has "... audited as host-mismatch" '"reason":"host-mismatch"' "$(audit_last)"

# ---- protocol abuse ----
check "Content-Length with Transfer-Encoding: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')"
check "two Content-Lengths: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde')"
check "obs-fold: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: a\r\n b\r\n\r\n')"
check "bare LF: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'GET http://allowed.test/ HTTP/1.1\nHost: allowed.test\n\n')"
check "a bad chunk size: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'POST http://allowed.test/c HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n')"
check "an oversized head: 431" "HTTP/1.1 431 Request Header Fields Too Large" \
	"$(raw send "GET http://allowed.test/ HTTP/1.1\r\nX: $(head -c 6000 /dev/zero | tr '\0' a)\r\n\r\n")"
check "garbage: 400" "HTTP/1.1 400 Bad Request" "$(raw send '\x16\x03\x01\x00\xff garbage\r\n\r\n')"
check "https:// in absolute form: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n')"
check "userinfo in the URL: 400" "HTTP/1.1 400 Bad Request" \
	"$(raw send 'GET http://allowed.test@denied.test/ HTTP/1.1\r\n\r\n')"
before=$(origin_has "/smuggled")
check "a request pipelined behind another is not forwarded undecided" "HTTP/1.1 200 OK" \
	"$(raw send 'GET http://allowed.test/first HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: denied.test\r\n\r\n')"
sleep 0.3
check "... the origin never saw it" "$before" "$(origin_has "/smuggled")"
before=$(origin_has "/smuggled-body")
check "a body's end is its Content-Length, not the packet's" "HTTP/1.1 200 OK" \
	"$(raw send 'POST http://allowed.test/a HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 3\r\n\r\nabcGET /smuggled-body HTTP/1.1\r\nHost: x\r\n\r\n')"
sleep 0.3
check "... the origin never saw what followed" "$before" "$(origin_has "/smuggled-body")"
check "slowloris: the head deadline answers 408" "HTTP/1.1 408 Request Timeout" "$(raw slow 1)"
check_has "... audited as header-timeout" '"reason":"header-timeout"' "$(audit_last)"
check "past --max-connections, new connections get 503" "5" "$(raw hold 25 0)"
check "the gateway is alive after all of that" "origin GET /alive host=allowed.test body=0" \
	"$(curl_ http://allowed.test/alive)"

# ---- upstream failures ----
check "an allowed name that does not resolve: 502" "502" "$(code http://nxname.test/)"
check_has "... audited as resolve-failed" '"host":"nxname.test","port":80,"path":"/","status":502,"decision":"deny","rule":"allow[2]","reason":"resolve-failed"' \
	"$(audit_last)"
check "an allowed port where nothing listens: 502" "502" "$(code http://allowed.test:81/)"
check_has "... audited as connect-failed" '"reason":"connect-failed"' "$(audit_last)"

# ---- time limits ----
start=$(date +%s%N)
check "an upstream that never answers: 504 after --connect-timeout" "504" \
	"$(code http://allowed.test:9/)"
took=$((($(date +%s%N) - start) / 1000000))
check_has "... audited as connect-timeout" '"reason":"connect-timeout"' "$(audit_last)"
if [ "$took" -lt 5000 ]; then ok "... within the limit (${took} ms)"; else notok "... took ${took} ms"; fi
check "a protocol: tcp tunnel silent past --idle-timeout is closed" "HTTP/1.1 200 OK | closed" \
	"$(raw idle opaque.test 80 4)"
check_has "... audited as idle-timeout, still an allowed exchange" \
	'"decision":"allow","rule":"allow[9]","reason":"idle-timeout"' "$(audit_last)"
check "a tunnel carrying HTTP, idle past --idle-timeout between requests: 408, as plain HTTP" \
	"HTTP/1.1 200 OK | HTTP/1.1 408 Request Timeout" "$(raw idle allowed.test 80 4)"
out=$(world_host "$PY" -c '
import socket, sys
s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
s.sendall(b"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
s.settimeout(10)
data = b""
while True:  # the 200, then (nothing sent) the end
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.split(b"\r\n")[0].decode(), "| closed")
')
check "a tunnel that sends nothing on a port for HTTP or TLS is closed at --header-timeout" \
	"HTTP/1.1 200 Connection established | closed" "$out"
check_has "... audited as refused, header-timeout" '"decision":"deny","rule":"allow[1]","reason":"header-timeout"' \
	"$(audit_last)"

# ---- the audit log ----
lines=$(wc -l <"$T/audit.log")
bad=$("$PY" - "$T/audit.log" <<'PYCHECK'
import json, sys
keys = ["ts", "sandbox", "event", "client", "method", "host", "port", "path", "status",
        "decision", "rule", "reason", "tls", "sni", "credential", "bytes_up", "bytes_down",
        "duration_ms"]
bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if list(r) != keys or r["sandbox"] != "test" or r["decision"] not in ("allow", "deny"):
        bad += 1
print(bad)
PYCHECK
)
check "all $lines audit lines are JSON with every field" "0" "$bad"

# ---- reload ----
reload() { gw_reload "$gw_pid" "$T/gw.log"; } # SIGHUP, then its answer in gw.log
n_tunnel1=$(origin_has "/tunnel-1")
rm -f "$T/go"
# An opaque (protocol: tcp) tunnel is decided once, when it opens; a tunnel
# that carries plain HTTP has each request decided, by the policy in force.
world_host "$PY" "$here/lib/rawclient.py" 203.0.113.1 3128 tunnel opaque.test 80 "$T/go" \
	>"$T/tunnel.out" 2>&1 &
tunnel_pid=$!
world_host "$PY" "$here/lib/rawclient.py" 203.0.113.1 3128 tunnel allowed.test 80 "$T/go" \
	>"$T/tunnel-http.out" 2>&1 &
tunnel_http_pid=$!
# Both tunnels open, their first request served, before the reload.
for _ in $(seq 100); do [ "$(origin_has "/tunnel-1")" -ge $((n_tunnel1 + 2)) ] && break; sleep 0.1; done
policy <<'P'
version: 1
allow:
  - host: denied.test
P
reload
touch "$T/go"
wait "$tunnel_pid" "$tunnel_http_pid"
check "a reload does not drop a protocol: tcp tunnel that is already open" \
	"HTTP/1.1 200 OK | HTTP/1.1 200 OK" "$(cat "$T/tunnel.out")"
check "... while the next request in a tunnel carrying HTTP meets the new policy" \
	"HTTP/1.1 200 OK | HTTP/1.1 403 Forbidden" "$(cat "$T/tunnel-http.out")"
check "after SIGHUP the new policy allows what it names" "200" "$(code http://denied.test/now)"
check "... and denies what it no longer names" "403" "$(code http://allowed.test/now)"
echo "version: 1
allow:
  - host: \"*\"" >"$T/policy.yaml"
reload
check "a policy that fails to load is refused, the running one stays" "200" \
	"$(code http://denied.test/still)"
check_has "... and the gateway says why" "not reloaded" "$(cat "$T/gw.log")"
policy <<'P'
version: 1
allow:
  - host: private.test
private_addresses: [10.99.0.0/24]
P
reload
check "a private range listed in private_addresses is reachable" \
	"origin GET /listed host=private.test body=0" "$(curl_ http://private.test/listed)"

# ---- rotation and shutdown ----
mv "$T/audit.log" "$T/audit.log.1"
kill -USR1 "$gw_pid"
wait_for_file "$T/audit.log" # the reopen made it
code http://private.test/rotated >/dev/null
wait_grep "$T/audit.log" '"path":"/rotated"'
check_has "SIGUSR1 reopens the audit log" '"path":"/rotated"' "$(cat "$T/audit.log" 2>/dev/null)"
kill -TERM "$gw_pid"
for _ in $(seq 50); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$gw_pid" 2>/dev/null; then notok "SIGTERM stops the gateway"; else ok "SIGTERM stops the gateway"; fi
wait "$gw_pid"
check "... cleanly, exit status 0 (and no leak under ASan)" "0" "$?"
gw_pid=

# ---- TLS inspection in the standalone gateway: its CA kept in --ca-dir ----
mkdir -m 700 "$T/ca"
cat >"$T/inspect.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    methods: [GET]
    paths: ["/ok/*"]
P
GW2=203.0.113.1:3130
world_host_bg "$SLUICE" gateway --policy "$T/inspect.yaml" --listen $GW2 \
	--resolver "$WORLD_NET_ADDR:53" --audit "$T/audit2.log" --sandbox test2 \
	--ca-dir "$T/ca" --upstream-ca "$T/cert.pem" >>"$T/gw2.log" 2>&1
gw_pid=$!
for _ in $(seq 50); do
	world_host "$PY" -c "import socket; socket.create_connection(('203.0.113.1', 3130), 1)" \
		2>/dev/null && break
	sleep 0.1
done
check "--ca-dir keeps the CA's key readable by its owner only" "600" "$(stat -c %a "$T/ca/ca.key")"
icode() {
	world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW2" "$@" 2>/dev/null
}
check "an inspected GET on a path the rule names goes through" "200" \
	"$(icode --cacert "$T/ca/ca.crt" https://allowed.test/ok/x)"
wait_grep "$T/audit2.log" '"path":"/ok/x"'
check_has "... audited as inspected, with its path" \
	'"method":"GET","host":"allowed.test","port":443,"path":"/ok/x","status":200,"decision":"allow"' \
	"$(tail -n 1 "$T/audit2.log")"
check_has "... and tls inspect" '"tls":"inspect"' "$(tail -n 1 "$T/audit2.log")"
n_origin=$(wc -l <"$T/origin.log")
check "a path the rule does not name gets 403 inside the tunnel" "403" \
	"$(icode --cacert "$T/ca/ca.crt" https://allowed.test/no)"
check "a method the rule does not name gets 403 inside the tunnel" "403" \
	"$(icode --cacert "$T/ca/ca.crt" -X DELETE https://allowed.test/ok/x)"
check "neither reached the origin" "$n_origin" "$(wc -l <"$T/origin.log")"
check "a client that does not trust the CA gets no answer" "000" "$(icode https://allowed.test/ok/y)"
wait_grep "$T/audit2.log" '"reason":"client-tls-failed"'
check_has "... and the refusal is audited" '"reason":"client-tls-failed"' "$(cat "$T/audit2.log")"
kill -TERM "$gw_pid"
wait "$gw_pid"
check "... the inspecting gateway stops cleanly (no leak under ASan)" "0" "$?"
gw_pid=
chmod 640 "$T/ca/ca.key"
out=$(world_host "$SLUICE" gateway --policy "$T/inspect.yaml" --listen 203.0.113.1:3131 \
	--ca-dir "$T/ca" 2>&1)
rc=$?
check "a CA key that its group can read is refused, naming the file (exit $rc: $out)" "yes" \
	"$([ $rc != 0 ] && echo "$out" | grep -q 'ca/ca.key: readable by group' && echo yes)"

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"

finish
