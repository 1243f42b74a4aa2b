// Training as a user runs it from the CLI: a real Ctrl+C (and a kill -9) then --resume gives the same
// loss curve bit for bit, LoRA training exports a PEFT adapter and a merged model that score as the
// independent Python reference scores base + adapter, and bad input gets one clear error each.

#include "engine/store/runstore.h"
#include "support/cliprocess.h"
#include "support/clisuite.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <signal.h>

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::ProcessResult;

namespace {

class TrainCliTest : public testing_support::CliSuite<TrainCliTest> {
public:
    static constexpr const char *kName = "traincli";
    static constexpr size_t kCorpusBytes = 100'000;

protected:


    static ProcessResult run(std::vector<std::string> args, const std::string &tag)
    {
        args.insert(args.begin(), {"--db", db()});
        return testing_support::runProcess(TUNEBENCH_CLI, args, dir(), tag);
    }

    /// The same training command for every run of the resume test: 2000 steps of the tiny model, long enough
/// (several seconds even on a fast machine) for the interruptions to land mid-run.
    static std::vector<std::string> trainArgs(const std::string &output, std::vector<std::string> extra = {})
    {
        std::vector<std::string> args = {"train", "--model", (dir() / "tiny").string(), "--data", (dir() / "corpus.txt").string(),
                                         "--steps", "2000", "--batch-size", "2", "--seq-len", "32", "--threads", "1",
                                         "--lr", "0.01", "--seed", "5", "--output", (dir() / output).string()};
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    static std::vector<json> losses(const std::string &run)
    {
        const ProcessResult r = run_({"runs", "metrics", run, "--key", "loss", "--json"}, "metrics-" + fs::path(run).filename().string());
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return json::parse(r.out).at("loss").get<std::vector<json>>();
    }
    static ProcessResult run_(std::vector<std::string> args, const std::string &tag) { return run(std::move(args), tag); }

    /// The id of the run writing into `folder` (its marker).
    static int64_t runOf(const std::string &folder)
    {
        return json::parse(slurpFile(dir() / folder / "run.json")).at("run_id").get<int64_t>();
    }

    /// Loss values the run writing into `folder` has committed (read from the store directly: cheap to poll).
    static int storedSteps(const std::string &folder)
    {
        const fs::path marker = fs::path(folder) / "run.json";
        if (!fs::exists(marker))
            return 0;
        try {
            const int64_t id = json::parse(slurpFile(marker)).at("run_id").get<int64_t>();
            auto store = engine::store::RunStore::open(db());
            return static_cast<int>(store.metric(id, "train/loss").size());
        } catch (...) {
            return 0;
        }
    }

    static std::string slurpFile(const fs::path &path)
    {
        std::ifstream in(path);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }

    /// Starts a run, waits until at least `steps` steps are stored, sends `signal`.
    static ProcessResult interrupted(const std::vector<std::string> &args, const std::string &folder, int steps, int signal)
    {
        std::vector<std::string> full = args;
        full.insert(full.begin(), {"--db", db()});
        const auto child = testing_support::spawnProcess(TUNEBENCH_CLI, full, dir(), "interrupted-" + std::to_string(signal));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
        while (storedSteps((dir() / folder).string()) < steps && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ::kill(child.pid, signal);
        return testing_support::finishProcess(child);
    }

};

std::string slurp(const fs::path &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void expectSameCurve(const std::vector<json> &expected, const std::vector<json> &got, const std::string &what)
{
    ASSERT_EQ(got.size(), expected.size()) << what;
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(got[i]["step"], expected[i]["step"]) << what;
        // Bitwise: the JSON carries every digit of the stored double.
        EXPECT_EQ(got[i]["value"].get<double>(), expected[i]["value"].get<double>()) << what << " step " << i + 1;
    }
}

} // namespace

TEST_F(TrainCliTest, CtrlCOrKillThenResumeGivesTheUninterruptedCurveBitForBit)
{
    const ProcessResult straight = run(trainArgs("straight"), "straight");
    ASSERT_EQ(straight.exitCode, 0) << straight.err;
    const auto expected = losses((dir() / "straight").string());
    ASSERT_EQ(expected.size(), 2000u);

    // A real Ctrl+C: the run stops after a step, writes a checkpoint there, and --resume continues it.
    const ProcessResult stopped = interrupted(trainArgs("stopped"), "stopped", 12, SIGINT);
    EXPECT_EQ(stopped.exitCode, 130) << stopped.err;
    EXPECT_NE(stopped.out.find("checkpoint:"), std::string::npos) << stopped.out;
    // --resume RUN alone: the run's stored settings, its threads included.
    const ProcessResult resumed = run({"train", "--resume", (dir() / "stopped").string()}, "resumed");
    ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
    EXPECT_NE(resumed.out.find("resumed at step"), std::string::npos) << resumed.out;
    expectSameCurve(expected, losses((dir() / "stopped").string()), "Ctrl+C + resume");

    // kill -9 between checkpoints: the steps after the last checkpoint are lost and redone the same way.
    const ProcessResult killed = interrupted(trainArgs("killed", {"--save-every", "5"}), "killed", 13, SIGKILL);
    EXPECT_EQ(killed.exitCode, 128 + SIGKILL);
    const ProcessResult again = run({"train", "--resume", std::to_string(runOf("killed"))}, "again"); // by its id

    ASSERT_EQ(again.exitCode, 0) << again.err;
    expectSameCurve(expected, losses((dir() / "killed").string()), "kill -9 + resume");
    for (const auto &entry : fs::directory_iterator(dir() / "killed"))
        EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos) << entry.path();

    // A flag that would change the training is refused by name: the batch, the method, the model.
    const std::string stoppedRun = (dir() / "stopped").string();
    const ProcessResult other = run({"train", "--resume", stoppedRun, "--steps", "2010", "--batch-size", "4"}, "other");
    EXPECT_EQ(other.exitCode, 1);
    EXPECT_NE(other.err.find("--batch-size cannot change when resuming run " + std::to_string(runOf("stopped")) + " (it has 2)"),
              std::string::npos) << other.err;
    const ProcessResult method = run({"train", "--resume", stoppedRun, "--method", "lora"}, "method");
    EXPECT_EQ(method.exitCode, 1);
    EXPECT_NE(method.err.find("--method cannot change when resuming"), std::string::npos) << method.err;
    const ProcessResult model = run({"train", "--resume", stoppedRun, "--model", (dir() / "corpus.txt").string()}, "model");
    EXPECT_EQ(model.exitCode, 1);
    EXPECT_NE(model.err.find("--model cannot change when resuming"), std::string::npos) << model.err;
    // The same flags as the first run (as a script repeats them) are fine; a finished run has nothing
    // more to train unless --steps is raised.
    const ProcessResult done = run(trainArgs("stopped", {"--resume", (dir() / "stopped").string()}), "done");
    EXPECT_EQ(done.exitCode, 1);
    EXPECT_NE(done.err.find("nothing to resume"), std::string::npos) << done.err;

    const ProcessResult csv = run({"runs", "metrics", (dir() / "straight").string(), "--key", "loss", "--csv"}, "csv");
    ASSERT_EQ(csv.exitCode, 0) << csv.err;
    EXPECT_EQ(csv.out.rfind("key,step,wall_time,value\nloss,1,", 0), 0u) << csv.out.substr(0, 80);
    const ProcessResult missing = run({"runs", "metrics", (dir() / "straight").string(), "--key", "nope"}, "nope");
    EXPECT_EQ(missing.exitCode, 1);
    EXPECT_NE(missing.err.find("has no metric 'nope' (it has: "), std::string::npos) << missing.err;
}

TEST_F(TrainCliTest, LoraExportsScoreAsThePythonReferenceScoresBasePlusAdapter)
{
    // A base model to adapt: the tiny config trained briefly in full.
    const ProcessResult base = run({"train", "--model", (dir() / "tiny").string(), "--data", (dir() / "corpus.txt").string(),
                                    "--steps", "20", "--batch-size", "2", "--seq-len", "32", "--threads", "1", "--lr", "0.01",
                                    "--output", (dir() / "base-run").string(), "-q"},
                                   "base");
    ASSERT_EQ(base.exitCode, 0) << base.err;
    const fs::path baseModel = dir() / "base-run" / "model";

    const std::vector<std::string> lora = {"train", "--model", baseModel.string(), "--data", (dir() / "corpus.txt").string(),
                                           "--method", "lora", "--lora-r", "4", "--lora-alpha", "8",
                                           "--lora-targets", "q_proj,v_proj,down_proj", "--steps", "15", "--batch-size", "2",
                                           "--seq-len", "32", "--threads", "1", "--lr", "0.02", "--val-fraction", "0.1",
                                           "--eval-every", "5", "--output", (dir() / "lora-run").string(), "-q"};
    const ProcessResult trained = run(lora, "lora");
    ASSERT_EQ(trained.exitCode, 0) << trained.err;
    EXPECT_NE(trained.out.find("eval loss:"), std::string::npos) << trained.out;
    const auto evalLoss = json::parse(run({"runs", "metrics", (dir() / "lora-run").string(), "--key", "eval/loss", "--json"},
                                          "eval").out)["eval/loss"];
    ASSERT_EQ(evalLoss.size(), 4u) << "eval before training (step 0) and at steps 5, 10, 15";
    EXPECT_EQ(evalLoss[0]["step"], 0);
    EXPECT_LT(evalLoss[3]["value"].get<double>(), evalLoss[0]["value"].get<double>()) << "the eval loss fell";

    ASSERT_EQ(run({"export", "--run", (dir() / "lora-run").string(), "--peft", (dir() / "peft").string()}, "peft").exitCode, 0);
    ASSERT_EQ(run({"export", "--run", (dir() / "lora-run").string(), "--merged", (dir() / "merged").string()}, "merged").exitCode, 0);
    const json config = json::parse(slurp(dir() / "peft" / "adapter_config.json"));
    EXPECT_EQ(config["peft_type"], "LORA");
    EXPECT_EQ(config["r"], 4);
    EXPECT_EQ(config["target_modules"], json({"q_proj", "v_proj", "down_proj"}));

    const std::vector<int64_t> ids = {1, 5, 9, 30, 77, 120, 3, 44, 200, 17, 8, 61};
    std::string idText;
    for (int64_t id : ids)
        idText += (idText.empty() ? "" : ",") + std::to_string(id);
    auto score = [&](std::vector<std::string> args, const std::string &tag) {
        args.insert(args.begin(), "score");
        args.insert(args.end(), {"--ids", idText, "--json", "--threads", "1"});
        const ProcessResult r = run(args, tag);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return json::parse(r.out).at("logprobs").get<std::vector<double>>();
    };
    const auto withAdapter = score({"--model", baseModel.string(), "--adapter", (dir() / "peft").string()}, "score-peft");
    const auto merged = score({"--model", (dir() / "merged").string()}, "score-merged");
    const auto plain = score({"--model", baseModel.string()}, "score-base");
    ASSERT_EQ(withAdapter.size(), ids.size() - 1);
    double moved = 0;
    for (size_t t = 0; t < withAdapter.size(); ++t) {
        EXPECT_EQ(withAdapter[t], merged[t]) << "merged and base + adapter score identically, position " << t;
        moved = std::max(moved, std::abs(withAdapter[t] - plain[t]));
    }
    EXPECT_GT(moved, 1e-3) << "the adapter changed the model";

    // The independent float64 reference reads the adapter by PEFT's key names and scale.
    const json cases = json::array({{{"model_dir", baseModel.string()}, {"adapter_dir", (dir() / "peft").string()}, {"ids", ids}}});
    std::ofstream(dir() / "ref-cases.json") << cases.dump();
    const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' --score '" + (dir() / "ref-cases.json").string()
        + "' '" + (dir() / "ref-out.json").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const std::vector<double> reference = json::parse(slurp(dir() / "ref-out.json"))[0].at("logprobs");
    ASSERT_EQ(reference.size(), withAdapter.size());
    for (size_t t = 0; t < reference.size(); ++t)
        EXPECT_NEAR(withAdapter[t], reference[t], 1e-4) << "position " << t;

    // Bad input: one clear error each, nothing written.
    const ProcessResult exists = run({"export", "--run", (dir() / "lora-run").string(), "--peft", (dir() / "peft").string()}, "exists");
    EXPECT_EQ(exists.exitCode, 1);
    EXPECT_NE(exists.err.find("exists"), std::string::npos) << exists.err;
    const ProcessResult full = run({"export", "--run", (dir() / "base-run").string(), "--peft", (dir() / "nope").string()}, "full");
    EXPECT_EQ(full.exitCode, 1);
    EXPECT_NE(full.err.find("full fine-tune"), std::string::npos) << full.err;
    EXPECT_FALSE(fs::exists(dir() / "nope"));
    std::vector<std::string> badTargets = lora;
    badTargets[std::find(badTargets.begin(), badTargets.end(), "q_proj,v_proj,down_proj") - badTargets.begin()] = "query_key_value";
    badTargets.back() = "-q";
    const ProcessResult targets = run(badTargets, "targets");
    EXPECT_EQ(targets.exitCode, 1);
    EXPECT_NE(targets.err.find("match no module of the model; its Linear modules are q_proj, k_proj"), std::string::npos)
        << targets.err;
    const ProcessResult resumeOther = run({"train", "--model", baseModel.string(), "--data", (dir() / "corpus.txt").string(),
                                           "--method", "full", "--steps", "30", "--batch-size", "2", "--seq-len", "32",
                                           "--resume", (dir() / "lora-run").string()},
                                          "resume-other");
    EXPECT_EQ(resumeOther.exitCode, 1);
    EXPECT_NE(resumeOther.err.find("--method cannot change when resuming run"), std::string::npos) << resumeOther.err;
    EXPECT_NE(resumeOther.err.find("(it has lora)"), std::string::npos) << resumeOther.err;
}

// Qwen3 end to end: a folder as Hugging Face saves one (make_tiny_qwen3.py), a LoRA run on it with the
// adapters before q_norm / k_norm and after, `export --peft`, and the exported adapter scored by the
// float64 reference as `score --adapter` scores it.
TEST_F(TrainCliTest, Qwen3LoraRunExportsAnAdapterThatScoresAsTheReference)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
    const fs::path model = dir() / "qwen3";
    const std::string make = "/usr/bin/python3 '" TINY_QWEN3_SCRIPT "' '" + model.string() + "'";
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
    {
        std::ofstream data(dir() / "qwen3-ids.jsonl");
        for (int row = 0; row < 48; ++row) {
            json ids = json::array();
            for (int t = 0; t < 24; ++t)
                ids.push_back((5 * t * t + 3 * t + row) % 64);
            data << json{{"input_ids", ids}}.dump() << '\n';
        }
    }
    const ProcessResult trained = run({"train", "--model", model.string(), "--data", (dir() / "qwen3-ids.jsonl").string(),
                                       "--method", "lora", "--lora-r", "4", "--lora-alpha", "8", "--lora-dropout", "0",
                                       "--lora-targets", "q_proj,k_proj,v_proj,o_proj", "--steps", "12",
                                       "--batch-size", "4", "--seq-len", "16", "--threads", "1", "--lr", "0.02",
                                       "--output", (dir() / "qwen3-run").string(), "-q"},
                                      "qwen3-lora");
    ASSERT_EQ(trained.exitCode, 0) << trained.err;
    ASSERT_EQ(run({"export", "--run", (dir() / "qwen3-run").string(), "--peft", (dir() / "qwen3-peft").string()}, "qwen3-peft")
                  .exitCode,
              0);
    const json config = json::parse(slurp(dir() / "qwen3-peft" / "adapter_config.json"));
    EXPECT_EQ(config["target_modules"], json({"q_proj", "k_proj", "v_proj", "o_proj"}));

    const std::vector<int64_t> ids = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 31, 40};
    std::string idText;
    for (int64_t id : ids)
        idText += (idText.empty() ? "" : ",") + std::to_string(id);
    auto score = [&](std::vector<std::string> args, const std::string &tag) {
        args.insert(args.begin(), "score");
        args.insert(args.end(), {"--ids", idText, "--json", "--threads", "1"});
        const ProcessResult r = run(args, tag);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return json::parse(r.out).at("logprobs").get<std::vector<double>>();
    };
    const auto adapted = score({"--model", model.string(), "--adapter", (dir() / "qwen3-peft").string()}, "qwen3-score");
    const auto plain = score({"--model", model.string()}, "qwen3-score-base");

    const json cases = json::array({{{"model_dir", model.string()}, {"adapter_dir", (dir() / "qwen3-peft").string()}, {"ids", ids}}});
    std::ofstream(dir() / "qwen3-cases.json") << cases.dump();
    const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' --score '" + (dir() / "qwen3-cases.json").string()
        + "' '" + (dir() / "qwen3-ref.json").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const std::vector<double> reference = json::parse(slurp(dir() / "qwen3-ref.json"))[0].at("logprobs");
    ASSERT_EQ(reference.size(), adapted.size());
    double moved = 0;
    for (size_t t = 0; t < reference.size(); ++t) {
        EXPECT_NEAR(adapted[t], reference[t], 1e-4) << "position " << t;
        moved = std::max(moved, std::abs(adapted[t] - plain[t]));
    }
    EXPECT_GT(moved, 1e-3) << "the trained adapter changed the model";
}

// Phi-3 fuses q, k and v: a LoRA run without --lora-targets adapts qkv_proj (PEFT's default for it), says so,
// and its adapter names that target; resuming it with --resume RUN alone keeps it.
TEST_F(TrainCliTest, Phi3LoraWithoutTargetsAdaptsItsFusedQkv)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
    const fs::path model = dir() / "phi3";
    const std::string make = "/usr/bin/python3 '" TINY_PHI3_SCRIPT "' '" + model.string() + "'";
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
    {
        std::ofstream data(dir() / "phi3-ids.jsonl");
        for (int row = 0; row < 16; ++row) {
            json ids = json::array();
            for (int t = 0; t < 12; ++t)
                ids.push_back((7 * t + row) % 64);
            data << json{{"input_ids", ids}}.dump() << '\n';
        }
    }
    const fs::path runDir = dir() / "phi3-run";
    const ProcessResult trained = run({"train", "--model", model.string(), "--data", (dir() / "phi3-ids.jsonl").string(),
                                       "--method", "lora", "--steps", "2", "--batch-size", "2", "--seq-len", "8",
                                       "--lr", "0.05", "--threads", "1", "--output", runDir.string()},
                                      "phi3-lora");
    ASSERT_EQ(trained.exitCode, 0) << trained.err;
    EXPECT_NE((trained.out + trained.err).find("LoRA targets qkv_proj"), std::string::npos) << trained.out << trained.err;
    const json config = json::parse(slurp(runDir / "adapter" / "adapter_config.json"));
    EXPECT_EQ(config.at("target_modules"), json::array({"qkv_proj"}));

    const ProcessResult resumed = run({"train", "--resume", runDir.string(), "--steps", "4"}, "phi3-resume");
    ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
    EXPECT_EQ(json::parse(slurp(runDir / "adapter" / "adapter_config.json")).at("target_modules"), json::array({"qkv_proj"}));

    // The exported adapter scores through the float64 reference as `score --adapter` scores it.
    const fs::path peft = dir() / "phi3-peft";
    ASSERT_EQ(run({"export", "--run", runDir.string(), "--peft", peft.string()}, "phi3-peft").exitCode, 0);
    const std::vector<int64_t> ids = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};
    std::string idText;
    for (int64_t id : ids)
        idText += (idText.empty() ? "" : ",") + std::to_string(id);
    const ProcessResult scored = run({"score", "--model", model.string(), "--adapter", peft.string(), "--ids", idText,
                                      "--json", "--threads", "1"},
                                     "phi3-score");
    ASSERT_EQ(scored.exitCode, 0) << scored.err;
    const std::vector<double> adapted = json::parse(scored.out).at("logprobs");
    const json cases = json::array({{{"model_dir", model.string()}, {"adapter_dir", peft.string()}, {"ids", ids}}});
    std::ofstream(dir() / "phi3-cases.json") << cases.dump();
    const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' --score '" + (dir() / "phi3-cases.json").string()
        + "' '" + (dir() / "phi3-ref.json").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const std::vector<double> reference = json::parse(slurp(dir() / "phi3-ref.json"))[0].at("logprobs");
    ASSERT_EQ(reference.size(), adapted.size());
    const ProcessResult base = run({"score", "--model", model.string(), "--ids", idText, "--json", "--threads", "1"}, "phi3-base");
    ASSERT_EQ(base.exitCode, 0) << base.err;
    const std::vector<double> plain = json::parse(base.out).at("logprobs");
    double moved = 0;
    for (size_t t = 0; t < reference.size(); ++t) {
        EXPECT_NEAR(adapted[t], reference[t], 1e-4) << "position " << t;
        moved = std::max(moved, std::abs(adapted[t] - plain[t]));
    }
    EXPECT_GT(moved, 1e-3) << "the trained adapter changed the model";
}

// Gemma 2 and Gemma 3 text end to end: folders as Hugging Face saves them (make_tiny_gemma.py), a LoRA
// run through the soft-caps, GeGLU and four norms per layer with gradient checkpointing, `export --peft`,
// and the exported adapter scored by the float64 reference as `score --adapter` scores it, on prompts
// longer than the sliding window.
TEST_F(TrainCliTest, GemmaLoraRunsExportAdaptersThatScoreAsTheReference)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
    {
        std::ofstream data(dir() / "gemma-ids.jsonl");
        for (int row = 0; row < 48; ++row) {
            json ids = json::array();
            for (int t = 0; t < 24; ++t)
                ids.push_back((5 * t * t + 3 * t + row) % 64);
            data << json{{"input_ids", ids}}.dump() << '\n';
        }
    }
    const std::vector<int64_t> ids = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 31, 40};
    std::string idText;
    for (int64_t id : ids)
        idText += (idText.empty() ? "" : ",") + std::to_string(id);
    for (const std::string kind : {"gemma2", "gemma3_text"}) {
        SCOPED_TRACE(kind);
        const fs::path model = dir() / kind;
        const std::string make = "/usr/bin/python3 '" TINY_GEMMA_SCRIPT "' " + kind + " '" + model.string() + "'";
        ASSERT_EQ(std::system(make.c_str()), 0) << make;
        const fs::path runDir = dir() / (kind + "-run");
        const fs::path peft = dir() / (kind + "-peft");
        const ProcessResult trained =
            run({"train", "--model", model.string(), "--data", (dir() / "gemma-ids.jsonl").string(), "--method", "lora",
                 "--lora-r", "4", "--lora-alpha", "8", "--lora-dropout", "0", "--lora-targets",
                 "q_proj,v_proj,gate_proj,down_proj", "--checkpointing", "--steps", "12", "--batch-size", "4",
                 "--seq-len", "16", "--threads", "1", "--lr", "0.02", "--output", runDir.string(), "-q"},
                kind + "-lora");
        ASSERT_EQ(trained.exitCode, 0) << trained.err;
        ASSERT_EQ(run({"export", "--run", runDir.string(), "--peft", peft.string()}, kind + "-peft").exitCode, 0);

        auto score = [&](std::vector<std::string> args, const std::string &tag) {
            args.insert(args.begin(), "score");
            args.insert(args.end(), {"--ids", idText, "--json", "--threads", "1"});
            const ProcessResult r = run(args, tag);
            EXPECT_EQ(r.exitCode, 0) << r.err;
            return json::parse(r.out).at("logprobs").get<std::vector<double>>();
        };
        const auto adapted = score({"--model", model.string(), "--adapter", peft.string()}, kind + "-score");
        const auto plain = score({"--model", model.string()}, kind + "-score-base");

        const json cases = json::array({{{"model_dir", model.string()}, {"adapter_dir", peft.string()}, {"ids", ids}}});
        std::ofstream(dir() / (kind + "-cases.json")) << cases.dump();
        const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' --score '"
            + (dir() / (kind + "-cases.json")).string() + "' '" + (dir() / (kind + "-ref.json")).string() + "'";
        ASSERT_EQ(std::system(command.c_str()), 0) << command;
        const std::vector<double> reference = json::parse(slurp(dir() / (kind + "-ref.json")))[0].at("logprobs");
        ASSERT_EQ(reference.size(), adapted.size());
        double moved = 0;
        for (size_t t = 0; t < reference.size(); ++t) {
            EXPECT_NEAR(adapted[t], reference[t], 1e-4) << "position " << t;
            moved = std::max(moved, std::abs(adapted[t] - plain[t]));
        }
        EXPECT_GT(moved, 1e-3) << "the trained adapter changed the model";
    }
}

TEST_F(TrainCliTest, TheDemoFineTunesTheBundledBaseWithLoraAndShowsSamplesAndEvalLoss)
{
    const ProcessResult demo = run({"train", "--demo", "--steps", "6", "--eval-every", "3", "--threads", "1", "--output",
                                    (dir() / "demo").string()},
                                   "demo");
    ASSERT_EQ(demo.exitCode, 0) << demo.err;
    EXPECT_NE(demo.err.find("eval loss before training: "), std::string::npos) << demo.err;
    EXPECT_NE(demo.err.find("sample before training: \"A hacker is"), std::string::npos) << demo.err;
    EXPECT_NE(demo.err.find("sample after 6 steps: \"A hacker is"), std::string::npos) << demo.err;
    EXPECT_NE(demo.err.find("LoRA r=16 on 16 modules"), std::string::npos) << demo.err;
    EXPECT_TRUE(fs::exists(dir() / "demo" / "adapter" / "adapter_model.safetensors"));
    const auto eval = json::parse(run({"runs", "metrics", (dir() / "demo").string(), "--key", "eval/loss", "--json"}, "demo-eval").out)["eval/loss"];
    ASSERT_EQ(eval.size(), 3u) << "steps 0, 3 and 6";
    EXPECT_LT(eval[2]["value"].get<double>(), eval[0]["value"].get<double>()) << "LoRA on the Jargon File lowers its eval loss";
}

TEST_F(TrainCliTest, PrecisionAndAnAutoDeviceMapAreFlagsThatTakeEffect)
{
    // bf16 on the CPU trains (autocast) and is recorded with the run; fp16 asks for a GPU by name.
    const ProcessResult bf16 = run({"train", "--demo", "--steps", "3", "--threads", "1", "--precision", "bf16",
                                    "--device-map", "auto", "--output", (dir() / "bf16").string()},
                                   "bf16");
    ASSERT_EQ(bf16.exitCode, 0) << bf16.err;
    EXPECT_NE(bf16.err.find("device map auto: "), std::string::npos) << bf16.err;
    const ProcessResult show = run({"runs", "show", (dir() / "bf16").string(), "--json"}, "bf16-show");
    ASSERT_EQ(show.exitCode, 0) << show.err;
    const json training = json::parse(show.out)["config"]["training"];
    EXPECT_EQ(training["precision"], "bf16") << show.out;
    EXPECT_EQ(training["device_map"], "auto") << show.out;
    EXPECT_TRUE(training.contains("device_map_planned")) << show.out;
    const ProcessResult fp16 = run({"train", "--demo", "--steps", "3", "--threads", "1", "--precision", "fp16",
                                    "--output", (dir() / "fp16").string()},
                                   "fp16");
    EXPECT_NE(fp16.exitCode, 0);
    EXPECT_NE(fp16.err.find("precision fp16 needs a CUDA device"), std::string::npos) << fp16.err;
    EXPECT_FALSE(fs::exists(dir() / "fp16" / "run.json")) << "a refused run leaves nothing behind";
    const ProcessResult typo = run({"train", "--demo", "--precision", "bf32"}, "bf32");
    EXPECT_NE(typo.exitCode, 0);
    EXPECT_NE(typo.err.find("--precision"), std::string::npos) << typo.err;
}

TEST_F(TrainCliTest, SgdMomentumIsAFlagStoredWithTheRunAndCheckedForItsRange)
{
    const ProcessResult sgd = run({"train", "--demo", "--steps", "2", "--threads", "1", "--optimizer", "sgd", "--momentum",
                                   "0.5", "--eval-batches", "1", "--sample-tokens", "5", "--output", (dir() / "sgd").string()},
                                  "sgd");
    ASSERT_EQ(sgd.exitCode, 0) << sgd.err;
    const ProcessResult show = run({"runs", "show", (dir() / "sgd").string(), "--json"}, "sgd-show");
    ASSERT_EQ(show.exitCode, 0) << show.err;
    const json training = json::parse(show.out)["config"]["training"];
    EXPECT_EQ(training["optimizer"], "sgd") << show.out;
    EXPECT_EQ(training["momentum"], 0.5) << show.out;
    EXPECT_EQ(training["eval_batches"], 1) << show.out;
    EXPECT_EQ(training["sample_tokens"], 5) << show.out;

    const ProcessResult tooMuch = run({"train", "--demo", "--steps", "2", "--optimizer", "sgd", "--momentum", "1.5",
                                       "--output", (dir() / "sgd-bad").string()},
                                      "sgd-bad");
    EXPECT_NE(tooMuch.exitCode, 0);
    EXPECT_NE(tooMuch.err.find("setting momentum = 1.5 is out of range"), std::string::npos) << tooMuch.err;
    EXPECT_FALSE(fs::exists(dir() / "sgd-bad" / "run.json")) << "a refused run leaves nothing behind";
}
