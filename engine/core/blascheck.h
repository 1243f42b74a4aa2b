#pragma once
// The CPU's matrix-multiply rate, measured now, against what the CPU can do; and the one fix this
// kind of machine often needs: Debian's OpenBLAS may not recognise a recent CPU and run its generic
// kernels at a fifth of the CPU's rate (measured on a 2-core AVX-512 Xeon VM: 64 against 306 GFLOP/s on a 1024³ fp32
// matmul). OPENBLAS_CORETYPE tells
// it the kernels to use; it is read when the library loads, so a process applies it by starting
// again with it set (app/main.cpp does, from the blas_core_type setting). Never applied silently.
// Torch-free header.
//
//   CpuFeatures cpu = cpuFeatures();
//   BlasInfo blas = blasInfo(cpu);          // blas.coreName "Prescott", blas.suggestedCore "SkylakeX"
//   MatmulCheck m = checkMatmul(1024);      // m.gflops, m.correct

#include "engine/core/cpufeatures.h"

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace engine {

/// The BLAS libtorch calls, as far as it tells.
struct BlasInfo {
    bool openblas = false;
    std::string config;       ///< openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64"
    std::string coreName;     ///< openblas_get_corename(): the kernels in use ("Prescott", "Haswell", "SkylakeX")
    std::string coreTypeEnv;  ///< OPENBLAS_CORETYPE of this process, "" when unset
    /// Kernels this CPU supports that are faster than coreName ("SkylakeX" for AVX-512, "Haswell" for
    /// AVX2 + FMA), "" when the library already uses them or is not OpenBLAS.
    std::string suggestedCore;
};
BlasInfo blasInfo(const CpuFeatures &cpu);

/// A measured fp32 matmul (torch::mm) of n x n matrices with libtorch's threads now.
struct MatmulCheck {
    int n = 0;
    int threads = 0;
    double gflops = 0;           ///< the best of several runs
    double maxRelativeError = 0; ///< of a 192 x 192 product against a double-precision loop
    bool correct = false;        ///< maxRelativeError within fp32's bound
};
MatmulCheck checkMatmul(int n = 1024);

/// {"cpu": {...}, "openblas": {...}, "matmul": {...}} (matmul only when given).
nlohmann::json blasCheckJson(const CpuFeatures &cpu, const BlasInfo &blas, const MatmulCheck *matmul);

} // namespace engine
