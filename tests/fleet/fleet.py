#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A fleet of gpuasyncfs nodes on one machine, watched by one real Prometheus.

    fleet.py --gafs BIN --src SRCDIR [--nodes 16] [--bench SECONDS] [--page]

Each node is a gpuasyncfs mount of its own simulated card, serving its metrics
over HTTP on its own loopback address (127.0.0.2, 127.0.0.3, ...; nothing
leaves the machine) and writing its file_sd target file into one shared
directory, with instrument/partition/detname/alias labels.  Each card runs:
eight write buffers, the write engine on, the generator at 2 frames/s, and one
consumer thread here re-arming every node's buffers every 0.5 s (as a DRP
would; each re-arm is an open, write and close of buffers/<i>/write_enable).

Debian's Prometheus discovers the nodes through file_sd_configs (scrape and
rule evaluation every second), with examples/gpuasyncfs.rules.yml rewritten
so every `for:` is 3 s.  The test checks that every node is up with its
labels, then breaks six nodes and waits (bounded) for each alert, read from
Prometheus' /api/v1/alerts, to be seen pending and then firing:

    node 0  kill -9 of its daemon      GpuAsyncTargetDown (and MetricsGone)
    node 1  sim/link down              GpuAsyncLinkDown
    node 2  sim/running 0              GpuAsyncFramesStopped
    node 3  sim/inject_write_error     GpuAsyncWriteErrors (no `for:`: firing)
    node 4  sim/fpga_temperature 110   GpuAsyncFpgaOverheated (critical is 100)
    node 5  sim/fpga_vccint 0.85       GpuAsyncFpgaVoltageOutOfRange (lower limit 0.902)

and that no other node raised any alert.  With --page it loads the console
page examples/console/gpuasyncfs.html, served by that Prometheus, in headless
Chromium (--dump-dom, --screenshot) and checks the rendered cards, their FPGA
temperature among them.

--bench SECONDS skips the faults, the generator and the consumer (the cards
sit with their buffers armed, so the cost measured is serving the scrapes):
it measures, over that window, each node's scrape duration (Prometheus'
scrape_duration_seconds) and its daemon's CPU (/proc/PID/stat, with and
without the simulated card's own thread, which runs in the daemon), and
prints one line of figures.

Exit status 0: passed; 1: failed (the reason printed); 77: skipped (a tool
missing, only outside CI=true).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import yaml

BUFFERS = 8
RATE = 2
REARM_S = 0.5  # the consumer's period; the ring fills in BUFFERS / RATE = 4 s
WAIT = 60  # seconds, a bound against hanging (not a timing check)


class Failed(Exception):
    pass


def need(tool, package):
    if shutil.which(tool):
        return
    if os.environ.get('CI') == 'true':
        raise Failed('%s is not installed under CI=true: add the Debian package %s to '
                     'tools/packages.txt' % (tool, package))
    print('SKIP: %s missing (Debian package %s)' % (tool, package))
    sys.exit(77)


def free_port(addrs):
    """A port free on every address of @addrs (bound and released here)."""
    for _ in range(50):
        s = socket.socket()
        s.bind((addrs[0], 0))
        port = s.getsockname()[1]
        s.close()
        ok = True
        for a in addrs[1:]:
            t = socket.socket()
            try:
                t.bind((a, port))
            except OSError:
                ok = False
            finally:
                t.close()
        if ok and not 9200 <= port <= 9299:
            return port
    raise Failed('no port free on all of %s' % addrs)


def wait_for(what, check, bound=WAIT, step=0.1):
    end = time.monotonic() + bound
    last = None
    while time.monotonic() < end:
        last = check()
        if last:
            return last
        time.sleep(step)
    raise Failed('gave up after %d s waiting for %s' % (bound, what))


class Node:
    def __init__(self, i, top, gafs, targets, port):
        self.i = i
        self.addr = '127.0.0.%d' % (i + 2)
        self.instance = '%s:%d' % (self.addr, port)
        self.mnt = os.path.join(top, 'node%d' % i)
        self.alias = 'det%d_0' % i
        os.mkdir(self.mnt)
        self.log = open(os.path.join(top, 'node%d.log' % i), 'w')
        opts = ('config=/dev/null,version=4,rate=%d,http=%s,targets_dir=%s,instrument=tst,'
                'partition=0,detname=det%d,alias=%s' % (RATE, self.instance, targets, i,
                                                        self.alias))
        self.proc = subprocess.Popen([gafs, '-f', '--sim', '-o', opts, self.mnt],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.target = os.path.join(targets, 'gpuasyncfs_%s_%d.yaml' % (self.addr, port))
        self.dead = False

    def ready(self):
        if self.proc.poll() is not None:
            raise Failed('node %d exited %s; see %s' % (self.i, self.proc.returncode,
                                                        self.log.name))
        return os.path.exists(self.target)

    def put(self, rel, value):
        with open(os.path.join(self.mnt, rel), 'w') as f:
            f.write(value)

    def get(self, rel):
        with open(os.path.join(self.mnt, rel)) as f:
            return f.read().strip()

    def start_frames(self, generate=True):
        for b in range(BUFFERS):
            os.mkdir(os.path.join(self.mnt, 'buffers/%d' % b))
        self.rearm()
        self.put('registers/write_enable', '1')
        if generate:
            self.put('sim/running', '1')

    def rearm(self):
        """Re-arm every buffer (an armed one stays armed): the consumer."""
        for b in range(BUFFERS):
            try:
                self.put('buffers/%d/write_enable' % b, '1')
            except OSError:
                pass  # link down, or the daemon killed: nothing to re-arm

    def cpu_s(self):
        """CPU seconds of the daemon so far, and of its simulated card's thread."""
        with open('/proc/%d/stat' % self.proc.pid) as f:
            fields = f.read().rpartition(')')[2].split()
        tick = os.sysconf('SC_CLK_TCK')
        total = (int(fields[11]) + int(fields[12])) / tick
        return total, int(self.get('sim/stats/cpu_ns')) / 1e9

    def stop(self):
        if self.proc.poll() is None:
            subprocess.call(['fusermount3', '-u', self.mnt], stderr=subprocess.DEVNULL)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.call(['fusermount3', '-uz', self.mnt], stderr=subprocess.DEVNULL)
        self.log.close()


class Prom:
    def __init__(self, top, src, targets, nodes_rules):
        self.port = free_port(['127.0.0.1'])
        rules = os.path.join(top, 'rules.yml')
        with open(os.path.join(src, 'examples/gpuasyncfs.rules.yml')) as f:
            doc = yaml.safe_load(f)
        for g in doc['groups']:
            for r in g['rules']:
                if 'for' in r:
                    r['for'] = '3s'
        with open(rules, 'w') as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        conf = os.path.join(top, 'prometheus.yml')
        with open(conf, 'w') as f:
            yaml.safe_dump({
                'global': {'scrape_interval': '1s', 'evaluation_interval': '1s',
                           'scrape_timeout': '1s'},
                'rule_files': [rules],
                'scrape_configs': [{
                    'job_name': 'gpuasyncfs',
                    'file_sd_configs': [{'files': [os.path.join(targets, '*.yaml')],
                                         'refresh_interval': '1s'}],
                }],
            }, f, sort_keys=False)
        if subprocess.call(['promtool', 'check', 'config', conf], stdout=subprocess.DEVNULL):
            raise Failed('promtool check config %s failed' % conf)
        self.log = open(os.path.join(top, 'prometheus.log'), 'w')
        self.proc = subprocess.Popen(
            ['prometheus', '--config.file=' + conf,
             '--storage.tsdb.path=' + os.path.join(top, 'data'),
             '--web.listen-address=127.0.0.1:%d' % self.port,
             '--web.console.templates=' + os.path.join(src, 'examples/console'),
             '--web.console.libraries=' + os.path.join(src, 'examples/console')],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def get(self, path):
        if self.proc.poll() is not None:
            raise Failed('prometheus exited %s; see %s' % (self.proc.returncode,
                                                           self.log.name))
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d%s' % (self.port, path),
                                        timeout=5) as r:
                return json.load(r)['data']
        except OSError:
            return None

    def query(self, expr):
        d = self.get('/api/v1/query?query=' + urllib.parse.quote(expr))
        return d['result'] if d else []

    def alerts(self):
        d = self.get('/api/v1/alerts')
        return d['alerts'] if d else []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def consumer(nodes, stop):
    while not stop.is_set():
        for n in nodes:
            if not n.dead:
                n.rearm()
        stop.wait(REARM_S)


def watch_alerts(prom, want, bound=WAIT):
    """Poll the alerts every 0.1 s until each (name, instance) of @want fires;
    the states each went through, in order."""
    states = {w: [] for w in want}
    end = time.monotonic() + bound
    while time.monotonic() < end:
        for a in prom.alerts():
            key = (a['labels'].get('alertname'), a['labels'].get('instance'))
            if key in states and (not states[key] or states[key][-1] != a['state']):
                states[key].append(a['state'])
        if all(st and st[-1] == 'firing' for st in states.values()):
            return states
        time.sleep(0.1)
    raise Failed('not all firing within %d s: %s' % (bound, states))


def bench(prom, nodes, seconds):
    wait_for('a scrape of every node', lambda: len(prom.query(
        'scrape_duration_seconds{job="gpuasyncfs"}')) == len(nodes))
    time.sleep(3)  # a few scrapes in before the window opens
    before = [n.cpu_s() for n in nodes]
    t0 = time.monotonic()
    time.sleep(seconds)  # the measuring window itself
    dt = time.monotonic() - t0
    after = [n.cpu_s() for n in nodes]
    r = prom.query('avg(avg_over_time(scrape_duration_seconds{job="gpuasyncfs"}[%ds]))' %
                   int(seconds))
    r99 = prom.query('max(max_over_time(scrape_duration_seconds{job="gpuasyncfs"}[%ds]))' %
                     int(seconds))
    samples = prom.query('avg(scrape_samples_scraped{job="gpuasyncfs"})')
    scrapes = prom.query('sum(count_over_time(up{job="gpuasyncfs"}[%ds]))' % int(seconds))
    cpu = [(a[0] - b[0]) / dt for a, b in zip(after, before)]
    sim = [(a[1] - b[1]) / dt for a, b in zip(after, before)]
    nscrapes = float(scrapes[0]['value'][1]) if scrapes else float('nan')
    # CPU the daemons spent beside their simulated cards' threads (serving the
    # scrapes, the consumer's re-arms, the sampler), per scrape
    per_scrape = 1e3 * (sum(cpu) - sum(sim)) * dt / nscrapes
    print('BENCH nodes=%d window=%ds scrape_avg_ms=%.3f scrape_max_ms=%.3f samples=%s '
          'daemon_cpu_pct_avg=%.2f daemon_cpu_pct_max=%.2f without_sim_thread_pct_avg=%.2f '
          'scrapes=%.0f cpu_ms_per_scrape=%.3f machine_cpus=%d' %
          (len(nodes), seconds, float(r[0]['value'][1]) * 1e3, float(r99[0]['value'][1]) * 1e3,
           samples[0]['value'][1] if samples else '?', 100 * sum(cpu) / len(cpu),
           100 * max(cpu), 100 * (sum(cpu) - sum(sim)) / len(cpu), nscrapes, per_scrape,
           os.cpu_count()))


def page(prom, top, nodes):
    """The console page in headless Chromium: DOM and screenshot."""
    url = 'http://127.0.0.1:%d/consoles/gpuasyncfs.html' % prom.port
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update',
             '--disable-sync', '--user-data-dir=' + os.path.join(top, 'chromium')]
    dom = subprocess.run(['chromium'] + flags + ['--dump-dom', url], capture_output=True,
                         text=True, timeout=120).stdout
    with open(os.path.join(top, 'page.html'), 'w') as f:
        f.write(dom)
    shot = os.path.join(top, 'page.png')
    subprocess.run(['chromium'] + flags + ['--window-size=1400,2400', '--screenshot=' + shot,
                                           url], capture_output=True, timeout=120)
    return dom, shot


def check_page(dom, nodes, broken):
    # each card runs from its opening div to the next card's (or the end)
    cards = re.findall(r'<div class="card[^"]*" data-instance="([^"]+)"[^>]*>(.*?)'
                       r'(?=<div class="card|\Z)', dom, re.S)
    if len(cards) != len(nodes) - 1:  # the killed node's series are gone
        raise Failed('the page shows %d cards, want %d:\n%s' % (len(cards), len(nodes) - 1,
                                                                dom[:3000]))
    by = dict(cards)
    # Chromium takes both cores of a small machine for seconds, so a healthy
    # node's consumer may fall behind (GpuAsyncFreeBuffersExhausted): only
    # the faults made here must show, and only on their nodes.
    faults = ('GpuAsyncLinkDown', 'GpuAsyncFramesStopped', 'GpuAsyncWriteErrors',
              'GpuAsyncFpgaOverheated', 'GpuAsyncFpgaVoltageOutOfRange')
    for inst, body in cards:
        if inst not in (n.instance for n in nodes[1:6]) and any(f in body for f in faults):
            raise Failed('card %s shows a fault it does not have:\n%s' % (inst, body))
    for n in nodes:
        if n.i == 0:
            continue
        body = by.get(n.instance)
        if body is None or n.alias not in body:
            raise Failed('no card for %s (%s) on the page' % (n.instance, n.alias))
        link = re.search(r'data-field="link">([^<]*)<', body)
        fps = re.search(r'data-field="fps">([^<]*)<', body)
        if not link or not fps:
            raise Failed('card %s lacks link or frames/s:\n%s' % (n.instance, body))
        want_link = 'down' if n.i == 1 else 'up'
        if link.group(1).strip() != want_link:
            raise Failed('card %s: link %r, want %r' % (n.instance, link.group(1), want_link))
        # the FPGA's temperature from its SysMon: node 4 heated, the others at
        # the simulated card's power-up 45 C; none while the link is down
        temp = re.search(r'data-field="temp">([^<]*)<', body)
        want_temp = '-' if n.i == 1 else '110.0' if n.i == 4 else '45.0'
        if not temp or not temp.group(1).strip().startswith(want_temp + ' '):
            raise Failed('card %s: temperature %r, want %s' %
                         (n.instance, temp.group(1) if temp else None, want_temp))
        if n.i in broken:
            continue
        # frames/s as Prometheus computed it: below RATE when Chromium's
        # start starved the consumer (the ring full, the card waiting), but
        # never none and never more than the generator makes
        if not 0 < float(fps.group(1)) <= 1.5 * RATE:
            raise Failed('card %s: %s frames/s, want some, at most about %d' %
                         (n.instance, fps.group(1), RATE))
        # the write latency's quantiles from the frames' histogram: a duration
        p99 = re.search(r'data-field="p99">([^<]*)<', body)
        if not p99 or not re.fullmatch(r'[0-9.]+(ns|us|ms|s)', p99.group(1).strip()):
            raise Failed('card %s: write latency p99 %r, want a duration' %
                         (n.instance, p99.group(1) if p99 else None))
    for i, name in ((1, 'GpuAsyncLinkDown'), (2, 'GpuAsyncFramesStopped'),
                    (3, 'GpuAsyncWriteErrors'), (4, 'GpuAsyncFpgaOverheated'),
                    (5, 'GpuAsyncFpgaVoltageOutOfRange')):
        if name not in by[nodes[i].instance] or not re.search(
                r'<div class="card( bad)+" data-instance="%s"' % re.escape(nodes[i].instance),
                dom):
            raise Failed('card %s does not show %s in red' % (nodes[i].instance, name))
    down = re.search(r'data-field="targets-down">([^<]*)<', dom)
    if not down or down.group(1).strip() != '1':
        raise Failed('the page does not count 1 target down: %s' %
                     (down.group(1) if down else 'no such field'))


def run(args, top):
    need('prometheus', 'prometheus')
    need('promtool', 'prometheus')
    need('fusermount3', 'fuse3')
    if args.page:
        need('chromium', 'chromium')
    targets = os.path.join(top, 'targets')
    os.mkdir(targets)
    addrs = ['127.0.0.%d' % (i + 2) for i in range(args.nodes)]
    port = free_port(addrs)
    nodes, prom, stop = [], None, threading.Event()
    thread = None
    try:
        for i in range(args.nodes):
            nodes.append(Node(i, top, args.gafs, targets, port))
        for n in nodes:
            wait_for('node %d target file' % n.i, n.ready)
            n.start_frames(generate=not args.bench)
        if not args.bench:
            thread = threading.Thread(target=consumer, args=(nodes, stop), daemon=True)
            thread.start()
        prom = Prom(top, args.src, targets, nodes)
        if args.bench:
            bench(prom, nodes, args.bench)
            return
        # Discovered and scraped, with the target file's labels.
        wait_for('all %d nodes up' % len(nodes), lambda: len(prom.query(
            'up{job="gpuasyncfs",instrument="tst",partition="0"} == 1')) == len(nodes))
        aliases = {r['metric'].get('alias') for r in
                   prom.query('gpuasync_link_up{job="gpuasyncfs"}')}
        if aliases != {n.alias for n in nodes}:
            raise Failed('aliases scraped: %s' % sorted(aliases))
        wait_for('frames flowing on every node', lambda: len(prom.query(
            'gpuasync_frames_flowing == 1')) == len(nodes))
        # A node's first look has no earlier count to compare with, so its
        # frames_flowing starts at 0 and GpuAsyncFramesStopped may go pending
        # for a moment: wait until nothing is pending (no `for:` of 3 s ran out).
        try:
            wait_for('no alert before any fault', lambda: not prom.alerts(), bound=30)
        except Failed:
            raise Failed('alerts before any fault: %s' % json.dumps(prom.alerts()))
        if any(a['state'] == 'firing' for a in prom.alerts()):
            raise Failed('an alert fired before any fault')
        print('ok: %d nodes up, labelled, frames flowing, no alert' % len(nodes))

        nodes[0].proc.send_signal(signal.SIGKILL)
        nodes[0].proc.wait()
        nodes[0].dead = True
        nodes[1].put('sim/link', 'down')
        nodes[2].put('sim/running', '0')
        nodes[3].put('sim/inject_write_error', '5')
        nodes[4].put('sim/fpga_temperature', '110')
        nodes[5].put('sim/fpga_vccint', '0.85')
        expect = [('GpuAsyncTargetDown', 0), ('GpuAsyncLinkDown', 1),
                  ('GpuAsyncFramesStopped', 2), ('GpuAsyncWriteErrors', 3),
                  ('GpuAsyncFpgaOverheated', 4), ('GpuAsyncFpgaVoltageOutOfRange', 5)]
        seen = watch_alerts(prom, [(name, nodes[i].instance) for name, i in expect])
        for name, i in expect:
            states = seen[(name, nodes[i].instance)]
            want = ['firing'] if name == 'GpuAsyncWriteErrors' else ['pending', 'firing']
            if states != want:
                raise Failed('%s on node %d: states %s, want %s' % (name, i, states, want))
            print('ok: %s on node %d (%s): %s' % (name, i, nodes[i].instance,
                                                   ' then '.join(states)))
        if not os.path.exists(nodes[0].target):
            raise Failed('the killed daemon\'s target file is gone')
        broken = {n.instance for n in nodes[:6]}
        stray = [a for a in prom.alerts() if a['labels'].get('instance') not in broken]
        if stray:
            raise Failed('alerts on healthy nodes: %s' % json.dumps(stray))
        print('ok: nodes 6..%d quiet' % (len(nodes) - 1))
        if args.page:
            dom, shot = page(prom, top, nodes)
            check_page(dom, nodes, {0, 1, 2, 3, 4, 5})
            if os.path.getsize(shot) < 10000:
                raise Failed('screenshot %s is %d bytes' % (shot, os.path.getsize(shot)))
            if args.keep:
                shutil.copy(shot, args.keep)
            print('ok: console page shows %d cards; screenshot %s' % (len(nodes) - 1,
                                                                      args.keep or shot))
        # A clean stop removes a target file; Prometheus drops the target.
        nodes[6].stop()
        if os.path.exists(nodes[6].target):
            raise Failed('a clean stop left %s' % nodes[6].target)
        wait_for('node 6 dropped from the targets', lambda: nodes[6].instance not in json.dumps(
            (prom.get('/api/v1/targets') or {}).get('activeTargets', nodes[6].instance)))
        print('ok: a clean stop removed node 6\'s target file and Prometheus dropped it')
    finally:
        stop.set()
        if thread:
            thread.join()
        if prom:
            prom.stop()
        for n in nodes:
            n.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--gafs', required=True)
    ap.add_argument('--src', required=True)
    ap.add_argument('--nodes', type=int, default=16)
    ap.add_argument('--bench', type=int, default=0)
    ap.add_argument('--page', action='store_true')
    ap.add_argument('--keep', help='copy the screenshot here')
    args = ap.parse_args()
    if not 7 < args.nodes <= 250:
        ap.error('--nodes: 8 to 250 (127.0.0.2 ...; nodes 0-5 are broken, 6 stopped)')
    top = tempfile.mkdtemp(prefix='gafs-fleet-')
    try:
        run(args, top)
    except Failed as e:
        print('FAIL: %s (logs in %s)' % (e, top))
        return 1
    shutil.rmtree(top, ignore_errors=True)
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
