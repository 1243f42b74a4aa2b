#pragma once
// The CPU's vector units and clock as /proc/cpuinfo tells them. Torch-free: the GUI's About dialog and
// `tunebench doctor` read them without libtorch.
//
//   CpuFeatures cpu = cpuFeatures();        // cpu.vector() "AVX-512"
//   double peak = cpuPeakGflops(cpu, 2);

#include <string>

namespace engine {

/// What /proc/cpuinfo says about the first CPU.
struct CpuFeatures {
    std::string model;  ///< "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"
    double mhz = 0;     ///< the clock now (cpu MHz)
    bool avx2 = false, fma = false, avx512 = false /* F, BW, VL, DQ */, avx512bf16 = false;
    std::string vector() const; ///< "AVX-512", "AVX2", "SSE"
};
CpuFeatures cpuFeatures();

/// The fp32 FLOP/s `threads` cores can reach: 2 FMA units x vector width x 2 x the clock. An estimate
/// (turbo and the number of FMA units vary by model), for telling a 5x shortfall from a 10 % one.
double cpuPeakGflops(const CpuFeatures &cpu, int threads);

} // namespace engine
