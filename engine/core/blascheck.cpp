#include "engine/core/blascheck.h"
#include "engine/core/textutil.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace engine {
namespace {

/// OpenBLAS exports these C functions; libtorch reaches BLAS through libblas.so.3, which may be OpenBLAS.
template<typename Fn>
Fn openblasFunction(const char *name)
{
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

} // namespace

BlasInfo blasInfo(const CpuFeatures &cpu)
{
    BlasInfo blas;
    using Text = char *(*)();
    const Text config = openblasFunction<Text>("openblas_get_config");
    const Text core = openblasFunction<Text>("openblas_get_corename");
    blas.openblas = config != nullptr && core != nullptr;
    if (const char *env = std::getenv("OPENBLAS_CORETYPE"))
        blas.coreTypeEnv = env;
    if (!blas.openblas)
        return blas;
    blas.config = std::string(trimWhitespace(config()));
    blas.coreName = core();
    std::string name = blas.coreName;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    // OpenBLAS's AVX-512 kernels are SkylakeX (and its descendants), its AVX2 ones Haswell and Zen.
    const bool usesAvx512 = name == "skylakex" || name == "cooperlake" || name == "sapphirerapids";
    const bool usesAvx2 = usesAvx512 || name == "haswell" || name == "zen";
    if (cpu.avx512 && !usesAvx512)
        blas.suggestedCore = "SkylakeX";
    else if (cpu.avx2 && cpu.fma && !usesAvx2)
        blas.suggestedCore = "Haswell";
    return blas;
}

MatmulCheck checkMatmul(int n)
{
    torch::NoGradGuard noGrad;
    MatmulCheck check;
    check.n = n;
    check.threads = at::get_num_threads();

    // Correctness first: a product the double-precision loop can check in a few milliseconds.
    constexpr int m = 192;
    torch::Generator generator = at::detail::createCPUGenerator(20261202);
    const torch::Tensor a = torch::rand({m, m}, generator, torch::kFloat32) * 2 - 1;
    const torch::Tensor b = torch::rand({m, m}, generator, torch::kFloat32) * 2 - 1;
    const torch::Tensor c = torch::mm(a, b).contiguous();
    const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>(), *pc = c.data_ptr<float>();
    double worst = 0;
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < m; ++j) {
            double exact = 0, scale = 0;
            for (int k = 0; k < m; ++k) {
                const double term = static_cast<double>(pa[i * m + k]) * pb[k * m + j];
                exact += term;
                scale += std::fabs(term);
            }
            worst = std::max(worst, std::fabs(pc[i * m + j] - exact) / std::max(scale, 1e-30));
        }
    }
    check.maxRelativeError = worst;
    // fp32 accumulation of m terms: a few ulps times m at worst; a broken kernel is off by far more.
    check.correct = std::isfinite(worst) && worst < 1e-5;

    const torch::Tensor x = torch::rand({n, n}, generator, torch::kFloat32);
    const torch::Tensor y = torch::rand({n, n}, generator, torch::kFloat32);
    torch::Tensor out = torch::mm(x, y); // warm-up: threads started, pages touched
    double best = 1e30;
    for (int run = 0; run < 5; ++run) {
        const auto start = std::chrono::steady_clock::now();
        torch::mm_out(out, x, y);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    check.gflops = 2.0 * n * static_cast<double>(n) * n / best * 1e-9;
    return check;
}

nlohmann::json blasCheckJson(const CpuFeatures &cpu, const BlasInfo &blas, const MatmulCheck *matmul)
{
    nlohmann::json j = {{"cpu", {{"model", cpu.model}, {"mhz", cpu.mhz}, {"vector", cpu.vector()},
                                 {"avx512_bf16", cpu.avx512bf16}}},
                        {"openblas", {{"found", blas.openblas}, {"config", blas.config}, {"core", blas.coreName},
                                  {"openblas_coretype", blas.coreTypeEnv}, {"suggested_core", blas.suggestedCore}}}};
    if (matmul) {
        j["matmul"] = {{"n", matmul->n}, {"threads", matmul->threads}, {"gflops", matmul->gflops},
                       {"max_relative_error", matmul->maxRelativeError}, {"correct", matmul->correct},
                       {"cpu_peak_gflops", cpuPeakGflops(cpu, matmul->threads)}};
    }
    return j;
}

} // namespace engine
