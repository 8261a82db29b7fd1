#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What TLS inspection costs, next to a direct connection and a plain CONNECT
# tunnel, measured side by side in one run. An nginx origin (HTTPS :443,
# keep-alive) runs in the test world's internet namespace; `sluice gateway`
# runs in its host namespace with one inspected host (methods + credential
# injection) and one passthrough host; the clients (Python http.client) run
# in the host namespace too. For each way in (direct, sluice passthrough,
# sluice inspected, and squid CONNECT if squid is installed) it measures:
#
#   1. N sequential small (~300 byte JSON) GETs on one kept-alive connection;
#   2. N sequential small GETs, each on a new connection (a new TCP connect,
#      CONNECT and TLS handshake from the client every time);
#   3. throughput of a 1 MiB response on a kept-alive connection;
#   4. POSTS (default N/5) sequential POSTs of a small JSON body on one
#      kept-alive connection, the head and the body in two writes (as many
#      clients send them), to a location that reads the body before it
#      answers: where Nagle's algorithm meets delayed ACKs;
#   4b. the same POSTs, each after 20 ms of quiet (not timed), as an agent
#      that thinks between two calls of its model API: what the inspected
#      path's spare origin connection (inspect-upstream.c) is for;
#   5. sluice's memory (VmRSS, VmHWM) and CPU time after all of it.
#
# With each figure: p50/p99/max of single requests (a floor such as 40 ms
# would show Nagle or delayed-ACK trouble), the proxy's CPU time per request
# or per MiB (sluice's, or squid's), and how many connections the origin
# accepted (inspected hosts' upstream connections should be pooled).
#
# Each figure is the median of REPS repetitions (default 5), the ways in
# interleaved within each repetition. Prints absolute numbers and ratios to
# direct; asserts nothing about timing (it fails only if the world cannot be
# set up or a request does not get the answer it should). Runs as root, in
# namespaces it creates and removes; no packet leaves loopback and TEST-NET.
#
# Usage: bench/run-inspect.sh [PATH-TO-SLUICE] [N]     (N default 500)
# Environment: REPS (default 5), BIG (1 MiB downloads per repetition,
# default N/10, at least 10), POSTS (default N/5, at least 10); ONLY, a
# comma-separated subset of keep-alive,new,big,post,post-idle,post-stream to run
# (STREAM_MS, the pause inside a streamed answer, default 5); WAYS, of
# passthrough,inspected,squid (direct always runs); PROFILE=perf
# (perf record of the gateway, its report after the table; PERF_FREQ
# samples a second, default 2000) or
# PROFILE=strace (strace -c -f; STRACE_OPTS replaces -c); PROFILE_OUT, a
# directory to keep perf.data or strace.txt in.
# Exit: 0 ran, 1 setup failed, 77 skipped (not root, or no nginx).
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../build/cli/sluice}}")
N=${2:-500}
REPS=${REPS:-5}
BIG=${BIG:-$((N / 10 < 10 ? 10 : N / 10))}
POSTS=${POSTS:-$((N / 5 < 10 ? 10 : N / 5))}
ONLY=${ONLY:-keep-alive,new,big,post,post-idle,post-stream}
STREAM_MS=${STREAM_MS:-5}
WAYS=${WAYS:-passthrough,inspected,squid}
PROFILE=${PROFILE:-}
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "run-inspect.sh: needs root" >&2; exit 77; }
[ -x "$SLUICE" ] || { echo "run-inspect.sh: no sluice at $SLUICE" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$NGINX" ]; then
	echo "run-inspect.sh: nginx is not installed; install it with" >&2
	echo "  apt-get install nginx-light    (or: apt-get install nginx)" >&2
	exit 77
fi
SQUID=$(command -v squid || { [ -x /usr/sbin/squid ] && echo /usr/sbin/squid; })
case ",$ONLY,$WAYS," in *[!a-z,-]* | ,,*) echo "run-inspect.sh: ONLY and WAYS are comma-separated lists" >&2; exit 1 ;; esac
case "$PROFILE" in "" | perf | strace) ;; *) echo "run-inspect.sh: PROFILE is perf or strace" >&2; exit 1 ;; esac
[ -z "$PROFILE" ] || command -v "$PROFILE" >/dev/null || { echo "run-inspect.sh: PROFILE=$PROFILE needs $PROFILE installed" >&2; exit 1; }
case "$N$REPS$BIG$POSTS$STREAM_MS" in *[!0-9]*) echo "run-inspect.sh: N, REPS, BIG, POSTS and STREAM_MS are numbers" >&2; exit 1 ;; esac
if [ "$N" -lt 1 ] || [ "$N" -gt 100000 ] || [ "$REPS" -lt 1 ] || [ "$REPS" -gt 50 ]; then
	echo "run-inspect.sh: N 1..100000, REPS 1..50" >&2
	exit 1
fi

. "$here/../tests/integration/world.sh"
. "$here/lib.sh"

gw_pid=
prof_pid=
cleanup() {
	trap '' INT TERM # a second signal must not cut the cleanup short
	if [ -n "$prof_pid" ]; then
		kill -INT "$prof_pid" 2>/dev/null
		wait "$prof_pid" 2>/dev/null
	fi
	if [ -n "$gw_pid" ]; then
		kill -TERM "$gw_pid" 2>/dev/null
		wait "$gw_pid" 2>/dev/null
	fi
	world_down # stops nginx, squid and dnsmasq by their pids
}
trap cleanup EXIT
trap 'exit 1' INT TERM
die() { echo "run-inspect.sh: $*" >&2; exit 1; }

world_up || die "the test world did not come up"
T=$WORLD_TMP
O=$WORLD_NET_ADDR   # the origin and the resolver, in the internet namespace
G=$WORLD_HOST_ADDR  # sluice and squid, in the host namespace
API=api.bench.test  # inspected, with a credential injected
PASS=pass.bench.test # passthrough: an opaque CONNECT tunnel

# ---- the resolver: the bench's names, nothing else ----
bench_resolver "$API" "$PASS"

# ---- the origin: nginx, its own prefix under $T ----
bench_origin_files "$API" "$PASS"
head -c 1048576 /dev/urandom >"$W/www/big.bin"
chmod 644 "$W/www/"*
SECRET=bench-secret-0123456789
cat >"$W/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $W/nginx.pid;
error_log $W/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $W/tmp/body;
	proxy_temp_path $W/tmp/proxy;
	fastcgi_temp_path $W/tmp/fastcgi;
	uwsgi_temp_path $W/tmp/uwsgi;
	scgi_temp_path $W/tmp/scgi;
	types { application/json json; application/octet-stream bin; }
	keepalive_timeout 75s;
	keepalive_requests 1000000;
	tcp_nodelay on;
	# /post answers only once it has read the whole body: nginx's return
	# would answer before it, so it is proxied to a local server.
	upstream reader { server 127.0.0.1:8081; keepalive 4; }
	upstream streamer { server 127.0.0.1:8082; keepalive 4; }
	server {
		listen $O:443 ssl;
		server_name $API $PASS;
		ssl_certificate $W/cert.pem;
		ssl_certificate_key $W/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		ssl_session_cache shared:bench:1m;
		root $W/www;
		location = /small { default_type application/json; alias $W/www/small.json; }
		location = /big { default_type application/octet-stream; alias $W/www/big.bin; }
		location = /post {
			proxy_pass http://reader;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
		location /stream/ {
			proxy_pass http://streamer;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}
		location = /auth {
			default_type text/plain;
			if (\$http_authorization = "Bearer $SECRET") { return 200 "injected\n"; }
			return 403 "no credential\n";
		}
	}
	server {
		listen 127.0.0.1:8081;
		location / { default_type application/json; return 200 '{"ok":true}\n'; }
	}
	server {
		listen $O:8080;
		location = /status { stub_status; }
	}
}
EOF
world_bg "$WORLD_NET" "$NGINX" -p "$W" -c "$W/nginx.conf" -e "$W/error.log"
nginx_pid=$!
# /stream/N, behind nginx: a POST's answer streamed as a model streams one,
# its head and first event at once and the rest N (STREAM_MS) ms later.
mkdir "$W/raw"
world_bg "$WORLD_NET" "$PY" "$here/../tests/integration/lib/raw-origin.py" "$W/raw" 127.0.0.1 \
	8082:stream
streamer_pid=$!

# ---- sluice: one inspected host with a credential, one passthrough ----
mkdir -m 700 "$T/ca"
printf '%s' "$SECRET" >"$T/bench.key"
chmod 600 "$T/bench.key"
cat >"$T/policy.yaml" <<EOF
version: 1
secrets:
  k: { file: $T/bench.key }
allow:
  - host: $API
    methods: [POST, GET]
    inject: { header: Authorization, prefix: "Bearer ", secret: k }
  - host: $PASS
EOF
chmod 644 "$T/policy.yaml"
world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen "$G:3128" \
	--resolver "$O:53" --ca-dir "$T/ca" --upstream-ca "$W/cert.pem" \
	--audit "$T/audit.log" --sandbox bench >"$T/gw.log" 2>&1
gw_pid=$!

# ---- squid, a CONNECT-passthrough peer, if it is installed ----
squid_port=
if [ -n "$SQUID" ]; then
	bench_squid 443
	squid_port=3129
else
	echo "squid not installed (apt-get install squid): its column is skipped"
fi

# ---- wait for everything to listen (bounded) ----
listening() { # NS ADDR PORT
	ip netns exec "$1" ss -Hltn "src $2 and sport = :$3" 2>/dev/null | grep -q .
}
wait_listen() { # NAME NS ADDR PORT PID
	for _ in $(seq 100); do
		listening "$2" "$3" "$4" && return 0
		kill -0 "$5" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
wait_listen nginx "$WORLD_NET" "$O" 443 "$nginx_pid" ||
	die "nginx did not start: $(cat "$W/error.log" 2>/dev/null)"
wait_listen streamer "$WORLD_NET" 127.0.0.1 8082 "$streamer_pid" || die "the /stream server did not start"
wait_listen sluice "$WORLD_HOST" "$G" 3128 "$gw_pid" ||
	die "sluice gateway did not start: $(cat "$T/gw.log")"
[ -s "$T/ca/ca.crt" ] || die "sluice made no $T/ca/ca.crt"
if [ -n "$squid_port" ] && ! wait_listen squid "$WORLD_HOST" "$G" 3129 "$squid_pid"; then
	echo "squid did not start (its column is skipped): $(tail -n 3 "$S/cache.log" 2>/dev/null)"
	squid_port=
fi

# squid -N is one process; count its CPU only if $! is squid itself.
squid_cpu_pid=
[ -n "$squid_port" ] && [ "$(cat "/proc/$squid_pid/comm" 2>/dev/null)" = squid ] && squid_cpu_pid=$squid_pid

mem() { # FIELD: from sluice's /proc status, in MiB
	awk -v f="$1:" '$1 == f { printf "%.1f", $2 / 1024 }' "/proc/$gw_pid/status"
}
cpu() { # user+system seconds sluice has used so far
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
		"/proc/$gw_pid/stat"
}
rss0=$(mem VmRSS)
cpu0=$(cpu)

echo "sluice TLS inspection bench: N=$N requests, $REPS repetitions (median), $BIG x 1 MiB, $POSTS POSTs;" \
	"nginx $("$NGINX" -v 2>&1 | sed 's/.*\///')$([ -n "$squid_port" ] && echo ", squid $("$SQUID" -v | sed -n '1s/.*Version //p')"), $(nproc) CPUs"

cat >"$T/client.py" <<'PY'
import http.client, json, os, socket, ssl, statistics, sys, time, urllib.request

origin, gw, n, reps, big, posts, api, passh, origin_ca, sluice_ca, squid_port, gw_pid, squid_pid, only, only_ways, stream_ms = sys.argv[1:17]
n, reps, big, posts, stream_ms = int(n), int(reps), int(big), int(posts), int(stream_ms)
HZ = os.sysconf("SC_CLK_TCK")

def cpu(pid):  # seconds of user+system time the process has used
    if not pid:
        return 0.0
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ

def ctx(ca):
    c = ssl.create_default_context(cafile=ca)  # trusts only this CA
    return c

# Each way in: (name, proxy or None, the host to ask for, the CA to trust).
# Passthrough and squid must show the origin's own certificate, inspected
# sluice's: a client that trusts only one of them proves which path it took.
ways = [("direct", None, api, ctx(origin_ca)),
        ("passthrough", (gw, 3128), passh, ctx(origin_ca)),
        ("inspected", (gw, 3128), api, ctx(sluice_ca))]
if squid_port:
    ways.append(("squid", (gw, int(squid_port)), api, ctx(origin_ca)))
proxy_pid = {"direct": None, "passthrough": gw_pid, "inspected": gw_pid, "squid": squid_pid}

def direct_connection(addr, timeout=None, source=None):
    return socket.create_connection((origin, 443), timeout, source)

def connect(way):
    name, proxy, host, c = way
    if proxy:
        conn = http.client.HTTPSConnection(proxy[0], proxy[1], context=c, timeout=15)
        conn.set_tunnel(host, 443)
    else:  # the name, for SNI and verification; the origin's address
        conn = http.client.HTTPSConnection(host, 443, context=c, timeout=15)
        conn._create_connection = direct_connection
    return conn

def get(conn, host, path, want=200):
    conn.request("GET", path, headers={"Host": host})
    r = conn.getresponse()
    body = r.read()
    if r.status != want:
        raise SystemExit("GET https://%s%s: %d, wanted %d" % (host, path, r.status, want))
    return body

def origin_accepts():  # TLS and status connections nginx has accepted so far
    s = urllib.request.urlopen("http://%s:8080/status" % origin, timeout=5).read().decode()
    return int(s.splitlines()[2].split()[0])

# Sanity, before any timing: inspection injects, passthrough does not.
for way, path, want, body in ((ways[2], "/auth", 200, b"injected\n"),
                              (ways[1], "/auth", 403, None)):
    conn = connect(way)
    got = get(conn, way[2], path, want)
    conn.close()
    if body is not None and got != body:
        raise SystemExit("%s: GET /auth answered %r" % (way[0], got))
conn = connect(ways[0])  # opens nginx's own keep-alive connection to its reader
conn.request("POST", "/post", body=b"{}", headers={"Host": api, "Content-Type": "application/json"})
r = conn.getresponse()
r.read()
conn.close()
if r.status != 200:
    raise SystemExit("direct: POST /post answered %d" % r.status)
print("checked: inspected requests carry the injected credential; passthrough ones do not")
ways = [w for w in ways if w[0] == "direct" or w[0] in only_ways.split(",")]

def keepalive(way):
    conn = connect(way)
    get(conn, way[2], "/small")  # handshake and warm-up, not timed
    lat = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        get(conn, way[2], "/small")
        lat.append(time.perf_counter() - t)
    total = time.perf_counter() - t0
    conn.close()
    return total / n * 1000, lat

def newconn(way):
    lat = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        conn = connect(way)
        get(conn, way[2], "/small")
        conn.close()
        lat.append(time.perf_counter() - t)
    total = time.perf_counter() - t0
    return total / n * 1000, lat

def throughput(way):
    conn = connect(way)
    get(conn, way[2], "/big")  # warm-up
    got = 0
    t0 = time.perf_counter()
    for _ in range(big):
        got += len(get(conn, way[2], "/big"))
    total = time.perf_counter() - t0
    conn.close()
    return got / total / 1e6, []

IDLE = 0.02  # an agent's pause between two calls of its model API
BODY = b'{"model":"bench-1","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'

def post_two_writes(way, pause=0.0, path="/post"):
    conn = connect(way)
    get(conn, way[2], "/small")  # handshake and warm-up, not timed
    lat = []
    total = 0.0
    for _ in range(posts):
        time.sleep(pause)  # not timed
        t = time.perf_counter()
        conn.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", way[2])
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(BODY)))
        conn.endheaders()  # the head: one write
        conn.send(BODY)    # the body: a second one
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit("POST https://%s%s: %d" % (way[2], path, r.status))
        lat.append(time.perf_counter() - t)
        total += lat[-1]
    conn.close()
    return total / posts * 1000, lat

def post_after_idle(way):
    return post_two_writes(way, IDLE)

def post_streamed(way):
    return post_two_writes(way, 0.0, "/stream/%d" % stream_ms)

# (label, function, higher is better, requests per run, what CPU is counted per)
# (the warm-up request counts: the proxy did that work too).
benches = [("keep-alive: ms/request", keepalive, False, n + 1, "request", "keep-alive"),
           ("new connection: ms/request", newconn, False, n, "request", "new"),
           ("1 MiB response: MB/s", throughput, True, big + 1, "MiB", "big"),
           ("POST, 2 writes: ms/request", post_two_writes, False, posts + 1, "request", "post"),
           ("POST after %d ms idle: ms/req" % (IDLE * 1000), post_after_idle, False, posts + 1,
            "request", "post-idle"),
           ("POST, answer streamed: ms/req", post_streamed, False, posts + 1, "request",
            "post-stream")]
benches = [b[:5] for b in benches if b[5] in only.split(",")]
res = {(b[0], w[0]): [] for b in benches for w in ways}
lats = {(b[0], w[0]): [] for b in benches for w in ways}
conns = {(b[0], w[0]): 0 for b in benches for w in ways}
cpus = {(b[0], w[0]): 0.0 for b in benches for w in ways}
for _ in range(reps):
    for bname, fn, _hib, _k, _u in benches:
        for way in ways:  # interleaved, so drift hits every column alike
            a0 = origin_accepts()
            c0 = cpu(proxy_pid[way[0]])
            v, lat = fn(way)
            cpus[(bname, way[0])] += cpu(proxy_pid[way[0]]) - c0
            conns[(bname, way[0])] += origin_accepts() - a0 - 1
            res[(bname, way[0])].append(v)
            lats[(bname, way[0])].extend(lat)

names = [w[0] for w in ways]
def row(label, cells):
    print("%-30s" % label + "".join("%13s" % c for c in cells))
print()
row("", names)
for bname, fn, higher_is_better, k, per in benches:
    med = {w: statistics.median(res[(bname, w)]) for w in names}
    row(bname, ["%.3f" % med[w] if not higher_is_better else "%.0f" % med[w] for w in names])
    row("  x direct", ["%.2fx" % (med[w] / med["direct"]) for w in names])
    if "passthrough" in med:  # the hop's own cost set aside: what inspecting adds
        row("  x passthrough", ["%.2fx" % (med[w] / med["passthrough"]) if w != "direct" else ""
                                for w in names])
    if lats[(bname, "direct")]:
        for q, label in ((50, "  p50 ms"), (99, "  p99 ms")):
            cells = []
            for w in names:
                l = sorted(lats[(bname, w)])
                cells.append("%.3f" % (l[min(len(l) - 1, len(l) * q // 100)] * 1000))
            row(label, cells)
        row("  max ms", ["%.1f" % (max(lats[(bname, w)]) * 1000) for w in names])
        row("  >= 20 ms, per run", ["%.1f" % (sum(x >= 0.020 for x in lats[(bname, w)]) / reps)
                                    for w in names])
    row("  proxy CPU ms/" + per, ["%.3f" % (cpus[(bname, w)] / (reps * k) * 1000)
                                  if proxy_pid[w] else "-" for w in names])
    row("  origin conns per run", ["%.1f" % (conns[(bname, w)] / reps) for w in names])
print()
for bname, fn, higher_is_better, k, per in benches:
    med = {w: statistics.median(res[(bname, w)]) for w in names}
    print("%-28s " % bname.split(":")[0] + ", ".join(
        "%s/direct %.2fx" % (w, med[w] / med["direct"]) for w in names[1:]))
PY
chmod 644 "$T/client.py"

# Bounded: every request has a 15 s timeout, and the whole client 10 minutes.
# PROFILE: attached to the gateway for the client's run only, stopped by
# its pid (SIGINT makes both write their results).
case "$PROFILE" in
perf) perf record -q --call-graph dwarf,16384 -F ${PERF_FREQ:-2000} -o "$T/perf.data" -p "$gw_pid" 2>"$T/prof.err" &
	prof_pid=$! ;;
strace) strace ${STRACE_OPTS:--c} -f -o "$T/strace.txt" -p "$gw_pid" 2>"$T/prof.err" &
	prof_pid=$! ;;
esac
if [ -n "$prof_pid" ]; then # attached before the first request (bounded)
	for _ in $(seq 100); do
		case "$PROFILE" in
		perf) [ -s "$T/perf.data" ] && break ;;
		strace) grep -q attached "$T/prof.err" 2>/dev/null && break ;;
		esac
		kill -0 "$prof_pid" 2>/dev/null || die "$PROFILE did not attach: $(cat "$T/prof.err")"
		sleep 0.1
	done
fi
world_host timeout 600 "$PY" "$T/client.py" "$O" "$G" "$N" "$REPS" "$BIG" "$POSTS" "$API" "$PASS" \
	"$W/cert.pem" "$T/ca/ca.crt" "$squid_port" "$gw_pid" "$squid_cpu_pid" "$ONLY" "$WAYS" "$STREAM_MS" || die "the client failed (gateway log: $(tail -n 5 "$T/gw.log"))"
if [ -n "$prof_pid" ]; then
	kill -INT "$prof_pid" 2>/dev/null
	wait "$prof_pid" 2>/dev/null
	prof_pid=
	echo
	[ -z "${PROFILE_OUT:-}" ] || cp "$T/perf.data" "$T/strace.txt" "$PROFILE_OUT/" 2>/dev/null
	case "$PROFILE" in
	perf) echo "perf report of the gateway over the client's run (self time; $T/perf.data):"
		perf report -q -i "$T/perf.data" --no-children --percent-limit 0.7 --stdio -g none 2>/dev/null | sed 's/  *$//' | head -60 ;;
	strace) echo "strace ${STRACE_OPTS:--c} -f of the gateway over the client's run:"
		head -30 "$T/strace.txt" ;;
	esac
fi

kill -0 "$gw_pid" 2>/dev/null || die "sluice gateway exited: $(tail -n 5 "$T/gw.log")"
echo
echo "sluice memory: VmRSS $rss0 MiB after start, $(mem VmRSS) MiB after the run (VmHWM $(mem VmHWM) MiB)"
echo "sluice CPU: $(awk -v a="$cpu0" -v b="$(cpu)" 'BEGIN { printf "%.2f", b - a }') s user+system over the run;" \
	"audit records written: $(wc -l <"$T/audit.log")"
if [ -n "$squid_port" ] && [ -r "/proc/$squid_pid/status" ]; then
	echo "squid memory: VmRSS $(awk '$1 == "VmRSS:" { printf "%.1f", $2 / 1024 }' "/proc/$squid_pid/status") MiB" \
		"(VmHWM $(awk '$1 == "VmHWM:" { printf "%.1f", $2 / 1024 }' "/proc/$squid_pid/status") MiB)"
fi
exit 0
