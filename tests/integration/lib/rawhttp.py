# SPDX-License-Identifier: MIT
# rawhttp.py: HTTP/1.1 read byte by byte off a socket, for the tests' scripted
# origins, which must see exactly what the gateway sent (no library that
# normalises a request on the way in). Imported by lib/scrub-origin.py and by
# the origins that test-inspect-attacks.sh and test-inspect-lifecycle.sh write
# out (sys.path from SL_TEST_LIB, which lib/checks.sh exports).
import socket
import ssl
import threading


class Conn:
    """One connection's bytes, taken as lines, counts and requests.

    Every read that finds the peer gone raises EOFError, and so does a line
    longer than max_line: a scripted origin never waits forever on a gateway
    that stopped sending, it fails where the test can see it."""

    def __init__(self, sock, max_line=1 << 20):
        self.s, self.buf, self.max_line = sock, b"", max_line

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > self.max_line:
                raise EOFError
            self.fill()
        l, _, self.buf = self.buf.partition(b"\r\n")
        return l

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def drain(self, n):
        """Reads n bytes and keeps none of them (a large body)."""
        got = min(n, len(self.buf))
        self.buf = self.buf[got:]
        while got < n:
            d = self.s.recv(min(1 << 20, n - got))
            if not d:
                raise EOFError
            got += len(d)
        return got

    def request(self):
        """(method, target, headers, get, body) of the next request.

        Empty lines before it are skipped, as RFC 9112 2.2 lets a server do.
        A field's value loses the SP and HTAB around it (RFC 9110 5.5), as
        every mainstream server's does, and nothing else. get(name) is the
        first value of a lower-case name, or None. The body is read by its
        chunks (extensions and trailers dropped) or its Content-Length."""
        while True:
            rl = self.line()
            if rl:
                break
        method, target, _ = rl.decode("latin-1").split(" ", 2)
        hdrs = []
        while True:
            l = self.line()
            if not l:
                break
            n, _, v = l.decode("latin-1").partition(":")
            hdrs.append((n.strip(), v.strip(" \t")))

        def get(name):
            return next((v for n, v in hdrs if n.lower() == name), None)

        body = b""
        if "chunked" in (get("transfer-encoding") or "").lower():
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line():
                        pass
                    break
                body += self.take(size)
                self.line()
        elif get("content-length"):
            body = self.take(int(get("content-length")))
        return method, target, hdrs, get, body


def serve_forever(addr, port, ctx, handle, timeout=15):
    """Accept on addr:port for ever, each connection in a thread of its
    own: TLS ended with ctx (None: plain, no timeout set), then
    handle(sock). A connection whose handshake fails, or whose handler
    raises OSError, is dropped; the next is taken all the same."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(128)
    while True:
        s, _ = ls.accept()

        def run(s=s):
            try:
                if ctx:
                    s.settimeout(timeout)
                    s = ctx.wrap_socket(s, server_side=True)
                handle(s)
            except (OSError, ssl.SSLError):
                pass
        threading.Thread(target=run, daemon=True).start()
