# SPDX-License-Identifier: MIT
# scrub-origin.py LOG CERT KEY ADDR: an HTTPS origin (:443) for
# test-scrub-attacks.sh, where a hostile agent tries to get an injected key
# back past sluice's response scrubber. Every route behaves as some
# ordinary, honest server does; none of them knows any key. It logs
# "METHOD TARGET host=HOST key=yes|no trim=yes|no range=yes|no wsext=yes|no"
# per request (whether an x-api-key / x-trim-key / Range /
# Sec-WebSocket-Extensions header came, never a value).
#
# Routes:
#   /stream?g=HEX     a streaming echo (think: a websocket or SSE echo, a
#                     chunked "tail -f"): a chunk holding the bytes HEX
#                     names, then 0.8 s of silence, then "\n" and the end.
#                     It echoes only what the agent sent, never a header.
#   /echo-range       a page that prints the x-api-key header it got
#                     ("key=VALUE\n"), served as Apache serves any 200
#                     response (its byterange filter honours Range on CGI and
#                     PHP output too): one range -> 206 with Content-Range,
#                     several -> multipart/byteranges.
#   /echo-far?pad=N&w=W  prints N dots, then " key=" and the x-api-key header
#                     it got, from a server a long round trip away: TCP's
#                     slow start sends the first window of bytes (the first
#                     W of the body) and the rest one round trip (0.8 s)
#                     later.
#   /echo-trim        prints the x-trim-key header's value as servers parse
#                     it: optional whitespace around a field value is not
#                     part of it (RFC 9110 5.5), so it is stripped.
#   /ws               a websocket that greets with "hello; x-api-key=VALUE; over"
#                     (a debug/echo endpoint); with permessage-deflate
#                     offered it accepts it (as Python websockets, ws for
#                     Node and most servers do by default) and sends the
#                     greeting compressed (RSV1). ?end=long ends the
#                     greeting in a long word ("acknowledged") and keeps
#                     the socket open without another message, as a
#                     protocol of questions and answers does; ?mask=1
#                     sends it in a masked frame, as a client library
#                     pressed into service as a server does (RFC 6455
#                     forbids it); ?big=1 pads it to a frame with a 16-bit
#                     length, its header's first byte sent 0.1 s before
#                     the rest; ?frag=1 sends it as a server that fragments
#                     messages does (gorilla/websocket, at its buffer's
#                     size), cut inside the key, a ping between the two
#                     fragments; ?close=1 follows it with a close frame
#                     whose reason quotes the key (1008, as a server that
#                     rejects it says why); ?closemid=1 sends the greeting's
#                     first part as a fragment, ending in a long word, then
#                     a close, the message never finished; ?pausemid=1
#                     sends "status: pending" as a first fragment, waits
#                     0.8 s, then the last fragment (" done").
#                     Each frame is written by itself (one TLS record).
#                     The client's side: ?then=http answers 101 and goes on
#                     reading HTTP requests on the connection (a front that
#                     never really switched protocols; ?delay=1 waits 0.5 s
#                     before its 101); ?echo=1 logs each frame the client
#                     sends ("WS /ws?echo=1 frame op=OP masked=yes|no
#                     data=TEXT", unmasked) for 2 s; ?accept=bad|none sends
#                     a wrong Sec-WebSocket-Accept, or none.
import base64, hashlib, os, socket, ssl, sys, threading, time, zlib
from urllib.parse import parse_qs, urlsplit

from rawhttp import Conn, serve_forever

log_path, cert, keyf, addr = sys.argv[1:5]
lock = threading.Lock()


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def resp(status, body=b"", headers=()):
    h = "".join("%s: %s\r\n" % hv for hv in headers)
    return ("HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n" % (status, h, len(body))).encode() + body


def ranged(get, body, ctype="text/plain"):
    """Apache's byterange filter, simplified: bytes=a-b[,c-d...]."""
    rng = get("range")
    if not rng or not rng.startswith("bytes="):
        return resp("200 OK", body, [("Content-Type", ctype), ("Accept-Ranges", "bytes")])
    parts = []
    for spec in rng[6:].split(","):
        a, _, b = spec.strip().partition("-")
        if a == "":
            a, b = len(body) - int(b), len(body) - 1
        else:
            a, b = int(a), (int(b) if b else len(body) - 1)
        b = min(b, len(body) - 1)
        if a <= b:
            parts.append((a, b))
    if not parts:
        return resp("416 Range Not Satisfiable", b"", [("Content-Range", "bytes */%d" % len(body))])
    if len(parts) == 1:
        a, b = parts[0]
        return resp("206 Partial Content", body[a:b + 1],
                    [("Content-Type", ctype), ("Content-Range", "bytes %d-%d/%d" % (a, b, len(body)))])
    bnd = "SCRUBBOUNDARY"
    out = b""
    for a, b in parts:
        out += ("--%s\r\nContent-Type: %s\r\nContent-Range: bytes %d-%d/%d\r\n\r\n" % (
            bnd, ctype, a, b, len(body))).encode() + body[a:b + 1] + b"\r\n"
    out += ("--%s--\r\n" % bnd).encode()
    return resp("206 Partial Content", out, [("Content-Type", "multipart/byteranges; boundary=" + bnd)])


def ws_frame(payload, rsv1=False, mask=None, op=0x1, fin=True):
    b0 = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | op
    m = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        h = bytes([b0, m | n])
    else:
        h = bytes([b0, m | 126]) + n.to_bytes(2, "big")
    if mask:
        h += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return h + payload


def serve(sock):
    c = Conn(sock)
    try:
        while True:
            method, target, hdrs, get, body = c.request()
            u = urlsplit(target)
            q = parse_qs(u.query)
            p = u.path
            key = get("x-api-key") or ""
            yn = lambda v: "yes" if v else "no"
            log("%s %s host=%s key=%s trim=%s range=%s wsext=%s" % (
                method, target, get("host"), yn(key), yn(get("x-trim-key")),
                yn(get("range") or get("if-range")), yn(get("sec-websocket-extensions"))))
            if p == "/stream":
                g = bytes.fromhex(q.get("g", [""])[0])
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(g), g))
                time.sleep(0.8)
                sock.sendall(b"1\r\n\n\r\n0\r\n\r\n")
                continue
            if p == "/echo-range":
                sock.sendall(ranged(get, ("key=%s\n" % key).encode()))
                continue
            if p == "/echo-far":
                pad, w = int(q["pad"][0]), int(q["w"][0])
                page = resp("200 OK", b"." * pad + (" key=%s\n" % key).encode(),
                            [("Content-Type", "text/plain")])
                cut = len(page) - (pad + len(key) + 6) + w
                sock.sendall(page[:cut])
                time.sleep(0.8)
                sock.sendall(page[cut:])
                continue
            if p == "/echo-trim":
                sock.sendall(resp("200 OK", ("key=%s\n" % (get("x-trim-key") or "")).encode()))
                continue
            if p == "/ws" and (get("upgrade") or "").lower() == "websocket":
                acc = base64.b64encode(hashlib.sha1((get("sec-websocket-key") or "").encode() +
                                                    b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                deflate = "permessage-deflate" in (get("sec-websocket-extensions") or "").lower()
                head = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                        b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n")
                if q.get("accept") == ["bad"]:
                    head = head.replace(acc, base64.b64encode(b"\0" * 20))
                elif q.get("accept") == ["spaced"]:  # trailing whitespace: still the value
                    head = head.replace(acc + b"\r\n", acc + b" \t \r\n")
                elif q.get("accept") == ["none"]:
                    head = head.replace(b"Sec-WebSocket-Accept: " + acc + b"\r\n", b"")
                if q.get("then") == ["http"]:
                    if q.get("delay") == ["1"]:
                        time.sleep(0.5)
                    sock.sendall(head + b"\r\n")
                    continue
                if q.get("echo") == ["1"]:
                    sock.sendall(head + b"\r\n")
                    sock.settimeout(2)
                    for _ in range(100):  # bounded: a few frames
                        b0, b1 = c.take(2)
                        n = b1 & 0x7f
                        if n == 126:
                            n = int.from_bytes(c.take(2), "big")
                        elif n == 127:
                            n = int.from_bytes(c.take(8), "big")
                        mask = c.take(4) if b1 & 0x80 else b"\0\0\0\0"
                        data = bytes(b ^ mask[i % 4] for i, b in enumerate(c.take(n)))
                        log("WS %s frame op=%d masked=%s data=%s" % (
                            target, b0 & 0x0f, yn(b1 & 0x80), data.decode("latin-1")))
                    break
                if deflate:
                    head += b"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
                end = "acknowledged" if q.get("end") == ["long"] else "over"
                pad = "z" * 250 + " " if q.get("big") == ["1"] else ""
                msg = ("hello; x-api-key=%s; %s%s" % (key, pad, end)).encode()
                if deflate:
                    co = zlib.compressobj(9, zlib.DEFLATED, -15)
                    data = co.compress(msg) + co.flush(zlib.Z_SYNC_FLUSH)
                    frame = ws_frame(data[:-4], rsv1=True)  # RFC 7692: drop 00 00 ff ff
                else:
                    frame = ws_frame(msg, mask=os.urandom(4) if q.get("mask") == ["1"] else None)
                if q.get("pausemid") == ["1"]:
                    sock.sendall(head + b"\r\n")
                    sock.sendall(ws_frame(b"status: pending", fin=False))
                    time.sleep(0.8)
                    sock.sendall(ws_frame(b" done", op=0x0))
                    time.sleep(2)
                    break
                if q.get("closemid") == ["1"]:
                    sock.sendall(head + b"\r\n")
                    sock.sendall(ws_frame(b"hello; status pending; superlongword", fin=False))
                    time.sleep(0.05)
                    sock.sendall(ws_frame(b"\x03\xe8", op=0x8))
                    time.sleep(0.3)
                    break
                if q.get("frag") == ["1"]:
                    cut = msg.index(key.encode()) + 10
                    sock.sendall(head + b"\r\n")
                    for f in (ws_frame(msg[:cut], fin=False), ws_frame(b"keepalive", op=0x9),
                              ws_frame(msg[cut:], op=0x0)):
                        sock.sendall(f)
                        time.sleep(0.05)
                    time.sleep(2)
                    break
                if pad:
                    sock.sendall(head + b"\r\n" + frame[:1])
                    time.sleep(0.1)
                    frame = frame[1:]
                    head = b""
                sock.sendall(head + (b"\r\n" if head else b"") + frame)
                if q.get("close") == ["1"]:
                    time.sleep(0.05)
                    sock.sendall(ws_frame(b"\x03\xf0invalid x-api-key " + key.encode(), op=0x8))
                time.sleep(2)
                break
            sock.sendall(resp("200 OK", ("origin %s %s\n" % (method, target)).encode()))
    except (EOFError, OSError, ValueError, IndexError, socket.timeout):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, keyf)
threading.Thread(target=serve_forever, args=(addr, 443, ctx, serve, 20), daemon=True).start()
time.sleep(0.3)
open(log_path + ".ready", "w").close()
threading.Event().wait()
