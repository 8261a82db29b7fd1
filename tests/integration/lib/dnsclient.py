# SPDX-License-Identifier: MIT
"""A DNS client from the standard library, for test-dns.sh: it builds
queries by hand so that the tests can also send what no real resolver
would (garbage, truncated messages, floods, pipelined TCP).

    dnsclient.py SERVER q NAME TYPE [tcp]   print "RCODE TTL ADDR..." (or "noreply")
    dnsclient.py SERVER garbage             odd messages over UDP, one verdict each
    dnsclient.py SERVER tcpgarbage          a bad TCP length prefix: closed?
    dnsclient.py SERVER pipeline N [halfclose]  N queries in one TCP write; count replies
    dnsclient.py SERVER idle                seconds until an idle TCP connection is closed
    dnsclient.py SERVER flood N NAME...     N UDP queries at once; count replies per rcode
    dnsclient.py SERVER conns N             open N TCP connections; how many stay open
"""
import random
import select
import socket
import struct
import sys
import time

TYPES = {"A": 1, "NS": 2, "MX": 15, "TXT": 16, "AAAA": 28, "HTTPS": 65, "ANY": 255}


def qname(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(name, qtype, qid=None, qclass=1):
    qid = random.randrange(65536) if qid is None else qid
    hdr = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    return qid, hdr + qname(name) + struct.pack(">HH", TYPES.get(qtype, 0) or int(qtype), qclass)


def skip_name(msg, off):
    while True:
        n = msg[off]
        if n == 0:
            return off + 1
        if n & 0xC0 == 0xC0:
            return off + 2
        off += 1 + n


def parse(msg):
    """(id, rcode, ttl, [addresses], question bytes)"""
    qid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", msg[:12])
    off = 12
    qstart = off
    for _ in range(qd):
        off = skip_name(msg, off) + 4
    question = msg[qstart:off]
    addrs, ttl = [], None
    for _ in range(an):
        off = skip_name(msg, off)
        rtype, _, rttl, rdlen = struct.unpack(">HHIH", msg[off:off + 10])
        off += 10
        rdata = msg[off:off + rdlen]
        off += rdlen
        ttl = rttl if ttl is None else min(ttl, rttl)
        if rtype == 1:
            addrs.append(socket.inet_ntop(socket.AF_INET, rdata))
        elif rtype == 28:
            addrs.append(socket.inet_ntop(socket.AF_INET6, rdata))
    return qid, flags & 0xF, ttl, addrs, question


def udp(server, msg, timeout=3.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.sendto(msg, (server, 53))
    try:
        return s.recv(65535)
    except socket.timeout:
        return None
    finally:
        s.close()


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def tcp_msg(s):
    hdr = recv_exact(s, 2)
    if hdr is None:
        return None
    return recv_exact(s, struct.unpack(">H", hdr)[0])


def tcp(server, msg, timeout=5.0):
    s = socket.create_connection((server, 53), timeout)
    s.sendall(struct.pack(">H", len(msg)) + msg)
    try:
        return tcp_msg(s)
    finally:
        s.close()


def show(reply, qid, question):
    if reply is None:
        return "noreply"
    rid, rcode, ttl, addrs, q = parse(reply)
    if rid != qid or q != question:
        return "mismatch"
    return " ".join([str(rcode), str(ttl if ttl is not None else "-")] + addrs)


def cmd_q(server, name, qtype, proto="udp"):
    qid, msg = query(name, qtype)
    question = msg[12:]
    reply = tcp(server, msg) if proto == "tcp" else udp(server, msg)
    print(show(reply, qid, question))


def cmd_garbage(server):
    _, good = query("allowed.test", "A", 0x4242)
    cases = {
        "random": bytes(random.randrange(256) for _ in range(40)),
        "short": good[:5],
        "truncated": good[:-3],
        "response": good[:2] + b"\x81\x00" + good[4:],
        "two-questions": good[:4] + b"\x00\x02" + good[6:] + good[12:],
        "compressed": good[:12] + b"\xc0\x0c" + good[-4:],
        "trailing": good + b"\x00\x00\x00",
        "opcode": good[:2] + b"\x10\x00" + good[4:],
        "bad-label": good[:12] + qname("a b.allowed.test") + good[-4:],
        "huge": good + b"\x00" * 6000,
        "empty": b"",
    }
    for name, msg in cases.items():
        reply = udp(server, msg, 1.0)
        if reply is None:
            print(name, "noreply")
        else:
            print(name, "rcode", reply[3] & 0xF if len(reply) >= 4 else "short")


def cmd_tcpgarbage(server):
    s = socket.create_connection((server, 53), 5)
    s.sendall(b"\xff\xff" + b"x" * 100)
    s.settimeout(5)
    try:
        data = s.recv(100)
        print("closed" if data == b"" else "data")
    except ConnectionResetError:
        print("closed")
    except socket.timeout:
        print("open")


def cmd_pipeline(server, n, halfclose=False):
    s = socket.create_connection((server, 53), 5)
    want = {}
    out = b""
    for i in range(n):
        name = "allowed.test" if i % 2 == 0 else "denied.test"
        qid, msg = query(name, "A", i)
        want[qid] = 0 if name == "allowed.test" else 3
        out += struct.pack(">H", len(msg)) + msg
    s.sendall(out)
    if halfclose:  # RFC 7766 6.2.4: the replies must still come
        s.shutdown(socket.SHUT_WR)
    good = 0
    deadline = time.monotonic() + 10
    while want and time.monotonic() < deadline:
        msg = tcp_msg(s)
        if msg is None:
            break
        qid, rcode, _, _, _ = parse(msg)
        if want.pop(qid, None) == rcode:
            good += 1
    s.close()
    print(good)


def cmd_idle(server):
    """Seconds until the server closes a connection that says nothing."""
    s = socket.create_connection((server, 53), 5)
    s.settimeout(30)
    start = time.monotonic()
    try:
        s.recv(1)
    except (socket.timeout, OSError):
        pass
    print(round(time.monotonic() - start))


def cmd_flood(server, n, names):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    # Up to `window` queries in flight: more than the server resolves at
    # once, fewer than the kernel's default socket buffers hold, so a
    # missing reply is the server's fault, not a full buffer's.
    window = 200
    pending, counts, sent = {}, {}, 0
    deadline = time.monotonic() + 20
    while (sent < n or pending) and time.monotonic() < deadline:
        while sent < n and len(pending) < window:
            qid, msg = query(names[sent % len(names)], "A", sent)
            pending[qid] = sent
            s.sendto(msg, (server, 53))
            sent += 1
        r, _, _ = select.select([s], [], [], 0.5)
        if not r:
            continue
        msg = s.recv(65535)
        qid, rcode, _, _, _ = parse(msg)
        if pending.pop(qid, None) is not None:
            counts[rcode] = counts.get(rcode, 0) + 1
    print("answered", sum(counts.values()), " ".join("rcode%d=%d" % kv for kv in sorted(counts.items())))


def cmd_conns(server, n):
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection((server, 53), 2))
        except OSError:
            pass
    time.sleep(0.5)
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            alive += 0 if s.recv(1) == b"" else 1
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    for s in socks:
        s.close()
    print(alive)


def main():
    server, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "q":
        cmd_q(server, *args)
    elif cmd == "garbage":
        cmd_garbage(server)
    elif cmd == "tcpgarbage":
        cmd_tcpgarbage(server)
    elif cmd == "pipeline":
        cmd_pipeline(server, int(args[0]), len(args) > 1 and args[1] == "halfclose")
    elif cmd == "idle":
        cmd_idle(server)
    elif cmd == "flood":
        cmd_flood(server, int(args[0]), args[1:])
    elif cmd == "conns":
        cmd_conns(server, int(args[0]))
    else:
        sys.exit("unknown command " + cmd)


main()
