#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The fence around a sandbox, tried as an attacker would (docs/fence.md):
#
#  - the gateway answers only its sandbox: another uid in the host
#    namespace, root there, a local process that connects from the
#    sandbox's own address (IP_TRANSPARENT), and the "internet" namespace, which routes the
#    pool's range to the host, all try the proxy and the DNS of a running
#    `sluice run`; the origin must see none of their requests and the
#    gateway none of their connections;
#  - attach: raw AF_PACKET frames from a container's own link, on a link
#    added or renamed after attaching, and UDP/53 to an IPv6 address on the
#    container's own link never leave (a listener on the far side counts);
#    a namespace that could undo the fence (CAP_NET_ADMIN inside, or owned
#    by another user namespace) is refused; the fence outlives the --pid
#    process while another process holds the namespace, and goes with the
#    last one;
#  - a flood of blocked packets from an attached container leaves a short
#    audit log that still accounts for every packet.
#
# sluice runs only inside the world's host namespace (world.sh). Traffic
# goes only to the test's namespaces, on TEST-NET addresses.
#
# Usage: test-fence.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-fence.sh ip nft nsenter unshare setpriv python3 curl dnsmasq openssl
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }
. "$here/world.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

extra_pids=()
cleanup() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${extra_pids[@]}"; do wait "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N || { echo "not ok - services"; exit 1; }
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80]
P
host_ns=$(ip netns exec "$WORLD_HOST" readlink /proc/self/ns/net)

# A DNS query for allowed.test: prints "answered" or why not.
cat >"$T/dnsq.py" <<'PY'
import socket, struct, sys
server, proto = sys.argv[1], sys.argv[2]
fam = socket.AF_INET6 if ":" in server else socket.AF_INET
q = struct.pack(">HHHHHH", 0x5151, 0x0100, 1, 0, 0, 0) + b"\x07allowed\x04test\x00\x00\x01\x00\x01"
try:
    if proto == "udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(q, (server, 53))
        a = s.recv(512)
    else:
        s = socket.create_connection((server, 53), timeout=3)
        s.settimeout(3)
        s.sendall(struct.pack(">H", len(q)) + q)
        a = s.recv(514)[2:]
    print("answered" if a[:2] == q[:2] else "garbage")
except OSError as e:
    print("no answer: " + type(e).__name__)
PY
# A request to the proxy from a chosen source that is not the host's own
# (IP_TRANSPARENT, as root: the kernel then lets it connect from there,
# which IP_FREEBIND alone does not).
cat >"$T/spoof.py" <<'PY'
import socket, sys
src, gw = sys.argv[1], sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_IP, 19, 1)  # IP_TRANSPARENT
s.bind((src, 0))
s.settimeout(3)
try:
    s.connect((gw, 3128))
    s.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    print("served: %r" % s.recv(64)[:20])
except OSError as e:
    print("refused: " + type(e).__name__)
PY
# Raw frames of an unused ethertype, carrying a marker, on one interface.
cat >"$T/rawsend.py" <<'PY'
import socket, sys
dev = sys.argv[1]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
if len(sys.argv) > 2:
    s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
s.bind((dev, 0))
frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + b"sluice-raw-frame" * 4
sent = 0
for _ in range(5):
    try:
        s.send(frame); sent += 1
    except OSError:
        pass
print("sent %d" % sent)
PY
# Counts the marked frames that arrive on an interface, one line each.
cat >"$T/rawcount.py" <<'PY'
import os, socket, sys
dev, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b5))
s.bind((dev, 0))
open(out + ".ready", "w").close()
for _ in range(100000):  # bounded; world_down ends it first
    if b"sluice-raw-frame" in s.recv(2048):
        with open(out, "a") as f:
            f.write("frame\n")
PY
# Records every UDP datagram that reaches ADDR:PORT.
cat >"$T/udpcount.py" <<'PY'
import socket, sys
addr, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, port))
open(out + ".ready", "w").close()
for _ in range(100000):
    s.recvfrom(2048)
    with open(out, "a") as f:
        f.write("datagram\n")
PY
chmod 644 "$T"/*.py

count() { [ -e "$1" ] && wc -l <"$1" || echo 0; }
wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
origin_requests() { grep -c 'allowed.test' "$T/origin.log" 2>/dev/null; }
audit_query() { # audit_query LOG EXPR over recs (parsed lines)
	"$PY" - "$1" "$2" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
blocked = [r for r in recs if r.get("event") == "blocked"]
def count(**kw):
    return sum(1 for r in blocked if all(r.get(k) == v for k, v in kw.items()))
def not_logged():
    n = 0
    for r in blocked:
        reason = r.get("reason") or ""
        if reason.startswith("blocked-packets-not-logged: "):
            n += int(reason.split(": ", 1)[1].split(" ")[0])
    return n
print(eval(sys.argv[2]))
PY
}

# ==== 1. run: the gateway answers only its sandbox ====
world_host_bg "$SLUICE" run --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/run.log" -- sleep 121 >"$T/run.out" 2>"$T/run.err"
run_pid=$!
extra_pids+=("$run_pid")
gw= sb_pid=
for _ in $(seq 100); do
	gw=$(ip -n "$WORLD_HOST" -o -4 addr show | awk '$2 ~ /^sl/ { sub("/.*", "", $4); print $4; exit }')
	for p in /proc/[0-9]*; do
		[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" = "sleep 121 " ] || continue
		ns=$(readlink "$p/ns/net" 2>/dev/null) || continue
		[ "$ns" != "$host_ns" ] && [ "$ns" != "$(readlink /proc/self/ns/net)" ] &&
			{ sb_pid=${p#/proc/}; break; }
	done
	[ -n "$gw" ] && [ -n "$sb_pid" ] && break
	sleep 0.1
done
if [ -z "$gw" ] || [ -z "$sb_pid" ]; then
	notok "sluice run did not start: $(cat "$T/run.err")"
	finish
fi
peer=$(echo "$gw" | awk -F. '{ print $1 "." $2 "." $3 "." $4 + 1 }')
echo "# run: gateway $gw, sandbox $peer"

# The control: the sandbox itself is served.
out=$(nsenter -t "$sb_pid" -n curl -s -m 5 -o /dev/null -w '%{http_code}' \
	-x "http://$gw:3128" http://allowed.test/)
check "run: the sandbox itself is served by its gateway" 200 "$out"
[ "$out" = 200 ] || sed 's/^/# audit: /' "$T/run.log"
out=$(nsenter -t "$sb_pid" -n "$PY" "$T/dnsq.py" "$gw" udp)
check "run: ... and answered by its DNS" answered "$out"
o0=$(origin_requests)

as_other() { world_host setpriv --reuid 65533 --regid 65533 --clear-groups "$@"; }
out=$(as_other curl -s -m 4 -o /dev/null -w '%{http_code}' -x "http://$gw:3128" http://allowed.test/)
check "run: another uid on the host gets no proxy (dropped)" 000 "$out"
out=$(world_host curl -s -m 4 -o /dev/null -w '%{http_code}' -x "http://$gw:3128" http://allowed.test/)
check "run: ... nor root there" 000 "$out"
out=$(world_host curl -s -m 4 -o /dev/null -w '%{http_code}' --interface "$WORLD_HOST_ADDR" \
	-x "http://$gw:3128" http://allowed.test/)
check "run: ... nor from the host's other address" 000 "$out"
out=$(world_host "$PY" "$T/spoof.py" "$peer" "$gw")
check "run: ... nor a process that connects from the sandbox's own address" \
	"refused: TimeoutError" "$out"
out=$(as_other "$PY" "$T/dnsq.py" "$gw" udp)
check "run: another uid gets no DNS answer over UDP" "no answer: TimeoutError" "$out"
out=$(as_other "$PY" "$T/dnsq.py" "$gw" tcp)
check "run: ... nor over TCP" "no answer: TimeoutError" "$out"
out=$(world_net curl -s -m 4 -o /dev/null -w '%{http_code}' -x "http://$gw:3128" http://allowed.test/)
check "run: the internet namespace, routing the pool to the host, gets no proxy" 000 "$out"
out=$(world_net "$PY" "$T/dnsq.py" "$gw" udp)
check "run: ... and no DNS answer" "no answer: TimeoutError" "$out"
check "run: the origin saw none of their requests" "$o0" "$(origin_requests)"
kill -TERM "$run_pid"
for _ in $(seq 100); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
out=$(audit_query "$T/run.log" "sorted(set(str(r.get('client')).rsplit(':', 1)[0] for r in recs if r.get('event') != 'blocked'))")
check "run: the gateway saw connections from its sandbox alone" "['$peer']" "$out"

# ==== 2. attach: a container's other ways out ====
NOADMIN="setpriv --bounding-set -net_admin,-sys_admin,-sys_module,-sys_ptrace --inh-caps -net_admin,-sys_admin,-sys_module,-sys_ptrace"
inside() { local pid=$1; shift; nsenter -t "$pid" -n -- "$@"; }
wait_netns() { # until process $1 (comm $2) is in a namespace other than the host's
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$1/ns/net" 2>/dev/null)" != "$host_ns" ] &&
			[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
start_attach() { # start_attach NAME ARGS...: sets spid; 0 when attached
	local name=$1; shift
	rm -f "$T/attach-$name.err"
	world_host_bg "$SLUICE" attach "$@" --policy "$T/policy.yaml" --resolver "$N:53" \
		--audit "$T/attach-$name.log" 2>"$T/attach-$name.err"
	spid=$!
	extra_pids+=("$spid")
	for _ in $(seq 100); do
		grep -q 'attached through' "$T/attach-$name.err" 2>/dev/null && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}
stop_attach() { # stop_attach: SIGTERM, then rc
	kill -TERM "$spid"
	for _ in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
	wait "$spid"
}

# -- refused targets --
world_host_bg unshare --net sh -c 'ip link set lo up; exec sleep 300' >/dev/null 2>&1
adm_pid=$!
extra_pids+=("$adm_pid")
wait_netns "$adm_pid" sleep || notok "the CAP_NET_ADMIN container did not start"
out=$(world_host "$SLUICE" attach --pid "$adm_pid" --policy "$T/policy.yaml" 2>&1); rc=$?
check "attach: a container holding CAP_NET_ADMIN is refused (exit 2)" 2 "$rc"
check_has "attach: ... saying why" "has CAP_NET_ADMIN" "$out"
check_has "attach: ... and what to do" "start the container without it" "$out"
check "attach: ... and its namespace is untouched" "" "$(inside "$adm_pid" nft list tables)"
# Without CAP_NET_ADMIN but with CAP_SYS_ADMIN (docker --cap-add SYS_ADMIN):
# setns into another namespace, or out of the container, undoes the fence.
world_host_bg unshare --net sh -c \
	'ip link set lo up; exec setpriv --bounding-set -net_admin --inh-caps -net_admin sleep 300' \
	>/dev/null 2>&1
sa_pid=$!
extra_pids+=("$sa_pid")
wait_netns "$sa_pid" sleep || notok "the CAP_SYS_ADMIN container did not start"
out=$(world_host "$SLUICE" attach --pid "$sa_pid" --policy "$T/policy.yaml" 2>&1); rc=$?
check "attach: a container holding CAP_SYS_ADMIN (not CAP_NET_ADMIN) is refused (exit 2)" 2 "$rc"
check_has "attach: ... saying why" "has CAP_SYS_ADMIN" "$out"
check "attach: ... and its namespace is untouched" "" "$(inside "$sa_pid" nft list tables)"
# No capability held, but CAP_NET_ADMIN still in the bounding set and no
# no_new_privs (docker run --cap-add NET_ADMIN --user 1000, a dev
# container's user with sudo): a set-user-ID-root program gives every
# bounding capability back, and the fence with it. $T/asroot stands for
# sudo; the container has a link of its own, as a docker container's eth0.
cc -o "$T/asroot" -x c - <<'C' && chmod 4755 "$T/asroot" || notok "building the sudo stand-in"
#define _GNU_SOURCE
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 2 || setresgid(0, 0, 0) || setresuid(0, 0, 0))
		return 1;
	execv(argv[1], argv + 1);
	return 127;
}
C
AS1000="setpriv --reuid 1000 --regid 1000 --clear-groups"
world_host_bg unshare --net sh -c "ip link set lo up; exec $AS1000 sleep 300" >/dev/null 2>&1
bnd_pid=$!
extra_pids+=("$bnd_pid")
wait_netns "$bnd_pid" sleep || notok "the bounding-set container did not start"
ip -n "$WORLD_HOST" link add "fr$WORLD_ID" type veth peer name cr0 netns "$bnd_pid"
ip -n "$WORLD_HOST" addr add 192.0.2.1/24 dev "fr$WORLD_ID"
ip -n "$WORLD_HOST" link set "fr$WORLD_ID" up
inside "$bnd_pid" sh -c 'ip addr add 192.0.2.2/24 dev cr0 && ip link set cr0 up &&
	ip route add default via 192.0.2.1' || notok "the bounding-set container's own link"
echo "# $(grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/$bnd_pid/status | tr '\t\n' '  ')"
c_bnd=$(world_canary_count)
if start_attach bnd --pid "$bnd_pid"; then
	# Attached: what a process of the container can do then.
	inside "$bnd_pid" $AS1000 "$T/asroot" /bin/sh -c \
		"nft flush ruleset; ip route replace default via 192.0.2.1 dev cr0" 2>/dev/null
	inside "$bnd_pid" $AS1000 "$PY" -c '
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("'$WORLD_CANARY'", 53))' 2>/dev/null
	sleep 0.3
	echo "# attached; then: tables '$(inside "$bnd_pid" nft list tables | tr '\n' ' ')'," \
		"canary $c_bnd -> $(world_canary_count)"
	stop_attach >/dev/null 2>&1
	notok "attach: a container that can regain CAP_NET_ADMIN (bounding set, no no_new_privs) is refused"
else
	wait "$spid"
	check "attach: a container that can regain CAP_NET_ADMIN (bounding set, no no_new_privs) is refused (exit 2)" \
		2 "$?"
	check_has "attach: ... saying why" "CAP_NET_ADMIN (in its bounding set" "$(cat "$T/attach-bnd.err")"
	check_has "attach: ... and what to do" "no-new-privileges" "$(cat "$T/attach-bnd.err")"
	check "attach: ... and its namespace is untouched" "" "$(inside "$bnd_pid" nft list tables)"
fi
check "attach: ... the canary saw nothing from it" "$c_bnd" "$(world_canary_count)"
world_host_bg unshare --user --map-root-user --net sh -c 'exec sleep 300' >/dev/null 2>&1
usr_pid=$!
extra_pids+=("$usr_pid")
wait_netns "$usr_pid" sleep || notok "the rootless container did not start"
out=$(world_host "$SLUICE" attach --pid "$usr_pid" --policy "$T/policy.yaml" 2>&1); rc=$?
check "attach: a namespace owned by another user namespace is refused (exit 2)" 2 "$rc"
check_has "attach: ... saying why" "belongs to a user namespace other than sluice's" "$out"
check "attach: ... and no veth was made for either" "" \
	"$(ip -n "$WORLD_HOST" -o link | awk -F': ' '$2 ~ /^sl/ {print $2}')"

# -- a container with a link of its own, IPv4 and IPv6 on it --
world_host_bg unshare --net sh -c "ip link set lo up; exec $NOADMIN sleep 301" >/dev/null 2>&1
c_pid=$!
extra_pids+=("$c_pid")
wait_netns "$c_pid" sleep || { notok "the container did not start"; finish; }
ip -n "$WORLD_HOST" link add "fa$WORLD_ID" type veth peer name cx0 netns "$c_pid"
ip -n "$WORLD_HOST" addr add 198.51.100.1/24 dev "fa$WORLD_ID"
ip -n "$WORLD_HOST" addr add 2001:db8:51::1/64 dev "fa$WORLD_ID" nodad
ip -n "$WORLD_HOST" link set "fa$WORLD_ID" up
inside "$c_pid" sh -c 'ip addr add 198.51.100.2/24 dev cx0 && ip addr add 2001:db8:51::2/64 dev cx0 nodad &&
	ip link set cx0 up && ip route add default via 198.51.100.1' || notok "the container's own link"
world_bg "$WORLD_HOST" "$PY" "$T/rawcount.py" "fa$WORLD_ID" "$T/raw-fa"
world_bg "$WORLD_HOST" "$PY" "$T/udpcount.py" 2001:db8:51::1 53 "$T/udp6"
wait_file "$T/raw-fa.ready" && wait_file "$T/udp6.ready" || notok "the far side's listeners"
for _ in $(seq 50); do # the IPv6 address answers once the link is up
	inside "$c_pid" "$PY" -c '
import socket; s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.sendto(b"x", ("2001:db8:51::1", 53))' 2>/dev/null
	[ "$(count "$T/udp6")" -gt 0 ] && break
	sleep 0.1
done
inside "$c_pid" "$PY" "$T/rawsend.py" cx0 >/dev/null
for _ in $(seq 20); do [ "$(count "$T/raw-fa")" -ge 5 ] && break; sleep 0.1; done
check "before: raw frames from the container's own link reach the far side" 5 "$(count "$T/raw-fa")"
check "before: so does UDP/53 to the far side's IPv6 address" yes \
	"$([ "$(count "$T/udp6")" -gt 0 ] && echo yes)"
raw0=$(count "$T/raw-fa")
udp0=$(count "$T/udp6")

if start_attach c --pid "$c_pid"; then
	ok "attach: attached to the container"
else
	notok "attach: did not attach: $(cat "$T/attach-c.err")"
	finish
fi
out=$(inside "$c_pid" nft list table netdev sluice 2>&1)
check_has "attach: the container's own link drops at egress" 'egress device "cx0"' "$out"
check "attach: ... and only it (not lo, not our veth)" 1 "$(grep -c 'hook egress' <<<"$out")"
out=$(inside "$c_pid" "$PY" "$T/rawsend.py" cx0)
out2=$(inside "$c_pid" "$PY" "$T/rawsend.py" cx0 bypass)
sleep 0.5
check "attach: raw AF_PACKET frames do not leave ($out; with PACKET_QDISC_BYPASS: $out2)" \
	"$raw0" "$(count "$T/raw-fa")"
out=$(inside "$c_pid" "$PY" -c '
import socket, errno
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    s.sendto(b"\x51\x51" + b"\0" * 10, ("2001:db8:51::1", 53)); print("sent")
except OSError as e:
    print(errno.errorcode.get(e.errno, e))')
sleep 0.5
check "attach: UDP/53 to an IPv6 address on the container's own link is blocked ($out)" \
	"$udp0" "$(count "$T/udp6")"
check "attach: ... and the canary saw nothing" 0 "$(world_canary_count)"

# A link added after attaching, and one renamed: fenced as they come.
ip -n "$WORLD_HOST" link add "fb$WORLD_ID" type veth peer name cy0 netns "$c_pid"
ip -n "$WORLD_HOST" link set "fb$WORLD_ID" up
world_bg "$WORLD_HOST" "$PY" "$T/rawcount.py" "fb$WORLD_ID" "$T/raw-fb"
wait_file "$T/raw-fb.ready" || notok "the new link's listener"
inside "$c_pid" ip link set cy0 up
for _ in $(seq 40); do
	inside "$c_pid" nft list table netdev sluice 2>/dev/null | grep -q '"cy0"' && break
	sleep 0.05
done
out=$(inside "$c_pid" "$PY" "$T/rawsend.py" cy0)
sleep 0.5
check "attach: a link added later is fenced too ($out)" 0 "$(count "$T/raw-fb")"
inside "$c_pid" sh -c 'ip link set cy0 down && ip link set cy0 name cz0 && ip link set cz0 up'
for _ in $(seq 40); do
	inside "$c_pid" nft list table netdev sluice 2>/dev/null | grep -q '"cz0"' && break
	sleep 0.05
done
out=$(inside "$c_pid" "$PY" "$T/rawsend.py" cz0)
sleep 0.5
check "attach: ... and again once renamed ($out)" 0 "$(count "$T/raw-fb")"

# A flood of blocked packets: a short log that still counts them all.
inside "$c_pid" "$PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3000):
    try: s.sendto(b"x", ("203.0.113.99", 9999))
    except OSError: pass'
stop_attach; rc=$?
check "attach: SIGTERM detaches (exit 0)" 0 "$rc"
check "attach: no table left in the container (inet nor netdev)" "" "$(inside "$c_pid" nft list tables)"
inside "$c_pid" "$PY" "$T/rawsend.py" cx0 >/dev/null
for _ in $(seq 20); do [ "$(count "$T/raw-fa")" -gt "$raw0" ] && break; sleep 0.1; done
check "after: the container's own link works again" yes \
	"$([ "$(count "$T/raw-fa")" -gt "$raw0" ] && echo yes)"
out=$(audit_query "$T/attach-c.log" "count(method='udp', port=9999)")
check "flood: at most a burst and the rate's worth of records ($out of 3000)" yes \
	"$([ "${out:-9999}" -le 300 ] && echo yes)"
out=$(audit_query "$T/attach-c.log" "count(method='udp', port=9999) + not_logged() >= 3000")
check "flood: records + 'not logged' counts account for every packet" True "$out"
out=$(audit_query "$T/attach-c.log" "count(method='udp', host='2001:db8:51::1', port=53)")
check "audit: the IPv6 UDP/53 attempt is a blocked record" 1 "$out"

# -- the --pid process exits, another process keeps the namespace --
world_host_bg unshare --net sh -c \
	"ip link set lo up; $NOADMIN sleep 303 & exec $NOADMIN sleep 302" >/dev/null 2>&1
k_pid=$!
extra_pids+=("$k_pid")
wait_netns "$k_pid" sleep || notok "the two-process container did not start"
child=
for _ in $(seq 50); do
	for p in /proc/[0-9]*; do
		[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" = "sleep 303 " ] && child=${p#/proc/}
	done
	[ -n "$child" ] && break
	sleep 0.1
done
[ -n "$child" ] || notok "the container's second process"
extra_pids+=("$child")
if start_attach k --pid "$k_pid"; then ok "attach: attached to a container of two processes"; else
	notok "attach: $(cat "$T/attach-k.err")"; fi
kill -TERM "$k_pid"
sleep 3
check "attach: the --pid process exits, the other lives on: sluice stays" yes \
	"$(kill -0 "$spid" 2>/dev/null && echo yes)"
check_has "attach: ... and says so" "the fence stays until nothing holds the namespace" \
	"$(cat "$T/attach-k.err")"
check_has "attach: ... with its table still there" "table inet sluice" \
	"$(inside "$child" nft list tables 2>&1)"
out=$(inside "$child" curl -s -m 4 -o /dev/null -w '%{http_code}' --noproxy '*' \
	http://203.0.113.99:8080/)
check "attach: ... and the canary still unreachable from the survivor" 0 "$(world_canary_count)"
kill -TERM "$child"
for _ in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
rc=124
kill -0 "$spid" 2>/dev/null || { wait "$spid"; rc=$?; }
check "attach: the last process gone, sluice detaches by itself (exit 0)" 0 "$rc"
check_has "attach: ... saying why" "nothing holds the namespace any more" "$(cat "$T/attach-k.err")"
check "attach: nothing of sluice's is left on the host" "" \
	"$(ip -n "$WORLD_HOST" -o link | awk -F': ' '$2 ~ /^sl/ {print $2}')$(ip netns exec "$WORLD_HOST" nft list tables | grep sluice)"

# -- no process at all, but a bind mount, then an open file, hold it --
X=slt-fence-x$WORLD_ID
ip netns add "$X" && ip -n "$X" link set lo up || notok "ip netns add $X"
if start_attach x --netns "/run/netns/$X"; then ok "attach: attached to a namespace no process is in"; else
	notok "attach: $(cat "$T/attach-x.err")"; fi
world_bg "$WORLD_HOST" "$PY" -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
open(sys.argv[2], "w").close()
time.sleep(300)' "/run/netns/$X" "$T/holder.ready"
holder=${world_pids[-1]}
wait_file "$T/holder.ready" || notok "the holder did not start"
sleep 2.5
check "attach: a bind mount of the namespace keeps the fence" yes \
	"$(kill -0 "$spid" 2>/dev/null && echo yes)"
ip netns del "$X"
sleep 2.5
check "attach: once unmounted, another process's open file of it keeps the fence" yes \
	"$(kill -0 "$spid" 2>/dev/null && echo yes)"
kill "$holder"
for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
rc=124
kill -0 "$spid" 2>/dev/null || { wait "$spid"; rc=$?; }
check "attach: nothing holds it any more: sluice detaches (exit 0)" 0 "$rc"

check "the canary saw nothing at all" 0 "$(world_canary_count)"
out=$(grep -lE "AddressSanitizer|LeakSanitizer|runtime error:" "$T"/*.err 2>/dev/null)
check "no sanitizer report from any sluice" "" "$out"
finish
