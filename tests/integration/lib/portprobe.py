#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Connect from inside the sandbox and say how it went, for test-synreject.sh.

  portprobe.py ADDR PORT [HOST]

Prints "refused" (ECONNREFUSED: the SYN was answered with a reset),
"closed" (accepted, then closed without a word: what capture did to a
port no rule allows), "timeout", or, with HOST, the status line of a
GET / with that Host."""
import socket
import sys

addr, port = sys.argv[1], int(sys.argv[2])
host = sys.argv[3] if len(sys.argv) > 3 else None
try:
    s = socket.create_connection((addr, port), timeout=5)
except ConnectionRefusedError:
    print("refused")
    sys.exit(0)
except socket.timeout:
    print("timeout")
    sys.exit(0)
s.settimeout(5)
if host:
    s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode())
try:
    data = s.recv(4096)
except (socket.timeout, ConnectionError):
    data = b""
print(data.split(b"\r\n", 1)[0].decode(errors="replace") if data else "closed")
