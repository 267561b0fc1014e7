#!/usr/bin/env bash
# The sentence embedder (all-MiniLM-L6-v2) beside sentence-transformers (torch, CPU), the same
# texts and model folder, taking turns RUNS times; medians.
#   question  short questions one at a time on one thread (a semantic-cache lookup)
#   ingest    chunks of about 200 word pieces (150 words of the retrieval corpus) in batches of
#             32 on THREADS threads (what ingest does)
# Checks that every vector of ours has cosine >= 0.999 with sentence-transformers'.
#
# sentence-transformers comes from the throwaway venv of scripts/gen_embed_reference.sh
# (.venv-embed-ref/; its torch wheel pulls several GB of CUDA libraries from PyPI).
# Environment: RUNS [3], THREADS [2], BIN [build/bin], EMBED_REFVENV [.venv-embed-ref].
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
THREADS="${THREADS:-2}"
BIN="${BIN:-build/bin}"
VENV="${EMBED_REFVENV:-.venv-embed-ref}"
MODEL_DIR=models/all-MiniLM-L6-v2
[[ -x "$BIN/actorserve" ]] || { echo "embed_bench: no $BIN/actorserve (run scripts/build.sh)" >&2; exit 1; }
[[ -x "$VENV/bin/python" ]] || { echo "embed_bench: no $VENV (see scripts/gen_embed_reference.sh)" >&2; exit 1; }
[[ -d data/rag-bench/python-docs ]] || { echo "embed_bench: no data/rag-bench (run scripts/setup.sh)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import glob, re, sys
out = sys.argv[1]
qs = ["What is the capital city of France?", "How do I reverse a list in Python?", "Who wrote Pride and Prejudice?",
      "What does the GIL do?", "How many bytes are in a kilobyte?", "Why is the sky blue?",
      "How can I read a file line by line?", "What is a closure in Python?"]
open(f"{out}/questions.txt", "w").write("\n".join(qs * 25) + "\n")
words = []
for f in sorted(glob.glob("data/rag-bench/python-docs/**/*.md", recursive=True))[:60]:
    words += re.sub(r"\s+", " ", open(f, encoding="utf-8").read()).split(" ")
open(f"{out}/chunks.txt", "w").write("\n".join(" ".join(words[i * 150:(i + 1) * 150]) for i in range(96)) + "\n")
PY

ours() { # name file threads batch
  local line
  line=$("$BIN/actorserve" embed --file "$2" --threads "$3" --batch-size "$4" 2>&1 >"$tmp/ours-$1.txt" | tail -1)
  python3 -c 'import json, re, sys
m = re.search(r"embedded (\d+) texts in ([0-9.]+) s", sys.argv[2])
n, s = int(m.group(1)), float(m.group(2))
print(json.dumps({"who": "actorserve", "test": sys.argv[1], "texts_per_s": n / s, "ms_per_text": 1000 * s / n}))' "$1" "$line"
}
for ((r = 1; r <= RUNS; r++)); do
  echo "run $r/$RUNS" >&2
  ours question "$tmp/questions.txt" 1 1 >>"$tmp/results"
  ours ingest "$tmp/chunks.txt" "$THREADS" 32 >>"$tmp/results"
  # sentence-transformers: questions on 1 thread, chunks on THREADS (two processes, as ours)
  HF_HUB_OFFLINE=1 "$VENV/bin/python" bench/embed_bench.py "$MODEL_DIR" 1 "$tmp/questions.txt" /dev/null "$tmp/st1" 2>/dev/null \
    | grep '"question"' >>"$tmp/results" || true
  HF_HUB_OFFLINE=1 "$VENV/bin/python" bench/embed_bench.py "$MODEL_DIR" "$THREADS" /dev/null "$tmp/chunks.txt" "$tmp/st2" 2>/dev/null \
    | grep '"ingest"' >>"$tmp/results" || true
done

"$VENV/bin/python" - "$tmp" "$RUNS" "$THREADS" <<'PY'
import json, statistics, sys
import numpy as np
tmp, runs, threads = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(f"{tmp}/results"):
    r = json.loads(line)
    rows.setdefault((r["who"], r["test"]), []).append(r)
print(f"embed_bench: runs={runs} (medians); question: one at a time, 1 thread; ingest: batches of 32, {threads} threads")
for test in ("question", "ingest"):
    a = rows.get(("actorserve", test), []); s = rows.get(("sentence-transformers", test), [])
    am = statistics.median(x["ms_per_text"] for x in a)
    line = f"  {test:9s} actorserve {am:8.2f} ms/text {1000 / am:8.1f} texts/s"
    if s:
        sm = statistics.median(x["ms_per_text"] for x in s)
        line += f"   sentence-transformers {sm:8.2f} ms/text {1000 / sm:8.1f} texts/s   speed ratio {sm / am:5.2f}"
    print(line)
for test, st in (("question", "st1"), ("ingest", "st2")):
    ours = np.array([[float(v) for v in l.split()] for l in open(f"{tmp}/ours-{test}.txt") if l.strip()])
    ref = np.load(f"{tmp}/{st}-{test}.npy")
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    print(f"  {test:9s} cosine with sentence-transformers: min {cos.min():.6f} over {len(cos)} texts"
          + ("" if cos.min() >= 0.999 else "   BELOW 0.999"))
    if cos.min() < 0.999: sys.exit(1)
PY
