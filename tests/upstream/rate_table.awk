# SPDX-License-Identifier: GPL-2.0
# tests/upstream/rate.sh's table, from a guest's serial log: the lines
#   RATE_ROW <card> <size> frames=N seconds=S fps=F bad=B rx_frame_count=R
# (one per card, size and round, rounds in order), and `sizes`, the frame
# sizes in order.  Per size: the median frames/s of each card over the
# rounds (cards theirs, ours, ours-up; copy: memcpy of the size, no card),
# the ratios of the medians to upstream's ("theirs"), and the lowest and
# highest ratio ours/theirs of a single round.

function median(card, size,    n, i, j, a, t) {
	n = cnt[card, size]
	if (!n)
		return 0
	for (i = 1; i <= n; i++)
		a[i] = fps[card, size, i]
	for (i = 2; i <= n; i++)	# insertion sort: a handful of rounds
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

function ratio(a, b) {
	return b > 0 ? sprintf("%.1fx", a / b) : "-"
}

$1 == "RATE_ROW" {
	k = ++cnt[$2, $3]
	for (i = 4; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "fps")
			fps[$2, $3, k] = kv[2]
	}
}

END {
	printf "%-6s %11s %11s %11s %11s %11s %10s %14s %10s\n", "size", "theirs fps", "ours fps",
		"ours-up fps", "copy/s", "ours/theirs", "up/theirs", "rounds o/t", "copy/theirs"
	n = split(sizes, s, " ")
	for (i = 1; i <= n; i++) {
		t = median("theirs", s[i])
		o = median("ours", s[i])
		u = median("ours-up", s[i])
		c = median("copy", s[i])
		lo = hi = ""
		for (r = 1; r <= cnt["theirs", s[i]]; r++) {
			if (fps["theirs", s[i], r] <= 0 || !((("ours", s[i], r) in fps)))
				continue
			x = fps["ours", s[i], r] / fps["theirs", s[i], r]
			if (lo == "" || x < lo)
				lo = x
			if (hi == "" || x > hi)
				hi = x
		}
		printf "%-6s %11d %11d %11d %11d %11s %10s %14s %10s\n", s[i], t, o, u, c, ratio(o, t),
			ratio(u, t), (lo == "" ? "-" : sprintf("%.1f-%.1fx", lo, hi)), ratio(c, t)
	}
}
