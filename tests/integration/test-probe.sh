#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice probe`: first outside any sandbox, in the test world's host
# namespace, where things get out, so that the probe shows it can fail
# (ESCAPED lines, exit 1, the canary hit); then inside `sluice run`, where
# every line must be blocked or skipped, it exits 0, the canary saw
# nothing and the outside process it tried to signal and trace lives on.
# sluice and the probe run only inside the world's namespaces (world.sh):
# nothing here changes the machine's own routes or nftables.
#
# Usage: test-probe.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-probe.sh ip nft nsenter setpriv python3
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"

extra_pids=()
cleanup() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
# (world.sh routes the canary's IPv6 address through the internet's
# router, so that the probe's IPv6 attempts outside really get there.)
# The first exchange waits for neighbour discovery (a second or so): have
# it before the probe, whose attempts wait one second each.
world_host python3 -c 'import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=5)' "$WORLD_CANARY6" ||
	{ echo "not ok - the IPv6 canary is not reachable from the host namespace"; exit 1; }
world_services allowed.test="$WORLD_NET_ADDR" denied.test="$WORLD_NET_ADDR" ||
	{ echo "not ok - test services"; exit 1; }
mkdir -m 755 "$T/etc"
printf 'version: 1\nallow:\n  - host: allowed.test\n' >"$T/etc/probe.yaml"
chmod 644 "$T/etc/probe.yaml"

# The probe runs as the sandbox's user, in its read-only view of the host:
# a copy of the binary, bound into the sandbox, is there whatever the build
# tree's permissions, and also when the tree lies under /tmp (private inside).
mkdir -m 755 "$T/bin"
cp "$SLUICE" "$T/bin/sluice" && chmod 755 "$T/bin/sluice"
PROBE=$T/bin/sluice
bind=(--ro "$T/bin")

# A process outside every sandbox, of no privilege, that the probe tries
# to signal and trace: it must be alive afterwards.
world_host_bg setpriv --reuid 65534 --regid 65534 --clear-groups sleep 300
outside_pid=$!
extra_pids+=("$outside_pid")

# Outside a sandbox there is no proxy: one of the test machine's own must
# not be what the probe takes for sluice's.
noproxy=(env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy)

# count RESULT KIND OUTPUT: how many lines report RESULT for KIND.
count() { awk -v r="$1" -v k="$2" '$1 == r && $2 == k' <<<"$3" | grep -c .; }
# report OUTPUT: shown with the test's output, a line each, for the log.
report() { sed 's/^/#   /' <<<"$1"; }

# ---- the command line --------------------------------------------------------

out=$("$SLUICE" probe --help); rc=$?
check "--help exits 0" 0 "$rc"
missing=""
for k in tcp4 tcp6 metadata host-port udp4 udp6 icmp4 icmp6 dns-foreign dns-denied raw4 raw6 \
	packet unix unix-abstract fs-write fs-tmp fs-read pid-ns kill ptrace environ tty privs \
	setuid nft route sysctl cgroup target; do
	grep -qE "^  ([a-z0-9-]+, )*$k( |,)" <<<"$out" || missing="$missing $k"
done
check "--help documents every probe" "" "$missing"
"$SLUICE" probe --bogus >/dev/null 2>&1
check "an unknown option: exit 2" 2 $?
"$SLUICE" probe --only nosuchprobe >/dev/null 2>&1
check "an unknown probe in --only: exit 2" 2 $?
"$SLUICE" probe --outside not-an-address >/dev/null 2>&1
check "--outside that is not an address: exit 2" 2 $?

# ---- (a) outside any sandbox: it must be able to fail ------------------------

hits0=$(world_canary_count)
start=$(date +%s)
out=$(world_host "${noproxy[@]}" "$SLUICE" probe --outside "$WORLD_CANARY" \
	--outside "$WORLD_CANARY6" --outside-pid "$outside_pid" 2>&1); rc=$?
took=$(($(date +%s) - start))
report "$out"
check "outside a sandbox, as root: exit 1 (something escaped)" 1 "$rc"
check_has "... TCP to the canary escaped" "ESCAPED  tcp4          $WORLD_CANARY:80" "$out"
check_has "... IPv6 TCP to the canary escaped" "ESCAPED  tcp6          [$WORLD_CANARY6]:80" "$out"
check_has "... UDP reached the canary (its port unreachable)" \
	"reached it: $WORLD_CANARY answered port unreachable" "$out"
check_has "... an echo request got its reply" "ESCAPED  icmp4" "$out"
check_has "... a raw socket opened" "ESCAPED  raw4" "$out"
check_has "... a packet socket opened" "ESCAPED  packet" "$out"
check_has "... /etc was writable" "ESCAPED  fs-write      /etc " "$out"
check_has "... /etc/shadow was readable" "ESCAPED  fs-read       /etc/shadow" "$out"
check_has "... the outside process could be signalled" "ESCAPED  kill" "$out"
# Yama's ptrace_scope 3 refuses even root; the test may run in a container
# whose pid namespace is not the machine's.
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -lt 3 ]; then
	check_has "... and traced" "ESCAPED  ptrace" "$out"
fi
check_has "... its environment read" "ESCAPED  environ" "$out"
check_has "... an nft table could be added" "ESCAPED  nft" "$out"
check_has "... a route could be added" "ESCAPED  route" "$out"
if [ "$(stat -L -c %i /proc/self/ns/pid)" = $((0xEFFFFFFC)) ]; then
	check_has "... the machine's pid namespace" "ESCAPED  pid-ns" "$out"
fi
check_has "... the summary line" "sluice probe: " "$(tail -n 1 <<<"$out")"
hits=$(world_canary_count)
if [ "${hits:-0}" -gt "${hits0:-0}" ]; then
	ok "... and the canary saw it ($hits packets)"
else
	notok "... the canary saw nothing ($hits packets): the probe's ESCAPED is not real"
fi
# A hang detector, not a speed claim: the probe caps itself at 14 s.
if [ "$took" -le 60 ]; then ok "... it stops by itself (${took}s)"; else notok "it took ${took}s"; fi
check "... it left no nft table behind" "" "$(ip netns exec "$WORLD_HOST" nft list tables 2>&1)"
check "... nor its route" "" "$(ip -n "$WORLD_HOST" route show 198.51.100.123 2>&1)"
check "... nor a file in /etc" "" "$(find /etc -maxdepth 1 -name '.sluice-probe-*')"
check "the outside process survived kill and ptrace" 0 "$(kill -0 "$outside_pid"; echo $?)"
check "... and is not traced" 0 "$(awk '/^TracerPid/ { print $2 }' "/proc/$outside_pid/status")"
check "... nor stopped (sleeping)" S "$(awk '/^State/ { print $2 }' "/proc/$outside_pid/status")"

# As a user of no privilege, outside: still out through the network.
out=$(world_host "${noproxy[@]}" setpriv --reuid 65534 --regid 65534 \
	--clear-groups "$PROBE" probe --outside "$WORLD_CANARY" --only tcp4,raw4,packet,nft 2>&1)
rc=$?
report "$out"
check "outside, as nobody: exit 1" 1 "$rc"
check_has "... TCP to the canary escaped" "ESCAPED  tcp4          $WORLD_CANARY:80" "$out"
check_has "... but no raw socket" "blocked  raw4" "$out"
check_has "... and no nft table" "blocked  nft" "$out"

# What the operator says is meant: a --rw path, a secret that only root reads.
printf 'sk-test-secret\n' >"$T/etc/secret"
chmod 600 "$T/etc/secret"
out=$(world_host "${noproxy[@]}" setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$PROBE" probe --only fs-write,fs-read --allow-write /etc --secret-file "$T/etc/secret" no-proxy.test 2>&1)
report "$out"
check_has "--allow-write: a path meant to be writable is not tried" \
	"skipped  fs-write      /etc                           under --allow-write" "$out"
check_has "--secret-file: one only root reads is blocked" "blocked  fs-read       $T/etc/secret" "$out"
check_has "a TARGET without a proxy is skipped, and says why" \
	"skipped  target        no-proxy.test                  no HTTP_PROXY" "$out"

# A terminal of the operator's: outside, TIOCSTI reaches it (when the
# kernel still has legacy TIOCSTI); script(1) plays the terminal.
if command -v script >/dev/null && [ "$(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null)" = 1 ]; then
	out=$(world_host "${noproxy[@]}" script -qec "setpriv --reuid 65534 --regid 65534 --clear-groups \
		$PROBE probe --only tty" /dev/null </dev/null 2>&1 | tr -d '\r')
	report "$out"
	check_has "outside, in the operator's terminal: TIOCSTI escaped" "ESCAPED  tty" "$out"
fi

# ---- (b) inside sluice run: nothing gets out ---------------------------------

hits0=$(world_canary_count)
start=$(date +%s)
out=$(world_host "$SLUICE" run "${bind[@]}" --policy "$T/etc/probe.yaml" \
	--resolver "$WORLD_NET_ADDR:53" -- "$PROBE" probe --outside "$WORLD_CANARY" \
	--outside "$WORLD_CANARY6" --outside-pid "$outside_pid" http://allowed.test/ http://denied.test/ denied.test 2>&1)
rc=$?
took=$(($(date +%s) - start))
report "$out"
escaped=$(awk '$1 == "ESCAPED" { print $2 " " $3 }' <<<"$out" | sort -u | tr '\n' ';')
check "inside sluice run: nothing escaped" "" "$escaped"
check "... exit 0" 0 "$rc"
check_has "... the summary says 0 escaped" ", 0 escaped," "$(tail -n 1 <<<"$out")"
for k in tcp4 tcp6 metadata host-port udp4 udp6 icmp4 icmp6 dns-foreign dns-denied raw4 raw6 packet unix fs-write \
	fs-read pid-ns kill ptrace environ tty privs setuid nft route sysctl cgroup; do
	n=$(count blocked "$k" "$out")
	if [ "$n" -gt 0 ]; then ok "... $k: blocked ($n)"; else notok "... $k: no blocked line"; fi
done
check_has "... an allowed TARGET is reported allowed" \
	"allowed  target        http://allowed.test/           HTTP/1.1 200" "$out"
check_has "... a denied one, denied with sluice's reason" \
	"denied   target        http://denied.test/            403 sluice: denied.test is not allowed" "$out"
check_has "... a denied CONNECT too" "denied   target        denied.test " "$out"
check "... the canary saw nothing" "${hits0:-x}" "$(world_canary_count)"
if [ "$took" -le 60 ]; then ok "... it stops by itself (${took}s)"; else notok "it took ${took}s"; fi
check "the outside process is still alive" 0 "$(kill -0 "$outside_pid"; echo $?)"
check "the world's host namespace has no table of the probe's" "" \
	"$(ip netns exec "$WORLD_HOST" nft list tables 2>&1 | grep sluice-probe)"

# On a terminal: sluice gives the command a pty of its own, and the probe
# knows it for one (it does not inject into it).
if command -v script >/dev/null; then
	out=$(world_host script -qec "$SLUICE run ${bind[*]} -- $PROBE probe --only tty,pid-ns" \
		/dev/null </dev/null 2>&1 | tr -d '\r')
	report "$out"
	check_has "inside, on a terminal: the terminal is the sandbox's own" \
		"blocked  tty" "$out"
	check_has "... so nothing escaped" ", 0 escaped," "$out"
fi

finish
