#!/usr/bin/env python3
"""The soak's verdict (bench/soak.sh writes OUT): reads samples.csv, the two actorserve-bench
reports and chaos.json; checks

  errors     no request ended in an error other than the documented refusals (overloaded, with
             Retry-After; the chaos driver's expected refusals of bad input)
  rss        RSS growth under 5% over the last 20 minutes (over the second half when the run is
             shorter than 30 minutes), from the sample at its start to the highest after it
  fds        open descriptors at the end, load gone, no more than after the first minute
  threads    the same for threads

and draws rss.svg (RSS over time) and throughput.svg (generated tokens per second between
samples). Writes summary.json; prints it; exit 1 when a check fails.
"""
import argparse
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small files
matplotlib.rcParams["svg.hashsalt"] = "actorserve-soak"  # the same data, the same file
import matplotlib.pyplot as plt  # noqa: E402


def load_samples(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def bench_summary(path):
    if not os.path.exists(path):
        return {"missing": True}
    with open(path) as f:
        rep = json.load(f)
    s = rep["runs"][0]["summary"]
    return {"requests": s["requests"], "ok": s["ok"], "overloaded": s["overloaded"], "errors": s["errors"],
            "errors_by_type": s["errors_by_type"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=float, required=True)
    a = ap.parse_args()
    rows = load_samples(os.path.join(a.out, "samples.csv"))
    load_rows = [r for r in rows if r["t_s"] <= a.duration + 1]
    window = 1200.0 if a.duration >= 1800 else a.duration / 2  # the last 20 minutes of a 30-minute soak
    start_t = a.duration - window
    base = min(load_rows, key=lambda r: abs(r["t_s"] - start_t))
    later = [r for r in load_rows if r["t_s"] >= base["t_s"]]
    rss_peak = max(r["rss_kib"] for r in later)
    rss_growth = (rss_peak - base["rss_kib"]) / base["rss_kib"]
    warm = min(rows, key=lambda r: abs(r["t_s"] - 60))
    end = rows[-1]

    ws = bench_summary(os.path.join(a.out, "bench_ws.json"))
    oa = bench_summary(os.path.join(a.out, "bench_openai.json"))
    with open(os.path.join(a.out, "chaos.json")) as f:
        chaos = json.load(f)

    checks = {
        "errors": all(not b.get("missing") and b["errors"] == 0 for b in (ws, oa)) and not chaos["unexpected"],
        "rss": rss_growth < 0.05,
        "fds": end["fds"] <= warm["fds"],
        "threads": end["threads"] <= warm["threads"],
    }
    summary = {
        "duration_s": a.duration,
        "rss_window_s": window,
        "rss_kib": {"window_start": base["rss_kib"], "peak_after": rss_peak, "growth_percent": round(100 * rss_growth, 2),
                    "first": rows[0]["rss_kib"], "end": end["rss_kib"]},
        "fds": {"after_1_min": warm["fds"], "max": max(r["fds"] for r in rows), "end": end["fds"]},
        "threads": {"after_1_min": warm["threads"], "max": max(r["threads"] for r in rows), "end": end["threads"]},
        "retained_end": end["retained"],
        "generation_tokens": end["generation_tokens"],
        "cache_hits": end["cache_hits"],
        "bench_ws": ws,
        "bench_openai": oa,
        "chaos": chaos["actions"],
        "chaos_unexpected": chaos["unexpected"],
        "checks": checks,
        "passed": all(checks.values()),
    }

    t_min = [r["t_s"] / 60 for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t_min, [r["rss_kib"] / 1024 for r in rows], color="tab:blue")
    ax.axvspan(base["t_s"] / 60, a.duration / 60, color="tab:blue", alpha=0.08, label="growth window")
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"actorserve RSS during the soak (growth in the window {100 * rss_growth:.1f}%)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "rss.svg"))

    fig, ax = plt.subplots(figsize=(8, 3.5))
    tps = [(rows[i]["generation_tokens"] - rows[i - 1]["generation_tokens"]) / max(1e-9, rows[i]["t_s"] - rows[i - 1]["t_s"])
           for i in range(1, len(rows))]
    ax.plot(t_min[1:], tps, color="tab:green")
    ax.set_xlabel("minutes")
    ax.set_ylabel("generated tokens / s")
    ax.set_ylim(bottom=0)
    ax.set_title("actorserve throughput during the soak")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "throughput.svg"))

    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
