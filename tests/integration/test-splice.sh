#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Opaque tunnels are relayed by splice(2), never through the gateway's
# memory (gateway/splice.c), and that changes nothing a client or the audit
# log sees: through the confined `sluice gateway`, a `protocol: tcp`
# CONNECT tunnel carries 32 MiB each way intact (checksums at both ends),
# an echo of 16 MiB both ways at once, a half-close from the client (its
# upload ends, the answer still comes) and from the origin (its download
# ends, the client's answer still goes); a TLS passthrough tunnel (its
# ClientHello checked, then spliced) downloads a file intact; each tunnel's
# record has the bytes it carried, exactly. That the bytes went around the
# gateway's user space is shown from outside it: its read(2)s, counted by
# the kernel (/proc/PID/io rchar), grow by far less than what it relayed.
# Stalled tunnels (clients that do not read) hold a pipe each; the gateway
# has the 16 it made before it was confined and makes none after; the
# tunnels past them are copied instead and still arrive intact, and the
# pipes come back. The gateway is confined (seccomp mode 2) and alive at
# the end: no splice call killed it.
#
# Usage: test-splice.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-splice.sh ip nft nsenter python3 curl dnsmasq openssl sha256sum

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
mkdir -p "$T/files"
head -c $((24 * 1024 * 1024)) /dev/urandom >"$T/files/big.bin"
chmod -R a+rX "$T/files"
WORLD_ORIGIN_ROOT=$T/files world_services allowed.test=$N bulk.test=$N ||
	{ echo "not ok - the world's services did not start"; exit 1; }

# The bulk server on :9000, one line of command per connection:
#   SINK          read to EOF, answer "COUNT SHA256", close
#   SOURCE N SEED send N bytes (SEED's stream), shut down writing, then
#                 log "source N SHA client SHA'" with the line the client
#                 sends back after the EOF
#   ECHO          send back everything read, shut down writing at EOF
cat >"$T/bulk.py" <<'PY'
import hashlib, random, socket, sys, threading
log = sys.argv[1]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[2], 9000)); srv.listen(256)
open(log + ".ready", "w").close()
lock = threading.Lock()
def note(s):
    with lock, open(log, "a") as f:
        f.write(s + "\n")
def line(f):
    return f.readline().decode().split()
def serve(c):
    c.settimeout(60)
    f = c.makefile("rb")
    try:
        cmd = line(f)
        if cmd[0] == "SINK":
            h, n = hashlib.sha256(), 0
            while True:
                b = f.read1(1 << 20)
                if not b:
                    break
                h.update(b); n += len(b)
            c.sendall(b"%d %s\n" % (n, h.hexdigest().encode()))
        elif cmd[0] == "SOURCE":
            n, rnd, h = int(cmd[1]), random.Random(int(cmd[2])), hashlib.sha256()
            while n:
                b = rnd.randbytes(min(n, 1 << 20))
                h.update(b); c.sendall(b); n -= len(b)
            c.shutdown(socket.SHUT_WR)
            note("source %s %s client %s" % (cmd[1], h.hexdigest(), " ".join(line(f))))
        elif cmd[0] == "ECHO":
            while True:
                b = f.read1(1 << 20)
                if not b:
                    break
                c.sendall(b)
            c.shutdown(socket.SHUT_WR)
    except OSError as e:
        note("error %s" % e)
    c.close()
while True:  # ends when world_down kills it
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
world_bg "$WORLD_NET" python3 "$T/bulk.py" "$T/bulk.log" "$N"
wait_for_file "$T/bulk.log.ready" || { echo "not ok - the bulk server did not start"; exit 1; }
touch "$T/bulk.log"

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
  - host: bulk.test
    ports: [9000]
    protocol: tcp
P

GW=203.0.113.1:3128
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" --listen $GW \
	--resolver "$N:53" --audit "$T/audit.log" --sandbox splice --upstream-ca "$T/cert.pem" || exit 1
pid=$world_gw_pid
wait_grep "$T/gw.log" "proxy on" || notok "the gateway says it serves: $(cat "$T/gw.log")"
check "the gateway is confined: seccomp mode 2" "2" \
	"$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$pid/status")"

# The client's side, in the host namespace. Each scenario prints one line.
cat >"$T/client.py" <<'PY'
import hashlib, random, socket, sys, threading, time
gw = ("203.0.113.1", 3128)
def tunnel(rcvbuf=0):
    s = socket.socket()
    if rcvbuf:  # a small window: what the client does not read backs up in the gateway
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(60)
    s.connect(gw)
    s.sendall(b"CONNECT bulk.test:9000 HTTP/1.1\r\nHost: bulk.test:9000\r\n\r\n")
    ok = b""
    while not ok.endswith(b"\r\n\r\n"):  # what follows is the tunnel's
        b = s.recv(1)
        assert b, ok
        ok += b
    assert ok.startswith(b"HTTP/1.1 200"), ok
    return s
def read_all(s):
    h, n = hashlib.sha256(), 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            return n, h.hexdigest()
        h.update(b); n += len(b)
def stream(n, seed):
    rnd = random.Random(seed)
    while n:
        b = rnd.randbytes(min(n, 1 << 20))
        yield b
        n -= len(b)
what = sys.argv[1]
if what == "sink":  # upload, half-close, the answer after it
    n, s, h = int(sys.argv[2]), tunnel(), hashlib.sha256()
    s.sendall(b"SINK\n")
    for b in stream(n, 7):
        h.update(b); s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    ans = s.makefile("rb").readline().decode().split()
    print("sent %d %s got %s" % (n, h.hexdigest(), " ".join(ans)))
elif what == "source":  # download to EOF, then an answer upstream
    n, s = int(sys.argv[2]), tunnel()
    s.sendall(b"SOURCE %d 11\n" % n)
    got, sha = read_all(s)
    s.sendall(b"%d %s\n" % (got, sha.encode()))
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the server's close
    h = hashlib.sha256()
    for b in stream(n, 11):
        h.update(b)
    print("got %d %s want %s" % (got, sha, h.hexdigest()))
elif what == "echo":  # both ways at once
    n, s, h = int(sys.argv[2]), tunnel(), hashlib.sha256()
    s.sendall(b"ECHO\n")
    res = {}
    t = threading.Thread(target=lambda: res.update(r=read_all(s)))
    t.start()
    for b in stream(n, 5):
        h.update(b); s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    t.join(120)
    print("sent %d %s got %d %s" % (n, h.hexdigest(), *res.get("r", (0, "-"))))
elif what == "stalled":  # K downloads of N, none read until all are open
    k, n = int(sys.argv[2]), int(sys.argv[3])
    ss = []
    for i in range(k):
        s = tunnel(65536)
        s.sendall(b"SOURCE %d %d\n" % (n, 100 + i))
        ss.append(s)
    open(sys.argv[4], "w").close()  # all asked: the test counts the pipes now
    for _ in range(600):  # until the test has counted (bounded)
        try:
            open(sys.argv[4] + ".counted").close()
            break
        except OSError:
            time.sleep(0.05)
    bad = 0
    for i, s in enumerate(ss):
        got, sha = read_all(s)
        h = hashlib.sha256()
        for b in stream(n, 100 + i):
            h.update(b)
        bad += got != n or sha != h.hexdigest()
        s.sendall(b"ok\n")
        s.close()
    print("%d of %d intact" % (k - bad, k))
elif what == "abandon":  # K downloads left with bytes in the gateway's pipes, reset
    import select, struct
    k, n = int(sys.argv[2]), int(sys.argv[3])
    ss = []
    for i in range(k):
        s = tunnel(65536)
        s.sendall(b"SOURCE %d %d\n" % (n, 200 + i))
        ss.append(s)
    flowing = 0
    for s in ss:  # each has bytes through: its pipe is filling behind them
        r, _, _ = select.select([s], [], [], 10)
        flowing += bool(r)
    for s in ss:  # gone without reading: RST, the pipes still hold bytes
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    bad = 0
    for i in range(k):  # then new tunnels, on the pipes those leave
        try:  # another tunnel's bytes first would break even the CONNECT's answer
            s = tunnel()
            s.settimeout(5)  # a stream shifted by stale bytes never ends right
            s.sendall(b"SOURCE %d %d\n" % (n // 8, 300 + i))
            got, sha = read_all(s)
            s.close()
        except (AssertionError, OSError):
            got, sha = -1, ""
        h = hashlib.sha256()
        for b in stream(n // 8, 300 + i):
            h.update(b)
        bad += got != n // 8 or sha != h.hexdigest()
    print("%d flowing, %d of %d after them intact" % (flowing, k - bad, k))
PY

rchar() { sed -n 's/^rchar: //p' "/proc/$pid/io"; }
pipes() { find "/proc/$pid/fd" -lname 'pipe:*' 2>/dev/null | wc -l; }
p0=$(pipes) # libuv's own and the 16 made at start, before any tunnel
MiB=$((1024 * 1024))
n=$((32 * MiB))

r0=$(rchar)
# "sent N SHA got N' SHA'" (or "got N SHA want SHA'"): intact when the
# counts and the sums agree, and N is what was meant.
intact() { awk -v n="$2" '$2 == n && $2 == $5 && $3 == $6 { print "intact" }' <<<"$1"; }
out=$(world_host "$PY" "$T/client.py" sink $n)
check "an upload of 32 MiB through a spliced tunnel arrives intact (count and sha256)" \
	"intact" "$(intact "$out" $n)"
rec=$(audit_last)
check_has "... its record: a connect, allowed" '"event":"connect"' "$rec"
check_has "... with every byte up counted (SINK\\n and the upload)" "\"bytes_up\":$((n + 5))," "$rec"
check_has "... and down (the answer after the half-close)" \
	"\"bytes_down\":$(($(awk '{print length($5) + length($6) + 2}' <<<"$out")))," "$rec"

out=$(world_host "$PY" "$T/client.py" source $n)
check "a download of 32 MiB through a spliced tunnel arrives intact" \
	"yes" "$(awk -v n=$n '$1 == "got" && $2 == n && $3 == $5 { print "yes" }' <<<"$out")"
wait_grep "$T/bulk.log" "source $n" || notok "the bulk server logged the download"
check "... and after the origin's half-close, the client's answer reached it" \
	"yes" "$(awk -v n=$n '$1 == "source" && $2 == n && $4 == "client" && $5 == n && $6 == $3 { print "yes" }' "$T/bulk.log")"
rec=$(audit_last)
check_has "... its record has the download's bytes" "\"bytes_down\":$n," "$rec"
check_has "... and the request and the answer" \
	"\"bytes_up\":$(( ${#n} + 11 + ${#n} + 1 + 64 + 1 ))," "$rec"
r1=$(rchar)
check "the gateway read(2) under 1 MiB of the 64 MiB it relayed (splice, not a copy)" "yes" \
	"$( [ $((r1 - r0)) -lt $MiB ] && echo yes || echo "no: $((r1 - r0)) bytes")"

out=$(world_host "$PY" "$T/client.py" echo $((16 * MiB)))
check "16 MiB echoed both ways at once arrives intact" "intact" "$(intact "$out" $((16 * MiB)))"
check_has "... its record counts both ways" \
	"\"bytes_up\":$((16 * MiB + 5)),\"bytes_down\":$((16 * MiB))," "$(audit_last)"

got=$(world_host curl -sS -m 60 -p -x "http://$GW" --cacert "$T/cert.pem" \
	"https://allowed.test/files/big.bin" 2>&1 | sha256sum | cut -d' ' -f1)
check "a TLS passthrough tunnel (its ClientHello checked first) downloads 24 MiB intact" \
	"$(sha256sum <"$T/files/big.bin" | cut -d' ' -f1)" "$got"
rec=$(audit_last)
check_has "... audited as passthrough with its SNI" '"tls":"passthrough","sni":"allowed.test"' "$rec"
check "... with at least the file's bytes down" "yes" \
	"$(bd=$(sed -n 's/.*"bytes_down":\([0-9]*\).*/\1/p' <<<"$rec"); [ "${bd:-0}" -gt $((24 * MiB)) ] && echo yes)"

# 70 clients that do not read: each tunnel's download stalls in the
# gateway with a pipe full. The gateway made its 16 pipes before it was
# confined and can make no more: the tunnels past them copy, and all
# arrive intact once read.
check "the gateway made its 16 pipes (32 fds) at start" "yes" \
	"$( [ "$p0" -ge 32 ] && echo yes || echo "no: $p0 pipe fds")"
rm -f "$T/stalled" "$T/stalled.counted"
r0=$(rchar)
world_host "$PY" "$T/client.py" stalled 70 $((8 * MiB)) "$T/stalled" >"$T/stalled.out" &
cpid=$!
wait_for_file "$T/stalled" || notok "the stalled clients started"
most=$p0
for _ in $(seq 20); do # while their downloads back up
	p=$(pipes)
	[ "$p" -gt "$most" ] && most=$p
	sleep 0.1
done
touch "$T/stalled.counted"
wait "$cpid"
r1=$(rchar)
check "while 70 tunnels stall, it holds no more pipes than it made" "$p0" "$most"
check "... all 70 downloads arrive intact" "70 of 70 intact" "$(cat "$T/stalled.out")"
check "... those past the 16 pipes by copy (the gateway read(2) some MiB)" "yes" \
	"$( [ $((r1 - r0)) -ge $MiB ] && echo yes || echo "no: $((r1 - r0)) bytes")"
r0=$(rchar)
out=$(world_host "$PY" "$T/client.py" source $n)
r1=$(rchar)
check "once they are closed, a new download is spliced again (their pipes are back)" "yes" \
	"$(awk -v n=$n '$1 == "got" && $2 == n && $3 == $5 { print "intact" }' <<<"$out" |
		grep -q intact && [ $((r1 - r0)) -lt $MiB ] && echo yes || echo "no: $((r1 - r0)) bytes")"

# Tunnels reset while their pipes hold bytes: each pipe is emptied (or
# closed) before another tunnel gets it, so no byte of one tunnel ever
# reaches another.
check "16 tunnels reset with bytes in their pipes, then 16 new downloads: each gets only its own bytes" \
	"16 flowing, 16 of 16 after them intact" \
	"$(world_host "$PY" "$T/client.py" abandon 16 $((8 * MiB)))"

check "the confined gateway is alive after it all (no SIGSYS)" "yes" \
	"$(kill -0 "$pid" 2>/dev/null && echo yes)"
check "... and said nothing bad (no BUG, no sanitizer's report)" "" \
	"$(grep -E 'BUG|Sanitizer|runtime error' "$T/gw.log")"
finish
