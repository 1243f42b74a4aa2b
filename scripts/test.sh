#!/usr/bin/env bash
# Installs what is missing, builds (Release, with tests), and runs every GoogleTest suite with
# ctest: engine, app (CLI) and UI (offscreen) tests.
#   usage: scripts/test.sh [ctest options...]   e.g. scripts/test.sh -L unit   or   -R Trainer
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/build.sh -DTUNEBENCH_TESTS=ON
cd "${TUNEBENCH_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
