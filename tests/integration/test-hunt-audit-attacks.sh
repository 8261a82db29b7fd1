#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hostile agent against what the operator sees and answers (stop 15,
# hunt-audit): `sluice pending` must not show a held request as something
# it is not, and one approval lets exactly one request go.
#
# - A path longer than what pending keeps: the operator must see that it
#   was cut ("..."), not a harmless-looking prefix of a path whose rest
#   (a query string carrying data out, say) goes upstream once approved.
# - A request pipelined behind a held one on the same connection: it is
#   decided and held on its own, never carried by the first's approval.
# - `sluice run --audit -` is refused (the command shares stdout and could
#   print lines that read like records); so is the same stream by another
#   name (/dev/stdout, /dev/fd/1, /proc/self/fd/2, the file stdout is).
#
# Usage: test-hunt-audit-attacks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-hunt-audit-attacks.sh ip nft nsenter python3 curl dnsmasq openssl

. "$here/world.sh"
PY=/usr/bin/python3
bg_pids=()
cleanup() {
	local p
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM
world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR
GW=203.0.113.1:3128
world_services hold.test=$N ||
	{ echo "not ok - the world's services did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: hold.test
    approve: true
    approve_timeout: 30
P
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
	--resolver "$N:53" --audit "$T/audit.log" --sandbox hunt-$$ || exit 1
SB=hunt-$$

# ---- the command's own stdout is no audit log, whatever its name ----
forge='{"ts":"2026-01-01T00:00:00.000Z","sandbox":"x","event":"http","host":"forged.test","decision":"allow"}'
for spelling in /dev/stdout /dev/fd/1 /proc/self/fd/1 /proc/self/fd/2 "$T/run-out.txt"; do
	log=$T/run-out.txt
	[ "$spelling" = /proc/self/fd/2 ] && log=$T/run-err.txt
	: >"$T/run-out.txt"
	: >"$T/run-err.txt"
	"$SLUICE" run --policy "$T/policy.yaml" --audit "$spelling" -- \
		/bin/sh -c "echo '$forge'; echo '$forge' >&2" >"$T/run-out.txt" 2>"$T/run-err.txt"
	rc=$?
	check "sluice run --audit $spelling (its own stdout/stderr): refused, exit 125" "125" "$rc"
	check_lacks "... and the command wrote no forged record into that log" "forged.test" \
		"$(cat "$log")"
done
"$SLUICE" run --policy "$T/policy.yaml" --audit /dev/fd/3 -- /bin/true 3>>"$T/run-fd3.log" \
	>/dev/null 2>&1
check "an fd of the operator's own (--audit /dev/fd/3 3>>FILE) is still taken" "0" "$?"

pending() { "$SLUICE" pending | grep " $SB "; }
wait_pending() { # wait_pending N: until N of ours wait (bounded)
	for _ in $(seq 100); do
		[ "$(pending | grep -c .)" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
wait_none() {
	for _ in $(seq 100); do
		[ -z "$(pending)" ] && return 0
		sleep 0.05
	done
	return 1
}
origin_count() { grep -c -- "$1" "$T/origin.log"; }

# ---- a long path is shown cut, and says so ----
pad=$(printf 'a%.0s' $(seq 700))
world_host_bg curl -s -m 20 -x "http://$GW" -o /dev/null -w '%{http_code}\n' \
	"http://hold.test/harmless?x=$pad&leak=CANARY-SECRET-42" >"$T/long.out" 2>&1
bg_pids+=($!)
long_bg=$!
wait_pending 1 || notok "the long-path request never showed in sluice pending"
line=$(pending)
id=${line%% *}
path=$(awk '{print $5}' <<<"$line")
check_has "pending shows the long path's start" "/harmless?x=aaaa" "$path"
check_lacks "... not its end (it was cut)" "CANARY-SECRET-42" "$path"
check "... and marks the cut with '...', so the operator knows there is more" "..." \
	"${path: -3}"
"$SLUICE" deny "$id" >/dev/null
wait "$long_bg"
check "denied: nothing reached the origin" "0" "$(origin_count CANARY-SECRET-42)"
wait_none

# ---- a pipelined request rides no approval ----
cat >"$T/pipe.py" <<'PYX'
import socket, sys, time
s = socket.create_connection(("203.0.113.1", 3128), timeout=25)
s.sendall(b"GET http://hold.test/first HTTP/1.1\r\nHost: hold.test\r\n\r\n"
          b"GET http://hold.test/second-rides HTTP/1.1\r\nHost: hold.test\r\n\r\n")
got = b""
end = time.time() + 20
while time.time() < end:
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    if not d:
        break
    got += d
sys.stdout.write(got.decode("latin-1"))
PYX
world_host_bg "$PY" "$T/pipe.py" >"$T/pipe.out" 2>&1
bg_pids+=($!)
pipe_bg=$!
wait_pending 1 || notok "the pipelined pair never showed in sluice pending"
line=$(pending)
check_has "the first of the pair is held" " GET hold.test:80 /first " "$line"
"$SLUICE" approve "${line%% *}" >/dev/null
# The second, decided on its own, waits for its own answer.
for _ in $(seq 100); do
	pending | grep -q "/second-rides" && break
	sleep 0.05
done
line2=$(pending | grep "/second-rides")
check_has "the second is held on its own after the first's approval" " GET hold.test:80 /second-rides " \
	"$line2"
check "... and has not reached the origin" "0" "$(origin_count /second-rides)"
[ -n "$line2" ] && "$SLUICE" deny "${line2%% *}" >/dev/null
wait "$pipe_bg"
check "the approved first reached the origin once" "1" "$(origin_count /first)"
check "the denied second never did" "0" "$(origin_count /second-rides)"
check_has "the second's record: approval denied" '"approval":"denied"' \
	"$(audit_match '"path":"/second-rides"')"

finish
