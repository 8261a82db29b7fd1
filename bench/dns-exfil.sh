#!/bin/bash
# SPDX-License-Identifier: MIT
#
# How much an agent gets out through DNS under a wildcard rule: the agent
# sends N queries for unique names under `*.wild.test` (each name four
# 60-character labels of hex, 240 bytes the agent chose) as fast as it can,
# 200 in flight, to the gateway's DNS server; dnsmasq, the upstream resolver
# in the test world, logs what reached it. Prints how many distinct agent
# names and how many bytes of agent-chosen labels reached upstream, in
# total and per second of the burst. Reports; asserts nothing about timing.
#
# OBSERVE=1: the same burst against an observe-mode policy with no rule at
# all (every name is answered, under the per-suffix and overall budgets of
# docs/observe.md), the names spread over 64 suffixes (wild00.test ...) so
# the overall budget, not one suffix's, is what bounds it (three labels of
# 60 a name then, 180 bytes, to leave room for the suffix).
#
# Usage: [OBSERVE=1] bench/dns-exfil.sh [PATH-TO-SLUICE] [N]   (root: network namespaces)
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-$here/../build/cli/sluice}")
N=${2:-5000}
[ "$(id -u)" = 0 ] || { echo "dns-exfil.sh needs root (network namespaces)" >&2; exit 77; }

. "$here/../tests/integration/world.sh"
gw_pid=
cleanup() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null
	world_down
}
trap cleanup EXIT
world_up || exit 1
T=$WORLD_TMP
S=$WORLD_HOST_ADDR
cat >"$T/dnsmasq.conf" <<CONF
no-resolv
no-hosts
listen-address=$WORLD_NET_ADDR
bind-interfaces
local-ttl=300
address=/wild.test/$WORLD_NET_ADDR
log-queries
log-facility=$T/dns.log
CONF
world_bg "$WORLD_NET" dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=
if [ "${OBSERVE:-0}" = 1 ]; then
	printf 'version: 1\nmode: observe\n' >"$T/policy.yaml"
else
	printf 'version: 1\nallow:\n  - host: "*.wild.test"\n' >"$T/policy.yaml"
fi
world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen "$S:3128" --dns "$S:53" \
	--resolver "$WORLD_NET_ADDR:53" --audit "$T/audit.log" --sandbox bench >>"$T/gw.log" 2>&1
gw_pid=$!
for _ in $(seq 50); do
	world_host ss -Hlun "sport = :53" 2>/dev/null | grep -q . && break
	sleep 0.1
done

out=$(world_host python3 - "$S" "$N" "${OBSERVE:-0}" <<'PY'
import os, select, socket, struct, sys, time
server, n, observe = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
def q(i):
    h = os.urandom(120).hex()
    labels = [("%08x" % i) + h[:52], h[52:112], h[112:172], h[172:232]]
    tail = b"\x04wild\x04test\x00"
    if observe:  # one of 64 suffixes: wild00.test ... wild3f.test
        labels = labels[:3]
        tail = b"\x06wild%02x\x04test\x00" % (i % 64)
    name = b"".join(bytes([len(l)]) + l.encode() for l in labels) + tail
    return struct.pack(">HHHHHH", i & 0xffff, 0x100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)
sent = got = 0
start = time.monotonic()
deadline = start + 120
while got < n and time.monotonic() < deadline:
    while sent < n and sent - got < 200:
        s.sendto(q(sent), (server, 53)); sent += 1
    r, _, _ = select.select([s], [], [], 2)
    if not r:
        got = sent  # lost replies: move on
        continue
    while True:
        try:
            s.recv(4096); got += 1
        except BlockingIOError:
            break
print("%d %.3f" % (sent, time.monotonic() - start))
PY
)
sent=${out% *}
secs=${out#* }
sleep 1 # the last queries reach dnsmasq's log
names=$(grep -oE 'query\[(A|AAAA)\] [0-9a-f]{60}\.[0-9a-f.]*wild[0-9a-f]*\.test' "$T/dns.log" |
	awk '{print $2}' | sort -u | wc -l)
per=240
[ "${OBSERVE:-0}" = 1 ] && per=180
bytes=$((names * per))
python3 - "$sent" "$secs" "$names" "$bytes" <<'PY'
import sys
sent, secs, names, b = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f"sent {sent} unique names in {secs:.2f} s; reached upstream: {names} distinct names, "
      f"{b} bytes of agent-chosen labels")
print(f"  {names / secs:.0f} names/s, {b / secs:.0f} bytes/s during the burst")
if names < sent * 0.9:
    print(f"  bounded by the DNS budget: sustained, {names} names and {b} bytes per minute "
          f"({names / 60:.1f} names/s, {b / 60:.0f} bytes/s) through one wildcard"
          " (OBSERVE=1: through observe mode's budgets)")
PY
