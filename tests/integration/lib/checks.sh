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
#   check_lacks NAME NEEDLE HAY  ok when HAY does not contain NEEDLE
#   write_policy FILE         write stdin to FILE, mode 644 (readable by the
#                             sandbox's user)
#   $PY                       the python3 to run, /usr/bin's where there is
#                             one (a sandbox sees /usr)
#   audit_last                the newest record in $T/audit.log, waiting
#                             (bounded) for one newer than the last seen
#   audit_again               the same record again
#   audit_match STRING...     the records in $T/audit.log that hold every
#                             one of the strings
#   audit_count STRING...     how many there are
#   wait_grep FILE STRING     wait (bounded, 10 s) until FILE holds STRING;
#                             1 if it does not
#   gw_reload PID LOG         SIGHUP a `sluice gateway`, wait for its answer
#   finish                    print "N passed, N failed", exit accordingly
#   $SL_TEST_LIB              this folder, exported: the scripted origins a
#                             test writes out import lib/rawhttp.py from it

SL_TEST_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SL_TEST_LIB

passed=0
failed=0
audit_seen=0
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

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

check_lacks() {
	if grep -qF -- "$2" <<<"$3"; then notok "$1: '$2' found"; else ok "$1"; fi
}

write_policy() { cat >"$1" && chmod 644 "$1"; }

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
audit_match() {
	local lines s
	lines=$(cat "$T/audit.log" 2>/dev/null)
	for s; do lines=$(grep -F -- "$s" <<<"$lines"); done
	printf '%s' "$lines"
}
audit_count() { audit_match "$@" | grep -c .; }
wait_grep() {
	for _ in $(seq 200); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

# gw_reload PID LOG: SIGHUP to a `sluice gateway`, then wait (bounded) for
# its answer ("reloaded" or "not reloaded") in its log; 1 if none came.
gw_reload() {
	local n
	n=$(grep -cE ': (not )?reloaded' "$2")
	kill -HUP "$1"
	for _ in $(seq 100); do
		[ "$(grep -cE ': (not )?reloaded' "$2")" -gt "$n" ] && return 0
		sleep 0.05
	done
	return 1
}

# make_keys DIR: two API keys, new for every run, in DIR/openai.key and
# DIR/anthropic.key (DIR made mode 0700: only root reads them), as
# $openai_key and $anthropic_key. The origin reads the same files, so no
# key is in any process's environment or command line: nothing runs a
# program with a key as an argument (printf and [[ ]] are the shell's own).
make_keys() {
	openai_key="sk-test-$(openssl rand -hex 24)"
	anthropic_key="sk-ant-test-$(openssl rand -hex 24)"
	mkdir -p -m 700 "$1"
	(
		umask 077
		printf '%s\n' "$openai_key" >"$1/openai.key"
		printf '%s\n' "$anthropic_key" >"$1/anthropic.key"
	)
	[ ${#openai_key} -ge 40 ] && [ ${#anthropic_key} -ge 40 ]
}
# Whether TEXT holds either key; check_nokey NAME TEXT: ok when it holds
# neither (the text is never printed).
has_key() { [[ $1 == *"$openai_key"* || $1 == *"$anthropic_key"* ]]; }
check_nokey() {
	if has_key "$2"; then notok "$1: a key is in it"; else ok "$1"; fi
}

finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}
