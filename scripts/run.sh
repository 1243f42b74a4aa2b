#!/usr/bin/env bash
# The main job: installs what is missing, builds in Release, and runs the demo: LoRA fine-tuning of the
# bundled base model (pretrained on Moby-Dick by tunebench) on a Jargon File slice, with the eval loss
# and a sample before and after: in the GUI when there is a display, else in the terminal.
#   usage: scripts/run.sh [tunebench train options...]   (options apply to the terminal run)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin=${TUNEBENCH_BUILD_DIR:-build}/app/tunebench
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  exec "$bin" --demo
fi
echo "tunebench: no display (DISPLAY and WAYLAND_DISPLAY are unset): running the demo in the terminal" >&2
exec "$bin" train --demo "$@"
