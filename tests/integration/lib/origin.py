# SPDX-License-Identifier: MIT
# The test world's origin: HTTP on every address given, and HTTPS on :443
# when a certificate is given. Logs every request line it serves (one per
# line) to LOG, so tests can prove what did and did not reach the origin.
# Usage: origin.py LOG CERT|- KEY|- ADDR...   (runs until killed)
# With ORIGIN_ROOT set, GET /files/PATH serves that file (404 if missing),
# enough for a dumb-HTTP git clone.
import http.server, os, socketserver, ssl, sys, threading

log_path, cert, key, addrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one(self):
        with lock, open(log_path, "a") as f:
            f.write("%s %s host=%s\n" % (self.command, self.path, self.headers.get("Host")))
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
        body = b""
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            body = self.rfile.read(n)
        out = ("origin %s %s host=%s body=%d\n" % (self.command, self.path,
               self.headers.get("Host"), len(body))).encode()
        if self.path.startswith("/big"):
            out = b"x" * (4 << 20)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_one


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
