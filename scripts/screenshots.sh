#!/usr/bin/env bash
# Regenerates the README's pictures in docs/: each page of the window (offscreen, driven by the UI
# tests' screenshot cases: the Train page during the demo, the Plan page on ChatGLM-6B's config, the
# Inspect page on the KV-cache scenario, the Runs page with three real demo runs overlaid) and the
# Plan/Inspect widgets with sample data. Look at every picture before committing it. (Each settings tab
# of the Train page: TUNEBENCH_TRAINPAGE_SHOTS=FOLDER build/tests/ui/test_ui --gtest_filter=TrainPageTest.PicturesOfEachTab)
#   usage: scripts/screenshots.sh [OUT_DIR]   (default docs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-docs}")
mkdir -p "$out"
scripts/install-deps.sh --tests
TUNEBENCH_QUIET=1 TUNEBENCH_TARGETS="test_ui render_widgets" scripts/build.sh -DTUNEBENCH_TESTS=ON
build=${TUNEBENCH_BUILD_DIR:-build}
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}

shoot() { # VARIABLE VALUE TEST
  echo "== $3 -> $2"
  env "$1=$2" "$build/tests/ui/test_ui" --gtest_filter="$3" --gtest_brief=1
}
shoot TUNEBENCH_SCREENSHOT "$out/train-page.png" MainWindowTest.Screenshot
shoot TUNEBENCH_RUNS_SCREENSHOT "$out/runs-page.png" MainWindowTest.RunsScreenshot
shoot TUNEBENCH_PLAN_SCREENSHOT "$out/plan-page.png" PlanPageTest.Screenshot
shoot TUNEBENCH_INSPECT_SCREENSHOT "$out/inspect-page.png" InspectPage.Screenshot
echo "== widgets -> $out"
"$build/tests/ui/render_widgets" "$out"
echo "Pictures written to $out:"
find "$out" -name '*.png' -printf '  %P  %TY-%Tm-%Td %TH:%TM\n' | sort
