// `tunebench inspect` run as a user would (a child process per command): the JSON fields the issue
// promises, the readable report, exit codes, and one clear error line for each bad input.

#include "support/cliprocess.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::ProcessResult;

namespace {

const fs::path kData = fs::path(TUNEBENCH_TEST_DATA) / "inspect";

class InspectCliTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = std::make_unique<testing_support::TempDir>("inspectcli");
        testing_support::isolateXdgDirs(m_dir->path());
    }

    ProcessResult run(const std::vector<std::string> &args)
    {
        std::vector<std::string> all{"inspect"};
        all.insert(all.end(), args.begin(), args.end());
        return testing_support::runProcess(TUNEBENCH_CLI, all, m_dir->path(), "inspect");
    }

    json runJson(const std::vector<std::string> &args)
    {
        std::vector<std::string> all = args;
        all.push_back("--json");
        const ProcessResult r = run(all);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return json::parse(r.out);
    }

    void expectOneErrorLine(const std::vector<std::string> &args, const std::string &needle)
    {
        const ProcessResult r = run(args);
        EXPECT_NE(r.exitCode, 0) << needle;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_TRUE(r.err.starts_with("tunebench: ")) << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }

    std::unique_ptr<testing_support::TempDir> m_dir;
};

} // namespace

TEST_F(InspectCliTest, KvCacheInplaceJson)
{
    const json j = runJson({"--scenario", "kv-cache-inplace"});
    EXPECT_EQ(j["status"], "inplace_conflict");
    EXPECT_EQ(j["culprit_op"], "aten::copy_");
    EXPECT_EQ(j["culprit_module"], "attention");
    EXPECT_EQ(j["saved_by_op"], "aten::bmm");
    EXPECT_EQ(j["backward_node"], "BmmBackward0");
    EXPECT_GE(j["culprit_index"].get<int64_t>(), 0);
    EXPECT_EQ(j["tensor_shape"].size(), 3u);
    EXPECT_GT(j["current_version"].get<int64_t>(), j["saved_version"].get<int64_t>());
    EXPECT_NE(j["fix"].get<std::string>().find("Clone before writing"), std::string::npos);
    EXPECT_NE(j["pytorch_error"].get<std::string>().find("modified by an inplace operation"), std::string::npos);
}

TEST_F(InspectCliTest, VerifyFixAndOtherScenarios)
{
    const json fixed = runJson({"--scenario", "kv-cache-inplace", "--verify-fix"});
    EXPECT_EQ(fixed["status"], "ok");
    EXPECT_EQ(fixed["pytorch_error"], "");
    EXPECT_TRUE(fixed["backward_succeeded"].get<bool>());

    const json nan = runJson({"--scenario", "nan-log"});
    EXPECT_EQ(nan["status"], "nan");
    EXPECT_EQ(nan["first_nan_op"], "aten::log");
    EXPECT_EQ(nan["first_nan_module"], "head");
    EXPECT_EQ(nan["phase"], "forward");

    const json frozen = runJson({"--scenario", "frozen-in-optimizer"});
    EXPECT_EQ(frozen["status"], "ok");
    EXPECT_EQ(frozen["gradient_problems"].size(), 2u);
}

TEST_F(InspectCliTest, TorchScriptModuleAndReadableReport)
{
    const json j = runJson({"--torchscript", (kData / "inplace_cache.pt").string(), "--inputs",
                            (kData / "inplace_cache_inputs.pt").string()});
    EXPECT_EQ(j["status"], "inplace_conflict");
    EXPECT_EQ(j["culprit_op"], "aten::copy_");
    EXPECT_EQ(j["backward_node"], "BmmBackward0");

    const ProcessResult text = run({"--scenario", "kv-cache-inplace"});
    EXPECT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("written by   aten::copy_"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("How to fix it"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("PyTorch said: one of the variables"), std::string::npos) << text.out;
}

TEST_F(InspectCliTest, ModelFolderStep)
{
    const fs::path model = m_dir->path() / "model";
    fs::create_directories(model);
    testing_support::writeTinyConfig(model);
    const fs::path data = m_dir->path() / "data.txt";
    testing_support::writeCorpusSlice(data, 2000);
    const json j = runJson({"--model", model.string(), "--data", data.string(), "--seq-len", "16"});
    EXPECT_EQ(j["status"], "ok") << j.dump();
    EXPECT_GT(j["gradient_flow"].size(), 10u);
    EXPECT_EQ(j["gradient_problems"].size(), 0u) << j.dump();
}

// A trace the Python recorder wrote, read back: the JSON names the user's line, the op trace only
// with --trace alone (its older meaning), and the readable report shows the line.
TEST_F(InspectCliTest, ATraceOfAPythonProgramNamesTheLine)
{
    const std::string trace = (kData / "traces" / "kv-cache.jsonl").string();
    const json j = runJson({"--trace", trace});
    EXPECT_EQ(j["status"], "inplace_conflict");
    EXPECT_EQ(j["culprit_op"], "aten::copy_");
    EXPECT_EQ(j["culprit_index"], 4);
    EXPECT_EQ(j["culprit_module"], "layers.0.attention");
    EXPECT_EQ(j["culprit_source"], json({{"file", "/home/user/llama/model.py"}, {"line", 12}, {"function", "forward"},
                                         {"code", "self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk"}}));
    EXPECT_EQ(j["saved_by_op"], "aten::bmm");
    EXPECT_EQ(j["backward_node"], "BmmBackward0");
    EXPECT_EQ(j["saved_version"], 1);
    EXPECT_EQ(j["current_version"], 3);
    EXPECT_FALSE(j.contains("ops")) << "--trace FILE reads a trace; it does not add the op list";
    const json nan = runJson({"--trace", (kData / "traces" / "nan-log.jsonl").string()});
    EXPECT_EQ(nan["status"], "nan");
    EXPECT_EQ(nan["first_nan_op"], "aten::log");
    EXPECT_EQ(nan["first_nan_source"]["line"], 22);
    const ProcessResult text = run({"--trace", trace});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("The write, in your code:"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("/home/user/llama/model.py:12 in forward"), std::string::npos) << text.out;
    // --trace alone keeps its meaning: the op trace in the JSON of a recorded scenario.
    const json withOps = runJson({"--scenario", "kv-cache-inplace", "--trace"});
    EXPECT_TRUE(withOps.contains("ops"));
    EXPECT_FALSE(withOps["ops"].empty());
}

// `tunebench record` runs the user's program (a LLaMA-style attention with its KV cache written in place
// while decoding) under the Python recorder: the program's own error and exit status pass through, and
// the diagnosis (the engine's, from the trace) names the first write after the save and its line.
TEST_F(InspectCliTest, RecordRunsAPythonProgramAndNamesItsLine)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "python3-torch is not installed";
    const fs::path program = fs::path(TUNEBENCH_SOURCE_DIR) / "tests" / "python" / "programs" / "kv_cache_decode.py";
    const fs::path trace = m_dir->path() / "kv.trace.jsonl";
    const ProcessResult r = testing_support::runProcess(
        TUNEBENCH_CLI, {"record", "--python", "/usr/bin/python3", "--trace", trace.string(), "--json", program.string()},
        m_dir->path(), "record");
    EXPECT_NE(r.exitCode, 0) << "the program's failure passes through";
    EXPECT_NE(r.err.find("one of the variables needed for gradient computation has been modified by an inplace "
                         "operation"), std::string::npos) << r.err;
    ASSERT_TRUE(fs::exists(trace)) << r.err;
    // The diagnosis is the one JSON line of stderr.
    json diagnosis;
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("{\"") && line.find("\"status\"") != std::string::npos)
            diagnosis = json::parse(line);
    }
    ASSERT_FALSE(diagnosis.is_null()) << r.err;
    EXPECT_EQ(diagnosis["status"], "inplace_conflict");
    EXPECT_EQ(diagnosis["culprit_op"], "aten::copy_");
    ASSERT_TRUE(diagnosis["culprit_source"].is_object()) << diagnosis.dump();
    EXPECT_EQ(fs::path(diagnosis["culprit_source"]["file"].get<std::string>()).filename(), "kv_cache_decode.py");
    const std::string code = diagnosis["culprit_source"]["code"];
    EXPECT_TRUE(code.starts_with("self.cache_")) << code;
    EXPECT_NE(code.find("[:bsz, start_pos : start_pos + seqlen] = x"), std::string::npos) << code;
    EXPECT_NE(diagnosis["culprit_module"].get<std::string>().find("attention"), std::string::npos);
    // The first write after the save, not a later one.
    ASSERT_FALSE(diagnosis["writes"].empty());
    EXPECT_EQ(diagnosis["writes"][0]["index"], diagnosis["culprit_index"]);
    // The same trace read again gives the same answer.
    const json again = runJson({"--trace", trace.string()});
    EXPECT_EQ(again["culprit_index"], diagnosis["culprit_index"]);
    EXPECT_EQ(again["culprit_source"], diagnosis["culprit_source"]);

    // Bad input: one line each, the program not run.
    const ProcessResult missing = testing_support::runProcess(TUNEBENCH_CLI, {"record", "/nonexistent/train.py"}, m_dir->path(),
                                                              "record-missing");
    EXPECT_EQ(missing.exitCode, 1);
    EXPECT_EQ(missing.err, "tunebench: no such script: /nonexistent/train.py\n");
    const ProcessResult noPython = testing_support::runProcess(
        TUNEBENCH_CLI, {"record", "--python", "/nonexistent/python9", program.string()}, m_dir->path(), "record-nopython");
    EXPECT_EQ(noPython.exitCode, 1);
    EXPECT_NE(noPython.err.find("tunebench: cannot run /nonexistent/python9"), std::string::npos) << noPython.err;
    const ProcessResult where = testing_support::runProcess(TUNEBENCH_CLI, {"record", "--print-python-path"}, m_dir->path(),
                                                            "record-path");
    EXPECT_EQ(where.exitCode, 0);
    EXPECT_TRUE(fs::is_directory(fs::path(where.out.substr(0, where.out.find('\n'))) / "tunebench_record")) << where.out;
}

TEST_F(InspectCliTest, BadInputIsOneClearError)
{
    const std::string module = (kData / "inplace_cache.pt").string();
    const std::string inputs = (kData / "inplace_cache_inputs.pt").string();
    expectOneErrorLine({"--scenario", "nope"}, "unknown scenario 'nope'");
    expectOneErrorLine({"--torchscript", inputs, "--inputs", inputs}, "not a loadable TorchScript module");
    expectOneErrorLine({"--torchscript", module, "--inputs", inputs, "--method", "nope"}, "has no method 'nope'");
    expectOneErrorLine({"--torchscript", module, "--inputs", inputs, "--method", "positions"}, "not a tensor");
    expectOneErrorLine({"--torchscript", module, "--inputs", (kData / "two_inputs.pt").string()}, "do not match");
    expectOneErrorLine({"--scenario", "kv-cache-inplace", "--max-record-mib", "0.0005"}, "memory bound");
    expectOneErrorLine({"--torchscript", module}, "--inputs");
    expectOneErrorLine({}, "give --scenario");
    expectOneErrorLine({"--trace", (kData / "inplace_cache_expected.json").string()}, "is not a tunebench trace");
    expectOneErrorLine({"--trace", (kData / "nope.jsonl").string()}, "no such trace file");
    expectOneErrorLine({"--trace", (kData / "traces" / "kv-cache.jsonl").string(), "--scenario", "nan-log"},
                       "--trace FILE reads a recorded trace");
    expectOneErrorLine({"--trace", (kData / "traces" / "kv-cache.jsonl").string(), "--verify-fix"},
                       "--verify-fix reruns a built-in scenario");
}
