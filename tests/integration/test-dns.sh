#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The gateway's DNS server against real clients in the test world: sluice
# runs in the world's host namespace with --dns, dnsmasq in the "internet"
# namespace is its upstream resolver and logs every query it gets. Allowed
# names resolve (UDP and TCP), denied names get NXDOMAIN and never reach
# dnsmasq, special addresses are never answered, malformed messages and
# floods leave the server alive, and `sluice run` resolves through it.
#
# Usage: test-dns.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-dns.sh needs root (network namespaces)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter python3 dnsmasq dig getent; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done

. "$here/world.sh"
PY=/usr/bin/python3
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
notok() { failed=$((failed + 1)); echo "not ok - $*"; }
# check NAME WANT GOT
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1: got '$3', want '$2'"; fi; }
# check_has NAME NEEDLE HAYSTACK
check_has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else notok "$1: '$2' not in: $3"; fi
}
check_lacks() {
	if grep -qF -- "$2" <<<"$3"; then notok "$1: '$2' found in: $3"; else ok "$1"; fi
}

gw_pid=
cleanup() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
S=$WORLD_HOST_ADDR # the gateway's DNS server

cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$WORLD_NET_ADDR
bind-interfaces
local-ttl=300
address=/allowed.test/$WORLD_NET_ADDR
address=/allowed.test/2001:db8::2
address=/wild.test/$WORLD_NET_ADDR
address=/denied.test/$WORLD_NET_ADDR
address=/private.test/10.99.0.2
address=/loop.test/127.0.0.1
address=/meta.test/169.254.169.254
address=/self.test/$WORLD_HOST_ADDR
local=/gone.test/
host-record=mixed.test,10.99.0.3
host-record=mixed.test,203.0.113.5
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=

cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
  - host: "*.wild.test"
  - host: private.test
  - host: loop.test
  - host: meta.test
  - host: self.test
  - host: mixed.test
  - host: gone.test
deny:
  - host: bad.wild.test
P

start_gateway() {
	world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen "$S:3128" \
		--dns "$S:53" --resolver "$WORLD_NET_ADDR:53" --audit "$T/audit.log" \
		--sandbox test >>"$T/gw.log" 2>&1
	gw_pid=$!
	for _ in $(seq 50); do
		world_host ss -Hlun "sport = :53" 2>/dev/null | grep -q . &&
			world_host ss -Hltn "sport = :53" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}
start_gateway || { echo "not ok - the gateway did not start: $(cat "$T/gw.log")"; exit 1; }
ok "the gateway serves DNS on $S:53, UDP and TCP"

dq() { world_host "$PY" "$here/lib/dnsclient.py" "$S" "$@" 2>&1; }
dig_() { world_host dig @"$S" +time=3 +tries=1 "$@" 2>&1; }
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1" | head -n1; }

# ---- Allowed names ----
check "dig A allowed.test" "$WORLD_NET_ADDR" "$(dig_ +short A allowed.test)"
check "dig AAAA allowed.test" "2001:db8::2" "$(dig_ +short AAAA allowed.test)"
out=$(dq q allowed.test A)
check "the TTL is capped at 60 s (dnsmasq says 300)" "0 60 $WORLD_NET_ADDR" "$out"
# Mixed case comes back byte for byte (DNS 0x20); dnsclient.py checks it.
check "a mixed-case query is answered with its question echoed" "0 60 $WORLD_NET_ADDR" \
	"$(dq q AlLoWeD.TeSt A)"
check "a name under an allowed wildcard resolves" "$WORLD_NET_ADDR" "$(dig_ +short a.wild.test)"
check "TCP: dig +tcp A allowed.test" "$WORLD_NET_ADDR" "$(dig_ +tcp +short A allowed.test)"
check "TCP: python, one query" "0 60 $WORLD_NET_ADDR" "$(dq q allowed.test A tcp)"
check "TCP: 12 pipelined queries on one connection are all answered" 12 "$(dq pipeline 12)"
check "TCP: 100 pipelined queries (more than the 16 in flight) are all answered" 100 \
	"$(dq pipeline 100)"
check "TCP: after a half-close the replies still come" 20 "$(dq pipeline 20 halfclose)"
out=$(dq idle)
if [ "$out" -ge 9 ] 2>/dev/null && [ "$out" -le 12 ]; then
	ok "TCP: an idle connection is closed after 10 s"
else
	notok "TCP: an idle connection is closed after 10 s: after $out s"
fi
out=$(dig_ TXT allowed.test)
check "TXT for an allowed name: NOERROR" NOERROR "$(status_of "$out")"
check_has "... with no answer (NODATA)" "ANSWER: 0" "$out"
check "HTTPS for an allowed name: NODATA" "0 -" "$(dq q allowed.test HTTPS)"
out=$(dig_ A gone.test)
check "an allowed name upstream does not know: NXDOMAIN" NXDOMAIN "$(status_of "$out")"

# ---- Denied names: NXDOMAIN, and never asked upstream ----
out=$(dig_ A denied.test)
check "dig A denied.test: NXDOMAIN" NXDOMAIN "$(status_of "$out")"
check_has "... with no answer" "ANSWER: 0" "$out"
check "a name no rule names: NXDOMAIN (python)" "3 -" "$(dq q nothere.test A)"
check "the wildcard's own suffix is not below it: NXDOMAIN" "3 -" "$(dq q wild.test A)"
check "a name a deny rule names: NXDOMAIN" "3 -" "$(dq q bad.wild.test A)"
check "CH class for an allowed name: REFUSED" "5 -" \
	"$(world_host "$PY" -c "
import struct, socket
m = struct.pack('>HHHHHH', 7, 0x100, 1, 0, 0, 0) + b'\x07allowed\x04test\x00' + struct.pack('>HH', 16, 3)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(m, ('$S', 53))
r = s.recv(600); print(r[3] & 15, '-')")"
token=leak$RANDOM$RANDOM$RANDOM
for t in A AAAA TXT MX HTTPS ANY; do dq q "$token.denied.test" $t >/dev/null; done
dq q "$token.denied.test" A tcp >/dev/null
dig_ +short "data-$token.nothere.test" >/dev/null
sleep 0.3
log=$(cat "$T/dns.log" 2>/dev/null)
check_has "dnsmasq logs the allowed queries (the log works)" "allowed.test from" "$log"
check_lacks "a unique name under a denied domain never reaches dnsmasq" "$token" "$log"
check_lacks "... nor does the denied domain itself" "denied.test" "$log"
check_lacks "... nor any non-address query for an allowed name" "query[TXT]" "$log"

# ---- Special addresses are never answered ----
for n in private loop meta self; do
	out=$(dq q $n.test A)
	check "$n.test: NOERROR with no address" "0 -" "$out"
done
check "mixed.test: only the public address is answered" "0 60 203.0.113.5" "$(dq q mixed.test A)"

# ---- Malformed messages: FORMERR or nothing, and the server lives ----
out=$(dq garbage)
check_has "random bytes: an error or no reply" "random" \
	"$(grep -E '^random (noreply|rcode (1|4|5|16))$' <<<"$out")"
check "a 5-byte message gets no reply" "short noreply" "$(grep '^short' <<<"$out")"
check "a truncated question: FORMERR" "truncated rcode 1" "$(grep '^truncated' <<<"$out")"
check "a response (QR=1) gets no reply" "response noreply" "$(grep '^response' <<<"$out")"
check "two questions: FORMERR" "two-questions rcode 1" "$(grep '^two-questions' <<<"$out")"
check "a compressed question: FORMERR" "compressed rcode 1" "$(grep '^compressed' <<<"$out")"
check "trailing bytes: FORMERR" "trailing rcode 1" "$(grep '^trailing' <<<"$out")"
check "opcode STATUS: NOTIMP" "opcode rcode 4" "$(grep '^opcode' <<<"$out")"
check "a label with a space: REFUSED" "bad-label rcode 5" "$(grep '^bad-label' <<<"$out")"
check "a 6 kB datagram: FORMERR" "huge rcode 1" "$(grep '^huge' <<<"$out")"
check "an empty datagram gets no reply" "empty noreply" "$(grep '^empty' <<<"$out")"
check "TCP: a 64 KiB length prefix closes the connection" closed "$(dq tcpgarbage)"
check "the server still answers after all that" "$WORLD_NET_ADDR" "$(dig_ +short A allowed.test)"

# ---- Load: bounded, and everything answered ----
out=$(dq flood 2000 allowed.test nothere.test a.wild.test bad.wild.test)
check "2000 UDP queries, 200 in flight at a time, are all answered" "answered 2000 rcode0=1000 rcode3=1000" "$out"
out=$(dq conns 200)
if [ "$out" -le 64 ] 2>/dev/null; then
	ok "200 TCP connections at once: at most 64 kept open ($out)"
else
	notok "200 TCP connections at once: $out kept open, want at most 64"
fi
check "TCP still works after the connection flood" "0 60 $WORLD_NET_ADDR" "$(dq q allowed.test A tcp)"

# ---- Reload: private_addresses lets a range through ----
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
  - host: private.test
  - host: mixed.test
private_addresses: [10.99.0.0/24]
P
kill -HUP "$gw_pid"
for _ in $(seq 50); do grep -q reloaded "$T/gw.log" && break; sleep 0.1; done
check "after a reload with private_addresses, private.test answers" "0 60 10.99.0.2" \
	"$(dq q private.test A)"
check "... loop.test is no longer allowed: NXDOMAIN" "3 -" "$(dq q loop.test A)"
out=$(dq q mixed.test A | tr ' ' '\n' | sort | tr '\n' ' ')
check "... and mixed.test answers both addresses" "0 10.99.0.3 203.0.113.5 60 " "$out"

# ---- Audit ----
audit=$(cat "$T/audit.log" 2>/dev/null)
out=$(world_host "$PY" - "$T/audit.log" <<'PY' 2>&1
import json, sys
n = bad = 0
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        bad += 1
        continue
    n += 1
    if r.get("event") != "dns":
        bad += 1
print("records", n, "bad", bad)
PY
)
check_has "every audit line is valid JSON with event dns" " bad 0" "$out"
check_has "an allowed query is audited" \
	'"event":"dns","client":"203.0.113.1:' "$audit"
check_has "... with its name, type, rcode and decision" \
	'"method":"A","host":"allowed.test","port":null,"path":null,"status":0,"decision":"allow"' "$audit"
check_has "a denied query is audited as no-rule, NXDOMAIN" \
	"\"method\":\"TXT\",\"host\":\"$token.denied.test\",\"port\":null,\"path\":null,\"status\":3,\"decision\":\"deny\",\"rule\":null,\"reason\":\"no-rule\"" "$audit"
check_has "a deny rule is named" '"host":"bad.wild.test","port":null,"path":null,"status":3,"decision":"deny","rule":"deny[1]","reason":"deny-rule"' "$audit"
check_has "an answer emptied of special addresses is audited" \
	'"host":"loop.test","port":null,"path":null,"status":0,"decision":"deny","rule":null,"reason":"private-address"' "$audit"
check_has "malformed messages are audited" '"reason":"malformed"' "$audit"

# ---- Stop ----
kill -TERM "$gw_pid"
for _ in $(seq 100); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$gw_pid" 2>/dev/null; then notok "SIGTERM stops the gateway"; else ok "SIGTERM stops the gateway"; fi
wait "$gw_pid"
check "... cleanly, exit status 0 (and no leak under ASan)" 0 "$?"
gw_pid=
if grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$T/gw.log"; then
	notok "the sanitizers found something: $(grep -m3 -A5 "Sanitizer\|runtime error" "$T/gw.log")"
fi

# ---- sluice run: the sandbox's resolv.conf names the gateway ----
cat >"$T/run.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
P
run() { world_host "$SLUICE" run --ro "$T" --policy "$T/run.yaml" --resolver "$WORLD_NET_ADDR:53" "$@"; }
out=$(run -- getent ahostsv4 allowed.test 2>&1)
check_has "sluice run: getent ahostsv4 allowed.test resolves through the gateway" \
	"$WORLD_NET_ADDR" "$out"
out=$(run -- getent ahostsv4 denied.test 2>&1); rc=$?
check "sluice run: getent ahostsv4 denied.test fails" "2 " "$rc $(grep -o '203\.[0-9.]*' <<<"$out")"
# A resolver that ignores resolv.conf is sent to the gateway as well.
out=$(run -- dig @192.0.2.53 +time=2 +tries=1 +short allowed.test 2>&1)
check "sluice run: a query to another server is answered by the gateway" "$WORLD_NET_ADDR" "$out"
check "the canary saw no packet" 0 "$(world_canary_count)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
