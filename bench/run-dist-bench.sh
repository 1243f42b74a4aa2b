#!/usr/bin/env bash
# Data-parallel scaling on this machine: `tunebench launch --nproc 2` (2 ranks x 1 thread, Gloo over
# 127.0.0.1) against one `tunebench train` process with 1 thread and the same global batch, on the
# demo model's config and on a ~30 M-parameter one (full fine-tuning, random init), alternating in
# one session. A third job runs the 2 ranks with --ddp-bucket-mb 0 (every gradient summed after
# backward) to measure the whole allreduce time; the share hidden behind backward is
#   1 - (wait after backward, overlapped buckets) / (wait after backward, no overlap).
# Scaling efficiency = tokens/s of 2 ranks / (2 x tokens/s of 1 process). Medians over the steps after
# the first 2 and over the rounds; the numbers come from each run's stored metrics.
#   usage: bench/run-dist-bench.sh [rounds] [cases]     cases default: "demo 30m"
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
cases=${2:-"demo 30m"}
scripts/install-deps.sh --tests
TUNEBENCH_QUIET=1 TUNEBENCH_TARGETS=tunebench scripts/build.sh >/dev/null
bin=${TUNEBENCH_BUILD_DIR:-build}/app/tunebench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache
db=$work/runs.sqlite3
mkdir -p "$work/demo" "$work/30m"
cp resources/base/config.json "$work/demo/config.json"
/usr/bin/python3 - "$work/30m/config.json" <<'PY'
import json, sys
c = json.load(open("resources/base/config.json"))
c.update(vocab_size=8192, hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
         num_attention_heads=8, num_key_value_heads=8, head_dim=64)
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
results=$work/results.jsonl
for case in $cases; do
  steps=24; batch=4; [[ $case == 30m ]] && { steps=10; batch=2; }
  common=(--model "$work/$case" --steps "$steps" --seq-len 128 --threads 1 --no-save -q --warmup 0 --schedule constant)
  for ((r = 1; r <= rounds; r++)); do
    for job in single ranks2 ranks2-no-overlap; do
      out=$work/out-$case-$job-$r
      case $job in
        single) "$bin" --db "$db" train "${common[@]}" --batch-size $((2 * batch)) --output "$out" >/dev/null ;;
        ranks2) "$bin" --db "$db" launch --nproc 2 -- train "${common[@]}" --batch-size "$batch" --output "$out" >/dev/null ;;
        ranks2-no-overlap) "$bin" --db "$db" launch --nproc 2 -- train "${common[@]}" --batch-size "$batch" \
                             --ddp-bucket-mb 0 --output "$out" >/dev/null ;;
      esac
      keys=(--key train/tokens_per_second --key train/step_seconds)
      [[ $job == single ]] || keys+=(--key dist/allreduce_wait_seconds)
      "$bin" --db "$db" runs metrics "$out" "${keys[@]}" --json >"$work/metrics.json"
      /usr/bin/python3 - "$work/metrics.json" "$case" "$job" >>"$results" <<'PY'
import json, statistics, sys
metrics, case, job = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
series = lambda key: [p["value"] for p in metrics.get(key, [])][2:]  # after the first 2 steps
wait = series("dist/allreduce_wait_seconds")
print(json.dumps({"case": case, "job": job, "tokens_per_second": statistics.median(series("train/tokens_per_second")),
                  "step_seconds": statistics.median(series("train/step_seconds")),
                  "wait_seconds": statistics.median(wait) if wait else 0.0}))
PY
      tail -1 "$results"
    done
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
print()
print(f"{'case':6} {'1 proc tok/s':>13} {'2 ranks tok/s':>14} {'speed-up':>9} {'efficiency':>11} {'wait overlap':>13} {'wait after':>11} {'hidden':>7}")
for case in dict.fromkeys(r["case"] for r in runs):
    med = lambda job, key: statistics.median(r[key] for r in runs if r["case"] == case and r["job"] == job)
    one, two = med("single", "tokens_per_second"), med("ranks2", "tokens_per_second")
    overlapped, serial = med("ranks2", "wait_seconds"), med("ranks2-no-overlap", "wait_seconds")
    hidden = 1 - overlapped / serial if serial > 0 else float("nan")
    print(f"{case:6} {one:13.0f} {two:14.0f} {two / one:9.2f} {two / (2 * one):11.2f} {overlapped * 1e3:11.1f}ms {serial * 1e3:9.1f}ms {hidden:7.2f}")
PY
