#!/usr/bin/env bash
# Install the packages of tools/packages.txt that are missing, with apt-get.
#
#   install-deps.sh [--group NAME] [LIST]
#
# Used by tools/try.sh (--group mount: only the lines tagged "@mount") and
# tools/test.sh (everything).  Runs apt-get only when something is missing
# (so a machine that has everything needs neither root nor the network), as
# root or through sudo; it waits up to 5 minutes for a dpkg/apt lock that
# another apt holds (unattended-upgrades on a fresh machine) instead of
# failing.  Exits non-zero when packages are missing and cannot be
# installed, naming them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
group=
if [ "${1:-}" = --group ]; then
	group=${2:?--group needs a name}
	shift 2
fi
list=${1:-$here/packages.txt}

# Package names: the first word of each line, comments and blanks dropped;
# with a group, only the lines carrying "@GROUP".
mapfile -t wanted < <(sed -e 's/#.*//' "$list" |
	awk -v g="${group:+@$group}" 'NF && (g == "" || index(" " $0 " ", " " g " ")) { print $1 }')

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${wanted[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#wanted[@]} packages present"
	exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: no apt-get here; install these by hand: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
else
	echo "install-deps: not root and no sudo; install these as root: ${missing[*]}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=300)
echo "install-deps: apt-get update (waits up to 5 minutes for another apt to finish)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" update -q
echo "install-deps: apt-get install ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -q \
	--no-install-recommends "${missing[@]}"

still=()
for p in "${missing[@]}"; do
	installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	echo "install-deps: still missing after apt-get: ${still[*]}" >&2
	exit 1
fi
echo "install-deps: installed ${missing[*]}"
