#pragma once
// The one test of which libtorch this build compiles against. Code that must differ between
// libtorch 1.13 (Debian 12) and 2.x (Debian 13, pip's torch, PyTorch's libtorch archives) tests
// TUNEBENCH_TORCH_AT_LEAST in a single place per difference, never scattered #ifs:
//   engine/io/dtypetorch.cpp   unsigned 16/32/64-bit and 8-bit float scalar types (2.1 / 2.3)
//   engine/core/torchruntime.cpp  CUDA version and device queries (header layout)

#include <torch/version.h>

/// True when the libtorch headers in use are version major.minor or newer.
#define TUNEBENCH_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
