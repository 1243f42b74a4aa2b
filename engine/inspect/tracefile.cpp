#include "engine/inspect/tracefile.h"

#include "engine/core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>

namespace engine::inspect {
namespace {

using nlohmann::json;

/// Deeper JSON than any record of the format needs; refused before parsing (the parser recurses).
constexpr int kMaxDepth = 32;
/// A longer line than any record of a bounded recording holds.
constexpr size_t kMaxLineBytes = size_t(64) << 20;

/// One line of the file, read and checked, with its number for messages.
class Line {
public:
    Line(const json &object, std::string where) : m_object(object), m_where(std::move(where)) {}

    [[noreturn]] void fail(const std::string &what) const { throw invalidInput(m_where + ": " + what); }

    const json &at(const char *key) const
    {
        const auto it = m_object.find(key);
        if (it == m_object.end())
            fail(std::string("\"") + key + "\" is missing");
        return *it;
    }
    bool has(const char *key) const { return m_object.contains(key) && !m_object[key].is_null(); }

    int64_t integer(const char *key) const
    {
        const json &v = at(key);
        if (!v.is_number_integer())
            fail(std::string("\"") + key + "\" must be an integer (got " + v.dump() + ")");
        return v.get<int64_t>();
    }
    int64_t integerOr(const char *key, int64_t fallback) const { return has(key) ? integer(key) : fallback; }
    double number(const char *key) const
    {
        const json &v = at(key);
        if (v.is_string()) { // NaN and Inf are strings in JSON
            const std::string s = v.get<std::string>();
            if (s == "nan")
                return std::numeric_limits<double>::quiet_NaN();
            if (s == "inf" || s == "-inf")
                return s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
        }
        if (!v.is_number())
            fail(std::string("\"") + key + "\" must be a number (got " + v.dump() + ")");
        return v.get<double>();
    }
    double numberOr(const char *key, double fallback) const { return has(key) ? number(key) : fallback; }
    std::string text(const char *key) const
    {
        const json &v = at(key);
        if (!v.is_string())
            fail(std::string("\"") + key + "\" must be a string (got " + v.dump() + ")");
        return v.get<std::string>();
    }
    std::string textOr(const char *key, const std::string &fallback = {}) const { return has(key) ? text(key) : fallback; }
    bool flag(const char *key) const
    {
        if (!has(key))
            return false;
        const json &v = m_object[key];
        if (!v.is_boolean())
            fail(std::string("\"") + key + "\" must be true or false (got " + v.dump() + ")");
        return v.get<bool>();
    }
    const json &array(const char *key) const
    {
        const json &v = at(key);
        if (!v.is_array())
            fail(std::string("\"") + key + "\" must be a list (got " + v.dump().substr(0, 80) + ")");
        return v;
    }
    Line nested(const json &object, const std::string &what) const
    {
        if (!object.is_object())
            fail(what + " must be an object (got " + object.dump().substr(0, 80) + ")");
        return Line(object, m_where + ", " + what);
    }

private:
    const json &m_object;
    std::string m_where;
};

std::vector<int64_t> shapeOf(const Line &line, const char *key)
{
    std::vector<int64_t> shape;
    for (const json &d : line.array(key)) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
            line.fail(std::string("\"") + key + "\" must be a list of sizes (got " + d.dump() + ")");
        shape.push_back(d.get<int64_t>());
    }
    return shape;
}

TensorInfo tensorOf(const Line &line)
{
    TensorInfo t;
    t.shape = shapeOf(line, "shape");
    t.dtype = line.text("dtype");
    t.device = line.textOr("device", "cpu");
    t.storageId = line.integerOr("storage", 0);
    t.versionBefore = line.integerOr("version_before", -1);
    t.versionAfter = line.integerOr("version_after", -1);
    t.written = line.flag("written");
    t.nonFinite = line.flag("non_finite");
    t.min = line.numberOr("min", 0);
    t.max = line.numberOr("max", 0);
    if (t.storageId < 0)
        line.fail("\"storage\" must be 0 or a storage id (got " + std::to_string(t.storageId) + ")");
    return t;
}

std::optional<SourceLocation> sourceOf(const Line &line)
{
    if (!line.has("source"))
        return std::nullopt;
    const Line s = line.nested(line.at("source"), "source");
    SourceLocation where;
    where.file = s.text("file");
    where.line = s.integer("line");
    where.function = s.textOr("function");
    where.code = s.textOr("code");
    return where;
}

Phase phaseOf(const Line &line)
{
    const std::string phase = line.text("phase");
    if (phase == "forward")
        return Phase::Forward;
    if (phase == "backward")
        return Phase::Backward;
    line.fail("\"phase\" must be forward or backward (got \"" + phase + "\")");
}

/// The deepest nesting of brackets in `text` outside strings.
int nestingDepth(const std::string &text)
{
    int depth = 0, deepest = 0;
    bool inString = false, escaped = false;
    for (const char c : text) {
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"')
            inString = true;
        else if (c == '[' || c == '{')
            deepest = std::max(deepest, ++depth);
        else if (c == ']' || c == '}')
            --depth;
    }
    return deepest;
}

/// Builds the report from the records as they come.
class TraceReader {
public:
    explicit TraceReader(std::string name) : m_name(std::move(name)) {}

    void header(const json &object)
    {
        // Checked by type first: json::value() throws type_error when "format" holds another type.
        const auto format = object.is_object() ? object.find("format") : object.end();
        if (format == object.end() || !format->is_string() || format->get<std::string>() != "tunebench-trace")
            throw invalidInput(m_name + " is not a tunebench trace (its first line is not a trace header)");
        const Line line(object, m_name + " line 1");
        const int64_t version = line.integer("version");
        if (version > kTraceVersion)
            throw invalidInput(m_name + ": trace version " + std::to_string(version) + " is newer than this tunebench reads ("
                               + std::to_string(kTraceVersion) + "); update tunebench, or record with the recorder it ships ("
                               "tunebench record --print-python-path)");
        if (version < 1)
            throw invalidInput(m_name + ": trace version " + std::to_string(version) + " is not a version of the format");
        std::string source = "python " + line.textOr("program", "program");
        if (line.has("torch"))
            source += " (torch " + line.text("torch") + ")";
        m_result.report.source = source;
    }

    void record(const json &object, size_t number)
    {
        const std::string where = m_name + " line " + std::to_string(number);
        if (!object.is_object())
            throw invalidInput(where + ": a record must be a JSON object");
        const Line line(object, where);
        if (m_ended)
            line.fail("a record after the end record");
        const std::string kind = line.text("kind");
        if (kind == "storage")
            storage(line);
        else if (kind == "op")
            op(line);
        else if (kind == "saved")
            saved(line);
        else if (kind == "unpack")
            unpack(line);
        else if (kind == "end")
            end(line);
        // Other kinds come from a later recorder: a reader of this version skips them.
    }

    TraceRecording finish()
    {
        if (!m_ended)
            throw invalidInput(m_name + ": the trace ends before its end record: the recorder was stopped while writing");
        InspectionReport &report = m_result.report;
        for (auto &[id, timeline] : m_storages) {
            std::stable_sort(timeline.events.begin(), timeline.events.end(),
                             [](const StorageEvent &a, const StorageEvent &b) { return a.opIndex < b.opIndex; });
            if (!timeline.events.empty())
                report.storages.push_back(std::move(timeline));
        }
        report.stats.savedTensors = static_cast<int64_t>(report.savedTensors.size());
        return std::move(m_result);
    }

private:
    StorageTimeline &timeline(int64_t id, const TensorInfo *first = nullptr)
    {
        StorageTimeline &t = m_storages[id];
        t.id = id;
        if (t.label.empty() && first)
            t.label = shapeText(first->shape) + " " + first->dtype;
        return t;
    }

    static std::string shapeText(const std::vector<int64_t> &shape)
    {
        std::string text = "[";
        for (size_t i = 0; i < shape.size(); ++i)
            text += (i ? ", " : "") + std::to_string(shape[i]);
        return text + "]";
    }

    void checkOp(const Line &line, const char *key, int64_t index) const
    {
        if (index < -1 || index >= static_cast<int64_t>(m_result.report.ops.size()))
            line.fail(std::string("\"") + key + "\" " + std::to_string(index) + " is not an op of the trace (it has "
                      + std::to_string(m_result.report.ops.size()) + " before this line)");
    }

    void storage(const Line &line)
    {
        const int64_t id = line.integer("id");
        if (id <= 0)
            line.fail("a storage id must be 1 or more (got " + std::to_string(id) + ")");
        StorageTimeline &t = timeline(id);
        t.label = line.textOr("label", t.label);
        t.name = line.textOr("name", t.name);
    }

    void op(const Line &line)
    {
        InspectionReport &report = m_result.report;
        OpRecord op;
        op.index = line.integer("index");
        if (op.index != static_cast<int64_t>(report.ops.size()))
            line.fail("op index " + std::to_string(op.index) + " is out of order (expected "
                      + std::to_string(report.ops.size()) + ")");
        op.name = line.text("name");
        op.phase = phaseOf(line);
        op.isBackwardNode = line.flag("backward_node_op");
        op.depth = static_cast<int>(line.integerOr("depth", 0));
        op.sequenceNr = line.integerOr("seq", -1);
        op.module = line.textOr("module");
        op.backwardNode = line.textOr("backward_node");
        op.writesInput = line.flag("writes_input");
        int slot = 0;
        for (const json &t : line.array("inputs"))
            op.inputs.push_back(tensorOf(line.nested(t, "input " + std::to_string(slot++))));
        slot = 0;
        for (const json &t : line.array("outputs"))
            op.outputs.push_back(tensorOf(line.nested(t, "output " + std::to_string(slot++))));
        op.source = sourceOf(line);
        for (const TensorInfo &t : op.inputs) {
            if (t.written && t.storageId > 0) {
                StorageEvent event;
                event.kind = StorageEventKind::Write;
                event.opIndex = op.index;
                event.version = t.versionAfter >= 0 ? t.versionAfter : t.versionBefore + 1;
                timeline(t.storageId, &t).events.push_back(event);
            }
        }
        report.ops.push_back(std::move(op));
    }

    void saved(const Line &line)
    {
        InspectionReport &report = m_result.report;
        SavedTensorInfo s;
        s.id = line.integer("id");
        if (s.id != static_cast<int64_t>(report.savedTensors.size()))
            line.fail("saved id " + std::to_string(s.id) + " is out of order (expected "
                      + std::to_string(report.savedTensors.size()) + ")");
        s.tensor = tensorOf(line.nested(line.at("tensor"), "tensor"));
        s.savedByOp = line.integerOr("saved_by_op", -1);
        checkOp(line, "saved_by_op", s.savedByOp);
        s.savedByOpName = line.textOr("saved_by_op_name");
        s.backwardNode = line.textOr("backward_node");
        s.producedByOp = line.integerOr("produced_by_op", -1);
        checkOp(line, "produced_by_op", s.producedByOp);
        s.producedByOpName = line.textOr("produced_by_op_name");
        s.gradFn = line.textOr("grad_fn");
        s.savedVersion = line.integer("saved_version");
        if (s.tensor.storageId > 0) {
            StorageEvent event;
            event.kind = StorageEventKind::Save;
            event.opIndex = s.savedByOp;
            event.version = s.savedVersion;
            event.savedTensorId = s.id;
            timeline(s.tensor.storageId, &s.tensor).events.push_back(event);
        }
        report.savedTensors.push_back(std::move(s));
    }

    int64_t savedId(const Line &line, const char *key, int64_t id) const
    {
        if (id < 0 || id >= static_cast<int64_t>(m_result.report.savedTensors.size()))
            line.fail(std::string("\"") + key + "\" " + std::to_string(id) + " is not a saved tensor of the trace");
        return id;
    }

    void unpack(const Line &line)
    {
        InspectionReport &report = m_result.report;
        const int64_t id = savedId(line, "saved", line.integer("saved"));
        SavedTensorInfo &s = report.savedTensors[static_cast<size_t>(id)];
        const int64_t opIndex = line.integerOr("op", -1);
        checkOp(line, "op", opIndex);
        s.unpacked = true;
        s.versionAtCheck = line.integer("version");
        s.checksumChanged = s.checksumChanged || line.flag("checksum_changed");
        if (s.tensor.storageId > 0) {
            StorageEvent event;
            event.kind = StorageEventKind::Unpack;
            event.opIndex = opIndex;
            event.version = s.versionAtCheck;
            event.savedTensorId = id;
            timeline(s.tensor.storageId, &s.tensor).events.push_back(event);
        }
    }

    std::vector<StaleSaved> staleList(const Line &line, const char *key)
    {
        std::vector<StaleSaved> list;
        if (!line.has(key))
            return list;
        for (const json &entry : line.array(key)) {
            const Line e = line.nested(entry, key);
            StaleSaved stale;
            stale.savedId = savedId(e, "saved", e.integer("saved"));
            stale.savedVersion = e.integer("saved_version");
            stale.currentVersion = e.integer("current_version");
            list.push_back(stale);
        }
        return list;
    }

    void end(const Line &line)
    {
        m_ended = true;
        InspectionReport &report = m_result.report;
        RecordingOutcome &outcome = m_result.outcome;
        const std::string error = line.textOr("pytorch_error");
        std::string failedIn = line.textOr("failed_in");
        if (failedIn != "" && failedIn != "forward" && failedIn != "backward")
            line.fail("\"failed_in\" must be forward, backward or \"\" (got \"" + failedIn + "\")");
        // A NaN that raised nothing is no failure: recorders before this reader wrote the NaN's phase here.
        if (line.textOr("outcome") == "nan" && error.empty())
            failedIn.clear();
        if (failedIn == "forward")
            outcome.forwardError = error.empty() ? "the program failed in forward" : error;
        else if (failedIn == "backward")
            outcome.backwardError = error.empty() ? "the program failed in backward" : error;
        else
            outcome.referenceError = error;
        report.backwardSucceeded = line.flag("backward_succeeded");
        report.loss = line.numberOr("loss", 0);
        outcome.predicted = staleList(line, "stale_before_backward");
        outcome.raised = staleList(line, "stale_at_unpack");
        if (line.has("silent_mutations")) {
            for (const json &id : line.array("silent_mutations")) {
                if (!id.is_number_integer())
                    line.fail("\"silent_mutations\" must be a list of saved tensor ids");
                outcome.mutated.push_back(savedId(line, "silent_mutations", id.get<int64_t>()));
            }
        }
        const int64_t nanOp = line.integerOr("nan_op", -1);
        checkOp(line, "nan_op", nanOp);
        if (nanOp >= 0) {
            const OpRecord &op = report.ops[static_cast<size_t>(nanOp)];
            NanOrigin origin;
            origin.op = op.name;
            origin.opIndex = op.index;
            origin.module = op.module;
            origin.phase = op.phase;
            if (op.phase == Phase::Backward)
                origin.backwardNode = op.backwardNode;
            origin.inputs = op.inputs;
            origin.hasNan = line.textOr("nan_kind", "nan") != "inf";
            origin.source = op.source;
            report.nan = origin;
        }
        if (line.has("gradients")) {
            for (const json &entry : line.array("gradients")) {
                const Line g = line.nested(entry, "gradient");
                GradientRow row;
                row.name = g.text("name");
                row.shape = shapeOf(g, "shape");
                row.device = g.textOr("device", "cpu");
                row.requiresGrad = g.flag("requires_grad");
                row.hasGrad = g.flag("has_grad");
                row.gradNorm = g.numberOr("grad_norm", 0);
                row.inOptimizer = g.flag("in_optimizer");
                row.optimizerKnown = g.flag("optimizer_known");
                report.gradients.push_back(std::move(row));
            }
        }
        report.stats.opsSeen = line.integerOr("ops_seen", static_cast<int64_t>(report.ops.size()));
        report.stats.opsKept = line.integerOr("ops_kept", static_cast<int64_t>(report.ops.size()));
        report.stats.opsDropped = line.integerOr("ops_dropped", 0);
        report.stats.bytesUsed = line.integerOr("bytes_used", 0);
        report.stats.byteLimit = line.integerOr("byte_limit", 0);
    }

    std::string m_name;
    TraceRecording m_result;
    std::map<int64_t, StorageTimeline> m_storages;
    bool m_ended = false;
};

} // namespace

TraceRecording readTrace(std::istream &in, const std::string &name)
{
    TraceReader reader(name);
    std::string text;
    size_t number = 0;
    bool first = true;
    while (std::getline(in, text)) {
        ++number;
        if (text.size() > kMaxLineBytes)
            throw invalidInput(name + " line " + std::to_string(number) + ": longer than the "
                               + std::to_string(kMaxLineBytes >> 20) + " MiB a trace record may have");
        if (first && text.empty() && in.eof())
            break;
        if (!first && text.find_first_not_of(" \t\r") == std::string::npos)
            continue; // a blank line between records
        if (nestingDepth(text) > kMaxDepth)
            throw invalidInput(name + " line " + std::to_string(number) + ": nested deeper than the "
                               + std::to_string(kMaxDepth) + " levels a trace record may have");
        json object;
        try {
            object = json::parse(text);
        } catch (const json::exception &) {
            if (first)
                throw invalidInput(name + " is not a tunebench trace (its first line is not JSON)");
            throw invalidInput(name + " line " + std::to_string(number) + ": not a JSON record");
        }
        if (first) {
            reader.header(object);
            first = false;
        } else {
            reader.record(object, number);
        }
    }
    if (first)
        throw invalidInput(name + " is not a tunebench trace (it is empty)");
    return reader.finish();
}

InspectionReport inspectTraceFile(const std::filesystem::path &path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw ioError(path.string() + ": no such trace file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ioError(path.string() + ": cannot be read");
    TraceRecording trace = readTrace(in, path.string());
    diagnose(trace.report, trace.outcome, FixContext::Unknown);
    return std::move(trace.report);
}

} // namespace engine::inspect
