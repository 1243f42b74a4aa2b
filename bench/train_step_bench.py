#!/usr/bin/python3
"""The demo LLaMA model and training step written directly in PyTorch (python3-torch 1.13),
as a Python user would (LoRA as PEFT applies it: frozen base, A and B in float32, dropout on the
input, scale alpha / r): the reference for bench/train_step_bench.cpp. Prints one JSON line."""
import argparse, json, math, time
import torch
import torch.nn as nn
import torch.nn.functional as F

# The engine's demoConfig() (engine/model/llamaconfig.cpp) and the ~30 M configs of train_step_bench.cpp:
# (vocab, hidden, intermediate, layers, heads, kv heads); qwen3-30m adds Qwen3's per-head RMSNorm of q and
# k (over head_dim, after the projection, before rotary), GQA, rope_theta 1e6 and rms_norm_eps 1e-6.
# gemma3-30m is Gemma 3's text layer at that size: RMSNorm x * (1 + w), embeddings times sqrt(hidden), GeGLU
# with the tanh GELU, four norms per layer, q/k norms, scores scaled by query_pre_attn_scalar^-0.5 (= head_dim),
# five sliding layers (window 64, rotary base 1e4) to one full layer (base 1e6), as transformers' Gemma 3.
CONFIGS = {"demo": (2048, 192, 512, 4, 6, 2), "30m": (8192, 512, 1376, 8, 8, 8),
           "qwen3-30m": (8192, 512, 1376, 8, 8, 4), "gemma3-30m": (8192, 512, 1376, 8, 8, 4)}
QWEN3, GEMMA3 = {"qwen3-30m"}, {"gemma3-30m"}
GEMMA_WINDOW, GEMMA_PATTERN, GEMMA_LOCAL_THETA = 64, 6, 10000.0
VOCAB, HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = CONFIGS["demo"]
EPS, THETA, QK_NORM, GEMMA = 1e-5, 10000.0, False, False
HEAD_DIM = HIDDEN // HEADS


def use_config(name):
    global VOCAB, HIDDEN, INTER, LAYERS, HEADS, KV_HEADS, HEAD_DIM, EPS, THETA, QK_NORM, GEMMA
    VOCAB, HIDDEN, INTER, LAYERS, HEADS, KV_HEADS = CONFIGS[name]
    HEAD_DIM = HIDDEN // HEADS
    EPS, THETA, QK_NORM = (1e-6, 1e6, True) if name in QWEN3 | GEMMA3 else (1e-5, 10000.0, False)
    GEMMA = name in GEMMA3


class LoraLinear(nn.Module):
    """peft.tuners.lora.Linear: result = base(x) + lora_B(lora_A(dropout(x))) * scaling."""

    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.dropout = nn.Dropout(dropout)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim) if GEMMA else torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        if GEMMA:  # weight stored as an offset from 1, applied in float32
            return (normed * (1.0 + self.weight.float())).to(x.dtype)
        return self.weight * normed.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
        if QK_NORM:
            self.q_norm, self.k_norm = RMSNorm(HEAD_DIM), RMSNorm(HEAD_DIM)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, HEADS, HEAD_DIM)
        k = self.k_proj(x).view(b, t, KV_HEADS, HEAD_DIM)
        if QK_NORM:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v_proj(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(HEAD_DIM) + mask  # gemma3: scalar = head_dim
        probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, HIDDEN)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False)

    def forward(self, x):
        if GEMMA:
            return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.mlp = Attention(), MLP()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(HIDDEN), RMSNorm(HIDDEN)
        if GEMMA:
            self.pre_feedforward_layernorm, self.post_feedforward_layernorm = RMSNorm(HIDDEN), RMSNorm(HIDDEN)

    def forward(self, x, cos, sin, mask):
        if GEMMA:  # norms before and after attention and the MLP
            x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin, mask))
            return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.norm = RMSNorm(HIDDEN)

    def forward(self, ids):
        t = ids.shape[1]

        def rotary(theta):
            inv = 1.0 / (theta ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
            freqs = torch.outer(torch.arange(t).float(), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos(), emb.sin()

        cos, sin = rotary(THETA)
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        if GEMMA:
            x = x * torch.tensor(HIDDEN ** 0.5, dtype=x.dtype)
            local_cos, local_sin = rotary(GEMMA_LOCAL_THETA)
            local_mask = mask.masked_fill(torch.ones(t, t, dtype=torch.bool).tril(-GEMMA_WINDOW), float("-inf"))
        for i, layer in enumerate(self.layers):
            if GEMMA and (i + 1) % GEMMA_PATTERN != 0:
                x = layer(x, local_cos, local_sin, local_mask)
            else:
                x = layer(x, cos, sin, mask)
        return F.linear(self.norm(x), self.embed_tokens.weight)  # tied embeddings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--config", choices=sorted(CONFIGS), default="demo")
    ap.add_argument("--method", choices=["full", "lora"], default="full")
    ap.add_argument("--lora-r", type=int, default=16)
    a = ap.parse_args()
    import os
    torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(0)
    use_config(a.config)
    model = Model()
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
    if a.method == "lora":
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in model.layers:
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(layer.self_attn, name, LoraLinear(getattr(layer.self_attn, name), a.lora_r, 2 * a.lora_r, 0.05))
    trainable = [p for p in model.parameters() if p.requires_grad]
    # As transformers' Trainer: decay on matrices, none on norms and biases.
    opt = torch.optim.AdamW([{"params": [p for p in trainable if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in trainable if p.dim() < 2], "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95))

    def step():
        tokens = torch.randint(VOCAB, (a.batch, a.seq + 1))
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    seconds = time.perf_counter() - start
    lora = sum(p.numel() for n, p in model.named_parameters() if ".lora_" in n)
    params = sum(p.numel() for p in model.parameters()) - lora  # the base model's, as the engine counts
    print(json.dumps({"impl": "python", "config": a.config, "method": a.method, "threads": torch.get_num_threads(),
                      "params": params, "trainable": sum(p.numel() for p in trainable),
                      "tokens_per_second": round(a.steps * a.batch * a.seq / seconds, 1), "seconds": round(seconds, 3)}))


if __name__ == "__main__":
    main()
