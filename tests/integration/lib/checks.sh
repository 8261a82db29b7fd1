# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the gateway's integration tests share: the root requirement, the
# tools they need, `ok`/`not ok` lines with a closing count, and reading
# the audit log. Source it after setting T (the world's directory) when
# audit_* are used.
#
#   needs_root NAME TOOL...   skip (77) without root unless CI=true, then
#                             fail; fail when a TOOL is missing
#   check NAME WANT GOT       ok when GOT is WANT
#   check_has NAME NEEDLE HAY ok when HAY contains NEEDLE
#   audit_last                the newest record in $T/audit.log, waiting
#                             (bounded) for one newer than the last seen
#   audit_again               the same record again
#   finish                    print "N passed, N failed", exit accordingly

passed=0
failed=0
audit_seen=0

needs_root() {
	local name=$1 tool
	shift
	if [ "$(id -u)" != 0 ]; then
		echo "# $name needs root (network namespaces)"
		[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
		exit 77
	fi
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
	done
}

ok() { passed=$((passed + 1)); echo "ok - $*"; }
notok() { failed=$((failed + 1)); echo "not ok - $*"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else notok "$1: got '$3', want '$2'"; fi; }
check_has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else notok "$1: '$2' not in: $3"; fi
}

# A record is written when its exchange ends, which can be a moment after
# the client is done.
audit_last() {
	local n
	for _ in $(seq 40); do
		n=$(wc -l <"$T/audit.log" 2>/dev/null || echo 0)
		[ "$n" -gt "$audit_seen" ] && break
		sleep 0.05
	done
	audit_seen=$n
	tail -n 1 "$T/audit.log"
}
audit_again() { tail -n 1 "$T/audit.log"; }

finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}
