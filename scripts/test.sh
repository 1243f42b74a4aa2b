#!/usr/bin/env bash
# Installs what is missing, builds (Release, with tests), and runs every GoogleTest suite with
# ctest: engine, app (CLI) and UI (offscreen) tests. After ctest, lists each skipped test with the
# reason its GTEST_SKIP gave.
#   usage: scripts/test.sh [ctest options...]   e.g. scripts/test.sh -L unit   or   -R Trainer
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --tests
scripts/build.sh -DTUNEBENCH_TESTS=ON
cd "${TUNEBENCH_BUILD_DIR:-build}"
log=Testing/Temporary/LastTest.log
rm -f "$log"
status=0
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@" || status=$?

# ctest marks a GTEST_SKIP test "Skipped" (gtest_discover_tests' SKIP_REGULAR_EXPRESSION) but does
# not say why; gtest printed the reason between "FILE:LINE: Skipped" and "[  SKIPPED ] NAME".
if [[ -f "$log" ]]; then
  skipped=$(awk -v root="$root/" '
    /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); where = ""; reason = ""; inReason = 0; next }
    inReason && /^\[  SKIPPED \] / { inReason = 0; next }
    inReason { reason = reason (reason == "" ? "" : " ") $0; next }
    /:[0-9]+: Skipped$/ {
      where = $0; sub(/: Skipped$/, "", where)
      if (index(where, root) == 1) where = substr(where, length(root) + 1)
      sub(/^(\.\.\/)+/, "", where) # relative to the build folder (ccache base dir)
      inReason = 1; next
    }
    /^Skip regular expression found in output/ {
      printf "  %s: %s%s\n", name, reason == "" ? "(no reason given)" : reason, where == "" ? "" : "  [" where "]"
    }' "$log" | sort)
  if [[ -z "$skipped" ]]; then
    echo "No test was skipped."
  else
    count=$(wc -l <<<"$skipped")
    echo "$count skipped test$([[ $count -eq 1 ]] || echo s), and why:"
    echo "$skipped"
  fi
fi
exit "$status"
