#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw SOCKS5 client for test-socks.sh, run inside the sandbox: it speaks
to the gateway named by ALL_PROXY (socks5h://ADDR:PORT) and prints what it
got back, one word or line a test can compare.

  socksclient.py CASE [ARGS...]

Every socket has a timeout: nothing here waits forever."""
import os
import socket
import ssl
import struct
import sys
import time


def gateway():
    url = os.environ["ALL_PROXY"]
    assert url.startswith("socks5h://"), url
    host, port = url[len("socks5h://"):].rsplit(":", 1)
    return host, int(port)


def connect():
    s = socket.create_connection(gateway(), timeout=10)
    s.settimeout(10)
    return s


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            break
        b += k
    return b


def name_req(host, port, cmd=1):
    h = host.encode()
    return bytes([5, cmd, 0, 3, len(h)]) + h + struct.pack(">H", port)


def ipv4_req(addr, port, cmd=1):
    return bytes([5, cmd, 0, 1]) + socket.inet_aton(addr) + struct.pack(">H", port)


def ipv6_req(addr, port):
    return bytes([5, 1, 0, 4]) + socket.inet_pton(socket.AF_INET6, addr) + struct.pack(">H", port)


def reply_code(s):
    """The request's reply code, or 'closed' when the gateway closed."""
    r = recv_exact(s, 10)
    if len(r) < 2:
        return "closed"
    return "rep=%d" % r[1]


def handshake(s, req):
    s.sendall(b"\x05\x01\x00")
    m = recv_exact(s, 2)
    if m != b"\x05\x00":
        return "method=%r" % m
    s.sendall(req)
    return reply_code(s)


def http_get(s, host, path):
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode())
    return read_all(s)


def read_all(s):
    data = b""
    try:
        while True:
            k = s.recv(65536)
            if not k:
                break
            data += k
    except (socket.timeout, ConnectionError):
        pass
    return data.decode(errors="replace")


def status_line(data):
    return data.split("\r\n", 1)[0] if data else "closed"


def main():
    case, args = sys.argv[1], sys.argv[2:]
    s = connect()
    if case == "request":  # KIND ADDR PORT: the reply code
        kind, addr, port = args[0], args[1], int(args[2])
        req = {"name": name_req, "ipv4": ipv4_req, "ipv6": ipv6_req}[kind](addr, port)
        print(handshake(s, req))
    elif case == "raw":  # HEX: a request of any bytes after a good greeting
        print(handshake(s, bytes.fromhex(args[0])))
    elif case == "cmd":  # N: a command other than CONNECT
        print(handshake(s, name_req("allowed.test", 80, int(args[0]))))
    elif case == "methods":  # HEX: a greeting offering these methods
        m = bytes.fromhex(args[0])
        s.sendall(bytes([5, len(m)]) + m)
        r = recv_exact(s, 2)
        rest = s.recv(1)
        print("method=%s%s" % (r.hex(), " closed" if not rest else ""))
    elif case == "get":  # HOST PORT HOSTHEADER PATH: plain HTTP in the tunnel
        r = handshake(s, name_req(args[0], int(args[1])))
        print(r if r != "rep=0" else status_line(http_get(s, args[2], args[3])))
    elif case == "fragmented":  # HOST PATH: greeting and request byte by byte
        for b in b"\x05\x01\x00":
            s.sendall(bytes([b]))
            time.sleep(0.05)
        assert recv_exact(s, 2) == b"\x05\x00"
        for b in name_req(args[0], 80):
            s.sendall(bytes([b]))
            time.sleep(0.02)
        r = reply_code(s)
        print(r if r != "rep=0" else status_line(http_get(s, args[0], args[1])))
    elif case == "oneshot":  # HOST PATH: greeting, request and GET in one write
        get = "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (args[1], args[0])
        s.sendall(b"\x05\x01\x00" + name_req(args[0], 80) + get.encode())
        assert recv_exact(s, 2) == b"\x05\x00"
        r = reply_code(s)
        print(r if r != "rep=0" else status_line(read_all(s)))
    elif case == "tls":  # HOST SNI PATH: CONNECT HOST:443, TLS naming SNI
        r = handshake(s, name_req(args[0], 443))
        if r != "rep=0":
            print(r)
            return
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        try:
            t = ctx.wrap_socket(s, server_hostname=args[1])
            print(status_line(http_get(t, args[1], args[2])))
        except (ssl.SSLError, ConnectionError, OSError) as e:
            print("tls-failed")
    elif case == "partial":  # half a greeting, then nothing: what comes back
        s.sendall(b"\x05\x02\x00")
        s.settimeout(float(args[0]))
        try:
            print("got=%r" % s.recv(16))
        except socket.timeout:
            print("waiting")
        except ConnectionError:
            print("reset")
    elif case == "partial-request":  # a greeting, then half a request: what comes back
        s.sendall(b"\x05\x01\x00")
        assert recv_exact(s, 2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x03\x0callow")
        print(reply_code(s))
    elif case == "after-http":  # HOST PATH ADDR: a proxy GET, then SOCKS5 to ADDR pipelined
        get = "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args[0], args[1], args[0])
        s.sendall(get.encode() + b"\x05\x01\x00" + ipv4_req(args[2], 80) +
                  b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        print(" ".join(l.split(" ", 2)[1] for l in read_all(s).split("\r\n")
                       if l.startswith("HTTP/1.1 ")))
    elif case == "in-connect":  # HOST PORT ADDR: SOCKS5 to ADDR inside CONNECT HOST:PORT
        s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (args[0], args[1], args[0],
                                                                          args[1])).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            k = s.recv(1)
            if not k:
                break
            head += k
        s.sendall(b"\x05\x01\x00" + ipv4_req(args[2], 80) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        got = read_all(s)
        print("%s then %s" % (status_line(head.decode(errors="replace")), got[:12] or "closed"))
    elif case == "twice":  # HOST ADDR: a second SOCKS5 request (to ADDR) after the first
        s.sendall(b"\x05\x01\x00" + name_req(args[0], 80) + ipv4_req(args[1], 80) +
                  b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert recv_exact(s, 2) == b"\x05\x00"
        r = reply_code(s)
        print("%s then %s" % (r, read_all(s)[:12] or "closed"))
    elif case == "methods255":  # HOST PATH: 255 methods, no-auth the last
        s.sendall(bytes([5, 255]) + bytes(range(1, 255)) + b"\x00")
        r = recv_exact(s, 2)
        if r != b"\x05\x00":
            print("method=%s" % r.hex())
            return
        s.sendall(name_req(args[0], 80))
        r = reply_code(s)
        print(r if r != "rep=0" else status_line(http_get(s, args[0], args[1])))
    elif case == "direct":  # ADDR PORT TARGET: SOCKS5 to TARGET sent straight to ADDR:PORT (captured)
        s.close()
        s = socket.create_connection((args[0], int(args[1])), timeout=10)
        s.settimeout(10)
        s.sendall(b"\x05\x01\x00" + ipv4_req(args[2], 80) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        got = read_all(s)
        print(status_line(got) if got else "closed")
    else:
        raise SystemExit("unknown case " + case)


main()
