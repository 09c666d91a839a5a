"""What the Python peers of bench:gpu share: the command line, the inputs, the
packed layout of requests, the timing loop and the results file.

A peer module supplies a Peer object (name, versions(), method names, and for
each method a call that scores a list of requests and returns their log-probs);
run_peer() does the rest, one (workload, method) at a time, and records an
{"error": ...} row when a method cannot run instead of stopping.

Timing: a call goes from token ids on the host to log-probs on the host (the
packing, the mask, the upload, the forward, the download). Warm-up calls (all
compiles) are excluded. Reported per (workload, method):
  median_ms    median over repeats of the time to run the whole workload once
  items_per_s  items of the workload / median_ms
  p50_ms, p99_ms  latency of one call, over every call of every repeat (a
               request's latency: with several requests per call, the call's)

Progress: every step prints a line at once (flush), with the seconds since
the process started, so a peer killed by its time limit leaves in the log how
far it got: the imports, the model load, each warm-up pass (the first one
compiles: "compile start" / "compile end"), each timed run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

STARTED = time.perf_counter()


def progress(message: str) -> None:
    """One line of progress, at once (unbuffered), with the seconds since the process started."""
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {message}", flush=True)

# A request as in inputs.json: {"query": [ids], "items": [[ids], ...]}.
Request = dict
# log-probs of one call: per request, per item, per label.
LogProbs = list


@dataclass
class Method:
    """One way to score. per_call: requests per call (1, or all of the workload's
    requests when batched). call(requests) -> (logprobs, items_done) where
    items_done < the items of the requests only for extrapolated (serial) runs."""

    name: str
    call: Callable[[list], tuple]
    batched: bool = False
    info: dict = field(default_factory=dict)


def parse_args(peer: str, methods: Sequence[str], extra: Callable[[argparse.ArgumentParser], None] | None = None):
    p = argparse.ArgumentParser(description=f"bench:gpu peer ({peer}): scores the inputs' workloads with each method")
    p.add_argument("--model", required=True, help="directory with config.json (Qwen3) and model.safetensors")
    p.add_argument("--inputs", required=True, help="inputs.json: {labels, workloads: {name: {requests}}}")
    p.add_argument("--out", required=True, help="results JSON file (a list of rows), rewritten after each method")
    p.add_argument("--workloads", default="target,pr", help="comma-separated workload names (default target,pr)")
    p.add_argument("--methods", default=",".join(methods), help=f"comma-separated, of {','.join(methods)}")
    p.add_argument("--dtype", choices=["bf16", "f32"], default="bf16", help="weights and activations")
    p.add_argument("--precision", choices=["highest", "default"], default="default",
                   help="f32 dots: highest = true f32, default = what the platform does fast (TF32 on NVIDIA)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs of each workload first (compiles)")
    p.add_argument("--repeats", type=int, default=10, help="timed runs of each workload")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: cuda when present")
    p.add_argument("--gate", default=None,
                   help="a file to wait for after the warm-up and before the timed runs, so a long compile "
                        "can overlap other work that must have the device to itself while it is timed")
    p.add_argument("--only", default="",
                   help="comma-separated workload:method pairs to run, of those --workloads and --methods name "
                        "(default: every method on every workload)")
    if extra:
        extra(p)
    a = p.parse_args()
    pairs = [x.split(":", 1) for x in a.only.split(",") if x]
    bad = [":".join(x) for x in pairs if len(x) != 2 or x[1] not in methods]
    if bad:
        p.error(f"--only takes workload:method pairs with methods of {list(methods)}, got {bad}")
    a.only = {(w, m) for w, m in pairs}
    a.workloads = [w for w in a.workloads.split(",") if w]
    a.methods = [m for m in a.methods.split(",") if m]
    unknown = [m for m in a.methods if m not in methods]
    if unknown:
        p.error(f"unknown method(s) {unknown}; this peer has {list(methods)}")
    if a.warmup < 1 or a.repeats < 1:
        p.error("--warmup and --repeats must be at least 1 (the first call compiles)")
    return a


def load_inputs(path: str, names: Sequence[str]) -> tuple[list[int], dict]:
    with open(path) as f:
        data = json.load(f)
    labels = data["labels"]
    missing = [n for n in names if n not in data["workloads"]]
    if missing:
        raise SystemExit(f"{path} has no workload(s) {missing}; it has {list(data['workloads'])}")
    return labels, {n: data["workloads"][n]["requests"] for n in names}


def load_config(model_dir: str) -> dict:
    with open(f"{model_dir}/config.json") as f:
        c = json.load(f)
    if c.get("model_type") != "qwen3":
        raise SystemExit(f"{model_dir}/config.json: model_type is {c.get('model_type')!r}, these peers run qwen3")
    if not c.get("tie_word_embeddings", False):
        raise SystemExit(f"{model_dir}/config.json: these peers expect tie_word_embeddings true (LM head = embedding)")
    return c


@dataclass
class Packed:
    """Requests laid out as one sequence: each request's query, then its items.
    item is a global item index (-1 for query tokens and padding); req is the
    request's index (-1 for padding). Token i sees token j iff
        req[i] == req[j] and j <= i and (item[j] < 0 or item[j] == item[i])
    i.e. causal within a query, and an item sees its own query and itself
    causally, never another item or another request. Padding tokens see only
    padding, so no row is empty. rows: each item's last token, in order."""

    ids: np.ndarray
    pos: np.ndarray
    req: np.ndarray
    item: np.ndarray
    rows: np.ndarray
    items_per_request: list


def pack(requests: list, pad_to: int = 1) -> Packed:
    ids, pos, req, item, rows = [], [], [], [], []
    n_item = 0
    for r, rq in enumerate(requests):
        q = rq["query"]
        ids += q
        pos += range(len(q))
        req += [r] * len(q)
        item += [-1] * len(q)
        for it in rq["items"]:
            ids += it
            pos += range(len(q), len(q) + len(it))
            req += [r] * len(it)
            item += [n_item] * len(it)
            rows.append(len(ids) - 1)
            n_item += 1
    pad = (-len(ids)) % pad_to
    ids += [0] * pad
    pos += [0] * pad
    req += [-1] * pad
    item += [-1] * pad
    i32 = lambda a: np.asarray(a, dtype=np.int32)
    return Packed(i32(ids), i32(pos), i32(req), i32(item), i32(rows), [len(rq["items"]) for rq in requests])


def split_rows(flat: np.ndarray, items_per_request: list) -> LogProbs:
    """[items, labels] -> per request, per item, per label (plain floats)."""
    out, at = [], 0
    for n in items_per_request:
        out.append(flat[at:at + n].astype(np.float64).tolist())
        at += n
    return out


def percentile(values: list, p: float) -> float:
    """Nearest rank: the smallest value with at least p% of values at or below it."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def wait_for_gate(gate: str | None) -> None:
    """Waits until `gate` exists (no gate: returns at once), saying when the wait began and ended."""
    if not gate:
        return
    print(f"warm-up done at {time.time():.1f}; waiting for {gate}", flush=True)
    while not os.path.exists(gate):
        time.sleep(0.2)
    print(f"gate open at {time.time():.1f}", flush=True)


def time_method(method: Method, requests: list, warmup: int, repeats: int, sync: Callable[[], None],
                gate: str | None = None) -> dict:
    units = [requests] if method.batched else [[r] for r in requests]
    total_items = sum(len(r["items"]) for r in requests)
    t0 = time.perf_counter()
    for w in range(warmup):
        tw = time.perf_counter()
        progress(f"{method.name}: warm-up {w + 1}/{warmup}" + (" (compile start)" if w == 0 else ""))
        for u in units:
            method.call(u)
        sync()
        progress(f"{method.name}: warm-up {w + 1}/{warmup} done in {time.perf_counter() - tw:.1f} s"
                 + (" (compile end)" if w == 0 else ""))
    warmup_s = time.perf_counter() - t0
    wait_for_gate(gate)
    call_ms, pass_ms, logprobs, extrapolated = [], [], None, None
    for rep in range(repeats):
        pass_logprobs, t_pass = [], 0.0
        for u in units:
            sync()
            t0 = time.perf_counter()
            lp, done = method.call(u)
            sync()
            ms = (time.perf_counter() - t0) * 1000
            want = sum(len(r["items"]) for r in u)
            if done < want:  # a subset was timed: scale to the whole call
                ms *= want / done
                extrapolated = done
            call_ms.append(ms)
            t_pass += ms
            pass_logprobs += lp
        pass_ms.append(t_pass)
        logprobs = pass_logprobs
        progress(f"{method.name}: timed run {rep + 1}/{repeats}: {t_pass:.2f} ms for {total_items} items")
    median = statistics.median(pass_ms)
    row = {
        "items_per_s": total_items / (median / 1000),
        "median_ms": median,
        "p50_ms": percentile(call_ms, 50),
        "p99_ms": percentile(call_ms, 99),
        "requests_per_call": len(units[0]),
        "calls_timed": len(call_ms),
        "warmup_s": warmup_s,  # compiles included
        "logprobs": logprobs,
    }
    if extrapolated is not None:
        row["extrapolated_from_items"] = extrapolated
        row["note"] = (f"timed on the first {extrapolated} items of each request, "
                       f"latency and items/s scaled to all items")
    return row


def write_rows(path: str, rows: list) -> None:
    with open(path, "w") as f:
        json.dump(rows, f)


def run_peer(peer: str, args, labels: list, workloads: dict, make_methods: Callable[[str, list], list],
             versions: dict, sync: Callable[[], None], info: dict) -> list:
    """For each workload and method: warm up, time, record; errors become rows."""
    rows = []
    progress(f"{peer}: ready ({versions.get('gpu') or versions.get('cpu') or versions.get('device')}); "
             f"methods {','.join(args.methods)} on {','.join(workloads)}")
    for wname, requests in workloads.items():
        methods = {m.name: m for m in make_methods(wname, requests)}
        for mname in args.methods:
            base = {"peer": peer, "method": mname, "workload": wname, "dtype": args.dtype,
                    "precision": args.precision, **info}
            if getattr(args, "only", None) and (wname, mname) not in args.only:
                continue
            method = methods.get(mname)
            if method is None:
                print(f"{peer:5} {mname:8} {wname:7} skipped: not a method for this workload", flush=True)
                continue
            progress(f"{peer} {mname} {wname}: start")
            try:
                row = {**base, **time_method(method, requests, args.warmup, args.repeats, sync, args.gate)}
                row.update(method.info)  # filled in during the run (e.g. which attention ran)
                extra = f" (extrapolated from {row['extrapolated_from_items']} items)" if "extrapolated_from_items" in row else ""
                print(f"{peer:5} {mname:8} {wname:7} {args.dtype} {row['items_per_s']:10.1f} items/s  "
                      f"median {row['median_ms']:.2f} ms  p50 {row['p50_ms']:.2f} ms  p99 {row['p99_ms']:.2f} ms  "
                      f"{row['requests_per_call']} req/call  warm-up {row['warmup_s']:.1f} s{extra}", flush=True)
            except Exception as e:  # one method failing must not stop the others
                row = {**base, "error": f"{type(e).__name__}: {e}".strip()[:2000]}
                print(f"{peer:5} {mname:8} {wname:7} ERROR {row['error'].splitlines()[0]}", flush=True)
                traceback.print_exc(file=sys.stderr)
            row["versions"] = versions
            rows.append(row)
            write_rows(args.out, rows)
    return rows
