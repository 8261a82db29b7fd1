# SPDX-License-Identifier: MIT
# A git smart-HTTP origin for the test world, as GitHub serves one: HTTPS on
# ADDR:443, every request handed to `git http-backend` (CGI), pushes
# enabled, so that only sluice can stand between a client and a push.
# Every request line it served goes to LOG, one per line, before it is
# answered; LOG.ready appears once it listens.
#   git-origin.py LOG CERT KEY ADDR PROJECT-ROOT
import http.server, os, ssl, subprocess, sys, threading

log_path, cert, key, addr, root = sys.argv[1:6]
lock = threading.Lock()
MAX_BODY = 64 << 20


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    raise ValueError("body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n else b""

    def handle_one(self):
        with lock, open(log_path, "a") as f:
            f.write("%s %s host=%s\n" % (self.command, self.path, self.headers.get("Host")))
        path, _, query = self.path.partition("?")
        data = self.body()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)),
            "REMOTE_ADDR": self.client_address[0],
            # http-backend serves receive-pack only to an authenticated
            # user (or with http.receivepack set): let it, so a push that
            # reaches this origin lands.
            "REMOTE_USER": "tester",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
        }
        p = subprocess.run(["git", "http-backend"], input=data, env=env,
                           capture_output=True, timeout=60)
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = p.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_HEAD = do_PUT = handle_one


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


srv = Server((addr, 443), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(log_path + ".ready", "w").close()
srv.serve_forever()
