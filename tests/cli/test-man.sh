#!/bin/bash
# The man page, sluice(1): it is built (build/sluice.1, from
# man/sluice.1.scd), man(1) renders it without a warning, it has the
# sections a man page owes its reader, and it cannot fall behind the
# program: every command `sluice --help` lists has its own section
# ("## sluice COMMAND" in the source), and every flag of that command (in
# `sluice --help` and in `sluice COMMAND --help`'s usage) is described in
# it. Then `meson install --destdir` puts the page in share/man/man1.
#   test-man.sh SLUICE MANPAGE BUILDDIR MESON
set -uo pipefail
sluice=$1
page=$2
builddir=$3
meson=$4
n=0
bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -s "$page" ] && grep -q '^\.TH "sluice" "1"' "$page"; then
	ok "the man page is built: $page"
else
	notok "no man page at $page (or not a sluice(1) page)"
fi

# man-db's man with groff underneath, as a reader would run it; --warnings
# asks groff for its warnings (a bad macro, a line it cannot break, a font
# it lacks), which land on stderr.
LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -P cat -l "$page" >"$tmp/page.txt" 2>"$tmp/warn"
rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/warn" ] && [ -s "$tmp/page.txt" ]; then
	ok "man -l renders it without warnings ($(wc -l <"$tmp/page.txt") lines)"
else
	notok "man -l $page: exit $rc, warnings: $(cat "$tmp/warn")"
fi

for s in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" FILES ENVIRONMENT EXAMPLES "SEE ALSO"; do
	if grep -qx "$s" "$tmp/page.txt"; then
		ok "section $s"
	else
		notok "the man page has no section $s"
	fi
done
status=$(sed -n '/^EXIT STATUS$/,/^FILES$/p' "$tmp/page.txt")
for code in 125 126 127; do
	if grep -Eq "^ +$code\$" <<<"$status"; then
		ok "EXIT STATUS describes run's $code"
	else
		notok "EXIT STATUS does not describe run's $code"
	fi
done
for f in /run/sluice "audit log"; do
	if sed -n '/^FILES$/,/^ENVIRONMENT$/p' "$tmp/page.txt" | grep -qF "$f"; then
		ok "FILES names $f"
	else
		notok "FILES does not name $f"
	fi
done

# Commands and flags: each command of `sluice --help` (a line indented by
# two spaces that begins with its name; the lines indented further are its
# flags and its one-line summary) against its section of the page. The
# last line, "  sluice --help | --version", is no command.
"$sluice" --help >"$tmp/help" 2>&1
cmds=$(grep -oE '^  [a-z][a-z-]*' "$tmp/help" | tr -d ' ' | grep -vx sluice)
for cmd in $cmds; do
	"$sluice" "$cmd" --help 2>&1 | sed -n '1,/^$/p' >"$tmp/own"
	awk -v c="$cmd" '/^  [a-z]/ { on = ($1 == c); next } /^[^ ]|^$/ { on = 0 } on' \
		"$tmp/help" >>"$tmp/own"
	echo "  $cmd" >>"$tmp/own" # its usage line
	python3 - "$page" "$cmd" "$tmp/own" <<'PY'
import re, sys
page, cmd, own = sys.argv[1:]
roff = open(page, encoding="utf-8").read()
# A section begins at .SS "sluice CMD" (scdoc's "## sluice CMD") and ends at
# the next .SS or .SH.
m = re.search(r'(?ms)^\.SS "?sluice %s"?\n(.*?)(?=^\.S[SH] )' % re.escape(cmd), roff)
if not m:
    print("not ok - sluice.1 has no section for `sluice %s` (add \"## sluice %s\" "
          "under COMMANDS in man/sluice.1.scd)" % (cmd, cmd))
    sys.exit(1)
text = m.group(1)
first = open(own).read().split("\n")[0]
flags = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", open(own).read())) - {"--help"})
# Described: a paragraph of its own, whose term (a line that begins with
# the flag in bold) is followed by its indented text; naming it in a
# synopsis is not enough.
missing = [f for f in flags
           if not re.search(r"(?m)^\\fB%s\\fR[^\n]*\n\.RS " % re.escape(f), text)]
if missing:
    for f in missing:
        print("not ok - sluice.1 does not describe `sluice %s %s` (add it under "
              "\"## sluice %s\" in man/sluice.1.scd: a line \"*%s* ...\", then its text "
              "indented by a tab)" % (cmd, f, cmd, f))
    sys.exit(1)
print("ok - sluice.1 describes `sluice %s` and its %d flags" % (cmd, len(flags)))
PY
done | sed -E "s/^(not )?ok - /\1ok X - /" >"$tmp/cmds"
# (numbered here: the loop ran in a subshell)
while IFS= read -r line; do
	case $line in
	"not ok X - "*) notok "${line#not ok X - }" ;;
	"ok X - "*) ok "${line#ok X - }" ;;
	*) echo "# $line" ;;
	esac
done <"$tmp/cmds"
ncmds=$(wc -w <<<"$cmds")
[ "$ncmds" -ge 6 ] && ok "sluice --help lists $ncmds commands, each checked" ||
	notok "found only $ncmds commands in sluice --help: the parse is broken"
for f in --help --version; do
	grep -q -- "\\\\fB$f\\\\fR" "$page" && ok "sluice.1 names sluice $f" ||
		notok "sluice.1 does not name sluice $f"
done

# Installed where man(1) looks for it.
if DESTDIR= "$meson" install -C "$builddir" --no-rebuild --quiet --destdir "$tmp/dest" \
	>"$tmp/install.log" 2>&1; then
	inst=$(find "$tmp/dest" -path '*/share/man/man1/sluice.1')
	if [ -n "$inst" ] && cmp -s "$inst" "$page"; then
		ok "meson install --destdir puts it in ${inst#"$tmp/dest"}"
	else
		notok "meson install did not install sluice.1 into share/man/man1: $(cd "$tmp/dest" && find . -type f)"
	fi
else
	notok "meson install --destdir failed: $(cat "$tmp/install.log")"
fi
echo "1..$n"
exit $((bad > 0))
