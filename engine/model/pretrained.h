#pragma once
// Loading and saving model folders in Hugging Face's save_pretrained layout.
//
// How to use:
//   LlamaForCausalLM model = loadPretrained(folder);               // config.json + safetensors/bin
//   savePretrained(model, outFolder);                               // config.json + model.safetensors
//   applyPeftLoraAdapter(model, adapterFolder);                     // merges W += scale * B A

#include "engine/model/llamamodel.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace engine::model {

struct LoadOptions {
    /// Parameters are kept in float32 (weights stored in bf16/f16 are upcast), which scoring and
    /// training on CPU need.
    torch::Dtype dtype = torch::kFloat32;
};

/// Whether `folder` holds weights loadPretrained can read (safetensors, an index, or pytorch_model.bin).
bool holdsWeights(const std::filesystem::path &folder);

/// Whether checkpoint tensor `name` may be left out of a model of `config`: non-persistent buffers
/// older transformers versions saved (rotary inv_freq), a tied model's duplicate lm_head.weight.
bool isIgnorableCheckpointTensor(const std::string &name, const LlamaConfig &config);

/// "[2, 3]": a tensor shape for error messages.
std::string shapeText(c10::IntArrayRef shape);

/// Reads `folder`'s config.json and weights (model.safetensors, sharded safetensors with an index,
/// or a legacy pytorch_model.bin / its index) into a new model. Every parameter must be present
/// exactly once with the config's shape; extra tensors (other than known non-persistent buffers and
/// a tied lm_head) are refused. Throws engine::Error naming the file and the tensor.
LlamaForCausalLM loadPretrained(const std::filesystem::path &folder, const LoadOptions &options = {});

/// Writes config.json and the weights (one model.safetensors, or shards + index above
/// maxShardBytes) in save_pretrained's layout. Tied weights are written once (as transformers
/// does). Each file is written atomically.
/// Refuses (Error(Internal)) a model with LoRA branches attached: merge them first (mergeLora).
void savePretrained(LlamaForCausalLM &model, const std::filesystem::path &folder,
                    std::uint64_t maxShardBytes = 5'000'000'000ull);

/// Applies a PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors) by merging
/// W += (lora_alpha / r) * B @ A (alpha / sqrt(r) with use_rslora) into each targeted Linear.
/// PEFT's semantics: target_modules that match no module of the model are refused (naming the modules
/// that exist), and so are LoRA tensors for modules target_modules does not name (PEFT never applies
/// them); modules_to_save tensors replace their module's parameters. Refuses, by name, what it cannot
/// apply exactly: DoRA, fan_in_fan_out, biases other than "none", rank_pattern / alpha_pattern,
/// shapes that do not fit, a rank other than r. Everything is checked before anything is changed.
/// Returns the number of merged modules.
int applyPeftLoraAdapter(LlamaForCausalLM &model, const std::filesystem::path &adapterFolder);

} // namespace engine::model
