"""The PyTorch CPU peer of the shapes table and of the models section
(docs/performance.md, "The PyTorch peer"): one workload's requests scored with
torch and transformers on the same GGUF file or Hugging Face directory, written
the way a skilled engineer would write it:

- the weights: from a GGUF, transformers' own GGUF reader (gguf-py dequantizes
  to f32, transformers undoes llama.cpp's q/k row order) into the model its
  config builds; from a directory, from_pretrained in the precision's dtype;
  SDPA attention, eval and inference mode;
- the query once, with its KV cache (the model's own DynamicCache);
- all items in one batch against that cache: each layer's cached keys and
  values an expanded view over the items (stride 0, no copy of the query's
  K/V per item), the items right-padded to the longest, a padding mask;
- the last hidden state at each item's last token only, then the LM head on
  those rows alone: the label rows when the request asks for apply_softmax
  (softmax over the labels), else the full rows (log_softmax over the
  vocabulary, as pjrt-score computes it), gathered at the labels;
- f32 and bf16 (weights and activations in bf16), torch threads = the cores.

Reads one JSON object on stdin:
  { "model": GGUF path or HF directory, "threads": n, "precisions": ["f32", "bf16"],
    "warm": request, "timed": request or [requests], "reference": scores of `timed` (of its first) (ours, f32) | null,
    "gate": { "f32": {"max": .., "mean": .., "relative": ..}, "bf16": {"max": .., "mean": ..} } }
a request: { "query": [ids], "items": [[ids]], "labelTokenIds": [ids], "applySoftmax": bool }.

Before any time counts, `timed` is scored in each precision and its label
probabilities compared with `reference`; outside the gate the script exits 2
and says so. Then per precision: `warm` once (untimed; null: the check's call
was the warm-up), then `timed` three times (a list: each of its requests
once), timed, the median kept.
Writes one JSON line: { torch, transformers, threads, load_seconds, peak_rss_bytes,
precisions: {p: {seconds, all_seconds, load_seconds, max_diff, mean_diff, max_relative_diff}} }
(peak_rss_bytes: the process's, all its precisions' models together; one precision per
process gives each its own).
"""
import json
import os
import resource
import sys
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint


# The timed request is run this many times and the median kept: torch's OpenMP threads lose far more
# than XLA's pool to a moment of a shared machine's load (a 0.9 s request once took 13 s), so the
# peer gets its typical time, not its unlucky one; our side is timed once.
TIMED_RUNS = 3


def load_dir(path, dtype):
    """A Hugging Face directory (config.json, model.safetensors) straight into `dtype`."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa").eval()
    checkpoint_normalizer(model, path, dtype)
    return model


def checkpoint_normalizer(model, path, dtype):
    """Gemma scales its embeddings by sqrt(hidden), which transformers rounds to the dtype it runs in: 45.25 for a
    bf16 run of hidden 2048, 45.2548 for an f32 one. pjrt-score rounds it to the checkpoint's dtype in every
    precision (as transformers' run of the checkpoint in its own dtype does), so an f32 run of a 16-bit Gemma
    checkpoint is given the checkpoint's factor: a hook scales the embeddings by the two roundings' ratio."""
    if not model.config.model_type.startswith("gemma"):
        return
    with open(os.path.join(path, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    stored = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}[header["model.embed_tokens.weight"]["dtype"]]
    hidden = model.config.hidden_size
    ratio = torch.tensor(hidden**0.5, dtype=stored).item() / torch.tensor(hidden**0.5, dtype=dtype).item()
    if ratio != 1.0:
        model.model.embed_tokens.register_forward_hook(lambda _module, _inputs, out: out * ratio)


def load(path):
    """The GGUF through transformers' own reader (config, dequantized tensors with HF names), into the
    model built from that config (from_pretrained(gguf_file=...) would need accelerate, for nothing here)."""
    folder, name = os.path.split(os.path.abspath(path))
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=torch.float32)
    tensors = load_gguf_checkpoint(path, return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise SystemExit(f"the GGUF's tensors do not fill the model: missing {sorted(set(missing) - tied)}, unexpected {sorted(unexpected)}")
    if tied:
        model.tie_weights()
    return model.eval()


def _read_only_update(layer):
    keys, values = layer.keys, layer.values

    def update(key_states, value_states, *args, **kwargs):
        return torch.cat([keys, key_states], dim=-2), torch.cat([values, value_states], dim=-2)

    return update


def score(model, request):
    """Label probabilities [items][labels] of one request (see the module's docstring)."""
    dtype = next(model.parameters()).dtype
    query = torch.tensor([request["query"]], dtype=torch.long)
    items = request["items"]
    labels = torch.tensor(request["labelTokenIds"], dtype=torch.long)
    n = len(items)
    lengths = torch.tensor([len(x) for x in items], dtype=torch.long)
    width = int(lengths.max())
    P = query.shape[1]
    ids = torch.zeros((n, width), dtype=torch.long)
    for i, x in enumerate(items):
        ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
    with torch.inference_mode():
        prefix = model.model(input_ids=query, use_cache=True)
        cache = prefix.past_key_values
        # The query's K/V once, seen by every item: an expanded view (stride 0 over the items). Each
        # layer's update returns the query's K/V then the items' (what attention needs) without keeping
        # them: kept, 30 layers of [items, heads, P + L, D] would not fit the target's 500 items.
        for layer in cache.layers:
            layer.keys = layer.keys.expand(n, -1, -1, -1)
            layer.values = layer.values.expand(n, -1, -1, -1)
            layer.update = _read_only_update(layer)
        mask = torch.cat([torch.ones((n, P), dtype=torch.long), (torch.arange(width)[None, :] < lengths[:, None]).long()], dim=1)
        positions = torch.arange(P, P + width, dtype=torch.long)[None, :].expand(n, -1)
        out = model.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            cache_position=torch.arange(P, P + width, dtype=torch.long),
            use_cache=True,
        )
        last = out.last_hidden_state[torch.arange(n), lengths - 1]  # [n, hidden], already normed
        weight = model.lm_head.weight
        if request.get("applySoftmax"):
            logits = last @ weight[labels].T  # the label rows alone
            probs = torch.softmax(logits.float(), dim=-1)
        else:
            logprobs = torch.log_softmax((last @ weight.T).float(), dim=-1)
            probs = logprobs[:, labels].exp()
    return probs.to(torch.float64).tolist()


def diffs(a, b):
    """max and mean |a - b|, and the largest |a - b| / b (the random-token workloads' probabilities are small)."""
    pairs = [(x, y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)]
    d = [abs(x - y) for x, y in pairs]
    return max(d), sum(d) / len(d), max(abs(x - y) / max(abs(y), 1e-300) for x, y in pairs)


def main():
    job = json.load(sys.stdin)
    threads = int(job["threads"])
    torch.set_num_threads(threads)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    for p in job["precisions"]:
        if p not in dtypes:
            raise SystemExit(f"unknown precision {p!r}: f32 or bf16")
    models = {}
    loads = {}
    for p in job["precisions"]:
        t0 = time.perf_counter()
        if os.path.isdir(job["model"]):
            models[p] = load_dir(job["model"], dtypes[p])
        else:
            models[p] = load(job["model"]).to(dtypes[p])
        loads[p] = time.perf_counter() - t0
    timed = job["timed"] if isinstance(job["timed"], list) else [job["timed"]] * TIMED_RUNS
    first = next(iter(loads.values()))
    result = {"torch": torch.__version__, "transformers": transformers.__version__, "threads": threads, "load_seconds": first, "precisions": {}}
    # The check, before any time counts: each precision's probabilities on the timed request against ours.
    for p, model in models.items():
        got = score(model, timed[0])
        entry = {}
        if job.get("reference") is not None:
            mx, mean, rel = diffs(got, job["reference"])
            gate = job["gate"][p]
            entry = {"max_diff": mx, "mean_diff": mean, "max_relative_diff": rel}
            if not (mx <= gate["max"] and mean <= gate["mean"] and rel <= gate.get("relative", float("inf"))):
                print(f"the PyTorch peer ({p}) disagrees with pjrt-score: max |diff| {mx:.3g} (gate {gate['max']}), mean {mean:.3g} (gate {gate['mean']}), max relative {rel:.3g} (gate {gate.get('relative')})", file=sys.stderr)
                sys.exit(2)
        entry["load_seconds"] = loads[p]
        result["precisions"][p] = entry
    for p, model in models.items():
        if job.get("warm") is not None:  # null: the check's call was the warm-up
            score(model, job["warm"])
        times = []
        for request in timed:
            t1 = time.perf_counter()
            score(model, request)
            times.append(time.perf_counter() - t1)
        result["precisions"][p]["seconds"] = sorted(times)[len(times) // 2]
        result["precisions"][p]["all_seconds"] = times
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
