# SPDX-License-Identifier: MIT
# hdrclient.py PROXY CA MODE ...: raw requests through sluice's proxy, one
# connection, byte for byte as given (no client library to tidy them up).
#   tls HOST RAW...    CONNECT HOST:443, TLS (trusting CA), then each RAW
#   plain RAW...       each RAW straight to the proxy (plain HTTP)
# A RAW is a request with \r\n written as such. A RAW of "@reload:NEW:POLICY:
# PID:ERRFILE" instead copies NEW over POLICY, sends SIGHUP to PID and waits
# (bounded) until ERRFILE says the policy was reloaded, between two requests
# on the same open connection. "@partial:RAW" sends RAW and closes. For each response prints "HTTP STATUS", its
# body and "---"; "closed" when the connection ends first.
import os, shutil, signal, socket, ssl, sys, time

proxy, ca, mode, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
phost, pport = proxy.rsplit(":", 1)


def read_until(s, buf, sep):
    while sep not in buf:
        d = s.recv(65536)
        if not d:
            return buf, False
        buf += d
    return buf, True


def read_response(s, buf):
    buf, ok = read_until(s, buf, b"\r\n\r\n")
    if not ok:
        return None, b"", buf
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    body = b""
    if "content-length" in hdrs:
        n = int(hdrs["content-length"])
        while len(buf) < n:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        body, buf = buf[:n], buf[n:]
    elif "chunked" in hdrs.get("transfer-encoding", "").lower():
        while True:
            buf, _ = read_until(s, buf, b"\r\n")
            line, buf = buf.split(b"\r\n", 1)
            n = int(line.split(b";")[0], 16)
            while len(buf) < n + 2:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
            body += buf[:n]
            buf = buf[n + 2:]
            if n == 0:
                break
    else:
        while True:
            d = s.recv(65536)
            if not d:
                break
            body += d
    return status, body, buf


def reload(spec):
    _, new, pol, pid, errf = spec.split(":")
    n = open(errf).read().count(": reloaded")
    shutil.copyfile(new, pol + ".tmp")
    os.chmod(pol + ".tmp", 0o644)
    os.rename(pol + ".tmp", pol)
    os.kill(int(pid), signal.SIGHUP)
    for _ in range(100):
        if open(errf).read().count(": reloaded") > n:
            print("reloaded")
            return
        time.sleep(0.05)
    print("reload timed out")
    sys.exit(1)


s = socket.create_connection((phost, int(pport)), timeout=20)
buf = b""
if mode == "tls":
    host, args = args[0], args[1:]
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    buf, ok = read_until(s, b"", b"\r\n\r\n")
    if not ok or not buf.startswith(b"HTTP/1.1 200"):
        print("connect refused:", buf[:200])
        sys.exit(1)
    ctx = ssl.create_default_context(cafile=ca)
    s = ctx.wrap_socket(s, server_hostname=host)
    buf = b""
for raw in args:
    if raw.startswith("@reload:"):
        reload(raw)
        continue
    if raw.startswith("@partial:"):
        # Part of a head, then the connection ends.
        s.sendall(raw[9:].encode().decode("unicode_escape").encode("latin1"))
        s.close()
        print("sent part, closed")
        break
    req = raw.encode().decode("unicode_escape").encode("latin1")
    try:
        s.sendall(req)
        status, body, buf = read_response(s, buf)
    except (OSError, ssl.SSLError):
        status = None
    if status is None:
        print("closed")
        break
    print("HTTP %d" % status)
    sys.stdout.write(body.decode("latin1"))
    print("---")
    sys.stdout.flush()
