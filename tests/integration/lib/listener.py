# SPDX-License-Identifier: MIT
# Listeners that log every connection they accept ("accept ADDR:PORT"), to
# prove that nothing reached an address; with =SIZE, an HTTP server that
# answers every request with a SIZE-byte body (kept alive).
# Usage: listener.py LOG ADDR:PORT[=SIZE]...  (until killed)
import socket, sys, threading

log_path = sys.argv[1]
lock = threading.Lock()


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def serve(c, size):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            log("request " + head.split(b"\r\n")[0].decode("latin-1"))
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + b"x" * size)
    except OSError:
        pass
    finally:
        c.close()


def loop(s, where, size):
    while True:
        c, _ = s.accept()
        log(f"accept {where}")
        if size:
            threading.Thread(target=serve, args=(c, size), daemon=True).start()
        else:
            c.close()


for arg in sys.argv[2:]:
    where, _, size = arg.partition("=")
    addr, port = where.rsplit(":", 1)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr.strip("[]"), int(port)))
    s.listen(512)
    threading.Thread(target=loop, args=(s, where, int(size or 0)), daemon=True).start()
open(log_path + ".ready", "w").close()
threading.Event().wait()
