#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice attach` against namespaces that exist already: one made by
# `unshare --net` (given an interface and default routes of its own, so
# that putting them back is tested) and one made by bubblewrap. While
# attached, every way out is tried from inside and the canary must see
# nothing; the proxy, the capture and the DNS of the gateway must work.
# After SIGTERM the namespace must be exactly as it was, and the host must
# hold nothing of sluice's. sluice runs only inside the world's host
# namespace (world.sh), and is never pointed at the machine's own.
#
# Usage: test-attach.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-attach.sh needs root (network namespaces, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter unshare bwrap python3 curl dnsmasq openssl; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	local d=$1; shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}

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
world_services allowed.test=$N denied.test=$N || { echo "not ok - services"; exit 1; }
cat >"$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80]
  - host: allowed.test
    ports: [443]
    methods: [GET]
    paths: ["/inspected/*"]
P

cat >"$T/probe.py" <<'PY'
# probe.py KIND ARGS: try to get out. Exit 0: it got out, 1: blocked,
# 2: the probe itself is broken. Prints what happened.
import errno, socket, struct, sys, time

def out(ok, what):
    print(("REACHED " if ok else "blocked ") + what)
    sys.exit(0 if ok else 1)

kind, args = sys.argv[1], sys.argv[2:]
try:
    if kind in ("tcp", "tcp6"):
        fam = socket.AF_INET6 if kind == "tcp6" else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(4)
        s.connect((args[0], int(args[1])))
        # Captured connections are decided by the gateway: a denial is
        # its 403. Anything else means the target itself answered.
        s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % args[0]).encode())
        data = s.recv(4096)
        if data.startswith(b"HTTP/1.1 403") and b"sluice:" in data:
            out(False, "tcp %s:%s captured and refused by the gateway" % tuple(args))
        out(True, "tcp %s:%s connected, answered %r" % (args[0], args[1], data[:40]))
    elif kind == "dns":  # dns SERVER NAME: reached when answered with an A record
        name = b"".join(bytes([len(l)]) + l.encode() for l in args[1].split(".")) + b"\0"
        q = struct.pack(">HHHHHH", 0x5151, 0x0100, 1, 0, 0, 0) + name + b"\0\1\0\1"
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(2)
        s.connect((args[0], 53))
        s.send(q)
        a = s.recv(512)
        rcode = a[3] & 15 if len(a) >= 4 else -1
        if a[:2] != q[:2] or rcode != 0:
            out(False, "dns %s refused (rcode %d)" % (args[1], rcode))
        out(True, "dns %s answered: %s" % (args[1], socket.inet_ntoa(a[-4:])))
    elif kind == "udp":  # fire and forget: the canary's counter judges
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(3):
            s.sendto(b"x" * 32, (args[0], int(args[1])))
            time.sleep(0.1)
        out(False, "udp sent to %s:%s (the canary decides)" % tuple(args))
    elif kind == "icmp":  # as root: a raw socket
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        s.settimeout(1.5)
        s.sendto(struct.pack(">BBHHH", 8, 0, 0xf7fe, 0, 1), (args[0], 0))
        while True:
            d, src = s.recvfrom(512)
            if src[0] == args[0] and d[(d[0] & 15) * 4] == 0:
                out(True, "icmp echo answered by " + args[0])
    else:
        print("unknown probe " + kind); sys.exit(2)
except (OSError, socket.timeout) as e:
    out(False, "%s %s: %s" % (kind, " ".join(args),
                              errno.errorcode.get(getattr(e, "errno", None) or 0, repr(e))))
PY

# A listener in the host namespace on the containers' old gateway, to show
# that the old route works before and after, and not while attached.
world_bg "$WORLD_HOST" python3 -c '
import socket, select
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 2222)); s.listen(8)
for _ in range(200):
    if select.select([s], [], [], 30)[0]:
        c = s.accept()[0]; c.sendall(b"old-route\n"); c.close()'

inside() { local pid=$1; shift; nsenter -t "$pid" -n -- "$@"; }
probe() { local pid=$1; shift; inside "$pid" python3 "$T/probe.py" "$@"; }
blocked() { # blocked PID DESCRIPTION PROBE-ARGS...
	local pid=$1 d=$2 out rc hits; shift 2
	out=$(probe "$pid" "$@" 2>&1); rc=$?
	hits=$(world_canary_count)
	if [ "$rc" = 1 ] && [ "${hits:-x}" = 0 ]; then
		ok "$d ($out)"
	else
		notok "$d: exit $rc, canary saw ${hits:-?} packets: $out"
	fi
}
state() { # everything attach may touch in a namespace, as text
	inside "$1" sh -c 'ip -o link | awk -F": " "{print \$2}" | sort
		ip -o addr | awk "{print \$2, \$3, \$4}"
		ip -4 route show table all; ip -6 route show table all
		nft list tables'
}
host_state() {
	ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort
	ip -n "$WORLD_HOST" -o addr | awk '{print $2, $3, $4}'
	ip -n "$WORLD_HOST" route
	ip netns exec "$WORLD_HOST" nft list tables
}
wait_netns() { # until process $1 is in a namespace other than the host's
	local i
	for i in $(seq 100); do
		[ -e "/proc/$1/ns/net" ] && [ "$(readlink "/proc/$1/ns/net")" != "$host_ns" ] &&
			[ "$(cat "/proc/$1/comm" 2>/dev/null)" = sleep ] && return 0
		sleep 0.05
	done
	return 1
}
host_ns=$(ip netns exec "$WORLD_HOST" readlink /proc/self/ns/net)
host0=$(host_state)

# ---- the command line ----
attach() { world_host "$SLUICE" attach "$@"; }
sleep 0 & gone=$!; wait $gone
out=$(attach --pid $gone --policy "$T/policy.yaml" 2>&1); rc=$?
check "--pid of a process that does not exist: exit $rc (want 2): $out" \
	sh -c "[ $rc = 2 ] && echo '$out' | grep -q 'no such process'"
out=$(attach --netns /etc/hostname --policy "$T/policy.yaml" 2>&1); rc=$?
check "--netns of a regular file: exit $rc (want 2): $out" \
	sh -c "[ $rc = 2 ] && echo '$out' | grep -q 'not a namespace'"
out=$(attach --netns /proc/self/ns/uts --policy "$T/policy.yaml" 2>&1); rc=$?
check "--netns of another kind of namespace: exit $rc (want 2): $out" \
	sh -c "[ $rc = 2 ] && echo '$out' | grep -q 'not a network namespace'"
out=$(attach --pid 99999999 --netns /nonexistent --policy "$T/policy.yaml" 2>&1); rc=$?
check "both --pid and --netns: exit $rc (want 2)" [ $rc = 2 ]
out=$(attach --policy "$T/policy.yaml" 2>&1); rc=$?
check "neither --pid nor --netns: exit $rc (want 2)" [ $rc = 2 ]
out=$(attach --netns /proc/self/ns/net --policy "$T/policy.yaml" 2>&1); rc=$?
check "sluice's own namespace is refused: exit $rc (want 2): $out" \
	sh -c "[ $rc = 2 ] && echo '$out' | grep -q 'own network namespace'"
check "... and nothing changed on the host" [ "$(host_state)" = "$host0" ]

# ---- the two kinds of container ----
# Neither holds CAP_NET_ADMIN (attach refuses one that does: it could
# delete the rules), as a container started without --privileged or
# --cap-add NET_ADMIN; test-fence.sh tries one that does.
NOADMIN="setpriv --bounding-set -net_admin,-sys_admin,-sys_module,-sys_ptrace --inh-caps -net_admin,-sys_admin,-sys_module,-sys_ptrace"
# 1: unshare --net, lo up, with a veth of its own to the host namespace on
# TEST-NET-2 and two default routes (one to a gateway that is not there).
world_host_bg unshare --net sh -c "ip link set lo up; exec $NOADMIN sleep 300" >/dev/null 2>&1
u_pid=$!
extra_pids+=("$u_pid")
wait_netns "$u_pid" || { notok "the unshare container did not start"; exit 1; }
ip -n "$WORLD_HOST" link add "ca$WORLD_ID" type veth peer name cx0 netns "$u_pid"
ip -n "$WORLD_HOST" addr add 198.51.100.1/24 dev "ca$WORLD_ID"
ip -n "$WORLD_HOST" link set "ca$WORLD_ID" up
inside "$u_pid" sh -c 'ip addr add 198.51.100.2/24 dev cx0 && ip link set cx0 up &&
	ip route add default via 198.51.100.1 &&
	ip route add default via 198.51.100.3 metric 200 proto static' ||
	notok "could not give the unshare container its own routes"
# Its IPv6 link-local address comes a moment after the link is up: let it
# settle, so that it is part of the state the container must get back.
for i in $(seq 100); do
	inside "$u_pid" ip -6 -o addr show dev cx0 scope link | grep -v tentative | grep -q . && break
	sleep 0.05
done
host0=$(host_state) # now with the container's own veth

# 2: bubblewrap; $! is bwrap, whose child runs in the new namespace.
# (Its output goes nowhere: a sleeper holding the test's stdout would keep
# meson waiting for it long after the test is done.)
world_host_bg bwrap --unshare-net --die-with-parent --cap-drop CAP_NET_ADMIN --cap-drop CAP_SYS_ADMIN \
	--cap-drop CAP_SYS_MODULE --cap-drop CAP_SYS_PTRACE \
	--ro-bind / / --dev /dev --proc /proc \
	--info-fd 3 sleep 300 3>"$T/bwrap.info" >/dev/null 2>&1
b_parent=$!
extra_pids+=("$b_parent")
for i in $(seq 100); do grep -q child-pid "$T/bwrap.info" 2>/dev/null && break; sleep 0.05; done
b_pid=$(sed -n 's/.*"child-pid": *\([0-9]*\).*/\1/p' "$T/bwrap.info")
wait_netns "${b_pid:-0}" || { notok "the bwrap container did not start"; exit 1; }

out=$(attach --pid "$b_parent" --policy "$T/policy.yaml" 2>&1); rc=$?
check "bwrap's own pid (in sluice's namespace) is refused: exit $rc (want 2)" [ $rc = 2 ]

out=$(probe "$u_pid" tcp 198.51.100.1 2222 2>&1)
check "before: the unshare container's own route works ($out)" \
	sh -c "echo '$out' | grep -q 'old-route'"

attach_one() { # attach_one NAME PID TARGET-ARGS...
	local name=$1 pid=$2 before spid rc i gw out; shift 2
	before=$(state "$pid")
	rm -f "$T/attach-$name.err"
	world_host_bg "$SLUICE" attach "$@" --policy "$T/policy.yaml" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" --audit "$T/audit-$name.log" 2>"$T/attach-$name.err"
	spid=$!
	extra_pids+=("$spid")
	for i in $(seq 100); do
		grep -q 'attached through' "$T/attach-$name.err" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q 'attached through' "$T/attach-$name.err"; then
		notok "$name: sluice attach did not attach: $(cat "$T/attach-$name.err")"
		return
	fi
	ok "$name: attached ($(head -c 120 "$T/attach-$name.err"))"
	gw=$(sed -n 's/.*gateway \([0-9.]*\) .*/\1/p' "$T/attach-$name.err")

	out=$(world_host "$SLUICE" attach "$@" --policy "$T/policy.yaml" 2>&1); rc=$?
	check "$name: a second attach to the same namespace is refused: exit $rc: $out" \
		sh -c "[ $rc = 2 ] && echo '$out' | grep -q 'another sluice'"
	out=$(inside "$pid" ip route show default)
	check "$name: the only default route is the gateway ($out)" \
		sh -c "[ \$(echo '$out' | wc -l) = 1 ] && echo '$out' | grep -q '^default via $gw dev sl'"
	out=$(inside "$pid" curl -s -m 5 -o /dev/null -w '%{http_code}' \
		-x "http://$gw:3128" http://allowed.test/)
	check "$name: the proxy serves an allowed host ($out)" [ "$out" = 200 ]
	out=$(inside "$pid" curl -s -m 5 -o /dev/null -w '%{http_code}' \
		-x "http://$gw:3128" http://denied.test/)
	check "$name: the proxy refuses another ($out)" [ "$out" = 403 ]
	out=$(inside "$pid" env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY \
		curl -s -m 5 -o /dev/null -w '%{http_code}' --resolve "allowed.test:80:$N" \
		http://allowed.test/)
	check "$name: a connection that ignores the proxy is captured and served ($out)" \
		[ "$out" = 200 ]
	# Inspected: the container trusts the CA bundle attach names.
	bundle=$(sed -n 's/.*must trust: \([^ ]*\) .*/\1/p' "$T/attach-$name.err")
	out=$(inside "$pid" curl -s -m 5 -o /dev/null -w '%{http_code}' --cacert "$bundle" \
		-x "http://$gw:3128" https://allowed.test/inspected/x)
	check "$name: an inspected request the rule allows, with the CA attach names ($out)" \
		[ "$out" = 200 ]
	out=$(inside "$pid" curl -s -m 5 -o /dev/null -w '%{http_code}' --cacert "$bundle" \
		-x "http://$gw:3128" https://allowed.test/elsewhere)
	check "$name: ... and one it does not: 403 inside the tunnel ($out)" [ "$out" = 403 ]
	out=$(probe "$pid" dns 198.51.100.1 allowed.test 2>&1)
	check "$name: DNS to the container's own resolver is answered by the gateway ($out)" \
		sh -c "echo '$out' | grep -q 'answered: $N'"
	blocked "$pid" "$name: DNS for a name the policy does not allow" dns $WORLD_CANARY example.com
	blocked "$pid" "$name: TCP to the canary :80" tcp $WORLD_CANARY 80
	blocked "$pid" "$name: TCP to the canary :443" tcp $WORLD_CANARY 443
	blocked "$pid" "$name: UDP to the canary" udp $WORLD_CANARY 9999
	blocked "$pid" "$name: ICMP echo to the canary" icmp $WORLD_CANARY
	blocked "$pid" "$name: IPv6 TCP to the canary" tcp6 $WORLD_CANARY6 80
	blocked "$pid" "$name: the old gateway, on the container's own link" tcp 198.51.100.1 2222
	blocked "$pid" "$name: the host end's other ports" tcp "$gw" 2222
	if [ "$name" = unshare ]; then
		# A peer on the container's own link connects in: the agent's
		# answer must not get out (that would be a way to stream data
		# to anyone who can reach the container).
		nsenter -t "$pid" -n timeout 8 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.2", 7777)); s.listen(1); s.settimeout(6)
c, _ = s.accept(); c.sendall(b"exfiltrated"); c.close()' >/dev/null 2>&1 &
		local lpid=$!
		sleep 0.5
		out=$(ip netns exec "$WORLD_HOST" timeout 8 python3 -c '
import socket
try:
    s = socket.create_connection(("198.51.100.2", 7777), timeout=3)
    s.settimeout(3)
    print("got", s.recv(100))
except Exception as e:
    print("nothing:", type(e).__name__)' 2>&1)
		kill "$lpid" 2>/dev/null
		wait "$lpid" 2>/dev/null
		check "$name: a connection opened from outside gets no answer out ($out)" \
			sh -c "echo '$out' | grep -q '^nothing'"
	fi
	check "$name: the canary saw nothing" [ "$(world_canary_count)" = 0 ]
	out=$(ip netns exec "$WORLD_HOST" nft list tables | tr '\n' ' ')
	check "$name: the host side has its table ($out)" sh -c "echo '$out' | grep -q 'inet sluice-sl'"

	kill -TERM "$spid"
	wait "$spid"; rc=$?
	check "$name: SIGTERM detaches, sluice exits $rc (want 0)" [ "$rc" = 0 ]
	out=$(state "$pid")
	if [ "$out" = "$before" ]; then
		ok "$name: the namespace is as it was (links, addresses, routes, nft tables)"
	else
		notok "$name: the namespace changed: $(diff <(echo "$before") <(echo "$out") | tr '\n' ' ')"
	fi
	out=$(host_state)
	if [ "$out" = "$host0" ]; then
		ok "$name: nothing left on the host side"
	else
		notok "$name: left on the host: $(diff <(echo "$host0") <(echo "$out") | tr '\n' ' ')"
	fi
	out=$(inside "$pid" nft list tables)
	check "$name: no nft table left in the namespace ($out)" [ -z "$out" ]
	grep -q '"decision":"deny"' "$T/audit-$name.log"
	check "$name: the audit log recorded the denials" [ $? = 0 ]
}

attach_one unshare "$u_pid" --pid "$u_pid"
out=$(probe "$u_pid" tcp 198.51.100.1 2222 2>&1)
check "after: the unshare container's own route works again ($out)" \
	sh -c "echo '$out' | grep -q 'old-route'"
attach_one bwrap "$b_pid" --netns "/proc/$b_pid/ns/net"

# The container's process exits while attached: sluice detaches by itself.
world_host_bg unshare --net sh -c "ip link set lo up; exec $NOADMIN sleep 300" >/dev/null 2>&1
e_pid=$!
extra_pids+=("$e_pid")
wait_netns "$e_pid" || notok "a third container did not start"
rm -f "$T/attach-exit.err"
world_host_bg "$SLUICE" attach --pid "$e_pid" --policy "$T/policy.yaml" 2>"$T/attach-exit.err"
spid=$!
extra_pids+=("$spid")
for i in $(seq 100); do grep -q 'attached through' "$T/attach-exit.err" && break; sleep 0.05; done
kill -TERM "$e_pid"
for i in $(seq 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$spid" 2>/dev/null; then
	notok "sluice did not detach when the --pid process exited"
	kill -TERM "$spid"
fi
wait "$spid"; rc=$?
check "the --pid process exits: sluice detaches and exits $rc (want 0)" [ "$rc" = 0 ]
check "... and nothing is left on the host" [ "$(host_state)" = "$host0" ]

check "the canary saw nothing at all" [ "$(world_canary_count)" = 0 ]
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
