#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The control socket (docs/control.md): `sluice ps` lists a running
# `sluice run` and a standalone `sluice gateway` with counts that match
# their audit logs; `sluice reload` reloads as SIGHUP does and reports a
# broken policy with file:line while the old one stays; a peer that is not
# root is refused by its credentials even when the file's modes are
# loosened; the sandbox cannot see the socket; a SIGKILLed supervisor's
# socket does not break `ps`; every way out removes the socket.
#
# Usage: test-control.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-control.sh ip nft nsenter python3 curl dnsmasq openssl setpriv

. "$here/world.sh"
PY=/usr/bin/python3
CTL=/run/sluice/ctl
bg_pids=()
cleanup() {
	local p
	# Modes loosened by the peer-credential check are put back.
	[ -d $CTL ] && chmod 0700 $CTL
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM
world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR
mkdir -m 1777 "$T/w"
world_services ok.test=$N no.test=$N later.test=$N ||
	{ echo "not ok - the world's services did not start"; exit 1; }

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: ok.test
P
# Our lines of `sluice ps` (other sluices may run on this machine).
ps_line() { "$SLUICE" ps | awk -v p="$1" '$2 == p'; }
# Requests audited (not DNS, not blocked packets), by decision.
audited() { grep -E '"event":"(http|connect)"' "$1" | grep -c "\"decision\":\"$2\""; }

# ---- a standalone gateway ----
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$N:53" --audit "$T/gw-audit.log" --sandbox ctl-$$ ||
	exit 1
gw=$world_gw_pid
sock=$CTL/$gw.sock
check "the gateway's socket is $CTL/PID.sock, a socket" "1" "$([ -S "$sock" ] && echo 1)"
check "... the directory root's, mode 0700" "root 700" "$(stat -c '%U %a' $CTL)"
check "... the socket root's, mode 0600" "root 600" "$(stat -c '%U %a' "$sock")"
check "... a path, not an abstract socket" "0" "$(grep -c '@.*sluice' /proc/net/unix)"
gcurl() { world_host curl -s -m 10 -x http://203.0.113.1:3128 -o /dev/null -w '%{http_code}' "$@"; }
check "an allowed request" "200" "$(gcurl http://ok.test/a)"
check "another" "200" "$(gcurl http://ok.test/b)"
check "a denied one" "403" "$(gcurl http://no.test/c)"
wait_grep "$T/gw-audit.log" '"host":"no.test"'
line=$(ps_line "$gw")
check_has "sluice ps: the gateway's line: name, pid, policy" "ctl-$$ $gw $T/policy.yaml " "$line"
read -r _ _ _ _ allowed denied pending <<<"$line"
check "... its allowed count is the audit log's" "$(audited "$T/gw-audit.log" allow)" "$allowed"
check "... its denied count is the audit log's" "$(audited "$T/gw-audit.log" deny)" "$denied"
check "... 2 allowed, 1 denied" "2 1 0" "$allowed $denied $pending"
check_has "sluice ps has a header" "NAME PID POLICY UPTIME ALLOWED DENIED PENDING" "$("$SLUICE" ps | head -1)"

# ---- reload through the socket ----
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: ok.test
  - host: later.test
P
check "before the reload, later.test is denied" "403" "$(gcurl http://later.test/x)"
out=$("$SLUICE" reload "$gw" 2>&1)
check "sluice reload PID: exit 0" "0" "$?"
check_has "... says reloaded" "reloaded" "$out"
check "... and the new policy is in force" "200" "$(gcurl http://later.test/x)"
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: ok.test
  - host: later.test
    ports: [nope]
P
out=$("$SLUICE" reload "$gw" 2>&1)
check "a broken policy: sluice reload exits 1" "1" "$?"
check_has "... naming file:line" "$T/policy.yaml:5:" "$out"
check_has "... and saying the old one stays" "not reloaded; the running policy stays in force" "$out"
check "... which it does" "200" "$(gcurl http://later.test/y)"

# ---- names: unknown, ambiguous ----
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: ok.test
P
world_gateway_up "$T/gw2.log" 3130 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3130 --resolver "$N:53" --sandbox ctl-$$ 2>/dev/null || true
gw2=$world_gw_pid
out=$("$SLUICE" reload no-such-sandbox-$$ 2>&1)
check "reload of an unknown name: exit 1" "1" "$?"
check_has "... no such sandbox" "no such sandbox: 'no-such-sandbox-$$'" "$out"
if [ -S "$CTL/$gw2.sock" ]; then
	out=$("$SLUICE" reload "ctl-$$" 2>&1)
	check "reload of a name two gateways have: exit 1" "1" "$?"
	check_has "... ambiguous, listing the first" "pid $gw " "$out"
	check_has "... and the second" "pid $gw2 " "$out"
else
	notok "the second gateway did not start: $(cat "$T/gw2.log")"
fi
kill "$gw2"
wait "$gw2" 2>/dev/null
world_forget "$gw2"
for _ in $(seq 100); do [ -e "$CTL/$gw2.sock" ] || break; sleep 0.05; done
check "a gateway stopped by SIGTERM leaves no socket" "0" "$([ -e "$CTL/$gw2.sock" ] && echo 1 || echo 0)"

# ---- a peer that is not root is refused by its credentials ----
# The modes alone would stop it; loosened, the peer check must.
chmod 0755 $CTL
chmod 0666 "$sock"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" - "$sock" <<'PYC' 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
# Refused before anything it sends is read: the refusal comes unasked.
# Were it not refused, it asks, and what it is told shows.
b = b""
try:
    b = s.recv(4096)
except socket.timeout:
    s.sendall(b"info\n")
while True:
    d = s.recv(4096)
    if not d:
        break
    b += d
print(b.decode(errors="replace").strip())
PYC
)
chmod 0700 $CTL
chmod 0600 "$sock"
check "uid 65534 on a socket made 0666 is refused" \
	"error permission denied: the control socket is root's" "$out"
check_has "... and the gateway says so" "control socket: refused a client of uid 65534" \
	"$(cat "$T/gw.log")"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SLUICE" ps 2>&1)
check "sluice ps as not root: exit 4" "4" "$?"
check_has "... saying it needs root" "run it as root" "$out"

# ---- sluice run: ps, counts, the sandbox cannot reach the socket ----
cat >"$T/inside.sh" <<'SH'
w=$1
{
	[ -e /run/sluice/ctl ] && echo "ctl-dir-visible" || echo "ctl-dir-absent"
	echo "view: $(ls /run/sluice 2>&1 | tr '\n' ' ')"
	echo "unix $(grep -c 'sluice/ctl' /proc/net/unix)"
	python3 - <<'PYC'
import glob, socket
paths = glob.glob("/run/sluice/ctl/*") + ["/run/sluice/ctl/%d.sock" % p for p in range(1, 4)]
reached = 0
for p in paths:
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(p); reached += 1
    except OSError:
        pass
for name in (b"\0sluice", b"\0/run/sluice/ctl"):
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(name); reached += 1
    except OSError:
        pass
print("reached", reached)
PYC
} >"$w/see"
curl -s -m 5 -o /dev/null http://ok.test/r1
curl -s -m 5 -o /dev/null http://ok.test/r2
curl -s -m 5 -o /dev/null http://ok.test/r3
curl -s -m 5 -o /dev/null http://no.test/r4
touch "$w/ready"
for i in $(seq 300); do [ -e "$w/end" ] && break; sleep 0.1; done
SH
chmod 644 "$T/inside.sh"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" --audit "$T/run-audit.log" \
	-- sh "$T/inside.sh" "$T/w" >"$T/run.out" 2>"$T/run.err"
run_pid=$!
bg_pids+=("$run_pid")
wait_for_file "$T/w/ready" || wait_for_file "$T/w/ready" || notok "the sandbox's command did not get ready"
wait_grep "$T/run-audit.log" '"path":"/r4"'
line=$(ps_line "$run_pid")
check_has "sluice ps lists the run by its supervisor's pid, with its policy" " $run_pid $T/policy.yaml " "$line"
read -r run_name _ _ _ allowed denied _ <<<"$line"
check "... allowed as its audit log says (3)" "$(audited "$T/run-audit.log" allow) 3" "$allowed 3"
check "... denied as its audit log says (1)" "$(audited "$T/run-audit.log" deny) 1" "$denied 1"
check "... named for its sandbox (the veth's host end)" "1" \
	"$(ip -n "$WORLD_HOST" -o link show "$run_name" 2>/dev/null | grep -c .)"
see=$(cat "$T/w/see")
check_has "inside the sandbox, /run/sluice/ctl does not exist" "ctl-dir-absent" "$see"
check_lacks "... its /run/sluice is its own view (no ctl)" "ctl" "$(grep '^view:' <<<"$see")"
check_has "... no control socket is in its namespace's list of unix sockets" "unix 0" "$see"
check_has "... nor can any path or abstract name reach one" "reached 0" "$see"
rsock=$CTL/$run_pid.sock
check "the run's socket exists on the host" "1" "$([ -S "$rsock" ] && echo 1)"
out=$("$SLUICE" reload "$run_name" 2>&1)
check "sluice reload NAME of a run: exit 0" "0" "$?"
check_has "... and the supervisor says it reloaded" "reloaded" "$(cat "$T/run.err")"
printf 'version: 1\nallow:\n  - host: ok.test\n    methods: [FETCH]\n' >"$T/policy.yaml"
out=$("$SLUICE" reload "$run_pid" 2>&1)
check "a broken policy through a run's socket: exit 1" "1" "$?"
check_has "... the supervisor's loader's file:line comes back" "$T/policy.yaml:4:" "$out"
check_has "... the old one stays" "not reloaded; the running policy stays in force" "$out"
printf 'version: 1\nallow:\n  - host: ok.test\n' >"$T/policy.yaml"
touch "$T/w/end"
wait "$run_pid"
check "sluice run ends normally" "0" "$?"
check "... and its socket is gone" "0" "$([ -e "$rsock" ] && echo 1 || echo 0)"

# ---- sluice attach serves one too, and removes it when it detaches ----
world_host_bg unshare --net sh -c \
	"ip link set lo up; exec setpriv --bounding-set -net_admin,-sys_admin,-sys_module,-sys_ptrace --inh-caps -net_admin,-sys_admin,-sys_module,-sys_ptrace sleep 60" \
	>/dev/null 2>&1
u=$!
bg_pids+=("$u")
for _ in $(seq 100); do
	[ "$(readlink /proc/$u/ns/net)" != "$(readlink /proc/$$/ns/net)" ] &&
		[ "$(cat /proc/$u/comm 2>/dev/null)" = sleep ] && break
	sleep 0.05
done
world_host_bg "$SLUICE" attach --pid "$u" --policy "$T/policy.yaml" --resolver "$N:53" \
	2>"$T/attach.err"
a=$!
bg_pids+=("$a")
for _ in $(seq 200); do
	grep -q 'attached through' "$T/attach.err" 2>/dev/null && break
	kill -0 "$a" 2>/dev/null || break
	sleep 0.05
done
check_has "sluice ps lists an attach by its pid, with its policy" " $a $T/policy.yaml " \
	"$(ps_line "$a")"
kill -TERM "$a"
wait "$a" 2>/dev/null
check "... and its socket is gone once it detached" "0" "$([ -e "$CTL/$a.sock" ] && echo 1 || echo 0)"
kill "$u" 2>/dev/null

# ---- a SIGKILLed supervisor's socket does not break ps ----
rm -f "$T/w/ready" "$T/w/end"
world_host_bg "$SLUICE" run --ro "$T" --rw "$T/w" --policy "$T/policy.yaml" \
	-- sh -c "touch $T/w/ready; exec sleep 30" >"$T/run2.out" 2>&1
k=$!
bg_pids+=("$k")
wait_for_file "$T/w/ready" || wait_for_file "$T/w/ready" || notok "the second run did not start: $(cat "$T/run2.out")"
for _ in $(seq 100); do [ -S "$CTL/$k.sock" ] && break; sleep 0.05; done
kill -9 "$k"
wait "$k" 2>/dev/null
check "a SIGKILLed supervisor leaves its socket behind" "1" "$([ -e "$CTL/$k.sock" ] && echo 1)"
out=$("$SLUICE" ps 2>&1)
check "sluice ps still works: exit 0" "0" "$?"
check_lacks "... does not list it" " $k " "$(grep -v removed <<<"$out")"
check_has "... says it removed the stale socket" "removed $CTL/$k.sock" "$out"
check "... which is gone" "0" "$([ -e "$CTL/$k.sock" ] && echo 1 || echo 0)"
# The next run tidies what the SIGKILLed one could not (its cgroup), as
# after any SIGKILL: nothing of ours is left for other tests to find.
world_host "$SLUICE" run -- true >/dev/null 2>&1
check_has "the gateway still answers ps after all that" "ctl-$$ $gw " "$(ps_line "$gw")"

# ---- a gateway cannot pass for another sandbox's supervisor ----
# The socket's name is the pid root gave it; what `info` claims is the
# gateway's word. One that claims the honest gateway's pid (and name) must
# not make `sluice reload PID` ambiguous, nor be listed under that pid.
"$PY" - "$CTL" "$T/liar.ready" "ctl-$$ $gw $gw $T/policy.yaml 0 0 0 0" <<'PYC' &
import os, socket, sys, time
path = "%s/%d.sock" % (sys.argv[1], os.getpid())
os.umask(0o177)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(16)
open(sys.argv[2], "w").close()
s.settimeout(1)
end = time.time() + 60
while time.time() < end:
    try:
        c, _ = s.accept()
    except OSError:
        continue
    try:
        c.settimeout(2)
        # The whole line: the CLI sends it and its "\n" apart, and a
        # close with the "\n" unread resets the CLI's read of the answer.
        q = b""
        while b"\n" not in q and len(q) < 512:
            d = c.recv(512)
            if not d:
                break
            q += d
        q = q.decode().strip()
        c.sendall(("* %s\nok\n" % sys.argv[3]).encode() if q == "info" else b"ok reloaded\n")
    except OSError:
        pass
    c.close()
os.unlink(path)
PYC
liar=$!
bg_pids+=("$liar")
wait_for_file "$T/liar.ready" || notok "the lying socket did not start"
out=$("$SLUICE" reload "$gw" 2>&1)
check "sluice reload PID with another socket claiming that pid: exit 0" "0" "$?"
check_has "... the honest gateway reloaded" "ctl-$$ (pid $gw): reloaded" "$out"
check_has "... the claim refused, naming its socket" "$CTL/$liar.sock: " "$out"
check "sluice ps lists the pid once" "1" "$("$SLUICE" ps 2>/dev/null | awk -v p="$gw" '$2 == p' | grep -c .)"
kill "$liar" 2>/dev/null
wait "$liar" 2>/dev/null
rm -f "$CTL/$liar.sock"

# ---- a gateway that answers a byte at a time holds no command for long ----
# A taken-over gateway serves its own socket: it must not wedge `sluice ps`
# (nor approve, which asks every socket) for every other sandbox. This one
# sends one byte every half second for a minute; each command gives a
# socket 5 s in all, not 5 s per byte.
"$PY" - "$CTL" "$T/trickle.ready" <<'PYC' &
import os, socket, sys, threading, time
path = "%s/%d.sock" % (sys.argv[1], os.getpid())
s = socket.socket(socket.AF_UNIX)
os.umask(0o177)
s.bind(path)
s.listen(16)
open(sys.argv[2], "w").close()
def trickle(c):
    try:
        for _ in range(120):
            c.send(b"*")
            time.sleep(0.5)
    except OSError:
        pass
s.settimeout(60)
end = time.time() + 60
try:
    while time.time() < end:
        c, _ = s.accept()
        threading.Thread(target=trickle, args=(c,), daemon=True).start()
except OSError:
    pass
os.unlink(path)
PYC
trickler=$!
bg_pids+=("$trickler")
wait_for_file "$T/trickle.ready" || notok "the trickling socket did not start"
out=$(timeout 30 "$SLUICE" ps 2>&1)
check "sluice ps with a socket that trickles its answer: done, exit 0" "0" "$?"
check_has "... still lists the honest gateway" "ctl-$$ $gw " "$out"
check_has "... and names the one that did not answer in time" "$CTL/$trickler.sock: " "$out"
kill "$trickler" 2>/dev/null
wait "$trickler" 2>/dev/null
rm -f "$CTL/$trickler.sock"

kill "$gw"
wait "$gw" 2>/dev/null
world_forget "$gw"
for _ in $(seq 100); do [ -e "$sock" ] || break; sleep 0.05; done
check "the gateway stopped: its socket is gone (removed by its reader)" "0" \
	"$([ -e "$sock" ] && echo 1 || echo 0)"
finish
