#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A uid that `sluice run` hands out again carries nothing of its previous
# sandbox: no keyring, no process. The start skips the walk of /proc and the
# scrub of the keyrings for a uid whose last holder released it clean (its
# lock file removed only once every process of the uid was gone and its
# keyrings were emptied); a holder that was SIGKILLed leaves its lock file,
# and the next holder walks and scrubs as before. To see that, every run
# here gets the same two uids (the command's and its gateway's): the others
# of the range are taken out of the search by listing them in /etc/subuid,
# bind-mounted over in a mount namespace of the runs' own. Keys are added
# as those uids from outside (the sandbox itself may not call add_key).
#
# Usage: test-uid-reuse.sh [PATH-TO-SLUICE]   (default: $SLUICE, then build/cli/sluice)
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")

if [ "$(id -u)" != 0 ]; then
	echo "# test-uid-reuse.sh needs root (network namespaces, cgroups, nftables)"
	[ "${CI:-}" = true ] && { echo "not ok - not root under CI"; exit 1; }
	exit 77
fi
for tool in ip nft nsenter unshare python3; do
	command -v "$tool" >/dev/null || { echo "not ok - $tool is not installed"; exit 1; }
done
[ -x "$SLUICE" ] || { echo "not ok - no sluice binary at $SLUICE"; exit 1; }

. "$here/world.sh"

passed=0
failed=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
notok() { echo "not ok - $*"; failed=$((failed + 1)); }
check() { # check DESCRIPTION EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then ok "$1"; else notok "$1: expected '$2', got '$3'"; fi
}
check_has() { case "$3" in *"$2"*) ok "$1" ;; *) notok "$1: '$2' not in '$3'" ;; esac; }

extra_pids=()
guarded=
cleanup() {
	local p
	# A keyring left guarded would keep its uid from every later run.
	[ -n "$guarded" ] && key unguard 0 "$guarded" >/dev/null
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in $(uid_pids); do kill -9 "$p" 2>/dev/null; done
	world_down
}
trap cleanup EXIT
trap 'exit 1' INT TERM

world_up || { echo "not ok - could not build the test world"; exit 1; }
T=$WORLD_TMP

# Two neighbouring uids of the range, somewhere in its middle; every other
# uid sluice hands out (0x7F000001..0x7F00FFFD) is "subordinate".
U1=$((0x7F000000 + 0x4000 + (RANDOM % 0x4000) * 2))
U2=$((U1 + 1))
FIRST=$((0x7F000001))
END=$((0x7F010000))
printf 'slt:%d:%d\nslt:%d:%d\n' $FIRST $((U1 - FIRST)) $((U2 + 1)) $((END - U2 - 1)) >"$T/subid"
POOL=10.232.78.0/24
run_bg() { # run_bg OUT CMD...: a run in the background, $! its sluice
	local out=$1
	shift
	world_host_bg unshare -m --propagation private sh -c \
		'mount --bind "$0" /etc/subuid && mount --bind "$0" /etc/subgid && exec "$@"' \
		"$T/subid" "$SLUICE" run --pool "$POOL" -- "$@" >"$out" 2>&1
}
# A run in the foreground, its output on stdout: $? is its status.
run_fg() {
	world_host unshare -m --propagation private sh -c \
		'mount --bind "$0" /etc/subuid && mount --bind "$0" /etc/subgid && exec "$@"' \
		"$T/subid" "$SLUICE" run --pool "$POOL" -- "$@" 2>&1
}
# End the run whose sluice is $1: its sandbox has a /tmp of its own, and
# its command (HOLD below) waits for a file there. $? is the run's status.
end_run() {
	local p sbox
	sbox=$(for p in $(uid_pids); do [ "$(cat "/proc/$p/comm")" = sh ] && echo "$p"; done | head -n1)
	nsenter -t "$sbox" -m touch /tmp/slt-go
	wait "$1"
}
# The processes running as U1 or U2 (real, effective, saved or fs uid).
uid_pids() {
	local f
	for f in /proc/[0-9]*/status; do
		awk -v a="$U1" -v b="$U2" '/^Uid:/ { for (i = 2; i <= 5; i++) if ($i == a || $i == b) f = 1 }
			END { exit !f }' "$f" 2>/dev/null && { f=${f#/proc/}; echo "${f%/status}"; }
	done
}
# add UID: a key in its user and user-session keyrings; find UID: which of
# them holds it. As the uid, from outside any sandbox.
cat >"$T/key.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
op, uid = sys.argv[1], int(sys.argv[2])
pid = os.fork()
if pid == 0 and op == "unguard":
    # Root: "other" may change the permissions (set so for the test), and
    # root, not the owner, may then change them back.
    print(libc.syscall(250, 5, int(sys.argv[3]), 0x3f3f0000))  # KEYCTL_SETPERM
    os._exit(0)
if pid == 0 and op in ("guard", "guard-nolink", "guard-all"):
    # Its user keyring, with a key, kept from its owner: the owner may do
    # nothing with it, the possessor all but change permissions ("guard"),
    # or but link it too (so that the scrub cannot make it possessed by
    # serial: "guard-nolink"), or only view, read and write ("guard-all":
    # not even find it); "other" may only change them back ("unguard").
    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
    libc.syscall(248, b"user", b"slt-canary", b"secret", 6, -4)  # add_key
    serial = libc.syscall(250, 0, -4, 1)  # KEYCTL_GET_KEYRING_ID
    perm = {"guard": 0x1f000020, "guard-nolink": 0x0f000020, "guard-all": 0x07000020}[op]
    print(serial if libc.syscall(250, 5, serial, perm) == 0 else "setperm failed")
    os._exit(0)
if pid == 0:
    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
    found = []
    for name, ring in (("user", -4), ("user-session", -5)):
        if op == "add":
            r = libc.syscall(248, b"user", b"slt-canary", b"secret", 6, ring)  # add_key
        else:
            r = libc.syscall(250, 10, ring, b"user", b"slt-canary", 0)  # KEYCTL_SEARCH
        if r >= 0:
            found.append(name)
    print(" ".join(found) if found else "none")
    os._exit(0)
os.waitpid(pid, 0)
PY
key() { python3 "$T/key.py" "$@"; }
# The uid a run's command printed first ("uid N"), once it has.
uid_of() {
	local u
	for _ in $(seq 200); do
		u=$(sed -n 's/^uid \([0-9]*\)$/\1/p' "$1" | head -n1)
		[ -n "$u" ] && { echo "$u"; return; }
		sleep 0.05
	done
}
other() { [ "$1" = "$U1" ] && echo "$U2" || echo "$U1"; }
lockfile() { [ -e "/run/sluice/uid/$1" ] && echo held || echo gone; }
# Until the lock files of both uids are gone (the releaser lets go after
# its sluice returned), or 5 s.
# The uids among U1 U2 that own a key at all (a line of /proc/key-users),
# once the kernel's key collector has had up to 5 s to free what was
# invalidated: "none" when neither does.
key_owners() {
	local o
	for _ in $(seq 100); do
		o=$(awk -F: -v a="$U1" -v b="$U2" '$1 + 0 == a || $1 + 0 == b { printf "%s ", $1 + 0 }' \
			/proc/key-users 2>/dev/null)
		[ -z "$o" ] && { echo none; return; }
		sleep 0.05
	done
	echo "$o"
}
released() {
	for _ in $(seq 100); do
		[ "$(lockfile "$U1")$(lockfile "$U2")" = gonegone ] && return 0
		sleep 0.05
	done
	return 1
}
# check_released LABEL: both uids released clean (their lock files gone).
check_released() {
	if released; then ok "$1"; else notok "$1: lock files left: $(lockfile "$U1") $(lockfile "$U2")"; fi
}
# ours UID: yes when UID is one of the two the range holds.
ours() { [ "$1" = "$U1" ] || [ "$1" = "$U2" ] && echo yes; }
HOLD='echo "uid $(id -u)"; while [ ! -e /tmp/slt-go ]; do sleep 0.05; done'
# start_run NAME: a run whose command holds until end_run; $run_pid is its
# sluice, $run_uid its command's uid.
start_run() {
	rm -f "$T/$1.out"
	run_bg "$T/$1.out" sh -c "$HOLD"
	run_pid=$!
	extra_pids+=("$run_pid")
	run_uid=$(uid_of "$T/$1.out")
}

# ---- a run that ends as it should ----
run_bg "$T/a.out" sh -c "$HOLD"
apid=$!
extra_pids+=("$apid")
ua=$(uid_of "$T/a.out")
case "$ua" in "$U1" | "$U2") ok "the run gets one of the two uids left ($ua)" ;;
*) notok "the run got uid '$ua', not $U1 or $U2: $(cat "$T/a.out")" ;; esac
ga=$(other "$ua")
check "as its command's uid and its gateway's, keys are added from outside" \
	"user user-session user user-session" "$(key add "$ua") $(key add "$ga")"
check "... and the uids' lock files are there while it runs" "held held" \
	"$(lockfile "$ua") $(lockfile "$ga")"
end_run "$apid"
check "the run exits 0" 0 "$?"
check_released "after it, both uids are released clean (their lock files removed)"
# Emptied, and gone: a keyring named to be emptied exists from then on,
# three keys of a uid for good (up to 65,533 uids), and every key the
# kernel holds slows the making of the next.
check "... freed by then: neither uid owns a key any more (/proc/key-users)" none "$(key_owners)"
# (Searching them, as the uids, makes them anew.)
check "... and none of their keys is found in them" "none none" "$(key find "$ua") $(key find "$ga")"

# ---- the next run on the same uids, whose sluice is SIGKILLed ----
run_bg "$T/b.out" sh -c "$HOLD"
bpid=$!
extra_pids+=("$bpid")
ub=$(uid_of "$T/b.out")
check "the next run gets the same two uids" "$U1 $U2" "$(printf '%s\n' "$ub" "$(other "$ub")" | sort | tr '\n' ' ' | sed 's/ $//')"
check "... its sandbox sees no key of the run before (searched as its uid while it runs)" \
	"none none" "$(key find "$ub") $(key find "$(other "$ub")")"
check "keys are added as its uids while it runs" "user user-session user user-session" \
	"$(key add "$ub") $(key add "$(other "$ub")")"
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null
for _ in $(seq 100); do [ -z "$(uid_pids)" ] && break; sleep 0.05; done
check "SIGKILLed, the run's processes end" "" "$(uid_pids)"
check "... and it leaves both lock files (nothing released them clean)" "held held" \
	"$(lockfile "$U1") $(lockfile "$U2")"

# A process that outlived its sluice (as one stuck in the kernel can), made
# here: while it runs as one of the uids, no run may get that uid.
setpriv --reuid="$U1" --regid="$U1" --clear-groups sleep 60 &
spid=$!
extra_pids+=("$spid")
for _ in $(seq 100); do [ -n "$(uid_pids)" ] && break; sleep 0.02; done
out=$(run_fg id -u)
check "while a process lives on as one of the uids, the next run refuses to start (it would share it)" \
	"125" "$?"
check_has "... and says why" "sluice run: allocating a uid: every uid in" "$out"
kill -KILL "$spid"
wait "$spid" 2>/dev/null
start_run c
cpid=$run_pid uc=$run_uid
check "the run after the killed one gets the uids again" "yes" \
	"$(ours "$uc")"
check "... and sees no key the killed run's uids were given (scrubbed before it was handed out)" \
	"none none" "$(key find "$uc") $(key find "$(other "$uc")")"
end_run "$cpid"
check "it exits 0" 0 "$?"
check_released "... and its uids are released clean"
# Scrubbed at its start (keys were given to them before), not at its
# end (nothing was): no keyring of theirs is left either way.
check "... owning no key, neither made by the scrub at its start nor by its end" none \
	"$(key_owners)"

# ---- holders that keep their keyring from its owner ----
# Emptied, a keyring whose permissions its holder set would stay as they
# are (others may be let write to it): freed as its possessor, or the uid
# is not released clean.
start_run g
serial=$(key guard "$run_uid")
case "$serial" in [0-9]*) ok "as a run's uid, its user keyring is kept from its owner (not its possessor)" ;;
*) notok "guarding the keyring of $run_uid: $serial" ;; esac
end_run "$run_pid"
check "the run exits 0" 0 "$?"
check_released "... both uids are released clean (the keyring emptied and freed as its possessor)"
check "... owning no key" none "$(key_owners)"

# Kept from the possessor's link (the keyring is found and emptied, but
# cannot be freed) or from its search too (not even found).
for how in guard-nolink guard-all; do
	start_run "d-$how"
	ud=$run_uid
	serial=$(key "$how" "$ud")
	guarded=$serial
	case "$serial" in [0-9]*) ok "$how: as a run's uid, its user keyring is kept from it" ;;
	*) notok "$how: guarding the keyring of $ud: $serial" ;; esac
	end_run "$run_pid"
	check "$how: the run exits 0" 0 "$?"
	for _ in $(seq 100); do [ "$(lockfile "$(other "$ud")")" = gone ] && break; sleep 0.05; done
	check "$how: its gateway's uid is released clean, the guarded one is not (its lock file stays)" \
		"gone held" "$(lockfile "$(other "$ud")") $(lockfile "$ud")"
	out=$(run_fg id -u)
	check "$how: the next run does not get it (with one uid left, it cannot start)" 125 "$?"
	check_has "$how: ... and says why" "sluice run: allocating a uid: every uid in" "$out"
	check "$how: its keyring's permissions put back (by root, as they allow)" 0 \
		"$(key unguard "$ud" "$serial")"
	guarded=
	start_run "e-$how"
	ue=$run_uid
	check "$how: the next run gets both uids again" yes \
		"$(ours "$ue")"
	check "$how: ... and sees no key of the guarded keyring (scrubbed before it was handed out)" \
		"none none" "$(key find "$ue") $(key find "$(other "$ue")")"
	end_run "$run_pid"
	check "$how: it exits 0" 0 "$?"
	check_released "$how: ... and both uids are released clean"
	check "$how: ... owning no key" none "$(key_owners)"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
