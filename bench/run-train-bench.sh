#!/usr/bin/env bash
# Training tokens/s of the engine against the same model and step in Python (python3-torch): full
# fine-tuning and LoRA (r 16 on q,k,v,o), on the demo model's config and on a ~30 M-parameter one,
# same thread count, C++ and Python alternating in one session. Prints every run, then per case the
# median ratio tunebench/python (targets: >= 1.3 on the demo model, >= 1.1 on 30m) and the model FLOPs
# utilisation of each side: k * params * tokens/s / the fp32 matmul rate measured in the same run
# (k = 6 for full fine-tuning: forward, and backward to activations and to weights; k = 4 for LoRA,
# whose frozen weights get no gradient).
# The engine keeps freed memory for the next step (engine/core/mallocpolicy.h); Python does not by
# default. REFERENCE_MALLOC=tuned gives the Python side the same glibc settings (MALLOC_*_ variables),
# for the like-for-like ratio of everything else.
#   usage: bench/run-train-bench.sh [rounds] [threads] [cases]    cases default: "demo:full demo:lora 30m:full 30m:lora"
#          (also qwen3-30m:full qwen3-30m:lora, gemma3-30m:full gemma3-30m:lora: the ~30 M size as Qwen3 and as
#          Gemma 3's text layers)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${2:-$(nproc)}
cases=${3:-"demo:full demo:lora 30m:full 30m:lora"}
scripts/install-deps.sh --tests
TUNEBENCH_BUILD_DIR=${TUNEBENCH_BUILD_DIR:-build} scripts/build.sh -DTUNEBENCH_BENCH=ON >/dev/null
bin=${TUNEBENCH_BUILD_DIR:-build}/bench/train_step_bench
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for case in $cases; do
  config=${case%%:*}; method=${case##*:}
  steps=15; [[ $config == *30m ]] && steps=5
  args=(--steps "$steps" --warmup 2 --batch 8 --seq 128 --threads "$threads" --config "$config" --method "$method")
  for ((r = 1; r <= rounds; r++)); do
    "$bin" "${args[@]}" | tee -a "$results"
    if [[ ${REFERENCE_MALLOC:-} == tuned ]]; then
      MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=67108864 \
        /usr/bin/python3 bench/train_step_bench.py "${args[@]}" | tee -a "$results"
    else
      /usr/bin/python3 bench/train_step_bench.py "${args[@]}" | tee -a "$results"
    fi
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print()
print(f"{'case':12} {'tunebench tok/s':>16} {'python tok/s':>13} {'ratio':>6} {'matmul GFLOP/s':>15} {'MFU tunebench':>14} {'MFU python':>11}")
for case in dict.fromkeys((r["config"], r["method"]) for r in runs):
    mine = [r for r in runs if (r["config"], r["method"]) == case and r["impl"] == "tunebench"]
    ref = [r for r in runs if (r["config"], r["method"]) == case and r["impl"] == "python"]
    c = statistics.median(r["tokens_per_second"] for r in mine)
    p = statistics.median(r["tokens_per_second"] for r in ref)
    rate = statistics.median(r["matmul_gflops"] for r in mine) * 1e9
    k = 6 if case[1] == "full" else 4
    n = mine[0]["params"]
    print(f"{case[0] + ' ' + case[1]:12} {c:16.0f} {p:13.0f} {c / p:6.2f} {rate / 1e9:15.0f} {k * n * c / rate:14.2f} {k * n * p / rate:11.2f}")
PY
