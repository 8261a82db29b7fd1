#!/bin/bash
# The systemd units in examples/systemd pass `systemd-analyze verify` with
# no warning: every setting known to this systemd (Debian 12's 252), every
# value valid, ExecStart='s binary executable (the build's sluice stands in
# for /usr/local/bin/sluice), Documentation=man:sluice(1) found (the
# build's man page). Templates are verified as an instance. This machine
# runs no systemd as PID 1, so the units themselves are not started here:
# tests/integration/test-recipes.sh runs sluice-agent.service's ExecStart=
# under the unit's settings.
#   test-units.sh SLUICE SOURCE-ROOT MANPAGE
set -uo pipefail
sluice=$(realpath "$1")
units=$2/examples/systemd
page=$3
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v systemd-analyze >/dev/null; then
	notok "systemd-analyze is not installed (Debian package systemd; scripts/setup.sh --test installs it)"
	echo "1..$n"
	exit 1
fi
mkdir -p "$tmp/units" "$tmp/man/man1"
man=--man=yes
if [ -s "$page" ]; then
	cp "$page" "$tmp/man/man1/sluice.1"
else
	man=--man=no # built with -Dman=disabled
	echo "# no man page built: Documentation=man:sluice(1) not checked"
fi
for u in "$units"/*.service "$units"/*.timer; do
	b=$(basename "$u")
	sed "s|/usr/local/bin/sluice|$sluice|g" "$u" >"$tmp/units/${b/@./@1001.}"
done
for u in "$tmp"/units/*; do
	b=$(basename "$u")
	out=$(cd "$tmp/units" && MANPATH=$tmp/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$man" "$u" 2>&1)
	rc=$?
	if [ $rc = 0 ] && [ -z "$out" ]; then
		ok "systemd-analyze verify $b: no warnings"
	else
		notok "systemd-analyze verify $b (exit $rc): $out"
	fi
done
echo "1..$n"
exit $((bad > 0))
