#!/bin/bash
# The control commands (ps, pending, reload, approve, deny) against sockets
# that answer as a gateway its sandbox took over would: escape sequences,
# other control bytes and non-ASCII bytes in every field and message they
# send. Nothing of it may reach the operator's terminal as it came: every
# byte printed is printable ASCII or '\n' (docs/control.md), and what was
# sent is still shown, its bad bytes as '?'.
#
# The sockets are a fake server's, in a mount namespace of our own with a
# tmpfs on /run (the machine's /run/sluice is never touched), as uid 0 of
# a user namespace of our own: no root needed.
#   test-control-escapes.sh SLUICE
set -uo pipefail
sluice=$(realpath "$1")

if [ -z "${SL_TEST_CTL_NS:-}" ]; then
	if ! SL_TEST_CTL_NS=1 unshare -r -m true 2>/dev/null; then
		# CI must run every test: there, a missing namespace is a failure.
		if [ "${CI:-}" = true ]; then
			echo "1..1"
			echo "not ok 1 - no user and mount namespace (unshare -r -m), and CI=true"
			exit 1
		fi
		echo "1..0 # SKIP no user and mount namespace (unshare -r -m)"
		exit 0
	fi
	SL_TEST_CTL_NS=1 exec unshare -r -m --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=755 sluice-test /run || {
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - cannot mount a tmpfs on /run in our namespace, and CI=true"
		exit 1
	fi
	echo "1..0 # SKIP cannot mount a tmpfs on /run in our namespace"
	exit 0
}
mkdir -m 755 /run/sluice && mkdir -m 700 /run/sluice/ctl || exit 1

exec python3 - "$sluice" <<'PY'
import os, socket, subprocess, sys, threading

sluice = sys.argv[1]
CTL = "/run/sluice/ctl"
ID = "0123456789ab"
# What a taken-over gateway might send: OSC (set the title), clear the
# screen, move the cursor, hide what follows; BEL, DEL, a raw C1 CSI and a
# UTF-8 one. No space: it must fit in one field of `info`.
EVIL = (b"\x1b]0;owned\x07\x1b[2J\x1b[1;1Hpwned\x7f\x9b1m\xc2\x9b2m\x1b[8m")
# How it must be shown: each of those bytes a '?'.
SHOWN = bytes(b if 0x20 <= b < 0x7f else ord("?") for b in EVIL)

n = 0
bad = 0


def tap(good, what):
    global n, bad
    n += 1
    if not good:
        bad += 1
    print("%s %d - %s" % ("ok" if good else "not ok", n, what), flush=True)


class Fake:
    """Sockets under CTL, each answering by request (its first word)."""

    def __init__(self, answers):
        self.socks = []
        for pid, by_req in answers.items():
            path = "%s/%d.sock" % (CTL, pid)
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            os.chmod(path, 0o600)
            s.listen(8)
            self.socks.append((s, path))
            threading.Thread(target=self.serve, args=(s, by_req), daemon=True).start()

    def serve(self, s, by_req):
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            req = b""
            while not req.endswith(b"\n"):
                d = c.recv(256)
                if not d:
                    break
                req += d
            word = req.split(b" ")[0].strip().decode()
            c.sendall(by_req.get(word, b"error unknown request") + b"\n")
            c.close()

    def close(self):
        for s, path in self.socks:
            s.close()
            os.unlink(path)


def info(pid, name=b"sb", policy=b"/p.yaml", pending=1):
    return b"* %s %d %d %s 0 0 0 %d\nok" % (name, pid, pid, policy, pending)


PENDING = b"* %s sb GET h.test:80 / 0 - 1 60\nok" % ID.encode()


def run(scenario, args, want=b""):
    p = subprocess.run([sluice] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=30)
    out = p.stdout + p.stderr
    what = "%s: sluice %s" % (scenario, " ".join(args))
    raw = [b for b in out if (b < 0x20 and b != 0x0a) or b >= 0x7f]
    tap(not raw, "%s prints no control or non-ASCII byte%s" %
        (what, "" if not raw else ": got %r" % out[:300]))
    shown = SHOWN in out and want in out
    tap(shown, "%s shows what was sent, bad bytes as '?'%s%s" %
        (what, " and %r" % want if want else "", "" if shown else ": got %r" % out[:300]))


# Each answer to `info` an error: every command says it on stderr.
f = Fake({101: {"info": b"error " + EVIL}})
for args in (["ps"], ["pending"], ["reload", "101"], ["approve", ID], ["deny", ID]):
    run("info answers an error", args)
f.close()

# A name, a policy and approve's "ok TEXT" that hold escapes.
f = Fake({102: {"info": info(102, name=b"sb" + EVIL, policy=b"/p" + EVIL),
                "reload": b"ok", "pending": PENDING, "approve": b"ok " + EVIL,
                "deny": b"ok " + EVIL}})
run("a name and policy with escapes", ["ps"])
run("a name with escapes", ["reload", "102"], b"reloaded")
for verb in ("approve", "deny"):
    run("ok TEXT and a name with escapes", [verb, ID], b"pid 102")
f.close()

# Two sandboxes called the same: the ambiguous name lists their policies.
f = Fake({103: {"info": info(103, name=b"twin", policy=b"/a" + EVIL)},
          104: {"info": info(104, name=b"twin", policy=b"/b" + EVIL)}})
run("an ambiguous name, policies with escapes", ["reload", "twin"], b"is ambiguous")
f.close()

# What reload and pending send as data lines, and reload's error.
f = Fake({105: {"info": info(105), "reload": b"* " + EVIL + b"\nerror " + EVIL,
                "pending": b"* " + EVIL + b"\nok"}})
run("reload's lines and error with escapes", ["reload", "105"])
run("pending lines with escapes", ["pending"])
f.close()

print("1..%d" % n)
sys.exit(1 if bad else 0)
PY
