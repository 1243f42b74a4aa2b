#!/usr/bin/env bash
# Checks the Debian package that scripts/package.sh built: its control fields and Depends, that it
# holds the binary, the sentencepiece module, the bundled resources, the desktop file, the icons and
# the AppStream metainfo (appstreamcli validates the unpacked tree), and that the unpacked binary
# reports the package's version and trains the demo for two steps from the packaged resources.
#   usage: scripts/test-package.sh [PACKAGE.deb]   (default: the one in build-package/)
#   needs: dpkg-deb, appstreamcli (appstream), file; desktop-file-validate (desktop-file-utils) if present
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${1:-$(find "${TUNEBENCH_BUILD_DIR:-build-package}" -maxdepth 1 -name 'tunebench_*.deb' 2>/dev/null | head -n 1)}
[[ -n "$deb" && -f "$deb" ]] || { echo "test-package: no .deb given and none in build-package/ (run scripts/package.sh)" >&2; exit 2; }
app_id=io.tunebench.Tunebench

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }
# check WHAT COMMAND...: COMMAND's success is WHAT holding.
check() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
dpkg-deb -x "$deb" "$root"
field() { dpkg-deb -f "$deb" "$1"; }

# Control fields.
version=$(field Version)
project_version=$(sed -n 's/^project(tunebench VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
check "Package '$(field Package)' is tunebench" [ "$(field Package)" = tunebench ]
check "Architecture '$(field Architecture)' is this machine's" [ "$(field Architecture)" = "$(dpkg --print-architecture)" ]
check "Version '$version' is CMakeLists.txt's ($project_version)" [ "$version" = "$project_version" ]

# Depends: each shared library the binary and module link comes from dpkg-shlibdeps; the ones added
# by hand are what no ELF file names. Names are matched without their soname suffix (Debian 13 has
# libtorch2.6, libicu76).
depends=$(field Depends)
echo "Depends: $depends"
# names_dependency NAME: a package in Depends (or one of its alternatives) starts with NAME.
names_dependency() {
  local entry entries
  IFS=',|' read -ra entries <<<"$depends"
  for entry in "${entries[@]}"; do
    entry=${entry#"${entry%%[! ]*}"} # without its leading spaces
    [[ $entry == "$1"* ]] && return 0
  done
  return 1
}
for dep in libtorch libqt6core6 libqt6gui6 libqt6widgets6 libqt6svg6 libqcustomplot2.1-qt6 libgvc6 \
  libsqlite3-0 libsentencepiece libonig libicu libcairo2 libc6 libstdc++6 \
  libopenblas0-openmp fonts-dejavu-core; do
  check "Depends names $dep" names_dependency "$dep"
done
check "Depends carries minimum versions (dpkg-shlibdeps ran)" grep -q '(>= ' <<<"$depends"

# Contents: everything under /usr, the binary and the module stripped, the resources whole.
outside=$(dpkg-deb -c "$deb" | awk '{print $6}' | grep -Ev '^\./(usr/.*)?$' || true)
check "every file is under /usr${outside:+ (not: $outside)}" [ -z "$outside" ]
check "/usr/bin/tunebench is executable" [ -x "$root/usr/bin/tunebench" ]
module=$(find "$root/usr/lib" -path '*/tunebench/libtunebench_spm.so' 2>/dev/null | head -n 1)
check "the sentencepiece module is in /usr/lib/*/tunebench" [ -n "$module" ]
full=$(find "$root/usr/lib" -path '*/tunebench/tunebench-full' 2>/dev/null | head -n 1)
check "tunebench-full (what the front execs for torch commands) is in /usr/lib/*/tunebench" test -n "$full" -a -x "$full"
gui=$(find "$root/usr/lib" -path '*/tunebench/tunebench-gui' 2>/dev/null | head -n 1)
check "tunebench-gui (what the front execs for the GUI) is in /usr/lib/*/tunebench" test -n "$gui" -a -x "$gui"
engine=$(find "$root/usr/lib" -path '*/tunebench/libtunebench_engine.so' 2>/dev/null | head -n 1)
check "the engine module (the GUI's libtorch half) is in /usr/lib/*/tunebench" [ -n "$engine" ]
check "/usr/bin/tunebench (the front) links no libtorch" bash -c "! readelf -d '$root/usr/bin/tunebench' | grep NEEDED | grep -q libtorch"
check "tunebench-gui links no libtorch" bash -c "[ -n '$gui' ] && ! readelf -d '$gui' | grep NEEDED | grep -q libtorch"
for file in "$root/usr/bin/tunebench" "$full" "$module" "$gui" "$engine"; do
  [[ -f "$file" ]] || continue
  check "${file#"$root"} is stripped" grep -q ', stripped' <<<"$(file -b "$file")"
done
resources=$root/usr/share/tunebench
while IFS= read -r -d '' source; do
  relative=${source#resources/}
  check "resource $relative is packaged, the same as resources/$relative" cmp -s "$source" "$resources/$relative"
done < <(find resources/demo resources/base resources/python resources/plan-catalog -type f ! -name '*.sh' ! -name '*.pyc' ! -path '*/__pycache__/*' -print0)
caches=$(find "$resources" -name '__pycache__' 2>/dev/null)
check "no Python caches in the resources${caches:+ (found: $caches)}" [ -z "$caches" ]
scripts=$(find "$resources" -name '*.sh' 2>/dev/null)
check "no source-tree scripts in the resources${scripts:+ (found: $scripts)}" [ -z "$scripts" ]

# Desktop file.
desktop=$root/usr/share/applications/$app_id.desktop
if [[ ! -f "$desktop" ]]; then
  fail "no /usr/share/applications/$app_id.desktop"
elif command -v desktop-file-validate >/dev/null; then
  check "desktop-file-validate accepts $app_id.desktop" desktop-file-validate "$desktop"
else
  # The keys desktop-file-validate would check first (it is not installed here).
  key() { sed -n "s/^$1=//p" "$desktop"; }
  before=$failures
  [[ "$(head -n 1 "$desktop")" == "[Desktop Entry]" ]] || fail "desktop file does not start with [Desktop Entry]"
  [[ "$(key Type)" == Application ]] || fail "desktop Type is not Application"
  [[ -n "$(key Name)" && -n "$(key Comment)" ]] || fail "desktop file lacks Name or Comment"
  [[ -x "$root/usr/bin/$(key Exec | cut -d' ' -f1)" ]] || fail "desktop Exec '$(key Exec)' is not in /usr/bin"
  [[ "$(key Icon)" == "$app_id" ]] || fail "desktop Icon is '$(key Icon)', not $app_id"
  grep -Eq '^Categories=(.*;)?(AudioVideo|Audio|Video|Development|Education|Game|Graphics|Network|Office|Science|Settings|System|Utility);(.*;)?$' "$desktop" \
    || fail "desktop Categories lack a main category or the closing ';'"
  duplicated=$(grep -o '^[A-Za-z]*=' "$desktop" | sort | uniq -d)
  [[ -z "$duplicated" ]] || fail "desktop keys given twice: $duplicated"
  ((failures > before)) || pass "desktop file keys (desktop-file-validate not installed)"
fi

# Icons: the SVG, and each PNG at the size its folder names.
check "icon scalable/apps/$app_id.svg" [ -f "$root/usr/share/icons/hicolor/scalable/apps/$app_id.svg" ]
for size in 16 32 48 64 128 256 512; do
  png=$root/usr/share/icons/hicolor/${size}x${size}/apps/$app_id.png
  if [[ ! -f "$png" ]]; then
    fail "no ${size}x${size} icon"
  elif file -b "$png" | grep -q "PNG image data, $size x $size, 8-bit/color RGBA"; then
    pass "${size}x${size} icon"
  else
    fail "${size}x${size} icon is $(file -b "$png")"
  fi
done

# AppStream: the metainfo alone, then the tree (which also checks that its desktop file is there).
metainfo=$root/usr/share/metainfo/$app_id.metainfo.xml
if [[ -f "$metainfo" ]]; then
  for command in validate validate-tree; do
    target=$metainfo
    [[ $command == validate-tree ]] && target=$root
    if appstreamcli "$command" --no-net --strict "$target" >"$work/validate.txt" 2>&1; then
      pass "appstreamcli $command --no-net --strict"
    else
      cat "$work/validate.txt" >&2
      fail "appstreamcli $command --no-net --strict"
    fi
  done
  newest=$(grep -o '<release version="[^"]*"' "$metainfo" | head -n 1 | cut -d'"' -f2)
  check "metainfo's newest <release> '$newest' is the package's version" [ "$newest" = "$version" ]
else
  fail "no /usr/share/metainfo/$app_id.metainfo.xml"
fi

# The unpacked binary, pointed at the unpacked resources and module (it looks for them under /usr).
if [[ -x "$root/usr/bin/tunebench" && -n "$module" ]]; then
  export TUNEBENCH_RESOURCES=$resources TUNEBENCH_SPM_MODULE=$module
  export HOME=$work/home XDG_DATA_HOME=$work/home/data XDG_CONFIG_HOME=$work/home/config XDG_CACHE_HOME=$work/home/cache
  check "tunebench --version says $version" grep -qF "tunebench $version," <<<"$("$root/usr/bin/tunebench" --version)"
  if "$root/usr/bin/tunebench" train --demo --steps 2 --threads 2 -q >"$work/train.txt" 2>&1 \
    && grep -q '2 steps' "$work/train.txt"; then
    pass "tunebench train --demo --steps 2 from the packaged resources"
  else
    cat "$work/train.txt" >&2
    fail "tunebench train --demo --steps 2"
  fi
  check "tunebench plan --model llama-3.1-8b plans from the packaged catalog" \
    bash -c "'$root/usr/bin/tunebench' plan --model llama-3.1-8b --max-memory 0=24GiB,cpu=64GiB | grep -q FITS"
  check "tunebench record --print-python-path names the packaged recorder" \
    test "$("$root/usr/bin/tunebench" record --print-python-path)" = "$resources/python"
  if [[ -n "$engine" ]]; then
    probe=$(QT_QPA_PLATFORM=offscreen TUNEBENCH_STARTUP_PROBE=1 TUNEBENCH_ENGINE_MODULE=$engine \
      "$root/usr/bin/tunebench" 2>"$work/gui.txt" || true)
    if [[ "$probe" == $'window shown (libtorch not loaded)\nengine loaded' ]]; then
      pass "the GUI opens its window before libtorch loads, then loads the engine module"
    else
      cat "$work/gui.txt" >&2
      fail "the GUI's start-up probe printed: $probe"
    fi
  fi
fi

echo "$deb: $(du -h "$deb" | cut -f1) packed, $(field Installed-Size) KiB installed"
if ((failures)); then
  echo "test-package: $failures check(s) failed" >&2
  exit 1
fi
echo "test-package: all checks passed"
