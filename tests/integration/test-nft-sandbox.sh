#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The sandbox and host-side rulesets against real packets, as root, only in
# three namespaces this test creates and removes:
#
#   S slt-nft-s$$  sandbox   v0 198.51.100.2/30, 2001:db8:1::2/64, default via G
#   G slt-nft-g$$  gateway   v1 198.51.100.1/30 (listeners :3128 :3129 :22, udp :53),
#                            v2 203.0.113.1/24, ip_forward on
#   I slt-nft-i$$  internet  v3 203.0.113.2/24: listeners and a canary counting
#                            every packet that arrives from elsewhere
#
# Usage: test-nft-sandbox.sh [PATH-TO-nft-apply]  (default: $NFT_APPLY, then
# build/nftables/nft-apply). Exit 0 passed, 1 failed, 77 skipped (not root).
set -u

here=$(cd "$(dirname "$0")" && pwd)
APPLY=${1:-${NFT_APPLY:-$here/../../build/nftables/nft-apply}}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

if [ "$(id -u)" != 0 ]; then
	echo "# test-nft-sandbox.sh needs root (network namespaces, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft "$PY"; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$APPLY" ] || { echo "not ok - no nft-apply at $APPLY"; exit 1; }

S=slt-nft-s$$
G=slt-nft-g$$
I=slt-nft-i$$
tmp=$(mktemp -d /tmp/slt-nft-sandbox.XXXXXX)
chmod 755 "$tmp" # another uid runs the probe too
pids=()
failed=0
passed=0

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	for n in "$S" "$G" "$I"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { local d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
ins() { ip netns exec "$S" "$@"; }
ing() { ip netns exec "$G" "$@"; }
ini() { ip netns exec "$I" "$@"; }

# ---- the world ----
for n in "$S" "$G" "$I"; do ip netns add "$n" || { echo "not ok - netns $n"; exit 1; }; done
for n in "$S" "$G" "$I"; do ip -n "$n" link set lo up; done
ip -n "$S" link add v0 type veth peer name v1 netns "$G"
ip -n "$G" link add v2 type veth peer name v3 netns "$I"
ip -n "$S" addr add 198.51.100.2/30 dev v0
ip -n "$S" addr add 2001:db8:1::2/64 dev v0 nodad
ip -n "$G" addr add 198.51.100.1/30 dev v1
ip -n "$G" addr add 2001:db8:1::1/64 dev v1 nodad
ip -n "$G" addr add 203.0.113.1/24 dev v2
ip -n "$I" addr add 203.0.113.2/24 dev v3
for l in "$S v0" "$G v1" "$G v2" "$I v3"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n "$S" route add default via 198.51.100.1
ip -n "$I" route add 198.51.100.0/30 via 203.0.113.1
ing sysctl -qw net.ipv4.ip_forward=1
ins sysctl -qw net.ipv4.ping_group_range="0 2147483647"

ini nft -f - <<'EOF' || { echo "not ok - cannot install the canary"; exit 1; }
table inet canary {
	chain pre {
		type filter hook prerouting priority -300; policy accept;
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, mld-listener-report, mld2-listener-report } return
		ip saddr 198.51.100.2 counter
	}
}
EOF
canary() { ini nft list chain inet canary pre | awk '/counter packets/ { n += $(NF-2) } END { print n + 0 }'; }

# Same listener and probe as test-guard.sh (kept short here on purpose).
cat >"$tmp/serve.py" <<'EOF'
import selectors, socket, sys, time
out, specs = sys.argv[1], sys.argv[2:]
sel = selectors.DefaultSelector()
for spec in specs:
    proto, host, port = spec.split(",")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    if proto == "tcp":
        s.listen(16)
    sel.register(s, selectors.EVENT_READ, (proto, spec))
open(out + ".ready", "w").close()
end = time.monotonic() + 300
while time.monotonic() < end:
    for key, _ in sel.select(timeout=1):
        proto, spec = key.data
        if proto == "tcp":
            c, _ = key.fileobj.accept()
            c.settimeout(2)
            try:
                c.sendall(c.recv(100))
            except OSError:
                pass
            c.close()
        else:
            data, peer = key.fileobj.recvfrom(100)
            key.fileobj.sendto(data, peer)
        with open(out, "a") as f:
            f.write(spec + "\n")
EOF
cat >"$tmp/probe.py" <<'EOF'
import errno, socket, sys
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
try:
    if mode == "tcp":
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, port))
        s.sendall(b"ping")
        print("ok" if s.recv(100) == b"ping" else "no-echo")
    elif mode == "udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(2)
        s.sendto(b"ping", (host, port))
        print("ok" if s.recv(100) == b"ping" else "no-echo")
    else:
        proto = socket.IPPROTO_ICMPV6 if fam == socket.AF_INET6 else socket.IPPROTO_ICMP
        s = socket.socket(fam, socket.SOCK_DGRAM, proto)
        s.settimeout(2)
        s.sendto(b"\x80\0\0\0\0\0\0\0" if fam == socket.AF_INET6 else b"\x08\0\0\0\0\0\0\0", (host, 0))
        s.recv(100)
        print("ok")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF
touch "$tmp/g.log" "$tmp/i.log"
ip netns exec "$G" "$PY" "$tmp/serve.py" "$tmp/g.log" tcp,198.51.100.1,3128 tcp,198.51.100.1,3129 \
	tcp,198.51.100.1,22 udp,198.51.100.1,53 tcp,203.0.113.1,3128 &
pids+=($!)
ip netns exec "$I" "$PY" "$tmp/serve.py" "$tmp/i.log" tcp,203.0.113.2,80 udp,203.0.113.2,53 &
pids+=($!)
for _ in $(seq 50); do
	[ -e "$tmp/g.log.ready" ] && [ -e "$tmp/i.log.ready" ] && break
	sleep 0.1
done
[ -e "$tmp/g.log.ready" ] && [ -e "$tmp/i.log.ready" ] || { echo "not ok - listeners"; exit 1; }

probe() { ins timeout 10 "$PY" "$tmp/probe.py" "$@"; }
expect() { # expect DESCRIPTION WANTED MODE HOST PORT
	local d=$1 want=$2 got; shift 2
	got=$(probe "$@")
	if [ "$got" = "$want" ]; then ok "$d ($got)"; else notok "$d: wanted $want, got '$got'"; fi
}
expect_not() {
	local d=$1 bad=$2 got; shift 2
	got=$(probe "$@")
	if [ "$got" != "$bad" ] && [ -n "$got" ]; then ok "$d ($got)"; else notok "$d: got '$got'"; fi
}

# ---- without rules, the world is open (so the checks below mean something) ----
expect "no rules: the sandbox reaches 203.0.113.2:80 (forwarded by G)" ok tcp 203.0.113.2 80
expect "no rules: the sandbox reaches G's sshd stand-in :22" ok tcp 198.51.100.1 22

# ---- host side: the veth reaches only the gateway ports, never forwarded ----
mkfifo "$tmp/hold"
ip netns exec "$G" "$APPLY" host sb1 v1 198.51.100.1 198.51.100.2 3128,3129 53 <"$tmp/hold" >"$tmp/host.out" 2>&1 &
hold_pid=$!
pids+=($hold_pid)
exec 9>"$tmp/hold"
for _ in $(seq 50); do grep -q applied "$tmp/host.out" && break; sleep 0.1; done
check "host ruleset applied with the owner flag ($(cat "$tmp/host.out"))" grep -q "applied owner=1" "$tmp/host.out"
c0=$(canary)
expect "host rules: the sandbox reaches the gateway :3128" ok tcp 198.51.100.1 3128
expect "host rules: udp 53 to the gateway works" ok udp 198.51.100.1 53
expect_not "host rules: not G's :22" ok tcp 198.51.100.1 22
expect_not "host rules: not G's other address 203.0.113.1:3128" ok tcp 203.0.113.1 3128
expect_not "host rules: nothing forwarded to 203.0.113.2:80" ok tcp 203.0.113.2 80
expect_not "host rules: no udp forwarded to 203.0.113.2:53" ok udp 203.0.113.2 53
c1=$(canary)
check "host rules: the canary saw nothing ($c0 then $c1)" [ "$c0" = "$c1" ]
# The gateway answers only the sandbox: not a process in G itself (on lo,
# as another uid would), whatever source it picks, nor I, which routes
# the sandbox's /30 to G.
g0=$(grep -c '^tcp,198.51.100.1,3128$' "$tmp/g.log")
got=$(ing timeout 10 "$PY" "$tmp/probe.py" tcp 198.51.100.1 3128)
check "host rules: G's own processes (lo) do not reach the gateway :3128 ($got)" [ "$got" = timeout ]
got=$(ing timeout 10 setpriv --reuid 65533 --regid 65533 --clear-groups "$PY" "$tmp/probe.py" tcp 198.51.100.1 3128)
check "host rules: ... nor another uid there ($got)" [ "$got" = timeout ]
got=$(ing timeout 10 "$PY" "$tmp/probe.py" udp 198.51.100.1 53)
check "host rules: ... nor its udp to :53 ($got)" [ "$got" = timeout ]
got=$(ini timeout 10 "$PY" "$tmp/probe.py" tcp 198.51.100.1 3128)
check "host rules: a neighbour routing the pool here does not reach :3128 ($got)" [ "$got" = timeout ]
check "host rules: ... and the gateway's listener saw none of them" \
	[ "$(grep -c '^tcp,198.51.100.1,3128$' "$tmp/g.log")" = "$g0" ]
exec 9>&-
for _ in $(seq 50); do kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.1; done
check "closing the owner socket removes table inet sluice-sb1" \
	bash -c "! ip netns exec $G nft list table inet sluice-sb1 >/dev/null 2>&1"

# ---- sandbox ruleset with transparent capture and DNS ----
ip netns exec "$S" "$APPLY" nflog 7 4 8000 >"$tmp/nflog.out" 2>&1 &
nflog_pid=$!
pids+=($nflog_pid)
for _ in $(seq 50); do grep -q ready "$tmp/nflog.out" && break; sleep 0.1; done
# The capture listener lives inside the sandbox, on its loopback.
touch "$tmp/s.log"
ip netns exec "$S" "$PY" "$tmp/serve.py" "$tmp/s.log" tcp,127.0.0.1,3129 &
pids+=($!)
for _ in $(seq 50); do [ -e "$tmp/s.log.ready" ] && break; sleep 0.1; done
out=$(ins "$APPLY" sandbox 198.51.100.1 3128 53 7 3129 53 2>&1)
check "sandbox ruleset applied (capture 3129, dns 53) $out" [ $? -eq 0 ]
c0=$(canary)
cap0=$(grep -c '^tcp,127.0.0.1,3129$' "$tmp/s.log")
dns0=$(grep -c '^udp,198.51.100.1,53$' "$tmp/g.log")
expect "sandbox: reaches the gateway :3128" ok tcp 198.51.100.1 3128
expect "sandbox: 203.0.113.2:80 is captured by the listener on its own :3129" ok tcp 203.0.113.2 80
check "sandbox: ... and the capture listener got it" \
	[ "$(grep -c '^tcp,127.0.0.1,3129$' "$tmp/s.log")" -gt "$cap0" ]
expect "sandbox: dns to 203.0.113.2:53 is answered by the gateway" ok udp 203.0.113.2 53
check "sandbox: ... and the gateway's dns listener got it" \
	[ "$(grep -c '^udp,198.51.100.1,53$' "$tmp/g.log")" -gt "$dns0" ]
# These four are blocked and each leaves one NFLOG copy.
expect "sandbox: G's :22 is refused at once (reset)" ECONNREFUSED tcp 198.51.100.1 22
expect "sandbox: udp to 203.0.113.2:5000 is refused" EPERM udp 203.0.113.2 5000
expect_not "sandbox: no ping to 203.0.113.2" ok icmp 203.0.113.2 0
expect "sandbox: no IPv6, even to the gateway (reset)" ECONNREFUSED tcp 2001:db8:1::1 3128
c1=$(canary)
check "sandbox: the canary saw nothing ($c0 then $c1)" [ "$c0" = "$c1" ]
for _ in $(seq 100); do kill -0 "$nflog_pid" 2>/dev/null || break; sleep 0.1; done
check "nflog: the blocked tcp to :22 was copied" grep -q "sluice-blocked: *proto=6 dst=198.51.100.1" "$tmp/nflog.out"
check "nflog: the blocked udp was copied" grep -q "proto=17 dst=203.0.113.2" "$tmp/nflog.out"
check "nflog: the blocked ping was copied" grep -q "proto=1 dst=203.0.113.2" "$tmp/nflog.out"
check "nflog: the blocked IPv6 was copied" grep -q "proto=6 dst=2001:db8:1::1" "$tmp/nflog.out"
sed 's/^/# /' "$tmp/nflog.out"

# ---- blocked packets are counted; copies to NFLOG are rate-limited ----
ins "$PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(1000):
    try: s.sendto(b"x", ("203.0.113.2", 6000 + i % 100))
    except OSError: pass'
counters=$(ins nft list counters table inet sluice 2>&1)
blocked=$(awk '/counter blocked/ {f=1} f && /packets/ {print $2; exit}' <<<"$counters")
logged=$(awk '/counter logged/ {f=1} f && /packets/ {print $2; exit}' <<<"$counters")
check "rate limit: 1000 blocked udp sends all counted (blocked=$blocked)" [ "${blocked:-0}" -ge 1000 ]
check "rate limit: at most a burst of them copied to nflog (logged=$logged)" \
	sh -c "[ ${logged:-9999} -le 150 ] && [ ${logged:-0} -ge 1 ]"
c3=$(canary)
check "rate limit: none got out ($c1 then $c3)" [ "$c1" = "$c3" ]

# ---- again without capture: replaced atomically, TCP elsewhere refused ----
out=$(ins "$APPLY" sandbox 198.51.100.1 3128 53 7 2>&1)
check "sandbox ruleset re-applied without capture $out" [ $? -eq 0 ]
check "re-apply replaced the table (no nat chain left)" \
	bash -c "! ip netns exec $S nft list ruleset | grep -q nat_output"
expect "no capture: 203.0.113.2:80 is refused at once (reset)" ECONNREFUSED tcp 203.0.113.2 80
c2=$(canary)
check "no capture: the canary saw nothing ($c1 then $c2)" [ "$c1" = "$c2" ]

# ---- errors are readable ----
out=$(ins "$APPLY" sandbox 0.0.0.0 3128 53 7 2>&1)
check "a bad config gives a message: $out" grep -q "no gateway address" <<<"$out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
