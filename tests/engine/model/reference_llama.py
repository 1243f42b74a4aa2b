#!/usr/bin/python3
"""Independent reference for engine/model's LLaMA-family forward pass, written from the formulas.

Run with /usr/bin/python3 (python3-torch). Computes in float64 with its own RMSNorm, rotary
embedding (rotate_half convention; RoPE scaling "linear" and "llama3" as in transformers'
modeling_rope_utils), grouped-query attention, Mistral's sliding window (a query sees keys
q - W < k <= q, as transformers' masking_utils), Qwen2's q/k/v biases, Llama's attention_bias and
the SwiGLU MLP; shares no code with the C++ model.

  reference_llama.py CASE.json OUT.json   CASE: {"config": {config.json keys}, "input_ids": [[..]],
                                          "position_offset": n, "weights_dir": path | "weights": "formula"}
                                          weights_dir holds <parameter name>.f32 (raw little-endian float32).
                                          OUT: {"logits": [[[..]]]}; CASE may be a list of
                                          cases, OUT is then the list of their results.
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


def qkv_bias(cfg):
    return cfg.get("model_type") == "qwen2" or bool(cfg.get("attention_bias", False))


def o_bias(cfg):
    return cfg.get("model_type", "llama") == "llama" and bool(cfg.get("attention_bias", False))


def parameter_shapes(cfg):
    """Hugging Face's LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM parameters, in registration order."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = head_dim(cfg)
    shapes = [("model.embed_tokens.weight", (v, h))]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for proj, out, has_bias in (("q_proj", nh * hd, qkv_bias(cfg)), ("k_proj", nkv * hd, qkv_bias(cfg)),
                                    ("v_proj", nkv * hd, qkv_bias(cfg))):
            shapes.append((p + f"self_attn.{proj}.weight", (out, h)))
            if has_bias:
                shapes.append((p + f"self_attn.{proj}.bias", (out,)))
        shapes.append((p + "self_attn.o_proj.weight", (h, nh * hd)))
        if o_bias(cfg):
            shapes.append((p + "self_attn.o_proj.bias", (h,)))
        shapes += [
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


def formula_weight(index, name, shape):
    """Parameter number `index` (registration order), element k (row-major): the C++ test uses the same."""
    n = math.prod(shape)
    if name.endswith(".bias"):
        values = [0.1 * math.sin(0.53 * k + index) for k in range(n)]
    elif len(shape) == 1:
        values = [1.0 + 0.1 * math.cos(0.37 * k + index) for k in range(n)]
    else:
        values = [0.2 * math.sin(0.37 * k + 1.3 * index) for k in range(n)]
    # Round to float32 first, as the C++ side stores them.
    return torch.tensor(values, dtype=torch.float32).to(DT).reshape(shape)


def load_weights(cfg, case):
    weights = {}
    for index, (name, shape) in enumerate(parameter_shapes(cfg)):
        if case.get("weights") == "formula":
            weights[name] = formula_weight(index, name, shape)
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


def inverse_frequencies(d, theta, scaling):
    """Per pair of dimensions, in float64, from the formulas of transformers' RoPE initializers."""
    inv_freq = [theta ** (-2.0 * i / d) for i in range(d // 2)]
    kind = (scaling or {}).get("rope_type") or (scaling or {}).get("type") or "default"
    if kind == "linear":
        inv_freq = [f / scaling["factor"] for f in inv_freq]
    elif kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        scaled = []
        for f in inv_freq:
            wavelen = 2 * math.pi / f
            if wavelen < old / high:      # high frequency: kept
                scaled.append(f)
            elif wavelen > old / low:     # low frequency: divided by factor
                scaled.append(f / factor)
            else:                         # in between: interpolated
                smooth = (old / wavelen - low) / (high - low)
                scaled.append((1 - smooth) * f / factor + smooth * f)
        inv_freq = scaled
    else:
        assert kind == "default", kind
    return torch.tensor(inv_freq, dtype=DT)


def rotary(x, positions, theta, scaling=None):
    """x [B, heads, T, D]; positions [T]."""
    d = x.shape[-1]
    inv_freq = inverse_frequencies(d, theta, scaling)
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
    scaling = cfg.get("rope_scaling")
    positions = torch.arange(offset, offset + t)
    allowed = torch.zeros(t, t, dtype=torch.bool)
    window = cfg.get("sliding_window") if cfg.get("model_type") == "mistral" else None
    for qi in range(t):
        for ki in range(t):
            allowed[qi, ki] = ki <= qi and (window is None or ki > qi - window)

    def proj(a, name):
        y = a @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    x = w["model.embed_tokens.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = proj(a, p + "self_attn.q_proj").reshape(b, t, nh, hd).transpose(1, 2)
        k = proj(a, p + "self_attn.k_proj").reshape(b, t, nkv, hd).transpose(1, 2)
        v = proj(a, p + "self_attn.v_proj").reshape(b, t, nkv, hd).transpose(1, 2)
        q = rotary(q, positions, theta, scaling)
        k = rotary(k, positions, theta, scaling)
        heads = []
        for head in range(nh):
            kv = head // (nh // nkv)
            scores = q[:, head] @ k[:, kv].transpose(-1, -2) / math.sqrt(hd)
            scores = scores.masked_fill(~allowed, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v[:, kv])
        attn = torch.stack(heads, dim=1).transpose(1, 2).reshape(b, t, nh * hd)
        x = x + proj(attn, p + "self_attn.o_proj")
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

    # Qwen2: q/k/v biases (no o_proj bias), tied, GQA, large theta.
    qwen2 = {"model_type": "qwen2", "vocab_size": 56, "hidden_size": 32, "intermediate_size": 40,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
             "tie_word_embeddings": True, "hidden_act": "silu", "use_sliding_window": False}
    # Mistral: a sliding window of 3 over 10 tokens, GQA, head_dim given (heads * head_dim != hidden).
    mistral = {"model_type": "mistral", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
               "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
               "sliding_window": 3, "tie_word_embeddings": False, "hidden_act": "silu"}
    # Llama 3.1 RoPE scaling over 24 tokens, 3 times original_max_position_embeddings. head_dim 16 and
    # theta 100 give wavelengths 6.3 (kept: < 8 / high_freq_factor), 11.2 and 19.9 (interpolated) and
    # 35.3 and more (divided: > 8 / low_freq_factor), none near a boundary.
    llama3 = {"model_type": "llama", "vocab_size": 48, "hidden_size": 32, "intermediate_size": 40,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 100.0,
              "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 0.25,
                               "high_freq_factor": 1.0, "original_max_position_embeddings": 8},
              "tie_word_embeddings": False, "hidden_act": "silu"}
    # Linear RoPE scaling with Llama's attention_bias (biases on q, k, v and o), multi-head, tied.
    linear = {"model_type": "llama", "vocab_size": 40, "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 50.0,
              "rope_scaling": {"type": "linear", "factor": 2.5}, "attention_bias": True,
              "tie_word_embeddings": True, "hidden_act": "silu"}

    def ids(cfg, b, t):
        return [[(7 * j + 3 * r + 1) % cfg["vocab_size"] for j in range(t)] for r in range(b)]

    return [
        {"name": "gqa_untied", "config": gqa, "input_ids": ids(gqa, 2, 6), "position_offset": 0},
        {"name": "mqa_tied_head_dim_offset", "config": mqa, "input_ids": ids(mqa, 1, 5), "position_offset": 5},
        {"name": "qwen2_qkv_bias_tied_gqa", "config": qwen2, "input_ids": ids(qwen2, 2, 7), "position_offset": 0},
        {"name": "mistral_sliding_window", "config": mistral, "input_ids": ids(mistral, 2, 10),
         "position_offset": 0},
        {"name": "llama3_rope_beyond_original", "config": llama3, "input_ids": ids(llama3, 1, 24),
         "position_offset": 0},
        {"name": "linear_rope_attention_bias_offset", "config": linear, "input_ids": ids(linear, 2, 12),
         "position_offset": 3},
    ]


def main(argv):
    if len(argv) == 3 and argv[1] == "--golden":
        cases = []
        for case in golden_cases():
            case["weights"] = "formula"
            logits = run_case(case)
            case["logits"] = [[[float(f"{x:.9g}") for x in row] for row in seq] for seq in logits.tolist()]
            cases.append(case)
        doc = {"about": "LLaMA-family logits from tests/engine/model/reference_llama.py --golden (float64 reference, "
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
    if isinstance(case, list):  # several cases in one run: torch is imported once
        result = [{"logits": run_case(c).tolist()} for c in case]
    else:
        result = {"logits": run_case(case).tolist()}
    with open(argv[2], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
