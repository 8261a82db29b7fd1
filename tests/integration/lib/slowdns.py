# SPDX-License-Identifier: MIT
# A tiny upstream resolver for the test world: answers A and AAAA from its
# command line, optionally late, and logs each query and each answer, so
# that a test can wait for an answer to have gone out (no sleeps).
# Usage: slowdns.py LOG ADDR NAME=ADDR[,ADDR...][@DELAY_MS]...  (until killed)
# A name with no address of the asked type gets an empty answer; a name not
# listed gets NXDOMAIN. UDP only (the gateway's answers are small).
import ipaddress, socket, struct, sys, threading

log_path, listen = sys.argv[1], sys.argv[2]
table = {}
for arg in sys.argv[3:]:
    name, rest = arg.split("=", 1)
    delay = 0
    if "@" in rest:
        rest, d = rest.split("@", 1)
        delay = int(d) / 1000
    table[name.lower().rstrip(".")] = ([ipaddress.ip_address(a) for a in rest.split(",") if a], delay)
lock = threading.Lock()


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def parse(q):
    if len(q) < 12:
        return None
    i, labels = 12, []
    while i < len(q) and q[i]:
        n = q[i]
        if n > 63 or i + 1 + n > len(q):
            return None
        labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    if i + 5 > len(q):
        return None
    qtype, = struct.unpack("!H", q[i + 1:i + 3])
    return ".".join(labels).lower(), qtype, q[12:i + 5]


def answer(sock, peer, q):
    p = parse(q)
    if not p:
        return
    name, qtype, question = p
    tname = {1: "A", 28: "AAAA"}.get(qtype, str(qtype))
    log(f"query {name} {tname}")
    entry = table.get(name)
    rrs = b""
    n = 0
    if entry:
        for a in entry[0]:
            if (qtype == 1 and a.version == 4) or (qtype == 28 and a.version == 6):
                rrs += struct.pack("!HHHIH", 0xC00C, qtype, 1, 5, len(a.packed)) + a.packed
                n += 1
    flags = 0x8180 if entry else 0x8183
    reply = q[:2] + struct.pack("!HHHHH", flags, 1, n, 0, 0) + question + rrs

    def send():
        sock.sendto(reply, peer)
        log(f"answered {name} {tname}")

    if entry and entry[1]:
        threading.Timer(entry[1], send).start()
    else:
        send()


s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((listen, 53))
open(log_path + ".ready", "w").close()
while True:
    data, peer = s.recvfrom(2048)
    answer(s, peer, data)
