#!/usr/bin/env bash
# Run HERE (a Debian 12 machine with the package registry) before a GPU run: downloads the Debian
# libraries the engine needs that GPU machines lack (they have pip's CUDA torch but no registry), and
# unpacks them into .gpu-deps/root, which the device tool carries (`carry: [".gpu-deps"]`).
#   usage: scripts/gpu/fetch-deps.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu-deps/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps/' >>.git/info/exclude
packages=(
  nlohmann-json3-dev libcli11-dev
  libsqlite3-dev libsqlite3-0
  libsentencepiece-dev libsentencepiece0 libprotobuf-lite32
  libonig-dev libonig5 libicu-dev libicu72
  libgtest-dev libgmock-dev zlib1g-dev
  ninja-build pkgconf pkgconf-bin libpkgconf3
  cmake cmake-data libjsoncpp25 librhash0 libuv1 libarchive13
)
rm -rf .gpu-deps && mkdir -p .gpu-deps/debs .gpu-deps/root
(cd .gpu-deps/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .gpu-deps/debs/*.deb; do dpkg -x "$deb" .gpu-deps/root; done
rm -rf .gpu-deps/debs
du -sh .gpu-deps
