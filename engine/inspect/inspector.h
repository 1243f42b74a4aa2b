#pragma once
// The autograd inspector's entry points: record one step (forward + backward) of a built-in
// scenario, a user's TorchScript module or a model folder, and diagnose it. Torch-free header.
//
// How to use:
//   InspectionReport r = inspectScenario("kv-cache-inplace");
//   if (r.status == InspectStatus::InplaceConflict) puts(r.conflict->fixes.front().c_str());
//   InspectionReport fixed = verifyFix("kv-cache-inplace");      // backwardSucceeded == true
//   InspectionReport t = inspectTorchScript("model.pt", "inputs.pt", "forward");
// Bad input (not a TorchScript file, a missing method, inputs that do not fit, no tensor returned,
// a recording over its memory bound) throws engine::Error(InvalidInput) with one clear message;
// whatever the step itself does (a failed backward, NaN) comes back in the report.

#include "engine/inspect/inspectionreport.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace engine::inspect {

/// Settings of one inspection.
struct InspectOptions {
    int64_t maxRecordBytes = int64_t(64) << 20; ///< the recording's memory bound
    bool checksums = true;                      ///< silent-mutation check of saved tensors
    bool referenceRun = true;                   ///< run the step once without hooks for PyTorch's own error
    int64_t sequenceLength = 32;                ///< --model: tokens of the data file per step
};

/// The built-in scenarios: "kv-cache-inplace", "kv-cache-fixed", "nan-log", "frozen-in-optimizer",
/// "silent-mutation".
std::vector<std::string> scenarioNames();

/// One sentence on what a scenario shows. Throws Error(InvalidInput) for an unknown name.
std::string scenarioDescription(const std::string &name);

/// Records and diagnoses a built-in scenario. Throws Error(InvalidInput) for an unknown name.
InspectionReport inspectScenario(const std::string &name, const InspectOptions &options = {});

/// Reruns a scenario with its fix applied (kv-cache-inplace -> the cache cloned before writing,
/// nan-log -> log of a clamped value, ...). Throws Error(InvalidInput) when it has none.
InspectionReport verifyFix(const std::string &name, const InspectOptions &options = {});

/// Calls `method` of the TorchScript module in `moduleFile` with the tensors of `inputsFile`
/// (a Python `torch.save([t1, t2, ...])`), backward on the sum of the tensor it returns.
InspectionReport inspectTorchScript(const std::filesystem::path &moduleFile, const std::filesystem::path &inputsFile,
                                    const std::string &method = "forward", const InspectOptions &options = {});

/// One training step (next-token cross-entropy) of the model folder on the first tokens of a text file,
/// or on a batch the trainer saved when a loss was not finite (batch.safetensors: input_ids and labels,
/// the loss exactly as training computes it). A PEFT LoRA adapter folder stands for its base model
/// (base_model_name_or_path) with the adapter merged.
InspectionReport inspectModelFolder(const std::filesystem::path &modelFolder, const std::filesystem::path &dataFile,
                                    const InspectOptions &options = {});

} // namespace engine::inspect
