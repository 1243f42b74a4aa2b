#include "engine/inspect/inspectionoutput.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace engine::inspect {
namespace {

using nlohmann::json;

/// NaN and Inf are not JSON: as strings.
json number(double v)
{
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    return v;
}

json tensorJson(const TensorInfo &t, bool withRange = false)
{
    json j = {{"shape", t.shape}, {"dtype", t.dtype}, {"device", t.device}, {"storage", t.storageId},
              {"version_before", t.versionBefore}, {"version_after", t.versionAfter}};
    if (t.written)
        j["written"] = true;
    if (t.nonFinite)
        j["non_finite"] = true;
    if (withRange) {
        j["min"] = number(t.min);
        j["max"] = number(t.max);
    }
    return j;
}

json sourceJson(const std::optional<SourceLocation> &source)
{
    if (!source)
        return nullptr;
    return {{"file", source->file}, {"line", source->line}, {"function", source->function}, {"code", source->code}};
}

/// "model.py:187 in forward".
std::string whereText(const SourceLocation &source)
{
    return source.file + ":" + std::to_string(source.line) + (source.function.empty() ? "" : " in " + source.function);
}

/// The line of `source`, with up to two lines around it when the file can be read here, each numbered,
/// the line itself marked; just the recorded line when the file cannot be read.
std::string sourceExcerpt(const SourceLocation &source, const std::string &indent)
{
    std::ostringstream out;
    out << indent << whereText(source) << "\n";
    std::ifstream file(source.file);
    std::vector<std::string> lines;
    for (std::string line; file && std::getline(file, line);)
        lines.push_back(line);
    const int64_t at = source.line;
    if (at >= 1 && at <= static_cast<int64_t>(lines.size())) {
        for (int64_t n = std::max<int64_t>(1, at - 2); n <= std::min<int64_t>(static_cast<int64_t>(lines.size()), at + 2); ++n)
            out << indent << (n == at ? "> " : "  ") << std::setw(5) << n << " | " << lines[static_cast<size_t>(n - 1)] << "\n";
    } else if (!source.code.empty()) {
        out << indent << "> " << std::setw(5) << at << " | " << source.code << "\n";
    }
    return out.str();
}

std::string shapeString(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

} // namespace

json reportToJson(const InspectionReport &report, bool includeTrace)
{
    json j;
    j["status"] = statusName(report.status);
    j["summary"] = report.summary;
    j["source"] = report.source;
    j["pytorch_error"] = report.pytorchError;
    if (!report.error.empty())
        j["error"] = report.error;
    j["backward_succeeded"] = report.backwardSucceeded;
    j["loss"] = number(report.loss);
    if (report.conflict) {
        const InplaceConflict &c = *report.conflict;
        j["culprit_op"] = c.culpritOp;
        j["culprit_index"] = c.culpritIndex;
        j["culprit_module"] = c.culpritModule;
        j["culprit_source"] = sourceJson(c.culpritSource);
        j["saved_by_source"] = sourceJson(c.savedBySource);
        if (!c.storageName.empty())
            j["tensor_name"] = c.storageName;
        j["saved_by_op"] = c.savedByOp;
        j["saved_by_op_index"] = c.savedByOpIndex;
        j["saved_by_module"] = c.savedByModule;
        j["backward_node"] = c.backwardNode;
        j["tensor_shape"] = c.tensorShape;
        j["tensor_dtype"] = c.dtype;
        j["tensor_made_by"] = c.producedByOp;
        j["saved_version"] = c.savedVersion;
        j["current_version"] = c.currentVersion;
        j["fix"] = c.fixes.empty() ? std::string() : c.fixes.front();
        j["fixes"] = c.fixes;
        j["predicted_before_backward"] = c.predicted;
        j["raised_in_backward"] = c.raisedInBackward;
        json writes = json::array();
        for (const WriteInfo &w : c.writes)
            writes.push_back({{"op", w.op}, {"index", w.opIndex}, {"module", w.module}, {"version_after", w.versionAfter},
                              {"source", sourceJson(w.source)}});
        j["writes"] = writes;
    }
    if (!report.mutations.empty()) {
        json mutations = json::array();
        for (const SilentMutation &m : report.mutations)
            mutations.push_back({{"tensor_shape", m.tensorShape}, {"saved_by_op", m.savedByOp},
                                 {"backward_node", m.backwardNode}, {"module", m.module}, {"source", sourceJson(m.source)}});
        j["silent_mutations"] = mutations;
    }
    if (report.nan) {
        const NanOrigin &n = *report.nan;
        j["first_nan_op"] = n.op;
        j["first_nan_index"] = n.opIndex;
        j["first_nan_module"] = n.module;
        j["first_nan_source"] = sourceJson(n.source);
        j["phase"] = phaseName(n.phase);
        j["first_nan_backward_node"] = n.backwardNode;
        j["first_nan_kind"] = n.hasNan ? "nan" : "inf";
        json inputs = json::array();
        for (const TensorInfo &t : n.inputs)
            inputs.push_back(tensorJson(t, true));
        j["first_nan_inputs"] = inputs;
    }
    json gradients = json::array();
    for (const GradientRow &g : report.gradients) {
        json row = {{"name", g.name}, {"shape", g.shape}, {"device", g.device}, {"requires_grad", g.requiresGrad},
                    {"has_grad", g.hasGrad}, {"grad_norm", number(g.gradNorm)}, {"problem", g.problem}};
        if (g.optimizerKnown)
            row["in_optimizer"] = g.inOptimizer;
        gradients.push_back(row);
    }
    j["gradient_flow"] = gradients;
    j["gradient_problems"] = report.gradientProblems;
    j["recording"] = {{"ops_seen", report.stats.opsSeen},       {"ops_kept", report.stats.opsKept},
                      {"ops_dropped", report.stats.opsDropped}, {"saved_tensors", report.stats.savedTensors},
                      {"bytes_used", report.stats.bytesUsed},   {"byte_limit", report.stats.byteLimit}};
    if (includeTrace) {
        json ops = json::array();
        for (const OpRecord &op : report.ops) {
            json inputs = json::array(), outputs = json::array();
            for (const TensorInfo &t : op.inputs)
                inputs.push_back(tensorJson(t));
            for (const TensorInfo &t : op.outputs)
                outputs.push_back(tensorJson(t));
            ops.push_back({{"index", op.index},          {"name", op.name},          {"phase", phaseName(op.phase)},
                           {"depth", op.depth},          {"seq", op.sequenceNr},     {"module", op.module},
                           {"backward_node", op.backwardNode}, {"writes", op.writesInput},
                           {"inputs", inputs},           {"outputs", outputs}, {"source", sourceJson(op.source)}});
        }
        j["ops"] = ops;
        json storages = json::array();
        for (const StorageTimeline &s : report.storages) {
            json events = json::array();
            for (const StorageEvent &e : s.events)
                events.push_back({{"kind", storageEventName(e.kind)}, {"op", e.opIndex}, {"version", e.version},
                                  {"saved_tensor", e.savedTensorId}});
            storages.push_back({{"id", s.id}, {"label", s.label}, {"name", s.name}, {"events", events}});
        }
        j["storages"] = storages;
        json saved = json::array();
        for (const SavedTensorInfo &s : report.savedTensors)
            saved.push_back({{"id", s.id},
                             {"tensor", tensorJson(s.tensor)},
                             {"saved_by_op", s.savedByOp},
                             {"saved_by_op_name", s.savedByOpName},
                             {"backward_node", s.backwardNode},
                             {"made_by_op", s.producedByOp},
                             {"grad_fn", s.gradFn},
                             {"saved_version", s.savedVersion},
                             {"version_at_check", s.versionAtCheck},
                             {"unpacked", s.unpacked},
                             {"checksum_changed", s.checksumChanged}});
        j["saved_tensors"] = saved;
    }
    return j;
}

std::string reportToText(const InspectionReport &report)
{
    std::ostringstream out;
    out << "Inspected: " << report.source << "\n";
    out << "Status:    " << statusName(report.status) << "\n";
    out << "\n" << report.summary << "\n";
    if (report.conflict) {
        const InplaceConflict &c = *report.conflict;
        out << "\nIn-place conflict" << (c.predicted ? " (predicted before backward" : " (")
            << (c.raisedInBackward ? (c.predicted ? ", raised by backward)" : "raised by backward)") : ")") << "\n";
        out << "  tensor       " << shapeString(c.tensorShape) << " " << c.dtype
            << (c.producedByOp.empty() ? "" : ", made by " + c.producedByOp) << "\n";
        out << "  saved by     " << c.savedByOp << " (op " << c.savedByOpIndex << ")"
            << (c.savedByModule.empty() ? "" : " in " + c.savedByModule) << ", for " << c.backwardNode
            << ", at version " << c.savedVersion << "\n";
        out << "  written by   " << c.culpritOp << " (op " << c.culpritIndex << ")"
            << (c.culpritModule.empty() ? "" : " in " + c.culpritModule) << "\n";
        if (!c.storageName.empty())
            out << "  which is     " << c.storageName << "\n";
        out << "  version now  " << c.currentVersion << " (expected " << c.savedVersion << ")\n";
        if (c.culpritSource)
            out << "\nThe write, in your code:\n" << sourceExcerpt(*c.culpritSource, "  ");
        if (c.savedBySource)
            out << "The use it broke (" << c.savedByOp << " saved the tensor here):\n" << sourceExcerpt(*c.savedBySource, "  ");
        if (c.writes.size() > 1) {
            out << "  every write after the save:\n";
            for (const WriteInfo &w : c.writes)
                out << "    op " << w.opIndex << "  " << w.op << (w.module.empty() ? "" : "  " + w.module)
                    << (w.source ? "  " + whereText(*w.source) : std::string()) << "  -> version " << w.versionAfter << "\n";
        }
        out << "\nHow to fix it (the one that fits first):\n";
        for (size_t i = 0; i < c.fixes.size(); ++i)
            out << "  " << i + 1 << ". " << c.fixes[i] << "\n";
    }
    for (const SilentMutation &m : report.mutations)
        out << "\nSilent mutation: " << shapeString(m.tensorShape) << " saved by " << m.savedByOp << " for "
            << m.backwardNode << (m.module.empty() ? "" : " in " + m.module)
            << " changed without a version bump.\n";
    if (report.nan) {
        const NanOrigin &n = *report.nan;
        out << "\nFirst " << (n.hasNan ? "NaN" : "Inf") << ": " << n.op << " (op " << n.opIndex << ", "
            << phaseName(n.phase) << (n.backwardNode.empty() ? "" : ", in " + n.backwardNode) << ")"
            << (n.module.empty() ? "" : " in " + n.module) << "\n";
        if (n.source)
            out << sourceExcerpt(*n.source, "  ");
        for (const TensorInfo &t : n.inputs) {
            out << "  input " << shapeString(t.shape) << " " << t.dtype << "  range [" << t.min << ", " << t.max
                << "]\n";
        }
    }
    if (!report.gradientProblems.empty()) {
        out << "\nGradient flow:\n";
        for (const std::string &p : report.gradientProblems)
            out << "  " << p << "\n";
        for (const GradientRow &g : report.gradients)
            if (!g.problem.empty())
                out << "    " << g.name << ": " << g.problem << "\n";
    }
    if (!report.pytorchError.empty())
        out << "\nPyTorch said: " << report.pytorchError << "\n";
    out << "\nRecorded " << report.stats.opsKept << " of " << report.stats.opsSeen << " ops";
    if (report.stats.opsDropped > 0)
        out << " (" << report.stats.opsDropped << " dropped at the memory bound of " << report.stats.byteLimit
            << " bytes)";
    out << ", " << report.stats.savedTensors << " saved tensors.\n";
    return out.str();
}

} // namespace engine::inspect
