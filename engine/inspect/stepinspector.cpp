#include "engine/inspect/stepinspector.h"

#include "engine/core/error.h"
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

std::vector<std::string> conflictFixes(const InplaceConflict &c, FixContext context)
{
    const std::string where = c.culpritModule.empty() ? std::string() : " in " + c.culpritModule;
    const std::string saved = c.savedByOp + " (for " + (c.backwardNode.empty() ? "backward" : c.backwardNode) + ")";
    const std::string clone = "Clone before writing: " + c.culpritOp + where + " writes into memory that " + saved +
                              " saved at version " + std::to_string(c.savedVersion) +
                              "; write into a copy instead (x = x.clone() before the write, or an out-of-place op such "
                              "as torch.cat / x = x + y), so the saved tensor keeps its values.";
    const std::string noGrad = "Update the cache outside the graph: do the write under torch.no_grad() with detached "
                               "values (cache[...] = x.detach()), if no gradient has to flow through the cached "
                               "entries.";
    const std::string cacheOff = "Turn the cache off for training (use_cache=False): a training step sees the whole "
                                 "sequence in one forward pass and needs no incremental cache.";
    const std::string detach = "Detach: if " + c.savedByOp + " needs no gradient through this tensor, pass x.detach() "
                               "to it; autograd then saves nothing that the later write can invalidate.";
    if (context == FixContext::KvCache)
        return {clone, cacheOff, noGrad, detach};
    return {clone, detach, noGrad, cacheOff};
}

FixContext guessContext(const InplaceConflict &c, FixContext given)
{
    if (given != FixContext::Unknown)
        return given;
    for (const WriteInfo &w : c.writes) {
        std::string module = w.module;
        for (char &ch : module)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (module.find("cache") != std::string::npos || module.find("attn") != std::string::npos ||
            module.find("attention") != std::string::npos)
            return FixContext::KvCache;
    }
    return FixContext::Unknown;
}

InplaceConflict buildConflict(const InspectionReport &report, const StaleSaved &stale, FixContext context)
{
    const SavedTensorInfo &saved = report.savedTensors[static_cast<size_t>(stale.savedId)];
    InplaceConflict c;
    c.savedTensorId = saved.id;
    c.tensorShape = saved.tensor.shape;
    c.dtype = saved.tensor.dtype;
    c.producedByOp = saved.producedByOpName;
    c.savedByOp = saved.savedByOpName;
    c.savedByOpIndex = saved.savedByOp;
    if (saved.savedByOp >= 0 && saved.savedByOp < static_cast<int64_t>(report.ops.size()))
        c.savedByModule = report.ops[static_cast<size_t>(saved.savedByOp)].module;
    c.backwardNode = saved.backwardNode;
    c.savedVersion = stale.savedVersion;
    c.currentVersion = stale.currentVersion;
    for (const StorageTimeline &timeline : report.storages) {
        if (timeline.id != saved.tensor.storageId)
            continue;
        bool afterSave = false;
        for (const StorageEvent &event : timeline.events) {
            if (event.kind == StorageEventKind::Save && event.savedTensorId == saved.id)
                afterSave = true;
            if (!afterSave || event.kind != StorageEventKind::Write || event.version <= stale.savedVersion)
                continue;
            WriteInfo w;
            w.opIndex = event.opIndex;
            w.versionAfter = event.version;
            if (event.opIndex >= 0 && event.opIndex < static_cast<int64_t>(report.ops.size())) {
                w.op = report.ops[static_cast<size_t>(event.opIndex)].name;
                w.module = report.ops[static_cast<size_t>(event.opIndex)].module;
            }
            c.writes.push_back(std::move(w));
        }
    }
    if (!c.writes.empty()) {
        c.culpritOp = c.writes.front().op;
        c.culpritIndex = c.writes.front().opIndex;
        c.culpritModule = c.writes.front().module;
    }
    c.fixes = conflictFixes(c, guessContext(c, context));
    return c;
}

bool isFinite(double v) { return std::isfinite(v); }

} // namespace

void fillGradientFlow(const StepProgram &program, InspectionReport &report)
{
    std::unordered_set<const c10::TensorImpl *> inOptimizer;
    if (program.optimizerParameters)
        for (const at::Tensor &p : *program.optimizerParameters)
            inOptimizer.insert(p.unsafeGetTensorImpl());
    int frozenInOptimizer = 0, trainableMissing = 0, noGrad = 0, zeroGrad = 0, nonFinite = 0;
    std::unordered_set<std::string> devices;
    torch::NoGradGuard noGradGuard;
    for (const auto &[name, p] : program.parameters) {
        GradientRow row;
        row.name = name;
        row.shape = p.sizes().vec();
        row.device = p.device().str();
        devices.insert(row.device);
        row.requiresGrad = p.requires_grad();
        row.hasGrad = p.grad().defined();
        if (row.hasGrad)
            row.gradNorm = p.grad().to(torch::kDouble).norm().item<double>();
        row.optimizerKnown = program.optimizerParameters.has_value();
        row.inOptimizer = inOptimizer.count(p.unsafeGetTensorImpl()) > 0;
        if (row.optimizerKnown && row.inOptimizer && !row.requiresGrad) {
            row.problem = "frozen (requires_grad is false) but in the optimizer";
            ++frozenInOptimizer;
        } else if (row.optimizerKnown && !row.inOptimizer && row.requiresGrad) {
            row.problem = "trainable but not in the optimizer: it gets a gradient and is never updated";
            ++trainableMissing;
        } else if (row.requiresGrad && !row.hasGrad && report.backwardSucceeded) {
            row.problem = "no gradient: the loss does not depend on it";
            ++noGrad;
        } else if (row.hasGrad && !isFinite(row.gradNorm)) {
            row.problem = "gradient holds NaN or Inf";
            ++nonFinite;
        } else if (row.hasGrad && row.gradNorm == 0) {
            row.problem = "zero gradient";
            ++zeroGrad;
        }
        report.gradients.push_back(std::move(row));
    }
    auto add = [&](int count, const std::string &what) {
        if (count > 0)
            report.gradientProblems.push_back(std::to_string(count) + (count == 1 ? " parameter " : " parameters ") +
                                              what);
    };
    add(frozenInOptimizer, "frozen but in the optimizer (the optimizer holds them, backward gives them no gradient)");
    add(trainableMissing, "trainable but not in the optimizer (never updated)");
    add(noGrad, "without a gradient");
    add(nonFinite, "with NaN/Inf gradients");
    add(zeroGrad, "with an all-zero gradient");
    if (devices.size() > 1)
        report.gradientProblems.push_back("parameters on " + std::to_string(devices.size()) +
                                          " devices: clip the gradient norm over all of them together");
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
        recorder.fill(report);
    }
    if (program.afterBackward)
        program.afterBackward();

    report.pytorchError = !referenceError.empty() ? referenceError : (!backwardError.empty() ? backwardError : forwardError);
    if (!forwardError.empty()) {
        report.status = InspectStatus::Error;
        report.error = "forward failed: " + forwardError;
        report.summary = report.error;
        return report;
    }

    if (!raised.empty() || !predicted.empty()) {
        const StaleSaved &which = !raised.empty() ? raised.front() : predicted.front();
        InplaceConflict conflict = buildConflict(report, which, program.fixContext);
        for (const StaleSaved &p : predicted)
            conflict.predicted = conflict.predicted || p.savedId == which.savedId;
        conflict.raisedInBackward = !raised.empty();
        report.conflict = std::move(conflict);
        report.status = InspectStatus::InplaceConflict;
        const InplaceConflict &c = *report.conflict;
        report.summary = c.culpritOp + (c.culpritModule.empty() ? "" : " in " + c.culpritModule) + " (op " +
                         std::to_string(c.culpritIndex) + ") wrote a " + shapeText(c.tensorShape) + " " + c.dtype +
                         " tensor after " + c.savedByOp + " saved it for " + c.backwardNode + " (version " +
                         std::to_string(c.savedVersion) + ", now " + std::to_string(c.currentVersion) + ")";
    } else if (!backwardError.empty()) {
        report.status = InspectStatus::Error;
        report.error = "backward failed: " + backwardError;
        report.summary = report.error;
    } else if (!mutated.empty()) {
        report.status = InspectStatus::SilentMutation;
        for (int64_t id : mutated) {
            const SavedTensorInfo &s = report.savedTensors[static_cast<size_t>(id)];
            SilentMutation m;
            m.savedTensorId = id;
            m.tensorShape = s.tensor.shape;
            m.savedByOp = s.savedByOpName;
            m.backwardNode = s.backwardNode;
            if (s.savedByOp >= 0)
                m.module = report.ops[static_cast<size_t>(s.savedByOp)].module;
            report.mutations.push_back(std::move(m));
        }
        const SilentMutation &m = report.mutations.front();
        report.summary = "a " + shapeText(m.tensorShape) + " tensor that " + m.savedByOp + " saved for " +
                         m.backwardNode + " changed its values without a version bump (a .data write or a custom "
                         "kernel): its gradient is silently wrong";
    }

    if (!report.nan && !std::isfinite(report.loss)) {
        NanOrigin origin;
        origin.op = "loss";
        origin.hasNan = std::isnan(report.loss);
        report.nan = origin;
    }
    if (report.backwardSucceeded)
        fillGradientFlow(program, report);
    if (report.nan && report.status == InspectStatus::Ok) {
        report.status = InspectStatus::Nan;
        const NanOrigin &n = *report.nan;
        report.summary = std::string(n.hasNan ? "NaN" : "Inf") + " first appeared in the " + phaseName(n.phase) +
                         " pass at " + n.op + " (op " + std::to_string(n.opIndex) + ")" +
                         (n.module.empty() ? "" : " in " + n.module) +
                         (n.backwardNode.empty() ? "" : ", inside " + n.backwardNode);
    }
    if (report.status == InspectStatus::Ok)
        report.summary = report.gradientProblems.empty()
                             ? "backward succeeded; no in-place conflict, silent mutation or NaN"
                             : "backward succeeded, but: " + report.gradientProblems.front();
    return report;
}

} // namespace engine::inspect
