#!/usr/bin/python3
"""Independent reference for engine/model's LLaMA-family forward pass, written from the formulas.

Run with /usr/bin/python3 (python3-torch). Computes in float64 with its own RMSNorm, rotary
embedding (rotate_half convention; RoPE scaling "linear" and "llama3" as in transformers'
modeling_rope_utils), grouped-query attention, Mistral's sliding window (a query sees keys
q - W < k <= q, as transformers' masking_utils), Qwen2's q/k/v biases, Llama's and Qwen3's attention_bias,
Qwen3's per-head RMSNorm of q and k (over head_dim, after the projection, before rotary) and the
SwiGLU MLP; and Gemma 2 / Gemma 3 text (model_type gemma2, gemma3_text) from Google's published
definitions: embeddings times sqrt(hidden_size), RMSNorm x * (1 + w), GELU (tanh form) gating, a norm
after attention and around the MLP, scores scaled by query_pre_attn_scalar^-1/2 and soft-capped
(c * tanh(s / c)), local (sliding) and global layers, Gemma 3's q/k norm and local rotary base, final
logit soft-capping; and Phi-3 (model_type phi3): q, k and v as rows of one qkv_proj, gate and up as
halves of one gate_up_proj, rotary on the first head_dim * partial_rotary_factor dimensions of each
head. Shares no code with the C++ model.

  reference_llama.py CASE.json OUT.json   CASE: {"config": {config.json keys}, "input_ids": [[..]],
                                          "position_offset": n, "weights_dir": path | "weights": "formula"}
                                          weights_dir holds <parameter name>.f32 (raw little-endian float32).
                                          OUT: {"logits": [[[..]]]}; CASE may be a list of
                                          cases, OUT is then the list of their results.
  reference_llama.py --golden OUT.json    writes the checked-in golden file (formula weights).
  reference_llama.py --score CASES.json OUT.json
                                          CASES: [{"model_dir": folder, "ids": [..], "adapter_dir": folder?}];
                                          reads config.json and the weights as a model folder holds them
                                          (model.safetensors, or shards + model.safetensors.index.json; F32,
                                          BF16, F16, F64) with its own safetensors parser, merges a PEFT LoRA
                                          adapter as W + scale * B @ A, and writes
                                          [{"logprobs": [log p(ids[t+1] | ids[..t])]}].
  reference_llama.py --score-golden OUT.json
                                          writes tests/data/score/score_golden.json (formula weights).
"""
import json
import math
import os
import struct
import sys

import torch

DT = torch.float64


def head_dim(cfg):
    hd = cfg.get("head_dim")
    return hd if hd else cfg["hidden_size"] // cfg["num_attention_heads"]


def is_gemma(cfg):
    return cfg.get("model_type") in ("gemma2", "gemma3_text")


def sliding_layer(cfg, layer):
    """Gemma: layer_types when given; else Gemma 2 alternates (even layers local), Gemma 3 makes every
    sliding_window_pattern-th layer global. Mistral: every layer."""
    if cfg.get("layer_types"):
        return cfg["layer_types"][layer] == "sliding_attention"
    if cfg.get("model_type") == "gemma2":
        return layer % 2 == 0
    if cfg.get("model_type") == "gemma3_text":
        return (layer + 1) % cfg.get("sliding_window_pattern", 6) != 0
    return cfg.get("model_type") in ("mistral", "phi3")


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softcap(x, cap):
    return x if not cap else cap * torch.tanh(x / cap)


def fused(cfg):
    return cfg.get("model_type") == "phi3"


def qkv_bias(cfg):
    return cfg.get("model_type") == "qwen2" or bool(cfg.get("attention_bias", False))


def o_bias(cfg):
    return cfg.get("model_type", "llama") in ("llama", "qwen3", "gemma2", "gemma3_text") and \
        bool(cfg.get("attention_bias", False))


def qk_norm(cfg):
    """Qwen3, Gemma 3: q_norm and k_norm, one weight of head_dim each, registered after o_proj."""
    return cfg.get("model_type") in ("qwen3", "gemma3_text")


def parameter_shapes(cfg):
    """Hugging Face's Llama / Mistral / Qwen2 / Qwen3ForCausalLM parameters, in registration order."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    hd = head_dim(cfg)
    shapes = [("model.embed_tokens.weight", (v, h))]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        if fused(cfg):  # Phi3Attention: o_proj, then qkv_proj; Phi3MLP: gate_up_proj, down_proj
            shapes += [(p + "self_attn.o_proj.weight", (h, nh * hd)),
                       (p + "self_attn.qkv_proj.weight", ((nh + 2 * nkv) * hd, h)),
                       (p + "mlp.gate_up_proj.weight", (2 * i, h)),
                       (p + "mlp.down_proj.weight", (h, i)),
                       (p + "input_layernorm.weight", (h,)),
                       (p + "post_attention_layernorm.weight", (h,))]
            continue
        for proj, out, has_bias in (("q_proj", nh * hd, qkv_bias(cfg)), ("k_proj", nkv * hd, qkv_bias(cfg)),
                                    ("v_proj", nkv * hd, qkv_bias(cfg))):
            shapes.append((p + f"self_attn.{proj}.weight", (out, h)))
            if has_bias:
                shapes.append((p + f"self_attn.{proj}.bias", (out,)))
        shapes.append((p + "self_attn.o_proj.weight", (h, nh * hd)))
        if o_bias(cfg):
            shapes.append((p + "self_attn.o_proj.bias", (h,)))
        if qk_norm(cfg):
            shapes += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        shapes += [
            (p + "mlp.gate_proj.weight", (i, h)),
            (p + "mlp.up_proj.weight", (i, h)),
            (p + "mlp.down_proj.weight", (h, i)),
            (p + "input_layernorm.weight", (h,)),
            (p + "post_attention_layernorm.weight", (h,)),
        ]
        if is_gemma(cfg):
            shapes += [(p + "pre_feedforward_layernorm.weight", (h,)), (p + "post_feedforward_layernorm.weight", (h,))]
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


def rotary(x, positions, theta, scaling=None, fraction=1.0):
    """x [B, heads, T, D]; positions [T]; only the first int(D * fraction) dimensions rotate."""
    d = int(x.shape[-1] * fraction)
    if d < x.shape[-1]:
        return torch.cat([rotary(x[..., :d], positions, theta, scaling), x[..., d:]], dim=-1)
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
    gemma = is_gemma(cfg)

    def allowed_keys(window):
        allowed = torch.zeros(t, t, dtype=torch.bool)
        for qi in range(t):
            for ki in range(t):
                allowed[qi, ki] = ki <= qi and (window is None or ki > qi - window)
        return allowed

    def norm(x, weight):
        return rms_norm(x, 1.0 + weight, eps) if gemma else rms_norm(x, weight, eps)

    scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else 1.0 / math.sqrt(hd)

    def proj(a, name):
        y = a @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    x = w["model.embed_tokens.weight"][ids]
    if gemma:
        x = x * math.sqrt(h)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        local = sliding_layer(cfg, layer)
        allowed = allowed_keys(cfg.get("sliding_window") if local else None)
        layer_theta, layer_scaling = theta, scaling
        if cfg.get("model_type") == "gemma3_text" and local:  # local layers: their own base, no scaling
            layer_theta, layer_scaling = cfg.get("rope_local_base_freq", 10000.0), None
        a = norm(x, w[p + "input_layernorm.weight"])
        if fused(cfg):
            qkv = proj(a, p + "self_attn.qkv_proj")
            q = qkv[..., :nh * hd].reshape(b, t, nh, hd)
            k = qkv[..., nh * hd:(nh + nkv) * hd].reshape(b, t, nkv, hd)
            v = qkv[..., (nh + nkv) * hd:].reshape(b, t, nkv, hd).transpose(1, 2)
        else:
            q = proj(a, p + "self_attn.q_proj").reshape(b, t, nh, hd)
            k = proj(a, p + "self_attn.k_proj").reshape(b, t, nkv, hd)
            v = proj(a, p + "self_attn.v_proj").reshape(b, t, nkv, hd).transpose(1, 2)
        if qk_norm(cfg):  # each head on its own: the mean of squares runs over head_dim only
            q = norm(q, w[p + "self_attn.q_norm.weight"])
            k = norm(k, w[p + "self_attn.k_norm.weight"])
        q = q.transpose(1, 2)
        k = k.transpose(1, 2)
        fraction = cfg.get("partial_rotary_factor", 1.0) if fused(cfg) else 1.0
        q = rotary(q, positions, layer_theta, layer_scaling, fraction)
        k = rotary(k, positions, layer_theta, layer_scaling, fraction)
        heads = []
        for head in range(nh):
            kv = head // (nh // nkv)
            scores = q[:, head] @ k[:, kv].transpose(-1, -2) * scale
            if gemma:
                scores = softcap(scores, cfg.get("attn_logit_softcapping"))
            scores = scores.masked_fill(~allowed, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v[:, kv])
        attn = proj(torch.stack(heads, dim=1).transpose(1, 2).reshape(b, t, nh * hd), p + "self_attn.o_proj")
        if gemma:  # normed before the residual add; the MLP's input has its own norm, its output another
            x = x + norm(attn, w[p + "post_attention_layernorm.weight"])
            m = norm(x, w[p + "pre_feedforward_layernorm.weight"])
        else:
            x = x + attn
            m = norm(x, w[p + "post_attention_layernorm.weight"])
        if fused(cfg):
            both = m @ w[p + "mlp.gate_up_proj.weight"].T
            gate, up = both[..., :both.shape[-1] // 2], both[..., both.shape[-1] // 2:]
        else:
            gate = m @ w[p + "mlp.gate_proj.weight"].T
            up = m @ w[p + "mlp.up_proj.weight"].T
        act = cfg.get("hidden_activation", "gelu_pytorch_tanh") if gemma else cfg.get("hidden_act", "silu")
        gated = gelu_tanh(gate) if act == "gelu_pytorch_tanh" else gate / (1.0 + torch.exp(-gate))
        mlp = (gated * up) @ w[p + "mlp.down_proj.weight"].T
        x = x + (norm(mlp, w[p + "post_feedforward_layernorm.weight"]) if gemma else mlp)
    x = norm(x, w["model.norm.weight"])
    out = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    logits = x @ out.T
    return softcap(logits, cfg.get("final_logit_softcapping")) if gemma else logits


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

    # Qwen3: per-head q/k RMSNorm, head_dim 12 where hidden / heads is 8, GQA, untied, an offset.
    qwen3 = {"model_type": "qwen3", "vocab_size": 48, "hidden_size": 32, "intermediate_size": 40,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
             "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
             "attention_bias": False, "use_sliding_window": False, "tie_word_embeddings": False,
             "hidden_act": "silu"}

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
        {"name": "qwen3_qk_norm_head_dim_offset", "config": qwen3, "input_ids": ids(qwen3, 2, 9),
         "position_offset": 2},
    ]


# --- Model folders (safetensors written from the specification, no shared code) ------------------

def read_safetensors(path):
    """name -> float64 tensor, parsed from the format: u64 LE header length, JSON header, data buffer."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[begin:end])
        shape = info["shape"]
        dtype = info["dtype"]
        if dtype == "F32":
            t = torch.frombuffer(raw, dtype=torch.float32) if raw else torch.zeros(0)
        elif dtype == "F64":
            t = torch.frombuffer(raw, dtype=torch.float64) if raw else torch.zeros(0)
        elif dtype == "BF16":
            # bfloat16 is the top half of a float32: widen the bits by hand.
            bits = [struct.unpack_from("<H", raw, 2 * i)[0] << 16 for i in range(len(raw) // 2)]
            t = torch.tensor(struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *bits)), dtype=DT)
        elif dtype == "F16":
            t = torch.tensor(struct.unpack(f"<{len(raw) // 2}e", bytes(raw)), dtype=DT)
        else:
            raise ValueError(f"{path}: tensor {name} has dtype {dtype}")
        assert t.numel() == math.prod(shape), f"{path}: {name}"
        out[name] = t.to(DT).reshape(shape)
    return out


def read_checkpoint(folder):
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    out = {}
    for shard in sorted(set(weight_map.values())):
        tensors = read_safetensors(os.path.join(folder, shard))
        for name, file in weight_map.items():
            if file == shard:
                out[name] = tensors[name]
    return out


def lora_scale(adapter_cfg):
    r, alpha = adapter_cfg["r"], adapter_cfg["lora_alpha"]
    return alpha / math.sqrt(r) if adapter_cfg.get("use_rslora") else alpha / r


def merge_lora(weights, adapter_cfg, lora):
    """lora: {module: (A [r, in], B [out, r])}; W + scale * B @ A in float64."""
    scale = lora_scale(adapter_cfg)
    for module, (a, b) in lora.items():
        weights[module + ".weight"] = weights[module + ".weight"] + scale * (b.to(DT) @ a.to(DT))


def read_adapter(folder):
    with open(os.path.join(folder, "adapter_config.json")) as f:
        cfg = json.load(f)
    lora = {}
    for key, t in read_safetensors(os.path.join(folder, "adapter_model.safetensors")).items():
        assert key.startswith("base_model.model."), key
        module, kind = key[len("base_model.model."):].rsplit(".lora_", 1)
        a, b = lora.get(module, (None, None))
        lora[module] = (t, b) if kind.startswith("A") else (a, t)
    return cfg, lora


def checked_weights(cfg, weights):
    out = {}
    for name, shape in parameter_shapes(cfg):
        assert name in weights, f"missing {name}"
        assert tuple(weights[name].shape) == tuple(shape), f"{name}: {tuple(weights[name].shape)} != {shape}"
        out[name] = weights[name]
    return out


def score(cfg, weights, ids):
    logits = forward(cfg, weights, torch.tensor([ids[:-1]], dtype=torch.int64), 0)[0]
    logprobs = torch.log_softmax(logits, dim=-1)
    return [float(logprobs[t, ids[t + 1]]) for t in range(len(ids) - 1)]


def score_folder(case):
    with open(os.path.join(case["model_dir"], "config.json")) as f:
        cfg = json.load(f)
    weights = checked_weights(cfg, read_checkpoint(case["model_dir"]))
    if case.get("adapter_dir"):
        adapter_cfg, lora = read_adapter(case["adapter_dir"])
        merge_lora(weights, adapter_cfg, lora)
    return score(cfg, weights, case["ids"])


def formula_lora(rows, cols, index, is_b):
    """The LoRA matrices of the score golden cases (tests/support/tinymodels.h formulaLora)."""
    n = rows * cols
    if is_b:
        values = [0.3 * math.cos(0.43 * k + 0.7 * index) for k in range(n)]
    else:
        values = [0.3 * math.sin(0.71 * k + 1.1 * index) for k in range(n)]
    return torch.tensor(values, dtype=torch.float32).to(DT).reshape(rows, cols)


def score_golden_cases():
    def cfg(model_type="llama", tied=False, kv=2, **extra):
        c = {"model_type": model_type, "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": kv,
             "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
             "tie_word_embeddings": tied, "hidden_act": "silu"}
        c.update(extra)
        return c

    def ids(c, n, salt=0):
        return [(5 * j * j + 3 * j + 1 + salt) % c["vocab_size"] for j in range(n)]

    llama3 = cfg(kv=1, head_dim=16, rope_theta=100.0,
                 rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 0.25,
                               "high_freq_factor": 1.0, "original_max_position_embeddings": 8})
    # The checked-in checkpoint tests/data/score/tiny-bf16: 1 layer, hidden 16, vocab 32, bf16, tied.
    tiny = {"model_type": "llama", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 24,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
            "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "hidden_act": "silu"}
    lora = {"r": 4, "lora_alpha": 8.0, "use_rslora": False,
            "modules": ["model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.v_proj",
                        "model.layers.1.mlp.down_proj"]}
    return [
        {"name": "untied_gqa", "config": cfg(), "ids": ids(cfg(), 12)},
        {"name": "tied_mha", "config": cfg(tied=True, kv=4), "ids": ids(cfg(), 11, 1)},
        {"name": "bf16_untied", "config": cfg(kv=1), "dtype": "bfloat16", "ids": ids(cfg(), 10, 2)},
        {"name": "sharded", "config": cfg(kv=1), "shard_bytes": 12000, "ids": ids(cfg(), 9, 3)},
        {"name": "qwen2_bias", "config": cfg("qwen2", kv=2, rope_theta=1000000.0, use_sliding_window=False),
         "ids": ids(cfg(), 12, 4)},
        {"name": "mistral_window", "config": cfg("mistral", kv=2, sliding_window=3), "ids": ids(cfg(), 12, 5)},
        {"name": "llama3_rope_24", "config": llama3, "ids": ids(llama3, 24, 6)},
        {"name": "lora", "config": cfg(), "ids": ids(cfg(), 12, 7), "adapter": lora},
        {"name": "rslora_tied", "config": cfg(tied=True), "ids": ids(cfg(), 12, 8),
         "adapter": dict(lora, r=2, lora_alpha=3.0, use_rslora=True)},
        {"name": "tiny_bf16_checkpoint", "config": tiny, "dtype": "bfloat16", "checkpoint": "tiny-bf16",
         "ids": ids(tiny, 16, 9)},
    ]


def run_score_golden_case(case):
    cfg = case["config"]
    weights = {}
    for index, (name, shape) in enumerate(parameter_shapes(cfg)):
        w = formula_weight(index, name, shape)
        if case.get("dtype") == "bfloat16":
            w = w.to(torch.float32).to(torch.bfloat16).to(DT)
        weights[name] = w
    adapter = case.get("adapter")
    if adapter:
        lora = {}
        for i, module in enumerate(adapter["modules"]):
            out_features, in_features = weights[module + ".weight"].shape
            lora[module] = (formula_lora(adapter["r"], in_features, i, False),
                            formula_lora(out_features, adapter["r"], i, True))
        merge_lora(weights, adapter, lora)
    return score(cfg, weights, case["ids"])


def main(argv):
    if len(argv) == 3 and argv[1] == "--score-golden":
        cases = []
        for case in score_golden_cases():
            case["logprobs"] = [float(f"{x:.10g}") for x in run_score_golden_case(case)]
            cases.append(case)
        doc = {"about": "log p(ids[t+1] | ids[..t]) from tests/engine/model/reference_llama.py --score-golden "
                        "(float64 reference, formula weights: formula_weight, formula_lora)", "cases": cases}
        with open(argv[2], "w") as f:  # one case a line
            f.write('{"about": ' + json.dumps(doc["about"]) + ',\n "cases": [\n')
            f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
            f.write("\n]}\n")
        return 0
    if len(argv) == 4 and argv[1] == "--score":
        with open(argv[2]) as f:
            cases = json.load(f)
        with open(argv[3], "w") as f:
            json.dump([{"logprobs": score_folder(c)} for c in cases], f)
        return 0
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
