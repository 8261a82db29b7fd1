#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What `sluice run` leaves behind, after many quick runs back to back. The
# teardown hands the kernel's slow releases to a child of its own (the
# releaser, netns-helper/release.c), so this checks both halves of the
# promise: what can be seen (the veth, the host's nft table, the CA bundle)
# is gone when sluice returns, and the rest (the releaser itself, the
# sandbox's cgroup) within a bounded time; and that a run right after
# another does not collide with what the previous one is still releasing.
# Then the releaser is killed mid-run: the supervisor removes the veth
# itself, and nothing is left either.
#
# Usage: test-teardown.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-teardown.sh needs root (network namespaces, cgroups, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter strace; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else notok "$1: expected '$2', got '$3'"; fi
}

extra_pids=()
H2=slt-ns-tdn2-$$
cleanup() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	ip netns del "$H2" 2>/dev/null
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
mkdir -m 1777 "$T/w"

# A pool of this test's own: its link names (sl + the slot's network in
# hex), bundle directories and processes are told apart from those of
# other sluices on the machine.
POOL=10.232.77.0/24
NAMES='sl0ae84d'
# A policy file: then each run makes its CA and bundle (a run without one
# needs neither), which must be gone after it like the rest.
P=$T/policy.yaml
printf 'version: 1\nallow:\n  - host: nothing.teardown.test\n' >"$P"
chmod 644 "$P"
run() { world_host "$SLUICE" run --pool "$POOL" --policy "$P" "$@"; }
# What a command line of ours holds, as a pattern that does not match itself.
MINE="run --pool ${POOL//./[.]}"

links() { ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | grep -c "^$NAMES"; }
tables() { ip netns exec "$WORLD_HOST" nft list tables | grep -c "$NAMES"; }
bundles() { find /run/sluice -maxdepth 1 -name "ca-$NAMES*" 2>/dev/null | grep -c .; }
# Processes of ours: the supervisors and their releasers carry our pool in
# their command line (the releaser is a fork of its supervisor).
ours() {
	local f n=0
	for f in /proc/[0-9]*/cmdline; do
		tr '\0' ' ' 2>/dev/null <"$f" | grep -q -- "$MINE" && n=$((n + 1))
	done
	echo $n
}
releasers() {
	local p n=0
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = sluice-release ] &&
			tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "$MINE" && n=$((n + 1))
	done
	echo $n
}
# A sluice-PID group whose sluice is gone was left behind (test-run.sh).
cgroup_leftovers() {
	local d pid n=0
	for d in $(find /sys/fs/cgroup -maxdepth 6 -type d -name 'sluice-*' 2>/dev/null); do
		pid=${d##*/sluice-}
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sluice ] && continue
		n=$((n + 1))
	done
	echo $n
}
# Bounded: the releaser waits out a grace period or two after its sluice.
settled() {
	for _ in $(seq 100); do
		[ "$(ours)" = 0 ] && [ "$(cgroup_leftovers)" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

host_links0=$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')

# ---- many quick runs, back to back ----
N=20
rcs= seen= uids=
for i in $(seq $N); do
	uids+="$(run -- sh -c 'test -s "$SSL_CERT_FILE" || echo no-bundle; id -u' 2>>"$T/runs.err") "
	rcs+="$? "
	# Right when it returned: what can be seen is gone.
	seen+="$(links)$(tables)$(bundles) "
done
check "$N runs back to back all exit 0 (none collides with the one before it)" \
	"$(printf '0 %.0s' $(seq $N))" "$rcs"
check "... with nothing on stderr" "" "$(cat "$T/runs.err")"
check "... each with its CA bundle while it ran" 0 "$(grep -o no-bundle <<<"$uids" | grep -c .)"
check "right after each run: no veth, no host nft table, no CA bundle left" \
	"$(printf '000 %.0s' $(seq $N))" "$seen"
if settled; then ok "within a bounded time no process of the runs is left"; else
	notok "processes of the runs left: $(ours) ($(releasers) releasers)"; fi
check "no cgroup left" 0 "$(cgroup_leftovers)"
check "the host's links are as they were" "$host_links0" \
	"$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')"
check "no nft table in the host's namespace" "" "$(ip netns exec "$WORLD_HOST" nft list tables)"
check "no CA bundle directory left in /run/sluice" 0 "$(bundles)"
locks=0
for u in $uids; do [ -e "/run/sluice/uid/$u" ] && locks=$((locks + 1)); done
check "the commands' uids are released: no lock file of theirs left in /run/sluice/uid" \
	"$N 0" "$(echo $uids | wc -w) $locks"

# ---- the releaser is gone before the teardown ----
# And something else (this test, like root with nsenter) holds the
# sandbox's namespace, so that it cannot take the veth with it: the
# supervisor deletes the veth itself, and nothing is left either.
rm -f "$T/w/go"
world_host_bg "$SLUICE" run --pool "$POOL" --policy "$P" --rw "$T/w" -- \
	sh -c "while [ ! -e $T/w/go ]; do sleep 0.02; done" 2>"$T/killed.err"
spid=$!
extra_pids+=("$spid")
host_ns=$(readlink "/run/netns/$WORLD_HOST" 2>/dev/null || ip netns exec "$WORLD_HOST" readlink /proc/self/ns/net)
rel= cmd=
for _ in $(seq 200); do
	for p in /proc/[0-9]*; do
		[ -z "$rel" ] && [ "$(cat "$p/comm" 2>/dev/null)" = sluice-release ] &&
			tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "$MINE" && rel=${p#/proc/}
		[ -z "$cmd" ] && [ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" = \
			"sh -c while [ ! -e $T/w/go ]; do sleep 0.02; done " ] &&
			[ "$(readlink "$p/ns/net" 2>/dev/null)" != "$host_ns" ] && cmd=${p#/proc/}
	done
	[ -n "$rel" ] && [ -n "$cmd" ] && [ "$(links)" = 1 ] && break
	sleep 0.05
done
check "a run's releaser and command are found, and its veth is up" "yes yes 1" \
	"${rel:+yes} ${cmd:+yes} $(links)"
holder= held=
if [ -n "$cmd" ]; then
	sb_ns=$(readlink "/proc/$cmd/ns/net")
	nsenter -t "$cmd" -n sleep 60 &
	holder=$!
	extra_pids+=("$holder")
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$holder/ns/net" 2>/dev/null)" = "$sb_ns" ] && { held=yes; break; }
		sleep 0.02
	done
fi
check "... and the test holds the sandbox's namespace" yes "$held"
[ -n "$rel" ] && kill -KILL "$rel"
touch "$T/w/go"
wait "$spid"
rc=$?
check "the run whose releaser was killed exits with its command's status" 0 "$rc"
check "... right after it: no veth (its namespace still held), no host nft table, no CA bundle" \
	"000" "$(links)$(tables)$(bundles)"
[ -n "$holder" ] && kill -KILL "$holder" && wait "$holder" 2>/dev/null
if settled; then ok "... and no process of it is left"; else
	notok "processes left: $(ours)"; fi
check "... nor a cgroup" 0 "$(cgroup_leftovers)"

# ---- the next sandbox on a slot, while the last one's teardown runs ----
# Two sluices, each in a network namespace of its own (this world's host,
# and another), with a pool of one slot: the same sandbox name. The first
# one's removals (unlink, rmdir) are held up by 2 s each (strace's syscall
# delay), so its teardown is still under way, its slot let go, when the
# second one takes the slot and writes its CA bundle. Each bundle must be
# the sandbox's own: the first one's teardown must not remove the second's
# (looked at once the first sluice has returned: on the host, where
# `sluice attach` tells a container to take it from, and inside).
ip netns add "$H2" && ip -n "$H2" link set lo up
POOL1=10.232.79.0/30
NAME1=sl0ae84f00
links2() { # the sandbox's host end, in either namespace
	{ ip -n "$WORLD_HOST" -o link; ip -n "$H2" -o link; } | awk -F': ' '{print $2}' | grep -c "^$NAME1"
}
# (LeakSanitizer cannot run under a tracer: off for this run of a sanitizer build.)
world_host_bg env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -o /dev/null -e trace=unlink,unlinkat,rmdir \
	-e inject=unlink,unlinkat,rmdir:delay_enter=2000000 \
	"$SLUICE" run --pool "$POOL1" --policy "$P" -- sleep 0.5 >"$T/first.out" 2>&1
first=$!
extra_pids+=("$first")
seen=
for _ in $(seq 1000); do
	n=$(links2)
	[ "$n" = 1 ] && seen=yes
	[ -n "$seen" ] && [ "$n" = 0 ] && break
	sleep 0.01
done
check "the first sandbox came and its veth went" "yes 0" "$seen $(links2)"
# The slot is free once the first one's sandbox is gone: a run in the
# other namespace takes it (until then it is refused: no free /30).
for _ in $(seq 100); do
	ip netns exec "$H2" nsenter --mount="$WORLD_MNT" -- "$SLUICE" run --pool "$POOL1" \
		--policy "$P" --rw "$T/w" -- sh -c 'echo "bundle $SSL_CERT_FILE"; i=0
			while [ ! -e "$0/first-done" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
			test -s "$SSL_CERT_FILE" && echo "still there"' "$T/w" >"$T/second.out" 2>&1 &
	second=$!
	extra_pids+=("$second")
	bundle=
	for _ in $(seq 500); do
		bundle=$(sed -n 's/^bundle //p' "$T/second.out")
		[ -n "$bundle" ] && break
		kill -0 "$second" 2>/dev/null || break
		sleep 0.01
	done
	[ -n "$bundle" ] && break
	wait "$second"
	sleep 0.02
done
overlap=no
kill -0 "$first" 2>/dev/null && overlap=yes
check "the second sandbox has its bundle while the first one's teardown still runs" \
	"yes yes" "$overlap $([ -s "$bundle" ] && echo yes)"
check "the two sandboxes have the same name" "$NAME1" \
	"$(sed -n 's|^bundle /run/sluice/ca-\([a-z0-9]*\).*|\1|p' "$T/second.out")"
wait "$first"
check "the first run exits 0" 0 "$?"
check "after the first one's teardown, the second one's bundle is still there (and its directory)" \
	"yes" "$([ -s "$bundle" ] && echo yes)"
touch "$T/w/first-done" # the second one looks at its bundle now
wait "$second"
check "the second run exits 0, its bundle still there inside too" \
	"0 still there" "$? $(grep -x 'still there' "$T/second.out")"
check "... and nothing of either is left: no veth, no bundle" "0 0" \
	"$(links2) $(find /run/sluice -maxdepth 1 -name "ca-$NAME1*" | grep -c .)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
