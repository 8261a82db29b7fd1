#!/bin/bash
# SPDX-License-Identifier: MIT
#
# How long `sluice run -- true` takes from start to exit (namespace, veth,
# addresses, both nftables rulesets, mount namespace, privilege drop, exec,
# teardown), next to `unshare -n true` and `bwrap --unshare-net true`,
# measured in the same run; and `sluice run --policy P -- true` with P a
# policy of one inspected host (a CA, its bundle and OpenSSL's start-up
# come with it; without --policy nothing can be allowed, and none is
# made). Reports the median of N runs (default 20) and asserts nothing.
# Runs as root, inside a namespace it creates and removes.
# Then, from N more runs with SLUICE_TRACE set (a timestamp per step on
# stderr, common/trace.h), the median time between consecutive steps of
# sluice's own processes (supervisor, the sandbox's init, the gateway).
#
# The commands take turns (one run of each, N rounds), so that a machine
# whose load changes during the bench weighs on all of them alike.
#
# Usage: bench/run-startup.sh [PATH-TO-SLUICE] [N]
# BREAKDOWN=0 skips the per-step part. BEFORE=PATH-TO-ANOTHER-SLUICE (a
# build of an earlier commit) is measured too, next to the others.
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../build/cli/sluice}}")
BEFORE=${BEFORE:+$(realpath "$BEFORE")}
N=${2:-20}
[ "$(id -u)" = 0 ] || { echo "run-startup.sh: needs root" >&2; exit 77; }
[ -x "$SLUICE" ] || { echo "run-startup.sh: no sluice at $SLUICE" >&2; exit 1; }
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || { echo "run-startup.sh: no sluice at $BEFORE" >&2; exit 1; }

H=slt-ns-bench$$
P=$(mktemp -d /tmp/slt-startup.XXXXXX) || exit 1
trap 'ip netns del $H 2>/dev/null; rm -rf "$P"' EXIT
ip netns add $H && ip -n $H link set lo up || exit 1
# A policy with an inspected host (a method rule): what a run for an agent
# with its model API costs, a CA, its bundle and OpenSSL included.
printf 'version: 1\nallow:\n  - host: api.startup.test\n    methods: [GET, POST]\n' >"$P/inspect.yaml"
chmod 755 "$P" && chmod 644 "$P/inspect.yaml"

# Time from inside the namespace, so `ip netns exec` itself is not counted;
# nsenter gives back our own mount namespace (ip netns exec remounts /sys,
# which would hide the cgroup hierarchies).
ip netns exec $H nsenter --mount=/proc/$$/ns/mnt -- python3 - "$SLUICE" "$N" "${BREAKDOWN:-1}" "$BEFORE" "$P/inspect.yaml" <<'PY'
import os, shutil, statistics, subprocess, sys, time
sluice, n, breakdown, before, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3] != "0", sys.argv[4], sys.argv[5]
cmds = [("sluice run -- true", [sluice, "run", "--", "true"]),
        ("sluice run --policy P", [sluice, "run", "--policy", policy, "--", "true"]),
        ("unshare -n true", ["unshare", "-n", "true"])]
if before:
    cmds.append(("sluice before", [before, "run", "--", "true"]))
    cmds.append(("before --policy P", [before, "run", "--policy", policy, "--", "true"]))
if shutil.which("bwrap"):
    # bwrap starts from an empty root: give it the host's, read-only.
    cmds.append(("bwrap --unshare-net true", ["bwrap", "--ro-bind", "/", "/", "--unshare-net", "true"]))
else:
    print("bwrap not installed (apt-get install bubblewrap): skipped")
res, times = {}, {name: [] for name, _ in cmds}
for name, argv in cmds:
    subprocess.run(argv, check=True)  # warm the page cache
# The order turns by one each round, so that each command follows each of
# the others equally often: a run's namespaces are freed by the kernel after
# it exits (cleanup_net, in a worker), and that tail lands on whichever
# command comes next.
for i in range(n):
    k = i % len(cmds)
    for name, argv in cmds[k:] + cmds[:k]:
        t = time.perf_counter()
        subprocess.run(argv, check=True)
        times[name].append((time.perf_counter() - t) * 1000)
for name, _ in cmds:
    v = times[name]
    res[name] = statistics.median(v)
    print("%-26s median %7.2f ms  (min %.2f, max %.2f, n=%d)" % (name, res[name], min(v), max(v), n))
base = res["unshare -n true"]
for name, m in res.items():
    print("%-26s %.1fx unshare -n" % (name, m / base))
bw = res.get("bwrap --unshare-net true")
if bw:
    print("sluice run -- true          %.1fx bwrap --unshare-net (the target is <= 3x)" %
          (res["sluice run -- true"] / bw))
    print("sluice run --policy P       %.1fx bwrap --unshare-net (P: one inspected host)" %
          (res["sluice run --policy P"] / bw))
    if before:
        print("sluice before               %.1fx bwrap --unshare-net" % (res["sluice before"] / bw))
        print("before --policy P           %.1fx bwrap --unshare-net" % (res["before --policy P"] / bw))
if not breakdown:
    sys.exit(0)
# Per step: the time from the step before (in time order, whichever process
# marked it; "exec" is the fork in this script, "exit seen" the wait's end).
env = dict(os.environ, SLUICE_TRACE="1")
steps, order = {}, []
for _ in range(n):
    t0 = time.monotonic()
    p = subprocess.run([sluice, "run", "--", "true"], env=env, stderr=subprocess.PIPE, text=True)
    t1 = time.monotonic()
    ev = sorted((int(l.split(" ", 2)[1]) / 1000.0, l.split(" ", 2)[2])
                for l in p.stderr.splitlines() if l.startswith("sluice-trace "))
    prev, prev_name = t0 * 1000, "exec"
    for t, what in ev + [(t1 * 1000, "exit seen")]:
        key = "%s -> %s" % (prev_name, what)
        if key not in steps:
            steps[key] = []
            order.append(key)
        steps[key].append(t - prev)
        prev, prev_name = t, what
print("\nper step, median of %d traced runs (ms; steps seen in fewer runs are interleavings):" % n)
for key in order:
    v = steps[key]
    if len(v) * 2 >= n:
        print("  %7.2f  %s" % (statistics.median(v), key))
PY
