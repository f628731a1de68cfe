#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Regenerate the tree listing in docs/guide.md ("The tree") from a live
# mount's own README, which gpuasyncfs generates from its file table:
#
#   fs/gen-readme-tree.sh [BUILD_DIR]      (default build)
#
# Mounts the simulated card (V4) on a temporary directory, copies the list
# between the fs-tree markers of docs/guide.md, unmounts.  tests/fs checks
# that the listing and a mount agree.
set -eu
cd "$(dirname "$0")/.."
bin=${1:-build}/fs/gpuasyncfs
mnt=$(mktemp -d)
trap 'fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null; rmdir "$mnt"' EXIT
"$bin" --sim -o version=4 "$mnt"
{
	echo '```'
	grep -v '^#' "$mnt/README"
	echo '```'
} > "$mnt.tree"
awk -v tree="$mnt.tree" '
	/<!-- fs-tree:begin/ { print; while ((getline l < tree) > 0) print l; skip = 1; next }
	/<!-- fs-tree:end/ { skip = 0 }
	!skip { print }' docs/guide.md > "$mnt.guide"
mv "$mnt.guide" docs/guide.md
rm -f "$mnt.tree"
