#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Blocked packets reach the audit log: a sandboxed program's TCP, UDP and
# ICMP attempts that the sandbox's nftables rules refuse are copied to
# NFLOG, read by the gateway and written as "blocked" audit records, while
# the canary in the test world's "internet" sees nothing. A flood of
# blocked packets neither hangs nor crashes the gateway nor floods the log
# (NFLOG copies are rate-limited in nftables), and whatever was not logged
# (the kernel could not queue it, or the rate limit kept it out) is counted
# in the log, not lost silently. sluice
# runs only inside the world's host namespace (world.sh).
#
# Usage: test-blocked.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-blocked.sh needs root (network namespaces, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter python3 sysctl; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"
# The sandboxed user must be able to run python: not root's pyenv shim.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }

sluice_pid=
cleanup() {
	[ -n "$sluice_pid" ] && kill -9 "$sluice_pid" 2>/dev/null
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
# The sandbox sees (and writes) only B: the probe and its pid file. The
# audit logs stay outside it, where the command cannot rewrite them.
B=$T/box
mkdir -p "$B" && chmod 1777 "$B"
world_host_ns=$(ip netns exec "$WORLD_HOST" readlink /proc/self/ns/net)

cat >"$B/probe.py" <<'PY'
# probe.py DIR MODE: blocked attempts from inside the sandbox. Writes its
# pid to DIR/pid and waits (bounded) for DIR/go, so the test can prepare
# the sandbox's namespace first. Exit 0 when every attempt was refused.
import errno, os, socket, struct, sys, time

d, mode = sys.argv[1], sys.argv[2]
open(os.path.join(d, "pid.tmp"), "w").write(str(os.getpid()))
os.rename(os.path.join(d, "pid.tmp"), os.path.join(d, "pid"))
for _ in range(100):
    if os.path.exists(os.path.join(d, "go")):
        break
    time.sleep(0.1)
else:
    print("probe: no go"); sys.exit(2)

def gateway():  # the default route's gateway: the host end of the veth
    for line in open("/proc/net/route").read().splitlines()[1:]:
        f = line.split()
        if f[1] == "00000000":
            return socket.inet_ntoa(struct.pack("<I", int(f[2], 16)))
    raise SystemExit("probe: no default route")

def udp(addr, port, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    refused = 0
    for _ in range(n):
        try:
            s.sendto(b"x" * 32, (addr, port))
        except OSError:
            refused += 1
    return refused

got_out = False
if mode == "basic":
    # TCP to a port the gateway does not serve: the filter refuses it
    # (connections elsewhere are captured by the gateway instead).
    for addr, port in ((gateway(), 22), ("203.0.113.99", 80)):
        t = socket.socket()
        t.settimeout(2)
        try:
            t.connect((addr, port))
            t.sendall(b"GET / HTTP/1.1\r\nHost: 203.0.113.99\r\nConnection: close\r\n\r\n")
            print("tcp %s:%d: connected (captured?), got %r" % (addr, port, t.recv(64)))
        except OSError as e:
            print("tcp %s:%d: %s" % (addr, port, errno.errorcode.get(e.errno, e)))
        t.close()
    print("udp: %d of 1 refused" % udp("203.0.113.99", 9, 1))
    i = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    i.settimeout(1)
    try:
        i.sendto(struct.pack(">BBHHH", 8, 0, 0, 0, 1) + b"sluice", ("203.0.113.99", 0))
        i.recv(64)
        got_out = True
        print("icmp: answered")
    except OSError as e:
        print("icmp: %s" % errno.errorcode.get(e.errno, e))
elif mode == "flood":
    n = int(sys.argv[3])
    print("flood: %d of %d refused" % (udp("203.0.113.99", 9999, n), n))
    time.sleep(1)  # let the gateway catch up, then one more it must see
    udp("203.0.113.99", 9998, 1)
sys.exit(1 if got_out else 0)
PY
chmod 644 "$B/probe.py"

# run_probe NAME MODE [ARGS]: sluice run --audit $T/NAME.log, the probe in
# the sandbox; ICMP datagram sockets allowed there for every group first
# (the sandbox's own sysctl, so that "nobody" can send an echo). Waits at
# most 60 s. Sets rc (sluice's exit status, 124 on a hang).
run_probe() {
	local name=$1
	shift
	rm -f "$B/pid" "$B/go"
	world_host_bg "$SLUICE" run --rw "$B" --audit "$T/$name.log" -- "$PY" "$B/probe.py" "$B" "$@" \
		>"$T/$name.out" 2>"$T/$name.err"
	sluice_pid=$!
	for _ in $(seq 100); do [ -s "$B/pid" ] && break; sleep 0.1; done
	# The pid the probe wrote is its own in the sandbox's pid namespace,
	# not ours: find it by its command line, and only in a network
	# namespace that is neither ours nor the world host's (never change
	# the machine's own sysctls).
	local p ns spid=
	for p in /proc/[0-9]*; do
		tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF "$B/probe.py $B" || continue
		ns=$(readlink "$p/ns/net" 2>/dev/null) || continue
		[ "$ns" != "$(readlink /proc/self/ns/net)" ] && [ "$ns" != "$world_host_ns" ] &&
			{ spid=${p#/proc/}; break; }
	done
	if [ -n "$spid" ]; then
		nsenter -t "$spid" -n sysctl -qw net.ipv4.ping_group_range="0 2147483647"
	else
		echo "# $name: the probe's namespace was not found: ICMP will fail"
	fi
	touch "$B/go"
	rc=124
	for _ in $(seq 600); do
		if ! kill -0 "$sluice_pid" 2>/dev/null; then
			wait "$sluice_pid"
			rc=$?
			break
		fi
		sleep 0.1
	done
	[ "$rc" = 124 ] && kill -9 "$sluice_pid" 2>/dev/null
	sluice_pid=
	sed "s/^/# $name: /" "$T/$name.out" "$T/$name.err"
}

# audit_query LOG EXPR: evaluates a Python expression over `recs` (the
# log's records, each line parsed as JSON); prints the result, or fails
# with "invalid JSON" when a line does not parse.
audit_query() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
recs = []
for n, line in enumerate(open(sys.argv[1]), 1):
    try:
        recs.append(json.loads(line))
    except ValueError:
        print("invalid JSON on line %d: %r" % (n, line[:200])); sys.exit(1)
blocked = [r for r in recs if r.get("event") == "blocked"]
def count(**kw):
    return sum(1 for r in blocked if all(r.get(k) == v for k, v in kw.items()))
def lost():
    n = 0
    for r in blocked:
        reason = r.get("reason") or ""
        if reason.startswith("blocked-packets-lost: "):
            v = reason.split(": ", 1)[1]
            n += int(v) if v.isdigit() else 10**9
    return n
def not_logged():  # kept out of NFLOG by the rate limit, and counted
    n = 0
    for r in blocked:
        reason = r.get("reason") or ""
        if reason.startswith("blocked-packets-not-logged: "):
            v = reason.split(": ", 1)[1].split(" ")[0]
            n += int(v) if v.isdigit() else 10**9
    return n
print(eval(sys.argv[2]))
PY
}

# expect DESCRIPTION LOG EXPR WANT
expect() {
	local got
	got=$(audit_query "$2" "$3" 2>&1)
	if [ "$got" = "$4" ]; then ok "$1"; else notok "$1: got '$got', wanted '$4'"; fi
}

no_sanitizer_report() { # no_sanitizer_report NAME
	if grep -qE "AddressSanitizer|LeakSanitizer|runtime error:" "$T/$1.err"; then
		notok "$1: a sanitizer report"
	else
		ok "$1: no sanitizer report"
	fi
}

# ---- one attempt of each kind ----
run_probe basic basic
if [ "$rc" = 0 ]; then ok "basic: sluice run exited 0"; else notok "basic: sluice run exited $rc"; fi
hits=$(world_canary_count)
if [ "${hits:-x}" = 0 ]; then ok "basic: the canary saw nothing"; else notok "basic: the canary saw ${hits:-?} packets"; fi
expect "basic: every audit line is valid JSON" "$T/basic.log" "len(recs) > 0" True
expect "udp: one blocked record, dst 203.0.113.99 port 9" "$T/basic.log" \
	"count(method='udp', host='203.0.113.99', port=9, decision='deny', reason='blocked-packet')" 1
expect "icmp: one blocked record, dst 203.0.113.99, no port" "$T/basic.log" \
	"count(method='icmp', host='203.0.113.99', port=None, decision='deny', reason='blocked-packet')" 1
expect "tcp: one blocked record for the gateway's port 22" "$T/basic.log" \
	"count(method='tcp', port=22, decision='deny', reason='blocked-packet')" 1
expect "blocked records name the sandbox and the sandbox's address as client" "$T/basic.log" \
	"all(r['sandbox'] and str(r['client']).startswith('10.231.') for r in blocked)" True
expect "udp/tcp clients carry the source port" "$T/basic.log" \
	"all(':' in r['client'] for r in blocked if r['method'] in ('udp', 'tcp'))" True
# Captured by the gateway rather than blocked: audited all the same.
expect "tcp to the canary: audited as a deny (blocked or captured)" "$T/basic.log" \
	"sum(1 for r in recs if r.get('decision') == 'deny' and r.get('port') == 80 and '203.0.113.99' in (str(r.get('host')) + str(r.get('sni'))))>=1" True
expect "nothing was reported lost" "$T/basic.log" "lost()" 0
no_sanitizer_report basic

# ---- a flood ----
FLOOD=${BLOCKED_FLOOD:-5000} # bounded: the probe sends exactly this many
run_probe flood flood "$FLOOD"
if [ "$rc" = 0 ]; then ok "flood: sluice run exited 0 in time"; else notok "flood: sluice run exited $rc"; fi
hits=$(world_canary_count)
if [ "${hits:-x}" = 0 ]; then ok "flood: the canary saw nothing"; else notok "flood: the canary saw ${hits:-?} packets"; fi
expect "flood: every audit line is valid JSON" "$T/flood.log" "len(recs) > 0" True
# Each flood packet is a record, part of a "lost" count, or part of a
# "not logged" count (the rate limit): none is unaccounted for ...
expect "flood: records + counted losses + not logged = $FLOOD" "$T/flood.log" \
	"count(method='udp', port=9999) + lost() + not_logged()" "$FLOOD"
# ... and the log stays small: at most a burst and the rate's worth of
# records (100 + 20/s, the flood takes well under 10 s), whatever was sent.
expect "flood: the rate limit kept the log short" "$T/flood.log" \
	"count(method='udp', port=9999) <= 300 and not_logged() > 0" True
expect "flood: the gateway still audits after it" "$T/flood.log" "count(method='udp', port=9998)" 1
echo "# flood: $(audit_query "$T/flood.log" "'%d records, %d lost, %d not logged' % (count(method='udp', port=9999), lost(), not_logged())")"
no_sanitizer_report flood

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
