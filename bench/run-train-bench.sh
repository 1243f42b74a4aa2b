#!/usr/bin/env bash
# Training tokens/s of the engine against the same model and step in Python (python3-torch),
# same thread count, alternating runs in one session; prints both and the ratio (target >= 1.0).
#   usage: bench/run-train-bench.sh [rounds] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${2:-$(nproc)}
scripts/install-deps.sh --tests
TUNEBENCH_BUILD_DIR=${TUNEBENCH_BUILD_DIR:-build} scripts/build.sh -DTUNEBENCH_BENCH=ON >/dev/null
bin=${TUNEBENCH_BUILD_DIR:-build}/bench/train_step_bench
args=(--steps 15 --warmup 3 --batch 8 --seq 128 --threads "$threads")
cpp=(); py=()
for ((r = 1; r <= rounds; r++)); do
  c=$("$bin" "${args[@]}"); echo "$c"
  p=$(/usr/bin/python3 bench/train_step_bench.py "${args[@]}"); echo "$p"
  cpp+=("$(sed 's/.*"tokens_per_second": \([0-9.]*\).*/\1/' <<<"$c")")
  py+=("$(sed 's/.*"tokens_per_second": \([0-9.]*\).*/\1/' <<<"$p")")
done
/usr/bin/python3 - "${cpp[*]}" "${py[*]}" <<'PY'
import statistics, sys
c = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
mc, mp = statistics.median(c), statistics.median(p)
print(f"median tokens/s: tunebench {mc:.0f}, python {mp:.0f}; ratio tunebench/python = {mc / mp:.2f}")
PY
