#!/usr/bin/env python3
"""Writes expected.json: every template here rendered with every conversation in conversations.json,
with and without add_generation_prompt, by Python's jinja2 set up the way transformers'
apply_chat_template sets it up (ImmutableSandboxedEnvironment, trim_blocks and lstrip_blocks on,
loopcontrols, a raise_exception global, transformers' tojson, {% generation %} rendering its body).
tests/engine/tokenize/test_chattemplate.cpp checks the C++ renderer against it byte for byte.

Rerun after changing a template or a conversation (needs jinja2 3.1, e.g. apt install python3-jinja2):
    python3 tests/data/chattemplate/make_expected.py
"""
import json
import pathlib

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent

# Special tokens each template is rendered with (bos_token, eos_token, ...).
SPECIAL_TOKENS = {
    "chatml": {"eos_token": "<|im_end|>"},
    "llama2": {"bos_token": "<s>", "eos_token": "</s>"},
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "zephyr": {"eos_token": "</s>"},
    "mistral": {"bos_token": "<s>", "eos_token": "</s>"},
    "features": {"bos_token": "<s>", "eos_token": "</s>"},
    "qwen3": {"eos_token": "<|im_end|>"},
    "gemma": {"bos_token": "<bos>", "eos_token": "<eos>"},
}


class GenerationBlock(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' override: no HTML escaping, non-ASCII kept.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def main():
    env = environment()
    conversations = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
    cases = []
    for name, tokens in SPECIAL_TOKENS.items():
        template = env.from_string((HERE / f"{name}.jinja").read_text(encoding="utf-8"))
        for conversation, messages in conversations.items():
            for add_generation_prompt in (False, True):
                case = {
                    "template": name,
                    "conversation": conversation,
                    "add_generation_prompt": add_generation_prompt,
                    "special_tokens": tokens,
                }
                try:
                    case["output"] = template.render(
                        messages=messages, add_generation_prompt=add_generation_prompt, **tokens
                    )
                except jinja2.exceptions.TemplateError as error:
                    case["error"] = str(error)
                cases.append(case)
    out = {"jinja2_version": jinja2.__version__, "cases": cases}
    (HERE / "expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases with jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
