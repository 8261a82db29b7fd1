#!/bin/bash
# SPDX-License-Identifier: MIT
#
# DNS carries no data: the gateway's lookups are absolute (no search domain
# of the host's resolv.conf is ever tried), a wildcard rule lets at most
# the budget's new names per minute reach the upstream resolver whichever
# way they come (the sandbox's DNS, CONNECT), exact_dns keeps a wildcard's
# names out of the sandbox's DNS, HTTPS/SVCB (ECH configurations) are never
# asked upstream nor handed out, and a captured connection to an address
# that two allowed names share is decided by every name the sandbox was
# given for it. The evidence is dnsmasq's query log (the upstream
# resolver's), the answers the clients got, and the audit log.
#
# Usage: test-dns-channel.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-dns-channel.sh ip nft nsenter unshare python3 dnsmasq dig
# Its hays are whole logs: a failure shows their first 2000 characters.
check_has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else notok "$1: '$2' not in: ${3:0:2000}"; fi
}

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
S=$WORLD_HOST_ADDR # the gateway's DNS server and proxy

# An HTTPS record (RFC 9460) for cdn-b.test that carries an `ech` value:
# priority 1, target ".", key 5 (ech), 4 bytes. A resolver that forwarded
# the question would hand the sandbox an ECH configuration.
https_rr=0001000005000400ec4c0de0
world_dnsmasq "local-ttl=300
dns-rr=cdn-b.test,65,$https_rr
dns-rr=cdn-b.test,64,$https_rr" wild.test="$N" exact.test="$N" cdn-a.test="$N" cdn-b.test="$N" ||
	{ echo "not ok - dnsmasq"; exit 1; }

# The host's resolv.conf as the gateway sees it (in a mount namespace of
# its own, never the machine's file): a search domain, and ndots high
# enough that a resolver honouring it would try NAME.srch.test first.
printf 'search srch.test\noptions ndots:5\nnameserver %s\n' "$N" >"$T/resolv.conf"

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: "*.wild.test"
  - host: "*.exact.test"
    exact_dns: true
  - host: cdn-a.test
    ports: [22]
    protocol: tcp
  - host: cdn-b.test
P

world_gateway_up "$T/gw.log" udp:53,3128 unshare -m --propagation private sh -c \
	'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh "$T/resolv.conf" \
	"$SLUICE" gateway --policy "$T/policy.yaml" --listen "$S:3128" --dns "$S:53" \
	--resolver "$N:53" --audit "$T/audit.log" --sandbox test || exit 1
gw_pid=$world_gw_pid

dig_() { world_host dig @"$S" +time=3 +tries=1 "$@" 2>&1; }
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1" | head -n1; }
# Wait (bounded) until dnsmasq's log holds a line with this text.
wait_log() {
	for _ in $(seq 50); do grep -qF -- "$1" "$T/dns.log" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}

# ---- Absolute names only ----
token=t$RANDOM$RANDOM
check "a name under the wildcard resolves" "$N" "$(dig_ +short A "first-$token.wild.test")"
wait_log "first-$token.wild.test" || notok "dnsmasq's log shows the query"
check_lacks "... and no search domain was tried upstream (NAME.srch.test)" "srch.test" \
	"$(cat "$T/dns.log")"

# ---- HTTPS and SVCB: never asked upstream, never answered ----
# rcode and the number of answers, for a type by number.
ancount() {
	world_host "$PY" - "$1" "$2" "$3" <<'PY'
import socket, struct, sys
server, name, qtype = sys.argv[1], sys.argv[2], int(sys.argv[3])
q = struct.pack(">HHHHHH", 0x5151, 0x100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
q += struct.pack(">HH", qtype, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
s.sendto(q, (server, 53))
r = s.recv(4096)
print(r[3] & 15, struct.unpack(">H", r[6:8])[0])
PY
}
check "HTTPS (65) for cdn-b.test: NOERROR, no answer (no ECH config)" "0 0" "$(ancount "$S" cdn-b.test 65)"
check "SVCB (64) for cdn-b.test: NOERROR, no answer" "0 0" "$(ancount "$S" cdn-b.test 64)"
check "HTTPS under the wildcard: no answer" "0 0" "$(ancount "$S" "svc-$token.wild.test" 65)"

# ---- exact_dns: the sandbox's DNS does not answer under the wildcard ----
out=$(dig_ A "q-$token.exact.test")
check "exact_dns: a name under it is NXDOMAIN from the sandbox's DNS" NXDOMAIN "$(status_of "$out")"
# The proxy still reaches it: the gateway resolves it itself (no origin
# listens, so the connect fails; the name did go, under the budget).
world_host curl -s -m 10 -o /dev/null -p -x "http://$S:3128" "https://c-$token.exact.test/" 2>&1
wait_log "c-$token.exact.test" && ok "exact_dns: CONNECT to a name under it is resolved by the gateway" ||
	notok "exact_dns: CONNECT to a name under it is resolved by the gateway"
check_lacks "... while the sandbox's query never went upstream" "q-$token.exact.test" "$(cat "$T/dns.log")"

# ---- The budget: a burst of 1000 unique labels ----
out=$(world_host "$PY" - "$S" "$token" <<'PY'
import select, socket, struct, sys
server, token = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setblocking(False)
def q(i):
    name = "x%04d%s.wild.test" % (i, token)
    m = struct.pack(">HHHHHH", i, 0x100, 1, 0, 0, 0)
    m += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return m + struct.pack(">HH", 1, 1)
sent = got = 0
rcodes = {}
while got < 1000:
    while sent < 1000 and sent - got < 100:
        s.sendto(q(sent), (server, 53)); sent += 1
    r, _, _ = select.select([s], [], [], 5)
    if not r:
        break
    while True:
        try:
            m = s.recv(4096)
        except BlockingIOError:
            break
        got += 1
        rcodes[m[3] & 15] = rcodes.get(m[3] & 15, 0) + 1
print("answered", got, "noerror", rcodes.get(0, 0), "refused", rcodes.get(5, 0))
PY
)
answered=$(awk '{print $2}' <<<"$out")
noerror=$(awk '{print $4}' <<<"$out")
refused=$(awk '{print $6}' <<<"$out")
check "1000 unique names: every query answered" 1000 "$answered"
if [ "${noerror:-0}" -ge 1 ] && [ "${noerror:-999}" -le 60 ]; then
	ok "... at most 60 resolved ($noerror)"
else
	notok "... at most 60 resolved: $out"
fi
check "... the rest REFUSED" 1000 "$((noerror + refused))"
# Every query the burst's names made upstream is in the log once they were
# answered; the answers came after the upstream's.
upstream=$(grep -oE "query\[A+\] x[0-9]{4}$token\.wild\.test" "$T/dns.log" | awk '{print $2}' | sort -u | wc -l)
if [ "$upstream" -ge 1 ] && [ "$upstream" -le 60 ]; then
	ok "dnsmasq saw at most 60 of the 1000 names ($upstream)"
else
	notok "dnsmasq saw $upstream of the 1000 names, want 1..60"
fi
check "... exactly the ones that resolved" "$noerror" "$upstream"
audit=$(cat "$T/audit.log")
check "the budget is audited once for the window, not per query" 1 \
	"$(grep -c '"reason":"dns-budget: 60 new names under \*\.wild\.test' <<<"$audit")"
check_has "... naming the wildcard rule" '"decision":"deny","rule":"allow[1]","reason":"dns-budget:' "$audit"
n=$(grep -c "x[0-9]\{4\}$token" <<<"$audit")
if [ "$n" -le 61 ]; then ok "refused queries are not audited one by one ($n records)"; else notok "refused queries are not audited one by one: $n records"; fi
check "a name resolved before the burst still resolves (the cache)" "$N" \
	"$(dig_ +short A "first-$token.wild.test")"
out=$(dig_ A "late-$token.wild.test")
check "a new name now: REFUSED" REFUSED "$(status_of "$out")"
code=$(world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$S:3128" \
	"http://conn-$token.wild.test/" 2>&1)
check "the proxy path spends the same budget: HTTP 429" 429 "$code"
check_has "... audited as dns-budget" '"reason":"dns-budget"' "$(grep "conn-$token" "$T/audit.log")"
# dnsmasq logs in the order it gets queries: once a later one is in the
# log, so is anything the gateway sent before it.
sentinel() {
	world_host dig @"$N" +time=3 +tries=1 +short "sentinel$1-$token.test" >/dev/null 2>&1
	wait_log "sentinel$1-$token.test" || notok "dnsmasq logged the sentinel query $1"
}
sentinel 1
check_lacks "... and neither name reached upstream" "late-$token" "$(cat "$T/dns.log")"
check_lacks "... (the proxy's either)" "conn-$token" "$(cat "$T/dns.log")"

# Only now ask dnsmasq itself, directly, for HTTPS: it would have answered
# with the ECH record, and its log would have shown the query.
check_lacks "no HTTPS/SVCB query ever reached upstream" "query[HTTPS]" "$(cat "$T/dns.log")"
check_lacks "... nor SVCB" "query[SVCB]" "$(cat "$T/dns.log")"
check_lacks "... nor by number" "query[type=6" "$(cat "$T/dns.log")"
check "(dnsmasq does serve that record when asked directly)" "0 1" "$(ancount "$N" cdn-b.test 65)"
wait_log "cdn-b.test" && check_has "(and logs such a query)" "cdn-b.test" \
	"$(grep -E 'query\[(HTTPS|type=65)\]' "$T/dns.log")"

kill -TERM "$gw_pid"
for _ in $(seq 100); do kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
wait "$gw_pid"
check "the gateway stops cleanly" 0 "$?"
world_forget "$gw_pid"
if grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$T/gw.log"; then
	notok "the sanitizers found something: $(grep -m3 -A5 "Sanitizer\|runtime error" "$T/gw.log")"
fi

# ---- Two allowed names on one address: capture decides by either ----
# cdn-a.test allows port 22, cdn-b.test does not; both answer $N. The
# sandbox resolves cdn-a.test, then cdn-b.test (the last one answered),
# then connects to $N:22 ignoring the proxy, as ssh does.
cat >"$T/sshd.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 22)); s.listen(8)
open(sys.argv[2] + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.sendall(b"SSH-2.0-origin\r\n")
    c.settimeout(5)
    try:
        line = c.recv(200)
    except OSError:
        line = b""
    with open(sys.argv[2], "ab") as f:
        f.write(line)
    c.close()
PY
world_bg "$WORLD_NET" "$PY" "$T/sshd.py" "$N" "$T/ssh.log"
wait_for_file "$T/ssh.log.ready"
: >"$T/audit.log"
out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- "$PY" -c '
import socket
a = socket.getaddrinfo("cdn-a.test", 22, socket.AF_INET)[0][4][0]
b = socket.getaddrinfo("cdn-b.test", 22, socket.AF_INET)[0][4][0]
print("same address" if a == b else "different addresses")
s = socket.create_connection((b, 22), timeout=10)
s.sendall(b"SSH-2.0-sandbox\r\n")
print(s.recv(100).decode().strip())
' 2>&1)
check_has "both names answer the same address" "same address" "$out"
check_has "port 22 on it is allowed though cdn-b.test was resolved last" "SSH-2.0-origin" "$out"
check_has "... the origin got the client's bytes" "SSH-2.0-sandbox" "$(cat "$T/ssh.log" 2>/dev/null)"
check_has "... and the audit names the name that decided" \
	'"host":"cdn-a.test","port":22' "$(grep '"event":"connect"' "$T/audit.log")"
check_has "... allowed" '"decision":"allow"' "$(grep '"host":"cdn-a.test","port":22' "$T/audit.log")"

# The capture's SNI path spends the same budget (the run's own gateway, a
# fresh one): 80 TLS connections that ignore the proxy, each naming a new
# name under the wildcard in its SNI, which the gateway resolves itself.
: >"$T/audit.log"
world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- "$PY" -c '
import socket, ssl, sys
ctx = ssl.create_default_context()
for i in range(80):
    try:
        s = socket.create_connection((sys.argv[1], 443), timeout=5)
        ctx.wrap_socket(s, server_hostname="s%02d%s.wild.test" % (i, sys.argv[2]))
    except (OSError, ssl.SSLError):
        pass
' "$N" "$token" >/dev/null 2>&1
sentinel 2
upstream=$(grep -oE "query\[A+\] s[0-9]{2}$token\.wild\.test" "$T/dns.log" | awk '{print $2}' | sort -u | wc -l)
if [ "$upstream" -ge 1 ] && [ "$upstream" -le 60 ]; then
	ok "captured TLS: at most 60 of 80 new SNI names reached upstream ($upstream)"
else
	notok "captured TLS: $upstream of 80 new SNI names reached upstream, want 1..60"
fi
check_has "... the rest audited as dns-budget" '"reason":"dns-budget"' "$(cat "$T/audit.log")"
check "the canary saw no packet" 0 "$(world_canary_count)"

finish
