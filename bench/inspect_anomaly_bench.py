#!/usr/bin/env python3
"""PyTorch's anomaly mode on the same demo-model step as bench/train_step_bench.py, against the plain
step, alternating per round in one run: the comparison for bench/inspect_step_bench.cpp. Prints one
JSON line with the medians and the ratio."""
import argparse, contextlib, json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch.nn.functional as F
import train_step_bench as ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(0)
    model = ref.Model()
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)

    def step(anomaly):
        tokens = torch.randint(ref.VOCAB, (a.batch, a.seq + 1))
        opt.zero_grad()
        with torch.autograd.detect_anomaly() if anomaly else contextlib.nullcontext():
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, ref.VOCAB), tokens[:, 1:].reshape(-1))
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def timed(anomaly):
        start = time.perf_counter()
        for _ in range(a.steps):
            step(anomaly)
        return (time.perf_counter() - start) / a.steps

    import warnings
    warnings.simplefilter("ignore")
    step(False), step(True)
    plain, anomaly = [], []
    for _ in range(a.rounds):
        plain.append(timed(False))
        anomaly.append(timed(True))
    p, q = statistics.median(plain), statistics.median(anomaly)
    print(json.dumps({"impl": "python", "threads": torch.get_num_threads(), "plain_step_s": round(p, 4),
                      "anomaly_step_s": round(q, 4), "anomaly_ratio": round(q / p, 3)}))


if __name__ == "__main__":
    main()
