#!/usr/bin/env python3
"""Where one pass's device time goes, from a kernel profiler's trace.

    python3 scripts/lab/gpu/kernel-table.py TRACE.csv [--top 25]

TRACE.csv is Nsight Compute's CSV (`ncu --csv --print-units base --metrics
gpu__time_duration.sum`) of scripts/lab/gpu/profile-pass.js: the load, then the
same pass three times. The last pass is the trace's tail that repeats the
stretch before it; its kernels are summed by name and by kind (matrix
products, cuDNN attention, XLA's fused elementwise and reduction kernels,
copies), the largest first.
"""
import argparse
import csv
import re
import sys
from collections import defaultdict

UNITS = {'nsecond': 1e-6, 'ns': 1e-6, 'usecond': 1e-3, 'us': 1e-3, 'msecond': 1.0, 'ms': 1.0, 'second': 1e3, 's': 1e3}
KINDS = [
    ('cudnn attention', re.compile(r'fmha|cudnn|flash|sdpa', re.I)),
    ('matrix product', re.compile(r'gemm|cutlass|xmma|nvjet|cublas|wgmma|matmul|triton_gemm', re.I)),
    ('copy / transpose', re.compile(r'copy|memcpy|memset|transpose|concatenate|dynamic_update_slice', re.I)),
    ('reduction', re.compile(r'reduce|reduction', re.I)),
    ('fusion (elementwise)', re.compile(r'fusion|loop_|input_|triton|wrapped', re.I)),
]


def kind(name):
    for label, pattern in KINDS:
        if pattern.search(name):
            return label
    return 'other'


def read(path):
    launches = []
    with open(path, newline='') as f:
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get('Metric Name') != 'gpu__time_duration.sum':
            continue
        value = float(row['Metric Value'].replace(',', ''))
        launches.append((int(row['ID']), row['Kernel Name'], value * UNITS.get(row.get('Metric Unit', 'nsecond'), 1e-6)))
    launches.sort()
    return [(name, ms) for _, name, ms in launches]


def last_pass(launches):
    names = [n for n, _ in launches]
    for k in range(len(names) // 2, 0, -1):
        if names[-k:] == names[-2 * k:-k]:
            return launches[-k:]
    return launches


def main():
    p = argparse.ArgumentParser()
    p.add_argument('trace')
    p.add_argument('--top', type=int, default=25)
    a = p.parse_args()
    launches = read(a.trace)
    if not launches:
        sys.exit(f'{a.trace}: no gpu__time_duration rows')
    one = last_pass(launches)
    total = sum(ms for _, ms in one)
    print(f'{len(launches)} kernel launches in the trace; the last pass: {len(one)} launches, {total:.2f} ms of kernel time')
    by_kind = defaultdict(lambda: [0, 0.0])
    by_name = defaultdict(lambda: [0, 0.0])
    for name, ms in one:
        by_kind[kind(name)][0] += 1
        by_kind[kind(name)][1] += ms
        by_name[name][0] += 1
        by_name[name][1] += ms
    print('| kind | launches | ms | share |\n| --- | --- | --- | --- |')
    for label, (n, ms) in sorted(by_kind.items(), key=lambda x: -x[1][1]):
        print(f'| {label} | {n} | {ms:.2f} | {100 * ms / total:.1f}% |')
    print(f'\n| kernel (top {a.top}) | kind | launches | ms | share |\n| --- | --- | --- | --- | --- |')
    for name, (n, ms) in sorted(by_name.items(), key=lambda x: -x[1][1])[: a.top]:
        print(f'| {name[:90]} | {kind(name)} | {n} | {ms:.3f} | {100 * ms / total:.1f}% |')


if __name__ == '__main__':
    main()
