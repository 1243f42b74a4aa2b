// Trace files (docs/trace-format.md) read back into the inspector's report and diagnosed by the same
// analysis as the engine's own recordings; bad traces refused by name.

#include "engine/core/error.h"
#include "engine/inspect/inspectionoutput.h"
#include "engine/inspect/tracefile.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace {

using namespace engine::inspect;
namespace fs = std::filesystem;

const fs::path kTraces = fs::path(TUNEBENCH_TEST_DATA) / "inspect" / "traces";

std::string slurp(const fs::path &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string refusal(const std::string &text)
{
    std::istringstream in(text);
    try {
        readTrace(in, "t.jsonl");
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput);
        return e.what();
    }
    ADD_FAILURE() << "took: " << text.substr(0, 200);
    return {};
}

const std::string kHeader = R"({"format": "tunebench-trace", "version": 1, "program": "p.py"})" "\n";
const std::string kEnd = R"({"kind": "end", "outcome": "ok", "backward_succeeded": true})" "\n";

// The KV cache written three times in a decoding loop; the saved view was written twice after bmm
// saved it. The culprit is the FIRST write after the save (op 4), not the last (op 5), and the report
// names the user's line.
TEST(TraceFile, TheFirstWriteAfterTheSaveIsTheCulpritWithItsSourceLine)
{
    const InspectionReport report = inspectTraceFile(kTraces / "kv-cache.jsonl");
    ASSERT_EQ(report.status, InspectStatus::InplaceConflict) << report.summary;
    ASSERT_TRUE(report.conflict);
    const InplaceConflict &c = *report.conflict;
    EXPECT_EQ(c.culpritOp, "aten::copy_");
    EXPECT_EQ(c.culpritIndex, 4);
    EXPECT_EQ(c.culpritModule, "layers.0.attention");
    ASSERT_TRUE(c.culpritSource);
    EXPECT_EQ(c.culpritSource->file, "/home/user/llama/model.py");
    EXPECT_EQ(c.culpritSource->line, 12);
    EXPECT_EQ(c.culpritSource->function, "forward");
    EXPECT_EQ(c.culpritSource->code, "self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk");
    ASSERT_TRUE(c.savedBySource);
    EXPECT_EQ(c.savedBySource->line, 14);
    EXPECT_EQ(c.savedByOp, "aten::bmm");
    EXPECT_EQ(c.backwardNode, "BmmBackward0");
    EXPECT_EQ(c.producedByOp, "aten::slice");
    EXPECT_EQ(c.savedVersion, 1);
    EXPECT_EQ(c.currentVersion, 3);
    EXPECT_EQ(c.storageName, "layers.0.attention.cache_k");
    ASSERT_EQ(c.writes.size(), 2u) << "the write before the save is not one of them";
    EXPECT_EQ(c.writes[0].opIndex, 4);
    EXPECT_EQ(c.writes[1].opIndex, 5);
    EXPECT_TRUE(c.predicted);
    EXPECT_TRUE(c.raisedInBackward);
    ASSERT_FALSE(c.fixes.empty());
    EXPECT_EQ(c.fixes.front().rfind("In /home/user/llama/model.py:12 (forward), `self.cache_k[", 0), 0u) << c.fixes.front();
    EXPECT_NE(report.summary.find("at /home/user/llama/model.py:12 (forward)"), std::string::npos) << report.summary;
    EXPECT_NE(report.pytorchError.find("is at version 3; expected version 1 instead"), std::string::npos);
    EXPECT_EQ(report.source, "python decode.py (torch 1.13.1)");

    const nlohmann::json json = reportToJson(report);
    EXPECT_EQ(json["status"], "inplace_conflict");
    EXPECT_EQ(json["culprit_index"], 4);
    EXPECT_EQ(json["culprit_source"]["line"], 12);
    EXPECT_EQ(json["culprit_source"]["code"], "self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk");
    EXPECT_EQ(json["saved_by_source"]["line"], 14);
    EXPECT_EQ(json["tensor_name"], "layers.0.attention.cache_k");
    EXPECT_TRUE(json["first_nan_source"].is_null() || !json.contains("first_nan_source"));
    const std::string text = reportToText(report);
    EXPECT_NE(text.find("The write, in your code:"), std::string::npos) << text;
    EXPECT_NE(text.find("which is     layers.0.attention.cache_k"), std::string::npos) << text;
}

// The file of the source line is readable: the report shows the lines around it, the line marked.
TEST(TraceFile, TheReportShowsTheLinesAroundTheCulprit)
{
    testing_support::TempDir dir("trace-source");
    const fs::path model = dir / "model.py";
    std::ofstream(model) << "import torch\n\nclass Attention:\n    def forward(self, xk):\n"
                            "        self.cache_k[:, 0:1] = xk\n        return self.cache_k\n";
    std::string trace = slurp(kTraces / "kv-cache.jsonl");
    for (size_t at = trace.find("/home/user/llama/model.py"); at != std::string::npos;
         at = trace.find("/home/user/llama/model.py", at))
        trace.replace(at, std::string("/home/user/llama/model.py").size(), model.string());
    for (size_t at = trace.find("\"line\": 12"); at != std::string::npos; at = trace.find("\"line\": 12", at))
        trace.replace(at, 10, "\"line\": 5");
    std::ofstream(dir / "t.jsonl") << trace;
    const std::string text = reportToText(inspectTraceFile(dir / "t.jsonl"));
    EXPECT_NE(text.find(">     5 |         self.cache_k[:, 0:1] = xk"), std::string::npos) << text;
    EXPECT_NE(text.find("      4 |     def forward(self, xk):"), std::string::npos) << text;
    EXPECT_NE(text.find("      6 |         return self.cache_k"), std::string::npos) << text;
}

TEST(TraceFile, TheFirstNanIsNamedWithItsLineAndInputRange)
{
    const InspectionReport report = inspectTraceFile(kTraces / "nan-log.jsonl");
    EXPECT_EQ(report.status, InspectStatus::Nan) << report.summary;
    ASSERT_TRUE(report.nan);
    EXPECT_EQ(report.nan->op, "aten::log");
    EXPECT_EQ(report.nan->opIndex, 1);
    EXPECT_EQ(report.nan->module, "head");
    EXPECT_TRUE(report.nan->hasNan);
    ASSERT_EQ(report.nan->inputs.size(), 1u);
    EXPECT_EQ(report.nan->inputs[0].min, -1.5);
    ASSERT_TRUE(report.nan->source);
    EXPECT_EQ(report.nan->source->line, 22);
    EXPECT_TRUE(std::isnan(report.loss));
    const nlohmann::json json = reportToJson(report);
    EXPECT_EQ(json["first_nan_op"], "aten::log");
    EXPECT_EQ(json["first_nan_source"]["file"], "/home/user/train.py");
    EXPECT_EQ(json["first_nan_source"]["code"], "return torch.log(centered).sum()");
}

// A NaN that raised nothing is no failure, also in a trace whose recorder wrote the NaN's phase as
// failed_in (recorders before 2026-12-07): the report names the NaN, not "forward failed".
TEST(TraceFile, ANanThatRaisedNothingIsNotReportedAsAFailure)
{
    std::string trace = slurp(kTraces / "nan-log.jsonl");
    const std::string now = R"("failed_in": "")";
    const auto at = trace.find(now);
    ASSERT_NE(at, std::string::npos);
    trace.replace(at, now.size(), R"("failed_in": "forward")");
    const testing_support::TempDir dir("nan-trace");
    std::ofstream(dir / "old.jsonl") << trace;
    for (const fs::path &file : {kTraces / "nan-log.jsonl", dir / "old.jsonl"}) {
        SCOPED_TRACE(file.string());
        const InspectionReport report = inspectTraceFile(file);
        EXPECT_EQ(report.status, InspectStatus::Nan) << report.summary;
        EXPECT_TRUE(report.error.empty()) << report.error;
        EXPECT_EQ(report.summary.find("failed"), std::string::npos) << report.summary;
    }
}

// A trace of a silent mutation and one of a clean step with gradient problems.
TEST(TraceFile, SilentMutationsAndGradientFlowAreDiagnosedAsForTheEngine)
{
    const std::string mutation = kHeader +
        R"({"kind": "op", "index": 0, "name": "aten::mul", "phase": "forward", "inputs": [{"shape": [3], "dtype": "float32", "storage": 1}], "outputs": [{"shape": [3], "dtype": "float32", "storage": 2}], "source": {"file": "m.py", "line": 3, "function": "f", "code": "y = x * w"}})" "\n"
        R"({"kind": "saved", "id": 0, "tensor": {"shape": [3], "dtype": "float32", "storage": 1}, "saved_by_op": 0, "saved_by_op_name": "aten::mul", "backward_node": "MulBackward0", "saved_version": 0})" "\n"
        R"({"kind": "unpack", "saved": 0, "op": -1, "version": 0, "checksum_changed": true})" "\n"
        R"({"kind": "end", "outcome": "ok", "backward_succeeded": true, "silent_mutations": [0], "gradients": [{"name": "w", "shape": [3], "requires_grad": true, "has_grad": true, "grad_norm": 0.0}]})" "\n";
    std::istringstream in(mutation);
    TraceRecording trace = readTrace(in, "m.jsonl");
    diagnose(trace.report, trace.outcome, FixContext::Unknown);
    EXPECT_EQ(trace.report.status, InspectStatus::SilentMutation) << trace.report.summary;
    ASSERT_EQ(trace.report.mutations.size(), 1u);
    EXPECT_EQ(trace.report.mutations[0].backwardNode, "MulBackward0");
    ASSERT_TRUE(trace.report.mutations[0].source);
    EXPECT_EQ(trace.report.mutations[0].source->line, 3);
    ASSERT_EQ(trace.report.gradients.size(), 1u);
    EXPECT_EQ(trace.report.gradients[0].problem, "zero gradient");
    EXPECT_TRUE(trace.report.savedTensors[0].unpacked);
    EXPECT_TRUE(trace.report.savedTensors[0].checksumChanged);
}

TEST(TraceFile, BadTracesAreRefusedByName)
{
    EXPECT_EQ(refusal(""), "t.jsonl is not a tunebench trace (it is empty)");
    EXPECT_EQ(refusal("hello\n"), "t.jsonl is not a tunebench trace (its first line is not JSON)");
    EXPECT_EQ(refusal(R"({"format": "other"})" "\n"), "t.jsonl is not a tunebench trace (its first line is not a trace header)");
    // Found by CI's fuzzing: a "format" of another type escaped as json::type_error from json::value().
    EXPECT_EQ(refusal(R"({"format": ["decode.py"]})" "\n"), "t.jsonl is not a tunebench trace (its first line is not a trace header)");
    EXPECT_EQ(refusal(R"({"format": 1})" "\n"), "t.jsonl is not a tunebench trace (its first line is not a trace header)");
    EXPECT_NE(refusal(R"({"format": "tunebench-trace", "version": 2})" "\n").find(
                  "trace version 2 is newer than this tunebench reads (1)"),
              std::string::npos);
    // Cut short: the end record is missing.
    const std::string whole = slurp(kTraces / "kv-cache.jsonl");
    const std::string cut = whole.substr(0, whole.rfind("{\"kind\": \"end\""));
    EXPECT_EQ(refusal(cut), "t.jsonl: the trace ends before its end record: the recorder was stopped while writing");
    // Cut in the middle of a line.
    EXPECT_EQ(refusal(whole.substr(0, whole.size() / 2)).find("t.jsonl line "), 0u);
    EXPECT_EQ(refusal(kHeader + "{\"kind\": \"op\", \"index\": 0}\n"), "t.jsonl line 2: \"name\" is missing");
    EXPECT_EQ(refusal(kHeader + R"({"kind": "op", "index": 3, "name": "x", "phase": "forward", "inputs": [], "outputs": []})" "\n"),
              "t.jsonl line 2: op index 3 is out of order (expected 0)");
    EXPECT_EQ(refusal(kHeader + R"({"kind": "op", "index": 0, "name": "x", "phase": "sideways", "inputs": [], "outputs": []})" "\n"),
              "t.jsonl line 2: \"phase\" must be forward or backward (got \"sideways\")");
    EXPECT_EQ(refusal(kHeader + R"({"kind": "unpack", "saved": 9, "version": 1})" "\n"),
              "t.jsonl line 2: \"saved\" 9 is not a saved tensor of the trace");
    EXPECT_EQ(refusal(kHeader + R"({"kind": "end", "nan_op": 4})" "\n"),
              "t.jsonl line 2: \"nan_op\" 4 is not an op of the trace (it has 0 before this line)");
    EXPECT_EQ(refusal(kHeader + kEnd + kEnd), "t.jsonl line 3: a record after the end record");
    EXPECT_EQ(refusal(kHeader + std::string(100, '[') + std::string(100, ']') + "\n"),
              "t.jsonl line 2: nested deeper than the 32 levels a trace record may have");
    EXPECT_EQ(refusal(kHeader + "[1, 2]\n"), "t.jsonl line 2: a record must be a JSON object");
    // Records of kinds a later recorder adds are skipped.
    std::istringstream later(kHeader + R"({"kind": "future-thing", "x": 1})" "\n" + kEnd);
    EXPECT_NO_THROW(readTrace(later, "t.jsonl"));
    try {
        inspectTraceFile("/nonexistent/trace.jsonl");
        FAIL();
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::Io);
        EXPECT_STREQ(e.what(), "/nonexistent/trace.jsonl: no such trace file");
    }
}

} // namespace
