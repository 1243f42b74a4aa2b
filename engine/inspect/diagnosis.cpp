#include "engine/inspect/diagnosis.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

namespace engine::inspect {
namespace {

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

std::string shapeOf(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

/// "model.py:187 (forward)".
std::string whereText(const SourceLocation &source)
{
    return source.file + ":" + std::to_string(source.line) + (source.function.empty() ? "" : " (" + source.function + ")");
}

} // namespace

std::vector<std::string> conflictFixes(const InplaceConflict &c, FixContext context)
{
    const std::string where = c.culpritModule.empty() ? std::string() : " in " + c.culpritModule;
    const std::string saved = c.savedByOp + " (for " + (c.backwardNode.empty() ? "backward" : c.backwardNode) + ")";
    std::string clone = "Clone before writing: " + c.culpritOp + where + " writes into memory that " + saved +
                        " saved at version " + std::to_string(c.savedVersion) +
                        "; write into a copy instead (x = x.clone() before the write, or an out-of-place op such "
                        "as torch.cat / x = x + y), so the saved tensor keeps its values.";
    if (c.culpritSource)
        clone = "In " + whereText(*c.culpritSource) + ", `" + c.culpritSource->code + "`: " + clone;
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

InplaceConflict buildConflict(const InspectionReport &report, const StaleSaved &stale, FixContext context)
{
    const SavedTensorInfo &saved = report.savedTensors[static_cast<size_t>(stale.savedId)];
    auto opAt = [&](int64_t index) -> const OpRecord * {
        return index >= 0 && index < static_cast<int64_t>(report.ops.size()) ? &report.ops[static_cast<size_t>(index)] : nullptr;
    };
    InplaceConflict c;
    c.savedTensorId = saved.id;
    c.tensorShape = saved.tensor.shape;
    c.dtype = saved.tensor.dtype;
    c.producedByOp = saved.producedByOpName;
    c.savedByOp = saved.savedByOpName;
    c.savedByOpIndex = saved.savedByOp;
    if (const OpRecord *op = opAt(saved.savedByOp)) {
        c.savedByModule = op->module;
        c.savedBySource = op->source;
    }
    c.backwardNode = saved.backwardNode;
    c.savedVersion = stale.savedVersion;
    c.currentVersion = stale.currentVersion;
    for (const StorageTimeline &timeline : report.storages) {
        if (timeline.id != saved.tensor.storageId)
            continue;
        c.storageName = timeline.name;
        bool afterSave = false;
        for (const StorageEvent &event : timeline.events) {
            if (event.kind == StorageEventKind::Save && event.savedTensorId == saved.id)
                afterSave = true;
            if (!afterSave || event.kind != StorageEventKind::Write || event.version <= stale.savedVersion)
                continue;
            WriteInfo w;
            w.opIndex = event.opIndex;
            w.versionAfter = event.version;
            if (const OpRecord *op = opAt(event.opIndex)) {
                w.op = op->name;
                w.module = op->module;
                w.source = op->source;
            }
            c.writes.push_back(std::move(w));
        }
    }
    if (!c.writes.empty()) {
        c.culpritOp = c.writes.front().op;
        c.culpritIndex = c.writes.front().opIndex;
        c.culpritModule = c.writes.front().module;
        c.culpritSource = c.writes.front().source;
    }
    c.fixes = conflictFixes(c, guessContext(c, context));
    return c;
}

void classifyGradients(InspectionReport &report)
{
    int frozenInOptimizer = 0, trainableMissing = 0, noGrad = 0, zeroGrad = 0, nonFinite = 0;
    std::set<std::string> devices;
    for (GradientRow &row : report.gradients) {
        devices.insert(row.device);
        row.problem.clear();
        if (row.optimizerKnown && row.inOptimizer && !row.requiresGrad) {
            row.problem = "frozen (requires_grad is false) but in the optimizer";
            ++frozenInOptimizer;
        } else if (row.optimizerKnown && !row.inOptimizer && row.requiresGrad) {
            row.problem = "trainable but not in the optimizer: it gets a gradient and is never updated";
            ++trainableMissing;
        } else if (row.requiresGrad && !row.hasGrad && report.backwardSucceeded) {
            row.problem = "no gradient: the loss does not depend on it";
            ++noGrad;
        } else if (row.hasGrad && !std::isfinite(row.gradNorm)) {
            row.problem = "gradient holds NaN or Inf";
            ++nonFinite;
        } else if (row.hasGrad && row.gradNorm == 0) {
            row.problem = "zero gradient";
            ++zeroGrad;
        }
    }
    report.gradientProblems.clear();
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

void readSourceLines(InspectionReport &report)
{
    std::map<std::string, std::vector<std::string>> files;
    for (OpRecord &op : report.ops) {
        if (!op.source || !op.source->code.empty() || op.source->line < 1)
            continue;
        auto it = files.find(op.source->file);
        if (it == files.end()) {
            std::vector<std::string> lines;
            std::ifstream in(op.source->file);
            for (std::string line; in && std::getline(in, line);)
                lines.push_back(line);
            it = files.emplace(op.source->file, std::move(lines)).first;
        }
        if (op.source->line <= static_cast<int64_t>(it->second.size())) {
            const std::string &line = it->second[static_cast<size_t>(op.source->line - 1)];
            const size_t first = line.find_first_not_of(" \t");
            const size_t last = line.find_last_not_of(" \t\r");
            op.source->code = first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
        }
    }
}

void diagnose(InspectionReport &report, const RecordingOutcome &outcome, FixContext context)
{
    report.pytorchError = !outcome.referenceError.empty() ? outcome.referenceError
                        : !outcome.backwardError.empty()  ? outcome.backwardError
                                                          : outcome.forwardError;
    if (!outcome.forwardError.empty()) {
        report.status = InspectStatus::Error;
        report.error = "forward failed: " + outcome.forwardError;
        report.summary = report.error;
        return;
    }

    if (!outcome.raised.empty() || !outcome.predicted.empty()) {
        const StaleSaved &which = !outcome.raised.empty() ? outcome.raised.front() : outcome.predicted.front();
        InplaceConflict conflict = buildConflict(report, which, context);
        for (const StaleSaved &p : outcome.predicted)
            conflict.predicted = conflict.predicted || p.savedId == which.savedId;
        conflict.raisedInBackward = !outcome.raised.empty();
        report.conflict = std::move(conflict);
        report.status = InspectStatus::InplaceConflict;
        const InplaceConflict &c = *report.conflict;
        report.summary = c.culpritOp + (c.culpritModule.empty() ? "" : " in " + c.culpritModule) + " (op " +
                         std::to_string(c.culpritIndex) + ")" +
                         (c.culpritSource ? " at " + whereText(*c.culpritSource) : std::string()) + " wrote a " +
                         shapeOf(c.tensorShape) + " " + c.dtype + " tensor after " + c.savedByOp + " saved it for " +
                         c.backwardNode + " (version " + std::to_string(c.savedVersion) + ", now " +
                         std::to_string(c.currentVersion) + ")";
    } else if (!outcome.backwardError.empty()) {
        report.status = InspectStatus::Error;
        report.error = "backward failed: " + outcome.backwardError;
        report.summary = report.error;
    } else if (!outcome.mutated.empty()) {
        report.status = InspectStatus::SilentMutation;
        for (int64_t id : outcome.mutated) {
            const SavedTensorInfo &s = report.savedTensors[static_cast<size_t>(id)];
            SilentMutation m;
            m.savedTensorId = id;
            m.tensorShape = s.tensor.shape;
            m.savedByOp = s.savedByOpName;
            m.backwardNode = s.backwardNode;
            if (s.savedByOp >= 0 && s.savedByOp < static_cast<int64_t>(report.ops.size())) {
                m.module = report.ops[static_cast<size_t>(s.savedByOp)].module;
                m.source = report.ops[static_cast<size_t>(s.savedByOp)].source;
            }
            report.mutations.push_back(std::move(m));
        }
        const SilentMutation &m = report.mutations.front();
        report.summary = "a " + shapeOf(m.tensorShape) + " tensor that " + m.savedByOp + " saved for " +
                         m.backwardNode + " changed its values without a version bump (a .data write or a custom "
                         "kernel): its gradient is silently wrong";
    }

    if (!report.nan && !std::isfinite(report.loss)) {
        NanOrigin origin;
        origin.op = "loss";
        origin.hasNan = std::isnan(report.loss);
        report.nan = origin;
    }
    if (report.nan && report.nan->opIndex >= 0 && report.nan->opIndex < static_cast<int64_t>(report.ops.size()) &&
        !report.nan->source)
        report.nan->source = report.ops[static_cast<size_t>(report.nan->opIndex)].source;
    if (report.backwardSucceeded || !report.gradients.empty())
        classifyGradients(report);
    if (report.nan && report.status == InspectStatus::Ok) {
        report.status = InspectStatus::Nan;
        const NanOrigin &n = *report.nan;
        report.summary = std::string(n.hasNan ? "NaN" : "Inf") + " first appeared in the " + phaseName(n.phase) +
                         " pass at " + n.op + " (op " + std::to_string(n.opIndex) + ")" +
                         (n.module.empty() ? "" : " in " + n.module) +
                         (n.source ? " at " + whereText(*n.source) : std::string()) +
                         (n.backwardNode.empty() ? "" : ", inside " + n.backwardNode);
    }
    if (report.status == InspectStatus::Ok)
        report.summary = report.gradientProblems.empty()
                             ? "backward succeeded; no in-place conflict, silent mutation or NaN"
                             : "backward succeeded, but: " + report.gradientProblems.front();
}

} // namespace engine::inspect
