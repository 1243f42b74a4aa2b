#!/usr/bin/env bash
# The configuration cluster nodes build: no GUI (-DTUNEBENCH_GUI=OFF), into build-headless/. Builds
# the CLI and every engine and CLI test, and runs them (the data-parallel tests included; the UI tests
# do not exist in this configuration).
#   usage: scripts/test-headless.sh [ctest options...]   e.g. scripts/test-headless.sh -R Dist
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
export TUNEBENCH_BUILD_DIR=${TUNEBENCH_HEADLESS_BUILD_DIR:-build-headless}
TUNEBENCH_QUIET=1 scripts/build.sh -DTUNEBENCH_GUI=OFF -DTUNEBENCH_TESTS=ON
cd "$TUNEBENCH_BUILD_DIR"
# A node without Qt must be able to run it: the binary itself needs no Qt library. (Its NEEDED
# entries, not ldd's closure: Debian 12's libtorch_cpu needs OpenCV's highgui, which needs Qt 5; that
# comes with libtorch on every node and is none of tunebench's.)
for binary in app/tunebench app/tunebench-full; do
  if readelf -d "$binary" | grep NEEDED | grep -q 'libQt'; then
    echo "tunebench: the GUI-off build's $binary links Qt:" >&2
    readelf -d "$binary" | grep NEEDED | grep libQt >&2
    exit 1
  fi
done
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
