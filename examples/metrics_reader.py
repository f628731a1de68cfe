#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Read a gpuasyncfs card's metrics, counters and frames from Python.

    examples/metrics_reader.py /mnt/gpuasync               # one summary
    examples/metrics_reader.py /mnt/gpuasync --all         # every sample, one a line
    examples/metrics_reader.py /mnt/gpuasync --json        # everything, as JSON
    examples/metrics_reader.py /mnt/gpuasync --watch 1     # counter rates every second
    examples/metrics_reader.py /mnt/gpuasync --frames 100  # wait for 100 frames, then a summary
    examples/metrics_reader.py saved.prom --all            # a saved copy of a metrics file

The card is opened with the gpuasync package (python/gpuasync, installed
beside the daemon): gpuasync.Card(mount point).  --watch reads counters by
name (card.registers.rx_frame_count: the register, read when asked);
--frames sleeps in poll() until the mount says rx_frame_count moved
(card.wait_counter), no polling loop.  The path may also be the mount's
metrics file (MOUNT/metrics opens the card at MOUNT) or a metrics file
saved elsewhere, which is only parsed.

The metrics text is parsed by prometheus_client (Debian: python3-prometheus-client),
the parser Prometheus' own Python client ships, escapes included (a label value
written C:\\\\new is C:\\new).  Errors (not a mount, a missing or unreadable
file, text that is not the format, a refused read: the package raises it with
the mount's `errors` line, which is printed too; a wait that times out; a
closed pipe as in "| head") end the program with one line on stderr and a
non-zero status, never a traceback: 1 for errors, 141 (as for SIGPIPE) for a
closed pipe, 130 for Ctrl-C.
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
try:
    import gpuasync
except ImportError:
    sys.exit('%s: needs the gpuasync package (cmake --install; in a source tree, '
             'PYTHONPATH=python)' % PROG)

# --watch's columns unless --counters names others: registers every
# firmware version has.
COUNTERS = ('rx_frame_count', 'tx_frame_count', 'axi_write_error_count',
            'axi_read_error_count')


class Error(Exception):
    """A problem worth one line to the user."""


def open_card(path):
    """The gpuasync.Card that @path is the mount point or the metrics file
    of; None for a file outside a mount (a saved copy)."""
    if os.path.isdir(path):
        try:
            return gpuasync.Card(path)
        except FileNotFoundError as e:  # no device/version
            raise Error('%s: %s' % (path, e.strerror)) from None
    if os.path.basename(path) == 'metrics':
        try:
            return gpuasync.Card(os.path.dirname(path) or '.')
        except FileNotFoundError:
            pass
    return None


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


def read(card, path):
    """The samples of the card's metrics file, or of the file @path when
    there is no card.  Both are one read: the mount renders metrics whole at
    offset 0."""
    if card is not None:
        where = os.path.join(card.path, 'metrics')
        text = card.read('metrics')  # GpuAsyncError (an OSError) on failure
    else:
        where = path
        try:
            with open(path, encoding='utf-8') as f:
                text = f.read()
        except OSError as e:
            raise Error('%s: %s' % (path, e.strerror or e)) from None
        except UnicodeDecodeError:
            raise Error('%s: not text' % path) from None
    try:
        return parse(text)
    except Error as e:
        raise Error('%s: %s' % (where, e)) from None


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


def counter(card, name):
    """registers/<name> by name, e.g. card.registers.rx_frame_count."""
    try:
        v = getattr(card.registers, name)
    except AttributeError as e:  # the firmware has no such register
        raise Error(str(e)) from None
    if not isinstance(v, int):
        raise Error('registers/%s is not a counter: %r' % (name, v))
    return v


def watch(card, names, interval):
    heads = ['time'] + [n + '/s' for n in names]
    widths = [8] + [max(len(h), 12) for h in heads[1:]]
    prev = [counter(card, n) for n in names]
    t0 = time.monotonic()
    print('  '.join(h.rjust(w) if i else h.ljust(w)
                    for i, (h, w) in enumerate(zip(heads, widths))), flush=True)
    while True:
        time.sleep(interval)
        cur, t = [counter(card, n) for n in names], time.monotonic()
        # 32-bit hardware counters wrap (version 1; later ones saturate)
        rates = [(c - p) % 2**32 / (t - t0) for c, p in zip(cur, prev)]
        print('  '.join([time.strftime('%H:%M:%S').ljust(widths[0])] +
                        [('%.1f' % r).rjust(w) for r, w in zip(rates, widths[1:])]),
              flush=True)
        prev, t0 = cur, t


def wait_frames(card, n, timeout):
    """Sleep until rx_frame_count is @n above its value now: the mount wakes
    poll() when the counter changes (card.wait_counter)."""
    start, t0 = counter(card, 'rx_frame_count'), time.monotonic()
    print('waiting for rx_frame_count to reach %d (now %d)' % (start + n, start), flush=True)
    now = card.wait_counter('rx_frame_count', start + n, timeout)  # TimeoutError
    print('%d frames in %.3f s' % (now - start, time.monotonic() - t0), flush=True)


def run(args):
    card = open_card(args.path)
    if card is None and (args.watch is not None or args.frames is not None):
        raise Error('%s: --watch and --frames need a mount point' % args.path)
    if args.watch is not None:
        if args.watch <= 0:
            raise Error('--watch: a number of seconds above 0')
        watch(card, args.counters.split(',') if args.counters else COUNTERS, args.watch)
    if args.frames is not None:
        wait_frames(card, args.frames, args.timeout)
    samples = read(card, args.path)
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
    ap.add_argument('path', nargs='?', default='/mnt/gpuasync',
                    help='mount point, its metrics file, or a saved metrics file')
    ap.add_argument('--watch', type=float, metavar='SECONDS', help='print counter rates forever')
    ap.add_argument('--counters', metavar='NAME,...',
                    help='--watch these registers (default: %s)' % ','.join(COUNTERS))
    ap.add_argument('--frames', type=int, metavar='N',
                    help='wait until N more frames arrived, then print')
    ap.add_argument('--timeout', type=float, metavar='SECONDS',
                    help='give up waiting for --frames after this long')
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
    except (gpuasync.GpuAsyncError, TimeoutError) as e:
        # A request the mount refused (errno, path and the mount's errors
        # line), or a wait that ran out of time.
        print('%s: %s' % (PROG, e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == '__main__':
    sys.exit(main())
