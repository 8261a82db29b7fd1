# SPDX-License-Identifier: MIT
# The test world's origin: HTTP on every address given, and HTTPS on :443
# when a certificate is given. Logs every request line it serves (one per
# line) to LOG, so tests can prove what did and did not reach the origin.
# Usage: origin.py LOG CERT|- KEY|- ADDR...   (runs until killed)
#
# Every path answers "origin METHOD PATH host=HOST body=N" (/big*: 4 MiB),
# except these, on HTTP and HTTPS alike:
#   /files/PATH (GET, HEAD)   with ORIGIN_ROOT set, that file (404 if
#                             missing): enough for a dumb-HTTP git clone
#   POST /v1/chat/completions OpenAI's shape: wants "Authorization: Bearer
#                             $ORIGIN_OPENAI_KEY" (else 401); "stream": true
#                             answers server-sent chat.completion.chunk events
#   POST /v1/messages         Anthropic's shape: wants "x-api-key:
#                             $ORIGIN_ANTHROPIC_KEY" (else 401) and an
#                             anthropic-version header; streams on "stream"
#                             (each key may instead be read, once, from the
#                             file $ORIGIN_..._KEY_FILE: then it is in no
#                             process's environment)
#   /echo-headers             every request header line it received, as text
#   /echo-headers-chunked     the same, in chunks of a few bytes, so that a
#                             header's value straddles chunk (and TLS record)
#                             boundaries
#   GET /sse-gate?flag=NAME   event 1, then waits (10 s at most) for the file
#                             $ORIGIN_FLAG_DIR/NAME, then event 2; logs
#                             "sse-gate released-by-flag|released-by-timeout
#                             flag=NAME". A client that reads event 1 and then
#                             makes the file proves that event 1 reached it
#                             before the origin had sent the rest: no timing
#   GET /ws (Upgrade: websocket) a websocket that echoes each message (small
#                             frames, 64 at most, 10 s idle at most)
#
# Each log line is "METHOD PATH host=HOST auth=real|wrong|none": whether the
# credential headers (Authorization, x-api-key) held the keys above. Never
# a key itself: the log is readable from the test world's sandboxes, and
# tests look for the keys everywhere a sandbox can read.
import base64, hashlib, hmac, http.server, json, os, re, socketserver, ssl, struct, sys
import threading, time
from urllib.parse import parse_qs, urlsplit

log_path, cert, key, addrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
lock = threading.Lock()

REPLY = "hello from the test origin"
REPLY_PARTS = ["hello", " from", " the", " test", " origin"]
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_BODY = 16 << 20


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def load_key(var):
    """$VAR, or the contents of the file $VAR_FILE without trailing newlines
    (as sluice reads a secret file), or None."""
    if os.environ.get(var):
        return os.environ[var]
    path = os.environ.get(var + "_FILE")
    if path:
        with open(path) as f:
            return f.read().rstrip("\r\n") or None
    return None


KEYS = {"authorization": load_key("ORIGIN_OPENAI_KEY"),
        "x-api-key": load_key("ORIGIN_ANTHROPIC_KEY")}


def expected(name):
    """The value a credential header must hold, or None when not configured."""
    k = KEYS[name]
    if k and name == "authorization":
        return "Bearer " + k
    return k


def is_real(name, value):
    want = expected(name)
    return want is not None and hmac.compare_digest(value.encode(), want.encode())


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # ---- helpers ----

    def auth(self):
        """real when every credential header present holds its key, wrong when
        one does not, none when there is none."""
        seen = []
        for name in ("authorization", "x-api-key"):
            for v in self.headers.get_all(name) or []:
                seen.append(is_real(name, v))
        if not seen:
            return "none"
        return "real" if all(seen) else "wrong"

    def single_real(self, name):
        values = self.headers.get_all(name) or []
        return len(values) == 1 and is_real(name, values[0])

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while len(out) <= MAX_BODY:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return out
                out += self.rfile.read(size)
                self.rfile.readline(1024)
            raise ValueError("request body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(n) if n else b""

    def send(self, code, body, ctype="text/plain", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for h, v in headers:
            self.send_header(h, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, code, obj, headers=()):
        self.send(code, json.dumps(obj).encode(), "application/json", headers)

    def start_chunked(self, ctype, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        for h, v in headers:
            self.send_header(h, v)
        self.end_headers()

    def chunk(self, data):
        # One write per chunk: with TLS, one record per chunk.
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, data, event=None):
        out = ("event: %s\n" % event if event else "") + "data: %s\n\n" % data
        self.chunk(out.encode())

    def json_body(self):
        try:
            body = json.loads(self.read_body() or b"null")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    def setup(self):
        super().setup()
        # One line per connection, in LOG.conns (kept out of LOG, whose
        # lines tests count): the peer's port, for TLS whether the session
        # was resumed and the suite the client's offer got, so tests see
        # reuse, resumption and what the upstream leg negotiated.
        if isinstance(self.request, ssl.SSLSocket):
            with lock, open(log_path + ".conns", "a") as f:
                f.write("conn peer=%d resumed=%d cipher=%s\n" % (
                    self.client_address[1], int(self.request.session_reused),
                    (self.request.cipher() or ("?",))[0]))

    # ---- the routes ----

    def handle_one(self):
        u = urlsplit(self.path)
        log("%s %s host=%s auth=%s" % (self.command, self.path, self.headers.get("Host"),
                                        self.auth()))
        root = os.environ.get("ORIGIN_ROOT")
        if root and self.path.startswith("/files/") and self.command in ("GET", "HEAD"):
            rel = self.path[len("/files/"):].split("?")[0]
            full = os.path.realpath(os.path.join(root, rel))
            if full.startswith(os.path.realpath(root) + "/") and os.path.isfile(full):
                data = open(full, "rb").read()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(data)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
            return
        if u.path == "/v1/chat/completions" and self.command == "POST":
            return self.openai()
        if u.path == "/v1/messages" and self.command == "POST":
            return self.anthropic()
        if u.path in ("/echo-headers", "/echo-headers-chunked"):
            return self.echo_headers(u.path.endswith("-chunked"))
        if u.path == "/compact-headers":
            # 120 headers written as tightly as HTTP allows ("Name:v"), so a
            # gateway that rewrites them ("Name: v") needs more room than
            # the head it read.
            self.wfile.write(b"HTTP/1.1 200 OK\r\n" +
                             b"".join(b"X-%d:v\r\n" % i for i in range(120)) +
                             b"Content-Length: 8\r\n\r\ncompact\n")
            return
        if u.path == "/echo-auth-cut":
            # The Authorization header's value but its last byte, in a
            # body that promises more, then the connection ends: a
            # scrubber holds those bytes back (they could still become
            # the key), and must drop them, not keep them for the next
            # response it scrubs.
            self.read_body()
            v = (self.headers.get("Authorization") or "").encode()
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: 4096\r\n\r\nauth=" + v[:-1])
            self.wfile.flush()
            self.close_connection = True
            return
        if u.path == "/close":
            # Answers, then closes the connection: the next request needs
            # a new one (and may resume the TLS session).
            self.send_response(200)
            self.send_header("Content-Length", "7")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"closed\n")
            self.close_connection = True
            return
        if u.path == "/sse-gate" and self.command == "GET":
            return self.sse_gate(parse_qs(u.query).get("flag", [""])[0])
        if u.path == "/ws" and self.command == "GET" and self.headers.get("Upgrade"):
            return self.websocket()
        body = self.read_body()
        out = ("origin %s %s host=%s body=%d\n" % (self.command, self.path,
               self.headers.get("Host"), len(body))).encode()
        if self.path.startswith("/big"):
            out = b"x" * (4 << 20)
        self.send(200, out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = handle_one

    def openai(self):
        body = self.json_body()
        rid = [("x-request-id", "req_test_%d" % time.monotonic_ns())]
        if not self.single_real("authorization"):
            return self.send_json(401, {"error": {
                "message": "Incorrect API key provided.", "type": "invalid_request_error",
                "param": None, "code": "invalid_api_key"}}, rid)
        if body is None or not isinstance(body.get("messages"), list) or not body.get("model"):
            return self.send_json(400, {"error": {
                "message": "'model' and 'messages' are required.",
                "type": "invalid_request_error", "param": None, "code": None}}, rid)
        model, created, cid = str(body["model"]), int(time.time()), "chatcmpl-test%d" % os.getpid()
        if not body.get("stream"):
            return self.send_json(200, {
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY,
                                                     "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 9, "completion_tokens": len(REPLY_PARTS),
                          "total_tokens": 9 + len(REPLY_PARTS)},
                "system_fingerprint": None}, rid)

        def chunk(delta, finish=None):
            return json.dumps({
                "id": cid, "object": "chat.completion.chunk", "created": created,
                "model": model, "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": finish}]})
        self.start_chunked("text/event-stream; charset=utf-8",
                           rid + [("Cache-Control", "no-cache")])
        self.sse(chunk({"role": "assistant", "content": ""}))
        for part in REPLY_PARTS:
            self.sse(chunk({"content": part}))
        self.sse(chunk({}, "stop"))
        self.sse("[DONE]")
        self.end_chunked()

    def anthropic(self):
        body = self.json_body()
        rid = [("request-id", "req_test_%d" % time.monotonic_ns())]

        def error(code, kind, message):
            self.send_json(code, {"type": "error", "error": {"type": kind, "message": message}},
                           rid)
        if not self.single_real("x-api-key"):
            return error(401, "authentication_error", "invalid x-api-key")
        if not self.headers.get("anthropic-version"):
            return error(400, "invalid_request_error", "anthropic-version: header is required")
        if (body is None or not body.get("model") or not isinstance(body.get("messages"), list)
                or not isinstance(body.get("max_tokens"), int)):
            return error(400, "invalid_request_error",
                         "model, messages and max_tokens are required")
        model, mid = str(body["model"]), "msg_test%d" % os.getpid()
        usage = {"input_tokens": 9, "output_tokens": len(REPLY_PARTS)}
        if not body.get("stream"):
            return self.send_json(200, {
                "id": mid, "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": REPLY}],
                "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}, rid)
        self.start_chunked("text/event-stream; charset=utf-8",
                           rid + [("Cache-Control", "no-cache")])

        def ev(kind, obj):
            obj = dict(type=kind, **obj)
            self.sse(json.dumps(obj), kind)
        ev("message_start", {"message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 1}}})
        ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        ev("ping", {})
        for part in REPLY_PARTS:
            ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta",
                                                             "text": part}})
        ev("content_block_stop", {"index": 0})
        ev("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                             "usage": {"output_tokens": len(REPLY_PARTS)}})
        ev("message_stop", {})
        self.end_chunked()

    def echo_headers(self, chunked):
        self.read_body()
        out = "".join("%s: %s\n" % (h, v) for h, v in self.headers.items()).encode()
        if not chunked:
            return self.send(200, out)
        self.start_chunked("text/plain")
        for i in range(0, len(out), 5):
            self.chunk(out[i:i + 5])
        self.end_chunked()

    def sse_gate(self, flag):
        d = os.environ.get("ORIGIN_FLAG_DIR")
        if not d or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", flag):
            return self.send(400, b"sse-gate wants ?flag=NAME and ORIGIN_FLAG_DIR\n")
        self.start_chunked("text/event-stream", [("Cache-Control", "no-cache")])
        self.chunk(b"id: 1\ndata: event 1\n\n")
        how = "released-by-timeout"
        for _ in range(200):  # 10 s
            if os.path.exists(os.path.join(d, flag)):
                how = "released-by-flag"
                break
            time.sleep(0.05)
        log("sse-gate %s flag=%s" % (how, flag))
        self.chunk(b"id: 2\ndata: event 2\n\n")
        self.end_chunked()

    def websocket(self):
        wskey = (self.headers.get("Sec-WebSocket-Key") or "").strip()
        if "websocket" not in self.headers.get("Upgrade", "").lower() or not wskey:
            return self.send(400, b"not a websocket handshake\n")
        accept = base64.b64encode(hashlib.sha1((wskey + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.close_connection = True
        self.connection.settimeout(10)

        def read(n):
            data = self.rfile.read(n)
            if len(data) != n:
                raise EOFError
            return data

        def send(op, data):
            n = len(data)
            head = bytes([0x80 | op, n]) if n < 126 else bytes([0x80 | op, 126]) + struct.pack("!H", n)
            self.wfile.write(head + data)

        echoed = 0
        try:
            for _ in range(64):
                b0, b1 = read(2)
                op, n = b0 & 0x0F, b1 & 0x7F
                if n == 126:
                    n = struct.unpack("!H", read(2))[0]
                elif n == 127:
                    break  # more than this echo is meant for
                mask = read(4) if b1 & 0x80 else b"\0\0\0\0"
                data = bytes(c ^ mask[i % 4] for i, c in enumerate(read(n)))
                if op == 8:
                    send(8, data[:2])
                    break
                if op == 9:
                    send(10, data)
                elif op in (1, 2):
                    send(op, data)
                    echoed += 1
        except (EOFError, OSError):
            pass
        log("ws echoed=%d" % echoed)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client the gateway cut off mid-answer is expected here


servers = []
for a in addrs:
    servers.append(Server((a, 80), Handler))
    if cert != "-":
        s = Server((a, 443), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
        servers.append(s)
for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
open(log_path + ".ready", "w").close()
threading.Event().wait()
