#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Many idle CONNECT tunnels through `sluice gateway`, and a fresh request
# while they are open. A python listener in the test world's internet
# namespace (tests/integration/world.sh) holds every connection made to its
# port 9000 (answering each "ping" line with "pong") and serves a 300-byte
# reply on port 80. The gateway, standalone in the host namespace with its
# audit log on, allows that port as `protocol: tcp` (an opaque tunnel,
# spliced from its first byte) and port 80 as plain HTTP. For each sluice
# (and BASE, a build from before a change, when given) it measures:
#
#   1. the gateway's VmRSS and VmHWM (/proc/PID/status) once it serves;
#   2. FRESH fresh requests with no tunnel open, one after another, each
#      on a new connection: a plain GET through the proxy, and a new CONNECT
#      tunnel with one ping/pong round trip in it: median and p99 in ms;
#   3. TUNNELS tunnels opened (CONNECT, 200, one ping/pong each), then held
#      idle: VmRSS and VmHWM with them open, the memory per tunnel (the
#      growth in VmRSS over the tunnels), its open fds (pipes among them);
#   4. the fresh requests of 2 again while they are all open;
#   5. the tunnels closed: the audit records they wrote, VmRSS after.
#
# The gateway's --max-connections is raised to TUNNELS + 10 (the default,
# 512, would answer the 513th with 503): it then needs 2 fds per
# connection plus a reserve (gateway/limits.c: 2 N + 288), and raises its
# soft RLIMIT_NOFILE to that; past the hard limit only with
# CAP_SYS_RESOURCE. Where the hard limit is too low for TUNNELS (a
# container's 20000, say), the bench opens as many as fit and says so. The
# client and the listener raise their soft limits to their hard ones. It
# reports; it asserts nothing.
#
# Runs as root, in namespaces it creates and removes; no packet leaves
# loopback and TEST-NET. Every process is started and stopped by its pid.
#
# Usage: bench/run-idle.sh [PATH-TO-SLUICE]
# Environment: TUNNELS (default 10000), FRESH (default 50), BASE (another
# sluice binary: the same measurements for it, after sluice's).
# Exit: 0 ran, 1 setup or a run failed, 77 skipped (not root, python3 missing).
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../build/cli/sluice}}")
TUNNELS=${TUNNELS:-10000}
FRESH=${FRESH:-50}
BASE=${BASE:+$(realpath "$BASE")}
PY=/usr/bin/python3
me=run-idle.sh
[ "$(id -u)" = 0 ] || { echo "$me: needs root" >&2; exit 77; }
[ -x "$PY" ] || { echo "$me: needs python3" >&2; exit 77; }
[ -x "$SLUICE" ] || { echo "$me: no sluice at $SLUICE" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "$me: no sluice at BASE=$BASE" >&2; exit 1; }
case "$TUNNELS$FRESH" in
*[!0-9]*) echo "$me: TUNNELS and FRESH are numbers" >&2; exit 1 ;;
esac
if [ "$TUNNELS" -lt 1 ] || [ "$TUNNELS" -gt 30000 ] || [ "$FRESH" -lt 1 ] || [ "$FRESH" -gt 1000 ]; then
	echo "$me: TUNNELS 1..30000, FRESH 1..1000" >&2
	exit 1
fi

# What fits: 2 fds per connection and the gateway's reserve, under the
# hard limit it inherits (raising it needs CAP_SYS_RESOURCE, which it
# tries: then the soft limit is all that counts).
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && ! prlimit --pid $$ --nofile=$((2 * TUNNELS + 400)): 2>/dev/null; then
	fit=$(((hard - 288) / 2 - 10))
	if [ "$TUNNELS" -gt "$fit" ]; then
		echo "$me: the hard RLIMIT_NOFILE is $hard here and cannot be raised: $fit tunnels fit" \
			"(2 fds each and the gateway's reserve), not $TUNNELS"
		TUNNELS=$fit
	fi
fi

. "$here/../tests/integration/world.sh"
. "$here/lib.sh"

gw_pid=
cleanup() {
	trap '' INT TERM # a second signal must not cut the cleanup short
	if [ -n "$gw_pid" ]; then
		kill -TERM "$gw_pid" 2>/dev/null
		wait "$gw_pid" 2>/dev/null
	fi
	world_down # stops the listener and dnsmasq by their pids
}
trap cleanup EXIT
trap 'exit 1' INT TERM
die() { echo "$me: $*" >&2; exit 1; }

world_up || die "the test world did not come up"
T=$WORLD_TMP
O=$WORLD_NET_ADDR  # the origin and the resolver, in the internet namespace
G=$WORLD_HOST_ADDR # the gateway and the client, in the host namespace
HOST=hold.bench.test
# TUNNELS connections from one address to one port, twice (client to
# gateway, gateway to origin): room in the ephemeral range, our namespaces
# only.
for ns in "$WORLD_HOST" "$WORLD_NET"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" \
		net.core.somaxconn=4096 || die "could not set the port range in $ns"
done
bench_resolver "$HOST"

# ---- the origin: holds what connects to :9000, a small reply on :80 ----
cat >"$T/hold.py" <<'PY'
import resource, selectors, socket, sys
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
addr, ready = sys.argv[1], sys.argv[2]
sel = selectors.DefaultSelector()
def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(4096); s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, port)
    return s
listener(9000); listener(80)
BODY = b"x" * 299 + b"\n"
REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)
open(ready, "w").close()
heads = {}
while True:  # ends when world_down kills it
    for key, _ in sel.select():
        s = key.fileobj
        if key.data in (9000, 80):
            try:
                c, _ = s.accept()
            except BlockingIOError:
                continue
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ, "hold" if key.data == 9000 else "http")
            heads[c] = b""
            continue
        try:
            b = s.recv(4096)
        except BlockingIOError:
            continue
        except ConnectionError:
            b = b""
        if not b:
            sel.unregister(s); heads.pop(s, None); s.close()
            continue
        if key.data == "hold":
            s.send(b"pong\n" * b.count(b"\n"))
        else:
            heads[s] += b
            if b"\r\n\r\n" in heads[s]:
                s.send(REPLY)
                sel.unregister(s); heads.pop(s, None); s.close()
PY
world_bg "$WORLD_NET" "$PY" "$T/hold.py" "$O" "$T/hold.ready"
wait_for_file "$T/hold.ready" || die "the listener did not start"

cat >"$T/policy.yaml" <<EOF
version: 1
allow:
  - host: $HOST
    ports: [80]
  - host: $HOST
    ports: [9000]
    protocol: tcp
EOF
chmod 644 "$T/policy.yaml"

listening() { # PORT
	ip netns exec "$WORLD_HOST" ss -Hltn "src $G and sport = :$1" 2>/dev/null | grep -q .
}

cat >"$T/driver.py" <<'PY'
import os, resource, socket, statistics, sys, time
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
g, pid, tunnels, fresh, host, audit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5], sys.argv[6]
GW = (g, 3128)

def status():
    d = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            d[k] = int(v.split()[0])
    return d

def fds():
    names = os.listdir("/proc/%d/fd" % pid)
    pipes = sum(1 for n in names
                if os.readlink("/proc/%d/fd/%s" % (pid, n)).startswith("pipe:"))
    return len(names), pipes

def recv_until(s, end):
    data = b""
    while not data.endswith(end):
        b = s.recv(4096)
        if not b:
            raise RuntimeError("closed after %r" % data[:80])
        data += b
    return data

def tunnel():
    s = socket.create_connection(GW, timeout=30)
    s.sendall(b"CONNECT %s:9000 HTTP/1.1\r\nHost: %s:9000\r\n\r\n" % (host.encode(), host.encode()))
    head = recv_until(s, b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("CONNECT: %r" % head[:80])
    s.sendall(b"ping\n")
    if recv_until(s, b"\n") != b"pong\n":
        raise RuntimeError("no pong")
    return s

def fresh_http():
    t0 = time.perf_counter()
    s = socket.create_connection(GW, timeout=30)
    s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
              (host.encode(), host.encode()))
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    if not data.startswith(b"HTTP/1.1 200") or not data.endswith(b"x\n"):
        raise RuntimeError("fresh GET: %r" % data[:80])
    return (time.perf_counter() - t0) * 1000

def fresh_tunnel():
    t0 = time.perf_counter()
    tunnel().close()
    return (time.perf_counter() - t0) * 1000

def lat(f):
    v = sorted(f() for _ in range(fresh))
    return statistics.median(v), v[min(len(v) - 1, int(len(v) * 0.99))]

def records():
    try:
        return sum(1 for _ in open(audit))
    except OSError:
        return 0

fresh_http(); fresh_tunnel()  # warm: the resolver's cache, the pool
m0, f0 = status(), fds()
h0, t0_ = lat(fresh_http), lat(fresh_tunnel)
a0 = records()
t_open = time.perf_counter()
held = []
for i in range(tunnels):
    held.append(tunnel())
t_open = time.perf_counter() - t_open
m1, f1 = status(), fds()
h1, t1_ = lat(fresh_http), lat(fresh_tunnel)
for s in held:  # still alive, every one
    s.sendall(b"ping\n")
alive = 0
for s in held:
    try:
        alive += recv_until(s, b"\n") == b"pong\n"
    except (OSError, RuntimeError):
        pass
m2 = status()
for s in held:
    s.close()
want = a0 + 2 * fresh + tunnels
for _ in range(600):  # the records are written as each tunnel closes (bounded: 60 s)
    if records() >= want:
        break
    time.sleep(0.1)
a1 = records() - a0 - 2 * fresh
m3 = status()

def mib(kb):
    return "%.1f" % (kb / 1024)
def row(label, a, b):
    print("  %-46s %14s %14s" % (label, a, b))
print("  %-46s %14s %14s" % ("", "no tunnels", "%d open" % tunnels))
row("gateway VmRSS, MiB", mib(m0["VmRSS"]), mib(m1["VmRSS"]))
row("gateway VmHWM, MiB", mib(m0["VmHWM"]), mib(m1["VmHWM"]))
row("memory per tunnel (VmRSS growth / tunnels), B", "-",
    "%.0f" % ((m1["VmRSS"] - m0["VmRSS"]) * 1024 / tunnels))
row("gateway open fds (pipes among them)", "%d (%d)" % f0, "%d (%d)" % f1)
row("fresh GET through the proxy, median ms", "%.2f" % h0[0], "%.2f" % h1[0])
row("fresh GET through the proxy, p99 ms", "%.2f" % h0[1], "%.2f" % h1[1])
row("fresh CONNECT + ping/pong, median ms", "%.2f" % t0_[0], "%.2f" % t1_[0])
row("fresh CONNECT + ping/pong, p99 ms", "%.2f" % t0_[1], "%.2f" % t1_[1])
print("  %d tunnels opened in %.1f s, each carried 10 bytes (a ping and its pong), then another" %
      (tunnels, t_open))
print("  round trip with all of them open: %d answered; VmRSS %s MiB then. Closed: %d records," %
      (alive, mib(m2["VmRSS"]), a1))
print("  VmRSS %s MiB, VmHWM %s MiB after." % (mib(m3["VmRSS"]), mib(m3["VmHWM"])))
if alive != tunnels or a1 < tunnels:
    sys.exit("some tunnels did not answer (%d of %d) or were not audited (%d)" % (alive, tunnels, a1))
PY
chmod 644 "$T/driver.py" "$T/hold.py"

echo "sluice idle-tunnels bench: $TUNNELS CONNECT tunnels (protocol: tcp), $FRESH fresh requests" \
	"each; $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
for bin in "$SLUICE" $BASE; do
	echo
	echo "$bin:"
	rm -f "$T/audit.log"
	world_host_bg "$bin" gateway --policy "$T/policy.yaml" --listen "$G:3128" --resolver "$O:53" \
		--audit "$T/audit.log" --sandbox bench --max-connections $((TUNNELS + 10)) \
		>"$T/gw.log" 2>&1
	gw_pid=$!
	for _ in $(seq 100); do
		listening 3128 && break
		kill -0 "$gw_pid" 2>/dev/null || break
		sleep 0.1
	done
	listening 3128 || die "sluice gateway did not start: $(cat "$T/gw.log")"
	[ "$(cat "/proc/$gw_pid/comm" 2>/dev/null)" = sluice ] || die "pid $gw_pid is not sluice"
	# Bounded: the whole driver 10 min.
	world_host timeout 600 "$PY" "$T/driver.py" "$G" "$gw_pid" "$TUNNELS" "$FRESH" "$HOST" \
		"$T/audit.log" || rc=1
	kill -0 "$gw_pid" 2>/dev/null || die "sluice gateway exited: $(tail -n 5 "$T/gw.log")"
	kill -TERM "$gw_pid"
	wait "$gw_pid"
	gw_pid=
	for _ in $(seq 100); do listening 3128 || break; sleep 0.1; done
done
exit $rc
