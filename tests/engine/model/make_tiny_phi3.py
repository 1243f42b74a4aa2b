#!/usr/bin/python3
"""Writes a tiny Phi-3 model folder as Hugging Face saves one, and a PEFT LoRA adapter for it.

Run with /usr/bin/python3 (python3-torch). config.json has model_type "phi3" (Phi3ForCausalLM): fused
qkv_proj and gate_up_proj, partial_rotary_factor 0.5 (rotary on 4 of each head's 8 dimensions), a
sliding window of 5 (Phi-3-mini-4k has one, 2047), untied head. model.safetensors is F32 with Hugging
Face's names; the weights are random but seeded: the same on every run.

  make_tiny_phi3.py MODEL_DIR [ADAPTER_DIR]
      ADAPTER_DIR: adapter_config.json (peft_type LORA, r 4, lora_alpha 8, targets qkv_proj, o_proj,
      gate_up_proj, down_proj) and adapter_model.safetensors as PEFT's save_pretrained writes them.

The parameter list is reference_llama.py's parameter_shapes, the reference's reading of the layout.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_qwen3 import write_safetensors  # noqa: E402
from reference_llama import parameter_shapes  # noqa: E402

CONFIG = {
    "architectures": ["Phi3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "embd_pdrop": 0.0,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 48,
    "max_position_embeddings": 64,
    "model_type": "phi3",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "original_max_position_embeddings": 64,
    "pad_token_id": 0,
    "partial_rotary_factor": 0.5,
    "resid_pdrop": 0.0,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "sliding_window": 5,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "transformers_version": "4.49.0",
    "use_cache": True,
    "vocab_size": 64,
}

ADAPTER_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]


def adapter_tensors(weights, generator, r):
    out = []
    for name, t in weights:
        module = name[: -len(".weight")]
        if t.dim() == 2 and module.rsplit(".", 1)[-1] in ADAPTER_TARGETS:
            rows, cols = t.shape
            out.append((f"base_model.model.{module}.lora_A.weight", torch.randn(r, cols, generator=generator) * 0.3))
            out.append((f"base_model.model.{module}.lora_B.weight", torch.randn(rows, r, generator=generator) * 0.3))
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    generator = torch.Generator().manual_seed(2027)
    model_dir = argv[1]
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    weights = []
    for name, shape in parameter_shapes(CONFIG):
        noise = torch.randn(shape, generator=generator, dtype=torch.float32) * 0.25
        weights.append((name, noise + 1.0 if len(shape) == 1 else noise))
    write_safetensors(os.path.join(model_dir, "model.safetensors"), weights, {"format": "pt"})
    if len(argv) == 3:
        adapter_dir = argv[2]
        os.makedirs(adapter_dir, exist_ok=True)
        r = 4
        adapter = {"peft_type": "LORA", "base_model_name_or_path": "tiny-phi3", "task_type": "CAUSAL_LM",
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
