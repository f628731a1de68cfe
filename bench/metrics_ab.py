#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A full read of metrics with 1024 buffers on several daemons side by side.

    bench/metrics_ab.py DAEMON [DAEMON...]     # e.g. two builds' fs/gpuasyncfs

Mounts each daemon (--sim, OPTS default version=4,use_gpu=0: host memory), makes
1024 write buffers in each, then reads metrics (open, read to EOF, close) in
BLOCKS (10) blocks of PER (50) reads, taking turns between the mounts, and prints
p50 and p90 per daemon.  A measurement, not a test.
"""
import os
import subprocess
import sys
import tempfile
import time

bins = sys.argv[1:]
mounts = []
procs = []
opts = os.environ.get("OPTS", "version=4,use_gpu=0")
for b in bins:
    d = tempfile.mkdtemp(prefix="perfmet")
    p = subprocess.Popen([b, "--sim", "-o", opts, d, "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p); mounts.append(d)
try:
    for d in mounts:
        for _ in range(200):
            if os.path.exists(d + "/device/version"): break
            time.sleep(0.05)
        for i in range(1024): os.mkdir(d + "/buffers/%d" % i)
    res = [[] for _ in bins]
    def rd(d):
        t0 = time.perf_counter()
        with open(d + "/metrics", "rb", buffering=0) as f:
            while f.read(1 << 20): pass
        return (time.perf_counter() - t0) * 1e6
    for d in mounts:
        for _ in range(20): rd(d)
    blocks = int(os.environ.get("BLOCKS", "10")); per = int(os.environ.get("PER", "50"))
    for blk in range(blocks):
        for k, d in enumerate(mounts):
            for _ in range(per): res[k].append(rd(d))
    for k, b in enumerate(bins):
        r = sorted(res[k])
        print("%-50s p50 %6.0f us  p90 %6.0f us" % (b, r[len(r)//2], r[len(r)*9//10]))
finally:
    for d in mounts:
        subprocess.call(["fusermount3", "-u", d])
    for p in procs:
        p.wait()
