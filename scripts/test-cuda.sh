#!/usr/bin/env bash
# Run ON A GPU MACHINE (the device tool): builds the engine, the CLI and the engine tests with the GUI
# off against the machine's CUDA libtorch (pip's torch), then runs the GPU tests (suffix _CUDA) and
# the engine suite. Needs .gpu-deps from scripts/gpu/fetch-deps.sh (carried from the CPU machine).
#   usage: scripts/test-cuda.sh [ctest -R pattern]     logs go to $OUT when set
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tunebench-cuda}
mkdir -p "$out"
deps=$PWD/.gpu-deps/root
python=$(command -v python3)
torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)') \
  || { echo "test-cuda: python3 cannot import torch" >&2; exit 2; }
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' | tee "$out/torch.txt"
export PATH=$deps/usr/bin:$PATH
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$deps
cmake_bin=$(command -v cmake || true)
[[ -n "$cmake_bin" ]] || { echo "test-cuda: no cmake (run scripts/gpu/fetch-deps.sh and carry .gpu-deps)" >&2; exit 2; }
build=build-cuda
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_GUI=OFF -DTUNEBENCH_TESTS=ON \
  -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr" -DCMAKE_FIND_ROOT_PATH="$deps" 2>&1 | tee "$out/configure.log" | tail -20
cmake --build "$build" -j "$(nproc)" 2>&1 | tee "$out/build.log" | tail -30
status=${PIPESTATUS[0]}
[[ $status -eq 0 ]] || { echo "test-cuda: build failed (see build.log)" >&2; exit $status; }
"$build/app/tunebench" doctor | tee "$out/doctor.txt"
cd "$build"
# Every GPU test by name, whatever its label (the planner's GPU memory measurement is labelled slow).
ctest --output-on-failure -R _CUDA -j 4 2>&1 | tee "$out/ctest-cuda.log" | tail -40
cuda_status=${PIPESTATUS[0]}
ctest --output-on-failure -LE "cuda|slow" -j 8 ${1:+-R "$1"} 2>&1 | tee "$out/ctest-engine.log" | tail -15
engine_status=${PIPESTATUS[0]}
exit $((cuda_status || engine_status))
