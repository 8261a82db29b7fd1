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
fi
ninja -C "$dir" >"$dir.ninja.log" 2>&1 || {
	cat "$dir.ninja.log" >&2
	exit 1
}
