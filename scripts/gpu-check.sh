#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU, in one go and in under 8 minutes: builds
# the GPU tests and gpu_bench (build-gpu/), runs the tests (ctest gpu.*), benchmarks decode at
# batch 1, 16 and 64 with gpu_bench and with transformers on the same F16 weights
# (scripts/gpu_torch_bench.py on gpu_bench --export-hf), and prints ours/transformers per batch
# size. Everything (nvidia-smi, test output, both benchmarks' JSON lines, the ratios) also goes
# to one results file: $1, default gpu-check-results.txt in the repository root.
#
# Needs: the CUDA toolkit, CMake, PCRE2, doctest and CLI11 (the build is configured with
# ACTORSERVE_GPU_ONLY: the engine and gpu/ only, none of the server's other dependencies),
# Python with torch (CUDA) and transformers ($PYTHON, default python3), and
# models/SmolLM2-135M-Instruct.Q4_1.gguf.
# No network: the checkpoint transformers reads is written here from the GGUF.
# Exit status: 0 when every step passed, 1 otherwise (the results file says which failed).
set -u -o pipefail
# $1 as the caller means it, relative to where they are; the default lands in the repository
RESULTS=$(realpath -m "${1:-$(dirname "$0")/../gpu-check-results.txt}")
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
PY=${PYTHON:-python3}
BUILD=build-gpu
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
BATCH=1,16,64
TOKENS=128
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

: >"$RESULTS"
log() { echo "$*" | tee -a "$RESULTS"; }
FAILED=()
# Each step gets its own limit, cut to what is left of the overall 460 s, so the whole script
# ends within 8 minutes even when a step hangs.
DEADLINE=$((SECONDS + 460))
step() { # step NAME LIMIT_S CMD...: runs CMD, output to the terminal and the results file
    local name=$1 limit=$2 left=$((DEADLINE - SECONDS)) rc
    shift 2
    ((limit > left)) && limit=$left
    log ""
    log "== $name (limit ${limit}s)"
    if ((limit <= 0)); then
        log "-- $name: SKIPPED, no time left"
        FAILED+=("$name")
        return 1
    fi
    timeout --kill-after=5 "$limit" "$@" 2>&1 | tee -a "$RESULTS"
    rc=${PIPESTATUS[0]}
    if ((rc != 0)); then
        if ((rc == 124 || rc == 137)); then log "-- $name: TIMED OUT after ${limit}s"; else log "-- $name: FAILED (exit $rc)"; fi
        FAILED+=("$name")
        return 1
    fi
    return 0
}

log "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) in $ROOT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OURS=$TMP/gpu_bench.jsonl
THEIRS=$TMP/torch_bench.jsonl
if [[ ! -f $MODEL ]]; then
    log "gpu-check: FAILED: the model is missing: $ROOT/$MODEL (scripts/setup.sh fetches it)"
    exit 1
fi
if ! command -v nvidia-smi >/dev/null; then
    log "gpu-check: FAILED: no nvidia-smi: this script needs a machine with an NVIDIA GPU and its driver"
    exit 1
fi
step nvidia-smi 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,utilization.gpu,clocks.sm,clocks.max.sm --format=csv
step versions 60 "$PY" -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "transformers", transformers.__version__)'

# native: the architecture of the GPU here (CMake >= 3.24); 90 (H100/H200) where that fails
if ! step configure 120 cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DACTORSERVE_GPU_ONLY=ON -DACTORSERVE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native; then
    unset 'FAILED[-1]' # the native attempt; the sm_90 one decides
    rm -rf $BUILD
    step configure-sm90 120 cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DACTORSERVE_GPU_ONLY=ON -DACTORSERVE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
fi
if ! step build 300 cmake --build $BUILD -j"$(nproc)" --target gpu_tests gpu_bench; then
    log "gpu-check: FAILED: no build, nothing else can run (results in $RESULTS)"
    exit 1
fi

# gpu.* tests exit 77 (Skipped) without a device; here that is a failure, so it is looked for.
if step tests 180 bash -o pipefail -c "ctest --test-dir $BUILD -R '^gpu\.' --output-on-failure | tee $TMP/ctest.txt"; then
    if grep -q -E 'Skipped|Not Run' "$TMP/ctest.txt"; then
        log "-- tests: FAILED: some gpu.* tests were skipped or not run on a GPU machine"
        FAILED+=(tests-skipped)
    fi
fi

step gpu_bench 120 bash -o pipefail -c "$BUILD/bin/gpu_bench --model $MODEL --batch $BATCH --tokens $TOKENS --repeat 3 | tee $OURS"
# the same without CUDA graphs: what replaying decode steps as graphs buys
step gpu_bench-no-graphs 90 bash -o pipefail -c "$BUILD/bin/gpu_bench --model $MODEL --batch $BATCH --tokens $TOKENS --repeat 3 --no-graphs | tee $TMP/gpu_bench_no_graphs.jsonl"
step export-hf 60 $BUILD/bin/gpu_bench --model $MODEL --export-hf "$TMP/hf"
# the prompt's token ids come from gpu_bench's output: both run exactly the same tokens
step torch_bench 180 bash -o pipefail -c "'$PY' scripts/gpu_torch_bench.py --hf '$TMP/hf' --prompts $OURS --batch $BATCH --tokens $TOKENS --repeat 3 | tee $THEIRS"

step ratios 30 "$PY" - "$OURS" "$THEIRS" <<'EOF'
import json, sys
def load(p):
    try:
        return {d["batch"]: d for d in map(json.loads, open(p)) if d.get("what") == "decode"}
    except OSError:
        return {}
ours, theirs = load(sys.argv[1]), load(sys.argv[2])
if not ours or not theirs:
    sys.exit("ratios: a benchmark produced no results")
print(f"{'batch':>5} {'actorserve tok/s':>17} {'transformers tok/s':>19} {'ratio':>6} {'greedy agree':>13}")
for b in sorted(set(ours) | set(theirs)):
    o, t = ours.get(b), theirs.get(b)
    if not o or not t:
        print(f"{b:>5} missing from {'transformers' if o else 'actorserve'}")
        continue
    go, gt = o["greedy_seq0"], t["greedy_seq0"]
    agree = next((i for i, (x, y) in enumerate(zip(go, gt)) if x != y), min(len(go), len(gt)))
    print(f"{b:>5} {o['tok_per_s']:>17.1f} {t['tok_per_s']:>19.1f} {o['tok_per_s'] / t['tok_per_s']:>6.2f} {agree:>6}/{len(go)}")
    print(json.dumps({"what": "ratio", "batch": b, "ours_tok_per_s": o["tok_per_s"], "transformers_tok_per_s": t["tok_per_s"],
                      "ratio": round(o["tok_per_s"] / t["tok_per_s"], 3), "greedy_tokens_agree": agree}))
EOF

log ""
if ((${#FAILED[@]})); then
    log "gpu-check: FAILED steps: ${FAILED[*]} (results in $RESULTS)"
    exit 1
fi
log "gpu-check: all steps passed (results in $RESULTS)"
