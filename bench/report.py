#!/usr/bin/env python3
"""bench/report.py: small statistics and reporting helpers for bench/run.

Subcommands (all print to stdout):
  calc EXPR                      evaluate an arithmetic expression (floats)
  median V...                    median of the values
  tps-intervals S,E[,S,E...] LOG...
                                 transactions of pgbench -l logs that
                                 completed in the [S, E) intervals (Unix
                                 seconds, fractional) / their total length
  sliced-tps FILE                per variant: total transactions / total time
                                 over the lines "round variant transactions tps"
  sliced-ratio FILE EXPR         median over the rounds of EXPR, in which each
                                 variant name stands for its TPS in that round
  stream TABLE SECONDS RATE      print one INSERT of RATE/10 items ("ttl" 1..5)
                                 every 100 ms for SECONDS, for psql's stdin
  lag WORKDIR-FILE NAPTIME       lag statistics from "expired_epoch deleted_epoch"
                                 lines: overall and per third of the stream
  table RESULTS                  the PASS/FAIL table
  markdown RESULTS RAW NOTES EVIDENCE MACHINE CMD OUT
                                 write the RESULTS file

RESULTS is a tab-separated file of  key  label  op  target  rep  value
(op is <=, >=, > or info); each key's value is the median over its reps.
RAW is  key  rep  name  value  unit;  NOTES and EVIDENCE are free text.
"""
import collections
import glob
import math
import statistics
import sys


def fnum(s):
    return float(s)


def median(vals):
    vals = [v for v in vals if v is not None and not math.isnan(v)]
    if not vals:
        return float('nan')
    return statistics.median(vals)


def tps_intervals(intervals, logs):
    """Transactions completed inside any of the [start, end) intervals,
    divided by their total length."""
    n = 0
    times = []
    for pattern in logs:
        for path in glob.glob(pattern):
            with open(path) as f:
                for line in f:
                    p = line.split()
                    if len(p) < 6:
                        continue
                    times.append(int(p[4]) + int(p[5]) / 1e6)
    total = sum(e - s for s, e in intervals)
    for t in times:
        for s, e in intervals:
            if s <= t < e:
                n += 1
                break
    return n / total if total > 0 else float('nan')


def read_slices(path):
    """Lines 'round variant transactions tps' of pgbench slices."""
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4 and float(p[3]) > 0:
                rows.append((int(p[0]), p[1], float(p[2]), float(p[3])))
    return rows


def sliced_tps(path):
    """Per variant: total transactions / total time over its slices."""
    n = collections.defaultdict(float)
    t = collections.defaultdict(float)
    for _, v, tx, tps in read_slices(path):
        n[v] += tx
        t[v] += tx / tps
    for v in n:
        print('%s %.3f' % (v, n[v] / t[v]))


def sliced_ratio(path, expr):
    """EXPR (variant names stand for their TPS in one round) evaluated for
    every round of back-to-back slices; prints the median over the rounds."""
    rounds = collections.defaultdict(dict)
    for r, v, _, tps in read_slices(path):
        rounds[r][v] = tps
    vals = []
    for r in sorted(rounds):
        try:
            vals.append(float(eval(expr, {'__builtins__': {}}, dict(rounds[r], float=float))))
        except (ZeroDivisionError, NameError, ValueError):
            pass
    print('%.6g' % median(vals))


def percentile(sorted_vals, q):
    if not sorted_vals:
        return float('nan')
    k = (len(sorted_vals) - 1) * q
    lo = math.floor(k)
    hi = math.ceil(k)
    if lo == hi:
        return sorted_vals[lo]
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def lag(path, naptime):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 2:
                rows.append((float(p[0]), float(p[1])))
    rows.sort()
    lags = sorted(d - e for e, d in rows)
    out = {
        'n': len(rows),
        'p50': percentile(lags, 0.5),
        'p99': percentile(lags, 0.99),
        'max': lags[-1] if lags else float('nan'),
        'min': lags[0] if lags else float('nan'),
    }
    # three consecutive segments of the stream (by expiry time)
    segs = []
    if rows:
        t0, t1 = rows[0][0], rows[-1][0]
        width = (t1 - t0) / 3 or 1
        for i in range(3):
            seg = sorted(d - e for e, d in rows
                         if t0 + i * width <= e < t0 + (i + 1) * width or (i == 2 and e == t1))
            segs.append((len(seg), percentile(seg, 0.5), percentile(seg, 0.99)))
    print('n=%d min=%.3f p50=%.3f p99=%.3f max=%.3f' %
          (out['n'], out['min'], out['p50'], out['p99'], out['max']))
    for i, (n, p50, p99) in enumerate(segs):
        print('segment %d: n=%d p50=%.3f p99=%.3f p99/naptime=%.3f' %
              (i + 1, n, p50, p99, p99 / naptime))


def stream(table, seconds, rate):
    import time
    per = max(rate // 10, 1)
    t0 = time.time()
    for tick in range(seconds * 10):
        print("INSERT INTO %s (doc) SELECT jsonb_build_object('ttl', 1 + (g %% 5), 'tick', %d,"
              " 'note', md5(g::text)) FROM generate_series(1, %d) g;" % (table, tick, per),
              flush=True)
        wait = t0 + (tick + 1) * 0.1 - time.time()
        if wait > 0:
            time.sleep(wait)


def load_results(path):
    order = []
    rows = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            key, label, op, target, rep, value = line.split('\t')
            if key not in rows:
                rows[key] = {'label': label, 'op': op, 'target': target, 'vals': []}
                order.append(key)
            try:
                v = float(value)
            except ValueError:
                v = float('nan')
            rows[key]['vals'].append(v)
    def sort_key(key):
        num = ''.join(c for c in key if c.isdigit())
        return (int(num) if num else 0, key)
    return collections.OrderedDict((k, rows[k]) for k in sorted(rows, key=sort_key))


def verdict(op, target, value):
    if op == 'info':
        return 'info'
    if math.isnan(value):
        return 'FAIL'
    t = float(target)
    ok = {'<=': value <= t, '>=': value >= t, '>': value > t, '<': value < t}[op]
    return 'PASS' if ok else 'FAIL'


def fmt(v):
    if math.isnan(v):
        return 'n/a'
    if abs(v) >= 100:
        return '%.0f' % v
    if abs(v) >= 10:
        return '%.1f' % v
    return '%.2f' % v


def render_table(path):
    rows = load_results(path)
    lines = []
    nreps = max((len(r['vals']) for r in rows.values()), default=0)
    head = 'ratio (median of %d)' % nreps
    lines.append('%-58s %-22s %-9s %s' % ('path', head, 'target', 'result'))
    npass = nfail = 0
    for key, r in rows.items():
        m = median(r['vals'])
        v = verdict(r['op'], r['target'], m)
        if v == 'PASS':
            npass += 1
        elif v == 'FAIL':
            nfail += 1
        n = len(r['vals'])
        val = fmt(m) + ('' if n == nreps else ' (n=%d)' % n)
        tgt = '' if r['op'] == 'info' else '%s %s' % (r['op'], r['target'])
        lines.append('%-58s %-22s %-9s %s' % (r['label'], val, tgt, v))
    lines.append('')
    lines.append('%d PASS, %d FAIL (info rows are not judged)' % (npass, nfail))
    return '\n'.join(lines)


def render_raw(path):
    out = ['| key | rep | measurement | value | unit |', '| --- | --- | --- | --- | --- |']
    try:
        with open(path) as f:
            for line in f:
                p = line.rstrip('\n').split('\t')
                if len(p) == 5:
                    out.append('| %s |' % ' | '.join(p))
    except FileNotFoundError:
        pass
    return '\n'.join(out)


def render_ratio_reps(path):
    rows = load_results(path)
    out = ['| path | per repetition | median |', '| --- | --- | --- |']
    for r in rows.values():
        out.append('| %s | %s | %s |' % (r['label'], ', '.join(fmt(v) for v in r['vals']),
                                         fmt(median(r['vals']))))
    return '\n'.join(out)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ''


def markdown(results, raw, notes, evidence, machine, cmd, out):
    title = 'ttl benchmark results'
    doc = []
    doc.append('# %s\n' % title)
    doc.append('Produced by `%s` (bench/run; see bench/README.md).\n' % cmd)
    doc.append('## Machine\n')
    doc.append('```\n%s```\n' % read(machine))
    doc.append('## Results\n')
    doc.append('Each ratio is the median over repetitions; within a repetition the sides '
               'were measured back to back, in alternating order.\n')
    doc.append('```\n%s\n```\n' % render_table(results))
    doc.append('## Notes\n')
    doc.append('```\n%s```\n' % read(notes))
    doc.append('## Ratios per repetition\n')
    doc.append(render_ratio_reps(results) + '\n')
    doc.append('## Raw measurements\n')
    doc.append(render_raw(raw) + '\n')
    doc.append('## Evidence (plans)\n')
    doc.append('```\n%s```\n' % read(evidence))
    with open(out, 'w') as f:
        f.write('\n'.join(doc))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd = argv[1]
    if cmd == 'calc':
        v = eval(' '.join(argv[2:]), {'__builtins__': {}}, {'min': min, 'max': max, 'abs': abs})
        print(('%.15g' % v) if isinstance(v, float) else v)
    elif cmd == 'median':
        print('%.6g' % median([fnum(x) for x in argv[2:]]))
    elif cmd == 'tps-intervals':
        b = [float(x) for x in argv[2].split(',')]
        print('%.3f' % tps_intervals(list(zip(b[0::2], b[1::2])), argv[3:]))
    elif cmd == 'sliced-tps':
        sliced_tps(argv[2])
    elif cmd == 'sliced-ratio':
        sliced_ratio(argv[2], argv[3])
    elif cmd == 'stream':
        stream(argv[2], int(argv[3]), int(argv[4]))
    elif cmd == 'lag':
        lag(argv[2], float(argv[3]))
    elif cmd == 'table':
        print(render_table(argv[2]))
    elif cmd == 'markdown':
        markdown(*argv[2:9])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
