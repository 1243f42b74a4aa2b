// Data-parallel training as users start it: `tunebench launch`, two hand-started ranks with torchrun's
// variables, and Debian's torchrun itself. Two ranks with batch B train the curve one process with
// batch 2B trains, into one run; a killed rank ends the other with a clear error; Ctrl+C of launch
// then --resume continues both ranks; a job set up wrong gets one clear error, never a hang.
//
// Tolerance of the curve comparison: 1e-5 relative. The two ranks add their halves of every sum (loss,
// gradients) instead of summing all rows at once, so float32 rounding differs in the last bits (seen:
// up to 2e-6 after 12 AdamW steps); a real difference in data, shards or averaging moves the loss by
// 1e-2 or more from the first step.

#include "engine/core/freeport.h"
#include "engine/store/runstore.h"
#include "support/cliprocess.h"
#include "support/clisuite.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::ProcessResult;

namespace {

class DistCliTest : public testing_support::CliSuite<DistCliTest> {
public:
    static constexpr const char *kName = "distcli";
    static constexpr size_t kCorpusBytes = 60'000;

protected:


    /// `train` on the tiny model; batch, steps and the rest per test.
    static std::vector<std::string> trainArgs(const std::string &output, std::vector<std::string> extra)
    {
        std::vector<std::string> args = {"train", "--model", (dir() / "tiny").string(), "--data", (dir() / "corpus.txt").string(),
                                         "--seq-len", "32", "--threads", "1", "--lr", "0.01", "--seed", "5", "-q",
                                         "--output", (dir() / output).string()};
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    static ProcessResult cli(std::vector<std::string> args, const std::string &tag)
    {
        args.insert(args.begin(), {"--db", db()});
        return testing_support::runProcess(TUNEBENCH_CLI, args, dir(), tag);
    }

    static ProcessResult launch(int ranks, const std::vector<std::string> &train, const std::string &tag)
    {
        std::vector<std::string> args = {"launch", "--nproc", std::to_string(ranks), "--"};
        args.insert(args.end(), train.begin(), train.end());
        return cli(args, tag);
    }

    /// `tunebench` with torchrun's variables for rank `rank` of `world`, started, not waited for.
    static testing_support::ChildProcess startRank(int rank, int world, int port, const std::vector<std::string> &train,
                                                   const std::string &tag)
    {
        std::vector<std::string> args = {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
                                         "LOCAL_RANK=" + std::to_string(rank), "MASTER_ADDR=127.0.0.1",
                                         "MASTER_PORT=" + std::to_string(port), TUNEBENCH_CLI, "--db", db()};
        args.insert(args.end(), train.begin(), train.end());
        return testing_support::spawnProcess("/usr/bin/env", args, dir(), tag);
    }

    static int64_t runOf(const std::string &output)
    {
        std::ifstream in(dir() / output / "run.json");
        return json::parse(in).at("run_id").get<int64_t>();
    }

    static std::vector<engine::store::MetricPoint> metric(const std::string &output, const std::string &key)
    {
        auto store = engine::store::RunStore::open(db());
        return store.metric(runOf(output), key);
    }

    static size_t runCount() { return engine::store::RunStore::open(db()).listRuns().size(); }

    static void expectSameCurve(const std::vector<engine::store::MetricPoint> &expected,
                                const std::vector<engine::store::MetricPoint> &got, const std::string &what, double tolerance)
    {
        ASSERT_EQ(got.size(), expected.size()) << what;
        ASSERT_FALSE(got.empty()) << what;
        for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].step, expected[i].step) << what;
            EXPECT_NEAR(got[i].value, expected[i].value, tolerance * std::max(1.0, std::abs(expected[i].value)))
                << what << " at step " << got[i].step;
        }
    }

    /// Waits up to `seconds` for the child to exit, without reaping it; false when it still runs.
    static bool exitsWithin(const testing_support::ChildProcess &child, double seconds)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        while (std::chrono::steady_clock::now() < deadline) {
            siginfo_t info{};
            if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child.pid)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

    /// Steps of the run writing to `output`, 0 before it exists.
    static size_t storedSteps(const std::string &output)
    {
        try {
            return fs::exists(dir() / output / "run.json") ? metric(output, "train/loss").size() : 0;
        } catch (...) {
            return 0;
        }
    }

    static void waitForSteps(const std::string &output, size_t steps)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (storedSteps(output) < steps && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ASSERT_GE(storedSteps(output), steps) << output << " did not reach step " << steps;
    }

};

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_F(DistCliTest, TwoRanksTrainTheCurveOfOneProcessWithTwiceTheBatchIntoOneRun)
{
    const std::vector<std::string> common = {"--steps", "12", "--val-fraction", "0.1", "--eval-every", "4"};
    std::vector<std::string> single = common;
    single.insert(single.end(), {"--batch-size", "4"});
    const ProcessResult one = cli(trainArgs("single", single), "single");
    ASSERT_EQ(one.exitCode, 0) << one.err;

    const size_t before = runCount();
    std::vector<std::string> parallel = common;
    parallel.insert(parallel.end(), {"--batch-size", "2"});
    const ProcessResult two = launch(2, trainArgs("two", parallel), "two");
    ASSERT_EQ(two.exitCode, 0) << two.err;
    EXPECT_EQ(runCount(), before + 1) << "rank 1 must not write a run of its own";
    EXPECT_TRUE(contains(two.out, "12 steps")) << two.out; // rank 0's summary, once
    EXPECT_FALSE(contains(two.err, "rank 1:")) << two.err;

    expectSameCurve(metric("single", "train/loss"), metric("two", "train/loss"), "train loss", 1e-5);
    expectSameCurve(metric("single", "eval/loss"), metric("two", "eval/loss"), "eval loss (sharded over the ranks)", 1e-5);
    // tokens/s counts both ranks' tokens; the wait for gradients is recorded.
    EXPECT_EQ(metric("two", "dist/allreduce_wait_seconds").size(), 12u);

    auto store = engine::store::RunStore::open(db());
    const json config = json::parse(store.run(runOf("two"))->configJson);
    EXPECT_EQ(config["training"]["world_size"], 2);
    EXPECT_EQ(config["training"]["launcher"], "torchrun");
    EXPECT_EQ(store.run(runOf("two"))->status, engine::store::RunStatus::Succeeded);
    EXPECT_TRUE(fs::exists(dir() / "two" / "model" / "model.safetensors"));
}

TEST_F(DistCliTest, LoraWithAccumulationAndCheckpointingMatchesOneProcess)
{
    // A base with weights to adapt: a few full fine-tuning steps of the tiny model.
    const ProcessResult base = cli(trainArgs("base", {"--steps", "3", "--batch-size", "2"}), "base");
    ASSERT_EQ(base.exitCode, 0) << base.err;
    const std::string model = (dir() / "base" / "model").string();
    auto lora = [&](const std::string &output, const std::string &batch) {
        std::vector<std::string> args = trainArgs(output, {"--steps", "8", "--batch-size", batch, "--grad-accum", "2",
                                                           "--method", "lora", "--lora-r", "4", "--lr", "0.02",
                                                           "--lora-dropout", "0", // dropout masks differ by rank
                                                           "--checkpointing"}); // hooks fire in the recomputation's backward
        args[2] = model; // --model
        return args;
    };
    const ProcessResult one = cli(lora("lora1", "4"), "lora1");
    ASSERT_EQ(one.exitCode, 0) << one.err;
    const ProcessResult two = launch(2, lora("lora2", "2"), "lora2");
    ASSERT_EQ(two.exitCode, 0) << two.err;
    expectSameCurve(metric("lora1", "train/loss"), metric("lora2", "train/loss"), "LoRA loss", 1e-5);
    EXPECT_TRUE(fs::exists(dir() / "lora2" / "adapter" / "adapter_model.safetensors"));
}

// The rank timeout is a day, so that only the detection of the dead peer (its socket closed) can end rank 0
// within the test's bound, and the message must be detection's ("another rank stopped"), not the
// timeout's ("did not answer within").
TEST_F(DistCliTest, KillingOneRankEndsTheOtherWithAClearErrorAndKeepsTheCheckpoint)
{
    const int port = engine::freeLoopbackPort();
    const std::vector<std::string> args
        = trainArgs("killed", {"--steps", "100000", "--batch-size", "2", "--save-every", "5", "--dist-timeout", "86400"});
    const auto rank0 = startRank(0, 2, port, args, "killed0");
    const auto rank1 = startRank(1, 2, port, args, "killed1");
    waitForSteps("killed", 7);
    ::kill(rank1.pid, SIGKILL);
    ASSERT_TRUE(exitsWithin(rank0, 300)) << "rank 0 still runs 300 s after rank 1 died (its timeout is a day)";
    const ProcessResult r0 = testing_support::finishProcess(rank0);
    testing_support::finishProcess(rank1);
    EXPECT_EQ(r0.exitCode, 1) << r0.err;
    EXPECT_TRUE(contains(r0.err, "another rank stopped")) << r0.err;
    EXPECT_FALSE(contains(r0.err, "did not answer within")) << r0.err;
    auto store = engine::store::RunStore::open(db());
    EXPECT_EQ(store.run(runOf("killed"))->status, engine::store::RunStatus::Failed);
    EXPECT_TRUE(fs::exists(dir() / "killed" / "checkpoint-5" / "trainer_state.json"));
}

TEST_F(DistCliTest, LaunchStopsTheOtherRanksWhenOneDies)
{
    const std::vector<std::string> args = {"--db", db(), "launch", "--nproc", "2", "--grace", "20", "--"};
    std::vector<std::string> full = args;
    const std::vector<std::string> train = trainArgs("launchkill", {"--steps", "100000", "--batch-size", "2"});
    full.insert(full.end(), train.begin(), train.end());
    const auto launcher = testing_support::spawnProcess(TUNEBENCH_CLI, full, dir(), "launchkill");
    waitForSteps("launchkill", 3);
    // The launcher's children are the ranks; kill one (the highest pid: rank 1).
    pid_t victim = -1;
    for (const auto &entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string line;
        std::getline(stat, line);
        const size_t close = line.rfind(')');
        if (close == std::string::npos)
            continue;
        std::istringstream rest(line.substr(close + 2));
        char state;
        pid_t parent;
        rest >> state >> parent;
        if (parent == launcher.pid)
            victim = std::max(victim, static_cast<pid_t>(std::stoi(name)));
    }
    ASSERT_GT(victim, 0);
    ::kill(victim, SIGKILL);
    ASSERT_TRUE(exitsWithin(launcher, 60));
    const ProcessResult r = testing_support::finishProcess(launcher);
    EXPECT_NE(r.exitCode, 0);
    EXPECT_TRUE(contains(r.err, "was killed by signal 9")) << r.err;
    EXPECT_TRUE(contains(r.err, "stopping the other 1 rank(s)")) << r.err;
}

TEST_F(DistCliTest, CtrlCOfLaunchThenResumeContinuesBothRanks)
{
    // A constant learning rate, so that the step count does not shape the schedule: the interrupted and
    // resumed job must then follow the uninterrupted one step for step.
    const std::vector<std::string> base = {"--batch-size", "2", "--schedule", "constant", "--warmup", "0"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> all = base;
        all.insert(all.end(), extra.begin(), extra.end());
        return all;
    };
    std::vector<std::string> full = {"--db", db(), "launch", "--nproc", "2", "--"};
    const std::vector<std::string> train = trainArgs("stopped", with({"--steps", "100000"}));
    full.insert(full.end(), train.begin(), train.end());
    const auto launcher = testing_support::spawnProcess(TUNEBENCH_CLI, full, dir(), "stopped");
    waitForSteps("stopped", 4);
    ::kill(launcher.pid, SIGINT);
    const ProcessResult stopped = testing_support::finishProcess(launcher);
    EXPECT_EQ(stopped.exitCode, 130) << stopped.err;
    EXPECT_TRUE(contains(stopped.err, "passing the stop on to 2 rank(s)")) << stopped.err;
    const size_t at = storedSteps("stopped");
    ASSERT_GE(at, 4u);
    // The uninterrupted reference runs to where the resumed job will end, however late the stop came.
    ASSERT_EQ(launch(2, trainArgs("straight", with({"--steps", std::to_string(at + 5)})), "straight").exitCode, 0);
    EXPECT_TRUE(fs::exists(dir() / "stopped" / ("checkpoint-" + std::to_string(at)) / "trainer_state.json"));

    // Another world size is refused by name.
    const std::string folder = (dir() / "stopped").string();
    const ProcessResult alone = cli(trainArgs("stopped", with({"--steps", "100001", "--resume", folder})), "alone");
    EXPECT_EQ(alone.exitCode, 1);
    EXPECT_TRUE(contains(alone.err, "world_size = 2, this run has 1")) << alone.err;

    const ProcessResult resumed
        = launch(2, trainArgs("stopped", with({"--steps", std::to_string(at + 5), "--resume", folder})), "resumed");
    ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
    const auto losses = metric("stopped", "train/loss");
    auto store = engine::store::RunStore::open(db());
    EXPECT_EQ(store.run(runOf("stopped"))->status, engine::store::RunStatus::Succeeded);
    std::vector<engine::store::MetricPoint> reference = metric("straight", "train/loss");
    ASSERT_EQ(reference.size(), at + 5);
    // Both ranks restored weights, optimizer state and sampler position: the same losses, to the last bits.
    expectSameCurve(reference, losses, "resumed job against the uninterrupted one", 1e-6);
}

TEST_F(DistCliTest, TorchrunLaunchesTrain)
{
    if (std::system("/usr/bin/python3 -c 'import torch.distributed.run' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "python3-torch (torchrun) is not installed";
    // Debian 13's torchrun (PyTorch 2.6 built without libuv) cannot create its own rendezvous store.
    const ProcessResult probe = testing_support::runProcess(
        "/usr/bin/python3", {"-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1", "--redirects", "2",
                             "--tee", "1", "--log_dir", (dir() / "torchrun-probe").string(), "--no_python", "/bin/true"},
        dir(), "torchrun-probe");
    if (probe.exitCode != 0 && contains(probe.err, "use_libuv was requested but PyTorch was build without libuv"))
        GTEST_SKIP() << "this torchrun cannot start its own rendezvous store (its PyTorch asks for libuv, built without it)";
    ASSERT_EQ(probe.exitCode, 0) << "torchrun fails even without tunebench: " << probe.err;
    const size_t before = runCount();
    // --redirects / --tee: Debian 12's torchrun (1.13 on Python 3.11) fails on their default "0" (Std.from_str
    // finds no flag member 0 under Python 3.11's enum), so stderr goes to log files and stdout is teed.
    std::vector<std::string> args = {"-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                                     "--redirects", "2", "--tee", "1", "--log_dir", (dir() / "torchrun-logs").string(),
                                     "--no_python", TUNEBENCH_CLI, "--db", db()};
    const std::vector<std::string> train = trainArgs("torchrun", {"--steps", "4", "--batch-size", "2"});
    args.insert(args.end(), train.begin(), train.end());
    const ProcessResult r = testing_support::runProcess("/usr/bin/python3", args, dir(), "torchrun");
    ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
    EXPECT_EQ(runCount(), before + 1);
    EXPECT_EQ(metric("torchrun", "train/loss").size(), 4u);
    auto store = engine::store::RunStore::open(db());
    EXPECT_EQ(json::parse(store.run(runOf("torchrun"))->configJson)["training"]["world_size"], 2);
}

TEST_F(DistCliTest, AJobSetUpWrongGetsOneClearErrorNotAHang)
{
    const std::vector<std::string> args = trainArgs("wrong", {"--steps", "3", "--batch-size", "2", "--dist-timeout", "2"});
    // One of two ranks started.
    {
        const auto r = testing_support::finishProcess(startRank(0, 2, engine::freeLoopbackPort(), args, "alone"));
        EXPECT_EQ(r.exitCode, 1);
        EXPECT_TRUE(contains(r.err, "only 1 of 2 ranks reached the rendezvous")) << r.err;
    }
    // The port is taken by someone else.
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        addr.sin_port = 0;
        socklen_t length = sizeof addr;
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
        ASSERT_EQ(::listen(fd, 1), 0);
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &length);
        const auto r = testing_support::finishProcess(startRank(0, 2, ntohs(addr.sin_port), args, "inuse"));
        ::close(fd);
        EXPECT_EQ(r.exitCode, 1);
        EXPECT_TRUE(contains(r.err, "is in use on this machine")) << r.err;
    }
    // Ranks started with different settings.
    {
        const int port = engine::freeLoopbackPort();
        std::vector<std::string> other = args;
        other.insert(other.end(), {"--lr", "0.02"});
        const auto a = startRank(0, 2, port, args, "settings0");
        const auto b = startRank(1, 2, port, other, "settings1");
        const ProcessResult ra = testing_support::finishProcess(a);
        const ProcessResult rb = testing_support::finishProcess(b);
        EXPECT_EQ(ra.exitCode, 1);
        EXPECT_EQ(rb.exitCode, 1);
        EXPECT_TRUE(contains(ra.err, "rank 1 was started with other settings than rank 0: learning_rate = 0.02 there, 0.01 here"))
            << ra.err;
        EXPECT_TRUE(contains(rb.err, "rank 1: invalid input: rank 0 was started with other settings")) << rb.err;
    }
    // A rank outside the world, and launch without a command.
    {
        const auto r = testing_support::finishProcess(startRank(2, 2, 1, args, "outside"));
        EXPECT_EQ(r.exitCode, 1);
        EXPECT_TRUE(contains(r.err, "RANK=2 is outside the job")) << r.err;
        const ProcessResult none = cli({"launch", "--nproc", "2"}, "nocommand");
        EXPECT_EQ(none.exitCode, 2);
        EXPECT_TRUE(contains(none.err, "give the command after --")) << none.err;
    }
}
