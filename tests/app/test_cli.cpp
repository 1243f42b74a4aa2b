// The headless CLI, run as a user would: a child process per command.

#include "engine/store/runstore.h"
#include "support/cliprocess.h"
#include "support/clisuite.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using testing_support::ProcessResult;

class CliTest : public testing_support::CliSuite<CliTest> {
public:
    static constexpr const char *kName = "cli";
    static constexpr size_t kCorpusBytes = 100'000;

protected:
    testing_support::ChildProcess spawn(const std::vector<std::string> &args, const std::string &tag)
    {
        return testing_support::spawnProcess(TUNEBENCH_CLI, args, s_dir->path(), tag);
    }

    ProcessResult run(const std::vector<std::string> &args, const std::string &tag = "cmd")
    {
        return testing_support::runProcess(TUNEBENCH_CLI, args, s_dir->path(), tag);
    }

    std::vector<std::string> trainArgs(const std::string &db, int steps)
    {
        return {"--db", db, "train", "--model", (s_dir->path() / "tiny").string(),
                "--data", (s_dir->path() / "corpus.txt").string(), "--steps", std::to_string(steps),
                "--batch-size", "2", "--seq-len", "32", "--threads", "1", "--lr", "0.01",
                "--output", (s_dir->path() / ("out-" + fs::path(db).stem().string())).string()};
    }

    std::string db(const std::string &name) const { return (s_dir->path() / name).string(); }

};

int64_t storedLossSteps(const std::string &dbPath)
{
    if (!fs::exists(dbPath))
        return 0;
    try {
        auto store = engine::store::RunStore::open(dbPath);
        const auto runs = store.listRuns();
        return runs.empty() ? 0 : static_cast<int64_t>(store.metric(runs.front().id, "train/loss").size());
    } catch (...) {
        return 0;
    }
}

} // namespace

TEST_F(CliTest, TrainWritesARunThatRunsListShows)
{
    const std::string store = db("list.sqlite3");
    const ProcessResult train = run(trainArgs(store, 6), "train");
    ASSERT_EQ(train.exitCode, 0) << train.err;
    EXPECT_NE(train.out.find("run 1 succeeded: 6 steps"), std::string::npos) << train.out;
    EXPECT_NE(train.out.find(store), std::string::npos) << "prints where the run database is";
    EXPECT_NE(train.out.find("loss.png"), std::string::npos) << "prints where the loss plot is";

    const ProcessResult list = run({"--db", store, "runs", "list"}, "list");
    ASSERT_EQ(list.exitCode, 0) << list.err;
    EXPECT_NE(list.out.find("succeeded"), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("tiny on corpus"), std::string::npos) << list.out;

    const ProcessResult json = run({"runs", "list", "--json", "--db", store}, "json");
    ASSERT_EQ(json.exitCode, 0) << json.err;
    const auto runs = nlohmann::json::parse(json.out);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0]["steps"], 6);
    EXPECT_EQ(runs[0]["status"], "succeeded");

    const ProcessResult show = run({"--db", store, "runs", "show", "1"}, "show");
    ASSERT_EQ(show.exitCode, 0) << show.err;
    EXPECT_NE(show.out.find("loss_plot"), std::string::npos) << show.out;
}

TEST_F(CliTest, RunsPlotDrawsAStoredMetricAsPngSvgOrPdfAndRefusesBadRequests)
{
    const std::string store = db("plot.sqlite3");
    const ProcessResult train = run(trainArgs(store, 5), "plot-train");
    ASSERT_EQ(train.exitCode, 0) << train.err;
    const std::pair<const char *, std::string> formats[] = {{"loss.png", "\x89PNG"}, {"loss.svg", "<?xml"}, {"loss.pdf", "%PDF"}};
    for (const auto &[name, magic] : formats) {
        const fs::path out = s_dir->path() / name;
        const ProcessResult plot = run({"--db", store, "runs", "plot", "1", "--output", out.string()}, "plot");
        ASSERT_EQ(plot.exitCode, 0) << plot.err;
        EXPECT_NE(plot.out.find(out.string()), std::string::npos) << plot.out;
        std::ifstream file(out, std::ios::binary);
        std::string head(magic.size(), '\0');
        file.read(head.data(), static_cast<std::streamsize>(head.size()));
        EXPECT_EQ(head, magic) << name;
    }
    const fs::path lr = s_dir->path() / "lr.png";
    ASSERT_EQ(run({"--db", store, "runs", "plot", "1", "--key", "train/learning_rate", "--output", lr.string()}, "plot-lr").exitCode, 0);
    EXPECT_GT(fs::file_size(lr), 1000u);

    // One clear message each, and no file.
    const fs::path never = s_dir->path() / "never.png";
    const ProcessResult key = run({"--db", store, "runs", "plot", "1", "--key", "nope", "--output", never.string()}, "plot-key");
    EXPECT_NE(key.exitCode, 0);
    EXPECT_NE(key.err.find("run 1 has no metric 'nope' (it has: "), std::string::npos) << key.err;
    EXPECT_NE(key.err.find("train/loss"), std::string::npos) << key.err;
    const ProcessResult missing = run({"--db", store, "runs", "plot", "9", "--output", never.string()}, "plot-run");
    EXPECT_NE(missing.exitCode, 0);
    EXPECT_NE(missing.err.find("no run 9"), std::string::npos) << missing.err;
    const ProcessResult gif = run({"--db", store, "runs", "plot", "1", "--output", (s_dir->path() / "loss.gif").string()}, "plot-gif");
    EXPECT_NE(gif.exitCode, 0);
    EXPECT_NE(gif.err.find("use .png, .svg or .pdf"), std::string::npos) << gif.err;
    EXPECT_FALSE(fs::exists(never));
    EXPECT_FALSE(fs::exists(s_dir->path() / "loss.gif"));
}

TEST_F(CliTest, HelpNamesTheOptions)
{
    const ProcessResult help = run({"train", "--help"}, "help");
    EXPECT_EQ(help.exitCode, 0);
    for (const char *option : {"--data", "--model", "--steps", "--lr", "--batch-size", "--seq-len", "--threads"})
        EXPECT_NE(help.out.find(option), std::string::npos) << option;
    const ProcessResult runsHelp = run({"runs", "list", "--help"}, "help2");
    EXPECT_EQ(runsHelp.exitCode, 0);
}

TEST_F(CliTest, DoctorAndVersionNameTheLibtorchInUse)
{
    const ProcessResult version = run({"--version"}, "version");
    EXPECT_EQ(version.exitCode, 0);
    EXPECT_NE(version.out.find("libtorch "), std::string::npos) << version.out;
    const ProcessResult doctor = run({"doctor", "--json"}, "doctor");
    ASSERT_EQ(doctor.exitCode, 0) << doctor.err;
    const nlohmann::json info = nlohmann::json::parse(doctor.out);
    EXPECT_NE(version.out.find(info["libtorch"].get<std::string>()), std::string::npos);
    EXPECT_TRUE(info["cuda"].contains("built_with_cuda"));
    EXPECT_GE(info["threads"]["libtorch"].get<int>(), 1);
    const ProcessResult text = run({"doctor"}, "doctor-text");
    EXPECT_EQ(text.exitCode, 0);
    EXPECT_NE(text.out.find("libtorch  "), std::string::npos) << text.out;
}

TEST_F(CliTest, DoctorMeasuresTheMatmulRateAndKeepsBlasKernelsOnlyWhenAsked)
{
    const ProcessResult doctor = run({"doctor", "--json"}, "doctor-matmul");
    ASSERT_EQ(doctor.exitCode, 0) << doctor.err;
    const nlohmann::json info = nlohmann::json::parse(doctor.out);
    ASSERT_TRUE(info.contains("matmul")) << doctor.out;
    EXPECT_GT(info["matmul"]["gflops"].get<double>(), 0.1);
    EXPECT_TRUE(info["matmul"]["correct"].get<bool>()) << info["matmul"].dump();
    EXPECT_GT(info["matmul"]["cpu_peak_gflops"].get<double>(), 0);
    EXPECT_EQ(info["blas_core_setting"], "");
    const ProcessResult quick = run({"doctor", "--json", "--no-matmul"}, "doctor-quick");
    ASSERT_EQ(quick.exitCode, 0) << quick.err;
    EXPECT_FALSE(nlohmann::json::parse(quick.out).contains("matmul"));

    const ProcessResult bad = run({"doctor", "--try-blas-core", "Skylake;rm"}, "doctor-bad-core");
    EXPECT_NE(bad.exitCode, 0);
    EXPECT_NE(bad.err.find("OpenBLAS core name"), std::string::npos) << bad.err;

    if (!info["openblas"]["found"].get<bool>())
        GTEST_SKIP() << "libtorch's BLAS here is not OpenBLAS: no core type to set";
    // An OPENBLAS_CORETYPE in the environment wins over the setting: the commands below run without it.
    std::string inherited;
    if (const char *value = std::getenv("OPENBLAS_CORETYPE"))
        inherited = value;
    unsetenv("OPENBLAS_CORETYPE");
    struct Restore {
        std::string value;
        ~Restore()
        {
            if (!value.empty())
                setenv("OPENBLAS_CORETYPE", value.c_str(), 1);
        }
    } restore{inherited};
    // Prescott, OpenBLAS's generic x86-64 kernels, runs on every x86-64 CPU; a fresh process must use them
    // once the setting names them, and stop once it is cleared.
    const ProcessResult tried = run({"doctor", "--try-blas-core", "Prescott"}, "doctor-try");
    ASSERT_EQ(tried.exitCode, 0) << tried.err;
    EXPECT_NE(tried.out.find("Prescott kernels: "), std::string::npos) << tried.out;
    EXPECT_NE(tried.out.find("results correct"), std::string::npos) << tried.out;
    EXPECT_EQ(nlohmann::json::parse(run({"doctor", "--json", "--no-matmul"}, "doctor-unchanged").out)["blas_core_setting"], "")
        << "--try-blas-core changed the setting";

    ASSERT_EQ(run({"doctor", "--use-blas-core", "Prescott"}, "doctor-use").exitCode, 0);
    const nlohmann::json kept = nlohmann::json::parse(run({"doctor", "--json", "--no-matmul"}, "doctor-kept").out);
    EXPECT_EQ(kept["blas_core_setting"], "Prescott");
    EXPECT_EQ(kept["openblas"]["openblas_coretype"], "Prescott") << "the process did not start with the setting";
    EXPECT_EQ(kept["openblas"]["core"], "Prescott");
    ASSERT_EQ(run({"doctor", "--use-blas-core", "off"}, "doctor-off").exitCode, 0);
    const nlohmann::json cleared = nlohmann::json::parse(run({"doctor", "--json", "--no-matmul"}, "doctor-cleared").out);
    EXPECT_EQ(cleared["blas_core_setting"], "");
    EXPECT_EQ(cleared["openblas"]["openblas_coretype"], "");
}

TEST_F(CliTest, BadSettingsGiveOneClearMessageAndNoRun)
{
    const std::string store = db("bad.sqlite3");
    struct Case {
        std::vector<std::string> extra;
        const char *mention;
    };
    const std::vector<Case> cases = {
        {{"--lr", "abc"}, "--lr"},
        {{"--lr", "-0.001"}, "learning rate"},
        {{"--batch-size", "0"}, "batch size"},
        {{"--threads", "4096"}, "threads"},
        {{"--data", "/nonexistent/corpus.txt"}, "/nonexistent/corpus.txt"},
        {{"--steps", "many"}, "--steps"},
        {{"--device", "gpu"}, "'gpu' is not a device"},
        {{"--device", "cuda:99"}, "device cuda:99"},
    };
    int i = 0;
    for (const Case &c : cases) {
        std::vector<std::string> args = trainArgs(store, 3);
        args.insert(args.end(), c.extra.begin(), c.extra.end());
        const ProcessResult r = run(args, "bad" + std::to_string(i++));
        EXPECT_NE(r.exitCode, 0) << c.mention;
        EXPECT_NE(r.err.find(c.mention), std::string::npos) << "stderr: " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message, got: " << r.err;
    }
    EXPECT_EQ(storedLossSteps(store), 0);
    if (fs::exists(store)) {
        auto s = engine::store::RunStore::open(store);
        EXPECT_TRUE(s.listRuns().empty());
    }
}

TEST_F(CliTest, SigkillMidRunLeavesAnIntactDatabaseAndAnInterruptedRun)
{
    const std::string store = db("killed.sqlite3");
    const auto child = spawn(trainArgs(store, 100000), "killed");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (storedLossSteps(store) < 5 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_GE(storedLossSteps(store), 5) << "the child never committed metrics";
    ::kill(child.pid, SIGKILL);
    const ProcessResult r = testing_support::finishProcess(child);
    EXPECT_EQ(r.exitCode, 128 + SIGKILL);

    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(store.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    sqlite3_stmt *check = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char *>(sqlite3_column_text(check, 0)), "ok");
    sqlite3_finalize(check);
    sqlite3_close(raw);

    auto s = engine::store::RunStore::open(store);
    const auto runs = s.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, engine::store::RunStatus::Interrupted);
    const auto loss = s.metric(runs[0].id, "train/loss");
    ASSERT_GE(loss.size(), 5u);
    for (size_t i = 0; i < loss.size(); ++i)
        EXPECT_EQ(loss[i].step, static_cast<int64_t>(i + 1)) << "metrics must have no gaps";

    const ProcessResult list = run({"--db", store, "runs", "list"}, "list-killed");
    EXPECT_NE(list.out.find("interrupted"), std::string::npos) << list.out;
}

TEST_F(CliTest, CtrlCStopsAtAStepBoundaryAndKeepsTheRun)
{
    const std::string store = db("interrupted.sqlite3");
    const auto child = spawn(trainArgs(store, 100000), "sigint");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (storedLossSteps(store) < 3 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(child.pid, SIGINT);
    const ProcessResult r = testing_support::finishProcess(child);
    EXPECT_EQ(r.exitCode, 130) << r.err;
    EXPECT_NE(r.out.find("cancelled"), std::string::npos) << r.out;
    auto s = engine::store::RunStore::open(store);
    const auto runs = s.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, engine::store::RunStatus::Cancelled);
}
