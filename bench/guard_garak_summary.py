#!/usr/bin/env python3
"""What the guard flagged of a garak scan (bench/guard_garak.sh): the server's request log (with
log_prompts, so each line has the request's messages and the guard's verdict) joined with
garak's report (which probe sent which prompt). Prints detection by probe and in all, for each
half of garak's prompts: split by a hash of the prompt (even first byte of its sha256: tune,
odd: held_out), so that the guard's rules may be worked out on the tune half's misses
(--misses prints them) while the held-out half stays unseen."""
import argparse
import collections
import hashlib
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--misses", action="store_true", help="print the tune half's unflagged prompts")
    a = ap.parse_args()
    verdict = {}  # last user message -> flagged
    for line in open(a.log, encoding="utf-8"):
        r = json.loads(line)
        msgs = [m["content"] for m in r.get("messages", []) if m.get("role") == "user"]
        if msgs and "guard" in r:
            verdict[msgs[-1]] = r["guard"]["flagged"]
    by_probe = collections.defaultdict(lambda: [0, 0, 0])  # (half, probe) -> flagged, seen, not found in the log
    for line in open(a.report, encoding="utf-8"):
        r = json.loads(line)
        if r.get("entry_type") != "attempt" or r.get("status") != 1:
            continue
        turns = r["prompt"]["turns"]
        text = turns[-1]["content"]["text"]
        half = "tune" if hashlib.sha256(text.encode()).digest()[0] % 2 == 0 else "held_out"
        c = by_probe[(half, r["probe_classname"])]
        if text in verdict:
            c[0] += verdict[text]
            c[1] += 1
            if a.misses and half == "tune" and not verdict[text]:
                print("MISS", r["probe_classname"], repr(text[:600]))
        else:
            c[2] += 1
    for half in ("tune", "held_out"):
        total = [0, 0, 0]
        print(f"\n{half}\n\n| probe | flagged | of | not in the log |")
        print("|---|---|---|---|")
        for h, p in sorted(by_probe):
            if h != half:
                continue
            f, n, missing = by_probe[(h, p)]
            total = [total[0] + f, total[1] + n, total[2] + missing]
            print(f"| {p} | {f} | {n} | {missing} |")
        f, n, missing = total
        print(f"| all | {f} | {n} | {missing} |")
        if n:
            print(f"{half} detection: {f}/{n} = {100.0 * f / n:.1f}%")


if __name__ == "__main__":
    main()
