#!/usr/bin/env python3
"""An independent safetensors implementation written from the specification with struct + json
(Debian has no python3-safetensors), used by test_io to prove interoperability.

    safetensors_reference.py write OUT            # the golden tensors + metadata
    safetensors_reference.py check IN             # parse IN by the spec; must equal the golden
                                                  # tensors and be byte-identical to `write`
    safetensors_reference.py write-random OUT SEED
    safetensors_reference.py compare A B          # same names, dtypes, shapes, values, metadata

Tensor order in the header (and the buffer): dtype alignment descending, then name, as the
reference implementation orders them; __metadata__ first with sorted keys; compact JSON (no spaces,
UTF-8 unescaped); header padded with spaces to a multiple of 8.
"""
import json
import math
import struct
import sys

import torch

# (name, torch dtype, bits) in the reference implementation's Dtype order (increasing alignment).
DTYPES = [
    ("BOOL", torch.bool, 8), ("F4", None, 4), ("F6_E2M3", None, 6), ("F6_E3M2", None, 6),
    ("U8", torch.uint8, 8), ("I8", torch.int8, 8), ("F8_E5M2", None, 8), ("F8_E4M3", None, 8),
    ("F8_E8M0", None, 8), ("F8_E4M3FNUZ", None, 8), ("F8_E5M2FNUZ", None, 8), ("I16", torch.int16, 16),
    ("U16", None, 16), ("F16", torch.float16, 16), ("BF16", torch.bfloat16, 16), ("I32", torch.int32, 32),
    ("U32", None, 32), ("F32", torch.float32, 32), ("C64", torch.complex64, 64), ("F64", torch.float64, 64),
    ("I64", torch.int64, 64), ("U64", None, 64),
]
RANK = {name: i for i, (name, _, _) in enumerate(DTYPES)}
BITS = {name: bits for name, _, bits in DTYPES}
TO_TORCH = {name: dt for name, dt, _ in DTYPES if dt is not None}
FROM_TORCH = {dt: name for name, dt in TO_TORCH.items()}

GOLDEN_METADATA = {"format": "pt", "note": "golden \"quoted\" \u00fc/\\"}


def golden_tensors():
    base = torch.arange(-6, 6, dtype=torch.float64).reshape(3, 4)
    return {
        "embed.weight": (base / 4).to(torch.float32),
        "norm.weight": (base / 8).to(torch.bfloat16),
        "head.bias": (base[0] / 2).to(torch.float16),
        "step": torch.tensor(42, dtype=torch.int64),
        "mask": base > 0,
        "ids": (base * 1000).to(torch.int32),
        "bytes": (base + 6).to(torch.uint8),
        "small": base.to(torch.int8),
        "short": (base * 300).to(torch.int16),
        "phase": torch.complex((base / 2).to(torch.float32), (-base).to(torch.float32)),
        "double": base / 10,
        "empty": torch.empty((0, 3), dtype=torch.float32),
        "\u00fcn\u00ef.weight": torch.tensor([1.0, -1.0], dtype=torch.float32),
    }


def random_tensors(seed):
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for i, dt in enumerate([torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64,
                            torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64] * 3):
        shape = tuple(int(s) for s in torch.randint(0, 9, (i % 4,), generator=gen))
        values = torch.randn(shape, generator=gen, dtype=torch.float64) * 100
        if dt.is_complex:
            t = torch.complex(values.float(), (values / 3).float())
        elif dt == torch.bool:
            t = values > 0
        else:
            t = values.to(dt)
        out[f"layer.{i}.{str(dt).split('.')[-1]}"] = t
    return out


def tensor_bytes(t):
    t = t.contiguous()
    if t.is_complex():
        t = torch.view_as_real(t).contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def serialize(tensors, metadata):
    items = sorted(tensors.items(), key=lambda kv: (-RANK[FROM_TORCH[kv[1].dtype]], kv[0].encode("utf-8")))
    header = {}
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    chunks, offset = [], 0
    for name, t in items:
        data = tensor_bytes(t)
        header[name] = {"dtype": FROM_TORCH[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def parse(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), "header length"
    header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", None) or {}
    buffer = data[8 + n:]
    tensors, position = {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, end = info["data_offsets"]
        assert begin == position, f"{name}: not contiguous"
        numel = math.prod(info["shape"])
        assert (end - begin) * 8 == numel * BITS[info["dtype"]], f"{name}: byte count"
        position = end
        dtype = TO_TORCH[info["dtype"]]
        if numel == 0:
            t = torch.empty(info["shape"], dtype=dtype)
        elif dtype.is_complex:
            raw = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.float32).reshape(-1, 2)
            t = torch.view_as_complex(raw).reshape(info["shape"])
        else:
            t = torch.frombuffer(bytearray(buffer[begin:end]), dtype=torch.uint8).view(dtype).reshape(info["shape"])
        tensors[name] = t
    assert position == len(buffer), "buffer does not cover the file"
    return n, tensors, metadata


def same(a, b, metadata_a, metadata_b):
    problems = []
    if set(a) != set(b):
        problems.append(f"names differ: {sorted(set(a) ^ set(b))}")
    for name in sorted(set(a) & set(b)):
        x, y = a[name], b[name]
        if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(x, y):
            problems.append(f"{name}: {x.dtype}{tuple(x.shape)} != {y.dtype}{tuple(y.shape)} or values differ")
    if metadata_a != metadata_b:
        problems.append(f"metadata {metadata_a} != {metadata_b}")
    return problems


def main(argv):
    command = argv[1]
    if command == "write":
        open(argv[2], "wb").write(serialize(golden_tensors(), GOLDEN_METADATA))
    elif command == "write-random":
        open(argv[2], "wb").write(serialize(random_tensors(int(argv[3])), {"format": "pt", "seed": argv[3]}))
    elif command == "check":
        n, tensors, metadata = parse(argv[2])
        problems = same(tensors, golden_tensors(), metadata, GOLDEN_METADATA)
        if n % 8:
            problems.append(f"header length {n} is not a multiple of 8")
        if open(argv[2], "rb").read() != serialize(golden_tensors(), GOLDEN_METADATA):
            problems.append("bytes differ from this script's serialization")
        if problems:
            print("\n".join(problems))
            return 1
    elif command == "compare":
        _, a, meta_a = parse(argv[2])
        _, b, meta_b = parse(argv[3])
        problems = same(a, b, meta_a, meta_b)
        if problems:
            print("\n".join(problems))
            return 1
    else:
        print(__doc__)
        return 2
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
