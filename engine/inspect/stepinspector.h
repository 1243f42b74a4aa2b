#pragma once
// Inspecting any step given as closures: what the built-in scenarios, TorchScript modules, model
// folders and the trainer's guard all use. Engine-internal (torch headers).
//
// How to use:
//   auto make = [&] { StepProgram p; p.forward = [&] { return model->forward(x).sum(); };
//                     p.parameters = named(model); return p; };
//   InspectionReport report = inspectStep(make, options);

#include "engine/core/torcherror.h"
#include "engine/inspect/diagnosis.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/inspectionreport.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace engine::inspect {

/// One step to inspect: a forward that returns the loss (a tensor; backward runs on its sum).
struct StepProgram {
    std::function<at::Tensor()> forward;
    std::vector<std::pair<std::string, at::Tensor>> parameters; ///< named, for the gradient-flow table
    std::optional<std::vector<at::Tensor>> optimizerParameters; ///< what the optimizer holds, when known
    std::string source;                                         ///< "scenario kv-cache-inplace"
    FixContext fixContext = FixContext::Unknown;
    bool torchScript = false;                                   ///< module paths from the TorchScript interpreter
    std::function<void()> afterBackward;                        ///< e.g. restore global settings
};

/// Builds a fresh program (fresh model state) each call: the reference run and the recorded run each get one.
using StepFactory = std::function<StepProgram()>;

/// Runs the step (once plainly when options.referenceRun, for PyTorch's own error; then recorded) and
/// diagnoses it. Bad input inside forward (an engine::Error) propagates; torch errors become the report.
InspectionReport inspectStep(const StepFactory &make, const InspectOptions &options);

/// Fills report.gradients and report.gradientProblems from the parameters after backward.
void fillGradientFlow(const StepProgram &program, InspectionReport &report);

using engine::torchErrorText; // engine/core/torcherror.h

} // namespace engine::inspect
