#include "engine/core/systeminfo.h"

#include "engine/core/format.h"
#include "engine/core/threads.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <sstream>

namespace engine {

void fillCudaInfo(SystemInfo &info); // cudainfo.cpp: the one place that knows CUDA's headers

namespace {

/// The value of "KEY=value" in libtorch's build configuration text, or "".
std::string configValue(const std::string &config, const std::string &key)
{
    const size_t at = config.find(key + "=");
    if (at == std::string::npos)
        return "";
    const size_t begin = at + key.size() + 1;
    const size_t end = config.find_first_of(", \n", begin);
    return config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}


} // namespace

SystemInfo systemInfo()
{
    SystemInfo info;
    info.tunebenchVersion = TUNEBENCH_VERSION;
    info.torchVersion = TORCH_VERSION;
    info.hardwareThreads = hardwareThreads();
    info.torchThreads = at::get_num_threads();
    const std::string config = at::show_config();
    info.blas = configValue(config, "BLAS_INFO");
    const std::string capability = "CPU capability usage: ";
    if (const size_t at = config.find(capability); at != std::string::npos) {
        const size_t begin = at + capability.size();
        info.cpuCapability = config.substr(begin, config.find('\n', begin) - begin);
    }
    fillCudaInfo(info);
    return info;
}

std::string describeSystem(const SystemInfo &info)
{
    std::ostringstream out;
    out << "tunebench " << info.tunebenchVersion << "\n";
    out << "libtorch  " << info.torchVersion << (info.torchHasCuda ? " (CUDA build)" : " (CPU-only build)") << "\n";
    if (info.torchHasCuda) {
        out << "CUDA      runtime " << info.cudaRuntimeVersion;
        if (info.cudaDriverVersion > 0)
            out << ", driver " << info.cudaDriverVersion / 1000 << "." << (info.cudaDriverVersion % 1000) / 10;
        out << "\n";
    } else {
        out << "CUDA      none (devices: cpu)\n";
    }
    for (const GpuInfo &gpu : info.gpus) {
        out << "cuda:" << gpu.index << "    " << gpu.name << ", " << formatBytes(gpu.totalMemoryBytes, 1) << ", compute "
            << gpu.computeMajor << "." << gpu.computeMinor << (gpu.bf16 ? ", bf16" : ", no bf16 (use fp16)") << "\n";
    }
    if (info.torchHasCuda && info.gpus.empty())
        out << "GPUs      none usable: " << info.cudaProblem << "\n";
    out << "threads   " << info.torchThreads << " libtorch threads, " << info.hardwareThreads << " hardware threads\n";
    out << "CPU       " << (info.cpuCapability.empty() ? "unknown" : info.cpuCapability) << " kernels, BLAS "
        << (info.blas.empty() ? "unknown" : info.blas) << "\n";
    return out.str();
}

nlohmann::json systemInfoJson(const SystemInfo &info)
{
    nlohmann::json gpus = nlohmann::json::array();
    for (const GpuInfo &gpu : info.gpus) {
        gpus.push_back({{"device", "cuda:" + std::to_string(gpu.index)},
                        {"name", gpu.name},
                        {"total_memory", gpu.totalMemoryBytes},
                        {"compute_capability", std::to_string(gpu.computeMajor) + "." + std::to_string(gpu.computeMinor)},
                        {"bf16", gpu.bf16}});
    }
    nlohmann::json cuda = {{"available", info.torchHasCuda && !info.gpus.empty()},
                           {"built_with_cuda", info.torchHasCuda},
                           {"runtime", info.cudaRuntimeVersion},
                           {"driver", info.cudaDriverVersion}};
    if (!info.cudaProblem.empty())
        cuda["problem"] = info.cudaProblem;
    return {{"tunebench", info.tunebenchVersion},
            {"libtorch", info.torchVersion},
            {"cuda", cuda},
            {"gpus", gpus},
            {"threads", {{"libtorch", info.torchThreads}, {"hardware", info.hardwareThreads}}},
            {"cpu_capability", info.cpuCapability},
            {"blas", info.blas}};
}

} // namespace engine
