# SPDX-License-Identifier: MIT
# A hostile origin for test-review3-attacks.sh: on ADDR:8080 (plain) and
# ADDR:8443 (TLS, CERT/KEY), each connection gets a misbehaviour picked by
# the first path segment of its request ("/b<N>/..."), or a random one.
# It logs each behaviour it used to LOG (one line each).
import random, socket, ssl, struct, sys, threading, time

log_path, cert, key, addr = sys.argv[1:5]
log_lock = threading.Lock()

def log(s):
    with log_lock, open(log_path, "a") as f:
        f.write(s + "\n")

def rst(c):
    try:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    c.close()

def read_head(c):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        try:
            d = c.recv(4096)
        except OSError:
            return data
        if not d:
            return data
        data += d
    return data

BIG = b"x" * (6 << 20)

def behave(c, n):
    if n == 0:
        c.close()                     # closes without a response
    elif n == 1:
        rst(c)                        # resets without a response
    elif n == 2:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Le"); rst(c)   # half a head, reset
    elif n == 3:
        c.sendall(b"\x00\xff garbage \r\n\r\n"); c.close()
    elif n == 4:                      # keep-alive chunked, then reset mid-body
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"); rst(c)
    elif n == 5:                      # 100 Continue, then close
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n"); c.close()
    elif n == 6:                      # 101 Switching Protocols, then bytes
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw"); c.close()
    elif n == 7:                      # a large body (realloc/mremap in the gateway)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BIG))
        try:
            c.sendall(BIG)
        except OSError:
            pass
        c.close()
    elif n == 8:                      # complete response plus a second one, then reset
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); rst(c)
    elif n == 9:                      # a huge response head
        try:
            c.sendall(b"HTTP/1.1 200 OK\r\n" + b"X-A: " + b"a" * 200000 + b"\r\n\r\n")
        except OSError:
            pass
        c.close()
    elif n == 10:                     # silence until the gateway gives up
        time.sleep(1.5); c.close()
    elif n == 11:                     # a normal keep-alive answer, then reset
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); time.sleep(0.05); rst(c)
    elif n == 12:                     # close-delimited body
        c.sendall(b"HTTP/1.1 200 OK\r\n\r\nbody until close"); c.close()
    elif n == 13:                     # bad chunk size
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"); c.close()
    elif n == 14:                     # 204 with a body
        c.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello"); c.close()
    elif n == 15:                     # many interim answers
        try:
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 2000 + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass
        c.close()
    else:                             # a plain good answer
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); c.close()

NB = 17

def pick(head):
    try:
        path = head.split(b" ", 2)[1]
        if path.startswith(b"/b"):
            return int(path[2:].split(b"/")[0]) % NB
    except (IndexError, ValueError):
        pass
    return random.randrange(NB)

def serve_conn(c, tls_ctx):
    try:
        c.settimeout(5)
        if tls_ctx:
            c = tls_ctx.wrap_socket(c, server_side=True)
        head = read_head(c)
        n = pick(head)
        log("%s b%d" % ("tls" if tls_ctx else "plain", n))
        behave(c, n)
    except Exception:
        try:
            c.close()
        except Exception:
            pass

def listener(port, tls_ctx, a=None, fam=socket.AF_INET):
    s = socket.socket(fam)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a or addr, port))
    s.listen(128)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_conn, args=(c, tls_ctx), daemon=True).start()

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
threading.Thread(target=listener, args=(8080, None), daemon=True).start()
threading.Thread(target=listener, args=(8443, ctx), daemon=True).start()
if len(sys.argv) > 5:
    threading.Thread(target=listener, args=(8080, None, sys.argv[5], socket.AF_INET6), daemon=True).start()
open(log_path + ".ready", "w").close()
while True:
    time.sleep(60)
