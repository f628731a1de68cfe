#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The man pages: each renders with man -l without a warning, and
# gpuasyncfs.8 names every option the daemon's --help prints (its own and the
# FUSE ones), and the parser takes every -o option the page names (the one
# it calls refused is refused), so the page cannot drift from the program.
#
#   man.sh MAN_DIR GPUASYNCFS
#
# Exit 77 (skipped) when man is missing, except under CI=true.
set -u
dir=$1
daemon=$2

fail() {
	echo "FAILED: $*" >&2
	exit 1
}
if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
	[ "${CI:-}" = true ] && fail "man or groff not found (CI=true: no skipping; tools/packages.txt lists man-db)"
	echo "SKIP: man or groff not found (man-db renders with groff)"
	exit 77
fi

tmp=$(mktemp -d /tmp/gpuasync-man.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

for page in gpuasyncfs.8 gpuasyncfs.conf.5 libgpuasync.3; do
	[ -f "$dir/$page" ] || fail "no $dir/$page"
	# man -l prints groff's warnings on stderr; the page itself goes to the file.
	warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$dir/$page" 2>&1 >"$tmp/$page.txt")
	[ -z "$warnings" ] || fail "$page: man --warnings -l:"$'\n'"$warnings"
	[ -s "$tmp/$page.txt" ] || fail "$page renders empty"
	echo "ok: $page renders without warnings"
done

# The options --help lists: every -x, --long and -o name (also the second
# name in "-o uid=USER,gid=GROUP"), from the option column and the text.
"$daemon" --help >"$tmp/help" 2>&1 || fail "$daemon --help"
opts=$(grep -oE -- '(^|[ ,])(--?[A-Za-z][A-Za-z_]*|-o [a-z_.]+(=[^ ,]*)?(,[a-z_]+)*)' "$tmp/help" |
	sed -E 's/^[ ,]//; s/^-o //; s/=[^,]*//g; s/,/\n/g' | sort -u)
[ "$(echo "$opts" | wc -l)" -ge 20 ] || fail "found only these options in --help: $opts"
# Rendered for a terminal, with the hyphens man pages write as \- turned
# into plain '-' and no line broken inside a word.
LC_ALL=C MANWIDTH=200 man -l "$dir/gpuasyncfs.8" 2>/dev/null | sed 's/\x08.//g' >"$tmp/page"
missing=
for o in $opts; do
	case $o in
	-*) grep -qE -- "(^|[^A-Za-z_-])$o([^A-Za-z_-]|$)" "$tmp/page" || missing="$missing $o" ;;
	*) grep -qE -- "-o $o([^A-Za-z_]|$)|(^|[ ,.])$o=" "$tmp/page" || missing="$missing -o $o" ;;
	esac
done
[ -z "$missing" ] || fail "gpuasyncfs.8 lacks options that --help prints:$missing"
echo "ok: gpuasyncfs.8 names all $(echo "$opts" | wc -w) options of --help: $(echo "$opts" | tr "\n" " ")"

# The other way: every -o option the page names is one the parser takes
# (run against a regular file as mountpoint, which is refused only after
# every option was parsed), and the one it says is refused is refused.
: >"$tmp/file"
named=$(grep -oE -- '-o [a-z_.]*[a-z_]' "$tmp/page" | sed 's/^-o //' | sort -u)
[ "$(echo "$named" | wc -l)" -ge 15 ] || fail "found only these -o options in gpuasyncfs.8: $named"
for o in $named; do
	# a flag as it is, a valued option with a value (either may be refused
	# for its value, with a message naming it, but not as unknown)
	out=$("$daemon" -o "$o" --sim "$tmp/file" 2>&1)
	echo "$out" | grep -q "unknown option" && out=$("$daemon" -o "$o=1" --sim "$tmp/file" 2>&1)
	case $o in
	key | section.key | option | options) ;; # "-o key=value", prose ("-o options")
	max_threads)
		echo "$out" | grep -q -- "-o threads=N" || fail "-o max_threads: not refused as gpuasyncfs.8 says: $out" ;;
	*)
		echo "$out" | grep -q "unknown option" && fail "gpuasyncfs.8 names -o $o, the parser refuses it: $out" ;;
	esac
done
echo "ok: the parser takes every -o option gpuasyncfs.8 names ($(echo "$named" | wc -w)), max_threads refused as it says"
echo PASS
