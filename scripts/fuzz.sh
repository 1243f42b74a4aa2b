#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, no GUI) into build-fuzz/ and runs
# each for a while, seeded from tests/fuzz/corpus/<target>/. A crash, sanitizer report, leak or
# timeout fails the script; the input that caused it is saved under build-fuzz/crashes/<target>/
# (reproduce: build-fuzz/tests/fuzz/<target> build-fuzz/crashes/<target>/crash-...).
#   usage: scripts/fuzz.sh [seconds-per-target (default 30)] [target ...]   (default: every target)
#   env:   TUNEBENCH_FUZZ_BUILD_DIR (default build-fuzz), TUNEBENCH_FUZZ_JOBS (build jobs, default nproc)
# Inputs found to add coverage accumulate in build-fuzz/corpus/<target>/, so repeated runs go deeper.
# Per target and run, build-fuzz/fuzz-stats.tsv gets a line: target, seconds, executions, result.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
build_dir=${TUNEBENCH_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${TUNEBENCH_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}

# clang and its runtime libraries (libFuzzer, ASan, UBSan) on top of the normal build's packages.
scripts/install-deps.sh
missing=()
for p in clang-14 libclang-rt-14-dev; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "tunebench: installing ${missing[*]}" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "tunebench: run as root or install sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
generator=()
[[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja >/dev/null && generator=(-G Ninja)
# -O1: the sanitizers' usual level; it compiles about twice as fast as -O3 and runs nearly as fast.
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" \
  -DTUNEBENCH_FUZZ=ON -DTUNEBENCH_GUI=OFF -DTUNEBENCH_TESTS=OFF >/dev/null
cmake --build "$build_dir" --target fuzzers -j "$jobs"

targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in tests/fuzz/fuzz_*.cpp; do
    targets+=("$(basename "$source" .cpp)")
  done
fi

dictionary_of() {
  case "$1" in
    fuzz_chat_template) echo tests/fuzz/jinja.dict ;;
    fuzz_pytorch_bin) ;;
    *) echo tests/fuzz/json.dict ;;
  esac
}

stats=$build_dir/fuzz-stats.tsv
failed=()
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  corpus=$build_dir/corpus/$name
  crashes=$build_dir/crashes/$target
  mkdir -p "$corpus" "$crashes"
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
           -artifact_prefix="$crashes/")
  dict=$(dictionary_of "$target")
  [[ -n "$dict" ]] && options+=(-dict="$dict")
  log=$build_dir/fuzz-$name.log
  echo "fuzzing $target for $seconds s (log: $log)"
  set +e
  # The first folder receives new inputs; the checked-in seeds are only read.
  "$build_dir/tests/fuzz/$target" "${options[@]}" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1
  status=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if ((status == 0)); then
    result=ok
  else
    result="failed ($status)"
    failed+=("$target")
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz: )|runtime error' "$log" | head -n 5 || true
    echo "  input saved in $crashes/"
  fi
  printf '%s\t%s\t%s\t%s\n' "$target" "$seconds" "${runs:-?}" "$result" | tee -a "$stats"
done

if ((${#failed[@]} > 0)); then
  echo "fuzzing found problems in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: no crash in ${#targets[@]} targets ($seconds s each)"
