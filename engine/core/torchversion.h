#pragma once
// The one test of which libtorch this build compiles against. Code that must differ between
// libtorch 1.13 (Debian 12) and 2.x (Debian 13, pip's torch, PyTorch's libtorch archives) tests
// TUNEBENCH_TORCH_AT_LEAST in a single place per difference, never scattered #ifs:
//   engine/core/autocast.cpp  autocast switches take the device type (2.4)
//   engine/io/dtypetorch.cpp   unsigned 16/32/64-bit and 8-bit float scalar types (2.2 / 2.3)
//   tests/engine/plan/test_memorymeasure.cpp  c10::Allocator::allocate lost its const (2.3)
// (engine/dist/distributedgroup.cpp tests for TCPStoreOptions::useLibUV, a member 1.13 lacks, rather
// than a version.)
// CUDA-only code lives in engine/core/cudainfo.cpp, guarded by TUNEBENCH_TORCH_CUDA instead.

#include <torch/version.h>

/// True when the libtorch headers in use are version major.minor or newer.
#define TUNEBENCH_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
