#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Print frame and error rates of a gpuasyncfs mount every INTERVAL seconds.
#
#   examples/monitor.sh /mnt/gpuasync [INTERVAL] [COUNT]
#
# Reads a few counters per interval (each read is a fresh register read:
# the files are direct_io).  COUNT limits the number of lines (0 = forever).
set -eu

M=${1:-/mnt/gpuasync}
INTERVAL=${2:-1}
COUNT=${3:-0}

val() { cat "$M/registers/$1" 2>/dev/null || echo 0; }
states() {
	# "FREE=3 READY=1": buffer states from the metrics file
	# (labels in any order: the card's identity comes first)
	awk '/^gpuasync_buffers\{/ && /direction="write"/ && match($0, /state="[A-Z]+"/) {
		if ($NF > 0) printf "%s=%s ", substr($0, RSTART + 7, RLENGTH - 8), $NF }' "$M/metrics"
}

mountpoint -q "$M" || { echo "$M is not mounted" >&2; exit 1; }
printf '%-8s %12s %12s %10s %10s  %s\n' time rx_frames/s tx_frames/s wr_err/s rd_err/s "write buffers"
rx0=$(val rx_frame_count); tx0=$(val tx_frame_count)
we0=$(val axi_write_error_count); re0=$(val axi_read_error_count)
t0=$(date +%s.%N)
n=0
while [ "$COUNT" -eq 0 ] || [ $n -lt "$COUNT" ]; do
	sleep "$INTERVAL"
	rx=$(val rx_frame_count); tx=$(val tx_frame_count)
	we=$(val axi_write_error_count); re=$(val axi_read_error_count)
	t=$(date +%s.%N)
	awk -v t0="$t0" -v t="$t" -v rx0="$rx0" -v rx="$rx" -v tx0="$tx0" -v tx="$tx" \
	    -v we0="$we0" -v we="$we" -v re0="$re0" -v re="$re" -v st="$(states)" -v now="$(date +%T)" \
	    'function d(a, b) { return b >= a ? b - a : b + 4294967296 - a }   # 32-bit wrap
	     BEGIN { dt = t - t0; if (dt <= 0) dt = 1
		     printf "%-8s %12.1f %12.1f %10.1f %10.1f  %s\n", now,
			    d(rx0, rx) / dt, d(tx0, tx) / dt, d(we0, we) / dt, d(re0, re) / dt, st }'
	rx0=$rx; tx0=$tx; we0=$we; re0=$re; t0=$t
	n=$((n + 1))
done
