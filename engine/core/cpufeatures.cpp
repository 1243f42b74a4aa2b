#include "engine/core/cpufeatures.h"
#include "engine/core/textutil.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace engine {
namespace {

bool hasFlag(const std::string &flags, const char *flag)
{
    std::istringstream in(flags);
    std::string word;
    while (in >> word) {
        if (word == flag)
            return true;
    }
    return false;
}

} // namespace

std::string CpuFeatures::vector() const
{
    return avx512 ? "AVX-512" : (avx2 && fma) ? "AVX2" : "SSE";
}

CpuFeatures cpuFeatures()
{
    CpuFeatures cpu;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    bool haveFlags = false;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key(trimWhitespace(std::string_view(line).substr(0, colon)));
        const std::string value(trimWhitespace(std::string_view(line).substr(colon + 1)));
        if (key == "model name" && cpu.model.empty())
            cpu.model = value;
        else if (key == "cpu MHz" && cpu.mhz == 0)
            cpu.mhz = std::atof(value.c_str());
        else if (key == "flags" && !haveFlags) {
            haveFlags = true;
            cpu.avx2 = hasFlag(value, "avx2");
            cpu.fma = hasFlag(value, "fma");
            cpu.avx512 = hasFlag(value, "avx512f") && hasFlag(value, "avx512bw") && hasFlag(value, "avx512vl")
                && hasFlag(value, "avx512dq");
            cpu.avx512bf16 = hasFlag(value, "avx512_bf16");
        }
    }
    return cpu;
}

double cpuPeakGflops(const CpuFeatures &cpu, int threads)
{
    const int lanes = cpu.avx512 ? 16 : (cpu.avx2 && cpu.fma) ? 8 : 4;
    const int fmaUnits = cpu.fma || cpu.avx512 ? 2 : 1;
    const double flopsPerCycle = static_cast<double>(lanes * fmaUnits * (cpu.fma || cpu.avx512 ? 2 : 1));
    return flopsPerCycle * cpu.mhz * 1e-3 * std::max(threads, 1);
}

} // namespace engine
