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
# response, which must be whole, and the gateway must still be alive. The
# same for the two other ways an exchange ends with its upstream pooled and
# the client's queue full: a kept-alive response followed by a pipelined
# `Connection: close` request (its small answer ends the second exchange
# while the first's bytes are still held), and inspected HTTPS.
#
# Usage: test-slow-client.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-slow-client.sh ip nft nsenter python3 dnsmasq openssl

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
R=$T/raw
mkdir -m 777 "$R"
world_services big.test=$N big2.test=$N || { echo "not ok - the world's services did not start"; exit 1; }
world_bg "$WORLD_NET" "$PY" "$here/lib/raw-origin.py" "$R" "$N" 8080:size 8443:size:tls \
	--cert "$T/cert.pem" --key "$T/key.pem"
wait_for_file "$R/ready" || { echo "not ok - the raw origin did not start"; exit 1; }

# The host's TCP buffers, small and fixed (before the gateway's sockets are
# made, its listener's too: accepted sockets start from its sizes): the
# gateway's reads from the origin and what the kernel holds for the client
# are a few KiB each. slow.py sets them so again for each way in, and back
# to the usual once nobody is to read slowly any more.
world_host sysctl -q -w net.ipv4.tcp_rmem="4096 8192 8192" net.ipv4.tcp_wmem="4096 8192 8192" ||
	{ echo "not ok - the host namespace's TCP buffers could not be set"; exit 1; }

# A name of its own for each pipelined request (none is in the pool or the
# DNS cache when it comes, so its exchange starts once the first is over):
# more new names under *.big2.test than the default DNS budget.
write_policy "$T/policy.yaml" <<'P'
version: 1
dns:
  new_names_per_minute: 1000
allow:
  - host: big.test
    ports: [8080]
  - host: "*.big2.test"
    ports: [8080]
  - host: big.test
    ports: [8443]
    methods: [GET]
P
mkdir -m 700 "$T/ca"
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/audit.log" --sandbox test \
	--ca-dir "$T/ca" --upstream-ca "$T/cert.pem" || exit 1
gw_pid=$world_gw_pid
alive() { kill -0 "$gw_pid" 2>/dev/null && echo yes; }

# slow.py WAY: responses of CAP-16 KiB to CAP+111 KiB, 1 KiB apart (2 KiB
# for inspected, the most costly under ASan and found sound: a guard), one
# client connection each, all open at once; nobody reads for 2 s, then each
# reads its own. WAY: plain, pipelined (each big response kept alive, then
# a pipelined `Connection: close` GET for 10 bytes), inspected.
cat >"$T/slow.py" <<'PYC'
import socket, ssl, sys, time
way, ca = sys.argv[1], sys.argv[2]
CAP = 1 << 20
step = 2048 if way == "inspected" else 1024
sizes = [CAP - 16384 + step * i for i in range(128 * 1024 // step)]
def get(n, close=True, name=b"big.test"):
    host = name + (b":8443" if way == "inspected" else b":8080")
    return (b"GET %s/size/%d HTTP/1.1\r\nHost: %s\r\n%s\r\n"
            % (b"" if way == "inspected" else b"http://" + host, n, host,
               b"Connection: close\r\n" if close else b""))
def read_head(s):
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(1)
        if not d:
            break
        got += d
    return got
for name in ("tcp_rmem", "tcp_wmem"):
    with open("/proc/sys/net/ipv4/" + name, "w") as f:
        f.write("4096 8192 8192")
socks = []
for n in sizes:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect(("203.0.113.1", 3128))
    if way == "inspected":
        s.sendall(b"CONNECT big.test:8443 HTTP/1.1\r\nHost: big.test:8443\r\n\r\n")
        read_head(s)
        s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname="big.test")
    s.sendall(get(n, False) + get(10, name=b"p%d.big2.test" % n) if way == "pipelined" else get(n))
    socks.append(s)
time.sleep(2)
# Now read at full speed: the kernel's buffers back to what they were.
for name, v in (("tcp_rmem", "4096 131072 6291456"), ("tcp_wmem", "4096 16384 4194304")):
    with open("/proc/sys/net/ipv4/" + name, "w") as f:
        f.write(v)
for s in socks:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
whole = 0
for n, s in zip(sizes, socks):
    data = b""
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            data += d
    except (OSError, ssl.SSLError):
        pass
    s.close()
    want = [n, 10] if way == "pipelined" else [n]
    ok = True
    for m in want:
        head, _, rest = data.partition(b"\r\n\r\n")
        ok = ok and head.startswith(b"HTTP/1.1 200") and rest[:m] == b"x" * m
        data = rest[m:]
    whole += ok and data == b""
print("whole %d of %d" % (whole, len(sizes)))
PYC
for way in plain pipelined inspected; do
	out=$(world_host "$PY" "$T/slow.py" $way "$T/ca/ca.crt" 2>&1)
	check "$way: the gateway is alive after slow clients got the ends of pooled responses" "yes" \
		"$(alive)"
	n=128
	[ $way = inspected ] && n=64
	check "... each client got its response whole" "whole $n of $n" "$out"
done
check "... and it still serves" "200" \
	"$(world_host curl -s -m 10 -o /dev/null -w '%{http_code}' -x http://203.0.113.1:3128 http://big.test:8080/size/10)"
check_lacks "... and said no BUG" "BUG" "$(cat "$T/gw.log")"
finish
