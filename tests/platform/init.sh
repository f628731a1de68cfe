#!/bin/sh
# /init of the platform guest (tests/platform/run.sh builds the machine and
# says which boot this is in ga_platform= on the kernel command line):
# gpuasyncfs --check against the guest's real /sys, each verdict compared
# with what run.sh built.  One "KTEST ok|FAIL <step>" line per expectation.
. /t/guest.sh
guest_up
mode=$(sed -n 's/.*ga_platform=\([a-z]*\).*/\1/p' /proc/cmdline)
echo "KTEST guest up: $(uname -r), mode $mode"
PREFIX="$mode/"

# The machine (run.sh): cards and GPU stand-ins by where they were put.
CARD_A=0000:03:00.0 GPU_A=0000:04:00.0 # under one switch (01:00.0), GPU A 512M BAR
CARD_B=0000:05:00.0 GPU_B=0000:06:00.0 # own root ports 00:03.0 / 00:04.0, GPU B 64M BAR
CARD_C=0000:07:00.0 RP_C=0000:00:05.0  # root port forced to Gen1 x1; an NVMe controller
                                       # whose RAM BAR4 stands in for a card's registers
RP_B=0000:00:03.0                      # x32 Gen4 port, trained x1 Gen1 (e1000e is x1)
GPU_C=0000:81:00.0 CARD_D=0000:82:00.0 # second root complex pci0000:80, NUMA node 1
for d in $CARD_A $GPU_A $CARD_B $GPU_B $CARD_C $GPU_C $CARD_D; do
	[ -e /sys/bus/pci/devices/$d ] || { bad "machine: $d missing"; ls /sys/bus/pci/devices; }
done

OUTF=/tmp/check.out
# One whole report on the console (docs/platform.md quotes the dma boot's).
/t/gpuasyncfs --check --no-open $CARD_A --gpu $GPU_A,$GPU_B --buffers 1G | sed 's/^/REPORT /'

# expect NAME VERDICT NEEDLE -- ARGS...: the NAME line of gpuasyncfs --check
# --explain ARGS (what was found in full) has VERDICT and contains NEEDLE.
expect() {
	name=$1 v=$2 needle=$3
	shift 4
	/t/gpuasyncfs --check --explain --no-open "$@" >$OUTF 2>&1
	line=$(grep -E "^$v +$name: " $OUTF)
	if [ -n "$line" ] && printf '%s\n' "$line" | grep -qF -- "$needle"; then
		ok "$name=$v ($*)"
	else
		bad "$name=$v ($*): want '$needle', got:"
		grep -E "^[A-Z]+ +$name: " $OUTF | cut -c1-600
	fi
}

# ---- the PCIe path and ACS -----------------------------------------------------------
expect pcie_path OK "4 hops, via switch port 0000:01:00.0" -- $CARD_A --gpu $GPU_A
expect acs OK "0000:02:00.0: no ACS; 0000:02:01.0: no ACS" -- $CARD_A --gpu $GPU_A
expect pcie_path WARN "$GPU_B: 4 hops, via root complex pci0000:00 (different root ports)" -- $CARD_B --gpu $GPU_B
expect pcie_path FAIL "different root complexes (pci0000:00, pci0000:80)" -- $CARD_A --gpu $GPU_C
expect pcie_path WARN "via root complex pci0000:80" -- $CARD_D --gpu $GPU_C
# The nearest of several GPUs is the one the other checks judge.
expect pcie_path OK "nearest: $GPU_A" -- $CARD_A --gpu $GPU_C,$GPU_B,$GPU_A
expect bar1 OK "GPU $GPU_A BAR2: 512 MiB" -- $CARD_A --gpu $GPU_C,$GPU_B,$GPU_A
if [ "$mode" = off ]; then
	# No IOMMU: Linux leaves ACS off on the root ports.
	expect acs OK "0000:00:03.0: ACS ctrl 0x0000, no redirect; 0000:00:04.0: ACS ctrl 0x0000, no redirect" -- $CARD_B --gpu $GPU_B
else
	# An IOMMU asks for ACS: the root ports redirect peer traffic.
	expect acs WARN "0000:00:03.0: ACS ctrl 0x001d, P2P redirect ON; 0000:00:04.0: ACS ctrl 0x001d, P2P redirect ON" -- $CARD_B --gpu $GPU_B
fi

# ---- IOMMU ----------------------------------------------------------------------------
case $mode in
# A guest: the host's IOMMU (QEMU's own, here none) cannot be seen from it.
off) expect iommu WARN "could not tell: the host's IOMMU, from a VM (" -- $CARD_A --gpu $GPU_A ;;
dma) expect iommu FAIL ", type DMA" -- $CARD_A --gpu $GPU_A
     grp=$(readlink /sys/bus/pci/devices/$CARD_A/iommu_group); grp=${grp##*/}
     expect iommu FAIL "card $CARD_A in group $grp (" -- $CARD_A --gpu $GPU_A ;;
pt) expect iommu WARN "type identity; could not tell: the host's IOMMU, from a VM" -- $CARD_A --gpu $GPU_A ;;
esac

# ---- links -----------------------------------------------------------------------------
# QEMU endpoints advertise Gen1 x1 whatever the port: the forced port shows in
# its own maximum, and an x32 Gen4 port trained to x1 Gen1 is "below maximum".
expect link_card OK "card $CARD_C: Gen1 x1 (2.5 GT/s PCIe), can do Gen1 x1" -- $CARD_C --gpu $GPU_A
expect link_card OK "card $RP_C: Gen1 x1 (2.5 GT/s PCIe), can do Gen1 x1" -- $RP_C --gpu $GPU_A
expect link_card WARN "card $RP_B: Gen1 x1 (2.5 GT/s PCIe), can do Gen4 x32: trained below its maximum" -- $RP_B --gpu $GPU_A
# ivshmem is conventional PCI: no link files.
expect link_gpu WARN "GPU $GPU_A: could not tell (No such file or directory)" -- $CARD_A --gpu $GPU_A

# ---- NUMA ------------------------------------------------------------------------------
expect numa OK "2 nodes; card on node 1, GPU on node 1, this process may run on node 1" -- $CARD_D --gpu $GPU_C --cpus 1
expect numa WARN "this process may run on node 0" -- $CARD_D --gpu $GPU_C --cpus 0
expect numa WARN "may run on nodes 0,1" -- $CARD_D --gpu $GPU_C
expect numa WARN "card on node -1, GPU on node -1" -- $CARD_A --gpu $GPU_A --cpus 0
expect numa WARN "card on node 1, GPU on node -1" -- $CARD_D --gpu $GPU_B --cpus 1

# ---- BAR1 ------------------------------------------------------------------------------
expect bar1 OK "GPU $GPU_A BAR2: 512 MiB (not NVIDIA: its largest BAR)" -- $CARD_A --gpu $GPU_A
expect bar1 WARN "GPU $GPU_B BAR2: 64 MiB" -- $CARD_B --gpu $GPU_B
expect bar1 FAIL "512 MiB (not NVIDIA: its largest BAR), buffers want 1 GiB" -- $CARD_A --gpu $GPU_A --buffers 1G

# ---- pairing ---------------------------------------------------------------------------
expect pairing WARN "card $CARD_A -> GPU $GPU_A (4 hops, via switch port 0000:01:00.0); card $CARD_B -> GPU $GPU_B (4 hops, via root complex pci0000:00 (different root ports)); card $CARD_D -> GPU $GPU_C (4 hops, via root complex pci0000:80 (different root ports))" -- $CARD_A,$CARD_B,$CARD_D --gpu $GPU_C,$GPU_B,$GPU_A
expect pairing FAIL "card $CARD_D -> no GPU on its root complex" -- $CARD_A,$CARD_D --gpu $GPU_A

# ---- the pairing per card: gpuasyncfs --topology (device/topology) -----------------------
# topo 'ARGS' NEEDLE...: gpuasyncfs --topology ARGS prints a line holding each NEEDLE.
topo() {
	args=$1
	shift
	/t/gpuasyncfs --topology $args >$OUTF 2>&1
	miss=
	for n in "$@"; do grep -qF -- "$n" $OUTF || miss="$miss [$n]"; done
	if [ -z "$miss" ]; then
		ok "topology ($args): $(head -1 $OUTF | cut -c11-90)"
	else
		bad "topology ($args): missing$miss; got:"
		cat $OUTF
	fi
}
# One whole answer on the console (docs/platform.md quotes it).
/t/gpuasyncfs --topology $CARD_D,$CARD_A,$CARD_B --gpu $GPU_C,$GPU_B,$GPU_A | sed 's/^/TOPOLOGY /'
# Card and GPU under one switch: depth 3 (root complex, root port, the
# switch's upstream port); no NUMA node from the firmware, so the CPUs
# local to them are all of them, both sockets.
topo "$CARD_A --gpu $GPU_A" "verdict   OK" "gpu       $GPU_A" \
	"why       same PCIe switch: both below switch port 0000:01:00.0, shared ancestry depth 3" \
	"card_path pci0000:00 > 0000:00:02.0 > 0000:01:00.0 > 0000:02:00.0 > $CARD_A" \
	"gpu_path  pci0000:00 > 0000:00:02.0 > 0000:01:00.0 > 0000:02:01.0 > $GPU_A" \
	"card_numa node -1 (the firmware gave none), local CPUs 0-1" \
	"cores     0-1: every core of socket 0-1" "gres      Name=gpu Type=dd03 Cores=0-1 (no File=" \
	"doctor    GPU $GPU_A (the pairing check, 4 hops): the same" \
	"card      $CARD_A (no /proc/datadev_N: gen_gres_conf.py does not see it)"
# Separate root ports: the root complex only, depth 1.
topo "$CARD_B --gpu $GPU_B" "verdict   WARN: not behind one switch with its GPU (depth 1)" \
	"gpu       $GPU_B" \
	"why       root complex only (pci0000:00, different root ports): shared ancestry depth 1"
# The second root complex, on NUMA node 1 (CPU 1, the second socket).
topo "$CARD_D --gpu $GPU_C" "gpu       $GPU_C" "root complex only (pci0000:80, different root ports)" \
	"card_numa node 1, local CPUs 1" "gpu_numa  node 1, local CPUs 1" \
	"cores     1: every core of socket 1" "gres      Name=gpu Type=dd82 Cores=1 "
# Across root complexes the rule still pairs (depth 0), the doctor does not.
topo "$CARD_A --gpu $GPU_C" "gpu       $GPU_C" \
	"why       different root complexes (pci0000:00, pci0000:80): shared ancestry depth 0" \
	"doctor    none (the pairing check: no GPU on the card's root complex): DIFFERS from the rule" \
	"verdict   WARN: not behind one switch with its GPU (depth 0); the doctor's pairing check picks none" \
	"gpu_numa  node 1, local CPUs 1"
# Two cards, one GPU: the rule gives it to the first card only, the doctor
# lets both share it.
topo "$CARD_C,$CARD_B --gpu $GPU_B" "verdict   FAIL: no GPU for this card; the doctor's pairing check picks GPU $GPU_B" \
	"gpu       none: every GPU went to a card before it in the rule's order" \
	"doctor    GPU $GPU_B (the pairing check, 4 hops): DIFFERS from the rule" \
	"pairs     $CARD_B -> $GPU_B (depth 1); $CARD_C -> none"
# Every card and GPU: each card its own.
topo "$CARD_A,$CARD_B,$CARD_D --gpu $GPU_C,$GPU_B,$GPU_A" "verdict   OK" \
	"pairs     $CARD_A -> $GPU_A (depth 3); $CARD_B -> $GPU_B (depth 1); $CARD_D -> $GPU_C (depth 1)"
/t/gpuasyncfs --topology $CARD_C,$CARD_B --gpu $GPU_B >/dev/null 2>&1; rc1=$?
/t/gpuasyncfs --topology $CARD_A --gpu $GPU_A >/dev/null 2>&1; rc2=$?
/t/gpuasyncfs --topology $CARD_A --paired 4:0 >/dev/null 2>&1; rc3=$?
[ "$rc1 $rc2 $rc3" = "1 0 2" ] && ok "--topology exit status (FAIL 1, OK 0, bad argument 2)" ||
	bad "--topology exit status: $rc1 $rc2 $rc3, want 1 0 2"

# ---- what this guest has and lacks -------------------------------------------------------
expect card FAIL "$CARD_A (8086:10d3), no driver bound" -- $CARD_A --gpu $GPU_A
expect gpu OK "1 GPU: $GPU_A (1af4:1110)" -- $CARD_A --gpu $GPU_A
expect gpu FAIL "no NVIDIA GPU on the PCI bus" -- $CARD_A
expect nvidia FAIL "no NVIDIA driver loaded" -- $CARD_A --gpu $GPU_A
expect stream_memops WARN "could not tell" -- $CARD_A --gpu $GPU_A
expect dmabuf OK "dma-buf supported" -- $CARD_A --gpu $GPU_A
expect pin_path FAIL "none: no driver in front of the card" -- $CARD_A --gpu $GPU_A
expect card_driver FAIL "no driver bound to the card" -- $CARD_A --gpu $GPU_A

# ---- exit status -------------------------------------------------------------------------
/t/gpuasyncfs --check --no-open $CARD_A --gpu $GPU_A >/dev/null; rc1=$?
/t/gpuasyncfs --check --bogus >/dev/null 2>&1; rc2=$?
/t/gpuasyncfs --check --help >/dev/null; rc3=$?
[ "$rc1 $rc2 $rc3" = "1 2 0" ] && ok "exit status (FAIL 1, bad argument 2, help 0)" ||
	bad "exit status: $rc1 $rc2 $rc3, want 1 2 0"
grep -q "^GPUDirect: not expected to work" $OUTF && ok "summary line" || bad "summary line"
# The guest has CPUs 0 and 1 online: CPU 5 is refused before any check runs.
/t/gpuasyncfs --check --no-open --cpus 5 $CARD_A >$OUTF 2>&1; rc5=$? # rc: guest.sh's
[ $rc5 = 2 ] && grep -q "CPU 5 is not one of this machine's (online: 0-1)" $OUTF &&
	ok "--cpus 5 refused (exit 2)" || { bad "--cpus 5: exit $rc5"; cat $OUTF; }
# Default lines fit 100 characters on the real tree too.
/t/gpuasyncfs --check --no-open $CARD_A --gpu $GPU_A,$GPU_B --buffers 1G >$OUTF 2>&1
long=0
while IFS= read -r l; do [ ${#l} -le 100 ] || { long=1; echo "long: $l"; }; done <$OUTF
[ $long = 0 ] && ok "lines of at most 100 characters" || bad "lines over 100 characters"

# ---- bad input on the real tree -----------------------------------------------------------
expect gpu FAIL "GPU 0000:0f:00.0: not on the PCI bus" -- $CARD_A --gpu 0000:0f:00.0
expect card FAIL "no card /dev/nothing_0: no such file" -- /dev/nothing_0 --gpu $GPU_A
# Without CAP_SYS_ADMIN, config space reads stop at 64 bytes: ACS is unknown.
mkdir -p /etc && echo "nobody:x:65534:65534::/:/bin/sh" >/etc/passwd
su nobody -s /bin/sh -c "/t/gpuasyncfs --check --explain --no-open $CARD_B --gpu $GPU_B" >$OUTF 2>&1
grep -q "^WARN acs: .*0000:00:03.0: could not tell (extended config space unreadable: needs root)" $OUTF &&
	ok "acs=WARN as nobody" || { bad "acs=WARN as nobody"; grep "acs:" $OUTF; }
# A device that goes away: the kernel removes the function, --check names it.
echo 1 >/sys/bus/pci/devices/$GPU_B/remove
expect gpu FAIL "GPU $GPU_B: not on the PCI bus" -- $CARD_B --gpu $GPU_B
expect bar1 WARN "could not tell: no GPU" -- $CARD_B --gpu $GPU_B
# The GPU the card was paired with is gone: said, and the rule's new choice.
topo "$CARD_B --gpu $GPU_A,$GPU_B --paired $GPU_B" "verdict   FAIL: " \
	"the paired GPU $GPU_B is gone from the bus" \
	"paired    GPU $GPU_B (--paired): GONE, not on the PCI bus" \
	"gone      GPU $GPU_B (named) is not on the PCI bus" "gpu       $GPU_A"
# The stale check opens the card through the library: this card is no GpuAsyncCore.
/t/gpuasyncfs --check $CARD_A --gpu $GPU_A >$OUTF 2>&1
grep -q "^WARN stale: could not tell: no device node for the card" $OUTF && ok "stale=WARN (no node)" ||
	{ bad "stale=WARN (no node)"; grep "stale:" $OUTF; }

# ---- a GpuAsyncCore behind gpuasync.ko (its emulated card), once ----------------------------
if [ "$mode" = off ] && [ -f /t/gpuasync.ko ]; then
	E=/dev/gpuasync_emu0
	insmod /t/nv_p2p_stub.ko && insmod /t/gpuasync.ko emulate=1 || bad "insmod gpuasync.ko"
	expect card FAIL "$E is gpuasync.ko's emulated card: no PCI device behind it" -- $E --gpu $GPU_A
	expect card_driver OK "GpuAsyncCore version 4, GPU async on" -- $E --gpu $GPU_A
	# The stale check reads the address registers through the library.
	/t/gpuasyncfs --check $E --gpu $GPU_A >$OUTF 2>&1
	grep -q "^OK   stale: $E: no address left behind (0 held by live processes)" $OUTF &&
		ok "stale=OK (clean card)" || { bad "stale=OK (clean card)"; grep "stale:" $OUTF; }
	rm -f /tmp/hold.out
	/t/kt hold >/tmp/hold.out 2>&1 &
	hp=$!
	if wait_for /tmp/hold.out HOLDING; then
		/t/gpuasyncfs --check $E --gpu $GPU_A >$OUTF 2>&1
		grep -qE "^OK   stale: $E: no address left behind \([1-9][0-9]* held by live processes\)" $OUTF &&
			ok "stale=OK (buffers of a live process)" ||
			{ bad "stale=OK (buffers of a live process)"; grep "stale:" $OUTF; }
	else
		bad "kt hold"; cat /tmp/hold.out
	fi
	kill -9 $hp; wait $hp 2>/dev/null
	# An address no process holds, as a dead process's buffer leaves it.
	if /t/poke $E 5 0x12345670000; then
		/t/gpuasyncfs --check --explain $E --gpu $GPU_A >$OUTF 2>&1
		grep -q "^WARN stale: write 5: 0x0000012345670000, 1 address register set with no live process holding that buffer" $OUTF &&
			ok "stale=WARN (address left behind)" ||
			{ bad "stale=WARN (address left behind)"; grep "stale:" $OUTF; }
		/t/poke $E 5 0
	else
		bad "poke"
	fi
	# The same verdicts under a mount: device/platform/<check>.
	mkdir -p /tmp/m
	/t/gpuasyncfs -f $E /tmp/m >/tmp/fs.out 2>&1 &
	dp=$!
	if wait_file /tmp/m/device/platform/card_driver; then
		n=$(ls /tmp/m/device/platform | wc -l)
		/t/gpuasyncfs --check --explain --no-open $E >$OUTF 2>&1
		same=1
		for f in /tmp/m/device/platform/*; do
			# The file's lines (found, why, do) as one block of the report.
			k=$(wc -l <$f)
			[ "$(grep -A$((k - 1)) -xF -- "$(head -1 $f)" $OUTF | head -$k)" = "$(cat $f)" ] ||
				{ same=0; echo "differs: $f: $(cat $f)"; }
		done
		[ "$n" = 16 ] && [ $same = 1 ] && grep -q "^OK   card_driver: gpuasync.ko" /tmp/m/device/platform/card_driver &&
			ok "device/platform/ under a mount ($n files, as --check --explain prints)" ||
			bad "device/platform/ under a mount ($n files)"
		umount /tmp/m
	else
		bad "mount on $E"; cat /tmp/fs.out; kill $dp
	fi
	wait $dp
	rmmod gpuasync
	insmod /t/gpuasync.ko emulate=1 emulate_gpu_en=0 || bad "insmod gpu_en=0"
	expect card_driver FAIL "GPU async off" -- $E --gpu $GPU_A
	rmmod gpuasync || bad "rmmod"

	# ---- gpuasync.ko bound to a PCI function standing in for the card ---------------------
	# Card C (QEMU's NVMe controller, a PCIe endpoint under the Gen1 x1 port)
	# with a GpuAsyncCore register image in its RAM BAR4 (standin.c): the
	# driver binds a real PCI device (driver_override, reg_bar=4), and the
	# doctor, the stale check, a mount and its link metrics run on it.
	C=/dev/datadev_07
	klog() { dmesg | grep -F "$1" | tail -1; }
	echo gpuasync >/sys/bus/pci/devices/$CARD_C/driver_override
	# cfgDevName=1: the node named after the bus number, as upstream's.
	if /t/standin $CARD_C 4 1 && insmod /t/gpuasync.ko bind_pci=1 reg_bar=4 cfgDevName=1; then
		drv=$(readlink /sys/bus/pci/devices/$CARD_C/driver)
		# Its /proc entry, as upstream's: the PCI address first, what the
		# Slurm pairing (gen_gres_conf.py) reads.
		P=/proc/datadev_07
		[ "$(head -1 $P)" = "PCIe[BUS:NUM:SLOT.FUNC] : $CARD_C" ] &&
			grep -q "^           GPU Async En : 1$" $P &&
			grep -q "^         GPUAsync Support : Enabled$" $P &&
			grep -q "^         Build String : " $P &&
			ok "$P: PCI address, GPU async, build string" ||
			{ bad "$P"; head -12 $P; }
		[ "${drv##*/}" = gpuasync ] && [ -c $C ] &&
			ok "gpuasync.ko bound to PCI $CARD_C ($(klog "GpuAsyncCore version 4"))" ||
			{ bad "gpuasync.ko bound to PCI $CARD_C: driver '$drv'"; dmesg | tail -5; }
		expect card OK "$CARD_C (1b36:0010), driver gpuasync as datadev_07" -- $C --gpu $GPU_A
		# The pairing reads the card's /proc entry as the Slurm rule does.
		topo "$C --gpu $GPU_A" "card      $CARD_C datadev_07, GPU Async En 1" \
			"gpu       $GPU_A" "gres      Name=gpu Type=dd07 Cores=0-1"
		expect card_driver OK "datadev_07: GpuAsyncCore version 4, GPU async on" -- $C --gpu $GPU_A
		expect link_card OK "card $CARD_C: Gen1 x1 (2.5 GT/s PCIe), can do Gen1 x1" -- $C --gpu $GPU_A
		# Found without naming it: gpuasync.ko's class lists it.
		expect card OK "$CARD_C (1b36:0010), driver gpuasync" -- --gpu $GPU_A
		# The stale check reads the registers through the real BAR.
		/t/gpuasyncfs --check $C --gpu $GPU_A >$OUTF 2>&1
		grep -q "^OK   stale: $C: no address left behind" $OUTF &&
			ok "stale=OK on the PCI card" || { bad "stale=OK on the PCI card"; grep "stale:" $OUTF; }
		if /t/poke $C 2 0x12345670000; then
			/t/gpuasyncfs --check --explain $C --gpu $GPU_A >$OUTF 2>&1
			grep -q "^WARN stale: write 2: 0x0000012345670000," $OUTF &&
				ok "stale=WARN on the PCI card (address left behind)" ||
				{ bad "stale=WARN on the PCI card"; grep "stale:" $OUTF; }
			/t/poke $C 2 0
		else
			bad "poke $C"
		fi
		# A mount: its metrics read the card's link now (the forced Gen1 x1 port).
		mkdir -p /tmp/mc
		/t/gpuasyncfs -f $C /tmp/mc >/tmp/fsc.out 2>&1 &
		dp=$!
		if wait_file /tmp/mc/metrics; then
			grep '^gpuasync_pcie_' /tmp/mc/metrics >/tmp/link.out
			l="end=\"card\",pci=\"$CARD_C\"} "
			grep -q "^gpuasync_pcie_link_readable{device=\"$C\",.*$l""1$" /tmp/link.out &&
				grep -q "^gpuasync_pcie_current_link_transfers_per_second{.*$l""2.5e+09$" /tmp/link.out &&
				grep -q "^gpuasync_pcie_max_link_transfers_per_second{.*$l""2.5e+09$" /tmp/link.out &&
				grep -q "^gpuasync_pcie_current_link_width{.*$l""1$" /tmp/link.out &&
				grep -q "^gpuasync_pcie_max_link_width{.*$l""1$" /tmp/link.out &&
				! grep -q 'end="gpu"' /tmp/link.out &&
				ok "metrics: card link 2.5 GT/s x1 (of 2.5 GT/s x1)" ||
				{ bad "metrics: card link"; cat /tmp/link.out; }
			# device/topology: the same as --topology (no NVIDIA GPU: none to pair).
			/t/gpuasyncfs --topology $C >$OUTF 2>&1
			cmp -s /tmp/mc/device/topology $OUTF &&
				grep -q "^card      $CARD_C datadev_07, GPU Async En 1$" $OUTF &&
				grep -q "^gpu       none: no GPU on the bus$" $OUTF &&
				ok "device/topology of the PCI card's mount (as --topology)" ||
				{ bad "device/topology of the PCI card's mount"; cat /tmp/mc/device/topology $OUTF; }
			grep -q "^OK   link_card: card $CARD_C: Gen1 x1" /tmp/mc/device/platform/link_card &&
				grep -q "^OK   card_driver: gpuasync.ko" /tmp/mc/device/platform/card_driver &&
				ok "device/platform/ of the PCI card's mount" ||
				bad "device/platform/ of the PCI card's mount: $(cat /tmp/mc/device/platform/link_card)"
			umount /tmp/mc
		else
			bad "mount on $C"; cat /tmp/fsc.out; kill $dp
		fi
		wait $dp
		rmmod gpuasync || bad "rmmod"
	else
		bad "standin or insmod bind_pci=1 reg_bar=4"
	fi
	# A core version this driver does not know: bound, GPU async off, and why.
	# Without cfgDevName: numbered as upstream's default (datadev_0).
	if /t/standin $CARD_C 4 1 && insmod /t/gpuasync.ko bind_pci=1 reg_bar=4; then
		[ -c /dev/datadev_0 ] && [ ! -e $C ] &&
			[ "$(head -1 /proc/datadev_0)" = "PCIe[BUS:NUM:SLOT.FUNC] : $CARD_C" ] &&
			ok "cfgDevName=0: /dev/datadev_0 and /proc/datadev_0" ||
			{ bad "cfgDevName=0"; ls /dev /proc | grep datadev; }
		rmmod gpuasync || bad "rmmod"
	else
		bad "standin or insmod bind_pci=1 reg_bar=4 (cfgDevName=0)"
	fi
	if /t/standin $CARD_C 9 1 && insmod /t/gpuasync.ko bind_pci=1 reg_bar=4 cfgDevName=1; then
		msg=$(klog "GPU async disabled: unknown GpuAsyncCore version")
		[ -n "$msg" ] && ok "unknown version: bound read-only, the log says why ($msg)" ||
			{ bad "unknown version: no log line"; dmesg | tail -5; }
		expect card_driver FAIL "GpuAsyncCore version 9, GPU async off" -- $C --gpu $GPU_A
		grep -q "^           GPU Async En : 0 (Unsupported GpuAsyncCore Version: 9)$" \
			/proc/datadev_07 && ok "/proc/datadev_07: GPU async off, version 9" ||
			{ bad "/proc/datadev_07 of version 9"; grep "GPU Async" /proc/datadev_07; }
		rmmod gpuasync || bad "rmmod"
	else
		bad "standin 9 or insmod"
	fi
	# Registers in BAR0 (the default), where this device has its NVMe registers
	# (16 KiB): no GpuAsyncCore fits, the probe refuses before touching it.
	insmod /t/gpuasync.ko bind_pci=1 || bad "insmod bind_pci=1"
	msg=$(klog "not a GpuAsyncCore card; not bound")
	[ -n "$msg" ] && [ ! -e /sys/bus/pci/devices/$CARD_C/driver ] &&
		ok "BAR0 without a GpuAsyncCore: refused ($msg)" ||
		{ bad "BAR0 without a GpuAsyncCore: refused"; dmesg | tail -5; }
	expect card_driver FAIL "no driver bound to the card" -- $CARD_C --gpu $GPU_A
	rmmod gpuasync && rmmod nv_p2p_stub || bad "rmmod"
	echo >/sys/bus/pci/devices/$CARD_C/driver_override
elif [ "$mode" = off ]; then
	echo "KTEST skip gpuasync.ko: not built (no linux-headers)"
fi

guest_down
