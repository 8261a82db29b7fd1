# SPDX-License-Identifier: MIT
# A scripted raw conversation with the gateway, for framing tests: every
# byte as the test wrote it (no client library to normalise it away).
# Usage: rawconv.py HOST PORT STEP...
#   send:BYTES         send BYTES (Python escapes: \r \n \x00)
#   tls:HOST:PORT      CONNECT HOST:PORT, then TLS inside (trusting the CA
#                      file $RAWCONV_CA); later steps speak inside it
#   big:N[:PREFIX]     send PREFIX, then a POST head for http://raw.test/big
#                      with an N-byte body (bytes 0..255 repeating), all
#                      in one write; print the body's sha256 (inside TLS the
#                      target is origin-form, /big)
#   drip:BYTES:MS      send BYTES one at a time, MS milliseconds apart,
#                      stopping early if the gateway answers or closes
#   read               read one response (head, and body by its
#                      Content-Length); print "STATUS BODY"
#   raw                read a response with a chunked body, to its last
#                      chunk; print its body's bytes as Python escapes
#   rest               read until the gateway closes; print "closed",
#                      or "open" if it is still open after 5 s
# Each step's output is one word or line, joined with " | ".
import hashlib, os, socket, ssl, sys, time

host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port), timeout=10)
buf = b""
out = []
in_tls = False


def unescape(t):
    return t.encode("latin1").decode("unicode_escape").encode("latin1")


def fill(timeout):
    global buf
    s.settimeout(timeout)
    d = s.recv(65536)
    if not d:
        raise EOFError
    buf += d


def read_response():
    global buf
    try:
        while b"\r\n\r\n" not in buf:
            fill(10)
    except (EOFError, OSError):
        return "closed"
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = lines[0].split(b" ")[1].decode()
    n = 0
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    try:
        while len(buf) < n:
            fill(10)
    except (EOFError, OSError):
        return status + " (cut)"
    body, buf = buf[:n], buf[n:]
    return (status + " " + body.decode("latin1").strip()).strip()


for step in sys.argv[3:]:
    kind, _, arg = step.partition(":")
    if kind == "send":
        try:
            s.sendall(unescape(arg))
        except OSError:
            pass  # closed: the next step says so
    elif kind == "tls":
        h, _, p = arg.rpartition(":")
        s.sendall(b"CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % ((h.encode(), p.encode()) * 2))
        while b"\r\n\r\n" not in buf:
            fill(10)
        head, buf = buf.split(b"\r\n\r\n", 1)
        ctx = ssl.create_default_context(cafile=os.environ["RAWCONV_CA"])
        s = ctx.wrap_socket(s, server_hostname=h)
        in_tls = True
    elif kind == "big":
        n, _, prefix = arg.partition(":")
        n = int(n)
        body = bytes(i & 0xFF for i in range(n))
        target = b"/big" if in_tls else b"http://raw.test/big"
        s.sendall(
            unescape(prefix)
            + b"POST %s HTTP/1.1\r\nHost: raw.test\r\nContent-Length: %d\r\n\r\n" % (target, n)
            + body
        )
        out.append(hashlib.sha256(body).hexdigest())
    elif kind == "drip":
        data, _, ms = arg.rpartition(":")
        for b in unescape(data):
            try:
                s.sendall(bytes([b]))
            except OSError:
                break
            s.settimeout(int(ms) / 1000)
            try:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
                break
            except socket.timeout:
                pass
            except OSError:
                break
    elif kind == "read":
        out.append(read_response())
    elif kind == "raw":
        try:
            while b"\r\n\r\n" not in buf or b"\r\n0\r\n\r\n" not in buf.split(b"\r\n\r\n", 1)[1]:
                fill(5)
        except (EOFError, OSError):
            pass
        body = buf.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in buf else b""
        out.append(body.decode("latin1").encode("unicode_escape").decode())
    elif kind == "rest":
        try:
            while True:
                fill(5)
        except EOFError:
            out.append("closed")
        except socket.timeout:
            out.append("open")
        except OSError:
            out.append("closed")
print(" | ".join(out))
