#!/usr/bin/env python3
"""PyTorch's side of `cargo run --release --example embed -- --bench`: the same workloads,
timed the same way, on the GPU machine (torch, transformers, sentence-transformers installed).

    python3 crates/models/bench/minilm_torch.py [MODEL_DIR] [--iters N]

- batch 128 x 128 tokens, ids to embeddings: the same token rows as the Rust bench (the
  paragraph's word pieces rotated per row between [CLS] and [SEP]); ids on the host, through
  the Transformer, Pooling and Normalize modules, embeddings back on the host. Printed as wall
  time (what the Rust figure is) and as CUDA-event time of the GPU work alone.
- one 16-token sentence, text to embedding: SentenceTransformer.encode([text]).

Medians of N runs after two warm-up runs, eager mode, f32 (TF32 off) and f16 (model.half()).
"""

import os
import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

PARAGRAPH = ("The history of the printing press begins in the fifteenth century, when Johannes "
             "Gutenberg combined movable metal type, oil-based inks and a wooden screw press into a system that "
             "could produce books far faster than scribes. Within fifty years, presses were operating in more "
             "than two hundred cities across Europe, and millions of volumes had been printed. The consequences "
             "were enormous: literacy spread, scientific results could be shared and checked, and pamphlets "
             "reached audiences that no preacher could address in person.")
SHORT = "The quick brown fox jumps over the lazy dog near the quiet river."
BATCH, TOKENS = 128, 128


def token_batch(model):
    ids = model.tokenize([PARAGRAPH])["input_ids"][0].tolist()
    cls, body, sep = ids[0], ids[1:-1], ids[-1]
    rows = [[cls] + [body[(r + j) % len(body)] for j in range(TOKENS - 2)] + [sep] for r in range(BATCH)]
    ids = torch.tensor(rows, dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}


def median_ms(iters, fn):
    fn()
    fn()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    args = [a for a in sys.argv[1:]]
    iters = 20
    if "--iters" in args:
        i = args.index("--iters")
        iters = int(args[i + 1])
        del args[i:i + 2]
    model_dir = args[0] if args else os.path.expanduser("~/.cache/wgrad/models/all-MiniLM-L6-v2")
    torch.backends.cuda.matmul.allow_tf32 = False
    model = SentenceTransformer(model_dir, device="cuda").eval()
    host_batch = token_batch(model)
    rows = []
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        model = model.to(dtype)

        def ids_to_embeddings():
            with torch.inference_mode():
                features = {k: v.to("cuda", non_blocking=False) for k, v in host_batch.items()}
                return model(features)["sentence_embedding"].float().cpu()

        ms = median_ms(iters, ids_to_embeddings)
        rows.append(f"| batch {BATCH} x {TOKENS} tokens, ids to embeddings (wall) | {name} | {ms:.2f} ms | {BATCH / ms * 1e3:.0f} sentences/s |")
        features = {k: v.cuda() for k, v in host_batch.items()}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gpu = []
        with torch.inference_mode():
            for i in range(iters + 2):
                start.record()
                model(features)
                end.record()
                torch.cuda.synchronize()
                if i >= 2:
                    gpu.append(start.elapsed_time(end))
        ms = statistics.median(gpu)
        rows.append(f"| batch {BATCH} x {TOKENS} tokens, GPU work only (CUDA events) | {name} | {ms:.2f} ms | {BATCH / ms * 1e3:.0f} sentences/s |")
        short = len(model.tokenize([SHORT])["input_ids"][0])
        ms = median_ms(iters, lambda: model.encode([SHORT], convert_to_numpy=True))
        rows.append(f"| one {short}-token sentence, text to embedding | {name} | {ms:.3f} ms | {1e3 / ms:.0f} sentences/s |")
    print(f"MiniLM-L6 (all-MiniLM-L6-v2) in PyTorch {torch.__version__} eager on {torch.cuda.get_device_name()}, median of {iters} runs")
    print("| workload | dtype | time | throughput |\n| --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
