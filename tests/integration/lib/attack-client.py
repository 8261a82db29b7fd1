# SPDX-License-Identifier: MIT
# The sandbox's side of test-review3-attacks.sh: N random sequences of
# client bytes and timings against the proxy at GW (HOST:PORT), each ending
# at a random point (a close, a reset, a timeout left to fire), with the
# hostile origin's misbehaviours. Prints how many scenarios ran; a gateway
# that dies shows as refused connections (counted, printed as "refused N").
import random, socket, ssl, struct, sys, threading, time

gw_host, gw_port = sys.argv[1].rsplit(":", 1)
gw_port = int(gw_port)
n_total = int(sys.argv[2])
ca = sys.argv[3]
seed = int(sys.argv[4])
refused = 0
ran = 0
lock = threading.Lock()

def rst(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()

def end(s, r):
    k = r.randrange(4)
    if k == 0:
        s.close()
    elif k == 1:
        rst(s)
    elif k == 2:
        try:
            s.shutdown(socket.SHUT_WR)
            s.settimeout(2)
            while s.recv(65536):
                pass
        except OSError:
            pass
        s.close()
    else:
        try:  # read a little, then close while the gateway may still write
            s.settimeout(r.choice((0.05, 0.5, 1.5)))
            s.recv(r.choice((1, 100, 65536)))
        except OSError:
            pass
        s.close()

def req(r, host, plain=True):
    b = r.randrange(17)
    path = "/b%d/%d" % (b, r.randrange(1000))
    m = r.choice(("GET", "GET", "POST", "HEAD", "PUT"))
    target = ("http://%s%s" % (host, path)) if plain else path
    h = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (m, target, host)
    body = b""
    kind = r.randrange(6)
    if m in ("POST", "PUT"):
        if kind == 0:
            body = b"abc"
            h += "Content-Length: 3\r\n"
        elif kind == 1:
            body = b"3\r\nabc\r\n0\r\n\r\n"
            h += "Transfer-Encoding: chunked\r\n"
        elif kind == 2:
            body = b"zz\r\nbad\r\n"
            h += "Transfer-Encoding: chunked\r\n"
        elif kind == 3:
            body = b"abc"
            h += "Content-Length: 100000\r\nExpect: 100-continue\r\n"
        else:
            h += "Content-Length: 0\r\n"
    if r.random() < 0.3:
        h += "Connection: close\r\n"
    return (h + "\r\n").encode() + body

def send_chunks(s, data, r):
    if r.random() < 0.5:
        s.sendall(data)
        return
    i = 0
    while i < len(data):
        k = r.randrange(1, 40)
        s.sendall(data[i:i + k])
        i += k
        if r.random() < 0.1:
            time.sleep(r.choice((0.01, 0.2)))

HOSTS_PLAIN = ("evil.test:8080", "evil.test:8080", "denied.test:80", "evil.test:8443",
               "203.0.113.2:8080", "[2001:db8::2]:8080", "insp.test:8080", "nosuch.test:80",
               "evil6.test:8080")

def scenario(i):
    global refused, ran
    r = random.Random(seed * 100003 + i)
    try:
        s = socket.create_connection((gw_host, gw_port), timeout=3)
    except OSError:
        with lock:
            refused += 1
        return
    try:
        kind = r.randrange(9)
        if kind <= 2:          # plain requests, pipelined or not
            n = r.randrange(1, 4)
            data = b"".join(req(r, r.choice(HOSTS_PLAIN)) for _ in range(n))
            if r.random() < 0.3:
                data = data[: r.randrange(len(data) + 1)]
            send_chunks(s, data, r)
        elif kind == 3:        # CONNECT to an opaque-relayed port, then anything
            host = r.choice(("evil.test:8443", "evil.test:8080", "denied.test:443", "203.0.113.2:8443"))
            data = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, host)).encode()
            after = r.choice((b"", b"\x16\x03\x01\x00\x05hello", b"GET /b16/x HTTP/1.1\r\nHost: evil.test\r\n\r\n",
                              bytes(r.randrange(256) for _ in range(50)),
                              b"GET /b1/x HTTP/1.1\r\nHost: evil.test\r\n\r\nGET /b4/y HTTP/1.1\r\nHost: evil.test\r\n\r\n"))
            if r.random() < 0.5:
                send_chunks(s, data + after, r)
            else:
                s.sendall(data)
                time.sleep(r.choice((0, 0.05, 0.3)))
                s.sendall(after)
        elif kind <= 6:        # CONNECT to the inspected host, TLS, requests inside
            s.sendall(b"CONNECT insp.test:8443 HTTP/1.1\r\nHost: insp.test:8443\r\n\r\n")
            s.settimeout(3)
            got = b""
            while b"\r\n\r\n" not in got:
                d = s.recv(1)
                if not d:
                    break
                got += d
            if r.random() < 0.15:
                s.sendall(bytes(r.randrange(256) for _ in range(r.randrange(1, 400))))
            elif r.random() < 0.1:
                s.sendall(b"\x16\x03\x01\x00\x30" + bytes(48))  # a broken hello
            else:
                ctx = ssl.create_default_context(cafile=ca)
                if r.random() < 0.3:
                    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
                t = ctx.wrap_socket(s, server_hostname=r.choice(("insp.test", "insp.test", "evil.test")))
                n = r.randrange(1, 4)
                data = b"".join(req(r, "insp.test:8443", plain=False) for _ in range(n))
                if r.random() < 0.3:
                    data = data[: r.randrange(len(data) + 1)]
                send_chunks(t, data, r)
                if r.random() < 0.2:
                    t.sendall(b"\x00" * 10)  # garbage after, inside TLS
                if r.random() < 0.5:
                    try:
                        t.settimeout(r.choice((0.05, 0.5)))
                        t.recv(65536)
                    except (OSError, ssl.SSLError):
                        pass
                s = t
        elif kind == 7:        # random bytes
            s.sendall(bytes(r.randrange(256) for _ in range(r.randrange(1, 3000))))
        else:                  # a head left unfinished for the timeout
            s.sendall(b"GET http://evil.test:8080/b16/x HTTP/1.1\r\nHost: ev")
            time.sleep(r.choice((0.1, 0.6, 1.2)))
        end(s, r)
    except (OSError, ssl.SSLError, ValueError):
        try:
            s.close()
        except Exception:
            pass
    with lock:
        ran += 1

def worker(k, nthreads):
    for i in range(k, n_total, nthreads):
        scenario(i)

threads = [threading.Thread(target=worker, args=(k, 12)) for k in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ran %d refused %d" % (ran, refused))
