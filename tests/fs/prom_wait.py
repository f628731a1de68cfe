#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Wait on a Prometheus server's HTTP API (test_fs_alerts, loopback only).

    prom_wait.py PORT query EXPR            until EXPR has a sample
    prom_wait.py PORT alert NAME LABEL=RE   until alert NAME with LABEL
                                            matching RE is pending or firing
    prom_wait.py PORT quiet NAME LABEL=RE   prints the alerts; exit 1 if one
                                            such alert is there now

Waits up to 45 s (a bound against hanging, not a timing check); prints what
it found, or what was there when it gave up, and exits 1 then.
"""
import json
import re
import sys
import time
import urllib.parse
import urllib.request


def get(port, path):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%s%s' % (port, path), timeout=5) as r:
            return json.load(r)['data']
    except OSError:
        return None  # not up yet


def matching(alerts, name, label):
    key, _, pat = label.partition('=')
    return [a for a in alerts or [] if a['labels'].get('alertname') == name and
            re.fullmatch(pat, a['labels'].get(key, ''))]


def main():
    port, what, arg = sys.argv[1:4]
    if what == 'quiet':
        alerts = (get(port, '/api/v1/alerts') or {}).get('alerts', [])
        hit = matching(alerts, arg, sys.argv[4])
        print(json.dumps(hit or alerts))
        sys.exit(1 if hit else 0)
    end = time.monotonic() + 45
    last = None
    while time.monotonic() < end:
        if what == 'query':
            last = get(port, '/api/v1/query?query=' + urllib.parse.quote(arg))
            if last and last.get('result'):
                print(json.dumps(last['result']))
                return
        else:
            last = (get(port, '/api/v1/alerts') or {}).get('alerts')
            hit = matching(last, arg, sys.argv[4])
            if hit:
                print('%s %s %s' % (arg, hit[0]['state'], json.dumps(hit[0]['labels'])))
                return
        time.sleep(0.2)
    print('gave up after 45 s; last answer: %s' % json.dumps(last))
    sys.exit(1)


if __name__ == '__main__':
    main()
