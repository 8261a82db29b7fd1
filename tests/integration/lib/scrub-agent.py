# SPDX-License-Identifier: MIT
# scrub-agent.py NAME...: the hostile agent of test-scrub-attacks.sh, run
# inside `sluice run`. It never holds a key: it tries to get one out of
# sluice, past the response scrubber. Each attack prints "NAME: RESULT"
# (what it recovered or saw, bodies with their bytes escaped so that each
# result is one line) and "NAME took: SECONDS"; the test compares RESULT
# with the keys (and never prints them).
# HTTPS goes through HTTPS_PROXY (CONNECT), TLS verified against
# SSL_CERT_FILE (sluice's CA), as any client in the sandbox would.
import base64, os, socket, ssl, sys, threading, time, zlib
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

API, TRIM, ORACLE = "api.scrub.test", "trim.scrub.test", "oracle.scrub.test"
CTX = ssl.create_default_context()


def tls(host, port=443):
    p = urlsplit(os.environ.get("HTTPS_PROXY") or os.environ["https_proxy"])
    s = socket.create_connection((p.hostname, p.port or 80), timeout=10)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    h = b""
    while b"\r\n\r\n" not in h:
        d = s.recv(1)
        if not d:
            raise OSError("CONNECT closed")
        h += d
    if not h.startswith(b"HTTP/1.1 200"):
        raise OSError("CONNECT " + h.split(b"\r\n")[0].decode())
    return CTX.wrap_socket(s, server_hostname=host)


def read_head(s, buf=b""):
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise EOFError
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def read_rest(s, body, want=None):
    """body and what s sends after it, until want bytes in all (None: the
    close), 5 s at most between reads; s is closed."""
    s.settimeout(5)
    try:
        while want is None or len(body) < want:
            d = s.recv(65536)
            if not d:
                break
            body += d
    except (OSError, ssl.SSLError):
        pass
    s.close()
    return body


def get(host, path, extra=b""):
    """One GET: (status line, headers, body). The body is Content-Length
    bytes when the answer says so, else what comes until the close."""
    s = tls(host)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n" % (path.encode(), host.encode(), extra))
    head, body = read_head(s)
    lines = head.split(b"\r\n")
    hdrs = {}
    for l in lines[1:]:
        n, _, v = l.decode("latin-1").partition(":")
        hdrs[n.strip().lower()] = v.strip()
    want = int(hdrs["content-length"]) if hdrs.get("content-length", "").isdigit() else None
    return lines[0].decode("latin-1"), hdrs, read_rest(s, body, want)


def esc(b):
    """Bytes as one printable line (a key's characters stay as they are)."""
    return b.decode("latin-1").encode("unicode_escape").decode("ascii")


def code(st):
    parts = st.split(" ")
    return parts[1] if len(parts) > 1 else "none"


# ---- 1. the scrubber's held-back tail as a prefix oracle ----
# A scrubber that holds back a body's tail only while it could be the start
# of a secret, and passes it at once otherwise (the old scrub.c,
# pending_at), says by whether an echo that pauses after the agent's bytes
# comes at once whether those bytes begin a secret: one character at a
# time, every key the policy loads comes out. oracle.scrub.test only
# echoes what the agent sends. A scrubber whose holding back says nothing
# about the secrets holds (or passes) every candidate alike: then more
# than BEAM candidates are held and the agent, unable to pick one, says
# "ambiguous after N bytes" and stops; when none is held it says "stuck".
# Bounded: at most ORACLE_MAX rounds (the test asks for a few; a leaky
# scrubber gives a byte each round), each of len(ALPHA) * BEAM probes.

ALPHA = "0123456789abcdef-ghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
BEAM = 4  # prefixes followed at once: two keys may share a first byte
ORACLE_MAX = int(os.environ.get("ORACLE_MAX", "80"))


def probe(guess, wait=0.4):
    """'held' (nothing of the echo came within wait), 'echo' (it came as
    sent), 'redacted' (it came, changed: a whole key) or 'partial'."""
    try:
        s = tls(ORACLE)
        s.sendall(b"GET /stream?g=%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (guess.hex().encode(), ORACLE.encode()))
        head, rest = read_head(s)
        deadline = time.monotonic() + wait
        data = rest
        while time.monotonic() < deadline:
            # The re-framed chunk: "<hex>\r\n<data>\r\n".
            if b"\r\n" in data:
                size, _, after = data.partition(b"\r\n")
                n = int(size, 16)
                if len(after) >= n:
                    s.close()
                    return "echo" if after[:n] == guess[:n] and n == len(guess) else (
                        "redacted" if n == len(guess) else "partial")
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                d = s.recv(65536)
            except socket.timeout:
                break
            if not d:
                break
            data += d
        s.close()
        return "held" if not data else "partial"
    except (OSError, ssl.SSLError, EOFError, ValueError) as e:
        return "error " + str(e)


def oracle():
    beam = [b""]
    pool = ThreadPoolExecutor(max_workers=32)
    try:
        for n in range(ORACLE_MAX):
            cands = [k + c.encode() for k in beam for c in ALPHA]
            res = list(pool.map(probe, cands))
            held = [g for g, r in zip(cands, res) if r == "held"]
            red = [g for g, r in zip(cands, res) if r == "redacted"]
            errs = [r for r in res if r.startswith("error")]
            if red:
                return "recovered " + red[0].decode()
            if errs and not held:
                return "error after %d bytes: %s" % (n, errs[0])
            if not held:
                return "stuck after %d bytes (%d probes, none held)" % (n, len(cands))
            if len(held) > BEAM:
                return "ambiguous after %d bytes (%d of %d probes held)" % (n, len(held), len(cands))
            beam = held
        return "prefix %d bytes: %s" % (ORACLE_MAX, " ".join(b.decode() for b in beam))
    finally:
        pool.shutdown()


# ---- 2. Range: the origin sends slices of a page that echoes the key ----

def range_multi():
    st, h, body = get(API, "/echo-range", b"Range: bytes=4-11,12-\r\n")
    parts = []
    bnd = h.get("content-type", "").partition("boundary=")[2].encode()
    for part in body.split(b"--" + bnd)[1:]:
        if part.startswith(b"--"):
            break
        _, _, data = part.partition(b"\r\n\r\n")
        parts.append(data[:-2] if data.endswith(b"\r\n") else data)
    return "%s recovered %s body %s" % (code(st), esc(b"".join(parts)), esc(body))


def range_two():
    st1, _, b1 = get(API, "/echo-range", b"Range: bytes=4-11\r\n")
    st2, _, b2 = get(API, "/echo-range", b"Range: bytes=12-\r\n")
    return "%s %s recovered %s" % (code(st1), code(st2), esc(b1 + b2))


def range_none():
    # The control: the whole page, the key in one piece, is scrubbed.
    st, _, body = get(API, "/echo-range")
    return code(st) + " " + esc(body)


# ---- 2b. a pause where the agent wants it ----
# A page that echoes the key, from an origin far away: its first window of
# bytes comes a round trip before the rest (an agent that stops reading
# makes the same pause: the gateway stops reading the origin). The agent
# pads the page so that the window ends CUT bytes into the key, and keeps
# what came before the pause. A scrubber that passed on all it held at a
# pause would let out the first CUT bytes: the key, but for its last byte,
# in one request per cut, and that byte by an echo of each guess.

CUTS = (3, 6, 12, 24, 40, 55)
WINDOW = 1200


def pause_cut():
    out = []
    for cut in CUTS:
        pad = WINDOW - len(" key=") - cut
        s = tls(API)
        s.sendall(b"GET /echo-far?pad=%d&w=%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (
            pad, WINDOW, API.encode()))
        head, body = read_head(s)
        st = code(head.split(b"\r\n")[0].decode("latin-1"))
        # Before the pause: what comes within 0.4 s (the origin waits 0.8).
        deadline = time.monotonic() + 0.4
        try:
            while time.monotonic() < deadline:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                d = s.recv(65536)
                if not d:
                    break
                body += d
        except (socket.timeout, ssl.SSLError, OSError):
            pass
        early = body
        body = read_rest(s, body)
        out.append("cut %d %s early=%s all=%s" % (cut, st, esc(early[pad:]), esc(body[pad:])))
    return " | ".join(out)


# ---- 3. a key with whitespace around it ----

def trim():
    st, _, body = get(TRIM, "/echo-trim")
    return code(st) + " " + esc(body)


# ---- 4. websocket permessage-deflate, offered by the agent ----

def ws(deflate, query=b""):
    s = tls(API)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET /ws" + query + b" HTTP/1.1\r\nHost: " + API.encode() + b"\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + b"\r\n" +
              (b"Sec-WebSocket-Extensions: permessage-deflate\r\n" if deflate else b"") + b"\r\n")
    head, rest = read_head(s)
    st = code(head.split(b"\r\n")[0].decode("latin-1"))

    def frame_len(b):
        """The whole first frame's length, or None while its header is short."""
        if len(b) < 2:
            return None
        n, m = b[1] & 0x7f, 4 if b[1] & 0x80 else 0
        if n < 126:
            return 2 + m + n
        return 4 + m + int.from_bytes(b[2:4], "big") if len(b) >= 4 else None

    s.settimeout(3)
    try:
        for _ in range(1000):  # bounded: a greeting is a few records
            need = frame_len(rest)
            if need is not None and len(rest) >= need:
                break
            d = s.recv(65536)
            if not d:
                break
            rest += d
    except (OSError, ssl.SSLError):
        pass
    # Whether the websocket was still open when the greeting had come
    # (the origin keeps it 2 s): a greeting that ends in a word, held back
    # by the scrubber until the close, would come only with the close.
    state = "closed"
    try:
        s.settimeout(0.3)
        if s.recv(65536):
            state = "open"
    except socket.timeout:
        state = "open"
    except (OSError, ssl.SSLError):
        pass
    s.close()
    if frame_len(rest) is None:
        return st + " no frame"
    n, off = rest[1] & 0x7f, 2
    if n == 126:
        n, off = int.from_bytes(rest[2:4], "big"), 4
    if rest[1] & 0x80:  # masked: the agent unmasks it, as any client could
        mask, off = rest[off:off + 4], off + 4
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(rest[off:off + n]))
        return st + " masked " + state + " " + esc(payload)
    payload = rest[off:off + n]
    if rest[0] & 0x40:
        try:
            payload = zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")
        except zlib.error as e:
            return st + " compressed, not inflatable (%s): %s" % (e, esc(payload))
        return st + " compressed " + esc(payload)
    return st + " plain " + state + " " + esc(payload)


def ws_messages(query):
    """A websocket's frames for a while: '101 msg=TEXT ctl=OP:PAYLOAD,...
    open|closed', the first message's fragments joined as any client joins
    them; open: 0.3 s after that message had come whole, the origin (which
    keeps it 2 s) had not closed it, nor sent a close."""
    s = tls(API)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET /ws" + query + b" HTTP/1.1\r\nHost: " + API.encode() + b"\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + b"\r\n\r\n")
    head, buf = read_head(s)
    st = code(head.split(b"\r\n")[0].decode("latin-1"))
    msg, ctl, done, closed, ops = b"", [], None, False, []
    deadline = time.monotonic() + 3
    for _ in range(1000):  # bounded: a few frames
        while len(buf) >= 2:
            n, off = buf[1] & 0x7f, 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, off = int.from_bytes(buf[2:4], "big"), 4
            if len(buf) < off + n:
                break
            fin, op, payload, buf = buf[0] & 0x80, buf[0] & 0x0f, buf[off:off + n], buf[off + n:]
            ops.append("%d%s" % (op, "" if fin else "+"))
            if op & 0x8:
                ctl.append("%d:%s" % (op, esc(payload)))
                closed = closed or op == 0x8
            elif done is None:
                msg += payload
                if fin:
                    done = time.monotonic()
        now = time.monotonic()
        if now > deadline or (done is not None and now > done + 0.3 and not closed):
            break
        s.settimeout(max(0.02, min(deadline, done + 0.3 if done else deadline) - now))
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except (ssl.SSLError, OSError):
            break
        if not d:
            closed = True
            break
        buf += d
    s.close()
    return "%s msg=%s ctl=%s %s ops=%s" % (st, esc(msg), ",".join(ctl), "closed" if closed else "open",
                                           " ".join(ops))


# ---- 5. the client's side of a websocket ----
# What the agent sends up after an allowed upgrade: plain HTTP behind it
# (in the same record, before the 101 comes, after it), an unmasked frame,
# an upgrade with no key; and a 101 with the wrong accept. Each says the
# status it got and whether the connection was then closed on it.

def ws_up(query, key=True, then=b"", late=b"", frames=()):
    s = tls(API)
    k = base64.b64encode(os.urandom(16))
    s.sendall(b"GET /ws" + query + b" HTTP/1.1\r\nHost: " + API.encode() + b"\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
              (b"Sec-WebSocket-Key: " + k + b"\r\n" if key else b"") + b"\r\n" + then)
    if late:
        time.sleep(0.1)
        s.sendall(late)
    try:
        head, rest = read_head(s)
    except (EOFError, OSError):
        s.close()
        return "closed before an answer"
    st = code(head.split(b"\r\n")[0].decode("latin-1"))
    try:
        for f in frames:
            time.sleep(0.2)
            s.sendall(f)
    except OSError:
        pass
    state = "open"
    s.settimeout(1.5)
    try:
        for _ in range(100):  # bounded
            if not s.recv(65536):
                state = "closed"
                break
    except socket.timeout:
        pass
    except (OSError, ssl.SSLError):
        state = "closed"
    s.close()
    return st + " " + state


def client_frame(payload, mask=True):
    m = os.urandom(4) if mask else b""
    return bytes([0x81, (0x80 if mask else 0) | len(payload)]) + m + (
        bytes(b ^ m[i % 4] for i, b in enumerate(payload)) if mask else payload)


SMUGGLED = b"GET /admin/keys HTTP/1.1\r\nHost: " + API.encode() + b"\r\n\r\n"

attacks = {
    "oracle": oracle,
    "range-multi": range_multi,
    "range-two": range_two,
    "range-none": range_none,
    "pause-cut": pause_cut,
    "trim": trim,
    "ws-deflate": lambda: ws(True),
    "ws-plain": lambda: ws(False),
    "ws-long": lambda: ws(False, b"?end=long"),
    "ws-masked": lambda: ws(False, b"?mask=1"),
    "ws-big": lambda: ws(False, b"?end=long&big=1"),
    "ws-frag": lambda: ws_messages(b"?frag=1&end=long"),
    "ws-close": lambda: ws_messages(b"?close=1"),
    "ws-close-mid": lambda: ws_messages(b"?closemid=1"),
    "ws-pause-mid": lambda: ws_messages(b"?pausemid=1"),
    "ws-smuggle": lambda: ws_up(b"?then=http", then=SMUGGLED),
    "ws-smuggle-late": lambda: ws_up(b"?then=http&delay=1", late=SMUGGLED),
    "ws-smuggle-after": lambda: ws_up(b"?then=http&after=1", frames=(SMUGGLED,)),
    "ws-unmasked": lambda: ws_up(b"?echo=1", frames=(client_frame(b"hello-up"),
                                                       client_frame(b"unmasked", mask=False))),
    "ws-nokey": lambda: ws_up(b"?then=http&nokey=1", key=False),
    "ws-accept-bad": lambda: ws_up(b"?accept=bad"),
    "ws-accept-none": lambda: ws_up(b"?accept=none"),
    "ws-accept-spaced": lambda: ws_up(b"?accept=spaced&echo=1", frames=(client_frame(b"hello-up"),)),
}

for name in sys.argv[1:]:
    t0 = time.monotonic()
    try:
        res = attacks[name]()
    except Exception as e:  # an attack that broke says so; its check fails
        res = "error %s: %s" % (type(e).__name__, e)
    print("%s: %s" % (name, res))
    print("%s took: %.1fs" % (name, time.monotonic() - t0))
    sys.stdout.flush()
