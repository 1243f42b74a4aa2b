#!/usr/bin/env bash
# Configures and builds tunebench in Release into build/ (or $TUNEBENCH_BUILD_DIR).
#   usage: scripts/build.sh [extra cmake -D options...]
#   env:   TUNEBENCH_BUILD_DIR (default build), TUNEBENCH_TARGETS (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TUNEBENCH_BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The precompiled torch header needs these to be cacheable.
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  # Paths relative to the checkout, so a fresh clone elsewhere (CI) hits the same cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
generator=()
if [[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
targets=()
for target in ${TUNEBENCH_TARGETS:-}; do
  targets+=(--target "$target")
done
cmake --build "$build_dir" "${targets[@]}" -j "$(nproc 2>/dev/null || echo 2)"
