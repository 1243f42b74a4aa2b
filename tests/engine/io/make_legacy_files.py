#!/usr/bin/python3
"""Writes the legacy-checkpoint test files with python3-torch (Debian's 1.13 or newer).

    /usr/bin/python3 make_legacy_files.py OUTDIR [--marker PATH]

OUTDIR receives:
  state_dict.bin        torch.save(state_dict) with fp32/fp16/bf16/int64/bool tensors, a tied pair
                        (two names, one storage), a transposed view, a narrowed view (storage offset),
                        a scalar and an nn.Parameter
  state_dict.json       what each tensor must be: dtype, shape, stride, storage offset, values, and
                        the name of the first tensor sharing its storage
  bigendian.bin/.json   the same kind of file rewritten with byteorder "big" (as torch 2.x writes on
                        big-endian machines)
  sharded/              pytorch_model-0000{1,2}-of-00002.bin + pytorch_model.bin.index.json (+ .json)
  malicious_system.bin  a pickle whose __reduce__ calls os.system('touch MARKER')
  malicious_eval.bin    ... builtins.eval
  malicious_popen.bin   ... subprocess.Popen
  scripted.pt/.json     torch.jit.script of a small Sequential, an input and its output
The checked-in copies under tests/data/legacy/ were made by this script; the tests rerun it when
/usr/bin/python3 can import torch.
"""
import builtins
import collections
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import torch
import torch.nn as nn


def describe(state):
    out = collections.OrderedDict()
    first_by_storage = {}
    for name, t in state.items():
        key = t.storage().data_ptr()
        first_by_storage.setdefault(key, name)
        out[name] = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "offset": t.storage_offset(),
            "values": [float(v) for v in t.detach().reshape(-1).double().tolist()] if t.dtype != torch.bool
            else [float(v) for v in t.reshape(-1).tolist()],
            "shares_with": first_by_storage[key],
        }
    return out


def make_state():
    g = torch.Generator().manual_seed(1234)
    linear = nn.Linear(4, 3)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(3, 4, generator=g))
        linear.bias.copy_(torch.randn(3, generator=g))
    state = linear.state_dict()  # OrderedDict with _metadata, like a real model's
    base = torch.randn(6, 5, generator=g)
    state["half"] = torch.randn(2, 3, generator=g).half()
    state["bf16"] = torch.randn(5, generator=g).bfloat16()
    state["positions"] = torch.arange(7, dtype=torch.int64) * 3 - 5
    state["mask"] = torch.tensor([True, False, True])
    state["embed.weight"] = base
    state["lm_head.weight"] = base  # tied: two names, one tensor
    state["transposed"] = base.t()  # non-contiguous view of the same storage
    state["rows"] = base[2:4]  # storage offset 10
    state["scalar"] = torch.tensor(2.5, dtype=torch.float64)
    state["param"] = nn.Parameter(torch.randn(2, 2, generator=g))
    return state


def rewrite_big_endian(path):
    """Rewrites a torch.save zip as a big-endian machine would write it."""
    src = zipfile.ZipFile(path)
    names = src.namelist()
    prefix = names[0].split("/")[0] + "/"
    elem = {}  # storage key -> element size, from the pickle's persistent ids

    class Probe(pickle.Unpickler):
        def persistent_load(self, pid):
            elem[pid[2]] = pid[1](0).element_size()
            return pid[1](pid[4])

    Probe(io.BytesIO(src.read(prefix + "data.pkl"))).load()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as out:
        for name in names:
            if name == prefix + "byteorder":
                continue  # torch >= 2.0 writes "little" here; the rewritten file says "big" once
            data = src.read(name)
            key = name[len(prefix + "data/"):] if name.startswith(prefix + "data/") else None
            if key is not None and elem.get(key, 1) > 1:
                n = elem[key]
                data = b"".join(data[i:i + n][::-1] for i in range(0, len(data), n))
            out.writestr(name, data)
        out.writestr(prefix + "byteorder", "big")
    src.close()
    with open(path, "wb") as f:
        f.write(buf.getvalue())


class Evil:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def main():
    out = sys.argv[1]
    marker = sys.argv[sys.argv.index("--marker") + 1] if "--marker" in sys.argv else "/tmp/tunebench-pwned"
    os.makedirs(os.path.join(out, "sharded"), exist_ok=True)

    state = make_state()
    torch.save(state, os.path.join(out, "state_dict.bin"))
    with open(os.path.join(out, "state_dict.json"), "w") as f:
        json.dump(describe(state), f)

    g = torch.Generator().manual_seed(99)
    big = collections.OrderedDict()
    big["w"] = torch.randn(2, 3, generator=g)
    big["h"] = torch.randn(3, generator=g).half()
    big["ids"] = torch.tensor([1, -2, 300000000000], dtype=torch.int64)
    big["view"] = big["w"].t()
    torch.save(big, os.path.join(out, "bigendian.bin"))
    rewrite_big_endian(os.path.join(out, "bigendian.bin"))
    with open(os.path.join(out, "bigendian.json"), "w") as f:
        json.dump(describe(big), f)

    shard1 = collections.OrderedDict([("a.weight", torch.randn(2, 2, generator=g)), ("a.bias", torch.randn(2, generator=g))])
    shard2 = collections.OrderedDict([("b.weight", torch.randn(3, generator=g).half())])
    names = ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]
    torch.save(shard1, os.path.join(out, "sharded", names[0]))
    torch.save(shard2, os.path.join(out, "sharded", names[1]))
    index = {"metadata": {"total_size": 4 * 6 + 2 * 3},
             "weight_map": {"a.weight": names[0], "a.bias": names[0], "b.weight": names[1]}}
    with open(os.path.join(out, "sharded", "pytorch_model.bin.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    merged = collections.OrderedDict(list(shard1.items()) + list(shard2.items()))
    with open(os.path.join(out, "sharded.json"), "w") as f:
        json.dump(describe(merged), f)

    command = "touch " + marker
    for name, func, args in [("system", os.system, (command,)),
                             ("eval", builtins.eval, ("__import__('os').system(%r)" % command,)),
                             ("popen", subprocess.Popen, (["touch", marker],))]:
        evil = collections.OrderedDict([("weight", torch.zeros(2)), ("payload", Evil(func, args))])
        torch.save(evil, os.path.join(out, "malicious_%s.bin" % name))

    torch.manual_seed(7)
    model = torch.jit.script(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)))
    model.save(os.path.join(out, "scripted.pt"))
    x = torch.randn(3, 4)
    with torch.no_grad():
        y = model(x)
    with open(os.path.join(out, "scripted.json"), "w") as f:
        json.dump({"input": x.tolist(), "output": y.tolist(),
                   "parameters": [name for name, _ in model.named_parameters()]}, f)


if __name__ == "__main__":
    main()
