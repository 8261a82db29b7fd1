#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hostile command inside `sluice run`, trying for real to get out of the
# execution boundary (mounts, user namespaces, its init, file handles, fds,
# the operator's terminal, sluice itself). Each check passes when the attack
# fails, and looks at evidence outside where there is some: a host file that
# must stay unchanged, the operator's terminal as a pty this test holds, a
# listener that must see nothing, sluice's own exit.
#
# Usage: test-sandbox-attacks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-sandbox-attacks.sh ip nft nsenter python3 unshare setpriv
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"
# The sandbox's uid cannot run root's pyenv shim.
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
chmod 1777 "$T"
mkdir -m 755 "$T/bin" # the attack scripts, bound --ro into the sandbox

sandbox() { world_host "$SLUICE" run "$@"; }
# As the operator would start it from a shell: the world's host namespace.
SL=(ip netns exec "$WORLD_HOST" nsenter --mount="$WORLD_MNT" -- "$SLUICE" run)

# ---- mounts: none of the view can be undone ------------------------------------

# Something the host keeps under /tmp and /run, covered inside by tmpfs.
marker=$(mktemp /tmp/slt-attack-marker.XXXXXX)
outside+=("$marker")
chmod 644 "$marker"
cat >"$T/bin/locked.py" <<'PY'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
marker = os.path.basename(sys.argv[1])
def res(r): return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
out = {}
for p in ("/tmp", "/run", "/dev", "/proc", "/etc/resolv.conf", "/etc/ssl/certs/ca-certificates.crt"):
    out["umount " + p] = res(libc.umount2(p.encode(), 2))  # MNT_DETACH
# open_tree(OPEN_TREE_CLONE) of / without its children would show the host's /tmp
out["open_tree / alone"] = res(libc.syscall(428, -100, b"/", 1))
class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64), ("prop", ctypes.c_uint64), ("ns", ctypes.c_uint64)]
out["mount_setattr / rw"] = res(libc.syscall(442, -100, b"/", 0, ctypes.byref(Attr(0, 1, 0, 0)), 32))
out["mount_setattr / suid"] = res(libc.syscall(442, -100, b"/", 0, ctypes.byref(Attr(0, 2, 0, 0)), 32))
os.makedirs("/tmp/slt-mv", exist_ok=True)
out["move /run away"] = res(libc.mount(b"/run", b"/tmp/slt-mv", None, 8192, None))  # MS_MOVE
out["bind / alone"] = res(libc.mount(b"/", b"/tmp/slt-mv", None, 4096, None))       # MS_BIND
seen = os.path.exists("/tmp/" + marker) or os.path.exists("/tmp/slt-mv/tmp/" + marker)
# name_to_handle_at of / and open_by_handle_at through a mount: the host's tree
class FH(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
h = FH(); h.bytes = 128; mid = ctypes.c_int()
libc.name_to_handle_at(-100, b"/", ctypes.byref(h), ctypes.byref(mid), 0)
for m in ("/", "/usr", "/proc"):
    mfd = os.open(m, os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_RDONLY | os.O_DIRECTORY)
    out["open_by_handle_at via " + m] = res(fd)
    if fd >= 0 and os.path.exists("/proc/self/fd/%d/tmp/%s" % (fd, marker)):
        seen = True
print("uid", os.getuid())
for k, v in out.items():
    print(k, v)
print("host marker seen:", seen)
PY
# A user namespace of its own would make the command root there (with
# locked mounts only): the command's seccomp filter refuses to create one.
out=$(sandbox -- unshare -Urm true 2>&1)
check_has "unshare -Urm is refused inside (no user namespace of its own)" \
	"Operation not permitted" "$out"
out=$(sandbox --ro "$T/bin" -- "$PY" "$T/bin/locked.py" "$marker" 2>&1)
echo "$out" | sed 's/^/# /' 
escaped=$(grep -E '^(umount|open_tree|mount_setattr|move|bind|open_by_handle_at)' <<<"$out" |
	grep -c ' ok$')
check "... yet no mount of the view can be unmounted, moved, cloned alone or made rw" 0 "$escaped"
check_has "... and the host's /tmp under the covering tmpfs stays out of sight" \
	"host marker seen: False" "$out"
out=$(sandbox -- sh -c 'unshare -Ur nft flush ruleset 2>/dev/null && echo flushed || echo refused' 2>&1)
check "root of a user namespace cannot touch the sandbox's own nftables" refused "$(tail -n 1 <<<"$out")"

# --rw DIR must not make writable what the host itself mounts read-only
# beneath DIR (an operator's read-only bind of a dataset, say). The host's
# mounts are made in a private mount namespace of this test.
rec=$(mktemp -d /var/tmp/slt-rec.XXXXXX)
outside+=("$rec")
mkdir -p "$rec/work/ro" "$rec/src"
chmod 777 "$rec/src" "$rec/work" "$rec/work/ro"
echo original >"$rec/src/file"
chmod 666 "$rec/src/file"
out=$(world_host unshare -m --propagation private sh -c "
	mount --bind $rec/src $rec/work/ro && mount -o remount,bind,ro $rec/work/ro || exit 1
	setpriv --reuid 65534 --regid 65534 --clear-groups sh -c 'echo x >$rec/work/ro/file' 2>/dev/null &&
		echo 'host: writable'
	$SLUICE run --rw $rec/work -- sh -c 'echo changed-inside >$rec/work/ro/file' 2>&1" 2>&1)
echo "$out" | sed 's/^/# /'
check "a read-only host mount beneath a --rw path stays read-only inside" original \
	"$(cat "$rec/src/file")"

# --ro/--rw PATH is checked (realpath, the refusal of /run, /dev, /proc,
# /sys) when sluice starts, and bound later: whoever owns a directory on
# PATH (another user, a concurrent sandbox of the same --user) must not be
# able to swap a link in between and have the host's /run bound instead.
race=$(mktemp -d /var/tmp/slt-race.XXXXXX)
runmark=$(mktemp -d /run/slt-race-marker.XXXXXX)
outside+=("$race" "$runmark")
chown 65534:65534 "$race"
cat >"$T/bin/swap.py" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d, l = sys.argv[1] + "/d", sys.argv[1] + "/l"
os.mkdir(d); os.symlink("/run", l)
t0 = time.time()
while time.time() - t0 < 30:  # bounded; the test kills it sooner
    libc.renameat2(-100, d.encode(), -100, l.encode(), 2)  # RENAME_EXCHANGE
    time.sleep(0.002)
PY
setpriv --reuid 65534 --regid 65534 --clear-groups "$PY" "$T/bin/swap.py" "$race" &
swapper=$!
extra_pids+=($swapper)
sleep 0.2
escapes=0
tries=0
for tries in $(seq 10); do
	out=$(sandbox --ro "$race/d" -- ls "$race/d" 2>/dev/null)
	grep -q "$(basename "$runmark")" <<<"$out" && escapes=$((escapes + 1)) && break
done
kill "$swapper" 2>/dev/null
wait "$swapper" 2>/dev/null
echo "# $escapes of $tries runs saw the host's /run"
check "a link swapped in after sluice checked --ro PATH does not bind the host's /run" 0 "$escapes"

# No mount propagates either way: one the host makes beneath a --rw path
# while the sandbox runs does not appear inside (the host's tree is shared
# here, as on a systemd machine), and one the command makes in a user
# namespace of its own does not appear outside.
prop=$(mktemp -d /var/tmp/slt-prop.XXXXXX)
outside+=("$prop")
mkdir -p "$prop/w/late"
chmod -R 777 "$prop"
out=$(world_host unshare -m --propagation shared sh -c "
	mount --bind $prop/w $prop/w && mount --make-shared $prop/w || exit 1
	$SLUICE run --rw $prop/w -- sh -c '
		unshare -Urm --propagation shared sh -c \"mount -t tmpfs inner $prop/w/late && sleep 2\" &
		touch $prop/w/started; i=0
		while [ ! -e $prop/w/mounted ] && [ \$i -lt 100 ]; do sleep 0.05; i=\$((i+1)); done
		echo inside: \$(grep -c \" - tmpfs late \" /proc/self/mountinfo); wait' &
	i=0; while [ ! -e $prop/w/started ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done
	mount -t tmpfs late $prop/w/late && touch $prop/w/mounted && echo host-mounted
	sleep 0.5; echo outside: \$(grep -c ' - tmpfs inner ' /proc/self/mountinfo)
	wait
	umount $prop/w/late" 2>&1)
echo "$out" | sed 's/^/# /'
check_has "the host mounts beneath a --rw path while the sandbox runs" host-mounted "$out"
check_has "... and that mount stays outside" "inside: 0" "$out"
check_has "a mount the command makes (in a user namespace of its own) stays inside" \
	"outside: 0" "$out"

# The sandbox's own files (resolv.conf, passwd, the CA bundle) stay on top
# of a --ro bind of their parent. (A CA and its bundle come with a policy
# file: a run without one needs neither.)
printf 'version: 1\nallow:\n  - host: nothing.sandbox-attacks.test\n' >"$T/some.yaml"
chmod 644 "$T/some.yaml"
out=$(sandbox --policy "$T/some.yaml" --ro /etc/ssl -- sh -c \
	'cmp -s /etc/ssl/certs/ca-certificates.crt "$SSL_CERT_FILE" && echo sandbox-bundle || echo host-bundle' 2>&1)
check "--ro /etc/ssl does not hide the sandbox's CA bundle" sandbox-bundle "$(tail -n 1 <<<"$out")"
out=$(sandbox --ro /etc -- sh -c 'grep -c "^nameserver 10\.231\." /etc/resolv.conf; whoami' 2>&1)
check_has "--ro /etc keeps the resolv.conf that names the gateway" "1" "$(head -n 1 <<<"$out")"

# ---- processes: its init, sluice, what it leaves ------------------------------

cat >"$T/bin/init.py" <<'PY'
import ctypes, errno, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
def e(): return errno.errorcode.get(ctypes.get_errno(), "?")
print("ptrace init:", "attached" if libc.ptrace(16, 1, None, None) == 0 else e())
for s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGSEGV):
    try: os.kill(1, s)
    except OSError: pass
time.sleep(0.2)
print("init state:", open("/proc/1/stat").read().split()[2])
pfd = os.pidfd_open(1)
fd = libc.syscall(438, pfd, 3, 0)  # pidfd_getfd: the init's fd 3
print("pidfd_getfd:", "got" if fd >= 0 else e())
os.close(pfd)
for p in ("/proc/1/root", "/proc/1/cwd"):
    try: os.listdir(p); print(p, "readable")
    except OSError as x: print(p, errno.errorcode[x.errno])
try: print("init environ:", len(open("/proc/1/environ", "rb").read()))
except OSError as x: print("init environ:", errno.errorcode[x.errno])
# fds the command holds (listdir itself takes one)
print("fds:", sorted(int(f) for f in os.listdir("/proc/self/fd")))
w = [p for p in ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/ns_last_pid",
                 "/proc/sys/net/ipv4/conf/all/forwarding")
     if os.access(p, os.W_OK)]
ok = 0
for p in w:
    try:
        with open(p, "w") as f: f.write("1\n")
        ok += 1
    except OSError: pass
print("sysctl writes:", ok)
PY
out=$(sandbox --ro "$T/bin" -- "$PY" "$T/bin/init.py" 2>&1)
echo "$out" | sed 's/^/# /'
check_has "the command cannot ptrace its init" "ptrace init: EPERM" "$out"
check_has "SIGKILL, SIGSTOP, SIGSEGV from inside leave the init running" "init state: S" "$out"
check_has "pidfd_getfd() of the init's fds is refused" "pidfd_getfd: EPERM" "$out"
check_has "/proc/1/root of the init is not readable" "/proc/1/root EACCES" "$out"
check_has "/proc/1/environ of the init is not readable" "init environ: EACCES" "$out"
check_has "the command holds only fds 0-2 (and the one listdir opened)" "fds: [0, 1, 2, 3]" "$out"
check_has "no sysctl under /proc/sys can be written" "sysctl writes: 0" "$out"

# sluice started with its fds 0-2 closed: what it opens lands there, and must
# not reach the command.
mkdir -m 1777 "$T/fds"
world_host sh -c "exec $SLUICE run --rw $T/fds -- sh -c 'ls /proc/\$\$/fd >$T/fds/list' <&- >&- 2>&-"
check "with sluice's fds 0-2 closed, nothing of sluice's reaches the command" "1" \
	"$(tr '\n' ' ' <"$T/fds/list" 2>/dev/null | xargs)"

# An abstract Unix socket of the host's namespace (where sluice runs).
world_host_bg "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind("\0slt-attack-abstract"); s.listen(); s.settimeout(60)
c, _ = s.accept(); open(sys.argv[1], "w").write("connected\n")' "$T/abstract.log"
extra_pids+=($!)
disown $!
sleep 0.3
out=$(sandbox -- "$PY" -c '
import socket
try: socket.socket(socket.AF_UNIX).connect("\0slt-attack-abstract"); print("connected")
except OSError as e: print("refused:", e.strerror)' 2>&1)
check_has "an abstract Unix socket of the host is not reachable" "refused:" "$out"
check "... and its listener saw nothing" no "$([ -e "$T/abstract.log" ] && echo yes || echo no)"

# Killing its own init (RLIMIT_CPU on pid 1, then signals it must handle
# until the kernel's SIGKILL) ends the sandbox, all of it.
cat >"$T/bin/burn.py" <<'PY'
import os, resource, signal, subprocess, time
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
subprocess.Popen(["setsid", "sh", "-c", "exec sleep 300"], preexec_fn=lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN))
resource.prlimit(1, resource.RLIMIT_CPU, (1, 1))
t0 = time.time()
while time.time() - t0 < 15:
    for _ in range(2000):
        try: os.kill(1, signal.SIGUSR2)
        except OSError: pass
PY
sandbox --ro "$T/bin" -- "$PY" "$T/bin/burn.py" >/dev/null 2>&1
rc=$?
echo "# the sandbox ended with $rc"
left=$(ps -eo uid=,args= | awk -v lo=$((0x7F000000)) -v hi=$((0x7F010000)) \
	'$1 >= lo && $1 < hi && $2 == "sleep" && $3 == "300"' | wc -l)
check "a command that kills its own init takes the whole sandbox with it" 0 "$left"

# ---- the operator's terminal ---------------------------------------------------

# The operator's terminal is a pty this test holds; sluice runs on it as a
# shell's foreground job would.
cat >"$T/bin/term.py" <<'PY'
import fcntl, os, pty, select, struct, subprocess, sys, termios, time
mode = sys.argv[1]
m, s = pty.openpty()
fcntl.ioctl(m, termios.TIOCSWINSZ, struct.pack("HHHH", 41, 101, 0, 0))
def ctty():
    os.setsid(); fcntl.ioctl(s, termios.TIOCSCTTY, 0)
before = termios.tcgetattr(s)
if mode == "stdout-only":  # `sluice run ... < task.txt` in a terminal
    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=s, stderr=s, preexec_fn=ctty)
    pr = None
else:                      # `sluice run ... | true` in a terminal: no reader
    pr, pw = os.pipe()
    p = subprocess.Popen(sys.argv[2:], stdin=s, stdout=pw, stderr=s, preexec_fn=ctty)
    os.close(pw); os.close(pr); pr = None
out = b""; sent = False
deadline = time.time() + 25
while time.time() < deadline and p.poll() is None:
    fds = [m] + ([pr] if pr is not None else [])
    r, _, _ = select.select(fds, [], [], 0.1)
    if m in r:
        try: out += os.read(m, 65536)
        except OSError: break
    if mode == "stdout-only" and not sent and b"READY" in out:
        os.write(m, b"typed-by-operator\n"); sent = True
try: p.wait(timeout=15)
except subprocess.TimeoutExpired: p.kill(); p.wait()
after = termios.tcgetattr(s)
# What the operator's shell would read next from its terminal.
fcntl.fcntl(s, fcntl.F_SETFL, os.O_NONBLOCK)
try: left = os.read(s, 4096)
except BlockingIOError: left = b""
print("rc", p.returncode)
print("left-for-the-shell", left)
print("output", out.decode(errors="replace").replace("\r", "").replace("\n", "|")[:300])
print("terminal restored", after == before)
print("winsize", struct.unpack("HHHH", fcntl.ioctl(s, termios.TIOCGWINSZ, b"\0" * 8))[:2])
PY
cat >"$T/bin/steal.py" <<'PY'
import fcntl, os, select, struct, termios, time
print("READY", flush=True)
got = b""
t0 = time.time()
while time.time() - t0 < 3 and b"\n" not in got:
    r, _, _ = select.select([1], [], [], 0.2)
    if r:
        try: got += os.read(1, 100)
        except OSError: break
print("stole:", got, flush=True)
try:
    a = termios.tcgetattr(1); a[3] &= ~termios.ECHO; termios.tcsetattr(1, termios.TCSANOW, a)
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 1, 1, 0, 0))
except OSError: pass
n = 0
for c in b"PWNED\n":
    try: fcntl.ioctl(1, termios.TIOCSTI, bytes([c])); n += 1
    except OSError: pass
print("tiocsti: typed", n)
PY
out=$("$PY" "$T/bin/term.py" stdout-only "${SL[@]}" --ro "$T/bin" -- "$PY" "$T/bin/steal.py" 2>&1)
echo "$out" | sed 's/^/# /'
if grep -q "^left-for-the-shell.*PWNED" <<<"$out"; then
	notok "stdin not a terminal, stdout the operator's: TIOCSTI typed into the operator's shell"
else
	ok "stdin not a terminal, stdout the operator's: TIOCSTI types nothing into the operator's shell"
fi
check_has "... the command cannot read what the operator types" "stole: b''" "$out"
check_has "... nor leave the operator's terminal in another mode" "terminal restored True" "$out"
check_has "... nor change its window size" "winsize (41, 101)" "$out"

# stdin and stderr the operator's terminal, stdout a pipe nobody reads: the
# command's stderr is the pty, which sluice relays. That must not kill
# sluice (and leave the operator's terminal raw), and the command's stderr
# belongs on the terminal.
out=$("$PY" "$T/bin/term.py" pipe "${SL[@]}" -- sh -c \
	'echo to-stderr >&2; sleep 0.3; i=0; while [ $i -lt 4000 ]; do echo flood $i >&2; i=$((i+1)); done; exit 3' 2>&1)
echo "$out" | sed 's/^/# /' | cut -c1-200
check "a command cannot make sluice die of SIGPIPE (its exit status comes back)" "rc 3" \
	"$(head -n 1 <<<"$out")"
check_has "... and the operator's terminal is restored" "terminal restored True" "$out"
check_has "... and the command's stderr reaches the terminal, not sluice's stdout" \
	"output to-stderr" "$out"

# A file left setuid (or setgid) in a --rw directory would run as the
# sandbox's uid for whoever on the host executes it there, outside every
# sandbox, and could reach a later one given that uid. No call the command
# can make sets those bits; the modes are read from outside afterwards.
mkdir -m 1777 "$T/setid"
out=$(sandbox --rw "$T/setid" -- "$PY" -c '
import ctypes, os, stat
d = "'"$T/setid"'"
libc = ctypes.CDLL(None, use_errno=True)
def tryit(name, f):
	try:
		f(); print(name, "done")
	except OSError as e:
		print(name, "refused", e.strerror)
for n in ("u", "g", "f", "at", "at2", "plain"):
	open(os.path.join(d, n), "w").write("#!/bin/sh\nid -u\n")
tryit("chmod u+s", lambda: os.chmod(os.path.join(d, "u"), 0o4755))
tryit("chmod g+s", lambda: os.chmod(os.path.join(d, "g"), 0o2755))
fd = os.open(os.path.join(d, "f"), os.O_RDONLY)
tryit("fchmod u+s", lambda: os.fchmod(fd, 0o4755))
dfd = os.open(d, os.O_RDONLY)
tryit("fchmodat u+s", lambda: os.chmod("at", 0o4755, dir_fd=dfd))
def at2():
	if libc.syscall(452, dfd, b"at2", 0o6755, 0) != 0:
		e = ctypes.get_errno()
		raise OSError(e, os.strerror(e))
tryit("fchmodat2 ug+s", at2)
tryit("open O_CREAT 04755", lambda: os.close(os.open(os.path.join(d, "new"), os.O_CREAT | os.O_WRONLY, 0o4755)))
tryit("mknod 02755", lambda: os.mknod(os.path.join(d, "node"), stat.S_IFREG | 0o2755))
tryit("chmod 0755", lambda: os.chmod(os.path.join(d, "plain"), 0o755))
' 2>&1)
echo "$out" | sed 's/^/# /'
check "chmod, fchmod, fchmodat, fchmodat2, open and mknod cannot set a setuid or setgid bit" \
	"7" "$(grep -c 'refused Operation not permitted' <<<"$out")"
check "... a plain chmod still works" "chmod 0755 done" "$(grep '^chmod 0755' <<<"$out")"
check "... and, seen from outside, no file in the --rw directory has either bit" "" \
	"$(find "$T/setid" -perm /6000)"
check "... the plain one is 0755" "755" "$(stat -c %a "$T/setid/plain")"

# ---- the operator's kernel keyrings ---------------------------------------------

# A session keyring is inherited through fork, exec and setuid, and every
# key reachable from it is "possessed" by the process, whatever its uid:
# the possessor's permissions (all of them, for a key added the usual way)
# apply. An operator's login (pam_keyinit) or a service gives sluice a
# session keyring of its own; the command must not hold it. keyctl is
# denied inside, but /proc/keys lists what is possessed, and other kernel
# interfaces take a possessed key by its serial (AF_ALG's
# ALG_SET_KEY_BY_KEY_SERIAL uses it as a MAC or cipher key).
cat >"$T/bin/session.py" <<'PY'
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL, ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217)}[platform.machine()]
SESSION = -3  # KEY_SPEC_SESSION_KEYRING
if libc.syscall(KEYCTL, 1, b"slt-operator-session") < 0:  # KEYCTL_JOIN_SESSION_KEYRING
    sys.exit("no session keyring")
inner = libc.syscall(ADD_KEY, b"keyring", b"slt-operator-ring", None, 0, SESSION)
for desc, ring in ((b"slt-operator-token", SESSION), (b"slt-operator-nested", inner)):
    if libc.syscall(ADD_KEY, b"user", desc, b"0123456789abcdef", 16, ring) < 0:
        sys.exit("add_key failed")
os.execvp(sys.argv[1], sys.argv[1:])
PY
ctl=$(world_host "$PY" "$T/bin/session.py" grep -c slt-operator /proc/keys 2>&1)
check "(control: sluice's session keyring holds a keyring and keys, 4 in all)" 4 "$ctl"
out=$(world_host "$PY" "$T/bin/session.py" "$SLUICE" run -- sh -c \
	'grep slt-operator /proc/keys; echo inside: $(grep -c slt-operator /proc/keys)' 2>&1)
echo "$out" | sed 's/^/# /'
check "the command does not possess sluice's session keyring, nor any key in it" \
	"inside: 0" "$(grep '^inside:' <<<"$out")"

# ---- AF_VSOCK: a way to the hypervisor that no network namespace fences -------

# vsock is not scoped by network namespaces, and nftables never sees it: in
# a VM with a vsock device (Firecracker, Kata, QEMU's vhost-vsock, WSL2's
# hv_sock), a socket of the sandbox would reach the host's vsock services
# (CID 2) past the gateway. Only whether a socket can be made is tried:
# nothing is sent.
vsock='import errno, socket
try: socket.socket(40, socket.SOCK_STREAM); print("vsock: created")
except OSError as e: print("vsock:", errno.errorcode[e.errno])'
echo "# outside (the kernel's own): $(world_host "$PY" -c "$vsock" 2>&1)"
out=$(sandbox -- "$PY" -c "$vsock" 2>&1)
check "an AF_VSOCK socket cannot be made inside (as on a kernel without vsock)" \
	"vsock: EAFNOSUPPORT" "$out"

# Nor a socket of any family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK:
# others are hardware's or the hypervisor's (AF_QIPCRTR, AF_NFC, AF_CAIF),
# or a later kernel's. Every family number 0..63 (and one far past them),
# each socket type: what can be made, and what the others answer.
families='import errno, socket
made, said = set(), {}
for fam in list(range(64)) + [4096]:
    for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        try:
            socket.socket(fam, t).close()
            made.add(fam)
        except OSError as e:
            said.setdefault(fam, set()).add(errno.errorcode[e.errno])
print("made:", " ".join(str(f) for f in sorted(made)))
print("other answers:", " ".join(sorted(set().union(*(said[f] for f in said if f not in made)))))'
echo "# outside, as root (the kernel's own): $(world_host "$PY" -c "$families" 2>&1 | tr '\n' ';')"
out=$(sandbox -- "$PY" -c "$families" 2>&1)
check "inside, sockets of AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only" "made: 1 2 10 16" \
	"$(sed -n 1p <<<"$out")"
check "... every other family answers EAFNOSUPPORT, as a kernel without it would" \
	"other answers: EAFNOSUPPORT" "$(sed -n 2p <<<"$out")"

finish
