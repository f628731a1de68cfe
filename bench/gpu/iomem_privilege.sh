#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Which privilege cuMemHostRegister(IOMEMORY | DEVICEMAP) needs on this
# machine: gpuasync-iomem-privilege on a real PCI memory BAR (the first
# non-NVIDIA device with a memory BAR of 64 KiB or more, and the GPU's
# largest memory BAR, its BAR1 aperture), as root, without CAP_SYS_ADMIN, without CAP_SYS_RAWIO, without any
# capability and as uid 65534.  Run as root; prints one line per try.
#
#   bench/gpu/iomem_privilege.sh BUILD_DIR
set -u
P=${1:?usage: iomem_privilege.sh BUILD_DIR}/bench/gpu/gpuasync-iomem-privilege
[ -x "$P" ] || { echo "no $P"; exit 2; }
# BAR N of a device: the Nth line of its resource file (start end flags);
# 0x200 in flags is IORESOURCE_MEM.
# With want_nvidia 0, the first BAR found; with 1, the largest.
pick() { # want_nvidia
	local d n start end flags best= size=0
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x10de ]; then [ "$1" = 1 ] || continue; else [ "$1" = 0 ] || continue; fi
		n=-1
		while read -r start end flags; do
			n=$((n + 1))
			[ $((flags & 0x200)) != 0 ] && [ -e "$d/resource$n" ] || continue
			[ $((end - start + 1)) -ge 65536 ] && [ $((end - start + 1)) -gt $size ] || continue
			best=$d/resource$n size=$((end - start + 1))
			[ "$1" = 0 ] && break 2
		done <"$d/resource"
		[ "$1" = 1 ] && [ -n "$best" ] && break
	done
	[ -n "$best" ] && echo "$best"
}
for nv in 0 1 -; do
	if [ "$nv" = - ]; then
		r=-
		echo "no BAR: shared anonymous memory (not I/O memory)"
	else
		r=$(pick $nv) || continue
		d=$(dirname "$r")
		echo "BAR: $r (vendor $(cat "$d/vendor") device $(cat "$d/device") class $(cat "$d/class"))"
	fi
	for mode in root no-admin no-rawio no-caps user; do
		"$P" "$r" "$mode" 2>&1
	done
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
