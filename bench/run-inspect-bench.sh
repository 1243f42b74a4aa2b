#!/usr/bin/env bash
# The autograd inspector's cost on the demo model's training step, as ratios measured side by side:
# full recording and the always-on guard against the plain step (tunebench), and PyTorch's anomaly
# mode against the plain step (python3-torch, same model and thread count).
#   usage: bench/run-inspect-bench.sh [rounds] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
threads=${2:-$(nproc)}
TUNEBENCH_BUILD_DIR=${TUNEBENCH_BUILD_DIR:-build} TUNEBENCH_TARGETS=${TUNEBENCH_TARGETS:-inspect_step_bench} \
  scripts/build.sh -DTUNEBENCH_BENCH=ON >/dev/null
bin=${TUNEBENCH_BUILD_DIR:-build}/bench/inspect_step_bench
args=(--rounds "$rounds" --steps 4 --batch 8 --seq 128 --threads "$threads")
"$bin" "${args[@]}"
"$bin" "${args[@]}" --layers 8
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 bench/inspect_anomaly_bench.py "${args[@]}"
fi
