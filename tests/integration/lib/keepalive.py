#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One connection across a reload, for test-synreject.sh: a GET, then
(once GO exists) another on the same connection, then a new connection.

  keepalive.py ADDR PORT HOST READY GO

Prints the first status line, the second (or "closed"), and how a new
connection went ("refused", or "open")."""
import os
import re
import socket
import sys
import time

addr, port, host, ready, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]


def get(s):
    s.sendall(("GET /keepalive HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode())
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            k = s.recv(4096)
            if not k:
                break
            data += k
        # The body too, so the next request's answer starts clean: it may
        # come in a segment of its own, after the head.
        head, _, body = data.partition(b"\r\n\r\n")
        m = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
        need = int(m.group(1)) if m else 0
        while len(body) < need:
            k = s.recv(4096)
            if not k:
                break
            body += k
    except (socket.timeout, ConnectionError):
        pass
    return data.split(b"\r\n", 1)[0].decode(errors="replace") if data else "closed"


s = socket.create_connection((addr, port), timeout=5)
s.settimeout(5)
out = [get(s)]
open(ready, "w").close()
for _ in range(200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
out.append(get(s))
try:
    socket.create_connection((addr, port), timeout=5).close()
    out.append("open")
except ConnectionRefusedError:
    out.append("refused")
print(" / ".join(out))
