# SPDX-License-Identifier: MIT
# A TLS origin: a request for /armD makes the next connection accepted
# after it wait D seconds before its TLS handshake (a spare origin
# connection, inspect-upstream.c, made after that exchange, stays
# mid-handshake that long); one for /chatty makes the next connection
# send an answer nobody asked for ("EVIL") as soon as its handshake is
# done (logged "conn=N spoke"); one for /streamD gets its answer's head at
# once and its body D seconds later; one for /close, "Connection: close", its
# body 0.5 s after its head, then the connection closed.
# Each request (Content-Length bodies read) is answered
# "echo <target> conn=<N>", kept alive. Logs, in LOGDIR: requests.log
# ("conn=N METHOD TARGET body=LEN"), conns ("conn=N handshake" when its
# handshake starts, "conn=N eof" when the gateway closes it), ready.
# Usage: slow-hs-origin.py LOGDIR ADDR PORT CERT KEY
import os, socket, ssl, sys, threading, time
logdir, addr, port, cert, key = sys.argv[1:6]
lock = threading.Lock()
n = [0]
arm = [0.0]
chat = [False]
delays = {}
chatty = set()
def log(name, line):
    with lock, open(os.path.join(logdir, name), "a") as f:
        f.write(line + "\n")
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
def handle(s, k):
    try:
        with lock:
            d = delays.pop(k, 0.0)
        if d:
            time.sleep(d)
        log("conns", "conn=%d handshake" % k)
        t = ctx.wrap_socket(s, server_side=True)
        with lock:
            evil = k in chatty
        if evil:  # an answer nobody asked for, as soon as the handshake is done
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL")
            log("conns", "conn=%d spoke" % k)
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                c = t.recv(65536)
                if not c:
                    log("conns", "conn=%d eof" % k)
                    return
                buf += c
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            method, target = lines[0].split(b" ")[:2]
            cl = 0
            for l in lines[1:]:
                if l.lower().startswith(b"content-length:"):
                    cl = int(l.split(b":")[1])
            while len(buf) < cl:
                c = t.recv(65536)
                if not c:
                    return
                buf += c
            buf = buf[cl:]
            if target.startswith(b"/arm"):
                with lock:
                    arm[0] = float(target[4:])
            if target == b"/chatty":
                with lock:
                    chat[0] = True
            log("requests.log", "conn=%d %s %s body=%d" % (k, method.decode(), target.decode(), cl))
            body = b"echo %s conn=%d" % (target, k)
            head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
            if target == b"/close":  # Connection: close, the body 0.5 s after the head
                t.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                          % len(body))
                time.sleep(0.5)
                t.sendall(body)
                t.close()
                log("conns", "conn=%d eof" % k)
                return
            if target.startswith(b"/stream"):  # /streamD: the head now, the body D s later
                t.sendall(head)
                time.sleep(float(target[7:]))
                head = b""
            t.sendall(head + body)
    except Exception as e:
        log("conns", "conn=%d error %r" % (k, e))
    finally:
        try:
            s.close()
        except Exception:
            pass
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, int(port)))
ls.listen(64)
open(os.path.join(logdir, "ready"), "w").close()
while True:
    s, _ = ls.accept()
    with lock:
        n[0] += 1
        k = n[0]
        delays[k], arm[0] = arm[0], 0.0
        if chat[0]:
            chatty.add(k)
            chat[0] = False
    threading.Thread(target=handle, args=(s, k), daemon=True).start()
