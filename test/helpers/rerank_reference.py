"""The rerankers' reference code, run on a model directory: token ids and
scores for (query, document) pairs, float32 weights, in one process.

    python3 rerank_reference.py < jobs.json > results.json

jobs: {"qwen3": [{"dir", "query", "documents", "instruction"|null}],
       "mxbai": [{"dir", "query", "documents", "instruction"|null}],
       "bge": [{"dir", "query", "documents", "instruction"|null, "normalize"}]}

qwen3: the Qwen3-Reranker model card's transformers code (prefix, suffix,
       format_instruction, yes/no log-softmax), one pair per forward.
mxbai: the mxbai-rerank package's MxbaiRerankV2: prepare_inputs for the ids,
       predict() for the scores (the "1" minus "0" logit; all pairs in one
       left-padded batch, as the package runs them).
bge:   FlagEmbedding's FlagLLMReranker (BaseLLMReranker, the class its
       decoder_only package names FlagLLMReranker): compute_score() for the
       scores (the raw "Yes" logit; sigmoid with normalize), its prompt
       (instruction) as `prompt`; the ids are the tokens its model receives
       where the attention mask is 1, read from the model's forward, one
       pair per call (its collator pads even one pair to a multiple of 8). Only the modules the reranker
       needs are imported (the package's __init__ imports its fine-tuning
       code, whose dependencies the reranker does not use); peft, which it
       imports for an adapter it is not given, is a stand-in module.
results: {"qwen3": [{"ids": [[...]], "scores": [...]}], "mxbai": [...], "bge": [...]}
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

QWEN3_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def qwen3(job):
    tokenizer = AutoTokenizer.from_pretrained(job["dir"], padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(job["dir"], dtype=torch.float32).eval()
    no_id = tokenizer.convert_tokens_to_ids("no")
    yes_id = tokenizer.convert_tokens_to_ids("yes")
    prefix = tokenizer.encode(QWEN3_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(QWEN3_SUFFIX, add_special_tokens=False)
    instruction = job["instruction"] or "Given a web search query, retrieve relevant passages that answer the query"
    ids, scores = [], []
    for doc in job["documents"]:
        text = f"<Instruct>: {instruction}\n<Query>: {job['query']}\n<Document>: {doc}"
        body = tokenizer([text], padding=False, truncation="longest_first", return_attention_mask=False, max_length=8192 - len(prefix) - len(suffix))["input_ids"][0]
        seq = prefix + body + suffix
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([seq])).logits[0, -1]
        pair = torch.log_softmax(torch.stack([logits[no_id], logits[yes_id]]).to(torch.float64), dim=0)
        ids.append(seq)
        scores.append(float(pair[1].exp()))
    return {"ids": ids, "scores": scores}


def mxbai(job):
    from mxbai_rerank import MxbaiRerankV2

    # device=None: no device_map, so transformers does not need accelerate; the model stays on the CPU.
    reranker = MxbaiRerankV2(job["dir"], device=None, torch_dtype=torch.float32)
    queries = [job["query"]] * len(job["documents"])
    inputs = reranker.prepare_inputs(queries, job["documents"], instruction=job["instruction"])
    ids = [[int(t) for t, m in zip(row, mask) if m] for row, mask in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist())]
    scores = reranker.predict(queries, job["documents"], instruction=job["instruction"])
    return {"ids": ids, "scores": [float(s) for s in scores.tolist()], "dtype": str(reranker.model.dtype)}


def flag_llm_reranker():
    """FlagEmbedding's FlagLLMReranker, its package __init__ files (which import everything) not run."""
    import importlib
    import importlib.util
    import os
    import types

    root = importlib.util.find_spec("FlagEmbedding").submodule_search_locations[0]
    for name in ["FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.reranker", "FlagEmbedding.inference.reranker.decoder_only"]:
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules[name] = module
    peft = types.ModuleType("peft")
    peft.PeftModel = None  # used only with peft_path
    sys.modules["peft"] = peft
    return importlib.import_module("FlagEmbedding.inference.reranker.decoder_only.base").BaseLLMReranker


def bge(job, reranker_class):
    reranker = reranker_class(job["dir"], use_fp16=False, devices=["cpu"], batch_size=1)
    seen = []
    forward = reranker.model.forward

    def recording(*args, **kwargs):
        # The collator pads to a multiple of 8: the pair is where the mask is 1.
        seen.append([int(t) for t, m in zip(kwargs["input_ids"][0].tolist(), kwargs["attention_mask"][0].tolist()) if m])
        return forward(*args, **kwargs)

    reranker.model.forward = recording
    options = {"normalize": job["normalize"], **({"prompt": job["instruction"]} if job["instruction"] is not None else {})}
    ids, scores = [], []
    for doc in job["documents"]:
        # One pair per call: its last forward is the pair's sequence.
        scores.extend(float(s) for s in reranker.compute_score([job["query"], doc], **options))
        ids.append(seen[-1])
    return {"ids": ids, "scores": scores, "dtype": str(reranker.model.dtype), "yes": int(reranker.yes_loc)}


def main():
    jobs = json.load(sys.stdin)
    out = {"qwen3": [qwen3(j) for j in jobs.get("qwen3", [])], "mxbai": [mxbai(j) for j in jobs.get("mxbai", [])]}
    if jobs.get("bge"):
        reranker_class = flag_llm_reranker()
        out["bge"] = [bge(j, reranker_class) for j in jobs["bge"]]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
