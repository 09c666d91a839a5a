"""Checks the Python peers of bench:gpu: runs each peer in f32 with
--precision highest on every method and workload, and compares every item's
log-probs with a float64 numpy reference that scores one item at a time
(query ++ item, plain causal attention), written here independently of the
peers (its own safetensors reader, its own forward). Every method must be
within --tolerance (1e-4) of the reference and of the peer's other methods.

Before that it shows the inputs can catch a mistake: the reference with
items that see earlier items, and with item positions shifted, must differ
from the right answer by far more than the tolerance.

  python3 scripts/lab/gpu/check_peers.py --model DIR --inputs FILE \
      [--peers torch,jax] [--tolerance 1e-4] [--device cpu|auto|cuda] [--work DIR]
Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = {"torch": ("peer_torch.py", "flex,sdpa,prefix,serial,batch8"), "jax": ("peer_jax.py", "packed,batch8")}


# ---- the reference: float64, one sequence at a time ----------------------------

def read_safetensors_f64(path: str) -> dict:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = np.frombuffer(data[a:b], dtype={"BF16": np.uint16, "F32": np.float32}[t["dtype"]])
        if t["dtype"] == "BF16":  # bf16 is the top half of an f32
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float64).reshape(t["shape"])
    return out


class Reference:
    def __init__(self, model_dir: str, labels: list):
        with open(f"{model_dir}/config.json") as f:
            c = json.load(f)
        self.c, self.w, self.labels = c, read_safetensors_f64(f"{model_dir}/model.safetensors"), labels
        self.H, self.Hkv = c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or c["hidden_size"] // self.H

    def norm(self, x, w):
        return w * x / np.sqrt(np.mean(x * x, -1, keepdims=True) + self.c["rms_norm_eps"])

    def rope(self, x, pos):  # x [T, heads, D]: rotate-half with theta from the config
        half = self.D // 2
        ang = pos[:, None] * self.c["rope_theta"] ** (-np.arange(half) * 2.0 / self.D)
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    def logprobs(self, ids: list, pos: np.ndarray, sees: np.ndarray, rows: list) -> np.ndarray:
        """sees[i, j]: token i attends to token j. -> [rows, labels]."""
        w, T = self.w, len(ids)
        x = w["model.embed_tokens.weight"][ids]
        for l in range(self.c["num_hidden_layers"]):
            p = lambda n: w[f"model.layers.{l}.{n}.weight"]
            h = self.norm(x, p("input_layernorm"))
            q = self.rope(self.norm((h @ p("self_attn.q_proj").T).reshape(T, self.H, self.D), p("self_attn.q_norm")), pos)
            k = self.rope(self.norm((h @ p("self_attn.k_proj").T).reshape(T, self.Hkv, self.D), p("self_attn.k_norm")), pos)
            v = (h @ p("self_attn.v_proj").T).reshape(T, self.Hkv, self.D)
            o = np.empty_like(q)
            for head in range(self.H):
                kv = head * self.Hkv // self.H  # grouped-query: consecutive query heads share a KV head
                s = q[:, head] @ k[:, kv].T / np.sqrt(self.D)
                s = np.where(sees, s, -np.inf)
                e = np.exp(s - s.max(-1, keepdims=True))
                o[:, head] = (e / e.sum(-1, keepdims=True)) @ v[:, kv]
            x = x + o.reshape(T, -1) @ p("self_attn.o_proj").T
            h = self.norm(x, p("post_attention_layernorm"))
            g = h @ p("mlp.gate_proj").T
            x = x + ((g / (1 + np.exp(-g))) * (h @ p("mlp.up_proj").T)) @ p("mlp.down_proj").T
        logits = self.norm(x[rows], w["model.norm.weight"]) @ w["model.embed_tokens.weight"].T
        m = logits.max(-1, keepdims=True)
        lse = m + np.log(np.exp(logits - m).sum(-1, keepdims=True))
        return (logits - lse)[:, self.labels]

    def serial(self, query: list, item: list, shift: int = 0) -> np.ndarray:
        seq = query + item
        pos = np.arange(len(seq), dtype=np.float64)
        pos[len(query):] += shift
        return self.logprobs(seq, pos, np.tril(np.ones((len(seq), len(seq)), bool)), [len(seq) - 1])[0]

    def items_see_each_other(self, query: list, items: list) -> np.ndarray:
        """A wrong answer: the items of a request in one plain causal sequence."""
        seq = query + sum(items, [])
        pos = np.concatenate([np.arange(len(query))] + [len(query) + np.arange(len(it)) for it in items]).astype(np.float64)
        rows = list(np.cumsum([len(it) for it in items]) + len(query) - 1)
        return self.logprobs(seq, pos, np.tril(np.ones((len(seq), len(seq)), bool)), rows)


# ---- the check ---------------------------------------------------------------

def first_items(per_request: list, counts: list) -> np.ndarray:
    """The first counts[r] items of each request r, as one [items, labels] array."""
    return np.concatenate([np.asarray(q[:n], dtype=np.float64) for q, n in zip(per_request, counts)])


def run_peer(peer: str, a, work: str) -> list:
    script, methods = PEERS[peer]
    out = f"{work}/{peer}.json"
    cmd = [a.python, f"{HERE}/{script}", "--model", a.model, "--inputs", a.inputs, "--out", out,
           "--workloads", ",".join(a.workloads), "--methods", methods, "--dtype", "f32", "--precision", "highest",
           "--warmup", "1", "--repeats", "1", "--device", a.device]
    if peer == "torch":
        cmd += ["--serial-items", "4"]  # the extrapolation path is checked too
    print("$", " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"{peer} peer exited with an error")
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--peers", default="torch,jax")
    p.add_argument("--workloads", default="target,pr")
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--device", default="cpu", choices=["cpu", "auto", "cuda"])
    p.add_argument("--python", default=sys.executable, help="interpreter that runs the peers")
    p.add_argument("--work", default=None, help="where the peers' results go (default: a temporary directory)")
    a = p.parse_args()
    a.workloads = a.workloads.split(",")
    with open(a.inputs) as f:
        inputs = json.load(f)
    ref = Reference(a.model, inputs["labels"])
    failures = []

    want = {}
    for wname in a.workloads:
        want[wname] = [[ref.serial(r["query"], it) for it in r["items"]] for r in inputs["workloads"][wname]["requests"]]
    print(f"reference: float64 serial, {sum(len(x) for w in want.values() for x in w)} items")

    # The inputs must make a masking or position mistake visible.
    r0 = inputs["workloads"][a.workloads[0]]["requests"][0]
    right = np.array(want[a.workloads[0]][0])
    for what, wrong in [("items see earlier items", ref.items_see_each_other(r0["query"], r0["items"])),
                        ("item positions shifted by 1", np.array([ref.serial(r0["query"], it, 1) for it in r0["items"]]))]:
        d = np.abs(wrong - right).max()
        ok = d > 100 * a.tolerance
        print(f"{'ok  ' if ok else 'FAIL'} a mistake shows: {what}: max |diff| {d:.3g} (needs > {100 * a.tolerance:.3g})")
        if not ok:
            failures.append(f"inputs too weak to catch: {what}")

    work = a.work or tempfile.mkdtemp(prefix="check-peers-")
    os.makedirs(work, exist_ok=True)
    for peer in a.peers.split(","):
        rows = run_peer(peer, a, work)
        methods = PEERS[peer][1].split(",")
        for wname in a.workloads:
            got = {r["method"]: r for r in rows if r["workload"] == wname}
            first = None
            for mname in methods:
                r = got.get(mname)
                if r is None:
                    if mname == "batch8" and len(inputs["workloads"][wname]["requests"]) == 1:
                        continue  # batched runs need several requests
                    failures.append(f"{peer} {mname} {wname}: no result")
                    continue
                if "error" in r:
                    failures.append(f"{peer} {mname} {wname}: {r['error']}")
                    print(f"FAIL {peer:5} {mname:7} {wname:7} {r['error'].splitlines()[0]}")
                    continue
                # serial may have scored only the first items of each request: compare those
                if len(r["logprobs"]) != len(want[wname]) or any(len(it) != len(inputs["labels"]) for q in r["logprobs"] for it in q):
                    failures.append(f"{peer} {mname} {wname}: wrong shape")
                    continue
                counts = [len(q) for q in r["logprobs"]]
                lp = first_items(r["logprobs"], counts)
                d_ref = np.abs(lp - first_items(want[wname], counts)).max()
                first = first or (mname, r["logprobs"])
                d_peer = np.abs(lp - first_items(first[1], counts)).max()
                ok = d_ref <= a.tolerance and d_peer <= a.tolerance
                print(f"{'ok  ' if ok else 'FAIL'} {peer:5} {mname:7} {wname:7} {len(lp):4} items  "
                      f"max |diff| to float64 reference {d_ref:.2e}, to {first[0]} {d_peer:.2e}"
                      + (f"  [attention {r['attention']}]" if "attention" in r else ""))
                if not ok:
                    failures.append(f"{peer} {mname} {wname}: {d_ref:.2e} from the reference, {d_peer:.2e} from {first[0]}")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        return 1
    print(f"all methods within {a.tolerance} of the float64 reference and of each other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
