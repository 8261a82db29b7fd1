#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Review of issue #11: `sluice gateway`'s root reader reopens the audit log
# (on SIGUSR1, or whenever the confined gateway asks it: one byte on their
# socket) with open(O_CREAT), following links. The gateway reads the
# sandbox's bytes and is to be treated as hostile; where another user can
# change the audit log's directory, a link planted there makes root create
# or append to a file of root's choosing... of the planter's, and hands the
# gateway a write fd to it. Here: an audit log in a directory another user
# can write (not sticky); that user replaces the log with a link to a file
# in a directory only root may write; SIGUSR1 (what logrotate sends).
# Wanted: the link is not followed (the reopen fails), so the file of
# root's is never created; nor is a regular file that user made there
# written to; a rotation by root still works.
#
# Usage: test-review3-reader.sh [PATH-TO-SLUICE]
# Exit: 0 all passed, 1 a check failed, 77 skipped (not root and CI is not "true").
set -u

here=$(cd "$(dirname "$0")" && pwd)
SLUICE=$(realpath "${1:-${SLUICE:-$here/../../build/cli/sluice}}")
. "$here/lib/checks.sh"
needs_root test-review3-reader.sh ip nft nsenter python3 curl dnsmasq openssl setpriv
. "$here/world.sh"
world_begin
T=$WORLD_TMP
world_services allowed.test=$WORLD_NET_ADDR || { echo "not ok - could not start the services"; exit 1; }
write_policy "$T/policy.yaml" <<'P'
version: 1
allow:
  - host: allowed.test
P
mkdir -m 0777 "$T/logs"          # another user can write it, not sticky
mkdir -m 0700 "$T/rootonly"      # nobody but root
world_gateway_up "$T/gw.log" 3128 "$SLUICE" gateway --policy "$T/policy.yaml" \
	--listen 203.0.113.1:3128 --resolver "$WORLD_NET_ADDR:53" --audit "$T/logs/audit.log" || exit 1
pid=$world_gw_pid
wait_grep "$T/gw.log" "proxy on" || notok "the gateway says it serves: $(cat "$T/gw.log")"
world_host curl -s -m 10 -o /dev/null -x http://203.0.113.1:3128 http://allowed.test/before
wait_grep "$T/logs/audit.log" '/before' || notok "the first record is written"

# The other user (nobody) swaps the log for a link.
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
	"mv '$T/logs/audit.log' '$T/logs/audit.log.1' && ln -s '$T/rootonly/planted' '$T/logs/audit.log'"
check "the control: nobody could not write the root-only directory itself" "no" \
	"$(setpriv --reuid=65534 --regid=65534 --clear-groups touch "$T/rootonly/x" 2>/dev/null && echo yes || echo no)"
kill -USR1 "$pid"
world_host curl -s -m 10 -o /dev/null -x http://203.0.113.1:3128 http://allowed.test/after
for _ in $(seq 30); do [ -e "$T/rootonly/planted" ] && break; sleep 0.1; done
check "the root reader did not follow the planted link (no file made in root's directory)" "no" \
	"$([ -e "$T/rootonly/planted" ] && echo "yes: $(stat -c '%U %a' "$T/rootonly/planted"), holds $(grep -c . "$T/rootonly/planted") records" || echo no)"

# The same user plants a file of its own where the log was: root must not
# append the records to a file another user can read and rewrite.
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
	"rm -f '$T/logs/audit.log' && : > '$T/logs/audit.log' && chmod 666 '$T/logs/audit.log'"
kill -USR1 "$pid"
world_host curl -s -m 10 -o /dev/null -x http://203.0.113.1:3128 http://allowed.test/after-file
wait_grep "$T/gw.log" "a file of another user's" ||
	notok "the gateway says why it did not reopen: $(tail -n 3 "$T/gw.log")"
check "a file another user made where the log was gets no record" "0" \
	"$(grep -c . "$T/logs/audit.log")"
wait_grep "$T/logs/audit.log.1" '/after-file' || notok "the records go on to the old file"
check "... they go on to the file open until then" "1" "$(grep -c '/after-file' "$T/logs/audit.log.1")"

# An ordinary rotation still works: moved away by root, reopened as a new
# file of root's.
mv "$T/logs/audit.log" "$T/logs/audit.log.2"
mv "$T/logs/audit.log.1" "$T/logs/audit.log.3"
kill -USR1 "$pid"
for _ in $(seq 50); do [ -f "$T/logs/audit.log" ] && break; sleep 0.1; done
world_host curl -s -m 10 -o /dev/null -x http://203.0.113.1:3128 http://allowed.test/rotated
wait_grep "$T/logs/audit.log" '/rotated' || notok "a rotation by root reopens the log"
check "a rotation by root: the new log is root's and has the next record" "root 1" \
	"$(stat -c %U "$T/logs/audit.log") $(grep -c '/rotated' "$T/logs/audit.log")"
finish
