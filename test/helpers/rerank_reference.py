"""The rerankers' reference code, run on a model directory: token ids and
scores for (query, document) pairs, float32 weights, in one process.

    python3 rerank_reference.py < jobs.json > results.json

jobs: {"qwen3": [{"dir", "query", "documents", "instruction"|null}],
       "mxbai": [{"dir", "query", "documents", "instruction"|null}]}

qwen3: the Qwen3-Reranker model card's transformers code (prefix, suffix,
       format_instruction, yes/no log-softmax), one pair per forward.
mxbai: the mxbai-rerank package's MxbaiRerankV2: prepare_inputs for the ids,
       predict() for the scores (the "1" minus "0" logit; all pairs in one
       left-padded batch, as the package runs them).
results: {"qwen3": [{"ids": [[...]], "scores": [...]}], "mxbai": [...]}
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


def main():
    jobs = json.load(sys.stdin)
    json.dump({"qwen3": [qwen3(j) for j in jobs.get("qwen3", [])], "mxbai": [mxbai(j) for j in jobs.get("mxbai", [])]}, sys.stdout)


if __name__ == "__main__":
    main()
