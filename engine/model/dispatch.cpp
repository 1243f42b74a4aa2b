#include "engine/model/dispatch.h"

#include "engine/core/error.h"
#include "engine/io/dtypetorch.h"
#include "engine/io/shardindex.h"
#include "engine/io/shardindexio.h"
#include "engine/model/moduletree.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <map>
#include <set>

namespace engine::model {
namespace fs = std::filesystem;
namespace {

/// The torch device a placement device runs on ("disk" weights are CPU tensors over a mapping).
torch::Device torchDevice(const std::string &device)
{
    const int index = cudaIndex(device);
    return index >= 0 ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)) : torch::Device(torch::kCPU);
}

/// "model.layers.3" for "model.layers.3.mlp.up_proj.weight"; other parameters are single-tensor
/// modules ("model.embed_tokens", "model.norm", "lm_head") and are their own unit.
std::string unitOf(const std::string &name)
{
    static const std::string layers = "model.layers.";
    if (!name.starts_with(layers))
        return name;
    const size_t end = name.find('.', layers.size());
    return name.substr(0, end);
}

/// Refuses a decoder layer split over torch devices: the model moves activations at layer boundaries only.
void checkLayersWhole(const std::vector<std::string> &names, const std::vector<std::string> &devices,
                      const std::string &label)
{
    std::map<std::string, std::pair<std::string, torch::Device>> first;
    for (size_t i = 0; i < names.size(); ++i) {
        const std::string unit = unitOf(names[i]);
        const torch::Device device = torchDevice(devices[i]);
        const auto [it, inserted] = first.try_emplace(unit, devices[i], device);
        if (!inserted && it->second.second != device)
            throw invalidInput(label + ": " + unit + " is split over " + it->second.first + " and " + devices[i]
                               + "; a decoder layer runs on one device (place " + unit + " as a whole)");
    }
}

} // namespace

DispatchedModel loadDispatched(const fs::path &folder, const DevicePlacement &placement, const LoadOptions &options,
                               const std::string &placementLabel)
{
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw ioError(folder.string() + ": not a model folder (expected a folder with config.json and weights)");
    if (!fs::exists(folder / io::kSafetensorsWeightsName, ec) && !fs::exists(folder / io::kSafetensorsIndexName, ec))
        throw invalidInput(folder.string() + ": dispatched loading reads safetensors weights (model.safetensors or "
                           "model.safetensors.index.json); convert pytorch_model.bin first");
    const LlamaConfig config = LlamaConfig::fromFile(folder);

    DispatchedModel result;
    result.model = makeUnloadedLlama(config);
    struct Slot {
        torch::Tensor parameter;
        std::string device;
        size_t share = 0;
        bool loaded = false;
    };
    std::vector<std::string> names;
    std::vector<torch::Tensor> parameters;
    for (auto &item : result.model->named_parameters(true)) {
        names.push_back(item.key());
        parameters.push_back(item.value());
    }
    std::vector<std::pair<std::string, std::string>> aliases;
    if (config.tieWordEmbeddings)
        aliases.emplace_back("lm_head.weight", "model.embed_tokens.weight");
    const int cudaDevices = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
    // The model computes its rotary tables on each layer's device: a map's "model.rotary_emb" places nothing.
    const std::vector<std::string> bufferModules = llamaModuleTree(config, "float32").bufferOnlyModules();
    const std::vector<std::string> devices =
        resolvePlacement(placement, names, cudaDevices, placementLabel, aliases, bufferModules);
    checkLayersWhole(names, devices, placementLabel);

    DispatchReport &report = result.report;
    for (const auto &entry : placement.entries) {
        if (!report.find(entry.second))
            report.devices.push_back({entry.second});
    }
    std::map<std::string, Slot> slots;
    for (size_t i = 0; i < names.size(); ++i) {
        Slot slot{parameters[i], devices[i]};
        for (size_t s = 0; s < report.devices.size(); ++s) {
            if (report.devices[s].device == devices[i])
                slot.share = s;
        }
        slots.emplace(names[i], std::move(slot));
    }

    const io::CheckpointFiles files = io::locateCheckpoint(folder);
    const std::string weightsName = (files.index ? *files.index : files.shards.front()).string();
    const c10::ScalarType dtype = options.dtype;
    std::set<std::string> mapped; // disk tensors read zero-copy

    // Only disk tensors in the load dtype, aligned in their file, are read over the mapping; every
    // other tensor is read with pread, so that no page of the mapping becomes resident.
    auto optionsFor = [&](const io::SafetensorsHeader &header, const io::TensorInfo &info) {
        io::TensorLoadOptions load;
        load.copy = true;
        const auto slot = slots.find(info.name);
        const std::optional<c10::ScalarType> stored = io::toTorchDtype(info.dtype);
        if (slot == slots.end() || slot->second.device != "disk" || !stored || *stored != dtype)
            return load;
        const std::uint64_t offset = header.dataOffset + info.begin;
        if (offset % c10::elementSize(*stored) == 0) {
            load.copy = false;
            mapped.insert(info.name);
        }
        return load;
    };

    torch::NoGradGuard noGrad;
    auto visit = [&](const io::TensorInfo &info, torch::Tensor tensor) {
        const auto it = slots.find(info.name);
        if (it == slots.end()) {
            if (isIgnorableCheckpointTensor(info.name, config))
                return;
            throw invalidInput(weightsName + ": tensor '" + info.name + "' is not a parameter of this " + config.modelType
                               + " model (config.json and weights disagree)");
        }
        Slot &slot = it->second;
        if (slot.parameter.sizes() != tensor.sizes()) {
            throw invalidInput(weightsName + ": tensor '" + info.name + "' has shape " + shapeText(tensor.sizes())
                               + " but config.json gives " + shapeText(slot.parameter.sizes()));
        }
        if (slot.loaded)
            throw invalidInput(weightsName + ": tensor '" + info.name + "' appears twice");
        slot.loaded = true;
        report.largestTensorBytes = std::max(report.largestTensorBytes, info.byteSize());

        DeviceShare &share = report.devices[slot.share];
        const bool isMapped = mapped.count(info.name) != 0;
        if (cudaIndex(slot.device) >= 0) {
            // To the GPU in the stored dtype, converted there: the CPU copy is freed when `tensor` goes.
            slot.parameter.set_data(tensor.to(torchDevice(slot.device)).to(dtype));
        } else {
            slot.parameter.set_data(tensor.to(dtype)); // no copy when the dtype is already right
        }
        tensor = torch::Tensor();
        const std::uint64_t bytes = static_cast<std::uint64_t>(slot.parameter.numel()) * c10::elementSize(dtype);
        share.bytes += bytes;
        share.tensors += 1;
        if (isMapped) {
            share.mappedBytes += bytes;
            report.mappedTensors.push_back(info.name);
        } else if (slot.device == "disk") {
            report.copiedDiskTensors.push_back(info.name);
        }
    };
    io::forEachCheckpointTensorInfo(folder, optionsFor, visit);

    for (const auto &[name, slot] : slots) {
        if (!slot.loaded)
            throw invalidInput(weightsName + ": parameter '" + name + "' is missing");
    }
    return result;
}

} // namespace engine::model
