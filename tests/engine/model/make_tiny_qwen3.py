#!/usr/bin/python3
"""Writes a tiny Qwen3 model folder as Hugging Face saves one, and a PEFT LoRA adapter for it.

Run with /usr/bin/python3 (python3-torch). The folder holds config.json (model_type "qwen3",
Qwen3ForCausalLM, head_dim 12 where hidden_size / num_attention_heads is 8, so that code deriving the
head size from the hidden size fails) and model.safetensors (F32, Hugging Face's parameter names,
q_norm and k_norm included), written with a safetensors writer of its own. The weights are random
but seeded: the same on every run.

  make_tiny_qwen3.py MODEL_DIR [ADAPTER_DIR]
      ADAPTER_DIR: adapter_config.json (peft_type LORA, r 4, lora_alpha 8, targets q_proj, k_proj,
      o_proj, down_proj) and adapter_model.safetensors (base_model.model.<module>.lora_A/B.weight)
      as PEFT's save_pretrained writes them.

The parameter list is reference_llama.py's parameter_shapes, the reference's reading of the layout.
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_llama import parameter_shapes  # noqa: E402

CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "head_dim": 12,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 48,
    "max_position_embeddings": 64,
    "max_window_layers": 2,
    "model_type": "qwen3",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 64,
}

ADAPTER_TARGETS = ["q_proj", "k_proj", "o_proj", "down_proj"]


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, float32 tensor)]; u64 LE header length, JSON header, then the data, in order."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors:
        data = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def model_weights(generator):
    """Large enough that every part moves the log-probabilities: matrices N(0, 0.2), norms 1 + N(0, 0.2)."""
    out = []
    for name, shape in parameter_shapes(CONFIG):
        noise = torch.randn(shape, generator=generator, dtype=torch.float32) * 0.2
        out.append((name, noise + 1.0 if len(shape) == 1 else noise))
    return out


def adapter_tensors(weights, generator, r):
    shapes = dict((name, t.shape) for name, t in weights)
    out = []
    for name, shape in shapes.items():
        module = name[: -len(".weight")]
        if len(shape) != 2 or module.rsplit(".", 1)[-1] not in ADAPTER_TARGETS:
            continue
        rows, cols = shape
        out.append((f"base_model.model.{module}.lora_A.weight", torch.randn(r, cols, generator=generator) * 0.3))
        out.append((f"base_model.model.{module}.lora_B.weight", torch.randn(rows, r, generator=generator) * 0.3))
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    generator = torch.Generator().manual_seed(2025)
    model_dir = argv[1]
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    weights = model_weights(generator)
    write_safetensors(os.path.join(model_dir, "model.safetensors"), weights, {"format": "pt"})
    if len(argv) == 3:
        adapter_dir = argv[2]
        os.makedirs(adapter_dir, exist_ok=True)
        r = 4
        adapter = {"peft_type": "LORA", "base_model_name_or_path": "tiny-qwen3", "task_type": "CAUSAL_LM",
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
