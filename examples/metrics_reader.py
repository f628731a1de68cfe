#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Read a gpuasyncfs metrics file (Prometheus text format) from Python.

    examples/metrics_reader.py /mnt/gpuasync/metrics            # one summary
    examples/metrics_reader.py /mnt/gpuasync/metrics --watch 1  # rates every second
    examples/metrics_reader.py /mnt/gpuasync/metrics --json     # everything, as JSON

parse() turns the exposition into {name: [(labels, value), ...]} plus the
HELP/TYPE of each family; it needs nothing outside the standard library.
"""
import argparse
import json
import re
import sys
import time

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _unescape(s):
    return s.replace('\\"', '"').replace('\\n', '\n').replace('\\\\', '\\')


def parse(text):
    """Return (samples, meta): samples maps a metric name to a list of
    (labels dict, float); meta maps a family name to {'help', 'type'}."""
    samples, meta = {}, {}
    for line in text.splitlines():
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            _, kind, name, rest = (line.split(' ', 3) + [''])[:4]
            meta.setdefault(name, {})[kind.lower()] = rest
            continue
        if not line or line.startswith('#'):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError('not a sample: %r' % line)
        labels = {k: _unescape(v) for k, v in _LABEL.findall(m.group(2) or '')}
        samples.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return samples, meta


def value(samples, name, **labels):
    """The value of the sample of @name whose labels include @labels."""
    for lab, v in samples.get(name, []):
        if all(lab.get(k) == str(want) for k, want in labels.items()):
            return v
    return None


def read(path):
    with open(path) as f:  # one read: the file is rendered whole at offset 0
        return parse(f.read())


def summary(samples):
    info = samples.get('gpuasync_device_info', [({}, 0)])[0][0]
    print('card: %s, firmware version %s (%s), memory %s' % (
        info.get('backend'), info.get('version'), info.get('layout'), info.get('memory')))
    for name in sorted(samples):
        if name.endswith('_total') and name.startswith('gpuasync_'):
            print('  %-45s %d' % (name, value(samples, name)))
    for d in ('write', 'read'):
        states = {lab['state']: int(v) for lab, v in samples.get('gpuasync_buffers', [])
                  if lab.get('direction') == d and v}
        print('  %s buffers: %s' % (d, ', '.join('%s=%d' % kv for kv in sorted(states.items()))
                                    or 'none'))
    for name in sorted(samples):
        if name.endswith('_seconds') and not name.endswith('_total'):
            for lab, v in samples[name]:
                print('  %-45s buffer %s: %.3f us' % (name, lab.get('buffer'), v * 1e6))


def watch(path, interval):
    prev, t0 = read(path)[0], time.monotonic()
    counters = ('gpuasync_rx_frame_count_total', 'gpuasync_tx_frame_count_total',
                'gpuasync_axi_write_error_count_total', 'gpuasync_axi_read_error_count_total')
    print('%-10s' % 'time' + ''.join('%16s' % c[9:-6] + '/s' for c in counters))
    while True:
        time.sleep(interval)
        cur, t = read(path)[0], time.monotonic()
        rates = []
        for c in counters:
            a, b = value(prev, c) or 0, value(cur, c) or 0
            rates.append(((b - a) % 2**32) / (t - t0))  # 32-bit hardware counters wrap
        print('%-10s' % time.strftime('%H:%M:%S') + ''.join('%18.1f' % r for r in rates),
              flush=True)
        prev, t0 = cur, t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('path', nargs='?', default='/mnt/gpuasync/metrics')
    ap.add_argument('--watch', type=float, metavar='SECONDS', help='print rates forever')
    ap.add_argument('--json', action='store_true', help='dump every sample as JSON')
    args = ap.parse_args()
    if args.watch:
        try:
            watch(args.path, args.watch)
        except (KeyboardInterrupt, BrokenPipeError):
            return 0
    samples, _ = read(args.path)
    if args.json:
        json.dump({k: [{'labels': lab, 'value': v} for lab, v in s] for k, s in samples.items()},
                  sys.stdout, indent=1)
        print()
    else:
        summary(samples)
    return 0


if __name__ == '__main__':
    sys.exit(main())
