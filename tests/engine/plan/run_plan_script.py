"""Runs a script written by `tunebench plan --output` on the CPU, with stand-ins for transformers and
peft (Debian's python3-torch has neither): from_pretrained records its arguments and returns a tiny
causal LM, get_peft_model freezes all but one layer, so the script's own code (optimizer, clipping,
loss, main) runs as written. Its clip_grad_norm is also compared with torch's on one device.

Usage: python3 run_plan_script.py SCRIPT.py   (prints one JSON line last)
"""
import json
import runpy
import sys
import types

import torch

calls = {}


class TinyCausalLM(torch.nn.Module):
    def __init__(self, vocab=32, hidden=8):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, input_ids):
        return types.SimpleNamespace(logits=self.head(torch.tanh(self.proj(self.embed(input_ids)))))

    def gradient_checkpointing_enable(self):
        calls["checkpointing"] = True

    def enable_input_require_grads(self):
        calls["input_require_grads"] = True


def auto_class(name):
    def from_pretrained(path, **kwargs):
        calls.update(auto_class=name, path=path)
        calls["kwargs"] = {k: str(v) if isinstance(v, torch.dtype) else v for k, v in kwargs.items()}
        return TinyCausalLM()

    return type(name, (), {"from_pretrained": staticmethod(from_pretrained)})


class Tokenizer:
    def __call__(self, text, return_tensors):
        return {"input_ids": torch.tensor([[ord(c) % 32 for c in text]])}

    def decode(self, token):
        return str(token)


def tokenizer_from_pretrained(path, **kwargs):
    calls["tokenizer"] = {"path": path, **kwargs}
    return Tokenizer()


def lora_config(**kwargs):
    calls["lora"] = kwargs
    return kwargs


def get_peft_model(model, config):
    model.requires_grad_(False)
    model.proj.requires_grad_(True)  # stands in for the adapters
    return model


class RecordingAdamW(torch.optim.AdamW):
    def __init__(self, params, **kwargs):
        params = list(params)
        calls["optimized"] = len(params)
        calls["optimized_all_trainable"] = all(p.requires_grad for p in params)
        super().__init__(params, **kwargs)


def install_stand_ins():
    transformers = types.ModuleType("transformers")
    for name in ("AutoModel", "AutoModelForCausalLM"):
        setattr(transformers, name, auto_class(name))
    transformers.AutoTokenizer = type("AutoTokenizer", (), {"from_pretrained": staticmethod(tokenizer_from_pretrained)})
    peft = types.ModuleType("peft")
    peft.LoraConfig = lora_config
    peft.get_peft_model = get_peft_model
    sys.modules.update(transformers=transformers, peft=peft)
    torch.optim.AdamW = RecordingAdamW


def clip_matches_torch(clip_grad_norm):
    torch.manual_seed(0)
    mine = [torch.nn.Parameter(torch.randn(5, 3)) for _ in range(3)]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in mine]
    for a, b in zip(mine, theirs):
        a.grad = torch.randn_like(a) * 4
        b.grad = a.grad.clone()
    total = clip_grad_norm(mine, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    return abs(total - expected.item()) < 1e-4 and all(torch.allclose(a.grad, b.grad, atol=1e-6) for a, b in zip(mine, theirs))


def main():
    install_stand_ins()
    script = runpy.run_path(sys.argv[1], run_name="plan_script")
    # The plan's GPUs are not here: the inputs start on the CPU, where the stand-in model lives.
    script["main"].__globals__["input_device"] = lambda: torch.device("cpu")
    script["main"]()
    if "clip_grad_norm" in script:
        calls["clip_matches_torch"] = clip_matches_torch(script["clip_grad_norm"])
    calls["device_map"] = script["DEVICE_MAP"]
    calls["max_memory"] = {str(k): v for k, v in script["MAX_MEMORY"].items()}
    print(json.dumps(calls))


if __name__ == "__main__":
    main()
