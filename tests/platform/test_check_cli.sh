#!/bin/bash
# test_check_cli BUILD_DIR: gpuasyncfs --check as a user runs it, on a
# fixture tree (--root) holding one NVIDIA GPU and no card.  Bad arguments
# are refused with exit 2 and a reason before any check runs; the default
# lines fit 100 characters; --explain adds why and what to do; --json is
# one object per check that python3 parses, the same verdicts as the
# lines; CUDA's answers (a stand-in libcuda.so.1, tests/probe/fake_libcuda.c)
# reach dmabuf only for the GPU at the PCI address CUDA gives.
set -u
B=${1:?usage: test_check_cli.sh BUILD_DIR}
G=$B/fs/gpuasyncfs
FAKE=$B/tests/fake-cuda
CASE=start
fail() { echo "FAILED at $CASE: $*"; exit 1; }
[ -x "$G" ] || fail "no $G"
R=$(mktemp -d /tmp/ga-check-cli.XXXXXX)
trap 'rm -rf "$R"' EXIT

# ---- the tree: a GPU under a root port, 8 CPUs on one node, the open driver ----
GPU=0000:04:00.0
D=$R/sys/devices/pci0000:00/0000:00:01.0/$GPU
mkdir -p "$D" "$R/sys/bus/pci/devices" "$R/sys/devices/system/cpu" \
	"$R/sys/devices/system/node/node0" "$R/proc/driver/nvidia" "$R/proc/sys/kernel"
printf '0x10de\n' >"$D/vendor"
printf '0x2330\n' >"$D/device"
printf '0x030200\n' >"$D/class"
printf '0\n' >"$D/numa_node"
printf '16.0 GT/s PCIe\n' | tee "$D/current_link_speed" >"$D/max_link_speed"
printf '16\n' | tee "$D/current_link_width" >"$D/max_link_width"
printf '%s\n' "0x00000000f0000000 0x00000000f0ffffff 0x0000000000040200" \
	"0x0000038000000000 0x00000387ffffffff 0x000000000014220c" >"$D/resource"
ln -s "../../../devices/pci0000:00/0000:00:01.0/$GPU" "$R/sys/bus/pci/devices/$GPU"
echo 0-7 >"$R/sys/devices/system/cpu/online"
echo 0-7 >"$R/sys/devices/system/node/node0/cpulist"
echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build" \
	>"$R/proc/driver/nvidia/version"
printf 'EnableStreamMemOPs: 1\n' >"$R/proc/driver/nvidia/params"
echo 6.1.0-99-amd64 >"$R/proc/sys/kernel/osrelease"

# refuse WHAT ARGS...: exit 2, nothing on stdout, the reason on stderr.
refuse() {
	local want=$1 out err rc
	shift
	out=$("$G" --check --no-open "$@" 2>"$R/err")
	rc=$?
	err=$(cat "$R/err")
	[ "$rc" = 2 ] || fail "exit $rc, not 2: $*: $err"
	[ -z "$out" ] || fail "checks ran: $*: $out"
	grep -qF -- "$want" <<<"$err" || fail "no '$want' in: $err"
	echo "ok $CASE: exit 2: $err"
}
CASE=buffers-suffix; refuse "--buffers '2X': not a size" --root "$R" --buffers 2X
CASE=buffers-zero; refuse "--buffers '0': 0 bytes" --root "$R" --buffers 0
CASE=gpu-nonsense; refuse "GPU 'nonsense': not a PCI address" --root "$R" --gpu nonsense
CASE=gpu-one-bad; refuse "GPU '0000:04:00': not a PCI address" --root "$R" --gpu $GPU,0000:04:00
CASE=cpus-beyond; refuse "CPU 99 is not one of this machine's (online: 0-7)" --root "$R" --cpus 99
CASE=cpus-form; refuse "CPU list '1-': not a list" --root "$R" --cpus 1-
CASE=cpus-machine; refuse "CPU 4000 is not one of this machine's" --cpus 4000
CASE=root-missing; refuse "--root '/nonexistent': No such file or directory" --root /nonexistent
CASE=root-file; refuse "--root '$R/sys/devices/system/cpu/online': not a directory" \
	--root "$R/sys/devices/system/cpu/online"
CASE=unknown-option; refuse "unexpected '--bogus'" --bogus
CASE=no-value; refuse "no value after '--gpu'" --root "$R" --gpu
CASE=two-devices; refuse "unexpected '0000:05:00.0' (one DEVICE only)" 0000:03:00.0 0000:05:00.0

# ---- the lines ------------------------------------------------------------------
CASE=short
"$G" --check --no-open --root "$R" --cpus 0-3 >"$R/short"
rc=$?
[ "$rc" = 1 ] || fail "exit $rc, not 1 (no card: FAIL)"
[ "$(grep -cE '^(OK  |WARN|FAIL) [a-z_0-9]+: ' "$R/short")" = 16 ] || fail "not 16 lines: $(cat "$R/short")"
long=$(awk 'length($0) > 100' "$R/short")
[ -z "$long" ] || fail "lines over 100 characters: $long"
grep -q "^FAIL card: no card" "$R/short" || fail "card: $(cat "$R/short")"
grep -q "^WARN pcie_path: could not tell: no card$" "$R/short" || fail "pcie_path: $(grep pcie_path "$R/short")"
grep -q "^OK   gpu: 1 GPU: $GPU (10de:2330)$" "$R/short" || fail "gpu: $(grep gpu: "$R/short")"
echo "ok $CASE: 16 lines of at most 100 characters, exit 1"
CASE=short-gpu
# 04:00.0 as lspci prints it is the same GPU.
"$G" --check --no-open --root "$R" --gpu 04:00.0 | grep -q "^OK   gpu: 1 GPU: $GPU " ||
	fail "--gpu 04:00.0 not taken as $GPU"
echo "ok $CASE: --gpu 04:00.0 is $GPU"
CASE=explain
"$G" --check --no-open --root "$R" --explain >"$R/explain"
[ "$(grep -c '^     why: ' "$R/explain")" = 16 ] || fail "not 16 why lines: $(cat "$R/explain")"
grep -A2 "^FAIL card: " "$R/explain" | grep -q "^     do:  check the card is seated" ||
	fail "card's advice: $(grep -A2 '^FAIL card' "$R/explain")"
"$G" --check --no-open --root "$R" -v | cmp -s - "$R/explain" || fail "-v differs from --explain"
echo "ok $CASE: why and do lines, -v the same"

# ---- JSON -----------------------------------------------------------------------
CASE=json
"$G" --check --no-open --root "$R" --cpus 0-3 --json >"$R/json"
rc=$?
[ "$rc" = 1 ] || fail "exit $rc, not 1"
"$G" --check --list | sed -n 's/^### `\([a-z_0-9]*\)`.*/\1/p' >"$R/names"
python3 - "$R/json" "$R/short" "$R/names" <<'EOF' || fail "the JSON"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
names = open(sys.argv[3]).read().split()
assert [o["name"] for o in objs] == names, ([o["name"] for o in objs], names)
for o in objs:
    assert sorted(o) == ["advice", "found", "name", "verdict", "why"], o
    assert o["verdict"] in ("OK", "WARN", "FAIL"), o
    assert all(isinstance(v, str) for v in o.values()), o
    assert o["why"], o
    if o["found"].startswith("could not tell"):
        assert o["verdict"] == "WARN", o
# The same verdicts as the lines, and the found text they cut.
for o, l in zip(objs, open(sys.argv[2])):
    head = "%-4s %s: " % (o["verdict"], o["name"])
    assert l.startswith(head), (l, head)
    shown = l[len(head):].rstrip("\n").replace(" ... (--explain)", "")
    assert o["found"].startswith(shown), (o["found"], shown)
print("ok json: %d objects, names as --list, verdicts as the lines" % len(objs))
EOF

# ---- CUDA's answers (the stand-in libcuda.so.1) --------------------------------
[ -e "$FAKE/libcuda.so.1" ] || fail "no stand-in $FAKE/libcuda.so.1"
# cuda LINE-PATTERN CHECK ENV...: the CHECK line of --explain with the stand-in.
cuda() {
	local pat=$1 name=$2 line
	shift 2
	line=$(env LD_LIBRARY_PATH="$FAKE" GA_FAKE_CUINIT=0 "$@" "$G" --check --explain --no-open \
		--root "$R" | grep "^[A-Z]* *$name: ")
	grep -qE -- "$pat" <<<"$line" || fail "no '$pat' in: $line"
	echo "ok $CASE: $line"
}
# No dma-buf files in the tree, no config: the kernel's answer is unknown.
CASE=dmabuf-unknown; cuda "^WARN dmabuf: could not tell: no dma-buf files" dmabuf GA_FAKE_PCI=0000:05:00
# CUDA at the GPU's address says it exports dma-bufs: that answers for the kernel too.
CASE=dmabuf-cuda; cuda "^OK   dmabuf: dma-buf supported \(CUDA 0: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 1; no dma-buf files" dmabuf
CASE=dmabuf-cuda-no; cuda "^WARN dmabuf: no dma-buf \(CUDA 0: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0; " dmabuf GA_FAKE_DMABUF=0
CASE=rdma; cuda "^OK   nvidia: Open kernel module, version 580.159.04; CUDA 0 \($GPU\): CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 1$" nvidia
CASE=rdma-no; cuda "^WARN nvidia: .*GPU_DIRECT_RDMA_SUPPORTED 0: nvidia_p2p_get_pages refuses this GPU" nvidia GA_FAKE_RDMA=0
# A GPU CUDA does not place at this address is not asked about.
CASE=other-gpu; cuda "^OK   nvidia: Open kernel module, version 580.159.04$" nvidia GA_FAKE_PCI=0000:05:00 GA_FAKE_RDMA=0
# The kernel's own config, when the tree has it, needs no CUDA.
CASE=kconfig
printf 'CONFIG_DMA_SHARED_BUFFER=y\n' | gzip >"$R/proc/config.gz"
cuda "^OK   dmabuf: dma-buf supported \(/proc/config.gz: CONFIG_DMA_SHARED_BUFFER=y\)" dmabuf GA_FAKE_PCI=0000:05:00
