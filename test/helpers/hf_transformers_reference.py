"""transformers itself as the reference (torch, float32 weights), for the
tests that check how a model directory is read: one process does every job of
a test file.

    python3 hf_transformers_reference.py < jobs.json > results.json

jobs: {"save":    [{"src": dir, "dst": dir}]        load with AutoModelForCausalLM,
                                                     save_pretrained (config.json as
                                                     this transformers writes it)
       "rope":    [{"dir": dir, "positions": [p]}]  transformers' own RoPE init function
                                                     (ROPE_INIT_FUNCTIONS, or the default
                                                     one) for the config, run in float64:
                                                     inverse frequencies, attention factor,
                                                     cos and sin [P, D/2] times the factor
       "forward": [{"dir": dir, "sequences": [[ids]], "labels": [ids]}]
                                                     log-probabilities of the labels after each
                                                     sequence's last token (log-softmax over the
                                                     whole vocabulary), float32 forward}
results: {"save": [config.json as written], "rope": [...], "forward": [[[p]]]}
"""
import importlib
import json
import math
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers import modeling_rope_utils as rope_utils


class _Float64Torch:
    """torch with torch.float (and float32) meaning float64, so the RoPE functions,
    which ask for float32 by name, compute in float64."""

    float = torch.float64
    float32 = torch.float64

    def __getattr__(self, name):
        return getattr(torch, name)


def rope(job):
    config = AutoConfig.from_pretrained(job["dir"])
    params = config.rope_parameters or {}
    if isinstance(params.get("full_attention"), dict):
        params = params["full_attention"]
    rope_type = params.get("rope_type", "default")
    if rope_type == "default":
        # The default function lives on the model's own rotary-embedding class.
        module = importlib.import_module(f"transformers.models.{config.model_type}.modeling_{config.model_type}")
        cls = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding"))
        fn = cls.compute_default_rope_parameters
    else:
        module = rope_utils
        fn = rope_utils.ROPE_INIT_FUNCTIONS[rope_type]
    saved = (rope_utils.torch, module.torch)
    rope_utils.torch = module.torch = _Float64Torch()
    try:
        inv_freq, attention_factor = fn(config, device="cpu")
    finally:
        rope_utils.torch, module.torch = saved
    inv_freq = inv_freq.to(torch.float64)
    positions = torch.tensor(job["positions"], dtype=torch.float64)
    angles = torch.outer(positions, inv_freq)
    return {
        "ropeType": rope_type,
        "dtype": str(inv_freq.dtype),
        "inverse": inv_freq.tolist(),
        "attentionFactor": float(attention_factor),
        "cos": (torch.cos(angles) * attention_factor).tolist(),
        "sin": (torch.sin(angles) * attention_factor).tolist(),
    }


def forward(job):
    model = AutoModelForCausalLM.from_pretrained(job["dir"], dtype=torch.float32)
    model.eval()
    out = []
    with torch.no_grad():
        for seq in job["sequences"]:
            logits = model(input_ids=torch.tensor([seq])).logits[0, -1].to(torch.float64)
            logprobs = torch.log_softmax(logits, dim=-1)
            out.append([float(logprobs[i]) for i in job["labels"]])
    return out


def save(job):
    model = AutoModelForCausalLM.from_pretrained(job["src"], dtype=torch.float32)
    model.save_pretrained(job["dst"])
    with open(f"{job['dst']}/config.json") as f:
        return json.load(f)


def main():
    jobs = json.load(sys.stdin)
    torch.manual_seed(0)
    result = {"transformers": transformers.__version__, "torch": torch.__version__}
    result["save"] = [save(j) for j in jobs.get("save", [])]
    result["rope"] = [rope(j) for j in jobs.get("rope", [])]
    result["forward"] = [forward(j) for j in jobs.get("forward", [])]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
