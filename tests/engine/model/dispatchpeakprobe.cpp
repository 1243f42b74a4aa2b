// Helper for test_dispatch: loads a model folder in a fresh process and prints how far its peak
// resident set grew, read from /proc/self/status (VmHWM), after resetting the peak to the current
// size (clear_refs 5) once libtorch is warmed up.
//   usage: dispatch_peak_probe dispatched FOLDER MAP.json | dispatch_peak_probe pretrained FOLDER
//   prints: baseline_kb=.. peak_kb=.. ram_bytes=.. largest_bytes=.. mapped_bytes=..

#include "engine/model/dispatch.h"
#include "engine/model/pretrained.h"

#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <string>

namespace {

long statusKb(const std::string &key)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with(key + ":"))
            return std::stol(line.substr(key.size() + 1));
    }
    return -1;
}

} // namespace

int main(int argc, char **argv)
{
    const std::string mode = argc > 2 ? argv[1] : "";
    if ((mode != "dispatched" || argc != 4) && (mode != "pretrained" || argc != 3)) {
        std::cerr << "usage: dispatch_peak_probe dispatched FOLDER MAP.json | pretrained FOLDER\n";
        return 2;
    }
    try {
        // Warm up what a load uses once (allocator, conversion kernels), so it is in the baseline.
        const torch::Tensor warm = torch::ones({1024}).to(torch::kBFloat16).to(torch::kFloat32);
        (void)warm.sum().item<float>();
        { std::ofstream("/proc/self/clear_refs") << "5"; }
        const long baseline = statusKb("VmRSS");
        std::uint64_t ram = 0, largest = 0, mapped = 0;
        if (mode == "dispatched") {
            auto loaded = engine::model::loadDispatched(argv[2], engine::model::DevicePlacement::fromFile(argv[3]));
            ram = loaded.report.ramBytes();
            largest = loaded.report.largestTensorBytes;
            for (const auto &share : loaded.report.devices)
                mapped += share.mappedBytes;
        } else {
            auto model = engine::model::loadPretrained(argv[2]);
            for (auto &p : model->parameters())
                ram += static_cast<std::uint64_t>(p.numel()) * p.element_size();
        }
        std::cout << "baseline_kb=" << baseline << " peak_kb=" << statusKb("VmHWM") << " ram_bytes=" << ram
                  << " largest_bytes=" << largest << " mapped_bytes=" << mapped << "\n";
        return 0;
    } catch (const std::exception &e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
