#pragma once
// Dispatched loading: a checkpoint folder read straight onto the devices of a placement, tensor by
// tensor, never holding more in RAM than the CPU share plus the largest tensor being read.
//
// How to use:
//   DispatchedModel d = loadDispatched(folder, DevicePlacement::fromFile("map.json"));
//   torch::Tensor logits = d.model->forward(ids);   // runs across the devices, logits on lm_head's
//   d.report.find("disk")->mappedBytes;             // weights left memory-mapped in their files
//
// "cpu" tensors are read with pread into owned memory (converted to the load dtype); "disk" tensors
// stay zero-copy over a private mapping of their file (pages are read on use and can be dropped by
// the kernel) when stored in the load dtype, else they are converted into RAM and listed in the
// report; "cuda:N" tensors are read, copied to the GPU, converted there, and the CPU copy freed.
// Tied embeddings stay one tensor (an "lm_head" entry must name the embedding's device). A decoder
// layer must sit on one torch device ("cpu" and "disk" are both the CPU).

#include "engine/model/deviceplacement.h"
#include "engine/model/dispatchreport.h"
#include "engine/model/pretrained.h"

#include <filesystem>
#include <string>

namespace engine::model {

/// A model loaded across devices, and where its weights went.
struct DispatchedModel {
    LlamaForCausalLM model{nullptr};
    DispatchReport report;
};

/// Loads `folder` (config.json + model.safetensors or sharded safetensors with an index) onto the
/// devices of `placement` (checked with resolvePlacement against the model's parameters and the
/// CUDA devices present; `placementLabel` names the map in errors). The checks and messages of
/// loadPretrained apply to the tensors. Throws engine::Error.
DispatchedModel loadDispatched(const std::filesystem::path &folder, const DevicePlacement &placement,
                               const LoadOptions &options = {}, const std::string &placementLabel = "device map");

} // namespace engine::model
