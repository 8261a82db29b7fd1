#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SOCKS5 on the gateway's proxy port, with real clients inside `sluice run`:
# curl through ALL_PROXY=socks5h:// (which run sets) and a raw client
# (lib/socksclient.py) that tries what an agent would: names the policy
# denies, the gateway host's own address, BIND and UDP ASSOCIATE, a TLS
# name other than the one asked for, a plain-HTTP Host other than the
# tunnel's, greetings in pieces. Every answer is checked with the origin's
# request log, the canary and the audit log.
#
# Usage: test-socks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-socks.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N denied.test=$N insp.test=$N || { echo "not ok - services"; exit 1; }
cp "$here/lib/socksclient.py" "$T/socksclient.py"
mkdir -m 755 "$T/www" && echo served-opaque >"$T/www/opaque.txt"
# A server on a `protocol: tcp` port (HTTP/1.0, which capture would not see).
world_bg "$WORLD_NET" python3 -m http.server 8080 --bind "$N" --directory "$T/www" >/dev/null 2>"$T/alt.log"
for _ in $(seq 50); do world_net ss -Hltn "sport = :8080" | grep -q . && break; sleep 0.1; done

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80, 443, 81]
  - host: 203.0.113.2
    ports: [80]
  - host: 203.0.113.1
    ports: [3128]
  - host: insp.test
    ports: [443]
    methods: [GET]
  - host: allowed.test
    ports: [8080]
    protocol: tcp
  - host: 2001:db8::2
    ports: [80]
P

# run CMD...: the command in a sandbox, only ALL_PROXY left of the proxy
# variables, so every connection that uses a proxy uses SOCKS5.
run() {
	world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" --audit "$T/audit.log" -- env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy \
		-u https_proxy "$@" 2>&1
}
sc() { run python3 "$T/socksclient.py" "$@"; }
origin_has() { grep -c -- "$1" "$T/origin.log"; }

check_has "run sets ALL_PROXY to socks5h:// on the gateway's proxy port" "socks5h://" \
	"$(run sh -c 'echo "$ALL_PROXY $all_proxy"')"

for v in ALL_PROXY all_proxy; do
	out=$(world_host "$SLUICE" run --env "$v=socks5h://$WORLD_CANARY:1080" -- true 2>&1)
	check "--env $v=... is refused (exit 125), as for the other proxy variables" \
		"125 1" "$? $(grep -c 'sets the proxy variables itself' <<<"$out")"
done

# ---- curl, through ALL_PROXY and --socks5-hostname ----
check "curl through ALL_PROXY=socks5h reaches an allowed host" \
	"origin GET /socks-plain host=allowed.test body=0" \
	"$(run curl -sS -m 10 http://allowed.test/socks-plain)"
check_has "... audited as a connect" '"event":"connect"' "$(audit_match '"host":"allowed.test","port":80' '"proto":"socks5"' | head -n 1)"
check_has "... and the request inside decided as plain HTTP" '"path":"/socks-plain","status":200,"decision":"allow"' \
	"$(audit_match '/socks-plain' '"proto":"socks5"')"
check "curl --socks5-hostname: HTTPS to an allowed host (SNI checked, passthrough)" \
	"origin GET /socks-tls host=allowed.test body=0" \
	"$(run sh -c 'curl -sS -m 10 -k --socks5-hostname "${ALL_PROXY#socks5h://}" https://allowed.test/socks-tls')"
check_has "... audited with its SNI and socks5" '"tls":"passthrough","sni":"allowed.test"' \
	"$(audit_match '"host":"allowed.test","port":443' '"proto":"socks5"')"

out=$(run curl -sS -m 10 http://denied.test/socks-denied)
check_has "a denied host: curl fails with SOCKS5's reply 2 (not allowed by ruleset)" \
	"SOCKS5 connection to denied.test. (2)" "$out"
check "... the origin saw nothing" "0" "$(origin_has /socks-denied)"
check_has "... audited: connect, deny, no-rule, socks5" \
	'"event":"connect","client":' "$(audit_match '"host":"denied.test"' '"decision":"deny"' '"proto":"socks5"' | head -n 1)"
check_has "... with its reason" '"reason":"no-rule"' "$(audit_match '"host":"denied.test"' '"proto":"socks5"' | head -n 1)"

# ---- the raw client ----
check "a denied name: reply 2 (not allowed by ruleset)" "rep=2" "$(sc request name denied.test 443)"
check "an allowed name on a closed port: reply 5 (refused)" "rep=5" "$(sc request name allowed.test 81)"
check "a name that does not resolve: reply 2 (the policy has no rule)" "rep=2" "$(sc request name nowhere.invalid 80)"
before=$(world_canary_count)
check "an IPv4 literal no rule names (the canary): reply 2" "rep=2" "$(sc request ipv4 "$WORLD_CANARY" 80)"
check "an IPv6 literal no rule names (the canary): reply 2" "rep=2" "$(sc request ipv6 "$WORLD_CANARY6" 80)"
check "... the canary saw nothing" "$before" "$(world_canary_count)"
check "an allowed IPv4 literal: decided as CONNECT to it, plain HTTP inside" "HTTP/1.1 200 OK" \
	"$(sc get 203.0.113.2 80 203.0.113.2 /socks-literal)"
check "... the origin served it" "1" "$(origin_has /socks-literal)"
check "the gateway host's own address, though a rule names it: reply 2" "rep=2" \
	"$(sc request ipv4 203.0.113.1 3128)"
check_has "... refused by the address check, audited" '"reason":"private-address"' \
	"$(audit_match '"host":"203.0.113.1"' '"proto":"socks5"')"
gw=$(run sh -c 'a=${ALL_PROXY#socks5h://}; echo ${a%:*}')
check "the gateway's own sandbox-side address: reply 2" "rep=2" "$(sc request ipv4 "$gw" 3128)"
check "BIND: reply 7 (command not supported)" "rep=7" "$(sc cmd 2)"
check "UDP ASSOCIATE: reply 7" "rep=7" "$(sc cmd 3)"
check_has "... audited" '"reason":"socks-command-not-supported"' "$(audit_last)"
check "only username/password offered: method ff, closed" "method=05ff closed" "$(sc methods 02)"
check "no method offered: method ff" "method=05ff closed" "$(sc methods '')"
check "an unknown address type: reply 8" "rep=8" "$(sc raw 05010005aabb0050)"
check "a zero-length name: reply 1" "rep=1" "$(sc raw 05010003000050)"
check "a name with a NUL in it: reply 1" "rep=1" "$(sc raw 050100030d616c6c6f7765642e74657374000050)"
check "a name with a colon (an authority smuggled in): reply 1" "rep=1" \
	"$(sc raw 0501000310616c6c6f7765642e746573743a3434330050)"
check "port 0: reply 1" "rep=1" "$(sc raw 050100030c616c6c6f7765642e746573740000)"
check "reserved byte not 0: reply 1" "rep=1" "$(sc raw 050101030c616c6c6f7765642e746573740050)"

check "TLS naming another host than the SOCKS request: closed, not relayed" "tls-failed" \
	"$(sc tls allowed.test denied.test /socks-fronted)"
check "... the origin saw nothing" "0" "$(origin_has /socks-fronted)"
check_has "... audited as a name mismatch" '"reason":"sni-mismatch"' \
	"$(audit_match '"sni":"denied.test"' '"proto":"socks5"')"
check "TLS naming the requested host goes through" "HTTP/1.1 200 OK" \
	"$(sc tls allowed.test allowed.test /socks-tls-raw)"
check "plain HTTP in a SOCKS tunnel with a denied Host: 403" "HTTP/1.1 403 Forbidden" \
	"$(sc get allowed.test 80 denied.test /socks-host)"
check "... the origin saw nothing" "0" "$(origin_has /socks-host)"
check_has "... audited as a host mismatch" '"reason":"host-mismatch"' \
	"$(audit_match '/socks-host' '"proto":"socks5"')"
check "a greeting and request sent byte by byte still work" "HTTP/1.1 200 OK" \
	"$(sc fragmented allowed.test /socks-frag)"
check "greeting, request and GET in one write: the GET is the tunnel's first flight" \
	"HTTP/1.1 200 OK" "$(sc oneshot allowed.test /socks-oneshot)"
check "... served" "1" "$(origin_has /socks-oneshot)"
# Inspection and opaque relays, where the rule needs them, as for CONNECT.
check "SOCKS5 to a host whose rule names methods: its TLS is inspected, GET allowed" \
	"origin GET /socks-insp host=insp.test body=0" \
	"$(run curl -sS -m 10 https://insp.test/socks-insp)"
check_has "... audited as an inspected request, with socks5" '"tls":"inspect"' \
	"$(audit_match '/socks-insp' '"proto":"socks5"')"
check "... a POST inside it is refused by the rule" "403" \
	"$(run curl -s -m 10 -o /dev/null -w '%{http_code}' -d x https://insp.test/socks-post)"
check "... the origin saw nothing" "0" "$(origin_has /socks-post)"
check "a protocol: tcp port: relayed opaque" "HTTP/1.0 200 OK" \
	"$(sc get allowed.test 8080 allowed.test /opaque.txt)"
check "... served by the server there" "1" "$(grep -c 'GET /opaque.txt' "$T/alt.log")"
check "an allowed IPv6 literal: decided as CONNECT to it (no server there: reply 5)" "rep=5" \
	"$(sc request ipv6 2001:db8::2 80)"
check_has "... audited with the literal, decided by its rule" '"host":"2001:db8::2","port":80,"path":null,"status":502,"decision":"deny","rule":"allow[6]","reason":"connect-failed"' \
	"$(audit_match '2001:db8::2' '"proto":"socks5"')"
check "half a greeting: no answer until it is whole" "waiting" "$(sc partial 1)"

# ---- the review's attempts (#13): every one of them stays decided ----
before=$(world_canary_count)
# Names that spell an address: the same normal form as a CONNECT's, so
# the same literal checks; none of them is a name the budget counts.
for n in 203.0.113.99 203.0.113.99. 3405803875 0xcb.0.0x71.0x63 0313.0.0161.0143 127.0.0.1 0x7f.1 \
	localhost LOCALHOST. 2130706433; do
	check "a name spelling a refused address ($n): reply 2" "rep=2" "$(sc request name "$n" 80)"
done
check "... audited with the address it spells" "1" \
	"$(audit_count '"host":"203.0.113.99","port":80' '"proto":"socks5"' '"reason":"no-rule"' | awk '{print ($1 >= 5)}')"
for a in ::ffff:203.0.113.99 64:ff9b::cb00:7163 ::ffff:127.0.0.1 ::1; do
	check "an IPv6 form of a refused address ($a): reply 2" "rep=2" "$(sc request ipv6 "$a" 80)"
done
check "a name spelling the allowed literal (3405803778): decided as 203.0.113.2" "HTTP/1.1 200 OK" \
	"$(sc get 3405803778 80 203.0.113.2 /socks-intlit)"
check "... served" "1" "$(origin_has /socks-intlit)"
check "an upper-case name with a trailing dot is the same name" "HTTP/1.1 200 OK" \
	"$(sc get ALLOWED.TEST. 80 allowed.test /socks-upper)"
check_has "... audited as its normal form" '"host":"allowed.test","port":80' \
	"$(audit_match '/socks-upper' '"proto":"socks5"')"
check "a greeting of 255 methods, no-auth the last, is served" "HTTP/1.1 200 OK" \
	"$(sc methods255 allowed.test /socks-255)"
# (The 400 itself may not reach the client: closed with its bytes unread,
# the gateway's socket resets; the audit says what it answered.)
check_has "SOCKS5 pipelined after a proxy GET: the GET is served" "200" \
	"$(sc after-http allowed.test /socks-after-http "$WORLD_CANARY")"
check_has "... and the rest is the next request, a bad one" \
	'"status":400,"decision":"deny","rule":null,"reason":"bad-request"' \
	"$(grep -A1 -F '/socks-after-http' "$T/audit.log" | tail -n 1)"
check "SOCKS5 inside a CONNECT tunnel: refused as not HTTP" "HTTP/1.1 200 Connection established then closed" \
	"$(sc in-connect allowed.test 80 "$WORLD_CANARY")"
check "a second SOCKS5 request after the first: the tunnel's first flight, refused" "rep=0 then closed" \
	"$(sc twice allowed.test "$WORLD_CANARY")"
check_has "... audited as not HTTP" '"reason":"not-http"' \
	"$(audit_match '"host":"allowed.test","port":80' '"proto":"socks5"' | tail -n 1)"
sc direct "$N" 80 "$WORLD_CANARY" >/dev/null
check_has "SOCKS5 sent to a captured port: decided by its address, refused as not HTTP" \
	'"host":"203.0.113.2","port":80,"path":null,"status":403,"decision":"deny","rule":"allow[2]","reason":"not-http"' \
	"$(audit_match '"event":"connect"' '"host":"203.0.113.2","port":80' | tail -n 1)"
check_has "a greeting refused for its methods is audited" '"reason":"socks-no-method"' \
	"$(audit_match '"reason":"socks-no-method"' '"proto":"socks5"')"
check "... and none of them reached the canary" "$before" "$(world_canary_count)"

# ---- `sluice gateway` serves SOCKS5 on its --listen port too ----
world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen 203.0.113.1:3130 \
	--resolver "$N:53" --audit "$T/gw-audit.log" --sandbox gw --header-timeout 1000 \
	>>"$T/gw.log" 2>&1
world_pids+=($!)
for _ in $(seq 50); do
	world_host python3 -c "import socket; socket.create_connection(('203.0.113.1', 3130), 1)" \
		2>/dev/null && break
	sleep 0.1
done
gsc() { world_host env ALL_PROXY=socks5h://203.0.113.1:3130 python3 "$T/socksclient.py" "$@"; }
check "sluice gateway: curl --socks5-hostname reaches an allowed host" \
	"origin GET /gw-socks host=allowed.test body=0" \
	"$(world_host curl -sS -m 10 --socks5-hostname 203.0.113.1:3130 http://allowed.test/gw-socks)"
check "... a denied name: reply 2" "rep=2" "$(gsc request name denied.test 443)"
check "... half a greeting past --header-timeout: closed without a reply" "got=b''" \
	"$(gsc partial 5)"
# Records are written as connections end, a moment after the client saw it.
timeouts() {
	for _ in $(seq 100); do
		[ "$(grep -c '"reason":"header-timeout"' "$T/gw-audit.log")" -ge "$1" ] && break
		sleep 0.05
	done
	grep '"reason":"header-timeout"' "$T/gw-audit.log" | tail -n 1
}
check_has "... audited as a timeout" '"proto":"socks5"' "$(timeouts 1)"
check "... half a request past it: reply 1 (general failure), then closed" "rep=1" \
	"$(gsc partial-request)"
check_has "... audited, with socks5" '"reason":"header-timeout","tls":null,"sni":null,"credential":null,"proto":"socks5"' \
	"$(timeouts 2)"

finish
