#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The recipes of examples/, run as far as this machine allows (it has no
# systemd as PID 1 and no container runtime):
#
#  1. examples/systemd/sluice-agent.service: its ExecStart= as systemd would
#     run it, in a mount namespace that applies the unit's mount settings
#     (ProtectSystem=strict with its writable paths, ProtectHome=,
#     PrivateTmp=, PrivateDevices=), with its CapabilityBoundingSet= and
#     NoNewPrivileges= (setpriv) and its LoadCredential= (a credentials
#     directory). The agent reaches its model API with the key injected,
#     is refused elsewhere, writes only its workspace, sees no home; a stop
#     (SIGTERM to sluice alone, KillMode=mixed) reaches the agent and
#     leaves nothing behind. Settings that are seccomp filters or kernel
#     knobs (RestrictNamespaces=, RestrictAddressFamilies=, ...) are
#     checked by systemd-analyze only (tests/cli/test-units.sh).
#  2. examples/container/sluice-container.sh with SLUICE_RUNTIME=unshare,
#     the code path docker and podman share: the "container" reaches an
#     allowed origin and not a denied one; teardown leaves no veth, no nft
#     table, no process.
#  3. The policies people copy, with real clients: git clone and fetch
#     through examples/github-readonly.yaml from a smart-HTTP origin
#     (git http-backend, pushes enabled), a push refused and never seen by
#     the origin; npm and PyPI writes refused.
# The world's names (github.com, api.anthropic.com, ...) resolve only in
# its own dnsmasq, to TEST-NET addresses of its own namespaces.
#
# Usage: test-recipes.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-recipes.sh needs root (network namespaces, mounts, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter unshare setpriv bwrap python3 curl git dnsmasq openssl findmnt; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x /usr/lib/git-core/git-http-backend ] || { echo "not ok - git http-backend is not installed"; exit 1; }
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"
PY=/usr/bin/python3

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}
has() { grep -qF -- "$2" <<<"$1"; } # has TEXT NEEDLE

extra_pids=()
cleanup() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${extra_pids[@]}"; do wait "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR
G=203.0.113.3 # the git origin, a second address of the internet namespace
ip -n "$WORLD_NET" addr add $G/24 dev wi0
key="sk-ant-recipes-$(openssl rand -hex 16)"
(umask 077 && printf '%s\n' "$key" >"$T/anthropic.key")
ORIGIN_ANTHROPIC_KEY_FILE=$T/anthropic.key world_services api.anthropic.com=$N github.com=$G \
	registry.npmjs.org=$N pypi.org=$N files.pythonhosted.org=$N upload.pypi.org=$N \
	allowed.test=$N denied.test=$N || { echo "not ok - the world's services did not start"; exit 1; }
chmod 644 "$T/cert.pem"

# What sluice and its sandboxes leave in the host namespace: links, nft
# tables. (Other tests' sandboxes may run on the machine meanwhile: cgroups
# are looked for by the pid of our own sluice, cgroups_of PID.)
host_state() {
	world_host ip -o link show | awk '{ print $2 }' | grep -v '^lo:$' | sort
	world_host nft list tables | sort
}
cgroups_of() { find /sys/fs/cgroup -maxdepth 6 -name "sluice-$1" -type d 2>/dev/null; }
host0=$(host_state)
# gone PID: the process exited (waits, bounded, for an orphan's reaping).
gone() {
	local st
	for _ in $(seq 50); do
		st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
		[ "$st" = Z ] && return 0
		sleep 0.1
	done
	return 1
}
procs_of() { ps -e -o uid=,pid=,comm= | awk -v u="$1" '$1 == u'; }

# =====================================================================
# 1. The systemd unit
# =====================================================================
unit=$root/examples/systemd/sluice-agent.service
# The unit with its continuation lines joined, as systemd reads it.
joined=$(sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' "$unit")
setting() { sed -n "s/^$1=//p" <<<"$joined"; }
exec_start=$(setting ExecStart)
caps=$(setting CapabilityBoundingSet)
check "the unit runs sluice run ($exec_start)" has "$exec_start" "/usr/local/bin/sluice run "
check "the unit has NoNewPrivileges=yes" [ "$(setting NoNewPrivileges)" = yes ]
check "the unit has ProtectSystem=strict, ProtectHome=yes, PrivateTmp=yes, PrivateDevices=yes" \
	[ "$(setting ProtectSystem)$(setting ProtectHome)$(setting PrivateTmp)$(setting PrivateDevices)" = strictyesyesyes ]
check "the unit keeps /run/sluice when it stops (other sandboxes hold locks there)" \
	[ "$(setting RuntimeDirectory) $(setting RuntimeDirectoryPreserve)" = "sluice yes" ]
check "the unit's limits: MemoryMax=, TasksMax=, CPUQuota=, OOMPolicy=stop, Delegate=yes" \
	sh -c "[ -n '$(setting MemoryMax)' ] && [ -n '$(setting TasksMax)' ] && [ -n '$(setting CPUQuota)' ] &&
		[ '$(setting OOMPolicy)' = stop ] && [ '$(setting Delegate)' = yes ]"
check "the unit stops sluice alone (KillMode=mixed)" [ "$(setting KillMode)" = mixed ]
cred=$(setting LoadCredential)
check "the unit loads the policy's credential ($cred)" [ "$cred" = anthropic:/etc/sluice/anthropic.key ]
# CAP_SYS_ADMIN CAP_NET_ADMIN ... as setpriv's -all,+sys_admin,+net_admin,...
bset=-all
for c in $caps; do bset="$bset,+$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done

# The settings the emulation applies, as the unit has them.
unit_env=()
for k in ProtectSystem ProtectHome PrivateTmp PrivateDevices LogsDirectory RuntimeDirectory ReadWritePaths; do
	unit_env+=("U_$k=$(setting $k)")
done

# The unit's paths, made real in the emulation's own mount namespace: /srv
# is a tmpfs there (the agent's home in /srv/agent); /etc/sluice and
# /var/log/sluice, which this machine lacks, map into it too.
E=/srv
cp "$root/examples/dev-agent.yaml" "$T/agent.yaml" && chmod 644 "$T/agent.yaml"
cat >"$T/agent.py" <<'PY'
# The agent: what it can reach, write and see, one line each.
import json, os, signal, sys, time, urllib.request, urllib.error
def say(*a):
    print(*a, flush=True)
if len(sys.argv) > 1 and sys.argv[1] == "serve":   # wait to be stopped
    def term(*_):
        open("/srv/agent/work/got-term", "w").write("TERM\n")
        sys.exit(0)
    signal.signal(signal.SIGTERM, term)
    open("/srv/agent/work/ready", "w").close()
    for _ in range(600):
        time.sleep(0.1)
    sys.exit(3)
say("uid", os.getuid())
# What of the unit's CapabilityBoundingSet= reaches the agent: nothing it
# could use (effective, permitted, ambient), and no way to gain one.
st = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
say("caps", *(k + "=" + st[k].strip() for k in ("CapEff", "CapPrm", "CapAmb", "NoNewPrivs")))
say("placeholder", os.environ.get("ANTHROPIC_API_KEY", "").startswith("sluice-placeholder"))
say("credentials-env", "CREDENTIALS_DIRECTORY" in os.environ)
req = urllib.request.Request("https://api.anthropic.com/v1/messages", method="POST",
    data=json.dumps({"model": "m", "max_tokens": 5,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
             "anthropic-version": "2023-06-01", "content-type": "application/json"})
try:
    say("model-api", urllib.request.urlopen(req, timeout=10).status)
except urllib.error.HTTPError as e:
    say("model-api", e.code)
except Exception as e:
    say("model-api", type(e).__name__)
for url in ("https://denied.test/x", "http://denied.test/x", "https://api.anthropic.com/v1/files"):
    try:
        say("other", url, urllib.request.urlopen(url, timeout=10).status)
    except urllib.error.HTTPError as e:
        say("other", url, e.code)
    except urllib.error.URLError as e:   # a refused CONNECT: "Tunnel connection failed: 403"
        say("other", url, " ".join(w for w in str(e.reason).split() if w.isdigit()) or e.reason)
    except Exception as e:
        say("other", url, type(e).__name__)
for path in ("/srv/agent/work/out.txt", "/srv/agent/planted", "/etc/planted", "/var/log/sluice/x"):
    try:
        open(path, "w").write("x")
        say("write", path, "ok")
    except OSError as e:
        say("write", path, e.strerror)
for d in ("/home", "/root", "/run/credentials"):
    try:
        say("list", d, len(os.listdir(d)))
    except OSError as e:
        say("list", d, e.strerror)
# Where this emulation keeps LoadCredential='s copy (systemd's is under
# /run, which the sandbox has a fresh one of): visible, but not readable.
try:
    say("read-credential", len(open("/srv/credentials/sluice-agent.service/anthropic").read()))
except OSError as e:
    say("read-credential", e.strerror)
PY
install -d -o 23456 -g 23456 -m 0700 "$T/work"

# emulate MODE: the unit's ExecStart= with the unit's settings applied, in
# a mount namespace of its own inside the world's host namespace; MODE is
# the agent's argument ("" or serve). The agent's output is on stdout.
cat >"$T/emulate.sh" <<'SH'
#!/bin/bash
# Runs as root in a new mount namespace (unshare -m: nothing propagates
# back to the machine). Args: T SLUICE BSET EXEC-START...
set -eu
T=$1 SLUICE=$2 BSET=$3
shift 3
exec_start=$1
# /srv: the unit's paths; $T is bound at /srv/stage before /tmp goes.
mount -t tmpfs -o mode=755 slt-recipes /srv
mkdir -p /srv/stage /srv/agent/work /srv/etc/sluice /srv/credentials/sluice-agent.service
mount --bind "$T" /srv/stage
# The workspace is the test's $T/work, so the test sees what the agent left.
mount --bind "$T/work" /srv/agent/work
install -m 0755 "$T/agent.py" /srv/agent/agent.py
# The unit's /usr/local/bin/sluice: a copy in /srv, for a build under /tmp
# or /root (a clone there, as CI's may be) is hidden below by PrivateTmp=
# and ProtectHome=, as it would be for the real unit.
install -m 0755 "$SLUICE" /srv/sluice
SLUICE=/srv/sluice
install -m 0644 "$T/agent.yaml" /srv/etc/sluice/agent.yaml
# LoadCredential=anthropic:/etc/sluice/anthropic.key: a copy that only the
# unit's user (root) can read, in a directory only it can enter.
install -m 0400 "$T/anthropic.key" /srv/credentials/sluice-agent.service/anthropic
chmod 0500 /srv/credentials/sluice-agent.service
# LogsDirectory=sluice: /var/log/sluice, writable (bound to the stage so
# the test can read the audit log afterwards).
mkdir -p "$T/log"
mount -t tmpfs -o mode=755 slt-recipes-log /var/log
mkdir /var/log/sluice
mount --bind "$T/log" /var/log/sluice
rw=" /run/sluice "
[ "$U_PrivateTmp" = yes ] && rw="$rw/tmp /var/tmp "
[ "$U_LogsDirectory" = sluice ] && rw="$rw/var/log/sluice "
for p in $U_ReadWritePaths; do rw="$rw$p "; done
# RuntimeDirectory=sluice (Preserve): the machine's /run/sluice, writable.
mkdir -p /run/sluice
mount --bind /run/sluice /run/sluice
[ "$U_RuntimeDirectory" = sluice ] || rw=${rw/ \/run\/sluice / }
# PrivateDevices=yes: a /dev of null, zero, full, random, urandom, tty, a
# devpts of its own and a /dev/shm.
if [ "$U_PrivateDevices" = yes ]; then
mkdir -p /srv/olddev
mount --rbind /dev /srv/olddev
mount -t tmpfs -o mode=755,nosuid slt-recipes-dev /dev
for n in null zero full random urandom tty; do
	touch "/dev/$n"
	mount --bind "/srv/olddev/$n" "/dev/$n"
done
umount -l /srv/olddev
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev slt-recipes-shm /dev/shm
fi
# PrivateTmp=yes, ProtectHome=yes.
if [ "$U_PrivateTmp" = yes ]; then
	mount -t tmpfs -o mode=1777 slt-recipes-tmp /tmp
	mount -t tmpfs -o mode=1777 slt-recipes-vartmp /var/tmp
fi
if [ "$U_ProtectHome" = yes ]; then
	for d in /home /root /run/user; do
		[ -d "$d" ] && mount -t tmpfs -o mode=000 slt-recipes-home "$d"
	done
fi
# ProtectSystem=strict: every mount read-only but the API file systems
# (/proc, /sys, /dev) and the writable paths above (ReadWritePaths=,
# LogsDirectory=, RuntimeDirectory=).
[ "$U_ProtectSystem" = strict ] &&
findmnt -rno TARGET | while read -r m; do
	m=$(printf '%b' "$m") # findmnt escapes spaces as \x20
	case $m in /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) continue ;; esac
	case $rw in *" $m "*) continue ;; esac
	mount -o remount,bind,ro "$m" 2>/dev/null || true
done
# The unit's paths in ExecStart= that live here: /etc/sluice/ -> /srv/etc/sluice/.
cmd=${exec_start//\/etc\/sluice\//\/srv\/etc\/sluice\/}
cmd=${cmd//\/usr\/local\/bin\/sluice/$SLUICE}
# The dedicated account "agent" is uid 23456 here.
cmd=${cmd//--user agent/--user 23456}
# Point the gateway at the test world (the only additions).
cmd=${cmd/ run / run --resolver 203.0.113.2:53 --upstream-ca \/srv\/stage\/cert.pem }
cd /srv/agent/work # WorkingDirectory=
# systemd's environment for a unit: PATH, and CREDENTIALS_DIRECTORY.
# shellcheck disable=SC2086 # ExecStart= is split on spaces, as systemd does
exec setpriv --bounding-set="$BSET" --no-new-privs -- \
	env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	CREDENTIALS_DIRECTORY=/srv/credentials/sluice-agent.service $cmd "${@:2}"
SH
chmod 755 "$T/emulate.sh"

world_host_bg env "${unit_env[@]}" unshare -m --propagation private "$T/emulate.sh" "$T" "$SLUICE" "$bset" "$exec_start" \
	>"$T/unit.out" 2>"$T/unit.err"
upid=$! # sluice itself, in the end: ip netns exec, nsenter, unshare and the script exec it
extra_pids+=("$upid")
wait "$upid"
rc=$?
out=$(cat "$T/unit.out")
echo "$out" | sed 's/^/# agent: /'
sed 's/^/# sluice: /' "$T/unit.err" | head -20
check "the unit's ExecStart ran to the end under its bounding set and no_new_privs (exit $rc)" [ $rc = 0 ]
check "the agent runs as the unit's --user ($(grep '^uid' <<<"$out"))" has "$out" "uid 23456"
check "the agent holds the placeholder, not the key" has "$out" "placeholder True"
check "the unit's capabilities do not reach the agent ($(grep '^caps' <<<"$out"))" \
	has "$out" "caps CapEff=0000000000000000 CapPrm=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1"
check "the agent does not see CREDENTIALS_DIRECTORY" has "$out" "credentials-env False"
check "the model API answered 200: the credential from LoadCredential= was injected" \
	has "$out" "model-api 200"
check "... the origin saw the real key" grep -q 'POST /v1/messages host=api.anthropic.com auth=real' "$T/origin.log"
check "a host the policy does not name: 403" has "$out" "other https://denied.test/x 403"
check "... over plain HTTP as well: 403" has "$out" "other http://denied.test/x 403"
check "a path of the model API's host that no rule allows: 403" \
	has "$out" "other https://api.anthropic.com/v1/files 403"
check "the canary saw nothing" [ "$(world_canary_count)" = 0 ]
check "the agent writes its workspace (ReadWritePaths=, --rw)" has "$out" "write /srv/agent/work/out.txt ok"
check "... and nothing else of the unit's view" sh -c "echo '$out' | grep -q '^write /srv/agent/planted Read-only' &&
	echo '$out' | grep -q '^write /etc/planted Read-only' && echo '$out' | grep -q '^write /var/log/sluice/x Read-only'"
check "ProtectHome=: no home is visible, not even read-only ($(grep '^list /home' <<<"$out"))" \
	sh -c "echo '$out' | grep -Eq '^list /home Permission denied$' &&
		echo '$out' | grep -Eq '^list /root Permission denied$'"
check "the agent cannot reach the credentials directory" \
	sh -c "echo '$out' | grep -Eq '^list /run/credentials (No such file or directory|Permission denied|0)$'"
check "... nor read the key's copy where the emulation keeps it ($(grep '^read-credential' <<<"$out"))" \
	has "$out" "read-credential Permission denied"
check "the audit log is in LogsDirectory= (/var/log/sluice/agent-audit.log)" \
	grep -q '"host":"api.anthropic.com".*"decision":"allow".*"credential":"anthropic"' "$T/log/agent-audit.log"
check "... with the denials" grep -q '"host":"denied.test".*"decision":"deny"' "$T/log/agent-audit.log"
check "the key is not in the audit log or the agent's output" \
	sh -c "! grep -qF '$key' '$T/log/agent-audit.log' && ! echo '$out' | grep -qF '$key'"
now=$(host_state)
check "nothing left on the host after the unit's command exited: $(diff <(echo "$host0") <(echo "$now") | tr '\n' ' ')" [ "$now" = "$host0" ]
check "... and no cgroup of its sluice ($(cgroups_of "$upid"))" [ -z "$(cgroups_of "$upid")" ]

# A stop as systemd's KillMode=mixed does it: SIGTERM to sluice alone
# (needs CAP_KILL: the agent is another uid), which passes it on.
world_host_bg env "${unit_env[@]}" unshare -m --propagation private "$T/emulate.sh" "$T" "$SLUICE" "$bset" "$exec_start" \
	serve >"$T/serve.out" 2>"$T/serve.err"
spid=$! # sluice itself, in the end: ip netns exec, nsenter, unshare and the script exec it
extra_pids+=("$spid")
for _ in $(seq 150); do [ -e "$T/work/ready" ] && break; sleep 0.1; done
check "the long-running agent started" [ -e "$T/work/ready" ]
kill -TERM "$spid"
wait "$spid"
rc=$?
check "SIGTERM to sluice: it exits with the agent's status 0 (exit $rc: $(tail -n 2 "$T/serve.err" | tr '\n' ' '))" [ $rc = 0 ]
check "... the agent got the SIGTERM (it wrote got-term)" [ -e "$T/work/got-term" ]
left=$(procs_of 23456)
check "... no process of the agent's uid is left ($left)" [ -z "$left" ]
now=$(host_state)
check "... nor a cgroup of its sluice ($(cgroups_of "$spid"))" [ -z "$(cgroups_of "$spid")" ]
check "... nor a link or an nft table: $(diff <(echo "$host0") <(echo "$now") | tr '\n' ' ')" [ "$now" = "$host0" ]

# Why KillMode=mixed: the default (control-group) sends SIGTERM to every
# process of the unit at once, the gateway too, and sluice ends the agent
# as for a dead gateway.
rm -f "$T/work/ready" "$T/work/got-term"
world_host_bg env "${unit_env[@]}" unshare -m --propagation private "$T/emulate.sh" "$T" "$SLUICE" \
	"$bset" "$exec_start" serve >/dev/null 2>"$T/serve2.err"
spid=$!
extra_pids+=("$spid")
for _ in $(seq 150); do [ -e "$T/work/ready" ] && break; sleep 0.1; done
gw=$(ps -e -o pid=,ppid=,comm= | awk -v p="$spid" '$2 == p && $3 ~ /gateway/ { print $1 }')
kill -TERM "$spid" $gw
wait "$spid"
rc=$?
check "with SIGTERM to the gateway too (KillMode=control-group), sluice exits 125 instead (exit $rc, gateway ${gw:-none}: $(tail -n 1 "$T/serve2.err"))" \
	sh -c "[ $rc = 125 ] && [ -n '$gw' ]"

# =====================================================================
# 2. The container recipe, SLUICE_RUNTIME=unshare
# =====================================================================
script=$root/examples/container/sluice-container.sh
cat >"$T/container.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
    ports: [80]
P
chmod 644 "$T/container.yaml"
# The "container"'s agent: it has only lo until sluice has attached, so it
# waits for its default route (bounded), then tries an allowed and a
# denied origin directly (no proxy variables: the capture decides).
# (Its text is the command: the stand-in's /tmp is private, $T is not there.)
agent_sh='for i in $(seq 100); do ip route show default | grep -q . && break; sleep 0.1; done
echo "route: $(ip route show default)"
echo "allowed: $(curl -s -m 5 -o /dev/null -w "%{http_code}" http://allowed.test/from-container)"
echo "denied: $(curl -s -m 5 -o /dev/null -w "%{http_code}" http://denied.test/from-container)"
echo "direct: $(curl -s -m 3 -o /dev/null -w "%{http_code}" http://203.0.113.99/ || echo failed)"
exit 7'
container() {
	world_host env SLUICE="$SLUICE" SLUICE_RUNTIME=unshare "$script" --policy "$T/container.yaml" \
		--audit "$T/container-audit.log" --sluice-arg --resolver --sluice-arg "$N:53" "$@"
}
canary0=$(world_canary_count)
out=$(container --name c1 -- - sh -c "$agent_sh" 2>"$T/container.err")
rc=$?
echo "$out" | sed 's/^/# container: /'
sed 's/^/# script: /' "$T/container.err"
check "the script exits with the container's status (exit $rc, want 7)" [ $rc = 7 ]
check "the container was fenced before its agent went on (a route through sluice)" \
	sh -c "echo '$out' | grep -Eq '^route: default via 10\.231\.'"
check "the container reached the allowed origin through sluice" has "$out" "allowed: 200"
check "... the origin served it" grep -q "GET /from-container host=allowed.test" "$T/origin.log"
check "a denied origin: its name does not resolve (the gateway's DNS), no answer ($(grep denied: <<<"$out"))" \
	has "$out" "denied: 000"
check "... never reached the origin" sh -c "! grep -q 'host=denied.test' '$T/origin.log'"
check "a direct connection to the canary did not get through" sh -c "! echo '$out' | grep -q '^direct: 200'"
check "the canary saw nothing" [ "$(world_canary_count)" = "$canary0" ]
check "the audit log has both decisions" sh -c "grep -q '\"host\":\"allowed.test\".*\"decision\":\"allow\"' '$T/container-audit.log' &&
	grep -q '\"event\":\"dns\".*\"host\":\"denied.test\".*\"decision\":\"deny\"' '$T/container-audit.log'"
cpid=$(sed -n 's/.*container c1 (pid \([0-9]*\)).*/\1/p' "$T/container.err")
check "the container's process is gone (pid ${cpid:-?})" gone "${cpid:-1}"
now=$(host_state)
check "teardown leaves no veth and no nft table on the host: $(diff <(echo "$host0") <(echo "$now") | tr '\n' ' ')" \
	[ "$now" = "$host0" ]
left=$(ps -e -o pid=,args= | grep -F -e "from-container" -e "$T/container.yaml" | grep -v grep)
check "... and no process of the recipe ($left)" [ -z "$left" ]

# A hostile "container": the stand-in runs its command on the host's files,
# so what a container's own root could do with that matters. Once fenced,
# it uncovers the host's /proc beneath its own (umount, CAP_SYS_ADMIN) and
# joins the host's network namespace through a host process's
# /proc/PID/ns/net (setns, CAP_SYS_ADMIN and CAP_SYS_PTRACE), or reads a
# file only root may (/etc/shadow, as it would a key beside the policy).
# It looks only for the world's host namespace (by its inode), and tries
# only the canary.
hostns=$(world_host readlink /proc/self/ns/net)
hostile_sh='for i in $(seq 100); do ip route show default | grep -q . && break; sleep 0.1; done
echo "route: $(ip route show default)"
echo "uid: $(id -u)"
head -c 1 /etc/shadow >/dev/null 2>&1 && echo "shadow: readable" || echo "shadow: refused"
umount -l /proc 2>/dev/null
t=
for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$1" ] && { t=$p; break; }; done
echo "host namespace: ${t:-not found}"
echo "escape: $(nsenter --net="${t:-/nonexistent}/ns/net" curl -s -m 3 -o /dev/null -w "%{http_code}" http://203.0.113.99/escaped 2>/dev/null || echo failed)"'
canary0=$(world_canary_count)
out=$(container --name c4 -- - sh -c "$hostile_sh" sh "$hostns" 2>"$T/container4.err")
echo "$out" | sed 's/^/# hostile container: /'
check "a hostile container is fenced ($(grep '^route:' <<<"$out"))" \
	sh -c "echo '$out' | grep -Eq '^route: default via 10\.231\.'"
check "... runs as no uid of the host's that owns its files ($(grep '^uid:' <<<"$out"))" \
	sh -c "! echo '$out' | grep -q '^uid: 0$'"
check "... cannot read a file only root may (/etc/shadow)" has "$out" "shadow: refused"
check "... cannot join the host's network namespace through /proc ($(grep '^escape:' <<<"$out"))" \
	has "$out" "escape: failed"
check "... the canary saw nothing" [ "$(world_canary_count)" = "$canary0" ]

# Stopped from outside (SIGTERM to the script, as a service manager
# would): the container first, then sluice; nothing left.
world_host_bg env SLUICE="$SLUICE" SLUICE_RUNTIME=unshare "$script" --policy "$T/container.yaml" \
	--name c2 -- - sleep "300.$WORLD_ID" 2>"$T/container2.err" >/dev/null
spid=$!
extra_pids+=("$spid")
for _ in $(seq 150); do grep -q 'is fenced' "$T/container2.err" && break; sleep 0.1; done
cpid=$(sed -n 's/.*container c2 (pid \([0-9]*\)).*/\1/p' "$T/container2.err")
apid=$(sed -n 's/.*fenced by sluice (pid \([0-9]*\)).*/\1/p' "$T/container2.err")
check "a long-running container is fenced (pid ${cpid:-?}, sluice ${apid:-?})" [ -n "$cpid" ] && [ -n "$apid" ]
tables=$(nsenter -t "${cpid:-1}" -n nft list tables 2>/dev/null | tr '\n' ' ')
check "... its namespace has sluice's table ($tables)" has "$tables" "inet sluice"
kill -TERM "$spid"
wait "$spid"
rc=$?
check "SIGTERM to the script ends it (exit $rc)" [ $rc != 0 ]
check "... the container is gone" gone "${cpid:-1}"
check "... and sluice attach too" gone "${apid:-1}"
now=$(host_state)
check "... no veth, no nft table left: $(diff <(echo "$host0") <(echo "$now") | tr '\n' ' ')" [ "$now" = "$host0" ]

# A policy sluice refuses: the container does not stay up unfenced.
printf 'version: 1\nallow:\n  - host: "*"\n' >"$T/bad.yaml"
chmod 644 "$T/bad.yaml"
out=$(world_host env SLUICE="$SLUICE" SLUICE_RUNTIME=unshare "$script" --policy "$T/bad.yaml" \
	--name c3 -- - sleep "300.$WORLD_ID" 2>&1)
rc=$?
check "an invalid policy: exit 125, and says so ($(tail -n 2 <<<"$out" | tr '\n' ' '))" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q 'did not attach'"
left=$(ps -e -o pid=,args= | grep -F "sleep 300.$WORLD_ID" | grep -v grep)
check "... and the container was stopped ($left)" [ -z "$left" ]
out=$(SLUICE="$SLUICE" SLUICE_RUNTIME=lxc "$script" --policy "$T/container.yaml" -- img 2>&1)
rc=$?
check "an unknown runtime is refused (exit $rc: $out)" sh -c "[ $rc = 125 ] && echo '$out' | grep -q 'docker, podman or unshare'"
out=$(SLUICE="$SLUICE" SLUICE_RUNTIME=docker "$script" --policy "$T/container.yaml" --run-arg --network=host -- img 2>&1)
rc=$?
check "--run-arg --network=host is refused before anything starts (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q 'own network namespace'"
out=$(SLUICE="$SLUICE" SLUICE_RUNTIME=podman "$script" --policy "$T/container.yaml" --run-arg --pod=agents -- img 2>&1)
rc=$?
check "--run-arg --pod=... (podman: the pod's network namespace) is refused too (exit $rc: $out)" \
	sh -c "[ $rc = 125 ] && echo '$out' | grep -q 'own network namespace'"

# The docker path, with a stand-in docker that logs what it is asked and
# whose container is a process in a network namespace of its own.
mkdir -p "$T/fakebin"
cat >"$T/fakebin/docker" <<'D'
#!/bin/bash
echo "$*" >>"$FAKE_DOCKER_LOG"
case $1 in
run)
	[ -z "${FAKE_DOCKER_CONFLICT:-}" ] || {
		echo "docker: Error response from daemon: Conflict. The container name is already in use" >&2
		exit 125
	}
	unshare --net sleep "300.$FAKE_DOCKER_ID" </dev/null >/dev/null 2>&1 &
	echo $! >"$FAKE_DOCKER_LOG.pid"
	;;
inspect)
	case $3 in
	'{{.State.Pid}}') cat "$FAKE_DOCKER_LOG.pid" ;;
	'{{.State.Running}}') kill -0 "$(cat "$FAKE_DOCKER_LOG.pid")" 2>/dev/null && echo true || echo false ;;
	'{{.State.ExitCode}}') echo 0 ;;
	esac
	;;
stop | rm) kill "$(cat "$FAKE_DOCKER_LOG.pid" 2>/dev/null)" 2>/dev/null; exit 0 ;;
esac
D
chmod 755 "$T/fakebin/docker"
fake_docker() { # fake_docker LOG ENV... -- SCRIPT-ARGS...
	local log=$1
	shift
	world_host env PATH="$T/fakebin:$PATH" FAKE_DOCKER_LOG="$log" FAKE_DOCKER_ID="$WORLD_ID" \
		SLUICE="$SLUICE" SLUICE_RUNTIME=docker "$@" 2>&1
}
# A --name that another container already has: docker run refuses it, and
# the script must leave that container alone (it is someone else's, and
# may be fenced and running).
out=$(fake_docker "$T/docker1.log" FAKE_DOCKER_CONFLICT=1 "$script" --policy "$T/container.yaml" --name taken -- img)
rc=$?
check "docker: a --name in use: exit 125 ($rc: $(tail -n 1 <<<"$out"))" [ $rc = 125 ]
check "... the other container of that name is neither stopped nor removed ($(tr '\n' ';' <"$T/docker1.log"))" \
	sh -c "! grep -Eq '^(stop|rm|kill)( |$)' '$T/docker1.log'"
# sluice attach refuses the policy: the container is stopped and removed.
out=$(fake_docker "$T/docker2.log" "$script" --policy "$T/bad.yaml" --name c6 -- img)
rc=$?
check "docker: a refused policy: exit 125 ($rc: $(tail -n 1 <<<"$out"))" [ $rc = 125 ]
check "... the container is stopped and removed ($(tr '\n' ';' <"$T/docker2.log"))" \
	sh -c "grep -q '^stop -t 10 c6' '$T/docker2.log' && grep -q '^rm -f c6' '$T/docker2.log'"
left=$(ps -e -o pid=,args= | grep -F "sleep 300.$WORLD_ID" | grep -v grep)
check "... and its process is gone ($left)" [ -z "$left" ]

# =====================================================================
# 3. The policies people copy, with real clients
# =====================================================================
# A smart-HTTP origin for github.com (git http-backend, pushes enabled):
# your-org/your-repo, which the policy lets the agent clone, and
# someone/else, which it does not name.
git init -q -b main "$T/src"
echo "hello from the recipes" >"$T/src/README"
git -C "$T/src" add README
git -C "$T/src" -c user.name=t -c user.email=t@t commit -qm init
mkdir -p "$T/git/your-org" "$T/git/someone"
git clone -q --bare "$T/src" "$T/git/your-org/your-repo.git"
git clone -q --bare "$T/src" "$T/git/someone/else.git"
world_bg "$WORLD_NET" python3 "$here/lib/git-origin.py" "$T/git-origin.log" "$T/cert.pem" \
	"$T/key.pem" "$G" "$T/git"
wait_for_file "$T/git-origin.log.ready" || notok "the git origin did not start"
touch "$T/git-origin.log"
cp "$root/examples/github-readonly.yaml" "$T/github.yaml"
cp "$root/examples/npm-readonly.yaml" "$T/npm.yaml"
cp "$root/examples/pypi-readonly.yaml" "$T/pypi.yaml"
chmod 644 "$T/github.yaml" "$T/npm.yaml" "$T/pypi.yaml"
install -d -m 1777 "$T/gw"
# policy_run POLICY CMD: CMD (sh -c) in a sandbox under POLICY, in $T/gw,
# as one uid every time (the clone of one run is the next run's).
policy_run() {
	local p=$1
	shift
	world_host "$SLUICE" run --user 23457 --ro "$T" --rw "$T/gw" --policy "$T/$p" --resolver "$N:53" \
		--upstream-ca "$T/cert.pem" --audit "$T/policies-audit.log" -- \
		sh -c "cd $T/gw && $1" 2>&1
}
# The same policy without its rule for git-upload-pack: "GET only".
awk '/- name: github-clone/ { skip = 1 } /- name: github-api-read/ { skip = 0 } !skip' \
	"$T/github.yaml" >"$T/github-getonly.yaml"
chmod 644 "$T/github-getonly.yaml"
out=$(policy_run github-getonly.yaml 'git clone -q https://github.com/your-org/your-repo.git getonly 2>&1; echo rc=$?')
echo "$out" | sed "s/^/# get-only: /"
check "GET-only GitHub breaks git clone, as the policy's comment says ($(tail -n 2 <<<"$out" | tr '\n' ' '))" \
	sh -c "echo '$out' | grep -q 'rc=128' && echo '$out' | grep -q 403"

out=$(policy_run github.yaml 'git clone -q https://github.com/your-org/your-repo.git && cat your-repo/README')
check "github-readonly: git clone over HTTPS works ($out)" has "$out" "hello from the recipes"
check "... it POSTed to git-upload-pack, which the policy allows" \
	grep -q "^POST /your-org/your-repo.git/git-upload-pack host=github.com" "$T/git-origin.log"
echo "second" >>"$T/src/README"
git -C "$T/src" -c user.name=t -c user.email=t@t commit -qam second
git -C "$T/src" push -q "$T/git/your-org/your-repo.git" main
out=$(policy_run github.yaml 'git -C your-repo pull -q --ff-only && tail -n 1 your-repo/README')
check "github-readonly: git fetch (pull) works ($out)" [ "$out" = second ]
main1=$(git -C "$T/git/your-org/your-repo.git" rev-parse main)
out=$(policy_run github.yaml 'cd your-repo && echo pushed >>README &&
	git -c user.name=a -c user.email=a@a commit -qam "from the agent" &&
	git push origin HEAD:main; echo rc=$?')
echo "$out" | sed 's/^/# push: /'
check "github-readonly: git push fails" has "$out" "rc=1"
check "... with HTTP 403" sh -c "echo '$out' | grep -q '403'"
check "... the origin never saw a POST to git-receive-pack" \
	sh -c "! grep -q '^POST .*git-receive-pack' '$T/git-origin.log'"
check "... and its main branch is as it was" [ "$(git -C "$T/git/your-org/your-repo.git" rev-parse main)" = "$main1" ]
check "... audited: denied by path" \
	grep -q '"method":"POST","host":"github.com","port":443,"path":"/your-org/your-repo.git/git-receive-pack","status":403,"decision":"deny","rule":null,"reason":"path"' \
	"$T/policies-audit.log"
out=$(policy_run github.yaml 'git clone -q https://github.com/someone/else.git 2>&1; echo rc=$?')
check "github-readonly: a repository the policy does not name cannot be cloned ($(tail -n 2 <<<"$out" | tr '\n' ' '))" \
	has "$out" "rc=128"
check "... its upload-pack POST never reached the origin" \
	sh -c "! grep -q '^POST /someone/' '$T/git-origin.log'"

# npm: installing reads, publishing is a PUT. A real npm publish, with a
# token so that it gets as far as sending its PUT.
cat >"$T/gw/package.json" <<'J'
{ "name": "slt-recipes-pkg", "version": "1.0.0" }
J
chmod 644 "$T/gw/package.json"
if command -v npm >/dev/null; then
	out=$(policy_run npm.yaml 'printf "//registry.npmjs.org/:_authToken=t0k3n\n" >npmrc &&
		npm publish --userconfig ./npmrc --registry https://registry.npmjs.org/ --no-audit 2>&1; echo rc=$?')
	check "npm-readonly: npm publish fails with E403 ($(grep -m1 -E 'E403|403' <<<"$out"))" \
		sh -c "echo '$out' | grep -q 'E403' && echo '$out' | grep -q 'rc=1'"
	check "... the registry never saw the PUT" sh -c "! grep -q '^PUT /slt-recipes-pkg' '$T/origin.log'"
else
	notok "npm is not installed (scripts/setup.sh --test installs it)"
fi
out=$(policy_run npm.yaml 'curl -s -o /dev/null -w "%{http_code}" https://registry.npmjs.org/left-pad')
check "npm-readonly: a package document is read through ($out, from the world's origin)" \
	grep -q "^GET /left-pad host=registry.npmjs.org" "$T/origin.log"
out=$(policy_run npm.yaml 'curl -s -o /dev/null -w "%{http_code}" -X PUT --data x https://registry.npmjs.org/left-pad')
check "npm-readonly: PUT (publish) is refused: $out" [ "$out" = 403 ]

# PyPI: pip reads the index on pypi.org; an upload is a POST elsewhere.
out=$(policy_run pypi.yaml 'pip download --no-deps --no-cache-dir -q -d dl --index-url https://pypi.org/simple/ slt-recipes-nothing 2>&1; echo rc=$?')
check "pypi-readonly: pip asks the index on pypi.org ($(tail -n 1 <<<"$out"))" \
	grep -q "^GET /simple/slt-recipes-nothing/ host=pypi.org" "$T/origin.log"
out=$(policy_run pypi.yaml 'curl -s -o /dev/null -w "%{http_connect}" -F content=@package.json https://upload.pypi.org/legacy/')
check "pypi-readonly: an upload (POST upload.pypi.org/legacy/) is refused: CONNECT answered $out" [ "$out" = 403 ]
out=$(policy_run pypi.yaml 'curl -s -o /dev/null -w "%{http_code}" -X POST --data x https://pypi.org/legacy/')
check "pypi-readonly: a POST to pypi.org is refused: $out" [ "$out" = 403 ]
check "... neither reached the origin" sh -c "! grep -q '^POST /legacy/' '$T/origin.log'"
check "the canary saw nothing" [ "$(world_canary_count)" = "$canary0" ]
now=$(host_state)
check "nothing left on the host: $(diff <(echo "$host0") <(echo "$now") | tr '\n' ' ')" [ "$now" = "$host0" ]

echo "# passed $passed, failed $failed"
[ $failed = 0 ]
