#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `sluice run` is an execution boundary, not only a network namespace: each
# way out that never touches the veth is tried for real from inside, and
# each check looks at evidence outside the sandbox (a process that must
# stay alive, a file that must stay unchanged, a socket listener that must
# see no connection, the operator's terminal that must receive nothing).
#
# Usage: test-sandbox.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-sandbox.sh ip nft nsenter python3 openssl curl ipcmk ipcs
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

extra_pids=()
outside=()
cleanup() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${outside[@]}"; do rm -rf "$p"; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
chmod 1777 "$T" # the sandbox writes its results here (--rw "$T")
# Policies live where only root can change them (sluice refuses others).
mkdir -m 755 "$T/etc"
world_services web.sandbox.test="$WORLD_NET_ADDR" || { echo "not ok - test services"; exit 1; }
chmod 644 "$T/cert.pem"

# sandbox ARGS... -- CMD...: sluice run in the world's host namespace.
sandbox() { world_host "$SLUICE" run --resolver "$WORLD_NET_ADDR:53" "$@"; }

# ---- the user ---------------------------------------------------------------

uid=$(SUDO_UID=1000 SUDO_GID=1000 sandbox --rw "$T" -- sh -c "id -u; id -u >$T/uid-file")
uid=$(tail -n 1 <<<"$uid")
if [ -n "$uid" ] && [ "$uid" -ge $((0x7F000000)) ] && [ "$uid" -lt $((0x7F010000)) ]; then
	ok "without --user the command runs as a uid of its own ($uid), not the sudo caller"
else
	notok "without --user: uid '$uid', want one in 0x7F000000.. (not SUDO_UID 1000)"
fi
check "a file the command leaves in a --rw directory belongs to its uid" "$uid" \
	"$(stat -c %u "$T/uid-file" 2>/dev/null)"
check "the uid has a name inside (whoami works)" 0 \
	"$(sandbox -- sh -c 'whoami >/dev/null 2>&1; echo $?' | tail -n 1)"
# Two at once never share one: each runs until it sees the other's uid.
sandbox --rw "$T" -- sh -c "id -u >$T/uid-a
	for i in \$(seq 300); do [ -s $T/uid-b ] && break; sleep 0.1; done" &
pa=$!
sandbox --rw "$T" -- sh -c "id -u >$T/uid-b
	for i in \$(seq 300); do [ -s $T/uid-a ] && break; sleep 0.1; done" &
pb=$!
wait $pa $pb
a=$(cat "$T/uid-a" 2>/dev/null)
b=$(cat "$T/uid-b" 2>/dev/null)
if [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]; then
	ok "two sandboxes at once get different uids ($a, $b)"
else
	notok "two sandboxes at once: uids '$a' and '$b'"
fi
check "--user still names one explicitly" 65534 "$(sandbox --user nobody -- id -u | tail -n 1)"
out=$(sandbox --user root -- true 2>&1)
check_has "--user root is refused" "root" "$out"

# ---- processes -----------------------------------------------------------------

# A process outside, of the sandbox's own kind (an unprivileged one), that
# the command must not see, signal or trace.
world_host_bg setpriv --reuid 65534 --regid 65534 --clear-groups sleep 300
victim=$!
extra_pids+=($victim)
disown $victim
# A listener in the host's namespace whose socket must not show in /proc.
world_host_bg "$PY" -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",4477)); s.listen(); time.sleep(300)'
extra_pids+=($!)
disown $!
for _ in $(seq 100); do world_host ss -Hltn 'sport = :4477' | grep -q . && break; sleep 0.1; done
cat >"$T/procs.py" <<'PY'
import ctypes, os, signal, sys
victim = int(sys.argv[1])
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
print("pids", len(pids), "max", max(pids))
try:
    os.kill(victim, signal.SIGKILL)
    print("kill: delivered")
except OSError as e:
    print("kill:", e.strerror)
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, victim, None, None)  # PTRACE_ATTACH
print("ptrace:", "attached" if r == 0 else os.strerror(ctypes.get_errno()))
tcp = open("/proc/1/net/tcp").read()
print("host socket in /proc/1/net/tcp:", ":117D" in tcp)  # 4477
print("init:", open("/proc/1/comm").read().strip())
PY
out=$(sandbox --ro "$T" -- "$PY" "$T/procs.py" "$victim" 2>&1)
echo "$out" | sed 's/^/# /'
npids=$(awk '/^pids/ { print $2 }' <<<"$out")
if [ -n "$npids" ] && [ "$npids" -le 4 ]; then
	ok "the command sees only its own processes in /proc ($npids)"
else
	notok "the command sees $npids processes"
fi
check_has "kill() of a process outside fails" "kill: No such process" "$out"
check_has "ptrace() of a process outside fails" "ptrace: No such process" "$out"
check_has "/proc/1/net/tcp does not show the host's sockets" "host socket in /proc/1/net/tcp: False" "$out"
if kill -0 "$victim" 2>/dev/null; then
	ok "the outside process is still alive"
else
	notok "the outside process was killed"
fi

# Nothing the command forked survives it, however it detaches.
marker="slt-orphan-$$"
marked() { # processes whose argv[0] is the marker (sluice's own argv names it too)
	local f n=0
	for f in /proc/[0-9]*/cmdline; do
		[ "$( { tr '\0' '\n' <"$f"; } 2>/dev/null | head -n 1)" = "$marker" ] && n=$((n + 1))
	done
	echo $n
}
# The command stays until the test has looked ($T/detached.seen): a
# fixed lifetime would race the sandbox's start and the look at /proc.
sandbox --rw "$T" -- bash -c "setsid bash -c 'exec -a $marker sleep 300' </dev/null >/dev/null 2>&1 &
	nohup bash -c 'exec -a $marker sleep 300' </dev/null >/dev/null 2>&1 &
	for i in \$(seq 300); do [ \$(pgrep -c -x sleep) = 2 ] && break; sleep 0.1; done
	touch $T/detached
	for i in \$(seq 300); do [ -e $T/detached.seen ] && break; sleep 0.1; done" &
spid=$!
for _ in $(seq 600); do [ -e "$T/detached" ] && break; sleep 0.05; done
check "the command's detached children run (seen from outside)" 2 "$(marked)"
touch "$T/detached.seen"
wait $spid
for _ in $(seq 40); do [ "$(marked)" = 0 ] && break; sleep 0.05; done
check "no process the command forked outlives it" 0 "$(marked)"

# The kernel's surface an agent has no use for: refused with EPERM by the
# command's seccomp filter, while threads and child processes (clone3
# answers ENOSYS, and libc falls back to clone) work as ever.
cat >"$T/kernel.py" <<'PY'
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *a):
    r = libc.syscall(nr, *a)
    print(name, "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
call("add_key", 248, b"user", b"slt", b"value", 5, -3)   # KEY_SPEC_USER_KEYRING
call("keyctl", 250, 0, -3, 0)                            # KEYCTL_GET_KEYRING_ID
call("io_uring_setup", 425, 8, ctypes.create_string_buffer(120))
call("userfaultfd", 323, 0)
call("bpf", 321, 0, None, 0)
call("unshare-user", 272, 0x10000000)                    # CLONE_NEWUSER
t = threading.Thread(target=lambda: print("thread ran")); t.start(); t.join()
print(subprocess.run(["sh", "-c", "echo child ran"], capture_output=True, text=True).stdout.strip())
PY
out=$(sandbox --ro "$T" -- "$PY" "$T/kernel.py" 2>&1)
for c in add_key keyctl io_uring_setup userfaultfd bpf unshare-user; do
	check_has "$c is refused inside" "$c Operation not permitted" "$out"
done
check_has "threads still start" "thread ran" "$out"
check_has "child processes still start" "child ran" "$out"

# System V IPC: the host's objects are out of sight, and what the command
# makes does not outlive it (a later sandbox may get its uid).
hostshm=$(ipcmk -M 4096 2>/dev/null | grep -o '[0-9]*$')
nshm=$(ipcs -m | grep -c '^0x')
out=$(sandbox -- sh -c 'ipcs -m | grep -c "^0x" ; ipcmk -M 4096 >/dev/null && echo made' 2>&1)
check "the host's shared memory is not visible inside, the command can make its own" \
	"0 made" "$(echo $out)"
check "what the command made is gone with it (the host has only its own)" "$nshm" \
	"$(ipcs -m | grep -c '^0x')"
[ -n "$hostshm" ] && ipcrm -m "$hostshm"

# ---- files -------------------------------------------------------------------

# A place the sandbox's user could write on the host (mode 0777), which it
# must not be able to write inside: the view is read-only. (Not under /tmp
# or /var/tmp: the sandbox would not even see it there.)
open_dir=$(mktemp -d /var/lib/slt-open.XXXXXX)
outside+=("$open_dir")
chmod 777 "$open_dir"
echo "original" >"$open_dir/file"
chmod 666 "$open_dir/file"
sum=$(sha256sum <"$open_dir/file")
sandbox -- sh -c "echo changed >$open_dir/file; touch $open_dir/new" 2>/dev/null
check "a world-writable host file is unchanged (the view is read-only)" "$sum" \
	"$(sha256sum <"$open_dir/file")"
check "nothing was created in a world-writable host directory" "no" \
	"$([ -e "$open_dir/new" ] && echo yes || echo no)"
# ... but /var/tmp inside is private and writable.
vt=$(mktemp -d /var/tmp/slt-vt.XXXXXX)
outside+=("$vt")
check "the private /var/tmp is writable, and not the host's" "1 no" \
	"$(sandbox -- sh -c "test -e $vt; echo \$?; touch /var/tmp/slt-x-$$" | tail -n 1) $(
		[ -e /var/tmp/slt-x-$$ ] && echo yes || echo no)"
out=$(sandbox --ro "$open_dir" -- sh -c "cat $open_dir/file; echo x >$open_dir/file && echo wrote" 2>&1)
check_has "--ro PATH is readable" "original" "$out"
check "--ro PATH is not writable" "$sum" "$(sha256sum <"$open_dir/file")"
sandbox --rw "$open_dir" -- sh -c "echo via-rw >$open_dir/file"
check "--rw PATH is writable" "via-rw" "$(cat "$open_dir/file")"

# /tmp is private both ways.
hostfile=$(mktemp /tmp/slt-hostfile.XXXXXX)
outside+=("$hostfile")
check "the host's /tmp is not visible inside" "1" \
	"$(sandbox -- sh -c "test -e $hostfile; echo \$?" | tail -n 1)"
sandbox -- sh -c "echo x >/tmp/slt-from-inside-$$"
check "what the command writes in /tmp stays inside" "no" \
	"$([ -e /tmp/slt-from-inside-$$ ] && echo yes || echo no)"
rm -f /tmp/slt-from-inside-$$

# A Unix socket of the host under /run (as D-Bus, resolved and docker have
# theirs) must not be reachable: the listener counts connections.
sockdir=$(mktemp -d /run/slt-sock.XXXXXX)
outside+=("$sockdir")
chmod 755 "$sockdir"
world_host_bg "$PY" -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen()
s.settimeout(300)
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("connected\n"); c.close()' \
	"$sockdir/host.sock" "$T/sock.log"
extra_pids+=($!)
disown $!
for _ in $(seq 50); do [ -S "$sockdir/host.sock" ] && break; sleep 0.1; done
# The listener works: it logs one connection from outside.
"$PY" -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$sockdir/host.sock" &&
	for _ in $(seq 100); do grep -q connected "$T/sock.log" 2>/dev/null && break; sleep 0.05; done
out=$(sandbox -- "$PY" -c '
import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("connected")
except OSError as e:
    print("refused:", e.strerror)' "$sockdir/host.sock" 2>&1)
check_has "a host socket under /run is not reachable" "refused:" "$out"
check "the host socket's listener saw only the outside connection" 1 \
	"$(grep -c connected "$T/sock.log" 2>/dev/null || echo 0)"
# sluice started from a directory the view covers (here the socket's own,
# under /run): the command's working directory must not be a handle on the
# host's. A relative connect would otherwise reach the socket.
# (nsenter --mount starts at /: change directory after it.)
out=$(world_host sh -c 'cd "$1" && shift && exec "$@"' sh "$sockdir" "$SLUICE" run -- "$PY" -c '
import os, socket
print("cwd", os.getcwd())
try:
    socket.socket(socket.AF_UNIX).connect("host.sock"); print("connected")
except OSError as e:
    print("refused:", e.strerror)' 2>&1)
check "started under /run, the command starts at / (the place is not in its view)" "cwd /" \
	"$(grep '^cwd ' <<<"$out")"
check_has "... and a relative connect to the host's socket fails" "refused:" "$out"
check "... and the listener still saw only the outside connection" 1 \
	"$(grep -c connected "$T/sock.log" 2>/dev/null || echo 0)"
check "/dev holds no host socket (no /dev/log)" "1" \
	"$(sandbox -- sh -c 'test -e /dev/log; echo $?' | tail -n 1)"

out=$(sandbox --rw /tmp -- true 2>&1)
check_has "--rw /tmp is refused (the host's /tmp holds sockets)" "--rw /tmp: refused" "$out"
out=$(sandbox --ro /run -- true 2>&1)
check_has "--ro /run is refused" "--ro /run: refused" "$out"
devnull=$(stat -c %Y.%Z /dev/null)
sleep 1.1 # the times have a second's grain here at the coarsest
sandbox -- sh -c 'touch /dev/null; echo x >/dev/null' 2>/dev/null
check "the host's /dev/null node is unchanged by the command (only the device is written)" \
	"$devnull" "$(stat -c %Y.%Z /dev/null)"

# HOME is writable, and not the operator's.
out=$(sandbox -- sh -c 'echo "$HOME"; echo x >"$HOME/.cache-test" && echo written')
check_has "HOME is a private writable directory" "written" "$out"
check_has "HOME is /tmp/home" "/tmp/home" "$out"

# The system CA path is the sandbox's bundle; --trust adds a private CA.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=slt private test CA" -keyout "$T/priv.key" -out "$T/priv-ca.pem" 2>/dev/null
chmod 644 "$T/priv-ca.pem"
out=$(sandbox --trust "$T/priv-ca.pem" -- sh -c \
	'cmp /etc/ssl/certs/ca-certificates.crt "$SSL_CERT_FILE" && echo same;
	 grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt' 2>&1)
check_has "/etc/ssl/certs/ca-certificates.crt inside is the sandbox's bundle" "same" "$out"
want=$(sed -n 2p "$T/priv-ca.pem")
check "--trust FILE is in the bundle the sandbox trusts" 1 "$(sandbox --trust "$T/priv-ca.pem" -- \
	grep -cF -- "$want" /etc/ssl/certs/ca-certificates.crt | tail -n 1)"
out=$(sandbox --trust /etc/hostname -- true 2>&1)
check_has "--trust with no certificate in it is refused, naming the file" "/etc/hostname" "$out"

# A passthrough host behind a private CA (the test origin's own cert):
# a client that uses its default trust store works with --trust only.
cat >"$T/etc/web.yaml" <<'YAML'
version: 1
allow:
  - host: web.sandbox.test
YAML
fetch='import ssl, urllib.request
try:
    print(urllib.request.urlopen("https://web.sandbox.test/", timeout=10).status)
except Exception as e:
    print("failed:", type(e).__name__)'
out=$(sandbox --policy "$T/etc/web.yaml" --trust "$T/cert.pem" -- env -u SSL_CERT_FILE \
	-u REQUESTS_CA_BUNDLE "$PY" -c "$fetch" 2>&1)
check "a passthrough origin behind a private CA works with --trust" 200 "$(tail -n 1 <<<"$out")"
out=$(sandbox --policy "$T/etc/web.yaml" -- env -u SSL_CERT_FILE "$PY" -c "$fetch" 2>&1)
check_has "... and is refused without it (the bundle has only the system's roots and ours)" \
	"failed:" "$out"

# ---- the environment -----------------------------------------------------------

out=$(AWS_SECRET_ACCESS_KEY=slt-aws-leak GITHUB_TOKEN=slt-gh-leak FOO=foo-value LC_ALL=C.UTF-8 \
	sandbox --env FOO --env BAR=bar-value -- env)
if grep -q "slt-aws-leak\|slt-gh-leak" <<<"$out"; then
	notok "sluice's environment leaked into the command"
else
	ok "AWS_SECRET_ACCESS_KEY and GITHUB_TOKEN of sluice's environment do not reach the command"
fi
check_has "--env NAME passes NAME" "FOO=foo-value" "$out"
check_has "--env NAME=VALUE sets it" "BAR=bar-value" "$out"
check_has "LC_* passes" "LC_ALL=C.UTF-8" "$out"
check_has "the proxy is set" "HTTPS_PROXY=http://" "$out"
printf 'version: 1\nsecrets:\n  k: { env: SLT_SECRET }\nallow:\n  - host: a.test\n    inject: { header: x-api-key, secret: k }\n' \
	>"$T/etc/envsecret.yaml"
chmod 644 "$T/etc/envsecret.yaml"
out=$(SLT_SECRET=sk-slt-secret-value-4242 sandbox --policy "$T/etc/envsecret.yaml" --env SLT_SECRET \
	-- env 2>&1)
rc=$?
check "--env naming the variable a policy secret is read from stops run (125)" 125 "$rc"
check_has "... saying why" "--env SLT_SECRET" "$out"
if grep -q "sk-slt-secret-value-4242" <<<"$out"; then notok "... and the secret was printed"; else
	ok "... and the secret reached nothing"; fi
out=$(sandbox --env HTTPS_PROXY=http://203.0.113.99:80 -- true 2>&1)
check_has "--env cannot replace the proxy variables" "proxy" "$out"

# ---- the audit stream ----------------------------------------------------------

out=$(sandbox --audit - -- true 2>&1)
rc=$?
check "--audit - is refused under run (125, as every failure of sluice's own)" 125 "$rc"
check_has "... saying why" "could print" "$out"

out=$(sandbox --rw "$T" --audit "$T/audit.log" -- true 2>&1)
rc=$?
check "--audit FILE under a --rw path is refused (125)" 125 "$rc"
check_has "... naming it" "$T/audit.log" "$out"
check "... and nothing was written there" no "$([ -e "$T/audit.log" ] && echo yes || echo no)"

# A command that ignores SIGTERM: the second one ends the sandbox (the
# operator is never left with only SIGKILL, which skips the teardown).
sigterm_pending() { # sigterm_pending PID: whether a SIGTERM waits for PID to take it
	local name mask
	while read -r name mask; do
		case $name in SigPnd: | ShdPnd:) (((0x$mask >> 14) & 1)) && return 0 ;; esac
	done 2>/dev/null <"/proc/$1/status"
	return 1
}
rm -f "$T/stubborn"
world_host_bg "$SLUICE" run --rw "$T" -- sh -c "trap '' TERM INT; touch $T/stubborn; sleep 60" \
	2>"$T/stubborn.err"
spid=$!
for _ in $(seq 600); do [ -e "$T/stubborn" ] && break; sleep 0.05; done
kill -TERM $spid
# The second only once sluice took the first (two pending would be one).
for _ in $(seq 100); do sigterm_pending "$spid" || break; sleep 0.05; done
kill -TERM $spid
wait $spid
rc=$?
check "a second SIGTERM ends a sandbox that ignores the first (exit 137)" 137 "$rc"
check_has "... and sluice says so" "again: ending the sandbox" "$(cat "$T/stubborn.err")"

# ---- the terminal ----------------------------------------------------------------

# The operator's terminal, played by a pty this test holds: sluice runs on
# its slave as a shell's foreground job would. The command tries to type
# into it with TIOCSTI; afterwards, whatever reads that terminal next (the
# operator's shell) must find nothing there.
cat >"$T/term.py" <<'PY'
import fcntl, os, pty, select, signal, struct, subprocess, sys, termios, time
mode = sys.argv[1]
m, s = pty.openpty()
fcntl.ioctl(m, termios.TIOCSWINSZ, struct.pack("HHHH", 41, 101, 0, 0))
def ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
cmd = sys.argv[2:]
p = subprocess.Popen(cmd, stdin=s, stdout=s, stderr=s, preexec_fn=ctty)
out = b""
deadline = time.time() + 30
sent = False
while time.time() < deadline:
    r, _, _ = select.select([m], [], [], 0.2)
    if r:
        try:
            out += os.read(m, 4096)
        except OSError:
            break
    if mode == "intr" and not sent and b"READY" in out:
        os.write(m, b"\x03")
        sent = True
    if p.poll() is not None:
        break
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill(); rc = "timeout"
# What the operator's shell would read next from its terminal.
fcntl.fcntl(s, fcntl.F_SETFL, os.O_NONBLOCK)
try:
    left = os.read(s, 4096)
except BlockingIOError:
    left = b""
print("rc", rc)
print("operator-tty", os.fstat(s).st_rdev)
print("output", out.decode(errors="replace").replace("\r", "").replace("\n", "|"))
print("left-for-the-shell", repr(left))
PY
inject='import fcntl, os, termios, sys
print("command-ttys", " ".join(str(os.fstat(fd).st_rdev) for fd in (0, 1, 2)))
n = 0
for fd in (0, 1, 2):
    try:
        for c in b"echo PWNED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        n += 1
    except OSError as e:
        pass
print("injected-into", n, "fds")'
out=$("$PY" "$T/term.py" plain ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- \
	"$SLUICE" run -- "$PY" -c "$inject" 2>&1)
echo "$out" | sed 's/^/# /'
check_has "TIOCSTI from inside types nothing into the operator's terminal" \
	"left-for-the-shell b''" "$out"
op=$(awk '/^operator-tty/ { print $2 }' <<<"$out")
cmdt=$(grep -o 'command-ttys [0-9 ]*' <<<"$out" | head -n 1)
if [ -n "$op" ] && [ -n "$cmdt" ] && ! grep -qw "$op" <<<"${cmdt#command-ttys }"; then
	ok "the command's fds 0-2 are a terminal of its own, not the operator's ($cmdt; operator's $op)"
else
	notok "the command's terminal: '$cmdt', the operator's '$op'"
fi
# The same into the command's own pty, which the filter refuses too (a
# dependency's script would type into an agent's prompt as its operator),
# with the request's high 32 bits set: the kernel reads only the low 32.
hibits='import ctypes, os, select, termios
libc = ctypes.CDLL(None, use_errno=True)
n = 0
for req in (termios.TIOCSTI, 1 << 32 | termios.TIOCSTI, 0xffffffff << 32 | termios.TIOCSTI):
    for c in b"echo PWNED\n":
        b = ctypes.c_char(c)
        n += libc.ioctl(0, ctypes.c_ulong(req), ctypes.byref(b)) == 0
r, _, _ = select.select([0], [], [], 0.5)
print("own-pty-typed", n, repr(os.read(0, 100) if r else b""))'
out=$("$PY" "$T/term.py" plain ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- \
	"$SLUICE" run -- "$PY" -c "$hibits" 2>&1)
check_has "TIOCSTI into the command's own pty, also with the request's high bits set: nothing typed" \
	"own-pty-typed 0 b''" "$out"
out=$("$PY" "$T/term.py" plain ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- \
	"$SLUICE" run -- sh -c 'stty size; tty' 2>&1)
check_has "the window size reaches the command's pty" "41 101" "$out"
out=$("$PY" "$T/term.py" intr ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- \
	"$SLUICE" run -- sh -c 'echo READY; sleep 20; echo not-interrupted' 2>&1)
check_has "^C typed at the terminal interrupts the command" "rc 130" "$out"

finish
