#!/bin/bash
# SPDX-License-Identifier: MIT
#
# How long `sluice run -- true` takes from start to exit (namespace, veth,
# addresses, both nftables rulesets, mount namespace, privilege drop, exec,
# teardown), next to `unshare -n true` and `bwrap --unshare-net true`,
# measured in the same run. Reports the median of N runs (default 20) and
# asserts nothing. Runs as root, inside a namespace it creates and removes.
#
# Usage: bench/run-startup.sh [PATH-TO-SLUICE] [N]
set -u
here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../build/cli/sluice}}")
N=${2:-20}
[ "$(id -u)" = 0 ] || { echo "run-startup.sh: needs root" >&2; exit 77; }
[ -x "$SLUICE" ] || { echo "run-startup.sh: no sluice at $SLUICE" >&2; exit 1; }

H=slt-ns-bench$$
trap 'ip netns del $H 2>/dev/null' EXIT
ip netns add $H && ip -n $H link set lo up || exit 1

# Time from inside the namespace, so `ip netns exec` itself is not counted;
# nsenter gives back our own mount namespace (ip netns exec remounts /sys,
# which would hide the cgroup hierarchies).
ip netns exec $H nsenter --mount=/proc/$$/ns/mnt -- python3 - "$SLUICE" "$N" <<'PY'
import shutil, statistics, subprocess, sys, time
sluice, n = sys.argv[1], int(sys.argv[2])
cmds = [("sluice run -- true", [sluice, "run", "--", "true"]),
        ("unshare -n true", ["unshare", "-n", "true"])]
if shutil.which("bwrap"):
    # bwrap starts from an empty root: give it the host's, read-only.
    cmds.append(("bwrap --unshare-net true", ["bwrap", "--ro-bind", "/", "/", "--unshare-net", "true"]))
else:
    print("bwrap not installed (apt-get install bubblewrap): skipped")
res = {}
for name, argv in cmds:
    subprocess.run(argv, check=True)  # warm the page cache
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append((time.perf_counter() - t) * 1000)
    res[name] = statistics.median(times)
    print("%-26s median %7.2f ms  (min %.2f, max %.2f, n=%d)" % (name, res[name], min(times), max(times), n))
base = res["unshare -n true"]
for name, m in res.items():
    print("%-26s %.1fx unshare -n" % (name, m / base))
PY
