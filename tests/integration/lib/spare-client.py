# SPDX-License-Identifier: MIT
# Client steps against the gateway (CONNECT raw.test:443, inspected):
#   "GET /p" | "POST /p": one request on its own connection, prints
#       "<status line> | <body>" and the time it took
#   "ABORT:S GET /p": sends it, closes after S seconds without reading
#   "PIPE": a POST and a GET pipelined in one write; prints both answers
#   "PIPEABORT": the same, closes as soon as the POST's answer is in
#   "SLEEP:S"
import os, re, socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=os.environ["CA"])
def conn():
    s = socket.create_connection(("203.0.113.1", 3128), timeout=15)
    s.sendall(b"CONNECT raw.test:443 HTTP/1.1\r\nHost: raw.test:443\r\n\r\n")
    b = b""
    while b"\r\n\r\n" not in b:
        c = s.recv(1)
        if not c:
            raise SystemExit("closed during CONNECT")
        b += c
    return ctx.wrap_socket(s, server_hostname="raw.test")
def req(m, p):
    if m == "POST":
        return b"POST %s HTTP/1.1\r\nHost: raw.test\r\nContent-Length: 5\r\n\r\nhello" % p.encode()
    return b"%s %s HTTP/1.1\r\nHost: raw.test\r\n\r\n" % (m.encode(), p.encode())
def answer(t, buf):
    while b"\r\n\r\n" not in buf:
        c = t.recv(65536)
        if not c:
            return "closed: %r" % buf, b""
        buf += c
    head, rest = buf.split(b"\r\n\r\n", 1)
    m = re.search(rb"Content-Length: (\d+)", head, re.I)
    cl = int(m.group(1)) if m else 0
    while len(rest) < cl:
        c = t.recv(65536)
        if not c:
            break
        rest += c
    return head.split(b"\r\n")[0].decode() + " | " + rest[:cl].decode(errors="replace")[:60], rest[cl:]
for step in sys.argv[1:]:
    t0 = time.time()
    try:
        if step.startswith("SLEEP:"):
            time.sleep(float(step[6:]))
            continue
        if step.startswith("ABORT:"):
            secs, rq = step[6:].split(" ", 1)
            m, p = rq.split(" ", 1)
            t = conn()
            t.sendall(req(m, p))
            time.sleep(float(secs))
            t.close()
            print("aborted")
            continue
        if step in ("PIPE", "PIPEABORT"):
            t = conn()
            t.sendall(req("POST", "/p1") + req("GET", "/g1"))
            a, rest = answer(t, b"")
            print(a)
            if step == "PIPEABORT":
                t.close()
                continue
            a, rest = answer(t, rest)
            print(a)
            t.close()
            continue
        m, p = step.split(" ", 1)
        t = conn()
        t.sendall(req(m, p))
        a, _ = answer(t, b"")
        t.close()
        print("%s | %.2fs" % (a, time.time() - t0))
    except Exception as e:
        print("error %r | %.2fs" % (e, time.time() - t0))
