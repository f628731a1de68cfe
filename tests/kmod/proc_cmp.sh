#!/bin/sh
# proc_cmp.sh UPSTREAM OURS TAG: gpuasync.ko's /proc text (OURS) against
# upstream datadev's (UPSTREAM, captured from upstream's emulated card in
# QEMU: upstream-proc/), key by key.  Every key and section title upstream
# prints must appear in ours, spelled, padded and ordered the same, except
# the lines this driver cannot know (kmod/README.md "/proc"): those of
# upstream's AXI stream DMA engine and its CPU buffers' mode, the PCIe
# address on an emulated card (no PCI function), and 7.5's "Owning
# Process" against 7.4.  Ours may print nothing upstream does not.  Where
# both cards are in the same state (just loaded, no buffers), the values
# that describe it must be equal too.  One "KTEST ok|FAIL proc_upstream_TAG"
# line.
up=$1 ours=$2 tag=$3
if out=$(awk -v UP="$up" '
function item(line,   i) {
	if (line ~ /^-/)
		return line
	i = index(line, " : ")
	if (i == 0) {
		if (line ~ / :$/)
			return substr(line, 1, length(line) - 2)
		return ""
	}
	return substr(line, 1, i - 1)
}
function val(line,   i) {
	i = index(line, " : ")
	return i ? substr(line, i + 3) : ""
}
function trim(s) { gsub(/^ +| +$/, "", s); return s }
BEGIN {
	# upstream lines about what gpuasync.ko does not drive
	n = split("IRQ|Int Req Count|Continue Count|Address Count|Hw Write Buff Count|" \
		"Hw Read Buff Count|Cache Config|Desc 128 En|Enable Ver|Driver Load Count|" \
		"IRQ Hold|BG Enable|DMA Timeout|Buffer Mode", a, "|")
	for (k = 1; k <= n; k++) skip[a[k]] = 1
	# values that describe the same state on both cards
	n = split("GpuAsyncCore Offset|GpuAsyncCore Version|Max Buffers|Write Buffer Count|" \
		"Write Enable|Read Buffer Count|Read Enable|RX Frame Count|TX Frame Count|" \
		"AXI Write Error Count|AXI Write Timeout Count|AXI Read Error Count|" \
		"Owning Process|GPU Async En|DMA Driver'"'"'s API Version|GPUAsync Support|" \
		"Bifurcation Index", a, "|")
	for (k = 1; k <= n; k++) same[a[k]] = 1
	while ((getline line < UP) > 0) {
		it = item(line)
		if (it == "") continue
		t = trim(it)
		if (t == "Owning Process") up_owner = 1
		if (t in skip) {
			if (!(t in told)) skipped = skipped (skipped ? ", " : "") t
			told[t] = 1
			continue
		}
		nu++; U[nu] = it; UV[nu] = val(line)
	}
}
{
	it = item($0)
	if (it == "") next
	if (trim(it) == "Owning Process" && !up_owner) next
	no++; O[no] = it; OV[no] = val($0)
}
END {
	u = 1
	if (O[1] !~ /^PCIe\[/ && U[1] ~ /^PCIe\[/) { u = 2; skipped = "PCIe address, " skipped }
	for (o = 1; o <= no || u <= nu; o++) {
		if (O[o] != U[u]) {
			printf "line %d: ours \"%s\", upstream \"%s\"\n", o, O[o], U[u]
			bad = 1
			break
		}
		t = trim(O[o])
		if ((t in same) && OV[o] != UV[u]) {
			printf "%s: ours \"%s\", upstream \"%s\"\n", t, OV[o], UV[u]
			bad = 1
		}
		u++
	}
	if (!bad) printf "%d keys as upstream; not printed: %s\n", no, skipped
	exit bad
}' "$ours" 2>&1); then
	echo "KTEST ok proc_upstream_$tag ($out)"
else
	echo "KTEST FAIL proc_upstream_$tag: $out"
	exit 1
fi
