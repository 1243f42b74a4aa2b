#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release, and trains the built-in demo model on
# the bundled corpus: in the GUI when there is a display, else in the terminal with a progress bar.
#   usage: scripts/run.sh [tunebench train options...]   (options apply to the terminal run)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=${TUNEBENCH_BUILD_DIR:-build}/app/tunebench
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  exec "$bin" --demo
fi
echo "tunebench: no display (DISPLAY and WAYLAND_DISPLAY are unset): training the demo in the terminal" >&2
exec "$bin" train "$@"
