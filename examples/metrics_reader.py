#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Read a gpuasyncfs metrics file (Prometheus text format) from Python.

    examples/metrics_reader.py /mnt/gpuasync/metrics            # one summary
    examples/metrics_reader.py /mnt/gpuasync/metrics --all      # every sample, one a line
    examples/metrics_reader.py /mnt/gpuasync/metrics --watch 1  # rates every second
    examples/metrics_reader.py /mnt/gpuasync/metrics --json     # everything, as JSON

The exposition is parsed by prometheus_client (Debian: python3-prometheus-client),
the parser Prometheus' own Python client ships, escapes included (a label value
written C:\\\\new is C:\\new).  Errors (a missing or unreadable file, text that is
not the format, a closed pipe as in "| head") end the program with one line on
stderr and a non-zero status, never a traceback: 1 for errors, 141 (as for
SIGPIPE) for a closed pipe, 130 for Ctrl-C.
"""
import argparse
import json
import os
import sys
import time

PROG = os.path.basename(sys.argv[0])

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit('%s: needs the prometheus_client module (Debian: python3-prometheus-client)' % PROG)


class Error(Exception):
    """A problem worth one line to the user."""


def parse(text):
    """{sample name: [(labels dict, float), ...]}, in the file's order."""
    samples = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples.setdefault(s.name, []).append((dict(s.labels), s.value))
    except (ValueError, TypeError, IndexError, KeyError) as e:
        raise Error('not Prometheus text format: %s' % e) from None
    if not samples:
        raise Error('no samples')
    return samples


def read(path):
    try:
        with open(path, encoding='utf-8') as f:  # one read: rendered whole at offset 0
            text = f.read()
    except OSError as e:
        raise Error('%s: %s' % (path, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise Error('%s: not text' % path) from None
    try:
        return parse(text)
    except Error as e:
        raise Error('%s: %s' % (path, e)) from None


def value(samples, name, **labels):
    """The value of the sample of @name whose labels include @labels."""
    for lab, v in samples.get(name, []):
        if all(lab.get(k) == str(want) for k, want in labels.items()):
            return v
    return None


def number(v):
    return '%d' % v if v == int(v) and abs(v) < 2**63 else '%.6g' % v


def show(text):
    """A label value on one line (the JSON output keeps it exact)."""
    return text.replace('\n', '\\n').replace('\t', '\\t')


def table(rows, right=()):
    """Print rows as columns: each as wide as its widest cell; the columns
    numbered in @right are right-aligned (numbers)."""
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        print('  '.join(cells).rstrip())


def summary(samples):
    info = samples.get('gpuasync_device_info', [({}, 0)])[0][0]
    print('card: %s, firmware version %s (%s), memory %s' % (
        info.get('backend'), info.get('version'), info.get('layout'), info.get('memory')))
    table([(name, number(value(samples, name))) for name in sorted(samples)
           if name.endswith('_total') and name.startswith('gpuasync')], right=(1,))
    for d in ('write', 'read'):
        states = {lab['state']: int(v) for lab, v in samples.get('gpuasync_buffers', [])
                  if lab.get('direction') == d and v}
        print('%s buffers: %s' % (d, ', '.join('%s=%d' % kv for kv in sorted(states.items()))
                                  or 'none'))
    rows = [(name, 'buffer %s' % lab.get('buffer'), '%.3f us' % (v * 1e6))
            for name in sorted(samples) if name.endswith('_seconds')
            for lab, v in samples[name]]
    table(rows, right=(2,))


def every_sample(samples):
    table([(name, ','.join('%s=%s' % (k, show(v)) for k, v in sorted(lab.items())), number(v))
           for name in samples for lab, v in samples[name]], right=(2,))


def watch(path, interval):
    counters = ('gpuasync_rx_frame_count_total', 'gpuasync_tx_frame_count_total',
                'gpuasync_axi_write_error_count_total', 'gpuasync_axi_read_error_count_total')
    heads = ['time'] + [c[len('gpuasync_'):-len('_total')] + '/s' for c in counters]
    widths = [8] + [max(len(h), 12) for h in heads[1:]]
    print('  '.join(h.rjust(w) if i else h.ljust(w)
                    for i, (h, w) in enumerate(zip(heads, widths))), flush=True)
    prev, t0 = read(path), time.monotonic()
    while True:
        time.sleep(interval)
        cur, t = read(path), time.monotonic()
        # 32-bit hardware counters wrap
        rates = [((value(cur, c) or 0) - (value(prev, c) or 0)) % 2**32 / (t - t0)
                 for c in counters]
        print('  '.join([time.strftime('%H:%M:%S').ljust(widths[0])] +
                        [('%.1f' % r).rjust(w) for r, w in zip(rates, widths[1:])]),
              flush=True)
        prev, t0 = cur, t


def run(args):
    if args.watch is not None:
        if args.watch <= 0:
            raise Error('--watch: a number of seconds above 0')
        watch(args.path, args.watch)
    samples = read(args.path)
    if args.json:
        json.dump({k: [{'labels': lab, 'value': v} for lab, v in s] for k, s in samples.items()},
                  sys.stdout, indent=1)
        print()
    elif args.all:
        every_sample(samples)
    else:
        summary(samples)
    sys.stdout.flush()  # a closed pipe shows here, inside the handlers below


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('path', nargs='?', default='/mnt/gpuasync/metrics')
    ap.add_argument('--watch', type=float, metavar='SECONDS', help='print rates forever')
    ap.add_argument('--json', action='store_true', help='dump every sample as JSON')
    ap.add_argument('--all', action='store_true', help='every sample, one a line')
    args = ap.parse_args()
    try:
        run(args)
    except Error as e:
        print('%s: %s' % (PROG, e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away ("| head"): stop quietly.  Point stdout at
        # /dev/null so that Python's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == '__main__':
    sys.exit(main())
