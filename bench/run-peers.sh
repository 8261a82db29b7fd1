#!/bin/bash
# SPDX-License-Identifier: MIT
#
# sluice next to its peers, measured side by side in one run: wrk (and curl,
# for the tunnel) against an nginx origin directly, through `sluice gateway`
# (standalone, audit log on), through squid and through tinyproxy. The
# origin runs in the test world's internet namespace (tests/integration/
# world.sh) on 203.0.113.2; the proxies and the clients run in its host
# namespace on 203.0.113.1, so every proxied request crosses the same veth
# as a direct one. Nothing is pinned: the clients, the proxy under test and
# nginx share the machine's CPUs. For each way in (direct, sluice, squid,
# tinyproxy) it measures:
#
#   1. keep-alive: wrk, C connections (default 50), small (~300 byte) GETs
#      for DURATION seconds: req/s, p50 and p99 latency, and requests per
#      CPU-second of the proxy (utime+stime from /proc/PID/stat);
#   2. new connection per request: the same with `Connection: close`;
#   3. CONNECT tunnel: a BIG_MIB (default 256) MiB HTTPS download with curl
#      through the proxy (-p), or straight to the origin: MB/s (10^6 bytes),
#      proxy CPU per MiB;
#   4. the same download of plain HTTP from port 8000, which sluice's policy
#      relays as opaque bytes (protocol: tcp): the relay without TLS;
#   5. the proxy's peak RSS (VmHWM) after all of it;
#   6. split: sluice's keep-alive load shared by one gateway per CPU (a
#      loop per core, modelled), next to the same wrk processes all on one;
#   7. `sluice run -- true` next to `unshare -n` and `bwrap` (bench/
#      run-startup.sh, with STARTUP_N runs; STARTUP_N=0 leaves it out).
#
# Every figure comes from checked responses: a wrk run with any error
# (connect, read, write, timeout, or a status >= 400), or whose responses
# are shorter than the body, or whose requests the origin did not serve
# (nginx's own request counter), is reported as failed (the whole bench
# exits 1); a download must be 200 with exactly BIG_MIB MiB (over TLS, verified
# against the origin's own certificate, so no proxy can have answered it).
# Each figure is the median of REPS repetitions, the ways in interleaved
# within each repetition so that drift hits every column alike. Ratios are
# to direct, measured in the same run. It asserts nothing about timing.
#
# With STRACE=1 it then runs one more keep-alive wrk run through sluice
# with `strace -c -f` attached to the gateway, and prints its system calls
# per request (strace slows the gateway down; the counts per request are
# what it is for, not the time). With PERF=1, one more under `perf record
# -g`, and where the gateway's CPU went (perf report, self time by
# symbol).
#
# Runs as root, in namespaces it creates and removes; no packet leaves
# loopback and TEST-NET. Every process is started and stopped by its pid.
#
# Usage: bench/run-peers.sh [PATH-TO-SLUICE]
# Environment: DURATION (seconds per wrk run, default 5), REPS (default 3),
# CONNS (wrk connections, default 50), THREADS (wrk threads, default: the
# CPUs), STRACE (1: count sluice's system calls in a keep-alive run), PERF (1:
# profile one with perf; PERF_KEEP=FILE keeps its perf.data), STARTUP_N
# (default 20), ROWS (which benches: a comma list of keepalive, newconn,
# connect, split; default all), BIG_MIB (the download's size, default
# 256), BASE (another sluice binary, a build from before a change: one more
# column, "sluice-base", its gateway on :3131 with the same policy).
# Exit: 0 ran, 1 setup or a run failed, 77 skipped (not root, or wrk, nginx,
# curl or python3 missing; squid and tinyproxy only lose their column).
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../build/cli/sluice}}")
DURATION=${DURATION:-5}
REPS=${REPS:-3}
CONNS=${CONNS:-50}
THREADS=${THREADS:-$(nproc)}
STRACE=${STRACE:-0}
PERF=${PERF:-0}
STARTUP_N=${STARTUP_N:-20}
export ROWS=${ROWS:-keepalive,newconn,connect,split}
BIG_MIB=${BIG_MIB:-256}
BASE=${BASE:+$(realpath "$BASE")}
PY=/usr/bin/python3
me=run-peers.sh
[ "$(id -u)" = 0 ] || { echo "$me: needs root" >&2; exit 77; }
[ -x "$SLUICE" ] || { echo "$me: no sluice at $SLUICE" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "$me: no sluice at BASE=$BASE" >&2; exit 1; }
case "$DURATION$REPS$CONNS$THREADS$STRACE$PERF$STARTUP_N$BIG_MIB" in
*[!0-9]*) echo "$me: DURATION, REPS, CONNS, THREADS, STRACE, PERF, STARTUP_N and BIG_MIB are numbers" >&2; exit 1 ;;
esac
if [ "$DURATION" -lt 1 ] || [ "$DURATION" -gt 600 ] || [ "$REPS" -lt 1 ] || [ "$REPS" -gt 50 ] ||
	[ "$CONNS" -lt 1 ] || [ "$CONNS" -gt 400 ] || [ "$THREADS" -lt 1 ] || [ "$THREADS" -gt "$CONNS" ] ||
	[ "$BIG_MIB" -lt 1 ] || [ "$BIG_MIB" -gt 4096 ]; then
	echo "$me: DURATION 1..600, REPS 1..50, CONNS 1..400, THREADS 1..CONNS, BIG_MIB 1..4096" >&2
	exit 1
fi
for r in ${ROWS//,/ }; do
	case $r in keepalive | newconn | connect | split) ;; *) echo "$me: ROWS: keepalive, newconn, connect, split" >&2; exit 1 ;; esac
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WRK=$(command -v wrk)
SQUID=$(command -v squid || { [ -x /usr/sbin/squid ] && echo /usr/sbin/squid; })
TINYPROXY=$(command -v tinyproxy || { [ -x /usr/sbin/tinyproxy ] && echo /usr/sbin/tinyproxy; })
missing=
[ -x "$NGINX" ] || missing="$missing nginx-light"
[ -n "$WRK" ] || missing="$missing wrk"
command -v curl >/dev/null || missing="$missing curl"
[ -x "$PY" ] || missing="$missing python3"
if [ "$STRACE" = 1 ] && ! command -v strace >/dev/null; then missing="$missing strace"; fi
if [ "$PERF" = 1 ] && ! command -v perf >/dev/null; then missing="$missing linux-perf"; fi
if [ -n "$missing" ]; then
	echo "$me: missing:$missing; install with" >&2
	echo "  apt-get install$missing    (squid and tinyproxy for their columns)" >&2
	exit 77
fi

. "$here/../tests/integration/world.sh"
. "$here/lib.sh"

gw_pid=
base_pid=
cleanup() {
	trap '' INT TERM # a second signal must not cut the cleanup short
	for p in $gw_pid $base_pid $split_pids; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	world_down # stops nginx, squid, tinyproxy and dnsmasq by their pids
}
trap cleanup EXIT
trap 'exit 1' INT TERM
die() { echo "$me: $*" >&2; exit 1; }

world_up || die "the test world did not come up"
T=$WORLD_TMP
O=$WORLD_NET_ADDR  # the origin and the resolver, in the internet namespace
G=$WORLD_HOST_ADDR # the proxies and the clients, in the host namespace
HOST=origin.bench.test
# A new connection per request, 50 at a time, for seconds: more than the
# default ephemeral ports (28,000) would hold in TIME_WAIT. In our own
# namespaces only.
# The veth between the namespaces gets loopback's MTU (64 KiB), so that its
# legs (client or proxy to the origin) carry segments of the same size as
# the client-to-proxy leg over loopback.
ip -n "$WORLD_HOST" link set wh0 mtu 65535 && ip -n "$WORLD_NET" link set wi0 mtu 65535 ||
	die "could not set the veth's MTU"
for ns in "$WORLD_HOST" "$WORLD_NET"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" net.ipv4.tcp_tw_reuse=1 ||
		die "could not set the port range in $ns"
done

# ---- the resolver: the bench's names, nothing else ----
bench_resolver "$HOST"

# ---- the origin: nginx, its own prefix under $T ----
bench_origin_files "$HOST"
BIG=$((BIG_MIB * 1024 * 1024))
truncate -s "$BIG" "$W/www/big.bin" # sparse: no disk, the page cache's zeros
chmod 644 "$W/www/"*
cat >"$W/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $W/nginx.pid;
error_log $W/error.log warn;
worker_rlimit_nofile 16384;
events { worker_connections 8192; }
http {
	access_log off;
	client_body_temp_path $W/tmp/body;
	proxy_temp_path $W/tmp/proxy;
	fastcgi_temp_path $W/tmp/fastcgi;
	uwsgi_temp_path $W/tmp/uwsgi;
	scgi_temp_path $W/tmp/scgi;
	types { application/json json; application/octet-stream bin; }
	keepalive_timeout 75s;
	keepalive_requests 10000000;
	tcp_nodelay on;
	sendfile on;
	server {
		listen $O:80;
		listen $O:443 ssl;
		listen $O:8000;
		server_name $HOST;
		ssl_certificate $W/cert.pem;
		ssl_certificate_key $W/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		root $W/www;
		location = /small { default_type application/json; alias $W/www/small.json; }
		location = /big { default_type application/octet-stream; alias $W/www/big.bin; }
	}
	server {
		listen $O:8080;
		location = /status { stub_status; }
	}
}
EOF
world_bg "$WORLD_NET" "$NGINX" -p "$W" -c "$W/nginx.conf" -e "$W/error.log"
nginx_pid=$!

# ---- sluice: the origin's host allowed, on 80 and 443 (the default) ----
# and on 8000 as opaque bytes (protocol: tcp): a tunnel relayed without
# TLS at its ends, so that the relay's own cost is not hidden behind the
# client's and the origin's encryption.
cat >"$T/policy.yaml" <<EOF
version: 1
allow:
  - host: $HOST
  - host: $HOST
    ports: [8000]
    protocol: tcp
EOF
chmod 644 "$T/policy.yaml"
world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen "$G:3128" \
	--resolver "$O:53" --audit "$T/audit.log" --sandbox bench >"$T/gw.log" 2>&1
gw_pid=$!
if [ -n "$BASE" ]; then
	world_host_bg "$BASE" gateway --policy "$T/policy.yaml" --listen "$G:3131" \
		--resolver "$O:53" --audit "$T/audit-base.log" --sandbox bench >"$T/gw-base.log" 2>&1
	base_pid=$!
fi
export BASE_PID=$base_pid

# ---- split: the keep-alive load shared by one gateway per CPU ----
# A model of a loop per core (SO_REUSEPORT listeners or a thread per
# loop), without building one: the same binary and policy, a gateway
# more per CPU beyond the first, on :3141 and up; wrk splits its
# connections among them. Where that does not beat one gateway, a loop per
# core would not either.
split_pids=
case ",$ROWS," in *,split,*)
	for i in $(seq 2 "$(nproc)"); do
		world_host_bg "$SLUICE" gateway --policy "$T/policy.yaml" --listen "$G:$((3139 + i))" \
			--resolver "$O:53" --audit "$T/audit-split-$i.log" --sandbox bench >"$T/gw-split-$i.log" 2>&1
		split_pids="$split_pids $!"
	done ;;
esac
export SPLIT_PIDS=${split_pids# }

# ---- squid: a forward proxy (plain HTTP and CONNECT), no cache ----
squid_pid=
if [ -n "$SQUID" ]; then
	bench_squid "443 8000" "max_filedescriptors 16384"
else
	echo "squid not installed (apt-get install squid): its column is skipped"
fi

# ---- tinyproxy: the same, with the origin's name in its own /etc/hosts ----
# tinyproxy resolves with getaddrinfo(): in a mount namespace of its own
# (unshare -m, private: nothing of it is seen outside), /etc/hosts is
# bind-mounted over with a line for the origin and /etc/resolv.conf with
# our dnsmasq, so it never asks the machine's resolver. tinyproxy fsync()s
# its log after every line, three per request: on a disk that alone holds
# it to a few hundred requests per second, so its log is on a tmpfs there,
# and the figures are the proxy's rather than the disk's.
tiny_pid=
if [ -n "$TINYPROXY" ]; then
	P=$T/tinyproxy
	mkdir -p "$P"
	printf '127.0.0.1 localhost\n%s %s\n%s proxy.bench.test\n' "$O" "$HOST" "$G" >"$P/hosts"
	printf 'nameserver %s\n' "$O" >"$P/resolv.conf"
	chmod 644 "$P/hosts" "$P/resolv.conf"
	mkdir -p "$P/log"
	getent passwd nobody >/dev/null && chown nobody "$P"
	cat >"$P/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port 3130
Listen $G
Timeout 600
MaxClients 1024
LogFile "$P/log/tinyproxy.log"
LogLevel Connect
ConnectPort 443
ConnectPort 8000
EOF
	chmod 644 "$P/tinyproxy.conf"
	world_bg "$WORLD_HOST" unshare -m --propagation private sh -c \
		'mount --bind "$1/hosts" /etc/hosts && mount --bind "$1/resolv.conf" /etc/resolv.conf &&
		mount -t tmpfs -o size=64m,mode=0777 tinyproxy-log "$1/log" && exec "$2" -d -c "$3"' sh \
		"$P" "$TINYPROXY" "$P/tinyproxy.conf" >"$P/stdout.log" 2>&1
	tiny_pid=$!
else
	echo "tinyproxy not installed (apt-get install tinyproxy): its column is skipped"
fi

# ---- wait for everything to listen (bounded) ----
listening() { # NS ADDR PORT
	ip netns exec "$1" ss -Hltn "src $2 and sport = :$3" 2>/dev/null | grep -q .
}
wait_listen() { # NS ADDR PORT PID
	for _ in $(seq 100); do
		listening "$1" "$2" "$3" && return 0
		kill -0 "$4" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
wait_listen "$WORLD_NET" "$O" 80 "$nginx_pid" && wait_listen "$WORLD_NET" "$O" 443 "$nginx_pid" &&
	wait_listen "$WORLD_NET" "$O" 8000 "$nginx_pid" ||
	die "nginx did not start: $(cat "$W/error.log" 2>/dev/null)"
wait_listen "$WORLD_HOST" "$G" 3128 "$gw_pid" || die "sluice gateway did not start: $(cat "$T/gw.log")"
[ -z "$base_pid" ] || wait_listen "$WORLD_HOST" "$G" 3131 "$base_pid" ||
	die "BASE's sluice gateway did not start: $(cat "$T/gw-base.log")"
i=2
for p in $split_pids; do
	wait_listen "$WORLD_HOST" "$G" $((3139 + i)) "$p" ||
		die "split: sluice gateway $i did not start: $(cat "$T/gw-split-$i.log")"
	i=$((i + 1))
done
if [ -n "$squid_pid" ] && ! wait_listen "$WORLD_HOST" "$G" 3129 "$squid_pid"; then
	echo "squid did not start (its column is skipped): $(tail -n 3 "$S/cache.log" 2>/dev/null)"
	squid_pid=
fi
if [ -n "$tiny_pid" ] && ! wait_listen "$WORLD_HOST" "$G" 3130 "$tiny_pid"; then
	echo "tinyproxy did not start (its column is skipped): $(tail -n 3 "$P/stdout.log" "$P/tinyproxy.log" 2>/dev/null)"
	tiny_pid=
fi
# $! must be the proxy itself (ip, nsenter, unshare and sh exec it): its
# /proc/PID/stat is what the CPU and memory figures read.
for p in "sluice:$gw_pid" "sluice:$base_pid" "squid:$squid_pid" "tinyproxy:$tiny_pid" $(printf 'sluice:%s ' $split_pids); do
	[ -z "${p#*:}" ] || [ "$(cat "/proc/${p#*:}/comm" 2>/dev/null)" = "${p%%:*}" ] ||
		die "pid ${p#*:} is $(cat "/proc/${p#*:}/comm" 2>/dev/null), not ${p%%:*}"
done

echo "sluice peers bench: wrk $CONNS connections, $THREADS threads, ${DURATION} s per run," \
	"$REPS repetitions (median), $BIG_MIB MiB CONNECT download; nothing pinned, $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), wrk $("$WRK" -v 2>&1 | sed -n '1s/^wrk \(debian\/\)\{0,1\}\([^ -]*\).*/\2/p')$(
	[ -n "$squid_pid" ] && echo ", squid $("$SQUID" -v | sed -n '1s/.*Version //p')")$(
	[ -n "$tiny_pid" ] && echo ", tinyproxy $("$TINYPROXY" -v | sed 's/^tinyproxy //')")"

cat >"$T/driver.py" <<'PY'
import os, re, shutil, statistics, subprocess, sys, time, urllib.request

(wrk, o, g, host, cert, duration, reps, conns, threads, big, tmp,
 gw_pid, squid_pid, tiny_pid, strace, perf) = sys.argv[1:17]
duration, reps, conns, threads, big = int(duration), int(reps), int(conns), int(threads), int(big)
HZ = os.sysconf("SC_CLK_TCK")
NOPROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # whatever http_proxy says
SMALL = 300  # bytes of /small's body

# (name, proxy port or None, the proxy's pid)
ways = [("direct", None, None), ("sluice", 3128, int(gw_pid))]
if os.environ.get("BASE_PID"):
    ways.append(("sluice-base", 3131, int(os.environ["BASE_PID"])))
if squid_pid:
    ways.append(("squid", 3129, int(squid_pid)))
if tiny_pid:
    ways.append(("tinyproxy", 3130, int(tiny_pid)))
names = [w[0] for w in ways]

def tree(pid):  # the proxy and every process below it (sluice's reader)
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(f[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out

def cpu(pid):  # user+system seconds of the proxy's processes (their threads too)
    if not pid:
        return 0.0
    s = 0
    for p in tree(pid):
        try:
            f = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        s += int(f[11]) + int(f[12])
    return s / HZ

def status(pid, field):  # kB
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0

def origin():  # (connections accepted, requests served) by nginx so far
    s = NOPROXY.open("http://%s:8080/status" % o, timeout=5).read().decode()
    a, _h, r = s.splitlines()[2].split()
    return int(a), int(r)

def passive_opens():  # TCP connections accepted in this (the host) namespace
    lines = [l.split() for l in open("/proc/net/snmp") if l.startswith("Tcp:")]
    return int(lines[1][lines[0].index("PassiveOpens")])

LUA = """
wrk.path = "%s"
wrk.headers["Host"] = "%s"
%s
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%d %%d %%d %%.0f %%.0f\\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""

def lua(way, close):
    path = "/small" if way[1] is None else "http://%s/small" % host
    f = os.path.join(tmp, "%s-%s.lua" % (way[0], "close" if close else "ka"))
    open(f, "w").write(LUA % (path, host, 'wrk.headers["Connection"] = "close"' if close else ""))
    return f

class Failed(Exception):
    pass

def wrk_run(way, close, secs=None, split=()):
    # split: more (port, pid) of gateways like way's (or way's own again),
    # each given its share of the connections and threads, run at once;
    # the figures are summed.
    gws = [(way[1], way[2])] + list(split)
    pids = set(pid for _, pid in gws)
    n = len(gws)
    argvs = []
    for i, (port, _) in enumerate(gws):
        url = "http://%s:%d/" % ((o, 80) if port is None else (g, port))
        argvs.append([wrk, "-t%d" % max(1, threads // n), "-c%d" % (conns // n + (i < conns % n)),
                      "-d%ds" % (secs or duration), "--timeout", "5s", "-s", lua(way, close), url])
    a0, r0 = origin()
    p0 = passive_opens()
    c0 = sum(cpu(pid) for pid in pids)
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
    outs = []
    for pr in procs:
        try:
            so, se = pr.communicate(timeout=(secs or duration) + 60)
        except subprocess.TimeoutExpired:
            pr.kill()
            so, se = pr.communicate()
        outs.append((pr.returncode, so, se))
    c1 = sum(cpu(pid) for pid in pids)
    p1 = passive_opens()
    a1, r1 = origin()
    parts = []
    for rc, so, se in outs:
        m = re.search(r"^RESULT (.*)$", so, re.M)
        if rc != 0 or not m:
            raise Failed("%s: wrk failed (%d): %s %s" % (way[0], rc, so, se))
        parts.append([float(x) for x in m.group(1).split()])
    # Summed over the parts; a part's rate is over its own run; the
    # latencies are the worst part's.
    rps = sum(q[0] / (q[1] / 1e6) for q in parts)
    req, nbytes, ec, er, ew, es, et = (sum(q[k] for q in parts) for k in (0, 2, 3, 4, 5, 6, 7))
    p50, p99 = max(q[8] for q in parts), max(q[9] for q in parts)
    errs = dict(connect=ec, read=er, write=ew, status=es, timeout=et)
    # A proxy that closes the connection after each response without
    # saying so (tinyproxy answers HTTP/1.1 without "Connection: close")
    # makes wrk send the next request into a closing socket: a read error,
    # and a reconnect. Those are tolerated as long as there are no more of
    # them than connections the proxy accepted: each then stands for a
    # connection closed after a complete response, and the responses wrk
    # counted are all whole. Anything else is a failed run.
    if way[1] is not None and er <= p1 - p0:
        errs["read"] = 0
    bad = {k: int(v) for k, v in errs.items() if v}
    served = r1 - r0 - 1  # our own status request counts once
    what = "%s, %s" % (way[0], "new connection" if close else "keep-alive")
    if req < 1 or bad:
        raise Failed("%s: %d responses, errors %s" % (what, req, bad))
    if nbytes / req < SMALL:
        raise Failed("%s: %.0f bytes per response, shorter than the body" % (what, nbytes / req))
    if served < req:
        raise Failed("%s: wrk counted %d responses, the origin served %d requests" % (what, req, served))
    return dict(rps=rps, req=req, p50=p50 / 1000, p99=p99 / 1000,
                cpu=c1 - c0, bpr=nbytes / req, closed=er / req,
                client_conns=(p1 - p0) / req, origin_conns=(a1 - a0 - 1) / req)

def download(way, tls=True):
    argv = ["curl", "-sS", "-o", "/dev/null", "--cacert", cert, "--max-time", "120",
            "-w", "%{http_code} %{size_download} %{time_total}"]
    port = 443 if tls else 8000
    if way[1] is None:
        argv += ["--noproxy", "*", "--resolve", "%s:%d:%s" % (host, port, o)]
    else:  # -p: a CONNECT tunnel for http:// too
        argv += ["-p", "-x", "http://%s:%d" % (g, way[1])]
    argv.append("https://%s/big" % host if tls else "http://%s:8000/big" % host)
    c0 = cpu(way[2])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    c1 = cpu(way[2])
    try:
        code, size, secs = out.stdout.split()
    except ValueError:
        raise Failed("%s, CONNECT :%d: curl: %s %s" % (way[0], port, out.stdout, out.stderr))
    if out.returncode != 0 or code != "200" or int(size) != big:
        raise Failed("%s, CONNECT :%d: curl exit %d, status %s, %s bytes of %d: %s" %
                     (way[0], port, out.returncode, code, size, big, out.stderr.strip()))
    return dict(mbs=big / float(secs) / 1e6, cpu=c1 - c0)

# One short run of each, not counted: connections, caches and resolvers
# warm, and the download in the page cache (the first read fills it).
ROWS = os.environ["ROWS"].split(",")
BENCHES = tuple(b for b, r in (("ka", "keepalive"), ("close", "newconn"), ("tunnel", "connect"),
                               ("plain", "connect"), ("split", "split")) if r in ROWS)
# split: sluice's keep-alive load shared by one gateway per CPU (the
# first is ways' own), next to the same wrk processes all on that one.
SPLIT = [(3141 + i, int(p)) for i, p in enumerate(os.environ.get("SPLIT_PIDS", "").split())]
if "split" in BENCHES and (not SPLIT or conns <= len(SPLIT)):
    BENCHES = tuple(b for b in BENCHES if b != "split")
    print("split: left out (%s)" % ("this machine has one CPU" if not SPLIT else
          "CONNS=%d leaves a gateway of the %d without a connection" % (conns, len(SPLIT) + 1)))
try:
    download(ways[0])
    for way in ways:
        if "ka" in BENCHES or "close" in BENCHES or "split" in BENCHES:
            wrk_run(way, False, 1)
    if "split" in BENCHES:
        wrk_run(ways[1], False, 1, SPLIT)
        wrk_run(ways[1], False, 1, [(ways[1][1], ways[1][2])] * len(SPLIT))
except Failed as e:
    raise SystemExit("warm-up: %s" % e)

res = {(b, w): [] for b in BENCHES + ("one",) for w in names}
failed = []
for rep in range(reps):
    for b in BENCHES:
        for way in ways:  # interleaved, so drift hits every column alike
            if b == "split" and way is not ways[1]:
                continue
            try:
                if b == "split":
                    res[("one", way[0])].append(
                        wrk_run(way, False, split=[(way[1], way[2])] * len(SPLIT)))
                    r = wrk_run(way, False, split=SPLIT)
                elif b in ("tunnel", "plain"):
                    r = download(way, b == "tunnel")
                else:
                    r = wrk_run(way, b == "close")
                res[(b, way[0])].append(r)
            except Failed as e:
                failed.append(str(e))
                print("FAILED: %s" % e, flush=True)

def med(b, w, k):
    v = [r[k] for r in res[(b, w)]]
    return statistics.median(v) if v else None

def row(label, cells):
    print("%-44s" % label + "".join("%12s" % c for c in cells))

def fmt(v, f):
    return "FAILED" if v is None else f % v

def ratio(b, w, k):
    a, d = med(b, w, k), med(b, "direct", k)
    return None if a is None or not d else a / d

proxied = [w for w in names if w != "direct"]
print()
row("", names)
def per_cpu(kind):
    return ["-"] + [
        fmt(None if not res[(kind, w)] else statistics.median(
            [r["req"] / r["cpu"] if r["cpu"] else float("inf") for r in res[(kind, w)]]), "%.0f")
        for w in proxied]

def conn_rows(kind):
    row("  client conns per request", [fmt(med(kind, w, "client_conns"), "%.3f") for w in names])
    row("  origin conns per request", [fmt(med(kind, w, "origin_conns"), "%.3f") for w in names])
    row("  closed by the proxy, per request", [fmt(med(kind, w, "closed"), "%.3f") for w in names])

if "ka" in BENCHES:
    row("keep-alive small GETs, req/s", [fmt(med("ka", w, "rps"), "%.0f") for w in names])
    row("  x direct", [fmt(ratio("ka", w, "rps"), "%.2f") for w in names])
    row("  requests per proxy CPU-second", per_cpu("ka"))
    row("  p50 latency ms", [fmt(med("ka", w, "p50"), "%.2f") for w in names])
    row("  p50 x direct", [fmt(ratio("ka", w, "p50"), "%.1f") for w in names])
    row("  p99 latency ms", [fmt(med("ka", w, "p99"), "%.2f") for w in names])
    row("  p99 x direct", [fmt(ratio("ka", w, "p99"), "%.1f") for w in names])
    conn_rows("ka")
if "close" in BENCHES:
    row("new connection per request, req/s", [fmt(med("close", w, "rps"), "%.0f") for w in names])
    row("  x direct", [fmt(ratio("close", w, "rps"), "%.2f") for w in names])
    row("  requests per proxy CPU-second", per_cpu("close"))
    row("  p99 latency ms", [fmt(med("close", w, "p99"), "%.2f") for w in names])
    conn_rows("close")
if "tunnel" in BENCHES:
    row("CONNECT tunnel, %d MiB download, MB/s" % (big >> 20), [fmt(med("tunnel", w, "mbs"), "%.0f") for w in names])
    row("  x direct", [fmt(ratio("tunnel", w, "mbs"), "%.2f") for w in names])
    row("  proxy CPU ms per MiB", ["-"] + [fmt(None if not res[("tunnel", w)] else statistics.median(
        [r["cpu"] * 1000 / (big / 1048576) for r in res[("tunnel", w)]]), "%.2f") for w in proxied])
    row("CONNECT, %d MiB, no TLS (protocol: tcp), MB/s" % (big >> 20), [fmt(med("plain", w, "mbs"), "%.0f") for w in names])
    row("  x direct", [fmt(ratio("plain", w, "mbs"), "%.2f") for w in names])
    row("  proxy CPU ms per MiB", ["-"] + [fmt(None if not res[("plain", w)] else statistics.median(
        [r["cpu"] * 1000 / (big / 1048576) for r in res[("plain", w)]]), "%.2f") for w in proxied])
pid = {w[0]: w[2] for w in ways}
row("peak RSS under load, MiB (VmHWM)", ["-"] + ["%.1f" % (status(pid[w], "VmHWM") / 1024) for w in proxied])
row("  all its processes, MiB (sum of VmHWM)", ["-"] + [
    "%.1f" % (sum(status(p, "VmHWM") for p in tree(pid[w])) / 1024) for w in proxied])
if "split" in BENCHES:
    one = "one"
    def split_ratio(k):
        a, d = med("split", "sluice", k), med(one, "sluice", k)
        return None if a is None or not d else a / d
    print()
    row("keep-alive, sluice gateways sharing the load", ["%d of them" % (len(SPLIT) + 1), "one"])
    row("  req/s", [
        fmt(med("split", "sluice", "rps"), "%.0f"), fmt(med(one, "sluice", "rps"), "%.0f")])
    row("  x one gateway", [fmt(split_ratio("rps"), "%.2f"), "1.00"])
    row("  requests per proxy CPU-second", [fmt(None if not res[(b, "sluice")] else statistics.median(
        [r["req"] / r["cpu"] if r["cpu"] else float("inf") for r in res[(b, "sluice")]]), "%.0f")
        for b in ("split", one)])
    row("  p99 latency ms (the worst gateway's)", [
        fmt(med("split", "sluice", "p99"), "%.2f"), fmt(med(one, "sluice", "p99"), "%.2f")])
print()
print("req/s: wrk's completed responses over its run; p50/p99: wrk --latency; proxy CPU: utime+stime")
print("of the proxy's processes (/proc/PID/stat) over the run; conns per request: TCP connections the")
print("proxies accepted (the host namespace's PassiveOpens) and nginx accepted, per response; closed by")
print("the proxy: wrk read errors on a kept-alive connection the proxy closed after a response.")

if strace == "1":
    print()
    log = os.path.join(tmp, "strace.txt")
    st = subprocess.Popen(["strace", "-c", "-f", "-o", log, "-p", gw_pid])
    time.sleep(1)  # attaching takes a moment; what it misses is not counted either way
    try:
        r = wrk_run(ways[1], False)
    except Failed as e:
        r = None
        failed.append("strace run: %s" % e)
    st.send_signal(2)
    st.wait(timeout=30)
    rows = []
    if r:
        for line in open(log):
            f = line.split()
            if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
                rows.append((int(f[3]), f[-1], int(f[4]) if len(f) == 6 else 0))
        if not rows:
            failed.append("strace run: strace counted nothing (%s)" % open(log).read().strip())
    if rows:
        print("sluice, keep-alive, under strace -c -f: %d responses (%.0f req/s while traced);" %
              (r["req"], r["rps"]))
        print("system calls per response (the 12 most frequent):")
        rows.sort(reverse=True)
        for calls, name, errors in rows[:12]:
            print("  %-16s %7.2f%s" % (name, calls / r["req"],
                  "  (%.2f failed)" % (errors / r["req"]) if errors else ""))
        print("  %-16s %7.2f" % ("all", sum(c for c, _, _ in rows) / r["req"]))
if perf == "1":
    # The gateway and its children (standalone: the root reader's child
    # is the confined gateway, where the time goes).
    pids = [gw_pid]
    for p in list(pids):
        try:
            pids += open("/proc/%s/task/%s/children" % (p, p)).read().split()
        except OSError:
            pass
    data = os.path.join(tmp, "perf.data")
    pr = subprocess.Popen(["perf", "record", "-q", "--call-graph", "dwarf,8192", "-o", data, "-p", ",".join(pids)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        r = wrk_run(ways[1], False)
    except Failed as e:
        r = None
        failed.append("perf run: %s" % e)
    pr.send_signal(2)
    pr.wait(timeout=60)
    if os.environ.get("PERF_KEEP"):
        shutil.copy(data, os.environ["PERF_KEEP"])
    if r:
        print()
        print("sluice, keep-alive, under perf record -g: where its CPU goes (self, top 30):")
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none",
                              "--percent-limit", "0.7", "--sort", "dso,symbol"],
                             capture_output=True, text=True)
        for line in rep.stdout.splitlines():
            if line.strip() and not line.startswith("#"):
                print("  " + line.strip())
        print("... by where the code is:")
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none",
                              "--sort", "dso"], capture_output=True, text=True)
        for line in rep.stdout.splitlines():
            if line.strip() and not line.startswith("#"):
                print("  " + line.strip())
if failed:
    print()
    print("%d run(s) failed: their figures are left out (FAILED where none was left):" % len(failed))
    for f in failed:
        print("  " + f)
    sys.exit(1)
PY
chmod 644 "$T/driver.py"

# Bounded: every wrk run and download has a timeout, the whole driver 30 min.
world_host timeout 1800 "$PY" "$T/driver.py" "$WRK" "$O" "$G" "$HOST" "$W/cert.pem" "$DURATION" \
	"$REPS" "$CONNS" "$THREADS" "$BIG" "$T" "$gw_pid" "$squid_pid" "$tiny_pid" "$STRACE" "$PERF"
rc=$?
kill -0 "$gw_pid" 2>/dev/null || die "sluice gateway exited: $(tail -n 5 "$T/gw.log")"
echo "sluice audit records written: $(wc -l <"$T/audit.log")"
[ "$rc" = 0 ] || die "some runs failed (gateway log: $(tail -n 3 "$T/gw.log"))"

# The start-up bench needs none of this world: take it down first.
cleanup
trap - EXIT INT TERM # cleanup ignored INT and TERM: run-startup.sh must not inherit that
if [ "$STARTUP_N" -gt 0 ]; then
	echo
	"$here/run-startup.sh" "$SLUICE" "$STARTUP_N" || echo "run-startup.sh failed or was skipped"
fi
exit 0
