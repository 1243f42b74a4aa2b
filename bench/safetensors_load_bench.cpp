// Loading a safetensors file into CPU tensors, for bench/run-load-bench.sh (which times
// `cat FILE > /dev/null` beside it and prints the ratios).
//   safetensors_load_bench create FILE [--tensors 64] [--elements 4194304]   (~1 GiB of F32)
//   safetensors_load_bench load FILE --mode map-touch|map-sum|copy
// `load` prints one JSON line: seconds from open to every tensor materialised, peak RSS (ru_maxrss)
// of this process and its RSS before loading (libtorch itself).
//   map-touch: zero-copy tensors over the mapping, one read per 4 KiB page (every page faulted in)
//   map-sum:   zero-copy tensors, summed (every byte read)
//   copy:      owning tensors, read with pread into fresh memory

#include "engine/io/safetensorsfile.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <sys/resource.h>

using namespace engine::io;

namespace {

long peakRssKiB()
{
    rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

long currentRssKiB()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::atol(line.c_str() + 6);
    }
    return 0;
}

int create(const std::string &path, int tensors, int64_t elements)
{
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (int i = 0; i < tensors; ++i)
        named.emplace_back("layers." + std::to_string(i) + ".weight", torch::randn({elements}));
    writeSafetensors(path, named, {{"format", "pt"}});
    return 0;
}

int load(const std::string &path, const std::string &mode)
{
    const long rssBefore = currentRssKiB();
    const auto start = std::chrono::steady_clock::now();
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::vector<torch::Tensor> tensors;
    tensors.reserve(file.header().tensors.size());
    double check = 0;
    for (const TensorInfo &info : file.header().tensors) {
        TensorLoadOptions options;
        options.copy = mode == "copy";
        torch::Tensor tensor = file.tensor(info.name, options);
        if (mode == "map-touch") {
            const auto *bytes = static_cast<const volatile unsigned char *>(tensor.data_ptr());
            const size_t size = tensor.numel() * tensor.element_size();
            unsigned sum = 0;
            for (size_t offset = 0; offset < size; offset += 4096)
                sum += bytes[offset];
            check += sum;
        } else if (mode == "map-sum") {
            check += tensor.sum().item<double>();
        } else if (mode != "copy") {
            std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
            return 2;
        }
        tensors.push_back(std::move(tensor));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"mode\": \"%s\", \"seconds\": %.4f, \"peak_rss_bytes\": %ld, \"rss_before_bytes\": %ld, "
                "\"file_bytes\": %llu, \"tensors\": %zu, \"check\": %g}\n",
                mode.c_str(), seconds, peakRssKiB() * 1024, rssBefore * 1024,
                static_cast<unsigned long long>(file.header().fileSize), tensors.size(), check);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s create FILE [--tensors N] [--elements N] | load FILE --mode MODE\n", argv[0]);
        return 2;
    }
    const std::string command = argv[1];
    const std::string path = argv[2];
    int tensors = 64;
    int64_t elements = 4 << 20;
    std::string mode = "map-touch";
    for (int i = 3; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--tensors")
            tensors = std::atoi(argv[i + 1]);
        else if (flag == "--elements")
            elements = std::atoll(argv[i + 1]);
        else if (flag == "--mode")
            mode = argv[i + 1];
    }
    try {
        if (command == "create")
            return create(path, tensors, elements);
        if (command == "load")
            return load(path, mode);
    } catch (const std::exception &error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
    std::fprintf(stderr, "unknown command %s\n", command.c_str());
    return 2;
}
