#pragma once
// Plans as JSON: Accelerate's device_map ({"model.embed_tokens": 0, "model.layers.14": "cpu", ...},
// GPU indices as integers), the export file {"device_map": ..., "max_memory": {"0": bytes, "cpu": bytes}},
// the CLI's --json object, importing a map back, and a Python snippet that loads and trains with it.

#include "engine/plan/plan.h"

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace engine::plan {

/// Accelerate's device_map object.
nlohmann::ordered_json deviceMapJson(const Plan &plan);

/// The export file: {"device_map": ..., "max_memory": {...}} (max_memory keys as strings, values in bytes).
nlohmann::ordered_json exportJson(const Plan &plan);

/// `tunebench plan --json`: device_map, devices (budget and each component, bytes), peak, verdict, lint,
/// explanations, warnings.
nlohmann::ordered_json planJson(const Plan &plan);

/// An imported map as a Plan skeleton (deviceMap and, when the file has max_memory and `devices` is empty,
/// the devices). Accepts the export file or a bare device_map object; values 0, 1, ..., "cpu", "disk",
/// "cuda:N". Throws Error(InvalidInput) naming `source` and the entry. Run Planner::revalidate on it.
Plan importDeviceMap(const nlohmann::ordered_json &document, const std::string &source, std::vector<DeviceSpec> devices,
                     const PlanSettings &settings);

/// Reads a device-map file (the export file or a bare device_map) into the document importDeviceMap takes.
/// Throws Error naming `file`: cannot be read, nests deeper than kMaxJsonNesting, or is not valid JSON.
nlohmann::ordered_json readDeviceMapFile(const std::filesystem::path &file);

/// How transformers loads a model: its Auto class and whether the checkpoint's own code may run.
struct PythonLoader {
    std::string autoClass = "AutoModelForCausalLM";
    bool trustRemoteCode = false;
};

/// ChatGLM: AutoModel with trust_remote_code (its README's way). Another config with auto_map (remote
/// code): trusted, through AutoModelForCausalLM when auto_map names it, else AutoModel when it does.
/// Otherwise (llama, mistral, qwen2, gpt2, ...): AutoModelForCausalLM.
PythonLoader pythonLoader(const std::string &modelType, const std::vector<std::string> &remoteCodeClasses);

/// The folder from_pretrained loads: `modelPath`, or its parent when it names a .json file (config.json).
std::string modelFolder(const std::string &modelPath);

/// A Python script that runs as written: loads the folder of `modelPath` with the plan's device map,
/// max_memory and dtype (the right Auto class, trust_remote_code where needed), adds the plan's LoRA
/// adapters through PEFT, builds AdamW over trainable parameters only, clips gradients across devices,
/// computes the loss with the labels on the logits' device, never re-dispatches the model, and runs one
/// step on a sample sentence. A weights-only plan loads and predicts instead.
std::string pythonSnippet(const Plan &plan, const std::string &modelPath);

} // namespace engine::plan
