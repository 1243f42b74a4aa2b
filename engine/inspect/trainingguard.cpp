#include "engine/inspect/trainingguard.h"

#include "engine/inspect/steprecorder.h"

#include <torch/torch.h>

#include <cmath>

namespace engine::inspect {

TrainingGuard::TrainingGuard() = default;
TrainingGuard::~TrainingGuard() = default;

void TrainingGuard::beginStep()
{
    m_recorder.reset();
    RecordOptions options;
    options.recordOps = false;
    options.checksums = false;
    options.findNan = false;
    try {
        m_recorder = std::make_unique<StepRecorder>(options);
    } catch (const std::exception &) {
        // Another inspection records in this process (hooks are process-wide): this step goes unwatched
        // for stale saved tensors; the loss and gradient checks still run.
        m_recorder.reset();
    }
}

bool TrainingGuard::watching() const { return m_recorder != nullptr; }

GuardVerdict TrainingGuard::beforeBackward(const at::Tensor &loss)
{
    GuardVerdict verdict;
    if (loss.defined()) {
        torch::NoGradGuard noGrad;
        const double value = loss.detach().to(torch::kDouble).sum().item<double>();
        if (!std::isfinite(value)) {
            verdict.fired = true;
            verdict.reason = std::string("the loss is ") + (std::isnan(value) ? "NaN" : "Inf");
            return verdict;
        }
    }
    return checkSavedTensors(loss);
}

GuardVerdict TrainingGuard::checkSavedTensors(const at::Tensor &loss)
{
    GuardVerdict verdict;
    if (m_recorder) {
        const std::vector<StaleSaved> stale = m_recorder->beginBackward(loss);
        if (!stale.empty()) {
            InspectionReport report;
            m_recorder->fill(report);
            const SavedTensorInfo &s = report.savedTensors[static_cast<size_t>(stale.front().savedId)];
            verdict.fired = true;
            verdict.reason = "a tensor saved for " + (s.backwardNode.empty() ? std::string("backward") : s.backwardNode) +
                             " was modified in place (version " + std::to_string(stale.front().currentVersion) +
                             ", saved at " + std::to_string(stale.front().savedVersion) + "): backward will fail";
        }
    }
    return verdict;
}

GuardVerdict TrainingGuard::afterBackward(const std::vector<at::Tensor> &parameters)
{
    GuardVerdict verdict;
    if (m_recorder)
        m_recorder->endBackward();
    torch::NoGradGuard noGrad;
    std::vector<at::Tensor> sums;
    for (const at::Tensor &p : parameters)
        if (p.grad().defined())
            sums.push_back(p.grad().sum(torch::kDouble));
    if (!sums.empty() && !std::isfinite(torch::stack(sums).sum().item<double>())) {
        verdict.fired = true;
        verdict.reason = "a gradient holds NaN or Inf";
    }
    return verdict;
}

void TrainingGuard::endStep() { m_recorder.reset(); }

} // namespace engine::inspect
