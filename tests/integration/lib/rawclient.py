# SPDX-License-Identifier: MIT
# Raw clients for the gateway's protocol-abuse tests. Each prints one line
# that the shell test compares. Usage: rawclient.py PROXY_HOST PROXY_PORT MODE [ARGS]
#   send HEX_OR_TEXT   send bytes (Python escapes), print the response's
#                      status line, or "closed" when the gateway closed
#   slow SECONDS       send half a head, then nothing; print what came back
#   sni HOST SNI       CONNECT HOST:443, then a TLS hello for SNI; print
#                      "handshake-ok" or "closed"
#   hold N SECONDS     open N connections, send nothing; print how many got
#                      an immediate 503
#   pipeline URL...    send one absolute-form GET per URL in a single write,
#                      then read responses until the connection closes;
#                      print their status codes
#   tunnel HOST PORT WAIT_FILE
#                      CONNECT HOST:PORT, one request through it; then wait
#                      (bounded) for WAIT_FILE to exist and send another on
#                      the same tunnel; print both status lines
#   idle HOST PORT SECONDS
#                      CONNECT, one request, SECONDS of silence, another
#                      request; print the first status and "closed" or the
#                      second status
import socket, ssl, sys, time

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def connect():
    s = socket.create_connection((host, port), timeout=10)
    return s


def read_response(s, limit=10):
    s.settimeout(limit)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data


if mode == "send":
    payload = sys.argv[4].encode().decode("unicode_escape").encode("latin-1")
    s = connect()
    s.sendall(payload)
    data = read_response(s)
    print(data.split(b"\r\n")[0].decode("latin-1") if data else "closed")
elif mode == "slow":
    s = connect()
    s.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nHost: allo")
    data = read_response(s, float(sys.argv[4]) + 5)
    print(data.split(b"\r\n")[0].decode("latin-1") if data else "closed")
elif mode == "sni":
    target, sni = sys.argv[4], sys.argv[5]
    s = connect()
    s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (target, target)).encode())
    head = read_response(s)
    if not head.startswith(b"HTTP/1.1 200"):
        print("no-tunnel " + head.split(b"\r\n")[0].decode("latin-1"))
        sys.exit(0)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET /through-tls HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni.encode())
        print("handshake-ok " + t.recv(100).split(b"\r\n")[0].decode("latin-1"))
    except (ssl.SSLError, ConnectionResetError, OSError):
        print("closed")
elif mode == "hold":
    n, secs = int(sys.argv[4]), float(sys.argv[5])
    socks, refused = [], 0
    for _ in range(n):
        socks.append(connect())
    time.sleep(0.5)
    for s in socks:
        s.setblocking(False)
        try:
            data = s.recv(100)
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
        except BlockingIOError:
            pass
    print(refused)
    time.sleep(secs)
elif mode in ("tunnel", "idle"):
    target, tport = sys.argv[4], sys.argv[5]
    s = connect()
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (target, tport, target, tport)).encode())
    head = read_response(s)
    if not head.startswith(b"HTTP/1.1 200"):
        print("no-tunnel " + head.split(b"\r\n")[0].decode("latin-1"))
        sys.exit(0)

    def one(path):
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, target)).encode())
        s.settimeout(10)
        r = b""
        try:
            while b"\r\n\r\n" not in r:
                chunk = s.recv(4096)
                if not chunk:
                    break
                r += chunk
            head, _, body = r.partition(b"\r\n\r\n")
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            while len(body) < n:
                chunk = s.recv(4096)
                if not chunk:
                    break
                body += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return r.split(b"\r\n")[0].decode("latin-1") if r else "closed"

    first = one("/tunnel-1")
    if mode == "tunnel":
        import os
        for _ in range(100):
            if os.path.exists(sys.argv[6]):
                break
            time.sleep(0.1)
    else:
        time.sleep(float(sys.argv[6]))
    try:
        second = one("/tunnel-2")
    except OSError:
        second = "closed"
    print(first + " | " + second)
elif mode == "pipeline":
    s = connect()
    reqs = b""
    for url in sys.argv[4:]:
        h = url.split("/")[2]
        reqs += ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (url, h)).encode()
    s.sendall(reqs)
    s.settimeout(10)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    codes = []
    while data.startswith(b"HTTP/1.1 "):
        head, _, rest = data.partition(b"\r\n\r\n")
        codes.append(head[9:12].decode())
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        data = rest[n:]
    print(" ".join(codes) if codes else "none")
