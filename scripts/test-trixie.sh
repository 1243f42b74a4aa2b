#!/usr/bin/env bash
# The test command (scripts/test.sh) in a bare Debian 13 (trixie) root: libtorch 2.6, Qt 6.8,
# python3-torch 2.6, as a newcomer's Debian 13 machine has them. Runs the committed HEAD (commit first).
#   usage: scripts/test-trixie.sh [ctest options...]
#   env:   FRESH_TOOL (default ../shared/tools/fresh-debian), FRESH_KEEP=1 keeps the root for a look inside
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${FRESH_TOOL:-../shared/tools/fresh-debian}
[[ -x "$tool" ]] || { echo "test-trixie: $tool is missing (it comes with the project's shared/ folder)" >&2; exit 2; }
args=""
for a in "$@"; do args+=" $(printf '%q' "$a")"; done
FRESH_SUITE=trixie "$tool" "scripts/test.sh$args"
