#include "engine/inspect/stepinspector.h"

#include "engine/core/error.h"
#include "engine/inspect/diagnosis.h"
#include "engine/inspect/savedhooks.h"
#include "engine/inspect/steprecorder.h"
#include "engine/inspect/tensorinfo.h"

#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <sstream>
#include <unordered_set>

namespace engine::inspect {
namespace {

/// Runs the step without any inspector hooks; returns PyTorch's error ("" when it succeeded).
std::string plainRunError(const StepFactory &make)
{
    StepProgram program = make();
    std::string error;
    try {
        at::Tensor loss = program.forward();
        if (loss.defined() && loss.requires_grad())
            loss.sum().backward();
    } catch (const engine::Error &) {
        throw;
    } catch (const std::exception &e) {
        error = torchErrorText(e);
    }
    if (program.afterBackward)
        program.afterBackward();
    return error;
}

} // namespace

void fillGradientFlow(const StepProgram &program, InspectionReport &report)
{
    std::unordered_set<const c10::TensorImpl *> inOptimizer;
    if (program.optimizerParameters)
        for (const at::Tensor &p : *program.optimizerParameters)
            inOptimizer.insert(p.unsafeGetTensorImpl());
    torch::NoGradGuard noGradGuard;
    for (const auto &[name, p] : program.parameters) {
        GradientRow row;
        row.name = name;
        row.shape = p.sizes().vec();
        row.device = p.device().str();
        row.requiresGrad = p.requires_grad();
        row.hasGrad = p.grad().defined();
        if (row.hasGrad)
            row.gradNorm = p.grad().to(torch::kDouble).norm().item<double>();
        row.optimizerKnown = program.optimizerParameters.has_value();
        row.inOptimizer = inOptimizer.count(p.unsafeGetTensorImpl()) > 0;
        report.gradients.push_back(std::move(row));
    }
    classifyGradients(report);
}

InspectionReport inspectStep(const StepFactory &make, const InspectOptions &options)
{
    InspectionReport report;
    std::string referenceError;
    if (options.referenceRun)
        referenceError = plainRunError(make);

    StepProgram program = make();
    report.source = program.source;
    RecordOptions recordOptions;
    recordOptions.maxBytes = options.maxRecordBytes;
    recordOptions.checksums = options.checksums;
    recordOptions.torchScriptScopes = program.torchScript;

    std::string forwardError, backwardError;
    std::vector<StaleSaved> predicted, raised;
    std::vector<int64_t> mutated;
    {
        StepRecorder recorder(recordOptions);
        at::Tensor loss;
        try {
            loss = program.forward();
        } catch (const engine::Error &) {
            throw;
        } catch (const std::exception &e) {
            forwardError = torchErrorText(e);
        }
        if (forwardError.empty()) {
            if (loss.defined() && loss.numel() > 0) {
                const InternalOpsScope internal; // not part of the step's trace
                torch::NoGradGuard noGrad;
                report.loss = loss.detach().to(torch::kDouble).sum().item<double>();
            }
            at::Tensor total = loss.defined() && loss.dim() > 0 ? loss.sum() : loss;
            predicted = recorder.beginBackward(total);
            try {
                if (!total.defined() || !total.requires_grad())
                    throw invalidInput(program.source + ": the step's result does not require grad: no parameter "
                                       "or input it depends on has requires_grad set");
                total.backward();
                report.backwardSucceeded = true;
            } catch (const engine::Error &) {
                throw;
            } catch (const std::exception &e) {
                backwardError = torchErrorText(e);
            }
            recorder.endBackward();
        }
        recorder.stop();
        if (std::string limit = recorder.limitError(); !limit.empty())
            throw invalidInput(program.source + ": " + limit);
        raised = recorder.staleAtUnpack();
        mutated = recorder.silentMutations();
        recorder.nameStorages(program.parameters);
        recorder.fill(report);
    }
    if (program.afterBackward)
        program.afterBackward();

    if (report.backwardSucceeded)
        fillGradientFlow(program, report);
    if (program.torchScript)
        readSourceLines(report);
    RecordingOutcome outcome;
    outcome.forwardError = forwardError;
    outcome.backwardError = backwardError;
    outcome.referenceError = referenceError;
    outcome.predicted = std::move(predicted);
    outcome.raised = std::move(raised);
    outcome.mutated = std::move(mutated);
    diagnose(report, outcome, program.fixContext);
    return report;
}

} // namespace engine::inspect
