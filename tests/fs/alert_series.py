#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Record a simulated card through faults and write a promtool rules test.

    alert_series.py MNT RULES OUT

MNT is a fresh gpuasyncfs --sim mount.  The card is driven through phases
(healthy, engine off with frames arriving, healthy, injected write errors,
healthy, the FPGA over its critical temperature, its VccInt under its lower
limit, frames stopped with buffers armed, no buffer
re-armed, link down); after each step MNT/metrics is read once, and
that reading becomes one sample, one minute apart, of every series in the
test's input_series.  The expected alerts are stated per phase (PHASES);
their labels are the card's own (read from the recording) plus the rule's,
and their annotations the rule's, with {{ $labels.X }} filled in.  promtool
test rules OUT then checks that each alert of RULES fires at the end of the
phases that expect it, and not at the end of the others.
"""
import errno
import os
import re
import sys
import time

import yaml

BUFFERS = 4
STEPS = 8  # samples per phase (minutes)

# phase name -> (alerts expected firing at its end, with their extra labels)
PHASES = [
    ('healthy', {}),
    ('engine_off', {'GpuAsyncEngineStoppedWithTraffic': {}, 'GpuAsyncFramesDropped': {}}),
    ('recovered', {}),
    ('write_errors', {'GpuAsyncWriteErrors': {}}),
    ('recovered_again', {}),
    ('overheated', {'GpuAsyncFpgaOverheated': {}}),
    ('undervolted', {'GpuAsyncFpgaVoltageOutOfRange': {'rail': 'vccint'}}),
    ('frames_stopped', {'GpuAsyncFramesStopped': {}}),
    ('not_rearmed', {'GpuAsyncFreeBuffersExhausted': {'direction': 'write', 'state': 'FREE'}}),
    ('link_down', {'GpuAsyncLinkDown': {}}),
]

# Alerts a simulated card's own recording cannot raise: they watch the scrape
# (series gone, node_exporter's textfile errors and times, a target that does
# not answer; test_fs_alerts and tests/fleet run Prometheus for them), a wedged
# DMA the simulated card does not model (alerts_wedged.yml) or a GPU it does
# not have (tests/fleet/alerts_health.yml).  Here they must stay silent
# through every phase.
NOT_RECORDED = {'GpuAsyncMetricsGone', 'GpuAsyncTextfileUnreadable', 'GpuAsyncTextfileStale',
                'GpuAsyncCardWedged', 'GpuAsyncTargetDown', 'GpuAsyncGpuGone'}


def put(mnt, rel, value):
    with open(os.path.join(mnt, rel), 'wb', buffering=0) as f:
        f.write(value if isinstance(value, bytes) else value.encode())


def get(mnt, rel):
    with open(os.path.join(mnt, rel)) as f:
        return f.read().strip()


def push(mnt):
    """One frame into the card; False when no buffer was armed (EAGAIN)."""
    try:
        put(mnt, 'sim/push', b'frame')
        return True
    except OSError as e:
        if e.errno != errno.EAGAIN:
            raise
        return False


def rearm(mnt):
    for i in range(BUFFERS):
        if get(mnt, 'buffers/%d/status' % i) != 'FREE':
            put(mnt, 'buffers/%d/write_enable' % i, '1')


def step(mnt, phase):
    if phase in ('healthy', 'recovered', 'recovered_again', 'overheated', 'undervolted'):
        assert push(mnt), 'healthy card refused a frame'
        rearm(mnt)
    elif phase == 'engine_off':
        assert push(mnt)  # taken, and dropped
    elif phase == 'write_errors':
        put(mnt, 'sim/inject_write_error', '1')
        assert push(mnt)
        rearm(mnt)
    elif phase == 'not_rearmed':
        push(mnt)  # lands while a buffer is armed, then EAGAIN


def enter(mnt, phase):
    if phase == 'healthy':
        for i in range(BUFFERS):
            os.mkdir(os.path.join(mnt, 'buffers/%d' % i))
        put(mnt, 'registers/write_enable', '1')
        rearm(mnt)
    elif phase == 'engine_off':
        put(mnt, 'registers/write_enable', '0')
    elif phase == 'recovered':
        put(mnt, 'registers/write_enable', '1')
        rearm(mnt)
    elif phase == 'overheated':
        # Frames flow as when healthy; the FPGA is 5 degrees over its
        # critical limit (100.0 C on the simulated card)
        put(mnt, 'sim/fpga_temperature', '105')
    elif phase == 'undervolted':
        # Cooled again; VccInt sags 52 mV under its lower limit (0.902 V)
        put(mnt, 'sim/fpga_temperature', '45')
        put(mnt, 'sim/fpga_vccint', '0.85')
    elif phase == 'frames_stopped':
        put(mnt, 'sim/fpga_vccint', '0.95')
        # Buffers armed, engine on, no frame: health/frames_flowing goes to
        # 0 once the last frame is 2 s old (waited for, 15 s at most).
        rearm(mnt)
        end = time.monotonic() + 15
        while get(mnt, 'health/frames_flowing') != '0':
            assert time.monotonic() < end, 'health/frames_flowing stayed 1 without frames'
            time.sleep(0.05)
    elif phase == 'link_down':
        put(mnt, 'sim/link', 'down')


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$')


def parse(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        assert m, 'not a sample: %r' % line
        out[m.group(1)] = m.group(2)
    return out


def labels_of(series):
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', series.partition('{')[2]))


def main():
    mnt, rules_path, out_path = sys.argv[1:4]
    with open(rules_path) as f:
        rules = {r['alert']: r for g in yaml.safe_load(f)['groups'] for r in g['rules']
                 if 'alert' in r}
    expected_names = {a for _, exp in PHASES for a in exp}
    assert expected_names | NOT_RECORDED == set(rules), \
        'alerts in %s: %s; exercised here: %s' % (rules_path, sorted(rules),
                                                  sorted(expected_names | NOT_RECORDED))

    samples, ends = [], {}
    for phase, _ in PHASES:
        enter(mnt, phase)
        for _ in range(STEPS):
            step(mnt, phase)
            with open(os.path.join(mnt, 'metrics')) as f:
                samples.append(parse(f.read()))
        ends[phase] = len(samples) - 1

    names = sorted({s for snap in samples for s in snap})
    series = [{'series': s, 'values': ' '.join(snap.get(s, '_') for snap in samples)}
              for s in names]
    card = labels_of(next(s for s in names if s.startswith('gpuasync_write_enable{')))
    assert set(card) >= {'device'}, card

    tests = []
    for phase, expected in PHASES:
        for name, rule in sorted(rules.items()):
            exp = []
            if name in expected:
                lab = dict(card, **rule.get('labels', {}), **expected[name])
                ann = {k: re.sub(r'\{\{ \$labels\.(\w+) \}\}', lambda m: lab[m.group(1)], v)
                       for k, v in rule.get('annotations', {}).items()}
                exp.append({'exp_labels': lab, 'exp_annotations': ann})
            tests.append({'eval_time': '%dm' % ends[phase], 'alertname': name,
                          'exp_alerts': exp})
    doc = {
        'rule_files': [os.path.abspath(rules_path)],
        'evaluation_interval': '1m',
        'tests': [{'interval': '1m', 'input_series': series, 'alert_rule_test': tests}],
    }
    with open(out_path, 'w') as f:
        yaml.safe_dump(doc, f, sort_keys=False, width=1 << 20)
    print('%d series, %d samples each; phases end at %s' % (len(series), len(samples), ends))


if __name__ == '__main__':
    main()
