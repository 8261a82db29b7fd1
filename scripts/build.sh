#!/bin/bash
# Configure (once) and build one build directory.
#   scripts/build.sh DIR [MESON SETUP OPTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
		cat "$dir.setup.log" >&2
		exit 1
	}
elif [ $# -gt 0 ]; then
	# Configured before (by the demo, say): apply the options asked for
	# now, so that `-Dtests=enabled` is not lost on a build made without.
	meson configure "$dir" "$@" >"$dir.setup.log" 2>&1 || {
		cat "$dir.setup.log" >&2
		exit 1
	}
fi
ninja -C "$dir" >"$dir.ninja.log" 2>&1 || {
	cat "$dir.ninja.log" >&2
	exit 1
}
