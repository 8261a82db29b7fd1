#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A container whose only way out is sluice: start it with no network at all
# (`docker run --network none`), fence its namespace with `sluice attach
# --pid`, wait until it exits (or until this script is told to stop), then
# tear both down: the container first, so that it never runs unfenced, then
# sluice, which takes everything it added with it. As root.
#
#   sluice-container.sh --policy FILE [--audit FILE] [--name NAME]
#                       [--sluice-arg ARG]... [--run-arg ARG]... -- IMAGE [CMD [ARG...]]
#
#   SLUICE_RUNTIME=docker (default) | podman | unshare
#       unshare: no container runtime, the same flow with a stand-in: a
#       process in a new network namespace (unshare --net, lo up), as
#       nobody (uid 65534) without any capability, inside bwrap (its own
#       user and pid namespaces, the host read-only, a private /tmp).
#       IMAGE is ignored there ("-"), CMD runs on the host's files. This is
#       the path tests/integration/test-recipes.sh runs.
#   SLUICE=PATH   the sluice binary (default: sluice in PATH)
#   SLUICE_ATTACH_TIMEOUT=SECONDS   how long to wait for the fence (default 15)
#
# --sluice-arg passes one more argument to sluice attach (--ca-dir DIR,
# --resolver ADDR, --upstream-ca FILE); --run-arg one more to `docker run`
# (-v SRC:DST, -e NAME, --read-only, --user; not --network, podman's --pod,
# --privileged or --cap-add NET_ADMIN: the script refuses those, and attach
# would too). The exit status is the container's
# (125 when the container or the fence could not be set up, as `docker run`
# does for its own failures).
#
# What the container sees: only `lo` until sluice has attached (a request
# it makes that early fails, it does not leak), then a veth whose one route
# is sluice's gateway; DNS answered by the gateway (its resolv.conf is not
# changed: sluice sends port 53 to the gateway). Hosts whose rules inspect
# need the container to trust sluice's CA: keep one with
# `--sluice-arg --ca-dir --sluice-arg /etc/sluice/ca` and build its
# ca-bundle.crt into the image. docs/deploying.md has more.
set -uo pipefail

runtime=${SLUICE_RUNTIME:-docker}
sluice=${SLUICE:-sluice}
attach_timeout=${SLUICE_ATTACH_TIMEOUT:-15}
policy= audit= name=sluice-agent-$$
sluice_args=()
run_args=()

usage() {
	echo "usage: sluice-container.sh --policy FILE [--audit FILE] [--name NAME]" \
		"[--sluice-arg ARG]... [--run-arg ARG]... -- IMAGE [CMD [ARG...]]" >&2
	exit 125
}
die() {
	echo "sluice-container: $*" >&2
	exit 125
}

while [ $# -gt 0 ]; do
	case $1 in
	--policy) [ $# -ge 2 ] || usage; policy=$2; shift 2 ;;
	--audit) [ $# -ge 2 ] || usage; audit=$2; shift 2 ;;
	--name) [ $# -ge 2 ] || usage; name=$2; shift 2 ;;
	--sluice-arg) [ $# -ge 2 ] || usage; sluice_args+=("$2"); shift 2 ;;
	--run-arg)
		[ $# -ge 2 ] || usage
		case $2 in
		--net* | --network* | --pod* | --privileged* | --cap-add* | --pid* | --userns*)
			die "--run-arg $2: the container must keep its own network namespace, without NET_ADMIN"
			;;
		esac
		run_args+=("$2")
		shift 2
		;;
	--) shift; break ;;
	*) echo "sluice-container: unknown option '$1'" >&2; usage ;;
	esac
done
[ -n "$policy" ] || die "--policy is required"
[ "$runtime" != unshare ] || [ ${#run_args[@]} = 0 ] || die "--run-arg is for docker and podman"
[ $# -ge 1 ] || die "no IMAGE given (after --)"
image=$1
shift
[ "$(id -u)" = 0 ] || die "must run as root (sluice attach changes the namespace's links and rules)"
command -v "$sluice" >/dev/null || die "no sluice binary: '$sluice' (set SLUICE=PATH)"

# ---- the runtime: start, pid, stop, wait ----
# Each runtime_* works for docker and podman alike; unshare is the stand-in.
cpid= # unshare: the stand-in's pid (bwrap's), a child of this script
info= # unshare: where bwrap writes its child's pid
runtime_start() {
	case $runtime in
	docker | podman)
		command -v "$runtime" >/dev/null || fail "SLUICE_RUNTIME=$runtime, but $runtime is not installed"
		# --network none: no interface but lo, so nothing gets out before
		# sluice has attached; no NET_ADMIN (the default), which attach
		# would refuse: the container could delete the fence.
		"$runtime" run -d --name "$name" --network none --cap-drop NET_ADMIN \
			"${run_args[@]}" "$image" "$@" >/dev/null || fail "$runtime run failed"
		# Ours to stop and remove from here on; before, a container of
		# that name (a run refused as "already in use") is someone else's.
		started=1
		;;
	unshare)
		command -v bwrap >/dev/null || fail "SLUICE_RUNTIME=unshare needs bwrap (bubblewrap)"
		[ $# -ge 1 ] || fail "SLUICE_RUNTIME=unshare needs a CMD after IMAGE"
		# A new network namespace with lo up, then an unprivileged uid
		# (nobody) with every capability gone for good (bounding set),
		# then bwrap (its own user namespace, which owns nothing the host
		# has): the stand-in's processes are all in that namespace, none
		# can change it. Not root: the stand-in runs on the host's files,
		# where a container's root (CAP_SYS_ADMIN and CAP_SYS_PTRACE
		# beneath bwrap, or only uid 0) would uncover the host's /proc
		# and join the host's network namespace, or read root's files.
		# bwrap reports its child's pid (the container's "init", as
		# docker's State.Pid) once the child runs.
		info=$(mktemp /tmp/sluice-container.XXXXXX) || fail "mktemp failed"
		# (exec: with our traps set, bash would fork once more, and $!
		# would be a shell, not the stand-in.)
		(
			trap - EXIT INT TERM
			exec unshare --net -- sh -c 'ip link set lo up && exec "$@"' sh \
				setpriv --reuid=65534 --regid=65534 --clear-groups \
				--bounding-set -all --inh-caps -all -- \
				bwrap --unshare-pid --unshare-ipc --die-with-parent --new-session \
				--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
				--info-fd 3 -- "$@" </dev/null 3>"$info"
		) &
		cpid=$!
		;;
	*) fail "SLUICE_RUNTIME must be docker, podman or unshare, not '$runtime'" ;;
	esac
}

# The pid of a process in the container's network namespace.
runtime_pid() {
	case $runtime in
	docker | podman) "$runtime" inspect -f '{{.State.Pid}}' "$name" 2>/dev/null ;;
	unshare) sed -n 's/.*"child-pid": *\([0-9]*\).*/\1/p' "$info" 2>/dev/null ;;
	esac
}

# A child of ours that exited is a zombie until waited for, and kill -0
# still finds it: look at its state.
alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ] && [ "$st" != X ]
}

runtime_running() {
	case $runtime in
	docker | podman) [ "$("$runtime" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] ;;
	unshare) alive "$cpid" ;;
	esac
}

# Stop and remove the container; its exit status in $stopped.
stopped=125
started= # docker, podman: set once `run` made the container
runtime_stop() {
	case $runtime in
	docker | podman)
		[ -n "$started" ] || return 0
		"$runtime" stop -t 10 "$name" >/dev/null 2>&1
		stopped=$("$runtime" inspect -f '{{.State.ExitCode}}' "$name" 2>/dev/null) || stopped=125
		"$runtime" rm -f "$name" >/dev/null 2>&1
		;;
	unshare)
		[ -n "$cpid" ] || return 0
		kill -TERM "$cpid" 2>/dev/null
		wait "$cpid"
		stopped=$?
		cpid=
		rm -f "$info"
		;;
	esac
}

# ---- the flow ----
attach_pid=
failed= # set: sluice's or the runtime's own failure, exit 125
log=$(mktemp /tmp/sluice-container.XXXXXX) || die "mktemp failed"
teardown() {
	trap - EXIT INT TERM
	# The container first: it must not run a moment without its fence.
	runtime_stop
	if [ -n "$attach_pid" ]; then
		kill -TERM "$attach_pid" 2>/dev/null
		wait "$attach_pid"
	fi
	rm -f "$log"
	[ -z "$failed" ] || exit 125
	exit "$stopped"
}
fail() {
	echo "sluice-container: $*" >&2
	failed=1
	exit 125 # through teardown
}
trap teardown EXIT
trap 'exit' INT TERM

runtime_start "$@"
pid=
for _ in $(seq $((attach_timeout * 10))); do
	pid=$(runtime_pid)
	[ -n "$pid" ] && [ "$pid" != 0 ] && [ -e "/proc/$pid/ns/net" ] && break
	pid=
	sleep 0.1
done
[ -n "$pid" ] || fail "the container did not start"

attach=("$sluice" attach --pid "$pid" --policy "$policy")
[ -z "$audit" ] || attach+=(--audit "$audit")
attach+=("${sluice_args[@]}")
(
	trap - EXIT INT TERM
	exec "${attach[@]}" 2>"$log"
) &
attach_pid=$!
# Ready when sluice says "attached through ..."; an exit before that is a
# refusal (an invalid policy, a namespace it will not fence).
ready=
for _ in $(seq $((attach_timeout * 10))); do
	grep -q 'attached through' "$log" && { ready=1; break; }
	alive "$attach_pid" || break
	sleep 0.1
done
cat "$log" >&2
[ -n "$ready" ] || fail "sluice attach did not attach: stopping the container"
echo "sluice-container: $runtime container $name (pid $pid) is fenced by sluice (pid $attach_pid)" >&2

# Until the container exits (sluice then detaches by itself: nothing holds
# the namespace) or we are told to stop (teardown, by the trap).
while runtime_running; do
	alive "$attach_pid" || fail "sluice attach exited: stopping the container"
	sleep 0.5 &
	wait $!
done
