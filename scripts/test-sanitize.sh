#!/usr/bin/env bash
# Builds the file-format readers (engine/io) and their tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (no GUI) into build-sanitize/, and runs the tests labelled `sanitize`:
# every crafted bad safetensors / pytorch_model.bin file must give a clean error, never a memory bug.
#   usage: scripts/test-sanitize.sh [ctest options...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
export TUNEBENCH_BUILD_DIR=${TUNEBENCH_SANITIZE_BUILD_DIR:-build-sanitize}
TUNEBENCH_TARGETS="test_io test_legacy" scripts/build.sh -DTUNEBENCH_GUI=OFF -DTUNEBENCH_SANITIZE=ON
cd "$TUNEBENCH_BUILD_DIR"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} ctest --output-on-failure -L sanitize -j "$(nproc 2>/dev/null || echo 2)" "$@"
