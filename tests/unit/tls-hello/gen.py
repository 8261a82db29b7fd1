#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerate the ClientHello test vectors in this directory.

Each .bin file holds the first bytes a real client sent: the TLS records that
carry its ClientHello. Python's ssl module writes a hello into a MemoryBIO
without any network; openssl s_client talks to a listener on 127.0.0.1 that
records what arrives and then hangs up. The vectors are committed, so this
only needs running when a vector is added.

    python3 tests/unit/tls-hello/gen.py [OUTDIR]
"""
import os
import socket
import ssl
import subprocess
import sys
import threading

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def python_hello(name, server_hostname, maxver=None, alpn=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if maxver:
        ctx.maximum_version = maxver
    if alpn:
        ctx.set_alpn_protocols(alpn)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    write(name, outgoing.read())


def openssl_hello(name, args):
    """Run s_client against a loopback listener and keep its first flight."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = bytearray()

    def accept():
        conn, _ = srv.accept()
        conn.settimeout(2)
        try:
            while len(got) < 5 or len(got) < 5 + int.from_bytes(got[3:5], "big"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                got.extend(chunk)
        finally:
            conn.close()

    t = threading.Thread(target=accept)
    t.start()
    subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}"] + args,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=10)
    t.join()
    srv.close()
    write(name, bytes(got))


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")


python_hello("python-tls13.bin", "api.example.com", alpn=["h2", "http/1.1"])
python_hello("python-tls12.bin", "API.Example.COM", maxver=ssl.TLSVersion.TLSv1_2)
python_hello("python-nosni.bin", None)
openssl_hello("openssl-tls13.bin",
              ["-servername", "www.example.org", "-alpn", "http/1.1"])
openssl_hello("openssl-tls12.bin", ["-servername", "tls12.example.net", "-tls1_2"])

# Fuzz seeds for tests/fuzz/fuzz-tls-hello.c, whose first byte picks the mode:
# 0 the raw records, 1 the handshake body to wrap in one record, 2 the body to
# wrap in records of a size the second byte picks.
seeds = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "..", "..", "fuzz", "corpus", "tls-hello")
if len(sys.argv) == 1 and os.path.isdir(seeds):
    for name in sorted(os.listdir(out)):
        if not name.endswith(".bin"):
            continue
        with open(os.path.join(out, name), "rb") as f:
            data = f.read()
        stem = name[:-4]
        body = data[9:]
        for tag, seed in (("raw", b"\0" + data), ("body", b"\1" + body),
                          ("split", b"\2\x20" + body)):
            with open(os.path.join(seeds, f"{stem}-{tag}"), "wb") as f:
                f.write(seed)
