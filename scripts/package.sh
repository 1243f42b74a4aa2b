#!/usr/bin/env bash
# Builds the Debian package: a Release build without tests in build-package/ (or $TUNEBENCH_BUILD_DIR),
# configured for /usr since the binary looks for its resources and modules where it was configured
# to be installed, then cpack. Prints the .deb's path; scripts/test-package.sh checks it.
#   usage: scripts/package.sh [extra cmake -D options...]
#   then:  sudo apt install ./build-package/tunebench_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# cpack's dependency scan runs dpkg-shlibdeps on each ELF file it finds with file(1).
missing=()
command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
command -v file >/dev/null || missing+=(file)
if ((${#missing[@]})); then
  echo "tunebench: packaging needs ${missing[*]}: apt-get install ${missing[*]}" >&2
  exit 1
fi
export TUNEBENCH_BUILD_DIR=${TUNEBENCH_BUILD_DIR:-build-package}
export TUNEBENCH_QUIET=${TUNEBENCH_QUIET:-1} # the build log goes to build-package/build.log
unset TUNEBENCH_TARGETS # the package takes everything the build installs (the icons too)
scripts/build.sh -DTUNEBENCH_TESTS=OFF -DTUNEBENCH_BENCH=OFF -DCMAKE_INSTALL_PREFIX=/usr "$@"
cd "$TUNEBENCH_BUILD_DIR"
rm -f tunebench_*.deb
if ! cpack -G DEB >cpack.log 2>&1; then
  cat cpack.log >&2
  exit 1
fi
grep -i 'warning' cpack.log >&2 || true
ls "$PWD"/tunebench_*.deb
