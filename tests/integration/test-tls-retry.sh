#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Domain fronting through a TLS 1.3 HelloRetryRequest. The gateway holds a
# passthrough tunnel's ClientHello to the CONNECT's host (sni-mismatch) and
# decides a captured one by its SNI, then relays the rest opaque. But a
# server that answers the first hello with a HelloRetryRequest (RFC 8446
# 4.1.4: here because the hello offers x25519 with no key share for it)
# reads a second ClientHello, in plain text too, and OpenSSL takes the
# server name from that second hello: its servername callback, which is
# where a front end picks the virtual host (the certificate, the site),
# runs again with the new name. The agent names an allowed host first and
# a denied one second. The evidence is the origin's own log of the server
# names its callback saw (lib: a stock Python ssl server, sni_callback),
# which must never hold a denied name. Nor may the agent begin a second
# hello behind the first, before the server has asked for one, and have
# the gateway check only its tail (hello_then_relay holds what follows a
# checked hello till the server answers).
#
# Usage: test-tls-retry.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-tls-retry.sh ip nft nsenter python3 dnsmasq openssl

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N denied.test=$N || { echo "not ok - services"; exit 1; }

# The front end: one address, any server name; it logs each name its
# servername callback is given (once per ClientHello it reads).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/fe.key" -out "$T/fe.crt" -days 2 \
	-subj /CN=allowed.test >/dev/null 2>&1
cat >"$T/frontend.py" <<'PY'
import socket, ssl, sys, threading
log, addr, cert, key = sys.argv[1:5]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
def on_name(sslobj, name, c):
    with open(log, "a") as f:
        f.write("sni %s\n" % name)
ctx.sni_callback = on_name
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((addr, 8443)); srv.listen(16)
open(log + ".ready", "w").close()
def serve(c):
    c.settimeout(5)
    try:
        ctx.wrap_socket(c, server_side=True).close()
    except (OSError, ssl.SSLError):
        pass
    c.close()
while True:  # ends when world_down kills it
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
world_bg "$WORLD_NET" python3 "$T/frontend.py" "$T/fe.log" "$N" "$T/fe.crt" "$T/fe.key"
wait_for_file "$T/fe.log.ready"
touch "$T/fe.log"

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [8443]
P

# The agent: hand-made ClientHellos (TLS 1.3, x25519 offered), the first
# with no key share so that the server must ask again.
cat >"$T/client.py" <<'PY'
import os, socket, struct, time
from urllib.parse import urlsplit
proxy = urlsplit(os.environ["HTTP_PROXY"])
HRR = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")

def ext(t, data):
    return struct.pack(">HH", t, len(data)) + data

def hello(sni, share, sid, last=b""):
    name = sni.encode()
    sn = struct.pack(">BH", 0, len(name)) + name
    sig = bytes.fromhex("080404030805080604010503")
    ks = struct.pack(">HH", 0x1d, 32) + os.urandom(32) if share else b""
    exts = ext(0, struct.pack(">H", len(sn)) + sn) + ext(10, b"\x00\x02\x00\x1d") \
        + ext(13, struct.pack(">H", len(sig)) + sig) + ext(43, b"\x02\x03\x04") \
        + ext(51, struct.pack(">H", len(ks)) + ks) + ext(45, b"\x01\x01")
    if last:  # an extension no server knows, holding these bytes, at the very end
        exts += ext(0x7777, last)
    body = b"\x03\x03" + os.urandom(32) + b"\x20" + sid + b"\x00\x02\x13\x01\x01\x00"
    body += struct.pack(">H", len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs

def record(s):
    data = b""
    while len(data) < 5 or len(data) < 5 + struct.unpack(">H", data[3:5])[0]:
        c = s.recv(4096)
        if not c:
            return None
        data += c
    return data

def exchange(s, first_flight, then):
    # Send first_flight; if the server asks for a retry, send `then`, and
    # say what the server did next.
    s.sendall(first_flight)
    r = record(s)
    if not r:
        return "closed"
    if r[0] != 0x16 or r[5] != 2 or r[11:43] != HRR:
        return "no retry"
    if then:
        s.sendall(then)
    for _ in range(4):
        r = record(s)
        if not r:
            return "retry, then closed"
        if r[0] == 0x16 and r[5] == 2:
            return "retry, then server hello"
    return "retry, then other"

def retry(s, first, second):
    sid = os.urandom(32)
    # (the change_cipher_spec a TLS 1.3 client may send, then hello 2)
    return exchange(s, hello(first, False, sid),
                    b"\x14\x03\x03\x00\x01\x01" + hello(second, True, sid))

def split(s, first, second):
    # Hello 2 (naming `second`) begun behind hello 1 in one write, cut
    # where its last extension's data begins; that data, sent after the
    # retry request, is on its own a whole hello naming `first`. A
    # gateway that sent hello 1's trailing bytes on and peeked afresh
    # for the second hello would pass that tail as a hello for `first`,
    # while the server read hello 2, and took its name.
    sid = os.urandom(32)
    tail = hello(first, True, sid)
    whole = hello(second, True, sid, tail)
    return exchange(s, hello(first, False, sid) + whole[:-len(tail)], tail)

def pipelined(s, first, second):
    # Hello 2 whole behind hello 1, before any retry was asked for: the
    # server must not read it while the gateway has checked only hello 1.
    sid = os.urandom(32)
    return exchange(s, hello(first, False, sid) + b"\x14\x03\x03\x00\x01\x01" +
                    hello(second, True, sid), b"")

def held(s, first):
    # A hello the server needs no retry for, a ChangeCipherSpec behind it
    # in the same write: the CCS waits for the server's answer, then must
    # go on (the audit's bytes_up says whether it did).
    h = hello(first, True, os.urandom(32))
    s.sendall(h + b"\x14\x03\x03\x00\x01\x01")
    r = record(s)
    out = "closed" if not r else "server hello" if r[0] == 0x16 and r[5] == 2 and r[11:43] != HRR else "other"
    time.sleep(0.2)  # what was held goes up with the relay's start
    s.close()
    return "%s %d" % (out, len(h))

def tunnel(target):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
    ok = b""
    while not ok.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        assert b, ok
        ok += b
    assert ok.startswith(b"HTTP/1.1 200"), ok
    return s

def direct(name, port):
    addr = socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    return socket.create_connection(addr, timeout=10)

def run(name, fn):
    try:
        out = fn()
    except Exception as e:
        out = "error %s %s" % (type(e).__name__, e)
    print("%s: %s" % (name, out), flush=True)

run("tunnel-plain-denied", lambda: retry(tunnel("allowed.test:8443"), "denied.test", "denied.test"))
run("tunnel-retry-same", lambda: retry(tunnel("allowed.test:8443"), "allowed.test", "allowed.test"))
run("tunnel-retry-other", lambda: retry(tunnel("allowed.test:8443"), "allowed.test", "t.denied.test"))
run("capture-retry-other", lambda: retry(direct("allowed.test", 8443), "allowed.test", "c.denied.test"))
run("tunnel-split", lambda: split(tunnel("allowed.test:8443"), "allowed.test", "s.denied.test"))
run("capture-split", lambda: split(direct("allowed.test", 8443), "allowed.test", "d.denied.test"))
run("tunnel-held", lambda: held(tunnel("allowed.test:8443"), "allowed.test"))
run("tunnel-pipelined", lambda: pipelined(tunnel("allowed.test:8443"), "allowed.test", "p.denied.test"))
PY

out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- python3 "$T/client.py" 2>&1)
echo "# $out" | sed '2,$s/^/# /'
line() { grep "^$1: " <<<"$out" | head -n 1 | cut -d' ' -f2-; }
seen() { grep -c "^sni $1\$" "$T/fe.log"; }

check "CONNECT allowed.test, a first hello naming denied.test: closed" "closed" \
	"$(line tunnel-plain-denied)"
check "... the front end never read that name" 0 "$(seen denied.test)"
check "CONNECT allowed.test, a retry that names allowed.test again: answered" \
	"retry, then server hello" "$(line tunnel-retry-same)"
check "CONNECT allowed.test, a retried hello naming t.denied.test: not answered" \
	"retry, then closed" "$(line tunnel-retry-other)"
check "... the front end never read t.denied.test" 0 "$(seen t.denied.test)"
check "captured, a retried hello naming c.denied.test: not answered" \
	"retry, then closed" "$(line capture-retry-other)"
check "... the front end never read c.denied.test" 0 "$(seen c.denied.test)"
# Hello 2 begun behind hello 1: what follows a checked hello is held till
# the server answers, and the second hello is checked from where the
# server reads it.
check "CONNECT allowed.test, hello 2 (s.denied.test) begun behind hello 1, ended by a hello naming allowed.test: not answered" \
	"retry, then closed" "$(line tunnel-split)"
check "... the front end never read s.denied.test" 0 "$(seen s.denied.test)"
check "captured, the same with d.denied.test: not answered" "retry, then closed" "$(line capture-split)"
check "... the front end never read d.denied.test" 0 "$(seen d.denied.test)"
check "CONNECT allowed.test, hello 2 (p.denied.test) whole behind hello 1: the front end never read it" \
	0 "$(seen p.denied.test)"
check "... and the retry it asked for is answered: closed when hello 2 is checked" "retry, then closed" \
	"$(line tunnel-pipelined)"
held=$(line tunnel-held)
check "CONNECT allowed.test, a hello needing no retry, a CCS behind it: answered" "server hello" \
	"${held% *}"
check "... and the CCS held till then went on (bytes_up: the hello and its 6 bytes)" 1 \
	"$(audit_count '"host":"allowed.test"' "\"bytes_up\":$((${held##* } + 6)),")"
check "the canary saw no packet" 0 "$(world_canary_count)"

finish
