#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# ctest doc_tables: the maintainers' "what each file owns" tables cannot
# drift.  Every source file is named in its folder's table, and no table
# names a file that is not there:
#   docs/fs.md      fs/             (as `fs/NAME`)
#   docs/lib.md     lib/ and core/  (by name, or `stem.[ch]`)
#   kmod/README.md  kmod/
#   tests/README.md tests/          (folders and files at its top)
#   docs/design.md  the top-level folders
# and no user doc cites an internal issue number.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
bad=0
say() {
	echo "$*"
	bad=1
}
# The backticked words of DOC's table rows, one per line, and each one's
# comma-separated parts.
ticked() {
	grep '^|' "$1" | grep -oE '`[^`]+`' | tr -d '`' | tr ',' '\n' | sed 's/^ *//; s/ *$//'
}
# Is NAME (a file's basename) named in DOC: as itself, at the end of a path,
# or as `stem.[ch]`?
named() {
	local doc=$1 name=$2 stem=${2%.*}
	ticked "$doc" | grep -qE "(^|/)$(printf '%s' "$name" | sed 's/[.[]/\\&/g')/?\$" && return 0
	case $name in *.c | *.h) ticked "$doc" | grep -qE "(^|/)$stem\\.\\[ch\\]\$" && return 0 ;; esac
	return 1
}

# fs/
for f in fs/*.c fs/*.h fs/*.sh; do
	grep -qF "\`$f\`" docs/fs.md || say "docs/fs.md: $f is in no row of its table"
done
for f in $(ticked docs/fs.md | grep -E '^fs/[^ ]+\.(c|h|sh)$'); do
	[ -e "$f" ] || say "docs/fs.md names $f, which is not there"
done

# lib/ and core/
for f in $(find lib/src lib/include core -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \)); do
	named docs/lib.md "$(basename "$f")" || say "docs/lib.md: $f is in no row of its table"
done
for w in $(ticked docs/lib.md | grep -E '\.(c|h|cu)$'); do
	[ -n "$(find lib core -name "$(basename "$w")" -print -quit)" ] ||
		say "docs/lib.md names $w, which is not there"
done

# kmod/
for f in $(find kmod -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name Kbuild -o -name Makefile \)) \
	$(find kmod -mindepth 1 -maxdepth 1 -type d); do
	named kmod/README.md "$(basename "$f")" || say "kmod/README.md: $f is in no row of its table"
done
for w in $(ticked kmod/README.md | grep -E '\.(c|h)$'); do
	[ -e "kmod/$w" ] || [ -e "kmod/${w#../}" ] || [ -e "${w#../}" ] ||
		say "kmod/README.md names $w, which is not there"
done

# tests/
for f in tests/*; do
	n=$(basename "$f")
	case $n in README.md | CMakeLists.txt) continue ;; esac
	[ -d "$f" ] && n=$n/
	ticked tests/README.md | grep -qxF "$n" || say "tests/README.md: tests/$n is in no row of its table"
done
for w in $(grep '^|' tests/README.md | cut -d'|' -f2 | grep -oE '`[^`]+`' | tr -d '`'); do
	[ -e "tests/${w%/}" ] || say "tests/README.md names $w, which is not there"
done

# the top-level folders
for d in */; do
	case $d in build*/ | docs/) continue ;; esac
	[ -e "$d/.gitignore-only" ] && continue
	git ls-files --error-unmatch "$d" >/dev/null 2>&1 || continue
	grep -qE "^- \`$d\`" docs/design.md || say "docs/design.md: $d is not among its parts"
done
for w in $(grep -oE '^- `[a-z]+/`' docs/design.md | sed 's/^- `//; s/`$//'); do
	[ -d "$w" ] || say "docs/design.md names $w, which is not there"
done

# User docs say what and why, not which internal issue asked for it.
for f in README.md docs/*.md kmod/README.md man/*.[0-9]; do
	grep -n -iE '\bissues? [0-9]+' "$f" | sed "s|^|$f: cites an internal issue number: |" | grep . && bad=1
done

[ $bad = 0 ] && echo "PASS: every source file is in its folder's table, every table names only files that are there"
exit $bad
