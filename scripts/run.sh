#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release, and runs the demo: LoRA fine-tuning of the
# bundled base model (pretrained on Moby-Dick by tunebench) on a Jargon File slice, with the eval loss
# and a sample before and after: in the GUI when there is a display, else in the terminal.
#   usage: scripts/run.sh [tunebench train options...]   (options apply to the terminal run)
# Builds only the tunebench binary, quietly (the log: BUILD_DIR/build.log); scripts/test.sh, in the
# same build folder, builds the tests. A fresh folder is configured without the tests; one already
# configured keeps its options, so the two never undo each other's settings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${TUNEBENCH_BUILD_DIR:-build}
options=()
[[ -f "$build_dir/CMakeCache.txt" ]] || options=(-DTUNEBENCH_TESTS=OFF)
TUNEBENCH_QUIET=1 TUNEBENCH_TARGETS=tunebench scripts/build.sh "${options[@]}"
bin=$build_dir/app/tunebench
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  exec "$bin" --demo
fi
echo "tunebench: no display (DISPLAY and WAYLAND_DISPLAY are unset): running the demo in the terminal" >&2
exec "$bin" train --demo "$@"
