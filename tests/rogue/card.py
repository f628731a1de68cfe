#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""pyrogue on gpuasync.ko's emulated card, beside a gpuasyncfs mount of it.

Run by tests/rogue/init.sh inside the guest (rogue and the python trees on
PYTHONPATH).  Opens the card with axi-pcie-core's AxiPcieCore (useGpu) over
rogue's AxiMemMap and prints one "KTEST ok|FAIL <step>" line per check:

  tree            AxiMemMap opens the card (rogue's API and version checks)
                  and the tree starts
  read_all        every variable of the tree reads
  files           every file of the mount's `pyrogue` index holds what
                  pyrogue reads for that variable
  state_yaml      the mount's state.yaml agrees with pyrogue's own state of
                  the AxiGpuAsyncCore subtree, value for value in display form
  monitors        both stream monitors report the generics the GpuAsyncCore
                  builds them with (docs/firmware.md 2.4)
  scratch_pad     AxiVersion's write-verify word keeps what pyrogue writes,
                  and the mount sees it
  save_load       SaveConfig, change, LoadConfig: back as saved, and a second
                  SaveConfig writes the same file
  ours_in_pyrogue the mount's settings.yaml, loaded by pyrogue's LoadConfig,
                  puts the card back as the mount described it
  pyrogue_in_ours pyrogue's SaveConfig file written to the mount's
                  settings.yaml applies our subtree and names each other
                  node it skips in `errors`

With --nonowner UID (as that user, while the mount owns the card):
  nonowner        the tree opens and reads, and a register write fails as a
                  rogue transaction error (the kernel log says why: init.sh)
"""
import argparse
import logging
import os
import sys
import time

import pyrogue as pr
import rogue
import axipcie

CORE = "AxiPcieCore"
GPU = CORE + ".AxiGpuAsyncCore"

args = None
failed = False
warnings = []  # pyrogue's log records at WARNING and above: (step, message)
current = "tree"


class Keep(logging.Handler):
    """pyrogue's warnings, kept for the `warnings` step; printed without
    the "WARNING:" the boot's judge takes for the kernel's."""

    def emit(self, record):
        warnings.append((current, record.getMessage()))
        print(f"pyrogue log [{record.levelname.lower()}] {record.getMessage()}", flush=True)


def ok(step, detail=""):
    print(f"KTEST ok {args.prefix}{step}{' (' + detail + ')' if detail else ''}", flush=True)


def bad(step, why):
    global failed
    failed = True
    print(f"KTEST FAIL {args.prefix}{step}: {why}", flush=True)


def mount_path(rel):
    return os.path.join(args.mount, rel)


def read_file(rel):
    with open(mount_path(rel)) as f:
        return f.read()


def yaml_leaves(text):
    """Leaf paths of block-style YAML as {dotted.path: value text}: the
    display forms compared as text, so 0x0 stays 0x0 and False stays False."""
    leaves, stack = {}, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.strip() == "---":
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, _, value = line.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        value = value.strip()
        if value:
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            leaves[".".join([k for _, k in stack] + [key])] = value
        else:
            stack.append((indent, key))
    return leaves


class Card(pr.Root):
    def __init__(self, device):
        super().__init__(name="Root", pollEn=False, initRead=False, timeout=5.0)
        self.mem = rogue.hardware.axi.AxiMemMap(device)
        # the board the emulated cards model (AxiPcieCore checks it at start)
        self.add(axipcie.AxiPcieCore(memBase=self.mem, useGpu=True, expand=False,
                                     boardType="XilinxKcu1500"))


def node(root, path):
    return root.getNode("Root." + path)


def value_matches(var, text):
    """Does a mount file's text hold the value pyrogue reads for var?"""
    raw = var.get(read=True)
    text = text.strip()
    if isinstance(raw, str):
        return raw.rstrip("\0").strip() == text, raw
    if text == "no sample":  # a minimum before any sample (docs/fs.md)
        return raw == 0xFFFFFFFF, raw
    if isinstance(raw, bool):
        return text in (str(int(raw)), str(raw).lower(), str(raw)), raw
    try:
        if int(text, 0) == raw:
            return True, raw
    except ValueError:
        pass
    # wide identity values (git hash, DNA) print as bare hex, longer than
    # any 32-bit word's decimal text: no short number is read as hex
    if len(text) > 10:
        try:
            if int(text, 16) == raw:
                return True, raw
        except ValueError:
            pass
    return text == var.getDisp(read=False), raw


def step_read_all(root):
    errs, n = [], 0
    for var in root.variableList:
        if isinstance(var, pr.RemoteVariable) and var.mode != "WO":
            n += 1
            try:
                var.get(read=True)
            except Exception as e:
                errs.append(f"{var.path}: {e}")
    if errs:
        bad("read_all", "; ".join(errs[:10]))
    else:
        ok("read_all", f"{n} remote variables")


# What pyrogue may say: LoadConfig of the mount's settings.yaml passes over
# the two cache fields, read-only in pyrogue and settings here
# (docs/python.md), with a warning each.
EXPECTED = {"ours_in_pyrogue": ["Skipping set for Entry AxiReadCache with mode RO",
                                "Skipping set for Entry AxiWriteCache with mode RO"]}


def step_warnings():
    global current
    current = "warnings"
    unexpected = [f"{st}: {m}" for st, m in warnings
                  if not any(e in m for e in EXPECTED.get(st, []))]
    absent = [f"{st}: {e}" for st, es in EXPECTED.items() for e in es
              if not any(e in m for s2, m in warnings if s2 == st)]
    if unexpected or absent:
        bad("warnings", "; ".join([f"unexpected {u}" for u in unexpected[:8]]
                                   + [f"expected but not logged: {a}" for a in absent]))
    else:
        ok("warnings", f"only the {len(warnings)} expected")


def step_files(root):
    """Each file of the mount's pyrogue index against pyrogue's variable."""
    lines = [ln.split() for ln in read_file("pyrogue").splitlines()
             if ln.strip() and not ln.startswith("#")]
    wrong, n = [], 0
    for name, rel in lines:
        var = node(root, CORE + "." + name)
        if var is None:
            wrong.append(f"{name}: not in pyrogue's tree")
            continue
        if var.mode == "WO":  # a command: nothing to read on either side
            continue
        try:
            text = read_file(rel)
        except OSError as e:
            wrong.append(f"{rel}: {e}")
            continue
        same, raw = value_matches(var, text)
        if not same and name == "AxiVersion.UpTimeCnt":
            # one clock, read twice a moment apart
            same = abs(int(text) - int(raw)) <= 5
        if not same:
            wrong.append(f"{rel} holds {text.strip()!r}, pyrogue's {name} reads {raw!r}")
        n += 1
    if wrong or n == 0:
        bad("files", "; ".join(wrong) or "the pyrogue index is empty")
    else:
        ok("files", f"{n} files agree with pyrogue")


def step_state_yaml(root):
    core = node(root, GPU)
    theirs = yaml_leaves(core.getYaml(readFirst=True, modes=["RW", "RO"],
                                      excGroups="NoState"))
    ours = {k[len("Root." + CORE + "."):]: v
            for k, v in yaml_leaves(read_file("state.yaml")).items()}
    wrong = [f"{k}: ours {v!r}, pyrogue {theirs[k]!r}"
             for k, v in ours.items() if k in theirs and theirs[k] != v]
    extra = [k for k in ours if k not in theirs]
    missing = [k for k in theirs if k not in ours]
    if wrong or extra or not ours:
        bad("state_yaml", "; ".join(wrong + [f"{k}: not in pyrogue" for k in extra]) or "empty")
        for k, v in theirs.items():
            print(f"  pyrogue state: {k}: {v}", flush=True)
    else:
        ok("state_yaml", f"{len(ours)} values as pyrogue shows them"
           + (f"; pyrogue also has {', '.join(missing)}" if missing else ""))


def step_scratch_pad(root):
    sp = node(root, CORE + ".AxiVersion.ScratchPad")
    for v in (0x5A5A1234, 0):
        sp.set(v)
        got, text = sp.get(read=True), read_file("device/firmware/scratch_pad").strip()
        if got != v or int(text, 16) != v:
            bad("scratch_pad", f"wrote {v:#x}, pyrogue reads {got:#x}, the mount {text}")
            return
    ok("scratch_pad")


def step_monitors(root):
    width = node(root, GPU + ".AxiBusWidth").get(read=True)
    want = {"AXIS_CONFIG_G_TDATA_BYTES_C": width, "AXIS_CONFIG_G_TDEST_BITS_C": 8,
            "AXIS_CONFIG_G_TUSER_BITS_C": 8, "AXIS_CONFIG_G_TID_BITS_C": 8,
            "AXIS_CONFIG_G_TKEEP_MODE_C": "TKEEP_COUNT_C",
            "AXIS_CONFIG_G_TUSER_MODE_C": "TUSER_FIRST_LAST_C",
            "AXIS_CONFIG_G_TSTRB_EN_C": False, "COMMON_CLK_G": False}
    wrong = []
    for mon in ("GpuIbAxisMon", "GpuObAxisMon"):
        for name, v in want.items():
            var = node(root, f"{GPU}.{mon}.{name}")
            got = var.getDisp(read=True) if isinstance(v, str) else var.get(read=True)
            if got != v:
                wrong.append(f"{mon}.{name} {got!r}, firmware {v!r}")
    if wrong:
        bad("monitors", "; ".join(wrong))
    else:
        ok("monitors", f"{2 * len(want)} generics, {width}-byte stream")


def flip_demux(root):
    demux = node(root, GPU + ".AxisDeMuxSelect")
    was = demux.getDisp(read=True)
    demux.setDisp("CPU_path" if was == "GPU_path" else "GPU_path")
    return demux, was


def step_save_load(root):
    first, second = os.path.join(args.work, "a.yml"), os.path.join(args.work, "b.yml")
    root.SaveConfig(first)
    saved = yaml_leaves(open(first).read())
    demux, was = flip_demux(root)
    sp = node(root, CORE + ".AxiVersion.ScratchPad")
    sp.set(0xC0FFEE)
    root.LoadConfig(first)
    after = (demux.getDisp(read=True), sp.get(read=True))
    root.SaveConfig(second)
    again = yaml_leaves(open(second).read())
    diff = [k for k in saved if saved[k] != again.get(k)]
    if after != (was, 0) or diff or len(saved) < 2:
        bad("save_load", f"after LoadConfig demux {after[0]} (saved {was}), ScratchPad "
            f"{after[1]:#x}; differing: {diff[:8]}")
    else:
        ok("save_load", f"{len(saved)} values")
    return first


def step_ours_in_pyrogue(root):
    ours = os.path.join(args.work, "ours.yml")
    with open(ours, "w") as f:
        f.write(read_file("settings.yaml"))
    demux, was = flip_demux(root)
    root.LoadConfig(ours)
    now, mount = demux.getDisp(read=True), read_file("registers/demux_select").strip()
    if now != was:
        bad("ours_in_pyrogue", f"AxisDeMuxSelect {now} after LoadConfig, the file said {was}")
    else:
        ok("ours_in_pyrogue", f"AxisDeMuxSelect {now}, registers/demux_select {mount}")


def step_pyrogue_in_ours(root, saved):
    demux, was = flip_demux(root)
    before = read_file("errors")
    try:
        with open(mount_path("settings.yaml"), "w") as f:
            f.write(open(saved).read())
    except OSError as e:
        bad("pyrogue_in_ours", f"the mount refused pyrogue's SaveConfig file: {e}; "
            f"errors: {read_file('errors')[len(before):]!r}")
        return
    new = read_file("errors")[len(before):]
    tree = yaml_leaves(open(saved).read())
    # each node beside our subtree: Root's own, AxiPcieCore's other devices
    others = sorted({".".join(k.split(".")[:2]) for k in tree if not k.startswith("Root." + CORE)} |
                    {".".join(k.split(".")[:3]) for k in tree
                     if k.startswith("Root." + CORE + ".") and not k.startswith("Root." + GPU)})
    unnamed = [n for n in others if f"{n} skipped" not in new]
    now = demux.getDisp(read=True)
    if now != was or unnamed or not others:
        bad("pyrogue_in_ours", f"AxisDeMuxSelect {now} (file: {was}); not named in errors: "
            f"{unnamed}; errors said: {new!r}")
    else:
        ok("pyrogue_in_ours", f"{len(others)} other nodes named in errors")


def nonowner():
    # rogue and the trees are imported; the card is opened as the other
    # user, with no capability left (the paths above need not be theirs)
    os.setgroups([])
    os.setresgid(args.nonowner, args.nonowner, args.nonowner)
    os.setresuid(args.nonowner, args.nonowner, args.nonowner)
    root = Card(args.device)
    root.start()
    try:
        fpga = node(root, CORE + ".AxiVersion.FpgaVersion").get(read=True)
        sp = node(root, CORE + ".AxiVersion.ScratchPad")
        try:
            sp.set(0x1234)
        except Exception as e:
            ok("nonowner", f"FpgaVersion {fpga:#x} read; the write refused: {e}")
        else:
            bad("nonowner", f"a write by uid {os.getuid()} was taken (ScratchPad "
                f"{sp.get(read=True):#x})")
    finally:
        root.stop()
    return 1 if failed else 0


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--mount", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--nonowner", type=int, metavar="UID")
    args = ap.parse_args()
    log = logging.getLogger("pyrogue")
    log.addHandler(Keep(level=logging.WARNING))
    log.propagate = False
    if args.nonowner is not None:
        return nonowner()
    t0 = time.monotonic()
    try:
        root = Card(args.device)
        root.start()
    except Exception as e:  # rogue's version checks raise here
        bad("tree", f"{type(e).__name__}: {e}")
        return 1
    ok("tree", f"rogue {rogue.Version.current()}, {len(root.variableList)} variables")
    saved = []

    def run(name, fn, *a):
        global current
        current = name
        try:
            r = fn(root, *a)
        except Exception as e:
            bad(name, f"{type(e).__name__}: {e}")
            return None
        return r

    try:
        run("read_all", step_read_all)
        run("files", step_files)
        run("state_yaml", step_state_yaml)
        run("monitors", step_monitors)
        run("scratch_pad", step_scratch_pad)
        saved = run("save_load", step_save_load)
        run("ours_in_pyrogue", step_ours_in_pyrogue)
        if saved:
            run("pyrogue_in_ours", step_pyrogue_in_ours, saved)
        step_warnings()
    finally:
        root.stop()
    print(f"card.py: {time.monotonic() - t0:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
