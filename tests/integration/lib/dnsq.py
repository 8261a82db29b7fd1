#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small DNS client for test-dns-cache.sh: bounded, standard
library only.

  dnsq.py SERVER burst FILE [PASSES [WINDOW]]
        send an A query (UDP) for every name in FILE (one a line), PASSES
        times over (default 1), at most WINDOW (64) outstanding; print
        "answered N noerror N refused N other N noreply N"
  dnsq.py SERVER raw HEX [tcp]
        send one message given as hex, print the reply's rcode and
        ancount ("RCODE ANCOUNT"), or "noreply"
"""
import select
import socket
import struct
import sys
import time


def qname(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(qid, name, qtype=1):
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname(name) + struct.pack(">HH", qtype, 1)


def burst(server, names, passes, window=64):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    todo = [n for _ in range(passes) for n in names]
    outstanding = {}  # qid -> (name, tries)
    counts = {"answered": 0, "noerror": 0, "refused": 0, "other": 0, "noreply": 0}
    nxt = 0
    qid = 1
    deadline = time.time() + 120
    while (nxt < len(todo) or outstanding) and time.time() < deadline:
        while nxt < len(todo) and len(outstanding) < window:
            qid = (qid + 1) & 0xFFFF or 1
            outstanding[qid] = (todo[nxt], time.time())
            s.sendto(query(qid, todo[nxt]), (server, 53))
            nxt += 1
        r, _, _ = select.select([s], [], [], 1)
        if not r:
            # Anything older than 5 s is lost.
            now = time.time()
            for k in [k for k, v in outstanding.items() if now - v[1] > 5]:
                counts["noreply"] += 1
                del outstanding[k]
            continue
        while True:
            try:
                m = s.recv(4096)
            except BlockingIOError:
                break
            rid = struct.unpack(">H", m[:2])[0]
            if rid not in outstanding:
                continue
            del outstanding[rid]
            counts["answered"] += 1
            rc = m[3] & 15
            counts["noerror" if rc == 0 else "refused" if rc == 5 else "other"] += 1
    counts["noreply"] += len(outstanding)
    print(" ".join("%s %d" % (k, counts[k]) for k in ("answered", "noerror", "refused", "other", "noreply")))


def raw(server, hexmsg, tcp):
    msg = bytes.fromhex(hexmsg)
    if tcp:
        s = socket.create_connection((server, 53), timeout=5)
        s.sendall(struct.pack(">H", len(msg)) + msg)
        try:
            hdr = s.recv(2)
            ln = struct.unpack(">H", hdr)[0]
            m = b""
            while len(m) < ln:
                k = s.recv(ln - len(m))
                if not k:
                    break
                m += k
        except (OSError, struct.error):
            print("noreply")
            return
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(msg, (server, 53))
        try:
            m = s.recv(4096)
        except OSError:
            print("noreply")
            return
    print(m[3] & 15, struct.unpack(">H", m[6:8])[0])


def main():
    server, case = sys.argv[1], sys.argv[2]
    if case == "burst":
        with open(sys.argv[3]) as f:
            names = [l.strip() for l in f if l.strip()]
        burst(server, names, int(sys.argv[4]) if len(sys.argv) > 4 else 1,
              int(sys.argv[5]) if len(sys.argv) > 5 else 64)
    elif case == "raw":
        raw(server, sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "tcp")
    else:
        sys.exit("unknown case " + case)


if __name__ == "__main__":
    main()
