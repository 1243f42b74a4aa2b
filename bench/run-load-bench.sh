#!/usr/bin/env bash
# Loading a ~1 GiB F32 safetensors file into CPU tensors against `cat FILE > /dev/null` (warm
# cache), as ratios, plus the loader's peak RSS against the file size. Median of the rounds.
# Targets: load <= 1.2x the read time; peak RSS <= file size + 10%.
#   usage: bench/run-load-bench.sh [rounds] [file]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
file=${2:-/tmp/tunebench-load-bench.safetensors}
build_dir=${TUNEBENCH_BUILD_DIR:-build}
if command -v ccache >/dev/null; then
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
fi
cmake -S . -B "$build_dir" -DTUNEBENCH_BENCH=ON >/dev/null
cmake --build "$build_dir" --target safetensors_load_bench -j "$(nproc)" >/dev/null
bin=$build_dir/bench/safetensors_load_bench
[[ -f $file ]] || "$bin" create "$file" --tensors 64 --elements 4194304
cat "$file" >/dev/null; cat "$file" >/dev/null # warm the page cache
results=()
for ((r = 1; r <= rounds; r++)); do
  start=$(date +%s.%N); cat "$file" >/dev/null; end=$(date +%s.%N)
  read_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }')
  line="{\"round\": $r, \"cat_seconds\": $read_s"
  for mode in map-touch map-sum copy; do
    out=$("$bin" load "$file" --mode "$mode")
    line+=", \"$mode\": $out"
  done
  line+="}"
  echo "$line"
  results+=("$line")
done
printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin]
cat = statistics.median(r["cat_seconds"] for r in rows)
size = rows[0]["copy"]["file_bytes"]
print(f"file {size / 2**30:.2f} GiB, cat (warm) median {cat:.3f} s")
for mode in ("map-touch", "map-sum", "copy"):
    s = statistics.median(r[mode]["seconds"] for r in rows)
    ratios = statistics.median(r[mode]["seconds"] / r["cat_seconds"] for r in rows)
    rss = statistics.median(r[mode]["peak_rss_bytes"] for r in rows)
    base = statistics.median(r[mode]["rss_before_bytes"] for r in rows)
    print(f"{mode:9s}: {s:.3f} s = {ratios:.2f}x cat (target <= 1.2); peak RSS {rss / 2**20:.0f} MiB = "
          f"{rss / size:.2f}x file (target <= 1.10); growth while loading {(rss - base) / size:.2f}x file "
          f"(libtorch alone: {base / 2**20:.0f} MiB)")
'
