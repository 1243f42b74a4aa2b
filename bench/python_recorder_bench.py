#!/usr/bin/env python3
"""The Python recorder's cost (resources/python/tunebench_record) on a small training step, against the plain
step and beside PyTorch's anomaly mode, alternating per round in one run (same process, same
threads). Models: "mlp" (4 linear layers, batch 64) and "llama" (bench/train_step_bench.py's demo
LLaMA, 2 layers unless --layers, batch 8 x 128). Prints one JSON line per model with the medians and
the ratios to the plain step, of wall time and of the process's CPU time (steadier on a busy
machine; with --threads 1 the added work); the issue's target is recorder_ratio <= anomaly_ratio.

usage: bench/python_recorder_bench.py [--model mlp|llama|both] [--rounds 5] [--steps 4] [--threads N]
                                      [--variants]   (also the recorder without checksums / NaN search)
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "resources", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tunebench_record  # noqa: E402


def make_mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(),
                          nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        x = torch.randn(64, 256)
        y = torch.randint(10, (64,))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def make_llama(layers, batch, seq):
    import train_step_bench as ref
    ref.use_config("demo")
    ref.LAYERS = layers
    torch.manual_seed(0)
    model = ref.Model()
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)

    def step():
        tokens = torch.randint(ref.VOCAB, (batch, seq + 1))
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, ref.VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step


def timed(step, steps, mode, trace):
    """Seconds per step under `mode`: plain, anomaly, recorder, recorder-no-checksums, recorder-no-nan."""
    if mode == "anomaly":
        ctx = torch.autograd.detect_anomaly()
    elif mode.startswith("recorder"):
        ctx = tunebench_record.recording(trace, checksums=mode != "recorder-no-checksums",
                                         nan_check=mode != "recorder-no-nan", quiet_end=True)
    else:
        ctx = contextlib.nullcontext()
    with ctx:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "llama", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--variants", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads or os.cpu_count())
    warnings.simplefilter("ignore")
    modes = ["plain", "recorder", "anomaly"]
    if a.variants:
        modes += ["recorder-no-checksums", "recorder-no-nan"]
    trace = os.path.join(tempfile.gettempdir(), "python_recorder_bench.%d.trace.jsonl" % os.getpid())
    models = ["mlp", "llama"] if a.model == "both" else [a.model]
    for name in models:
        step = make_mlp() if name == "mlp" else make_llama(a.layers, a.batch, a.seq)
        for mode in modes:  # warm up each mode once
            timed(step, 1, mode, trace)
        times = {m: [] for m in modes}
        for _ in range(a.rounds):
            for m in modes:
                times[m].append(timed(step, a.steps, m, trace))
        wall = {m: statistics.median(w for w, _ in v) for m, v in times.items()}
        cpu = {m: statistics.median(c for _, c in v) for m, v in times.items()}
        out = {"model": name, "torch": torch.__version__, "threads": torch.get_num_threads(),
               "rounds": a.rounds, "steps": a.steps, "plain_step_s": round(wall["plain"], 4),
               "plain_cpu_s": round(cpu["plain"], 4)}
        if name == "llama":
            out.update({"layers": a.layers, "batch": a.batch, "seq": a.seq})
        for m in modes[1:]:
            key = m.replace("-", "_")
            out[key + "_ratio"] = round(wall[m] / wall["plain"], 3)
            out[key + "_cpu_ratio"] = round(cpu[m] / cpu["plain"], 3)
        print(json.dumps(out), flush=True)
    if os.path.exists(trace):
        os.unlink(trace)


if __name__ == "__main__":
    main()
