#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A client that reads slowly must not take `sluice gateway` down. The
# gateway holds what the client has not read yet (up to a cap, 1 MiB, then
# it stops reading the origin until half of it is written). The exchange
# that found the crash: a plain-HTTP GET with `Connection: close`, whose
# kept-alive origin connection goes back to the pool when the response
# ends; when the read that ends it is also the one that takes what is held
# for the client over the cap, the gateway went to stop reading from the
# upstream connection it had just let go of (a NULL one: SIGSEGV).
#
# Which read ends over the cap depends on the kernel's buffers: the host's
# TCP buffers are made small and fixed here (this namespace's sysctls), so
# that what the client's side of the kernel takes is a few KiB, and the
# responses' sizes sweep the cap in steps smaller than a read. No client
# reads until every response has had the time to end; then each reads its
# response, which must be whole, and the gateway must still be alive.
#
# Usage: test-slow-client.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-slow-client.sh ip nft nsenter python3 dnsmasq

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw
mkdir -m 777 "$R"

cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$N
bind-interfaces
address=/big.test/$N
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 80:size
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }

# The host's TCP buffers, small and fixed (before the gateway's sockets are
# made): the gateway's reads from the origin and what the kernel holds for
# the client are a few KiB each.
world_host sysctl -q -w net.ipv4.tcp_rmem="4096 8192 8192" net.ipv4.tcp_wmem="4096 8192 8192" ||
	{ echo "not ok - the host namespace's TCP buffers could not be set"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: big.test
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test || exit 1
gw_pid=$world_gw_pid
alive() { kill -0 "$gw_pid" 2>/dev/null && echo yes; }

# Responses of CAP-32 KiB to CAP+94 KiB, 2 KiB apart, one client connection
# each, all open at once; nobody reads for 2 s, then each reads its own.
out=$(world_host "$PY" - <<'PYC'
import socket, time
CAP = 1 << 20
sizes = [CAP - 16384 + 1024 * i for i in range(128)]
socks = []
for n in sizes:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect(("203.0.113.1", 3128))
    s.sendall(b"GET http://big.test/size/%d HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n" % n)
    socks.append(s)
time.sleep(2)
whole = 0
for n, s in zip(sizes, socks):
    data = b""
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            data += d
    except OSError:
        pass
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 200") and len(body) == n and body.count(b"x") == n:
        whole += 1
print("whole %d of %d" % (whole, len(sizes)))
PYC
)
check "the gateway is alive after slow clients got the ends of pooled responses" "yes" "$(alive)"
check "... each client got its response whole" "whole 128 of 128" "$out"
check "... and it still serves" "whole 1 of 1" "$(world_host "$PY" - <<'PYC'
import socket
s = socket.create_connection(("203.0.113.1", 3128), timeout=10)
s.sendall(b"GET http://big.test/size/10 HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print("whole %d of 1" % (data.endswith(b"\r\n\r\nxxxxxxxxxx") and data.startswith(b"HTTP/1.1 200")))
PYC
)"
check_lacks "... and said no BUG" "BUG" "$(cat "$T/gw.log")"
finish
