#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice run` against real packets: every attempt to get out of the
# sandbox is made for real from inside it, and each asserts that the canary
# in the test world's "internet" saw nothing. sluice runs only inside the
# world's host namespace (world.sh), never in the machine's own.
#
# Usage: test-run.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-run.sh needs root (network namespaces, cgroups, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter python3 setpriv cc openssl; do
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
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	local d=$1; shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}

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
# The sandbox sees $T read-only (--ro) and writes only into $T/w (--rw);
# policies stay where it cannot change them.
mkdir -m 1777 "$T/w"

cat >"$T/probe.py" <<'PY'
# probe.py KIND ARGS: try to get out. Exit 0: it got out (bad), 1: blocked,
# 2: the probe itself is broken. Prints what happened.
import errno, os, socket, struct, sys, time

def out(ok, what):
    print(("REACHED " if ok else "blocked ") + what)
    sys.exit(0 if ok else 1)

def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else repr(e)

kind, args = sys.argv[1], sys.argv[2:]
try:
    if kind in ("tcp", "tcp6"):
        fam = socket.AF_INET6 if kind == "tcp6" else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect((args[0], int(args[1])))
        # Every TCP connection that ignores the proxy is captured by the
        # gateway, which decides it and, denied, answers 403 (or closes).
        # Only a real server's behaviour (data, or a silent close) counts
        # as reaching the target; the canary's counter judges as well.
        s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % args[0]).encode())
        data = s.recv(4096)
        if data.startswith(b"HTTP/1.1 403") and b"sluice:" in data:
            out(False, "tcp %s:%s captured and refused by the gateway" % tuple(args))
        out(True, "tcp %s:%s connected, answered %r" % (args[0], args[1], data[:40]))
    elif kind == "dns":  # a DNS query over UDP; reached only if answered
        q = struct.pack(">HHHHHH", 0x5151, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00\x00\x01\x00\x01"
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.5)
        s.connect((args[0], 53))
        s.send(q)
        a = s.recv(512)
        # Port 53 anywhere goes to the gateway's DNS, which refuses what
        # the policy does not name (NXDOMAIN or REFUSED) and forwards
        # nothing; any other answer would have come from elsewhere.
        if len(a) >= 4 and a[:2] == q[:2] and (a[3] & 15) in (3, 5):
            out(False, "dns refused by the gateway (rcode %d)" % (a[3] & 15))
        out(True, "dns answer from " + args[0])
    elif kind == "udp":  # fire and forget: the canary's counter judges
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(3):
            s.sendto(b"x" * 32, (args[0], int(args[1])))
            time.sleep(0.1)
        out(False, "udp sent to %s:%s (the canary decides)" % tuple(args))
    elif kind == "icmp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
        s.settimeout(1.5)
        s.sendto(struct.pack(">BBHHH", 8, 0, 0, 0, 1) + b"sluice", (args[0], 0))
        s.recv(512)
        out(True, "icmp echo answered by " + args[0])
    elif kind in ("raw", "packet"):
        if kind == "raw":
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        else:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        out(True, kind + " socket created")
    elif kind == "listen":  # listen on ADDR PORT for a while, write ADDR to FILE
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((args[0], int(args[1]))); s.listen(4)
        open(args[2], "w").write(args[0]); s.settimeout(float(args[3])); s.accept()
        out(True, "someone connected to the listener")
    else:
        print("unknown probe " + kind); sys.exit(2)
except (OSError, socket.timeout) as e:
    # raw: no CAP_NET_RAW (EPERM); packet: a family the filter refuses
    # before the kernel asks for it (EAFNOSUPPORT, netns-helper/seccomp.c).
    want = errno.EPERM if kind == "raw" else errno.EAFNOSUPPORT
    if kind in ("raw", "packet") and getattr(e, "errno", None) != want:
        out(True, "%s socket failed with %s, not %s" % (kind, err(e), errno.errorcode[want]))
    out(False, "%s %s: %s" % (kind, " ".join(args), err(e)))
PY
chmod 644 "$T/probe.py"

run() { world_host "$SLUICE" run --ro "$T" "$@"; }
runw() { world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" "$@"; }
probe() { run -- "$PY" "$T/probe.py" "$@"; }

# Every way out must be blocked and the canary must have seen nothing.
blocked() { # blocked DESCRIPTION PROBE-ARGS...
	local d=$1 out rc; shift
	out=$(probe "$@" 2>&1); rc=$?
	local hits; hits=$(world_canary_count)
	if [ "$rc" = 1 ] && [ "${hits:-x}" = 0 ]; then
		ok "$d ($out)"
	else
		notok "$d: exit $rc, canary saw ${hits:-?} packets: $out"
	fi
}

host_links0=$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')
# A sluice-PID group whose sluice is gone was left behind; one whose sluice
# still runs (another test's, concurrently) is in use, not a leftover.
cgroup_leftovers() {
	local d pid
	for d in $(find /sys/fs/cgroup -maxdepth 6 -type d -name 'sluice-*' 2>/dev/null); do
		pid=${d##*/sluice-}
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sluice ] && continue
		echo "$d"
	done
}
nothing_left() { # nothing_left WHEN
	local links addrs routes tables cgs
	links=$(ip -n "$WORLD_HOST" -o link | awk -F': ' '{print $2}' | sort | tr '\n' ' ')
	addrs=$(ip -n "$WORLD_HOST" -o addr | grep -c '10\.23[12]\.')
	routes=$(ip -n "$WORLD_HOST" route | grep -c '10\.23[12]\.')
	tables=$(ip netns exec "$WORLD_HOST" nft list tables | grep -c .)
	cgs=$(cgroup_leftovers | grep -c .)
	if [ "$links" = "$host_links0" ] && [ "$addrs" = 0 ] && [ "$routes" = 0 ] &&
		[ "$tables" = 0 ] && [ "$cgs" = 0 ]; then
		ok "nothing left behind $1"
	else
		notok "left behind $1: links '$links' (was '$host_links0'), $addrs addresses, $routes routes, $tables nft tables, $cgs cgroups"
	fi
}

# ---- the command line ----
printf 'version: 1\nallow:\n  - host: [\n' >"$T/bad.yaml"
out=$(run --policy "$T/bad.yaml" -- true 2>&1); rc=$?
check "an invalid --policy is refused with file:line:col (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q '^$T/bad.yaml:[0-9]*:[0-9]*: '"
# Every failure of sluice's own is 125, whatever it was (env(1), container
# runtimes): never a status the command could have meant.
fails125() { # fails125 NAME NEEDLE CMD...: exit 125, and stderr names NEEDLE
	local name=$1 needle=$2 out rc
	shift 2
	out=$("$@" 2>&1); rc=$?
	if [ "$rc" = 125 ] && grep -qF -- "$needle" <<<"$out"; then
		ok "$name: 125, saying why"
	else
		notok "$name: exit $rc (want 125 naming '$needle'): $out"
	fi
}
fails125 "an unknown flag" no-such-flag run --no-such-flag -- true
fails125 "a --user that does not exist" sluice-no-such-user run --user sluice-no-such-user -- true
fails125 "a --policy that does not exist" no-such-policy.yaml run --policy "$T/no-such-policy.yaml" -- true
fails125 "not root" "must run as root" \
	world_host setpriv --reuid=65534 --regid=65534 --clear-groups "$SLUICE" run -- true
# dev-agent.yaml reads its key as a systemd credential.
mkdir -m 700 "$T/creds"
printf 'sk-ant-test-%s\n' "$(openssl rand -hex 16)" >"$T/creds/anthropic"
chmod 600 "$T/creds/anthropic"
# (A copy: sluice trusts a policy only where nobody but root can change it,
# and a checkout may belong to another user.)
cp "$here/../../examples/dev-agent.yaml" "$T/dev-agent.yaml"
chmod 644 "$T/dev-agent.yaml"
out=$(CREDENTIALS_DIRECTORY=$T/creds run --policy "$T/dev-agent.yaml" -- true 2>&1); rc=$?
check "a valid --policy is accepted (exit $rc $out)" [ $rc = 0 ]
out=$(run --policy "$T/dev-agent.yaml" -- true 2>&1); rc=$?
check "a secret that cannot be read stops it before the command runs (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q 'CREDENTIALS_DIRECTORY'"
out=$(run --upstream-ca /etc/hostname -- true 2>&1); rc=$?
check "an --upstream-ca that holds no certificate is refused, not ignored (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q -- '--upstream-ca /etc/hostname'"
# A FIFO there would hold the gateway's setup until its bound (30 s): refused
# at once, before anything is made.
mkfifo "$T/ca-fifo"
start=$(date +%s)
out=$(run --upstream-ca "$T/ca-fifo" -- true 2>&1); rc=$?
check "an --upstream-ca that is not a regular file is refused at once (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && [ $(($(date +%s) - start)) -lt 10 ] &&
		echo '$out' | grep -q -- '--upstream-ca $T/ca-fifo: not a regular file'"
# The sandbox's CA: with a policy file, its certificate ends the bundle the
# trust variables name, over the system's path too; without one (nothing
# can be allowed, even after a reload) there is neither, and the system's
# roots are what the sandbox sees.
ca_check='echo "[$SSL_CERT_FILE] [$NODE_EXTRA_CA_CERTS]";
	cmp -s /etc/ssl/certs/ca-certificates.crt "${SSL_CERT_FILE:-/nonexistent}" && echo over-system
	openssl crl2pkcs7 -nocrl -certfile /etc/ssl/certs/ca-certificates.crt 2>/dev/null |
		openssl pkcs7 -print_certs -noout 2>/dev/null | grep -c "^subject=.*sluice sandbox CA"'
out=$(CREDENTIALS_DIRECTORY=$T/creds run --policy "$T/dev-agent.yaml" -- sh -c "$ca_check" 2>&1)
check "with --policy the trust variables name the sandbox's bundle ($out)" \
	grep -q '^\[/run/sluice/ca-[^]]*/ca-bundle.crt\] \[/run/sluice/ca-' <<<"$out"
check "... which is also at the system's path" grep -qx over-system <<<"$out"
check "... and holds the sandbox's CA, once" [ "$(tail -n 1 <<<"$out")" = 1 ]
out=$(run -- sh -c "$ca_check" 2>&1)
check "without --policy no trust variable is set, and the system's roots hold no CA of ours ($out)" \
	[ "$(tr '\n' ' ' <<<"$out")" = "[] [] 0 " ]
run -- cat /etc/ssl/certs/ca-certificates.crt >"$T/inside-roots.crt" 2>&1
check "... and the sandbox's /etc/ssl/certs/ca-certificates.crt is the host's" \
	cmp -s /etc/ssl/certs/ca-certificates.crt "$T/inside-roots.crt"
# OpenSSL is loaded only where a CA can be needed (cli/openssl-shim.h):
# not by a run without --policy, by one with a policy file (and its
# gateway, forked from it).
printf 'version: 1\nallow:\n  - host: api.run.test\n    methods: [GET]\n' >"$T/inspect.yaml"
chmod 644 "$T/inspect.yaml"
ssl_maps() { # ssl_maps [RUN OPTIONS...]: libssl mappings of the supervisor, its gateway
	local pid n gw
	rm -f "$T/w/up" "$T/w/go"
	runw "$@" -- sh -c "touch $T/w/up; i=0
		while [ ! -e $T/w/go ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done"
	pid=$!
	for _ in $(seq 200); do [ -e "$T/w/up" ] && break; sleep 0.05; done
	n=$(grep -c 'libssl\.so' "/proc/$pid/maps" 2>/dev/null)
	gw=$(pgrep -P "$pid" -x sluice-gateway | head -n 1)
	echo "${n:-none} $([ -n "$gw" ] && grep -c 'libssl\.so' "/proc/$gw/maps")"
	touch "$T/w/go"
	wait "$pid"
}
out=$(ssl_maps)
check "a run without --policy does not load OpenSSL, nor does its gateway ($out)" [ "$out" = "0 0" ]
out=$(ssl_maps --policy "$T/inspect.yaml")
check "a run with a policy file loads it, and its gateway has it ($out)" \
	sh -c "set -- $out; [ \"\$1\" -gt 0 ] && [ \"\$2\" -gt 0 ]"
# A gateway taken over (lib/forge-ca.c, preloaded) hands the supervisor
# something else as the CA's certificate: a second certificate after it, a
# line before it, a length beyond the message. The supervisor takes none
# of it into the bundle the sandbox trusts: the run ends (125) before the
# command runs, saying why, and leaves no bundle behind. The shim's own
# control ("keep") runs, so the forgeries were made on the real message.
cc -shared -fPIC -O2 -o "$T/forge-ca.so" "$here/lib/forge-ca.c" -ldl || echo "not ok - building forge-ca.so"
bundles() { find /run/sluice -maxdepth 1 -name 'ca-*' 2>/dev/null | grep -c .; }
forged() { # forged MODE: "rc ran seen bundles-left"; what run said in $T/forged.out
	local b0 rc
	rm -f "$T/w/ran" "$T/forge-seen"
	b0=$(bundles)
	world_host env LD_PRELOAD="$T/forge-ca.so" SLT_FORGE="$1" SLT_FORGE_SEEN="$T/forge-seen" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/inspect.yaml" -- touch "$T/w/ran" \
		>"$T/forged.out" 2>&1
	rc=$?
	echo "$rc $([ -e "$T/w/ran" ] && echo ran || echo not-run) $([ -e "$T/forge-seen" ] && echo seen) $(($(bundles) - b0))"
}
got=$(forged keep)
check "control: the preloaded gateway's unchanged certificate is taken ($got: $(cat "$T/forged.out"))" \
	[ "$got" = "0 ran seen 0" ]
for how in two text long; do
	got=$(forged $how)
	check "a gateway that sends a forged CA certificate ($how) is refused before the command runs ($got: $(cat "$T/forged.out"))" \
		sh -c "[ '$got' = '125 not-run seen 0' ] &&
			grep -q 'what it sent as the CA certificate is not one' '$T/forged.out'"
done
# The gateway answers on the proxy port: without --policy it denies, says
# why, and audits it.
out=$(run --audit "$T/run-audit.log" -- sh -c \
	'curl -s -m 5 -o /dev/null -w "%{http_code}" http://denied.example/x' 2>&1); rc=$?
check "without --policy the gateway answers 403 through the proxy variables ($out)" \
	[ "$out" = 403 ]
check "... and --audit recorded the denial" \
	grep -q '"host":"denied.example","port":80,"path":"/x","status":403,"decision":"deny"' \
	"$T/run-audit.log"
nothing_left "after refused command lines"

# ---- who the command is ----
out=$(run -- sh -c 'id -u; id -g; id -G' 2>&1)
me=$(head -n 1 <<<"$out")
check "runs as a uid of its own, gid the same, no supplementary groups ($(echo $out))" \
	sh -c "[ '$me' -ge $((0x7F000000)) ] && [ '$out' = '$(printf '%s\n%s\n%s' "$me" "$me" "$me")' ]"
out=$(run --user 12345 -- sh -c 'id -u; id -G' 2>&1)
check "--user 12345 ($(echo $out))" [ "$out" = "$(printf '12345\n12345')" ]
check "--user root is refused" sh -c "! world_host '$SLUICE' run --user root -- true 2>/dev/null"
status=$(run -- cat /proc/self/status 2>&1)
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
	v=$(echo "$status" | awk -v f="$f:" '$1 == f { print $2 }')
	check "$f is $v" [ "$v" = 0000000000000000 ]
done
check "NoNewPrivs is set" sh -c "echo '$status' | grep -qx 'NoNewPrivs:[[:space:]]*1'"
cp /usr/bin/id "$T/suid-id" && chown root:root "$T/suid-id" && chmod 4755 "$T/suid-id"
out=$(run --user 65534 -- "$T/suid-id" -u 2>&1)
check "a setuid-root binary does not gain root (euid $out)" [ "$out" = 65534 ]
out=$(run -- sh -c 'echo "$HTTP_PROXY $https_proxy $NO_PROXY"' 2>&1)
check "proxy variables name the gateway ($out)" sh -c "echo '$out' | grep -Eq '^http://10\.231\.[0-9.]+:3128 http://10\.231\.[0-9.]+:3128 localhost'"
resolv0=$(sha256sum </etc/resolv.conf 2>/dev/null)
out=$(run -- cat /etc/resolv.conf 2>&1)
check "resolv.conf in the sandbox names the gateway" sh -c "echo '$out' | grep -Eq '^nameserver 10\.231\.'"
check "the host's resolv.conf is untouched" [ "$(sha256sum </etc/resolv.conf 2>/dev/null)" = "$resolv0" ]
check "IPv6 is disabled in the sandbox" [ "$(run -- cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>&1)" = 1 ]
out=$(run -- ls /proc/self/fd 2>&1 | tr '\n' ' ')
check "only fds 0-2 (and ls's own) are open ($out)" [ "$out" = "0 1 2 3 " ]

# ---- ways out ----
blocked "TCP to the canary :80" tcp $WORLD_CANARY 80
blocked "TCP to the metadata address" tcp 169.254.169.254 80
out=$(run -- curl -s -m 5 -o /dev/null -w '%{http_code}' http://169.254.169.254/latest/meta-data/)
check "the metadata address through the proxy: 403 ($out)" [ "$out" = 403 ]
blocked "TCP to the canary :443" tcp $WORLD_CANARY 443
blocked "TCP to another internet address" tcp $WORLD_NET_ADDR 22
blocked "DNS to a resolver other than the gateway" dns $WORLD_CANARY
blocked "DNS to the internet's other address" dns $WORLD_NET_ADDR
blocked "UDP to the canary" udp $WORLD_CANARY 9999
blocked "ICMP echo to the canary" icmp $WORLD_CANARY
blocked "IPv6 TCP to the canary" tcp6 $WORLD_CANARY6 80
blocked "raw socket (EPERM)" raw
blocked "packet socket (EAFNOSUPPORT: not a family the sandbox has)" packet
if command -v ping >/dev/null; then
	out=$(run -- ping -c1 -W1 $WORLD_CANARY 2>&1)
	rc=$?
	check "ping fails (exit $rc) and the canary saw nothing" [ "$rc" != 0 ] && [ "$(world_canary_count)" = 0 ]
fi

# The host's own services: on the host end's address and on its others.
# (3128 only on the other address: on the host end, sluice's own gateway
# listens there.)
world_bg "$WORLD_HOST" "$PY" -c '
import socket, select, sys
ls = []
for a, p in (("0.0.0.0", 2222), (sys.argv[1], 3128)):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, p)); s.listen(8); ls.append(s)
for _ in range(200):
    r, _, _ = select.select(ls, [], [], 30)
    for s in r: s.accept()[0].close()' "$WORLD_HOST_ADDR"
for i in $(seq 50); do
	ip netns exec "$WORLD_HOST" ss -Hltn 'sport = :2222' | grep -q . && break
	sleep 0.1
done
gw=$(run -- sh -c 'echo "${HTTP_PROXY#http://}"' | cut -d: -f1)
blocked "the host end's other port (sshd-like :2222)" tcp "$gw" 2222
blocked "the host's other address" tcp $WORLD_HOST_ADDR 2222
blocked "the host's other address, proxy port" tcp $WORLD_HOST_ADDR 3128
# (Its own gateway, read inside the same sandbox: a concurrent sluice may
# hold the /30 an earlier sandbox had.)
out=$(run -- sh -c "g=\${HTTP_PROXY#http://}; exec $PY $T/probe.py tcp \${g%:*} 3128" 2>&1)
check "the gateway port on the host end is reachable (the fence is not a blackout): $out" [ $? = 0 ]

# Another sandbox, at the same time.
rm -f "$T/w/a-addr"
runw -- sh -c "exec $PY $T/probe.py listen \$(ip -4 -o addr show eth0 | awk '{split(\$4, a, \"/\"); print a[1]}') 8080 $T/w/a-addr 8" >/dev/null 2>&1
extra_pids+=($!)
for i in $(seq 50); do [ -s "$T/w/a-addr" ] && break; sleep 0.1; done
a_addr=$(cat "$T/w/a-addr" 2>/dev/null)
b_addr=$(run -- sh -c 'ip -4 -o addr show eth0' | awk '{print $4}')
check "concurrent sandboxes get different addresses ($a_addr, $b_addr)" [ -n "$a_addr" ] && [ "${b_addr%/*}" != "$a_addr" ]
blocked "another sandbox" tcp "${a_addr:-10.231.0.2}" 8080
kill "${extra_pids[-1]}" 2>/dev/null; wait "${extra_pids[-1]}" 2>/dev/null

# ---- changing the fence from inside ----
for cmd in "ip route del default" "ip route add 198.51.100.0/24 dev eth0" \
	"ip link set eth0 down" "ip addr add 198.51.100.7/32 dev eth0" "nft flush ruleset" \
	"nft add table inet x"; do
	out=$(run -- $cmd 2>&1); rc=$?
	check "'$cmd' fails inside (exit $rc): $(echo $out | head -c 80)" [ $rc != 0 ]
done
check "the canary saw nothing at all" [ "$(world_canary_count)" = 0 ]
nothing_left "after the probes"

# ---- exit status and ways of ending ----
run -- sh -c 'exit 42'; check "exit status passes through (42)" [ $? = 42 ]
run -- sh -c 'kill -KILL $$'; check "killed by SIGKILL: 137" [ $? = 137 ]
out=$(run -- /nonexistent/cmd 2>&1); rc=$?
check "a command that does not exist: exit $rc (want 127) and says why ($out)" [ $rc = 127 ]
nothing_left "after a failed exec"

sig_test() { # sig_test SIGNAL EXPECTED-STATUS COMMAND...
	local sig=$1 want=$2 pid rc; shift 2
	rm -f "$T/w/ready"
	runw -- "$@"
	pid=$!
	for i in $(seq 100); do [ -e "$T/w/ready" ] && break; sleep 0.05; done
	kill -"$sig" "$pid"
	wait "$pid"; rc=$?
	check "SIG$sig reaches the command, sluice exits $rc (want $want)" [ "$rc" = "$want" ]
	nothing_left "after SIG$sig"
}
sig_test TERM 7 "$PY" -c "import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))
open('$T/w/ready', 'w').close(); time.sleep(20)"
# A background job of a script starts with SIGINT ignored, and sluice, like
# any transparent wrapper, passes dispositions on: take the default back.
sig_test INT 130 "$PY" -c "import signal, time
signal.signal(signal.SIGINT, signal.SIG_DFL)
open('$T/w/ready', 'w').close(); time.sleep(20)"

# A secret the policy reads from sluice's own environment never reaches the
# command's.
printf 'version: 1\nsecrets:\n  k: { env: SLUICE_TEST_KEY }\nallow:\n  - host: a.test\n    inject: { header: x-api-key, secret: k }\n' >"$T/envsecret.yaml"
chmod 644 "$T/envsecret.yaml"
out=$(SLUICE_TEST_KEY=sk-top-secret-value world_host "$SLUICE" run --ro "$T" --policy "$T/envsecret.yaml" \
	-- sh -c 'echo "${SLUICE_TEST_KEY:-unset}"; env | grep -c sk-top-secret-value' 2>&1)
check "an env secret of the policy is not in the command's environment ($(echo $out))" \
	[ "$(echo $out)" = "unset 0" ]

# SIGHUP is not forwarded: it reloads the policy, and the command carries on.
rm -f "$T/w/ready" "$T/w/go"
printf 'version: 1\nallow:\n  - host: first.test\n' >"$T/hup.yaml"
chmod 644 "$T/hup.yaml"
runw --policy "$T/hup.yaml" -- sh -c "touch $T/w/ready;
	for i in \$(seq 100); do [ -e $T/w/go ] && break; sleep 0.1; done;
	curl -s -m 5 http://named.test/" >"$T/hup.out" 2>"$T/hup.err"
pid=$!
for i in $(seq 100); do [ -e "$T/w/ready" ] && break; sleep 0.05; done
printf 'version: 1\nallow:\n  - host: first.test\ndeny:\n  - host: named.test\n' >"$T/hup.yaml"
kill -HUP "$pid"
# The command goes on once the reload is done.
for _ in $(seq 100); do grep -q "reloaded" "$T/hup.err" && break; sleep 0.05; done
touch "$T/w/go"
wait "$pid"; rc=$?
check "SIGHUP reloads the policy and the command carries on (exit $rc, $(cat "$T/hup.out"))" \
	sh -c "[ $rc = 0 ] && grep -q 'named.test:80 denied by deny\[1\]' '$T/hup.out'"
check "... and says so" grep -q "reloaded" "$T/hup.err"
nothing_left "after SIGHUP"

# A setup that fails halfway: the only /30 of a pool is taken.
rm -f "$T/w/ready"
runw --pool 10.232.0.0/30 -- sh -c "touch $T/w/ready; exec sleep 20"
holder=$!
extra_pids+=($holder)
for i in $(seq 100); do [ -e "$T/w/ready" ] && break; sleep 0.05; done
out=$(run --pool 10.232.0.0/30 -- true 2>&1); rc=$?
check "a second sandbox in a full pool fails (exit $rc: $out)" [ $rc = 125 ]
kill -TERM $holder; wait $holder
nothing_left "after a setup that failed"

# ---- cgroup limits ----
out=$(run --pids 16 -- "$PY" -c '
import os, time
n = 0
for i in range(100):          # bounded: at most 100 children
    try:
        pid = os.fork()
    except BlockingIOError:
        break
    if pid == 0:
        time.sleep(3); os._exit(0)
    n += 1
print(n)' 2>&1)
check "--pids 16 stops a fork bomb (got $out children)" [ -n "$out" ] && [ "$out" -lt 16 ] 2>/dev/null
out=$(run --memory 48M -- "$PY" -c '
chunks = []
for i in range(64):           # bounded: at most 512 MiB
    chunks.append(bytearray(8 << 20))
print("survived")' 2>&1); rc=$?
check "--memory 48M kills a memory hog (exit $rc)" [ $rc = 137 ]
# The quota, read outside (the sandbox's /sys is its own, without cgroups)
# while the command runs in the group.
rm -f "$T/w/ready"
runw --cpu 20 -- sh -c "cat /proc/self/cgroup >$T/w/cg; touch $T/w/ready; sleep 5"
cpid=$!
for i in $(seq 100); do [ -e "$T/w/ready" ] && break; sleep 0.05; done
p=$(grep -E '^[0-9]+:cpu(,|:)' "$T/w/cg" | cut -d: -f3)
out=$(cat "/sys/fs/cgroup/cpu$p/cpu.cfs_quota_us" 2>/dev/null ||
	cat "/sys/fs/cgroup$(grep ^0:: "$T/w/cg" | cut -d: -f3)/cpu.max" 2>/dev/null)
kill -TERM $cpid; wait $cpid
check "--cpu 20 sets the quota ($out)" sh -c "echo '$out' | grep -Eq '^20000( 100000)?$'"
nothing_left "after the cgroup tests"

# ---- sluice SIGKILLed: the command and all it forked die with it ----
# (Its pids are its pid namespace's; the test finds them by a marker.)
marker=slt-run-orphan-$$
marked() {
	local f n=0
	# argv[0] only: sluice's own command line names the marker too.
	for f in /proc/[0-9]*/cmdline; do
		[ "$( { tr '\0' '\n' <"$f"; } 2>/dev/null | head -n 1)" = "$marker" ] && n=$((n + 1))
	done
	echo $n
}
rm -f "$T/w/ready"
runw -- bash -c "(exec -a $marker sleep 30) & touch $T/w/ready; exec -a $marker sleep 30"
spid=$!
for i in $(seq 100); do [ -e "$T/w/ready" ] && break; sleep 0.05; done
check "the command and its background child run ($(marked) marked)" [ "$(marked)" = 2 ]
kill -KILL $spid; wait $spid 2>/dev/null
for i in $(seq 40); do [ "$(marked)" = 0 ] && break; sleep 0.05; done
check "after sluice is SIGKILLed nothing of the command lives" [ "$(marked)" = 0 ]
run -- true
for i in $(seq 40); do
	[ "$(ip -n "$WORLD_HOST" -o link | grep -c 'sl[0-9a-f]\{8\}')" = 0 ] && break
	sleep 0.05
done
nothing_left "after SIGKILL and the next run"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
