#!/usr/bin/python3
"""Independent reference for engine/model's LLaMA forward pass, written from the formulas.

Run with /usr/bin/python3 (python3-torch). Computes in float64 with its own RMSNorm, rotary
embedding (rotate_half convention), grouped-query attention and SwiGLU MLP; shares no code with the
C++ model.

  reference_llama.py CASE.json OUT.json   CASE: {"config": {config.json keys}, "input_ids": [[..]],
                                          "position_offset": n, "weights_dir": path | "weights": "formula"}
                                          weights_dir holds <parameter name>.f32 (raw little-endian float32).
                                          OUT: {"logits": [[[..]]]}
  reference_llama.py --golden OUT.json    writes the checked-in golden file (formula weights).
"""
import json
import math
import sys

import torch

DT = torch.float64


def head_dim(cfg):
    hd = cfg.get("head_dim")
    return hd if hd else cfg["hidden_size"] // cfg["num_attention_heads"]


def parameter_shapes(cfg):
    """Hugging Face's LlamaForCausalLM parameters, in registration order."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = head_dim(cfg)
    shapes = [("model.embed_tokens.weight", (v, h))]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes += [
            (p + "self_attn.q_proj.weight", (nh * hd, h)),
            (p + "self_attn.k_proj.weight", (nkv * hd, h)),
            (p + "self_attn.v_proj.weight", (nkv * hd, h)),
            (p + "self_attn.o_proj.weight", (h, nh * hd)),
            (p + "mlp.gate_proj.weight", (i, h)),
            (p + "mlp.up_proj.weight", (i, h)),
            (p + "mlp.down_proj.weight", (h, i)),
            (p + "input_layernorm.weight", (h,)),
            (p + "post_attention_layernorm.weight", (h,)),
        ]
    shapes.append(("model.norm.weight", (h,)))
    if not cfg.get("tie_word_embeddings", False):
        shapes.append(("lm_head.weight", (v, h)))
    return shapes


def formula_weight(index, shape):
    """Parameter number `index` (registration order), element k (row-major): the C++ test uses the same."""
    n = math.prod(shape)
    if len(shape) == 1:
        values = [1.0 + 0.1 * math.cos(0.37 * k + index) for k in range(n)]
    else:
        values = [0.2 * math.sin(0.37 * k + 1.3 * index) for k in range(n)]
    # Round to float32 first, as the C++ side stores them.
    return torch.tensor(values, dtype=torch.float32).to(DT).reshape(shape)


def load_weights(cfg, case):
    weights = {}
    for index, (name, shape) in enumerate(parameter_shapes(cfg)):
        if case.get("weights") == "formula":
            weights[name] = formula_weight(index, shape)
        else:
            with open(f"{case['weights_dir']}/{name}.f32", "rb") as f:
                data = bytearray(f.read())
            t = torch.frombuffer(data, dtype=torch.float32)
            assert t.numel() == math.prod(shape), f"{name}: {t.numel()} values, expected shape {shape}"
            weights[name] = t.reshape(shape).to(DT)
    return weights


def rms_norm(x, w, eps):
    return w * (x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps))


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat([-x[..., d:], x[..., :d]], dim=-1)


def rotary(x, positions, theta):
    """x [B, heads, T, D]; positions [T]."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=DT) / d))
    angles = positions.to(DT)[:, None] * inv_freq[None, :]
    emb = torch.cat([angles, angles], dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def forward(cfg, w, ids, offset):
    b, t = ids.shape
    h = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = head_dim(cfg)
    eps = cfg["rms_norm_eps"]
    theta = cfg.get("rope_theta", 10000.0)
    positions = torch.arange(offset, offset + t)
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool))

    x = w["model.embed_tokens.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(b, t, nh, hd).transpose(1, 2)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(b, t, nkv, hd).transpose(1, 2)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(b, t, nkv, hd).transpose(1, 2)
        q = rotary(q, positions, theta)
        k = rotary(k, positions, theta)
        heads = []
        for head in range(nh):
            kv = head // (nh // nkv)
            scores = q[:, head] @ k[:, kv].transpose(-1, -2) / math.sqrt(hd)
            scores = scores.masked_fill(~allowed, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v[:, kv])
        attn = torch.stack(heads, dim=1).transpose(1, 2).reshape(b, t, nh * hd)
        x = x + attn @ w[p + "self_attn.o_proj.weight"].T
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = m @ w[p + "mlp.gate_proj.weight"].T
        up = m @ w[p + "mlp.up_proj.weight"].T
        silu = gate / (1.0 + torch.exp(-gate))
        x = x + (silu * up) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    out = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ out.T


def run_case(case):
    cfg = case["config"]
    ids = torch.tensor(case["input_ids"], dtype=torch.int64)
    return forward(cfg, load_weights(cfg, case), ids, case.get("position_offset", 0))


def golden_cases():
    gqa = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": False, "hidden_act": "silu"}
    # Tied, one kv head, head_dim given and heads * head_dim != hidden_size, small theta, offset.
    mqa = {"model_type": "llama", "vocab_size": 48, "hidden_size": 32, "intermediate_size": 40,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 500.0,
           "tie_word_embeddings": True, "hidden_act": "silu"}

    def ids(cfg, b, t):
        return [[(7 * j + 3 * r + 1) % cfg["vocab_size"] for j in range(t)] for r in range(b)]

    return [
        {"name": "gqa_untied", "config": gqa, "input_ids": ids(gqa, 2, 6), "position_offset": 0},
        {"name": "mqa_tied_head_dim_offset", "config": mqa, "input_ids": ids(mqa, 1, 5), "position_offset": 5},
    ]


def main(argv):
    if len(argv) == 3 and argv[1] == "--golden":
        cases = []
        for case in golden_cases():
            case["weights"] = "formula"
            logits = run_case(case)
            case["logits"] = [[[float(f"{x:.9g}") for x in row] for row in seq] for seq in logits.tolist()]
            cases.append(case)
        doc = {"about": "LLaMA logits from tests/engine/model/reference_llama.py --golden (float64 reference, "
                        "formula weights: see formula_weight)", "cases": cases}
        with open(argv[2], "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        case = json.load(f)
    logits = run_case(case)
    with open(argv[2], "w") as f:
        json.dump({"logits": logits.tolist()}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
