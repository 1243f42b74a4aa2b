#!/usr/bin/env bash
# Installs the Debian 12 packages tunebench needs to build, run and test.
# Idempotent: when everything is present it only checks (dpkg-query) and exits quickly.
#   usage: scripts/install-deps.sh [--tests]   (--tests adds the test-only packages)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libopenblas0-openmp
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6 libgraphviz-dev libcairo2-dev
  libsqlite3-dev nlohmann-json3-dev libcli11-dev
  libsentencepiece-dev libonig-dev libicu-dev libgloo-dev
  libgtest-dev libgmock-dev
  fonts-dejavu-core
)
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(python3-torch sqlite3 libbenchmark-dev ca-certificates appstream dpkg-dev file)
  # The tokenizer reference tests read their reference data from the repository: Node.js and npm are
  # needed only to regenerate it (tests/data/tokenize/reference/README.md).
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "tunebench: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "tunebench: run as root or install sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
