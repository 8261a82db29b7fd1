#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice guard` against real packets, as root, only inside two network
# namespaces this test creates and removes (never the machine's own):
#
#   slt-nft-gh$$ "host": lo (the gateway 127.0.0.1:3128 and a decoy :3129),
#                v0 203.0.113.1/24, 2001:db8::1/64      <- sluice guard runs here
#   slt-nft-gi$$ "internet": v1 203.0.113.2/24, 2001:db8::2/64, listeners and a
#                canary that counts (nft counters) every packet from the host
#
# Usage: test-guard.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=${1:-${SLUICE:-$here/../../build/cli/sluice}}
UID_G=12345   # the guarded uid
UID_O=12346   # another uid, which must be unaffected

if [ "$(id -u)" != 0 ]; then
	echo "# test-guard.sh needs root (network namespaces, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft python3 setpriv; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

# The uids run the probes, so they need a python3 they can read (not one in
# root's home).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

H=slt-nft-gh$$
I=slt-nft-gi$$
tmp=$(mktemp -d /tmp/slt-nft-guard.XXXXXX)
chmod 755 "$tmp"
pids=()
failed=0
passed=0

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	ip netns del "$H" 2>/dev/null
	ip netns del "$I" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	local d=$1; shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}

inh() { ip netns exec "$H" "$@"; }
ini() { ip netns exec "$I" "$@"; }
as_uid() { local u=$1; shift; inh setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }

# ---- the world ----
ip netns add "$H" && ip netns add "$I" || { echo "not ok - cannot create namespaces"; exit 1; }
inh ip link set lo up
ini ip link set lo up
inh ip link add v0 type veth peer name v1 netns "$I"
inh ip addr add 203.0.113.1/24 dev v0
inh ip addr add 2001:db8::1/64 dev v0 nodad
ini ip addr add 203.0.113.2/24 dev v1
ini ip addr add 2001:db8::2/64 dev v1 nodad
inh ip link set v0 up
ini ip link set v1 up
# Unprivileged ICMP echo sockets, so the uids can try ping.
inh sysctl -qw net.ipv4.ping_group_range="0 2147483647"

# The canary: every packet from the host namespace, but IPv6 neighbour
# discovery and MLD (which the kernel sends for itself, not for any uid).
ini nft -f - <<'EOF' || { echo "not ok - cannot install the canary"; exit 1; }
table inet canary {
	chain pre {
		type filter hook prerouting priority -300; policy accept;
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, mld-listener-report, mld2-listener-report } return
		ip saddr 203.0.113.1 counter
		ip6 saddr 2001:db8::1 counter
	}
}
EOF
canary() { ini nft list chain inet canary pre | awk '/counter packets/ { n += $(NF-2) } END { print n + 0 }'; }

cat >"$tmp/serve.py" <<'EOF'
# Listeners: TCP echo and UDP record-to-file, for at most 300 seconds.
import os, selectors, socket, sys, time
out, specs = sys.argv[1], sys.argv[2:]
sel = selectors.DefaultSelector()
for spec in specs:
    proto, host, port = spec.split(",")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    if proto == "tcp":
        s.listen(16)
    sel.register(s, selectors.EVENT_READ, (proto, spec))
open(out + ".ready", "w").close()
end = time.monotonic() + 300
while time.monotonic() < end:
    for key, _ in sel.select(timeout=1):
        proto, spec = key.data
        if proto == "tcp":
            c, _ = key.fileobj.accept()
            c.settimeout(2)
            try:
                c.sendall(c.recv(100))
            except OSError:
                pass
            c.close()
        else:
            key.fileobj.recvfrom(100)
        with open(out, "a") as f:
            f.write(spec + "\n")
EOF

cat >"$tmp/probe.py" <<'EOF'
# probe.py tcp|udp|icmp HOST PORT: prints "ok" or why not, within 3 seconds.
import errno, socket, sys
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
try:
    if mode == "tcp":
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, port))
        s.sendall(b"ping")
        print("ok" if s.recv(100) == b"ping" else "no-echo")
    elif mode == "udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(1)
        s.sendto(b"ping", (host, port))
        print("sent")
    else:
        proto = socket.IPPROTO_ICMPV6 if fam == socket.AF_INET6 else socket.IPPROTO_ICMP
        s = socket.socket(fam, socket.SOCK_DGRAM, proto)
        s.settimeout(2)
        s.sendto(b"\x80\0\0\0\0\0\0\0" if fam == socket.AF_INET6 else b"\x08\0\0\0\0\0\0\0", (host, 0))
        s.recv(100)
        print("ok")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF

touch "$tmp/host.log" "$tmp/inet.log"
ip netns exec "$H" "$PY" "$tmp/serve.py" "$tmp/host.log" tcp,127.0.0.1,3128 tcp,127.0.0.1,3129 \
	tcp,::1,3128 udp,127.0.0.1,3128 &
pids+=($!)
ip netns exec "$I" "$PY" "$tmp/serve.py" "$tmp/inet.log" tcp,203.0.113.2,80 tcp,2001:db8::2,80 \
	udp,203.0.113.2,53 &
pids+=($!)
for _ in $(seq 50); do
	[ -e "$tmp/host.log.ready" ] && [ -e "$tmp/inet.log.ready" ] && break
	sleep 0.1
done
[ -e "$tmp/host.log.ready" ] && [ -e "$tmp/inet.log.ready" ] ||
	{ echo "not ok - listeners did not start"; exit 1; }

probe() { as_uid "$1" timeout 10 "$PY" "$tmp/probe.py" "$2" "$3" "$4"; }
expect() { # expect DESCRIPTION WANTED UID MODE HOST PORT
	local d=$1 want=$2 got; shift 2
	got=$(probe "$@")
	if [ "$got" = "$want" ]; then ok "$d ($got)"; else notok "$d: wanted $want, got '$got'"; fi
}
expect_not() { # expect_not DESCRIPTION UNWANTED UID MODE HOST PORT
	local d=$1 bad=$2 got; shift 2
	got=$(probe "$@")
	if [ "$got" != "$bad" ] && [ -n "$got" ]; then ok "$d ($got)"; else notok "$d: got '$got'"; fi
}

# ---- before: the world works ----
expect "before guard, uid $UID_G reaches 203.0.113.2:80" ok "$UID_G" tcp 203.0.113.2 80
c0=$(canary)
[ "$c0" -gt 0 ] && ok "the canary counts packets ($c0)" || notok "the canary counted nothing"

# ---- guard, then sluice is gone: the rules must stay ----
out=$(inh "$SLUICE" guard --uid "$UID_G" --gateway 127.0.0.1:3128 2>&1)
check "sluice guard --uid $UID_G --gateway 127.0.0.1:3128 succeeds: $out" [ $? -eq 0 ]
check "the rules persist after sluice exits" inh nft list chain inet sluice-guard "uid-$UID_G" >/dev/null
c0=$(canary)   # "nft reset counters" resets only named counters: keep a baseline
before_udp=$(grep -c '^udp,127.0.0.1,3128$' "$tmp/host.log")

expect "uid $UID_G reaches the gateway 127.0.0.1:3128" ok "$UID_G" tcp 127.0.0.1 3128
expect "uid $UID_G is refused at once on 127.0.0.1:3129 (reset)" ECONNREFUSED "$UID_G" tcp 127.0.0.1 3129
expect "uid $UID_G cannot reach 203.0.113.2:80 over tcp (reset)" ECONNREFUSED "$UID_G" tcp 203.0.113.2 80
expect_not "uid $UID_G cannot send udp to 203.0.113.2:53" sent "$UID_G" udp 203.0.113.2 53
expect_not "uid $UID_G cannot send udp to the gateway's address" sent "$UID_G" udp 127.0.0.1 3128
expect_not "uid $UID_G cannot ping 203.0.113.2" ok "$UID_G" icmp 203.0.113.2 0
expect "uid $UID_G cannot reach [2001:db8::2]:80 over IPv6 (reset)" ECONNREFUSED "$UID_G" tcp 2001:db8::2 80
expect_not "uid $UID_G cannot ping 2001:db8::2" ok "$UID_G" icmp 2001:db8::2 0
expect_not "uid $UID_G cannot reach [::1]:3128 (only the IPv4 gateway)" ok "$UID_G" tcp ::1 3128
after_udp=$(grep -c '^udp,127.0.0.1,3128$' "$tmp/host.log")
check "the udp listener on 127.0.0.1:3128 got nothing" [ "$before_udp" = "$after_udp" ]
c1=$(canary)
check "the canary saw no packet from uid $UID_G ($c0 then $c1)" [ "$c1" = "$c0" ]

expect "another uid ($UID_O) is unaffected: reaches 203.0.113.2:80" ok "$UID_O" tcp 203.0.113.2 80
expect "another uid ($UID_O) reaches 127.0.0.1:3129" ok "$UID_O" tcp 127.0.0.1 3129
expect "root is unaffected: reaches [2001:db8::2]:80" ok 0 tcp 2001:db8::2 80

# ---- --check: the rules read back, and what a flush or an edit leaves ----
# `nft flush ruleset` and the edits below run only in "$H", this test's own
# namespace.
units=$here/../../examples/systemd
gchk() { # gchk WANT-RC WANT-TEXT DESCRIPTION ARG...: guard --check's exit code and message
	local rc_want=$1 want=$2 d=$3 out rc; shift 3
	out=$(inh "$SLUICE" guard --check "$@" 2>&1); rc=$?
	if [ $rc -eq "$rc_want" ] && grep -qF -- "$want" <<<"$out"; then ok "$d (rc $rc): $out"
	else notok "$d: wanted rc $rc_want and '$want', got rc $rc: '$out'"; fi
}
rule_handle() { # rule_handle COMMENT: the handle of uid UID_G's rule with that comment
	inh nft -a list chain inet sluice-guard "uid-$UID_G" |
		awk -v c="comment \"$1\"" 'index($0, c) { print $NF; exit }'
}
# The ExecStart of examples/systemd/sluice-guard-check@.service, for uid $1,
# as systemd would run it (%i, ${GATEWAY}, $$ and the binary replaced).
unit_check_cmd() {
	sed -n 's/^ExecStart=//p' "$units/sluice-guard-check@.service" |
		sed -e "s|/usr/local/bin/sluice|$SLUICE|g" -e "s|%i|$1|g" \
			-e "s|\${GATEWAY}|127.0.0.1:3128|g" -e 's|\$\$|$|g'
}
quiet() { "$@" >/dev/null; }
run_unit_check() { local cmd; cmd=$(unit_check_cmd "$1"); inh bash -c "$cmd"; }

gchk 0 "uid $UID_G is guarded: it may reach only 127.0.0.1:3128" \
	"--check passes right after guard" --uid "$UID_G" --gateway 127.0.0.1:3128
gchk 0 "4 rules as guard installs them" \
	"--check without --gateway takes the gateway from the rules" --uid "$UID_G"
gchk 1 "no chain uid-$UID_O" "--check fails for a uid that was never guarded" --uid "$UID_O"
gchk 1 "'accept tcp to gateway 127.0.0.1:3129' is missing" \
	"--check fails for another gateway than the one guarded" \
	--uid "$UID_G" --gateway 127.0.0.1:3129

h=$(rule_handle "reject tcp with reset")
inh nft delete rule inet sluice-guard "uid-$UID_G" handle "$h"
gchk 1 "rule 2 of 4 'reject tcp with reset' is missing" \
	"--check fails after one rule of the chain is deleted (handle $h)" \
	--uid "$UID_G" --gateway 127.0.0.1:3128
inh nft insert rule inet sluice-guard "uid-$UID_G" meta skuid "$UID_G" accept
expect "with an accept-all rule inserted, uid $UID_G gets out (what --check is for)" \
	ok "$UID_G" tcp 203.0.113.2 80
gchk 1 "(handle" "--check names a rule guard did not install" \
	--uid "$UID_G" --gateway 127.0.0.1:3128
inh "$SLUICE" guard --uid "$UID_G" --gateway 127.0.0.1:3128 >/dev/null
gchk 0 "is guarded" "--check passes again after guard is run again" \
	--uid "$UID_G" --gateway 127.0.0.1:3128
expect "... and uid $UID_G is fenced again" ECONNREFUSED "$UID_G" tcp 203.0.113.2 80

inh nft flush ruleset
gchk 1 "uid $UID_G is NOT guarded: there is no table inet sluice-guard" \
	"--check fails after nft flush ruleset" --uid "$UID_G" --gateway 127.0.0.1:3128
expect "after the flush, uid $UID_G is unfenced (the issue)" ok "$UID_G" tcp 203.0.113.2 80
out=$(run_unit_check "$UID_G" 2>&1)
check "the check unit's command reinstalls the rules: ${out//$'\n'/ | }" \
	quiet inh "$SLUICE" guard --check --uid "$UID_G" --gateway 127.0.0.1:3128
expect "... and uid $UID_G is fenced again" ECONNREFUSED "$UID_G" tcp 203.0.113.2 80
before=$(inh nft -a list table inet sluice-guard)
out=$(run_unit_check "$UID_G" 2>&1)
after=$(inh nft -a list table inet sluice-guard)
check "on intact rules the check unit's command changes nothing and says nothing" \
	[ "$before" = "$after" -a -z "$out" ]

inh nft add table inet sluice-guard '{ flags dormant; }'
expect "a dormant table fences nothing: uid $UID_G gets out" ok "$UID_G" tcp 203.0.113.2 80
gchk 1 "is dormant" "--check fails on a dormant table" --uid "$UID_G"
run_unit_check "$UID_G" >/dev/null 2>&1
gchk 0 "is guarded" "the check unit's command wakes it" --uid "$UID_G"
expect "... and uid $UID_G is fenced again" ECONNREFUSED "$UID_G" tcp 203.0.113.2 80

cp "$SLUICE" "$tmp/sluice" && chmod 755 "$tmp/sluice"
out=$(as_uid "$UID_O" "$tmp/sluice" guard --check --uid "$UID_G" 2>&1); rc=$?
check "--check without CAP_NET_ADMIN fails with 4 and says why: $out" \
	test $rc -eq 4 -a -n "$(grep -F 'needs root or CAP_NET_ADMIN' <<<"$out")"
out=$(inh "$SLUICE" guard --check --remove --uid "$UID_G" 2>&1); rc=$?
check "--check with --remove is refused (rc $rc)" test $rc -eq 2
out=$(inh "$SLUICE" guard --help)
check "guard --help lists --check" grep -qF -- "--check --uid UID [--gateway ADDR:PORT]" <<<"$out"

# ---- the systemd units ----
check "sluice-guard@.service runs sluice guard --uid %i --gateway \${GATEWAY}" \
	grep -qxF 'ExecStart=/usr/local/bin/sluice guard --uid %i --gateway ${GATEWAY}' \
	"$units/sluice-guard@.service"
check "sluice-guard@.service reinstalls on reload and restarts with nftables.service" \
	bash -c "grep -qx 'ExecReload=/usr/local/bin/sluice guard --uid %i --gateway \${GATEWAY}' \
		'$units/sluice-guard@.service' &&
		grep -qx 'PartOf=nftables.service' '$units/sluice-guard@.service' &&
		grep -qx 'ReloadPropagatedFrom=nftables.service' '$units/sluice-guard@.service' &&
		grep -qx 'After=nftables.service' '$units/sluice-guard@.service'"
check "sluice-guard-check@.service runs guard --check, then guard" \
	grep -qF 'sluice guard --check --uid "$$1" --gateway "$$2" >/dev/null || exec /usr/local/bin/sluice guard --uid' \
	"$units/sluice-guard-check@.service"
if command -v systemd-analyze >/dev/null; then
	# As instances, with the binary this test runs (verify checks that
	# ExecStart= is executable); any warning about our units fails.
	vd=$tmp/units
	mkdir -p "$vd"
	for u in sluice-guard@.service sluice-guard-check@.service sluice-guard-check@.timer; do
		sed "s|/usr/local/bin/sluice|$SLUICE|g" "$units/$u" >"$vd/${u/@/@$UID_G}"
	done
	out=$(cd "$vd" && systemd-analyze verify "$vd"/* 2>&1); rc=$?
	check "systemd-analyze verify accepts the units (rc $rc): ${out:-no warnings}" \
		test $rc -eq 0 -a -z "$(grep sluice-guard <<<"$out")"
else
	echo "# systemd-analyze is not installed: the units were only parsed"
fi

# ---- a second guard replaces ----
rules1=$(inh nft -a list table inet sluice-guard | grep -c 'comment')
inh "$SLUICE" guard --uid "$UID_G" --gateway 127.0.0.1:3128 >/dev/null
rules2=$(inh nft -a list table inet sluice-guard | grep -c 'comment')
chains=$(inh nft list table inet sluice-guard | grep -c "chain uid-$UID_G ")
check "a second guard does not duplicate rules ($rules1 then $rules2, $chains chain)" \
	test "$rules1" = "$rules2" -a "$chains" = 1 -a "$rules1" -gt 0
inh "$SLUICE" guard --uid "$UID_G" --gateway '[::1]:3128' >/dev/null
expect "guard with [::1]:3128 replaces: uid $UID_G reaches [::1]:3128" ok "$UID_G" tcp ::1 3128
expect_not "... and no longer 127.0.0.1:3128" ok "$UID_G" tcp 127.0.0.1 3128
inh "$SLUICE" guard --uid "$UID_O" --gateway 127.0.0.1:3128 >/dev/null
expect_not "a guard for uid $UID_O leaves uid $UID_G's rules: still no 127.0.0.1:3128" ok "$UID_G" tcp 127.0.0.1 3128

# ---- bad input ----
bad() { # bad EXPECTED-TEXT ARG...: exit 2 and a message naming the flag and value
	local want=$1 out rc; shift
	out=$(inh "$SLUICE" guard "$@" 2>&1); rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$out"; then ok "guard $* is refused: $(head -n1 <<<"$out")"
	else notok "guard $*: rc $rc, '$out'"; fi
}
bad "--gateway '127.0.0.1'" --uid "$UID_G" --gateway 127.0.0.1
bad "--gateway '::1:3128'" --uid "$UID_G" --gateway ::1:3128
bad "--gateway 'localhost:3128'" --uid "$UID_G" --gateway localhost:3128
bad "--gateway '127.0.0.1:0'" --uid "$UID_G" --gateway 127.0.0.1:0
bad "--uid 'bob'" --uid bob --gateway 127.0.0.1:3128
bad "--uid 0" --uid 0 --gateway 127.0.0.1:3128
bad "--uid UID is required" --gateway 127.0.0.1:3128

# ---- remove ----
inh "$SLUICE" guard --uid "$UID_G" --remove >/dev/null
check "--remove for uid $UID_G succeeds" [ $? -eq 0 ]
check "uid $UID_G's chain is gone, uid $UID_O's stays" \
	bash -c "! ip netns exec $H nft list chain inet sluice-guard uid-$UID_G 2>/dev/null &&
		ip netns exec $H nft list chain inet sluice-guard uid-$UID_O >/dev/null"
expect "after --remove, uid $UID_G reaches 127.0.0.1:3129 again" ok "$UID_G" tcp 127.0.0.1 3129
inh "$SLUICE" guard --uid "$UID_O" --remove >/dev/null
check "removing the last uid removes the table" \
	bash -c "! ip netns exec $H nft list table inet sluice-guard 2>/dev/null"
inh "$SLUICE" guard --uid "$UID_O" --remove 2>/dev/null
check "--remove with nothing to remove fails (exit 1)" [ $? -eq 1 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
