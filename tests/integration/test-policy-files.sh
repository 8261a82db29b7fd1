#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The policy cannot be changed from inside (issue 9): policy and secret
# files are refused, at start and at every reload, unless root (or the
# user sluice runs as) is the only one who can change or replace them; a
# reload may change rules but not send a loaded secret anywhere new; and
# a SIGHUP from a terminal hangup is not a reload. Every check looks at
# the evidence outside sluice: the command that did not run, the request
# that was still denied, the origin's request log that saw no key.
#
# Usage: test-policy-files.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
# shellcheck source-path=SCRIPTDIR
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

. "$here/lib/checks.sh"
needs_root test-policy-files.sh ip nft nsenter python3 curl dnsmasq openssl timeout setpriv

. "$here/world.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
# Harmless for a build without sanitizers; with them, a leak at exit aborts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
OTHER=1234 # a uid that is neither root nor ours: "someone else"

GW=203.0.113.1:3128
gw_pid=
CTR=slt-ns-c$$
cleanup() {
	[ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
	ip netns del "$CTR" 2>/dev/null
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM
world_up || { echo "not ok - the test world did not come up"; exit 1; }
T=$WORLD_TMP
N=$WORLD_NET_ADDR

make_keys "$T/secrets" || { echo "not ok - could not make the keys"; exit 1; }
ORIGIN_OPENAI_KEY_FILE=$T/secrets/openai.key \
	world_services api.openai.com="$N" other.test="$N" || { echo "not ok - services"; exit 1; }
chmod 644 "$T/cert.pem"

# policy FILE [RULE-LINES]: api.openai.com gets the openai key as a bearer
# token; the lines given are added to allow:. Root's, mode 0644.
policy() {
	local f=$1
	shift
	{
		cat <<P
version: 1
secrets:
  openai: { file: $T/secrets/openai.key }
allow:
  - host: api.openai.com
    ports: [443]
    inject: { header: Authorization, prefix: "Bearer ", secret: openai }
P
		local l
		for l; do printf '%s\n' "$l"; done
	} >"$f"
	chmod 644 "$f"
}
# replace FILE [RULE-LINES]: a new policy put in place of FILE at once, as
# an editor (or an attacker) does: written aside, renamed over it.
replace() {
	local f=$1
	shift
	policy "$f.new" "$@"
	mv -f "$f.new" "$f"
}

# ==== sluice run: refused at start, naming the file; the command never runs ====
mkdir -m 755 "$T/run"
run_case() { # run_case NAME POLICY WANT-IN-MESSAGE
	local out rc
	out=$(world_host timeout 30 "$SLUICE" run --policy "$2" -- echo RAN 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ! grep -q '^RAN$' <<<"$out" &&
		grep -qF -- "$3" <<<"$out"; then
		ok "sluice run refuses a policy $1 (exit $rc), naming it"
	else
		notok "sluice run, a policy $1: exit $rc: $out"
	fi
}
policy "$T/run/ok.yaml"
check "sluice run with a root-owned policy in root's directories runs the command" "RAN" \
	"$(world_host timeout 30 "$SLUICE" run --policy "$T/run/ok.yaml" -- echo RAN 2>/dev/null)"
mkdir -m 777 "$T/run/www"
policy "$T/run/www/p.yaml"
run_case "in a world-writable directory" "$T/run/www/p.yaml" \
	"$T/run/www/p.yaml: group or others can write its directory $T/run/www"
mkdir -m 775 "$T/run/gw"
policy "$T/run/gw/p.yaml"
run_case "in a group-writable directory" "$T/run/gw/p.yaml" "(chmod go-w $T/run/gw"
policy "$T/run/gwfile.yaml"
chmod 664 "$T/run/gwfile.yaml"
run_case "that group can write" "$T/run/gwfile.yaml" \
	"$T/run/gwfile.yaml: group or others can write it (chmod go-w $T/run/gwfile.yaml)"
policy "$T/run/theirs.yaml"
chown "$OTHER" "$T/run/theirs.yaml"
run_case "owned by another uid" "$T/run/theirs.yaml" "$T/run/theirs.yaml: owned by uid $OTHER"
ln -s "$T/run/www/p.yaml" "$T/run/link.yaml"
run_case "reached through a symlink into a world-writable directory" "$T/run/link.yaml" \
	"its directory $T/run/www"
# Under a path bound writable into the sandbox: root's, 0644, yet the
# sandbox could rename it away and put its own in its place.
mkdir -m 755 "$T/run/ws"
policy "$T/run/ws/p.yaml"
out=$(world_host timeout 30 "$SLUICE" run --rw "$T/run/ws" --policy "$T/run/ws/p.yaml" -- echo RAN 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q '^RAN$' <<<"$out" && grep -qF -- "--rw $T/run/ws" <<<"$out"; then
	ok "sluice run refuses a policy under its own --rw path (exit $rc), naming both"
else
	notok "sluice run, a policy under --rw: exit $rc: $out"
fi
# A secret there as well.
mkdir -m 700 "$T/run/ws/keys"
cp -p "$T/secrets/openai.key" "$T/run/ws/keys/openai.key"
sed "s|$T/secrets/openai.key|$T/run/ws/keys/openai.key|" "$T/run/ok.yaml" >"$T/run/wskey.yaml"
chmod 644 "$T/run/wskey.yaml"
out=$(world_host timeout 30 "$SLUICE" run --rw "$T/run/ws" --policy "$T/run/wskey.yaml" -- echo RAN 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q '^RAN$' <<<"$out" &&
	grep -qF -- "secret \"openai\": file $T/run/ws/keys/openai.key: the sandbox can write" <<<"$out"; then
	ok "sluice run refuses a secret file under its --rw path (exit $rc), naming it"
else
	notok "sluice run, a secret under --rw: exit $rc: $out"
fi

# ==== sluice attach: the same check at start, before the namespace is touched ====
ip netns add "$CTR" || { echo "not ok - a namespace for attach"; exit 1; }
out=$(world_host timeout 30 "$SLUICE" attach --netns "/run/netns/$CTR" --policy "$T/run/www/p.yaml" 2>&1)
rc=$?
check_has "sluice attach refuses a policy in a world-writable directory (exit $rc)" \
	"$T/run/www/p.yaml: group or others can write its directory" "$out"
check "... and leaves the namespace as it was: only lo" "1" \
	"$(ip -n "$CTR" -o link show | grep -c .)"

# ==== secrets: their directories count too ====
mkdir -m 700 "$T/sx"
mkdir -m 775 "$T/sx/shared"
cp -p "$T/secrets/openai.key" "$T/sx/shared/openai.key"
sed "s|$T/secrets/openai.key|$T/sx/shared/openai.key|" "$T/run/ok.yaml" >"$T/run/sx.yaml"
chmod 644 "$T/run/sx.yaml"
out=$(world_host timeout 10 "$SLUICE" gateway --policy "$T/run/sx.yaml" --listen 127.0.0.1:3199 2>&1)
rc=$?
check_has "sluice gateway refuses a secret in a group-writable directory (exit $rc), naming it" \
	"secret \"openai\": file $T/sx/shared/openai.key: group or others can write its directory $T/sx/shared" \
	"$out"

# ==== an unprivileged sluice gateway trusts its own user's files too ====
NB=$(id -u nobody)
NBG=$(id -g nobody)
mkdir -m 755 "$T/nb"
chown "$NB:$NBG" "$T/nb"
printf 'version: 1\nallow:\n  - host: other.test\n' >"$T/nb/p.yaml"
chown "$NB:$NBG" "$T/nb/p.yaml"
chmod 644 "$T/nb/p.yaml"
as_nobody() { world_host setpriv --reuid="$NB" --regid="$NBG" --clear-groups -- "$@"; }
out=$(as_nobody timeout 2 "$SLUICE" gateway --policy "$T/nb/p.yaml" --listen 127.0.0.1:3196 2>&1)
check_has "sluice gateway as nobody takes a policy of nobody's in nobody's directory" \
	"sluice gateway: proxy on 127.0.0.1:3196" "$out"
chown "$OTHER" "$T/nb/p.yaml"
out=$(as_nobody timeout 10 "$SLUICE" gateway --policy "$T/nb/p.yaml" --listen 127.0.0.1:3196 2>&1)
check_has "... and refuses one of another uid's, naming who may own it" \
	"$T/nb/p.yaml: owned by uid $OTHER, who could rewrite it; it must be owned by root or uid $NB" \
	"$out"

# ==== a running sluice gateway: what a reload may not do ====
mkdir -m 755 "$T/gw"
mkdir -m 700 "$T/ca"
P=$T/gw/policy.yaml
policy "$P"
world_host_bg "$SLUICE" gateway --policy "$P" --listen $GW --resolver "$N:53" \
	--upstream-ca "$T/cert.pem" --ca-dir "$T/ca" --audit "$T/audit.log" 2>"$T/gw.err"
gw_pid=$!
for _ in $(seq 100); do
	world_host ss -Hltn 'sport = :3128' | grep -q . && break
	kill -0 "$gw_pid" 2>/dev/null || break
	sleep 0.1
done
world_host ss -Hltn 'sport = :3128' | grep -q . ||
	{ echo "not ok - sluice gateway did not start: $(cat "$T/gw.err")"; exit 1; }

# The answer's status via the proxy; for a CONNECT the proxy refused, its
# status (403). Clients trust sluice's CA (inspected hosts) and the
# origin's certificate (hosts passed through).
cat "$T/ca/ca-bundle.crt" "$T/cert.pem" >"$T/clients.pem"
req() {
	local c
	c=$(world_host curl -s -m 10 -o /dev/null -w '%{http_code} %{http_connect}' -x "http://$GW" \
		--cacert "$T/clients.pem" "$@" 2>/dev/null)
	case $c in
	"000 200" | "000 000") echo 000 ;;
	"000 "*) echo "${c#* }" ;;
	*) echo "${c% *}" ;;
	esac
}
reload() { # reload: SIGHUP from this process (SI_USER); wait (bounded) for its answer
	local n
	n=$(grep -cE ': (not )?reloaded' "$T/gw.err")
	kill -HUP "$gw_pid"
	for _ in $(seq 50); do
		[ "$(grep -cE ': (not )?reloaded' "$T/gw.err")" -gt "$n" ] && break
		sleep 0.1
	done
	grep -E ': (not )?reloaded' "$T/gw.err" | tail -n 1
}
origin_real() { grep -c "^GET $1 host=$2 auth=real$" "$T/origin.log"; }

check "the key goes to api.openai.com" "200 1" \
	"$(req https://api.openai.com/start) $(origin_real /start api.openai.com)"

# Bind the existing secret to another host: refused, the old policy stays.
replace "$P" "  - host: other.test" \
	"    inject: { header: Authorization, prefix: \"Bearer \", secret: openai }"
check "a reload that binds the secret to another host is refused" \
	"sluice gateway: $P: not reloaded; the running policy stays in force" "$(reload)"
check_has "... saying why, at the rule's line" \
	"$P:8:5: secret 'openai' is bound to other.test, where the running policy does not send it" \
	"$(cat "$T/gw.err")"
check "... the running policy stays: other.test is still denied, and never saw the key" "403 0 0" \
	"$(req https://other.test/bind) $(grep -c ' host=other.test ' "$T/origin.log") $(origin_real /bind other.test)"
check "... api.openai.com still gets its key" "200 1" \
	"$(req https://api.openai.com/after-bind) $(origin_real /after-bind api.openai.com)"

# A reload that only changes rules is taken.
replace "$P" "  - host: other.test"
check "a reload that adds a host without a secret is taken" "sluice gateway: $P: reloaded" \
	"$(reload)"
check "... other.test is allowed now, without the key" "200 GET /plain host=other.test auth=none" \
	"$(req https://other.test/plain) $(grep '^GET /plain ' "$T/origin.log" | tail -n 1)"

# Now that other.test is allowed, binding the key to it is still refused;
# the host stays reachable, and every request to it goes without the key.
replace "$P" "  - host: other.test" \
	"    inject: { header: Authorization, prefix: \"Bearer \", secret: openai }"
check "a reload that binds the secret to an allowed host is refused" \
	"sluice gateway: $P: not reloaded; the running policy stays in force" "$(reload)"
check "... requests to it still go, without the key" "200 GET /bind2 host=other.test auth=none" \
	"$(req https://other.test/bind2) $(grep '^GET /bind2 ' "$T/origin.log" | tail -n 1)"
# Another header for the same host: the origin could echo it back.
replace "$P" "  - host: other.test"
sed -i 's/header: Authorization/header: X-Echo/' "$P"
check "a reload that moves the secret into another header is refused" \
	"sluice gateway: $P: not reloaded; the running policy stays in force" "$(reload)"
check_has "... saying so" "secret 'openai' goes into header 'X-Echo'" "$(cat "$T/gw.err")"

# Files the sandbox's user (or anyone but root) could write: refused at reload.
replace "$P" "  - host: other.test" "  - host: \"*.test\""
chown nobody "$P"
check "a reload of a policy owned by nobody is refused" \
	"sluice gateway: $P: not reloaded; the running policy stays in force" "$(reload)"
check_has "... naming the file and the fix" "$P: owned by uid $(id -u nobody), who could rewrite it; it must be owned by root (chown root $P)" \
	"$(cat "$T/gw.err")"
chown root "$P"
chmod 775 "$T/gw"
check "a reload of a policy whose directory became group-writable is refused" \
	"sluice gateway: $P: not reloaded; the running policy stays in force" "$(reload)"
check "... the running policy stays: *.test was not added" "403" "$(req https://nothing.test/)"
chmod 755 "$T/gw"
check "once fixed, the same file is taken" "sluice gateway: $P: reloaded" "$(reload)"

check "the origin never saw the key but on api.openai.com" "0" \
	"$(grep ' auth=real$' "$T/origin.log" | grep -vc ' host=api.openai.com ')"
check_nokey "... and its log holds no key" "$(cat "$T/origin.log")"
kill "$gw_pid"
wait "$gw_pid"
rc=$?
gw_pid=
check "after every refused and taken reload, SIGTERM: exit 0, no sanitizer report" "0 0" \
	"$rc $(grep -cE 'Sanitizer|runtime error:' "$T/gw.err")"

# ==== a terminal hangup is not a reload ====
cat >"$T/hangup.py" <<'PY'
# hangup.py LOG NEW DEST CMD...: run CMD as the session leader of a new
# pty (stderr to LOG); once it serves, rename NEW over DEST and hang the
# terminal up (close the master: the kernel sends SIGHUP, SI_KERNEL). Say
# whether CMD lives on and whether it reloaded; then SIGHUP it from here
# (SI_USER), which must reload; then stop it. Every wait is bounded.
import os, pty, signal, sys, time

log, new, dest, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

def wait_for(text, tenths):
    for _ in range(tenths):
        if text in open(log).read():
            return True
        time.sleep(0.1)
    return False

pid, master = pty.fork()
if pid == 0:
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.execv(cmd[0], cmd)
try:
    if not wait_for("proxy on", 100):
        print("did not start")
        sys.exit(1)
    os.rename(new, dest)
    os.close(master)
    time.sleep(1)
    alive = os.waitpid(pid, os.WNOHANG) == (0, 0)
    print("alive" if alive else "gone", "reloaded" if "reloaded" in open(log).read() else "kept")
    os.kill(pid, signal.SIGHUP)
    print("kill -HUP:", "reloaded" if wait_for(": reloaded", 50) else "kept")
finally:
    os.kill(pid, signal.SIGTERM)
    for _ in range(50):
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
PY
mkdir -m 755 "$T/hup"
policy "$T/hup/policy.yaml"
policy "$T/hup/new.yaml" "  - host: other.test"
: >"$T/hup.log"
out=$(world_host timeout 60 "$PY" "$T/hangup.py" "$T/hup.log" "$T/hup/new.yaml" \
	"$T/hup/policy.yaml" "$SLUICE" gateway --policy "$T/hup/policy.yaml" --listen 127.0.0.1:3197 \
	--resolver "$N:53" --ca-dir "$T/ca" 2>&1)
check "a terminal hangup: sluice gateway lives on and does not reload; a process's SIGHUP reloads" \
	"alive kept|kill -HUP: reloaded" "$(paste -sd '|' <<<"$out")"
check_has "... and it says why it did not" "SIGHUP from the kernel (a terminal hangup): not a reload" \
	"$(cat "$T/hup.log")"
check "... no sanitizer report" "0" "$(grep -cE 'Sanitizer|runtime error:' "$T/hup.log")"

finish
