#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every byte a tunnel or a captured connection carries is decided: plain
# HTTP inside a CONNECT is decided request by request with its Host held
# to the CONNECT's host (so a denied site behind the same front end is not
# reached); a leading CRLF does not make a captured request opaque; bytes
# that are neither TLS nor HTTP are refused unless a rule says
# `protocol: tcp`; a ClientHello without SNI is refused; an Encrypted
# ClientHello is decided by its outer SNI; and a server-first protocol on a
# `protocol: tcp` port is decided at once, by the address's name, without
# the client's bytes.
#
# Usage: test-tunnel-http.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-tunnel-http.sh ip nft nsenter python3 dnsmasq openssl

. "$here/world.sh"
world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
world_services allowed.test=$N denied.test=$N banner.test=$N ||
	{ echo "not ok - services"; exit 1; }

# A server-first service (ssh-like) on :2222: it speaks first, then logs and
# echoes the first line the client sends.
cat >"$T/banner.py" <<'PY'
import socket, sys, threading
log = sys.argv[1]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[2], 2222)); srv.listen(16)
open(log + ".ready", "w").close()
def serve(c):
    c.settimeout(10)
    try:
        c.sendall(b"SSH-2.0-banner\r\n")
        line = c.makefile("rb").readline().strip()
        with open(log, "a") as f:
            f.write("got %s\n" % line.decode("latin-1"))
        c.sendall(b"echo " + line + b"\n")
    except OSError:
        pass
    c.close()
while True:  # ends when world_down kills it
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
world_bg "$WORLD_NET" python3 "$T/banner.py" "$T/banner.log" "$N"
wait_for_file "$T/banner.log.ready"
touch "$T/banner.log"

write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
  - host: banner.test
    ports: [2222]
    protocol: tcp
P

# The sandbox's side: each scenario prints "NAME: what came back". Raw
# sockets, so nothing normalises the bytes we mean to send.
cat >"$T/client.py" <<'PY'
import os, socket, ssl, struct, sys
from urllib.parse import urlsplit

proxy = urlsplit(os.environ["HTTP_PROXY"])

def recv_some(s, want=b"\r\n", limit=10):
    s.settimeout(limit)
    data = b""
    try:
        while want not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data

def first_line(data):
    return data.split(b"\r\n")[0].decode("latin-1") if data else "closed"

def response(s):
    """One whole response (Content-Length framed): its status line."""
    data = recv_some(s, b"\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        chunk = s.recv(4096)
        if not chunk:
            break
        body += chunk
    return first_line(head)

def tunnel(target):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
    ok = b""
    while not ok.endswith(b"\r\n\r\n"):  # one byte at a time: what follows is the tunnel's
        b = s.recv(1)
        assert b, ok
        ok += b
    assert ok.startswith(b"HTTP/1.1 200"), ok
    return s

def direct(name, port):
    addr = socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    return socket.create_connection(addr, timeout=10)

def hello(sni, ech=False):
    """A real ClientHello (Python's), with an ECH extension added."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(i, o, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    rec = o.read()
    if not ech:
        return rec
    body = rec[9:]
    p = 2 + 32
    p += 1 + body[p]
    p += 2 + struct.unpack(">H", body[p:p + 2])[0]
    p += 1 + body[p]
    exts = body[p + 2:]
    # encrypted_client_hello (0xfe0d), outer: kdf 1, aead 1, config 7,
    # a 32-byte enc and a payload: what a GREASE ECH looks like.
    payload = b"\x00" + struct.pack(">HHB", 1, 1, 7) + struct.pack(">H", 32) + os.urandom(32) \
        + struct.pack(">H", 144) + os.urandom(144)
    exts += struct.pack(">HH", 0xfe0d, len(payload)) + payload
    body = body[:p] + struct.pack(">H", len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs

def tls_answer(s, data):
    s.sendall(data)
    got = recv_some(s, b"\x16\x03\x03")
    return "server-hello" if got[:3] == b"\x16\x03\x03" else "closed"

def response_of(s, data):
    s.sendall(data)
    return response(s)

def req(path, host, pre=b""):
    return pre + b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode())

def run(name, fn):
    try:
        out = fn()
    except Exception as e:
        out = "error %s %s" % (type(e).__name__, e)
    print("%s: %s" % (name, out), flush=True)

def connect80_keepalive():
    s = tunnel("allowed.test:80")
    s.sendall(req("/t80-ok", "allowed.test"))
    a = response(s)
    s.sendall(req("/t80-denied", "denied.test"))
    return a + " | " + response(s)

def first_denied(target, path, pre=b""):
    s = tunnel(target)
    s.sendall(req(path, "denied.test", pre))
    return response(s)

def absolute_other():
    s = tunnel("allowed.test:80")
    s.sendall(b"GET http://denied.test/t80-abs HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    return response(s)

def opaque(s):
    s.sendall(b"\x00opaque\r\n\r\n")
    return first_line(recv_some(s))

def banner_tunnel():
    s = tunnel("banner.test:2222")
    b = recv_some(s)          # nothing sent yet: the server spoke first
    s.sendall(b"tunnel-line\n")
    return first_line(b) + " | " + recv_some(s, b"\n").decode().strip()

def banner_capture_silent():
    s = direct("banner.test", 2222)
    b = recv_some(s)
    s.sendall(b"silent-line\n")
    return first_line(b) + " | " + recv_some(s, b"\n").decode().strip()

def banner_capture_http_denied():
    # Bytes that would be decided by their Host if the gateway waited for
    # them: on a tcp port the address's name decides at once instead.
    s = direct("banner.test", 2222)
    s.sendall(b"GET /cap-tcp HTTP/1.1\r\nHost: denied.test\r\n\r\n")
    return first_line(recv_some(s))

run("connect80-keepalive", connect80_keepalive)
run("connect80-denied", lambda: first_denied("allowed.test:80", "/t80-first"))
run("connect443-denied", lambda: first_denied("allowed.test:443", "/t443-denied"))
run("connect80-crlf-denied", lambda: first_denied("allowed.test:80", "/t80-crlf", b"\r\n"))
run("connect80-absolute-other", absolute_other)
run("connect80-opaque", lambda: opaque(tunnel("allowed.test:80")))
run("connect-tcp-banner", banner_tunnel)
run("connect443-nosni", lambda: tls_answer(tunnel("allowed.test:443"), hello(None)))
run("connect443-ech-allowed", lambda: tls_answer(tunnel("allowed.test:443"), hello("allowed.test", True)))
run("connect443-ech-denied", lambda: tls_answer(tunnel("allowed.test:443"), hello("denied.test", True)))
run("capture-crlf-denied", lambda: response_of(direct("allowed.test", 80), req("/cap-crlf-denied", "denied.test", b"\r\n")))
run("capture-crlf-allowed", lambda: response_of(direct("allowed.test", 80), req("/cap-crlf-ok", "allowed.test", b"\r\n\r\n")))
run("capture80-opaque", lambda: opaque(direct("allowed.test", 80)))
run("capture443-nosni", lambda: tls_answer(direct("allowed.test", 443), hello(None)))
run("capture443-ech-allowed", lambda: tls_answer(direct("allowed.test", 443), hello("allowed.test", True)))
run("capture443-ech-denied", lambda: tls_answer(direct("allowed.test", 443), hello("denied.test", True)))
run("capture-tcp-silent", banner_capture_silent)
run("capture-tcp-http", banner_capture_http_denied)
PY

out=$(world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
	--audit "$T/audit.log" -- python3 "$T/client.py" 2>&1)
echo "# $out" | sed '2,$s/^/# /'
line() { grep "^$1: " <<<"$out" | head -n 1 | cut -d' ' -f2-; }
# The audit records holding every one of the given strings.
audit_match() {
	local lines s
	lines=$(cat "$T/audit.log" 2>/dev/null)
	for s; do lines=$(grep -F -- "$s" <<<"$lines"); done
	printf '%s' "$lines"
}
audit_has() { if [ -n "$(audit_match "${@:2}")" ]; then ok "$1"; else notok "$1: no audit record with: ${*:2}"; fi; }
origin_has() { grep -c -- " $1 host=" "$T/origin.log"; }

# ---- plain HTTP inside CONNECT ----
check "CONNECT allowed.test:80: an allowed request, then a denied Host on the same tunnel" \
	"HTTP/1.1 200 OK | HTTP/1.1 403 Forbidden" "$(line connect80-keepalive)"
check "... the allowed one reached the origin" "1" "$(origin_has /t80-ok)"
check "... the denied Host never did" "0" "$(origin_has /t80-denied)"
audit_has "... each request audited on its own" '"event":"http"' '"host":"denied.test","port":80,"path":"/t80-denied"' '"reason":"host-mismatch"'
check "CONNECT allowed.test:80, a first request with a denied Host: 403" "HTTP/1.1 403 Forbidden" \
	"$(line connect80-denied)"
check "... never reached the origin" "0" "$(origin_has /t80-first)"
check "CONNECT allowed.test:443, plain HTTP with a denied Host: 403" "HTTP/1.1 403 Forbidden" \
	"$(line connect443-denied)"
check "... never reached the origin" "0" "$(origin_has /t443-denied)"
check "CONNECT, a leading CRLF, then a denied Host: still decided (403)" "HTTP/1.1 403 Forbidden" \
	"$(line connect80-crlf-denied)"
check "... never reached the origin" "0" "$(origin_has /t80-crlf)"
check "CONNECT, an absolute-form target naming another host: 400" "HTTP/1.1 400 Bad Request" \
	"$(line connect80-absolute-other)"
check "... never reached the origin" "0" "$(grep -c 't80-abs' "$T/origin.log")"
check "CONNECT allowed.test:80, bytes that are neither HTTP nor TLS: closed" "closed" \
	"$(line connect80-opaque)"
audit_has "... audited as refused: not-http" '"event":"connect"' '"method":"CONNECT"' '"host":"allowed.test","port":80' '"decision":"deny"' '"reason":"not-http"'
check "CONNECT to a protocol: tcp port: the server speaks first, bytes flow" \
	"SSH-2.0-banner | echo tunnel-line" "$(line connect-tcp-banner)"

# ---- TLS without SNI, and ECH, through CONNECT ----
check "CONNECT allowed.test:443, a ClientHello without SNI: closed" "closed" "$(line connect443-nosni)"
audit_has "... audited: no-sni" '"event":"connect"' '"method":"CONNECT"' '"host":"allowed.test","port":443' '"reason":"no-sni"'
check "CONNECT allowed.test:443, an ECH hello whose outer SNI is allowed.test: the origin answers" \
	"server-hello" "$(line connect443-ech-allowed)"
audit_has "... audited as allowed passthrough" '"event":"connect"' '"method":"CONNECT"' '"host":"allowed.test","port":443' '"decision":"allow"' '"sni":"allowed.test"'
check "CONNECT allowed.test:443, an ECH hello whose outer SNI is denied.test: closed" "closed" \
	"$(line connect443-ech-denied)"
audit_has "... audited: sni-mismatch" '"sni":"denied.test"' '"reason":"sni-mismatch"'

# ---- capture ----
check "captured, a leading CRLF, then a denied Host: 403" "HTTP/1.1 403 Forbidden" \
	"$(line capture-crlf-denied)"
check "... never reached the origin" "0" "$(origin_has /cap-crlf-denied)"
audit_has "... audited with its Host" '"host":"denied.test","port":80,"path":"/cap-crlf-denied"' '"decision":"deny"'
check "captured, empty lines, then an allowed Host: 200" "HTTP/1.1 200 OK" "$(line capture-crlf-allowed)"
check "... and the origin served it" "1" "$(origin_has /cap-crlf-ok)"
check "captured :80, bytes that are neither HTTP nor TLS: closed" "closed" "$(line capture80-opaque)"
audit_has "... audited: not-http, decided by the address's name" '"method":null' '"host":"allowed.test","port":80' '"reason":"not-http"'
check "captured :443, a ClientHello without SNI: closed" "closed" "$(line capture443-nosni)"
audit_has "... audited: no-sni" '"method":null' '"host":"allowed.test","port":443' '"reason":"no-sni"'
check "captured :443, an ECH hello whose outer SNI is allowed: the origin answers" "server-hello" \
	"$(line capture443-ech-allowed)"
check "captured :443, an ECH hello whose outer SNI is denied: closed" "closed" \
	"$(line capture443-ech-denied)"
audit_has "... audited: denied by that SNI" '"host":"denied.test","port":443' '"decision":"deny"' '"sni":"denied.test"'

# ---- server-first on a protocol: tcp port, captured ----
check "captured, a silent client on a tcp port gets the server's banner" \
	"SSH-2.0-banner | echo silent-line" "$(line capture-tcp-silent)"
check "captured, HTTP naming denied.test on the tcp port is relayed as the address's name's bytes" \
	"SSH-2.0-banner" "$(line capture-tcp-http)"
check "... the server got them: decided before they were read" "1" \
	"$(grep -c '^got GET /cap-tcp HTTP/1.1' "$T/banner.log")"
audit_has "... audited as banner.test (the address's name), not the Host the bytes named" \
	'"host":"banner.test","port":2222' '"decision":"allow"'
check "... and no record names denied.test on that port" "" \
	"$(audit_match '"host":"denied.test","port":2222')"

check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
