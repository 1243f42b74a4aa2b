#!/usr/bin/env bash
# Configures and builds tunebench in Release into build/ (or $TUNEBENCH_BUILD_DIR).
#   usage: scripts/build.sh [extra cmake -D options...]
#   env:   TUNEBENCH_BUILD_DIR (default build), TUNEBENCH_TARGETS (default: everything),
#          TUNEBENCH_QUIET=1: the configure and build output go to BUILD_DIR/build.log; the terminal
#          shows one progress line ("building tunebench: 123/456", updated in place on a terminal,
#          a plain line now and then otherwise); on failure, the log's last 40 lines and its path.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TUNEBENCH_BUILD_DIR:-build}
quiet=${TUNEBENCH_QUIET:-0}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The precompiled torch header needs these to be cacheable.
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  # Paths relative to the checkout, so a fresh clone elsewhere (CI) hits the same cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
generator=()
if [[ ! -f "$build_dir/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
targets=()
for target in ${TUNEBENCH_TARGETS:-}; do
  targets+=(--target "$target")
done
jobs=$(nproc 2>/dev/null || echo 2)

if [[ "$quiet" != 1 ]]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
  cmake --build "$build_dir" "${targets[@]}" -j "$jobs"
  exit 0
fi

# Quiet: everything into the log, one progress line on the terminal.
mkdir -p "$build_dir"
log=$build_dir/build.log
what=${TUNEBENCH_TARGETS:-everything}
tty=0
[[ -t 1 ]] && tty=1
fail() {
  ((tty)) && printf '\r\033[K'
  echo "$1 failed; the last 40 lines of $log:"
  tail -n 40 "$log"
  echo "(the whole log: $log)"
  exit 1
}
: >"$log"
if ((tty)); then
  printf 'configuring %s...' "$what"
else
  echo "building $what (log: $log)"
fi
# A configured tree reconfigures itself when a CMakeLists.txt changes; with no options to set,
# skipping the explicit configure saves its seconds.
if [[ $# -gt 0 || ! -f "$build_dir/CMakeCache.txt" ]] \
    || { [[ ! -f "$build_dir/build.ninja" ]] && [[ ! -f "$build_dir/Makefile" ]]; }; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >>"$log" 2>&1 \
    || fail "configuring $what"
fi
start=$SECONDS
# Ninja prints "[done/total] ..." per step, the Makefile generator "[ 42%] ...".
show_progress() {
  local line progress last_print=-30
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\]\  ]]; then
      progress="${BASH_REMATCH[1]}/${BASH_REMATCH[2]}"
    elif [[ "$line" =~ ^\[\ *([0-9]+)%\]\  ]]; then
      progress="${BASH_REMATCH[1]}%"
    else
      continue
    fi
    if ((tty)); then
      printf '\r\033[Kbuilding %s: %s' "$what" "$progress"
    elif ((SECONDS - start >= last_print + 30)); then
      last_print=$((SECONDS - start))
      echo "building $what: $progress"
    fi
  done
}
set +e
cmake --build "$build_dir" "${targets[@]}" -j "$jobs" 2>&1 | show_progress
status=${PIPESTATUS[0]}
set -e
((status == 0)) || fail "building $what"
((tty)) && printf '\r\033[K'
if grep -q '^ninja: no work to do' "$log"; then
  echo "$what is up to date (log: $log)"
else
  echo "built $what in $((SECONDS - start)) s (log: $log)"
fi
