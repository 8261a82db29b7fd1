# SPDX-License-Identifier: MIT
# A raw-bytes origin for framing tests: it logs every byte each connection
# brings, and reads requests the lenient way a careless origin would, so a
# request smuggled past the gateway shows up as a second request.
#
# Usage: raw-origin.py LOGDIR ADDR LISTENER... [--cert CERT --key KEY]
#   LISTENER is PORT:MODE or PORT:MODE:tls (TLS needs --cert and --key)
#   MODE full    read each request's head and body, answer 200 with
#                "raw-origin ok <sha256 of the body>", keep the connection
#                alive and read the next request
#        chunky  like full, but the answer is chunked the way an origin
#                may write it: a chunk extension, leading zeros, a trailer
#        early   answer 403 ("early") as soon as the head is in, without
#                reading the body; keep the connection alive and go on
#                reading (every further byte is logged, and parsed as the
#                next request the way a careless origin would)
#        drop2   like full, but the second request on a connection is
#                logged ("dropped") and the connection closed unanswered:
#                a kept-alive connection its origin closed under a request
#        trail   like full, but each answer is followed, in the same write,
#                by a second, unasked-for answer ("EVIL")
#        chatty  like full, then 0.2 s after each answer an unasked-for
#                answer ("EVIL") on the idle connection, logged ("chatty")
#                once sent
#        headbody like full, but a HEAD is answered with a body ("EVIL")
#        ntlm    like full, but every answer asks for an NTLM login
#                ("WWW-Authenticate: NTLM"), which binds to the connection
#        barelf  like full, but the answer's head ends in a bare LF
#                ("\r\n\n"), then "HIDDEN" and "\r\n\r\n": llhttp ends the
#                head at the bare LF, a search for "\r\n\r\n" after HIDDEN
#        hang    read a request, log it, never answer
#        slow    like full, but each answer 0.3 s late
#        cl0     like echo, but a request for /static* is answered without
#                reading its body (Content-Length ignored, the "CL.0" flaw of
#                some static handlers): the body is read as the next request;
#                one for /secret* is answered 0.3 s late (a slow handler)
#        echo    like full, but the answer says which request it answers:
#                "echo <target> <sha256 of the body>"
#        size    like full, but the answer to /size/N is N bytes of "x"
#        stream  like full, but the answer to /stream/N comes as a model
#                streams one: chunked, its head and a first event at once,
#                the rest N ms later
# Logs, in LOGDIR:
#   conn-N.bin     every byte connection N received, as it came
#   requests.log   one line per request read:
#                  "conn=N port=P METHOD TARGET body=LEN sha256=HEX"
#                  (a line with bad=... when the bytes were no request)
#   ready          written once every listener is up
# The reading is lenient on purpose (bare LF ends lines, any two bytes end
# chunk data, chunk extensions and whitespace are skipped): it is the
# origin a smuggled request would fool. A test passes when requests.log has
# only the requests the gateway decided, and conn-N.bin has none of the
# client's framing bytes (the gateway frames bodies itself).
import hashlib, os, socket, ssl, sys, threading

logdir, addr = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
cert = key = None
listeners = []
i = 0
while i < len(args):
    if args[i] == "--cert":
        cert = args[i + 1]
        i += 2
    elif args[i] == "--key":
        key = args[i + 1]
        i += 2
    else:
        listeners.append(args[i].split(":"))
        i += 1

lock = threading.Lock()
counter = [0]


def log_request(line):
    with lock:
        with open(os.path.join(logdir, "requests.log"), "a") as f:
            f.write(line + "\n")


class Conn:
    def __init__(self, sock, n, port):
        self.sock, self.n, self.port = sock, n, port
        self.buf = b""
        self.served = 0
        self.log = open(os.path.join(logdir, "conn-%d.bin" % n), "ab", buffering=0)

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.log.write(data)
        self.buf += data

    def line(self):
        while b"\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.rstrip(b"\r")

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        first = self.line()
        while first == b"":
            first = self.line()
        headers = []
        while True:
            ln = self.line()
            if ln == b"":
                break
            headers.append(ln)
        return first, headers

    def body(self, headers):
        te = cl = None
        for h in headers:
            name, _, value = h.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding":
                te = value.strip().lower()
            elif name == b"content-length":
                cl = value.strip()
        if te is not None and b"chunked" in te:
            out = b""
            while True:
                size = int(self.line().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.line() != b"":
                        pass
                    return out
                out += self.take(size)
                self.take(2)  # lenient: any two bytes end the chunk
        if cl is not None:
            return self.take(int(cl.split(b",")[0]))
        return b""

    def answer(self, status, body):
        self.sock.sendall(
            b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body)
        )

    def serve(self, mode):
        while True:
            first, headers = self.head()
            parts = first.split(b" ")
            if len(parts) < 3:
                log_request("conn=%d port=%s bad=%r" % (self.n, self.port, first[:80]))
                return
            method, target = parts[0].decode("latin1"), parts[1].decode("latin1")
            if mode == "hang":
                log_request("conn=%d port=%s %s %s hang" % (self.n, self.port, method, target))
                threading.Event().wait()
            if mode == "early":
                log_request("conn=%d port=%s %s %s early" % (self.n, self.port, method, target))
                self.answer(403, b"early")
                continue
            try:
                body = b"" if mode == "cl0" and target.startswith("/static") else self.body(headers)
            except ValueError:
                log_request("conn=%d port=%s %s %s bad=framing" % (self.n, self.port, method, target))
                return
            digest = hashlib.sha256(body).hexdigest()
            self.served += 1
            if mode == "drop2" and self.served == 2:
                log_request("conn=%d port=%s %s %s dropped" % (self.n, self.port, method, target))
                return
            log_request(
                "conn=%d port=%s %s %s body=%d sha256=%s"
                % (self.n, self.port, method, target, len(body), digest)
            )
            if mode == "slow":
                threading.Event().wait(0.3)
            evil = b"HTTP/1.1 200 X\r\nContent-Length: 4\r\n\r\nEVIL"
            ok = b"raw-origin ok " + digest.encode()
            if mode == "trail":
                self.sock.sendall(b"HTTP/1.1 200 X\r\nContent-Length: %d\r\n\r\n%s%s" % (len(ok), ok, evil))
                continue
            if mode == "headbody" and method == "HEAD":
                self.sock.sendall(b"HTTP/1.1 200 X\r\nContent-Length: 4\r\n\r\nEVIL")
                continue
            if mode == "ntlm":
                self.sock.sendall(b"HTTP/1.1 200 X\r\nWWW-Authenticate: NTLM\r\nContent-Length: %d\r\n\r\n%s"
                                  % (len(ok), ok))
                continue
            if mode == "barelf":
                self.sock.sendall(b"HTTP/1.1 200 X\r\nContent-Length: 0\r\n\nHIDDEN\r\n\r\n")
                continue
            if mode == "chatty":
                self.answer(200, ok)
                threading.Event().wait(0.2)
                self.sock.sendall(evil)
                log_request("conn=%d port=%s chatty" % (self.n, self.port))
                continue
            if mode == "chunky":
                self.sock.sendall(
                    b"HTTP/1.1 200 X\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"0005;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
                )
                continue
            if mode == "cl0":
                if target.startswith("/secret"):
                    threading.Event().wait(0.3)
                self.answer(200, b"echo %s %s" % (target.encode("latin1"), digest.encode()))
                continue
            if mode == "echo":
                self.answer(200, b"echo %s %s" % (target.encode("latin1"), digest.encode()))
                continue
            if mode == "size":
                self.answer(200, b"x" * int(target.rsplit("/", 1)[1]))
                continue
            if mode == "stream":
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\nd\r\ndata: first\n\n\r\n")
                threading.Event().wait(int(target.rsplit("/", 1)[1]) / 1000)
                self.sock.sendall(b"c\r\ndata: rest\n\n\r\n0\r\n\r\n")
                continue
            self.answer(200, b"raw-origin ok " + digest.encode())


def handle(sock, port, mode):
    with lock:
        counter[0] += 1
        n = counter[0]
    c = Conn(sock, n, port)
    try:
        c.serve(mode)
    except (EOFError, OSError, ssl.SSLError):
        pass
    finally:
        c.log.close()
        try:
            sock.close()
        except OSError:
            pass


def listen(port, mode, tls):
    ctx = None
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(64)

    def loop():
        while True:
            s, _ = ls.accept()
            if ctx:
                try:
                    s = ctx.wrap_socket(s, server_side=True)
                except (ssl.SSLError, OSError):
                    s.close()
                    continue
            threading.Thread(target=handle, args=(s, port, mode), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


for spec in listeners:
    listen(spec[0], spec[1], len(spec) > 2 and spec[2] == "tls")
open(os.path.join(logdir, "requests.log"), "a").close()
open(os.path.join(logdir, "ready"), "w").close()
threading.Event().wait()
