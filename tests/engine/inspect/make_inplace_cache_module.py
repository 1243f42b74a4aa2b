#!/usr/bin/env python3
"""Writes the TorchScript module with an in-place KV-cache bug that test_inspect diagnoses, its
inputs, and what PyTorch itself says when backward runs on it (a plain first call).

    usage: make_inplace_cache_module.py OUT_DIR
    writes OUT_DIR/inplace_cache.pt, inplace_cache_inputs.pt, inplace_cache_expected.json, two_inputs.pt
The checked-in copies in tests/data/inspect/ were made by this script (python3-torch 1.13)."""
import json
import math
import sys

import torch


class CacheAttention(torch.nn.Module):
    """Meta's LLaMA reference attention, tiny: a preallocated cache written in place."""

    def __init__(self, dim: int = 8, heads: int = 2, max_seq: int = 8):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.wq = torch.nn.Linear(dim, dim, bias=False)
        self.wk = torch.nn.Linear(dim, dim, bias=False)
        self.wv = torch.nn.Linear(dim, dim, bias=False)
        self.register_buffer("cache_k", torch.zeros(1, max_seq, heads, dim // heads))
        self.register_buffer("cache_v", torch.zeros(1, max_seq, heads, dim // heads))

    def forward(self, x: torch.Tensor, start_pos: int) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.heads, self.head_dim)
        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv
        keys = self.cache_k[:bsz, : start_pos + seqlen]
        values = self.cache_v[:bsz, : start_pos + seqlen]
        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, values)
        return out.transpose(1, 2).reshape(bsz, seqlen, -1)


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = CacheAttention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Incremental decoding under autograd: one position per call.
        outs = []
        for t in range(x.size(1)):
            outs.append(self.attention(x[:, t : t + 1], t))
        return torch.cat(outs, 1)

    @torch.jit.export
    def positions(self, x: torch.Tensor) -> int:
        """Returns no tensor: `--method positions` must be refused."""
        return x.size(1)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    scripted = torch.jit.script(Decoder())
    scripted.save(f"{out}/inplace_cache.pt")
    inputs = [torch.randn(1, 3, 8)]
    torch.save(inputs, f"{out}/inplace_cache_inputs.pt")
    # Bad input for the tests: two tensors for a forward that takes one.
    torch.save([torch.randn(1, 3, 8), torch.randn(1, 3, 8)], f"{out}/two_inputs.pt")
    fresh = torch.jit.load(f"{out}/inplace_cache.pt")
    error = ""
    try:
        fresh(*inputs).sum().backward()
    except RuntimeError as e:
        error = str(e)
    with open(f"{out}/inplace_cache_expected.json", "w") as f:
        json.dump({"pytorch_error": error, "torch": torch.__version__}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
