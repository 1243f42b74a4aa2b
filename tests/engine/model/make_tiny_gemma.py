#!/usr/bin/python3
"""Writes a tiny Gemma 2 or Gemma 3 text model folder as Hugging Face saves one, and a PEFT LoRA adapter.

Run with /usr/bin/python3 (python3-torch). KIND is gemma2 (Gemma2ForCausalLM) or gemma3_text
(Gemma3ForCausalLM). Both: tied embeddings, head_dim 12 where hidden_size / num_attention_heads is 8,
query_pre_attn_scalar different from head_dim, a sliding window shorter than the tests' prompts, three
layers so that local and global layers both occur. Gemma 2 soft-caps scores and logits tightly enough
that the caps change the result; Gemma 3 has q/k norms, a local rotary base and linear RoPE scaling on
its global layer (layers 0 and 1 local, 2 global from sliding_window_pattern 3). model.safetensors is
F32 with Hugging Face's names; the weights are random but seeded: the same on every run. Norm weights
are small (the models compute x * (1 + w)).

  make_tiny_gemma.py KIND MODEL_DIR [ADAPTER_DIR]
      ADAPTER_DIR: adapter_config.json (peft_type LORA, r 4, lora_alpha 8, targets q_proj, v_proj,
      o_proj, gate_proj, down_proj) and adapter_model.safetensors as PEFT's save_pretrained writes them.

The parameter list is reference_llama.py's parameter_shapes, the reference's reading of the layout.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_qwen3 import write_safetensors  # noqa: E402
from reference_llama import parameter_shapes  # noqa: E402

COMMON = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
    "head_dim": 12,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 48,
    "max_position_embeddings": 64,
    "num_attention_heads": 4,
    "num_hidden_layers": 3,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
    "use_cache": True,
    "vocab_size": 64,
}

CONFIGS = {
    "gemma2": dict(COMMON, **{
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "hidden_act": "gelu_pytorch_tanh",
        "attn_logit_softcapping": 2.0,
        "final_logit_softcapping": 4.0,
        "query_pre_attn_scalar": 16,
        "rope_theta": 10000.0,
        "sliding_window": 4,
        "cache_implementation": "hybrid",
        "transformers_version": "4.42.4",
    }),
    "gemma3_text": dict(COMMON, **{
        "architectures": ["Gemma3ForCausalLM"],
        "model_type": "gemma3_text",
        "attn_logit_softcapping": None,
        "final_logit_softcapping": None,
        "query_pre_attn_scalar": 10,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
        "sliding_window": 5,
        "sliding_window_pattern": 3,
        "cache_implementation": "hybrid",
        "transformers_version": "4.50.0.dev0",
    }),
}

ADAPTER_TARGETS = ["q_proj", "v_proj", "o_proj", "gate_proj", "down_proj"]


def model_weights(config, generator):
    """Matrices N(0, 0.25); norm weights N(0, 0.2) around Gemma's implicit 1."""
    out = []
    for name, shape in parameter_shapes(config):
        scale = 0.2 if len(shape) == 1 else 0.25
        out.append((name, torch.randn(shape, generator=generator, dtype=torch.float32) * scale))
    return out


def adapter_tensors(weights, generator, r):
    out = []
    for name, t in weights:
        module = name[: -len(".weight")]
        if t.dim() != 2 or module.rsplit(".", 1)[-1] not in ADAPTER_TARGETS:
            continue
        rows, cols = t.shape
        out.append((f"base_model.model.{module}.lora_A.weight", torch.randn(r, cols, generator=generator) * 0.3))
        out.append((f"base_model.model.{module}.lora_B.weight", torch.randn(rows, r, generator=generator) * 0.3))
    return out


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in CONFIGS:
        print(__doc__, file=sys.stderr)
        return 2
    config = CONFIGS[argv[1]]
    generator = torch.Generator().manual_seed(2026)
    model_dir = argv[2]
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    weights = model_weights(config, generator)
    write_safetensors(os.path.join(model_dir, "model.safetensors"), weights, {"format": "pt"})
    if len(argv) == 4:
        adapter_dir = argv[3]
        os.makedirs(adapter_dir, exist_ok=True)
        r = 4
        adapter = {"peft_type": "LORA", "base_model_name_or_path": "tiny-" + argv[1], "task_type": "CAUSAL_LM",
                   "r": r, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ADAPTER_TARGETS,
                   "bias": "none", "fan_in_fan_out": False, "use_rslora": False, "use_dora": False,
                   "modules_to_save": None}
        with open(os.path.join(adapter_dir, "adapter_config.json"), "w") as f:
            json.dump(adapter, f, indent=2)
        write_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"),
                          adapter_tensors(weights, generator, r), {"format": "pt"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
