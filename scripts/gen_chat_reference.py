#!/usr/bin/env python3
"""Write tests/fixtures/chat_templates.json: llama.cpp's renderings of chat templates of the
families engine/chat_template.cpp knows, through llama-cpp-python's llama_chat_apply_template
(llama.cpp's own detection from the template source, then its built-in renderer).

Run through scripts/gen_reference.sh scripts/gen_chat_reference.py [--llama-src DIR].

The template sources are the public model templates that llama.cpp's own tests carry
(tests/test-chat-template.cpp and models/templates/*.jinja in its source, taken from the
llama-cpp-python sdist of the pinned version, or from DIR), plus one Llama 2 <<SYS>> source
written here for the variant no template there has. Per template: its source, the family our
detect() must name, and llama.cpp's text for each conversation, with and without a
generation prompt.
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import llama_cpp

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "chat_templates.json"

# (family our detect() names, where the source is: test-chat-template.cpp case name or a .jinja file)
CASES = [
    ("chatml", "teknium/OpenHermes-2.5-Mistral-7B"),
    ("llama2", "mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)"),
    ("llama2-sys-bos", "TheBloke/FusionNet_34Bx2_MoE-AWQ"),
    ("llama2-sys-strip", "bofenghuang/vigogne-2-70b-chat"),
    ("mistral-v1", "mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template with a system prompt)"),
    ("mistral-v3", "Mistral-Large-Instruct-2407 (mistralai 'v3' template; modified to have system prompt at start)"),
    ("mistral-v3-tekken", "Mistral-Nemo-Instruct-2407 (mistralai 'v3-tekken' template; modified to have system prompt at start)"),
    ("mistral-v3-tekken", "mistralai-Mistral-Nemo-Instruct-2407.jinja"),
    ("mistral-v7", "mistralai/Mistral-Large-Instruct-2411 (mistralai 'v7' template)"),
    ("mistral-v7", "Mistral-Small-3.2-24B-Instruct-2506.jinja"),
    ("phi3", "Phi-3-mini"),
    ("phi3", "Phi-3-medium"),
    ("phi3", "microsoft-Phi-3.5-mini-instruct.jinja"),
    ("gemma", "google/gemma-7b-it"),
    ("gemma", "google-gemma-2-2b-it.jinja"),
    ("llama3", "Llama-3"),
]
LLAMA2_SYS = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
              "{{ '[INST] <<SYS>>\\n' + message['content'] + '\\n<</SYS>>\\n\\n' }}{% elif message['role'] == 'user' %}"
              "{{ message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}")

CONVERSATIONS = [
    # llama.cpp's test conversation: padded assistant text shows who trims
    [("system", "You are a helpful assistant"), ("user", "Hello"), ("assistant", "Hi there"),
     ("user", "Who are you"), ("assistant", "   I am an assistant   "), ("user", "Another question")],
    [("user", "  What is 2+2?\n")],
    [("system", "Be brief."), ("user", "Name a colour.")],
]


def c_string(lit: str) -> str:
    """The value of a C string literal body (u8"..." without its quotes); C's escapes used here
    (\\n \\" \\\\ \\t) are Python's."""
    return ast.literal_eval('"' + lit + '"')


def sources(llama_src: Path) -> dict[str, str]:
    text = (llama_src / "tests" / "test-chat-template.cpp").read_text()
    found = {}
    pat = re.compile(r'/\* \.name= \*/\s*"((?:[^"\\]|\\.)*)",\s*/\* \.template_str= \*/\s*(?:u8)?"((?:[^"\\]|\\.)*)"')
    for m in pat.finditer(text):
        found[c_string(m.group(1))] = c_string(m.group(2))
    for p in (llama_src / "models" / "templates").glob("*.jinja"):
        found[p.name] = p.read_text()
    return found


def fetch_llama_src(tmp: Path) -> Path:
    version = llama_cpp.__version__
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", str(tmp),
                    f"llama-cpp-python=={version}"], check=True)
    sdist = next(tmp.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp, filter="data")
    return next(tmp.glob("llama_cpp_python-*/vendor/llama.cpp"))


def apply(source: str, conv: list[tuple[str, str]], add_ass: bool) -> str:
    msgs = (llama_cpp.llama_chat_message * len(conv))()
    keep = []
    for i, (role, content) in enumerate(conv):
        r, c = role.encode(), content.encode()
        keep += [r, c]
        msgs[i].role, msgs[i].content = r, c
    buf = ctypes.create_string_buffer(1 << 16)
    n = llama_cpp.llama_chat_apply_template(source.encode(), msgs, len(conv), add_ass, buf, len(buf))
    if n < 0:
        raise RuntimeError("llama.cpp does not know this template")
    return buf.raw[:n].decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-src", type=Path, help="a llama.cpp source tree (default: the pinned sdist's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = sources(args.llama_src or fetch_llama_src(Path(tmp)))
    doc = {"generator": f"llama-cpp-python {llama_cpp.__version__} llama_chat_apply_template",
           "conversations": [[{"role": r, "content": c} for r, c in conv] for conv in CONVERSATIONS],
           "templates": []}
    for family, where in CASES + [("llama2-sys", "LLAMA2_SYS")]:
        source = LLAMA2_SYS if where == "LLAMA2_SYS" else src[where]
        renders = [{"conversation": i, "add_generation_prompt": add, "text": apply(source, conv, add)}
                   for i, conv in enumerate(CONVERSATIONS) for add in (True, False)]
        doc["templates"].append({"family": family, "from": where, "source": source, "renders": renders})
        print(f"  {family:18} {where[:60]}")
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
