#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One sandbox opens thousands of connections to its gateway: past the cap
# they are refused cleanly (503), the gateway stays alive and serves again
# once they close, and another sandbox running at the same time is not
# affected. Every loop is bounded; nothing leaves the test world.
#
# Usage: test-load.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-load.sh 
. "$here/world.sh"

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N || { echo "not ok - services"; exit 1; }
printf 'version: 1\nallow:\n  - host: allowed.test\n' >"$T/policy.yaml"
chmod 644 "$T/policy.yaml"

run() {
	world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" -- "$@" 2>&1
}

# Sandbox A: 2000 connections to its proxy, held open, then one request.
cat >"$T/flood.py" <<'PY'
import os, socket, sys, time
host, port = os.environ["HTTP_PROXY"][len("http://"):].rsplit(":", 1)
socks, refused, failed = [], 0, 0
for _ in range(2000):
    try:
        socks.append(socket.create_connection((host, int(port)), timeout=5))
    except OSError:
        failed += 1
time.sleep(1)
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(64).startswith(b"HTTP/1.1 503"):
            refused += 1
    except (BlockingIOError, OSError):
        pass
open(sys.argv[1], "w").write("%d %d %d\n" % (len(socks), refused, failed))
time.sleep(float(sys.argv[2]))
for s in socks:
    s.close()
PY
chmod 644 "$T/flood.py"
mkdir -m 1777 "$T/out" # the sandbox writes here (--rw)
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/out" --policy "$T/policy.yaml" --resolver "$N:53" -- sh -c \
	"python3 $T/flood.py $T/out/flood.out 4; sleep 0.5; curl -sS -m 10 http://allowed.test/after-flood" \
	>"$T/a.out" 2>&1
a_pid=$!
for _ in $(seq 100); do [ -s "$T/out/flood.out" ] && break; sleep 0.1; done

# Sandbox B, while A holds its connections.
check "another sandbox is served while one floods its gateway" \
	"origin GET /b host=allowed.test body=0" "$(run curl -sS -m 10 http://allowed.test/b)"
read -r opened refused failed_ <"$T/out/flood.out" 2>/dev/null || { opened=0; refused=0; failed_=0; }
if [ "$refused" -ge 1000 ] && [ "$((opened - refused))" -le 600 ]; then
	ok "past the cap, connections are refused with 503 ($opened opened, $refused refused, $failed_ failed)"
else
	notok "cap: $opened opened, $refused refused with 503, $failed_ failed to connect"
fi
wait "$a_pid"
check "the flooded gateway serves again once the flood is gone" \
	"origin GET /after-flood host=allowed.test body=0" "$(tail -n 1 "$T/a.out")"
check "the canary saw nothing" "0" "$(world_canary_count)"
finish
