#!/usr/bin/env bash
# Builds the file-format readers (engine/io) and their tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (no GUI) into build-sanitize/, and runs the tests labelled `sanitize`:
# every crafted bad safetensors / pytorch_model.bin file must give a clean error, never a memory bug.
#   usage: scripts/test-sanitize.sh [ctest options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
export TUNEBENCH_BUILD_DIR=${TUNEBENCH_SANITIZE_BUILD_DIR:-build-sanitize}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
generator=()
if [[ ! -f "$TUNEBENCH_BUILD_DIR/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B "$TUNEBENCH_BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_GUI=OFF \
  -DTUNEBENCH_SANITIZE=ON "${launcher[@]}" >/dev/null
cmake --build "$TUNEBENCH_BUILD_DIR" --target test_io test_legacy -j "$(nproc 2>/dev/null || echo 2)"
cd "$TUNEBENCH_BUILD_DIR"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} ctest --output-on-failure -L sanitize -j "$(nproc 2>/dev/null || echo 2)" "$@"
