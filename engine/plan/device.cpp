#include "engine/plan/device.h"

#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/processmemory.h"
#include "engine/core/textutil.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace engine::plan {
namespace {

constexpr int64_t GB = 1'000'000'000;

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

} // namespace

std::string DeviceSpec::key() const
{
    switch (kind) {
    case DeviceKind::Gpu: return std::to_string(index);
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Disk: return "disk";
    }
    return "cpu";
}

std::string DeviceSpec::torchDevice() const
{
    return kind == DeviceKind::Gpu ? "cuda:" + std::to_string(index) : key();
}

const std::vector<GpuPreset> &gpuPresets()
{
    static const std::vector<GpuPreset> presets = {
        {"T4", 16 * GB, false},        {"V100-16GB", 16 * GB, false}, {"V100-32GB", 32 * GB, false},
        {"L4", 24 * GB, true},         {"A10", 24 * GB, true},        {"RTX 3090", 24 * GB, true},
        {"RTX 4090", 24 * GB, true},   {"A100-40GB", 40 * GB, true},  {"A100-80GB", 80 * GB, true},
        {"H100", 80 * GB, true},       {"H200", 141 * GB, true},
    };
    return presets;
}

std::optional<GpuPreset> findGpuPreset(std::string_view name)
{
    std::string wanted = lower(trimWhitespace(name));
    if (wanted == "a100")
        wanted = "a100-80gb";
    if (wanted == "v100")
        wanted = "v100-16gb";
    const auto squash = [](std::string s) {
        s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '-' || c == '_'; }), s.end());
        return s;
    };
    for (const GpuPreset &preset : gpuPresets()) {
        if (squash(lower(preset.name)) == squash(wanted))
            return preset;
    }
    return std::nullopt;
}

void applyGpuPreset(DeviceSpec &device, const GpuPreset &preset)
{
    device.name = "NVIDIA " + preset.name;
    device.totalBytes = preset.totalBytes;
    device.bf16 = preset.bf16;
    if (device.budget == 0)
        device.budget = preset.totalBytes;
}

std::vector<DeviceSpec> parseMaxMemory(std::string_view text)
{
    std::vector<DeviceSpec> gpus;
    std::optional<DeviceSpec> cpu, disk;
    if (trimWhitespace(text).empty())
        throw invalidInput("--max-memory is empty: give budgets such as 0=15GiB,1=15GiB,cpu=13GiB");
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string_view::npos)
            comma = text.size();
        const std::string_view entry = trimWhitespace(text.substr(start, comma - start));
        start = comma + 1;
        const std::string label = "--max-memory entry \"" + std::string(entry) + "\"";
        const size_t eq = entry.find('=');
        if (entry.empty() || eq == std::string_view::npos)
            throw invalidInput(label + " is not DEVICE=SIZE (devices: 0, 1, ... for GPUs, cpu, disk)");
        const std::string device = lower(trimWhitespace(entry.substr(0, eq)));
        const std::string_view size = trimWhitespace(entry.substr(eq + 1));
        DeviceSpec spec;
        if (device == "cpu") {
            if (cpu)
                throw invalidInput(label + ": cpu is given twice");
            spec.kind = DeviceKind::Cpu;
            spec.name = "CPU RAM";
            spec.budget = parseByteSize(size, label);
            spec.overheadBytes = kDefaultCpuOverheadBytes;
            cpu = spec;
        } else if (device == "disk") {
            if (disk)
                throw invalidInput(label + ": disk is given twice");
            spec.kind = DeviceKind::Disk;
            spec.name = "disk";
            spec.budget = parseByteSize(size, label);
            disk = spec;
        } else {
            int index = -1;
            std::string_view digits = device;
            if (digits.rfind("cuda:", 0) == 0)
                digits.remove_prefix(5);
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
            if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || index < 0 || index > 255)
                throw invalidInput(label + ": unknown device \"" + device
                                   + "\" (devices are GPU indices 0, 1, ..., cpu and disk)");
            for (const DeviceSpec &g : gpus) {
                if (g.index == index)
                    throw invalidInput(label + ": GPU " + std::to_string(index) + " is given twice");
            }
            spec.kind = DeviceKind::Gpu;
            spec.index = index;
            spec.name = "GPU " + std::to_string(index);
            spec.budget = parseByteSize(size, label);
            spec.overheadBytes = kDefaultGpuOverheadBytes;
            gpus.push_back(spec);
        }
        if (comma == text.size())
            break;
    }
    std::sort(gpus.begin(), gpus.end(), [](const DeviceSpec &a, const DeviceSpec &b) { return a.index < b.index; });
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (gpus[i].index != static_cast<int>(i))
            throw invalidInput("--max-memory: GPU indices must be 0.." + std::to_string(gpus.size() - 1)
                               + " without gaps, got GPU " + std::to_string(gpus[i].index));
    }
    std::vector<DeviceSpec> out = gpus;
    if (cpu)
        out.push_back(*cpu);
    if (disk)
        out.push_back(*disk);
    return out;
}

std::string maxMemoryText(const std::vector<DeviceSpec> &devices)
{
    std::string out;
    for (const DeviceSpec &d : devices) {
        if (d.unbounded())
            continue;
        if (!out.empty())
            out += ',';
        out += d.key();
        out += '=';
        out += std::to_string(d.budget);
    }
    return out;
}

int findDevice(const std::vector<DeviceSpec> &devices, std::string_view key)
{
    for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].key() == key)
            return static_cast<int>(i);
    }
    return -1;
}

} // namespace engine::plan

namespace engine::plan {

int64_t availableRamBudget()
{
    const int64_t available = engine::availableRamBytes();
    if (available <= 0)
        return int64_t(8) << 30;
    return static_cast<int64_t>(static_cast<double>(available) * 0.8);
}

std::vector<DeviceSpec> machineDevices(const std::vector<MachineGpu> &gpus, int64_t cpuBudget)
{
    std::vector<DeviceSpec> devices;
    for (const MachineGpu &gpu : gpus) {
        DeviceSpec d;
        d.kind = DeviceKind::Gpu;
        d.index = gpu.index;
        d.name = gpu.name;
        d.totalBytes = gpu.totalBytes;
        d.budget = static_cast<int64_t>(static_cast<double>(gpu.totalBytes) * 0.9);
        d.bf16 = gpu.bf16;
        d.overheadBytes = kDefaultGpuOverheadBytes;
        devices.push_back(d);
    }
    std::sort(devices.begin(), devices.end(), [](const DeviceSpec &a, const DeviceSpec &b) { return a.index < b.index; });
    DeviceSpec cpu;
    cpu.kind = DeviceKind::Cpu;
    cpu.name = "CPU RAM";
    cpu.budget = cpuBudget;
    cpu.overheadBytes = kDefaultCpuOverheadBytes;
    devices.push_back(cpu);
    return devices;
}

} // namespace engine::plan
