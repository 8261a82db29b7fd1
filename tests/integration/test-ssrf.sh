#!/bin/bash
# SPDX-License-Identifier: MIT
#
# SSRF edges of `sluice gateway`, in the test world: an allowed name whose
# answer is the gateway host's own address (written as IPv4, IPv4-mapped,
# NAT64, 6to4), an address the host gains after sluice started, a lookup
# that answers after the connect timeout, an idle pooled origin connection
# offered to another host, and --max-connections against the open-file
# limit. Listeners on the addresses that must not be reached log every
# connection they accept: the evidence is that log staying empty.
#
# Usage: test-ssrf.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-ssrf.sh ip nft nsenter python3 curl openssl prlimit

. "$here/world.sh"
world_begin
T=$WORLD_TMP
GW=203.0.113.1:3128
SELF=203.0.113.1      # the gateway host's own address (wh0)
NEW=198.51.100.77     # added to the host after sluice started
SLOW=198.51.100.88    # what slow.test resolves to, late
BIG=198.51.100.89     # answers every request with 600000 bytes
POOL_B=198.51.100.3   # a second origin, for pb.test
CAP=198.51.100.90     # tunnels for the connection-cap check
LATE=198.51.100.91    # reachable, until the host gets a local route for it
for a in $SLOW $BIG $POOL_B $CAP $LATE; do ip -n "$WORLD_NET" addr add $a/32 dev lo; done

# The upstream resolver: slow.test answers 1.5 s late, past the gateway's
# --connect-timeout (500 ms) but within c-ares' own 2 s per try.
world_bg "$WORLD_NET" "$PY" "$here/lib/slowdns.py" "$T/dns.log" "$WORLD_NET_ADDR" \
	self.test=$SELF own6.test=::ffff:$SELF nat64.test=64:ff9b::cb00:7101 \
	sixto4.test=2002:cb00:7101::1 new.test=$NEW "slow.test=$SLOW@1500" big.test=$BIG \
	pa.test=$WORLD_NET_ADDR pb.test=$POOL_B cap.test=$CAP late.test=$LATE
wait_for_file "$T/dns.log.ready" || { echo "not ok - the resolver did not start"; exit 1; }
touch "$T/dns.log"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=pa.test \
	-addext "subjectAltName=DNS:pa.test,DNS:pb.test" \
	-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
world_bg "$WORLD_NET" "$PY" "$here/lib/origin.py" "$T/origin.log" "$T/cert.pem" "$T/key.pem" \
	"$WORLD_NET_ADDR"
world_bg "$WORLD_NET" "$PY" "$here/lib/origin.py" "$T/origin2.log" "$T/cert.pem" "$T/key.pem" \
	"$POOL_B"
world_bg "$WORLD_NET" "$PY" "$here/lib/listener.py" "$T/net.log" "$SLOW:80" "$BIG:80=600000" \
	"$CAP:80=1" "$LATE:80=2"
for f in origin.log origin2.log net.log; do
	wait_for_file "$T/$f.ready" || { echo "not ok - $f's server did not start"; exit 1; }
	touch "$T/$f"
done

cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: self.test
  - host: own6.test
  - host: nat64.test
  - host: sixto4.test
  - host: new.test
  - host: slow.test
  - host: big.test
  - host: cap.test
  - host: late.test
  - host: pa.test
    ports: [443]
    methods: [GET]
  - host: pb.test
    ports: [443]
    methods: [GET]
P
mkdir -m 700 "$T/ca"

world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
	--resolver "$WORLD_NET_ADDR:53" --audit "$T/audit.log" --sandbox test \
	--upstream-ca "$T/cert.pem" --ca-dir "$T/ca" --connect-timeout 500 || exit 1

# An address the host gains after sluice read its list (DHCP, a new
# interface), then listeners on it and on the host's own address.
ip -n "$WORLD_HOST" addr add $NEW/32 dev lo
world_host_bg "$PY" "$here/lib/listener.py" "$T/host.log" "$SELF:80" "$SELF:443" "$NEW:80" \
	"$NEW:443"
world_pids+=($!)
wait_for_file "$T/host.log.ready" || { echo "not ok - the host's listeners did not start"; exit 1; }
touch "$T/host.log"

code() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" "$@" 2>/dev/null; }
connect_code() {
	world_host curl -s -m 10 -p -o /dev/null -w '%{http_connect}' -x "http://$GW" "$@" 2>/dev/null
}
# The newest audit record for HOST, as "status decision reason".
audit_for() {
	grep -F "\"host\":\"$1\"" "$T/audit.log" | tail -n 1 |
		"$PY" -c 'import json, sys; r = json.load(sys.stdin); print(r["status"], r["decision"], r["reason"])'
}
# What the host's listeners on ADDR accepted ("none": nothing).
host_log() { grep -F "accept $1:" "$T/host.log" | tr '\n' ' ' | grep . || echo none; }

# ==== the gateway host's own address, through the explicit proxy ====
check "curl -x to a name that resolves to the gateway host: 403" "403" \
	"$(code http://self.test/)"
check "CONNECT to it: 403" "403" "$(connect_code https://self.test/)"
check "... audited" "403 deny private-address" "$(audit_for self.test)"
check "AAAA ::ffff:$SELF (IPv4-mapped): 403" "403 403" \
	"$(code http://own6.test/) $(connect_code https://own6.test/)"
check "... audited" "403 deny private-address" "$(audit_for own6.test)"
check "AAAA 64:ff9b::cb00:7101 (NAT64 of $SELF): 403" "403" "$(code http://nat64.test/)"
check "AAAA 2002:cb00:7101::1 (6to4 of $SELF): 403" "403" "$(code http://sixto4.test/)"
check "... no connection reached the host's own address" "none" "$(host_log $SELF)"

# ==== an address the host gained after start ====
check "a name that resolves to an address added after start: 403" "403 403" \
	"$(code http://new.test/) $(connect_code https://new.test/)"
check "... audited" "403 deny private-address" "$(audit_for new.test)"
check "... nothing reached the new address" "none" "$(host_log $NEW)"

# ==== a route the host gained after an address was judged ====
# The kernel's answer (not the host's) is kept until a route, rule or
# address changes: a local route added later must be seen at once.
check "a name whose address is an origin's" "200" "$(code http://late.test/)"
check "... reached it" "yes" "$(grep -q "accept $LATE:80" "$T/net.log" && echo yes)"
ip -n "$WORLD_HOST" route add local $LATE/32 dev lo table local
check "the host gets a local route for that address: 403" "403" "$(code http://late.test/again)"
check "... audited" "403 deny private-address" "$(audit_for late.test)"
ip -n "$WORLD_HOST" route del local $LATE/32 dev lo table local
check "the route gone: reachable again" "200" "$(code http://late.test/back)"

# ==== a lookup that answers after the connect timeout ====
# The client pipelines a second request behind one whose 600000-byte
# answer it does not read (a tiny receive buffer): the gateway's 504 for
# the second waits to be written while the late answer arrives. Only once
# the resolver says it answered does the client read everything. The
# host namespace's send buffers are capped (this namespace only) so that
# most of the 600000 bytes wait in the gateway, not in the kernel.
ip netns exec "$WORLD_HOST" sysctl -qw net.ipv4.tcp_wmem="4096 16384 65536"
out=$(world_host "$PY" - "$T/dns.log" "$T/audit.log" <<'PYC'
import re, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("203.0.113.1", 3128))
s.sendall(b"GET http://big.test/first HTTP/1.1\r\nHost: big.test\r\n\r\n"
          b"GET http://slow.test/second HTTP/1.1\r\nHost: slow.test\r\n\r\n")
for _ in range(100):
    if "answered slow.test" in open(sys.argv[1]).read():
        break
    time.sleep(0.05)
else:
    print("the resolver never answered")
# The connection's record is written when it closes: none yet means the
# 504 is still waiting to be written, as this check needs.
if '"host":"slow.test"' in open(sys.argv[2]).read():
    print("the 504 was written before the late answer: this check proves nothing")
s.settimeout(10)
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
# The first body is all "x": every status line in the stream is found.
print(" ".join(m.decode() for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)))
PYC
)
check "a lookup past the connect timeout: 504 (after the first answer)" "200 504" "$out"
check "... audited as refused" "504 deny connect-timeout" "$(audit_for slow.test)"
check "... and when the late answer came, nothing connected to it" "0" \
	"$(grep -c "accept $SLOW:80" "$T/net.log")"
ip netns exec "$WORLD_HOST" sysctl -qw net.ipv4.tcp_wmem="4096 16384 4194304"

# ==== an idle pooled origin connection is for its own host only ====
cat "$T/ca/ca-bundle.crt" >"$T/clients.pem"
req() { world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x "http://$GW" --cacert "$T/clients.pem" "$@" 2>/dev/null; }
check "an inspected request to pa.test" "200" "$(req https://pa.test/one)"
check "then one to pb.test, after pa.test's connection went idle in the pool" "200" \
	"$(req https://pb.test/two)"
check "... pb.test's request reached pb.test's origin" "1" \
	"$(grep -c '^GET /two host=pb.test' "$T/origin2.log")"
check "... and never pa.test's (over its pooled connection)" "0" \
	"$(grep -c 'host=pb.test' "$T/origin.log")"

# ==== --max-connections and the open-file limit ====
out=$(world_host timeout 10 "$SLUICE" gateway --policy "$T/policy.yaml" --listen 127.0.0.1:3199 \
	--max-connections 1048576 2>&1)
rc=$?
check "a --max-connections that cannot fit the open-file limit is refused at start (exit 2)" "2" "$rc"
check_has "... saying what it needs" "--max-connections 1048576: 1048576 connections need 2097440 open files" "$out"

# Whether it started is for the checks below to say.
world_gateway_up "$T/gw2.log" 3129 prlimit --nofile=256:4096 "$SLUICE" gateway \
	--policy "$T/policy.yaml" --listen 203.0.113.1:3129 --resolver "$WORLD_NET_ADDR:53" \
	--max-connections 200 --connect-timeout 5000
gw2_pid=$world_gw_pid
check "under a soft limit of 256 files, --max-connections 200 raises it to what 200 need" "688" \
	"$(awk '/^Max open files/ { print $4 }' "/proc/$gw2_pid/limits")"
out=$(world_host "$PY" - <<'PYC'
import socket
socks, ok = [], 0
for i in range(200):
    s = socket.create_connection(("203.0.113.1", 3129), 10)
    s.sendall(b"CONNECT cap.test:80 HTTP/1.1\r\nHost: cap.test:80\r\n\r\n")
    socks.append(s)
for s in socks:
    s.settimeout(10)
    try:
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            ok += 1
    except OSError:
        pass
print(ok)
PYC
)
check "... and 200 tunnels open at once are all served" "200" "$out"

finish
