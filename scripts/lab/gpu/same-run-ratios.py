"""The same-run ratios of a prepared GPU run (scripts/lab/gpu/h100-run.sh): per
workload, pjrt-score's best items/s over the best peer's items/s, all from
this run's result files under OUT, printed and written to OUT/ratios.json.

  target  pjrt-score's target rows (packed, prefix) against every bf16 peer
          row of the target workload (FlexAttention whole-forward or
          attention-only, JAX cuDNN)
  pr      pjrt-score's 8-concurrent row against the peers' one-call-for-8
          rows (batch8full, batch8), with pjrt-score's p99

Goals (the GPU run's, docs/gpu.md): target >= 1.5x, pr >= 1.3x with p99 <= 50 ms. A workload
with no pjrt-score row or no peer row says so: no ratio is made up.

  python3 scripts/lab/gpu/same-run-ratios.py OUT [--label main]
"""
import glob
import json
import os
import sys

GOALS = {"target": 1.5, "pr": 1.3}
PR_P99_MS = 50.0


def rows_of(path):
    with open(path) as f:
        data = json.load(f)
    return data["rows"] if isinstance(data, dict) else data


def pjrt_best(out, label, workload):
    best = None
    for path in sorted(glob.glob(os.path.join(out, f"pjrt-*-{label}.json"))):
        config = os.path.basename(path)[len("pjrt-"):-len(f"-{label}.json")]
        for r in rows_of(path):
            if r.get("workload") != workload or not isinstance(r.get("items_per_s"), (int, float)) or r.get("error"):
                continue
            if workload == "target" and r.get("method") not in ("packed", "prefix"):
                continue
            if workload == "pr" and not str(r.get("method", "")).endswith("-concurrent"):
                continue
            if best is None or r["items_per_s"] > best["items_per_s"]:
                best = {"config": config, "method": r["method"], "items_per_s": r["items_per_s"], "p99_ms": r.get("p99_ms")}
    return best


def peer_rows(out, workload):
    found = []
    for path in sorted(glob.glob(os.path.join(out, "peer-*.json"))):
        for r in rows_of(path):
            if r.get("workload") != workload or r.get("dtype") != "bf16" or r.get("error"):
                continue
            if not isinstance(r.get("items_per_s"), (int, float)):
                continue
            if workload == "pr" and (r.get("requests_per_call") or 1) < 2:
                continue  # the PR row compares 8 callers with the peers' 8 requests per call
            found.append({"peer": r.get("peer"), "method": r.get("method"), "items_per_s": r["items_per_s"],
                          "p99_ms": r.get("p99_ms"), "attention": r.get("attention"), "file": os.path.basename(path)})
    return found


def main():
    out = sys.argv[1]
    label = sys.argv[sys.argv.index("--label") + 1] if "--label" in sys.argv else "main"
    result = {}
    print("same-run ratios (pjrt-score / best peer, items/s, both measured in this run):")
    for workload in ("target", "pr"):
        ours, peers = pjrt_best(out, label, workload), peer_rows(out, workload)
        for p in peers:
            print(f"  {workload} peer ran: {p['peer']} {p['method']}{' (' + p['attention'] + ')' if p['attention'] else ''}"
                  f" {p['items_per_s']:.1f} items/s ({p['file']})")
        best = max(peers, key=lambda p: p["items_per_s"]) if peers else None
        entry = {"pjrt_score": ours, "best_peer": best, "peers": peers, "goal": GOALS[workload]}
        name = "pr 8 callers" if workload == "pr" else workload
        if ours is None or best is None:
            missing = "no pjrt-score row" if ours is None else "no peer row"
            entry["ratio"] = None
            print(f"  {name}: NO RATIO ({missing} in this run)")
        else:
            ratio = ours["items_per_s"] / best["items_per_s"]
            entry["ratio"] = ratio
            ok = ratio >= GOALS[workload]
            extra = ""
            if workload == "pr":
                p99 = ours.get("p99_ms")
                ok = ok and p99 is not None and p99 <= PR_P99_MS
                extra = f", p99 {p99:.1f} ms (goal <= {PR_P99_MS:.0f})" if p99 is not None else ", p99 unknown"
            entry["meets_goal"] = ok
            print(f"  {name}: pjrt-score {ours['items_per_s']:.1f} items/s ({ours['config']} {ours['method']}{extra})"
                  f" / {best['peer']} {best['method']} {best['items_per_s']:.1f} = {ratio:.2f}x"
                  f" (goal >= {GOALS[workload]}x: {'met' if ok else 'not met'})")
        result[workload] = entry
    with open(os.path.join(out, "ratios.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
