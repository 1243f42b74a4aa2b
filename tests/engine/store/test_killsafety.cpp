// A process killed (SIGKILL) at any moment leaves a run store that opens, passes integrity_check,
// holds every metric batch it committed, and shows the run as Interrupted.
//
// The child writes in a loop forever and reports each committed step through a pipe; the parent
// kills it at a chosen point. No threads or torch run before fork() in this binary's tests.

#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace engine::store;
using storetest::RawDb;
using testing_support::TempDir;

namespace {

constexpr int kKeysPerStep = 5;

std::string keyName(int k)
{
    return "train/key" + std::to_string(k);
}

/// The child: open, create a run, report its id, then commit one step of kKeysPerStep metrics per
/// transaction forever, reporting each step once committed. Never returns.
[[noreturn]] void writeForever(const std::filesystem::path &path, int reportFd)
{
    try {
        auto store = RunStore::open(path);
        const int64_t run = store.createRun("killed", R"({"steps": "forever"})", "m");
        if (::write(reportFd, &run, sizeof run) != sizeof run)
            ::_exit(4);
        for (int64_t step = 0;; ++step) {
            std::vector<MetricSample> batch;
            for (int k = 0; k < kKeysPerStep; ++k)
                batch.push_back({keyName(k), step, step * 0.01, 1.0 / static_cast<double>(step + k + 1)});
            store.appendMetrics(run, batch);
            if (::write(reportFd, &step, sizeof step) != sizeof step)
                ::_exit(5); // the parent went away
        }
    } catch (...) {
        ::_exit(3);
    }
}

/// Reads one int64 from the pipe, waiting at most 30 s. False on timeout or end of file.
bool readReport(int fd, int64_t &value)
{
    char *out = reinterpret_cast<char *>(&value);
    size_t have = 0;
    while (have < sizeof value) {
        pollfd waitFor{fd, POLLIN, 0};
        if (::poll(&waitFor, 1, 30'000) <= 0)
            return false;
        const ssize_t n = ::read(fd, out + have, sizeof value - have);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return false;
        }
        have += static_cast<size_t>(n);
    }
    return true;
}

struct KilledChild {
    int64_t run = 0;          ///< 0 if the child was killed before reporting its run
    int64_t lastReported = -1; ///< the last step the child reported committed
};

/// Forks a writer, waits until it reported `killAfterStep` (or, if negative, just sleeps
/// `delay`), sleeps `delay`, then SIGKILLs and reaps it.
KilledChild runAndKill(const std::filesystem::path &path, int64_t killAfterStep, std::chrono::microseconds delay)
{
    KilledChild result;
    int fds[2];
    if (::pipe(fds) != 0) {
        ADD_FAILURE() << "pipe failed";
        return result;
    }
    const pid_t child = ::fork();
    if (child < 0) {
        ADD_FAILURE() << "fork failed";
        return result;
    }
    if (child == 0) {
        ::close(fds[0]);
        writeForever(path, fds[1]);
    }
    ::close(fds[1]);

    if (killAfterStep >= 0) {
        int64_t value = 0;
        if (!readReport(fds[0], value)) {
            ADD_FAILURE() << "the child did not report its run";
        } else {
            result.run = value;
            while (result.lastReported < killAfterStep && readReport(fds[0], value))
                result.lastReported = value;
            EXPECT_GE(result.lastReported, killAfterStep) << "the child stopped before the kill point";
        }
    }
    ::usleep(static_cast<useconds_t>(delay.count()));
    ::kill(child, SIGKILL);
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child ended by itself, exit code " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    ::close(fds[0]);
    return result;
}

void expectIntact(const std::filesystem::path &path)
{
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(raw.query("PRAGMA foreign_key_check"), "");
}

} // namespace

TEST(RunStoreKillSafety, KilledWriterLosesNoCommittedStep)
{
    struct Round {
        int64_t killAfterStep;
        std::chrono::microseconds delay;
    };
    // Early, with a pause, across WAL checkpoints (about every 1000 pages), and late.
    const Round rounds[] = {{50, std::chrono::microseconds(0)},
                            {333, std::chrono::microseconds(250)},
                            {1200, std::chrono::microseconds(0)},
                            {2500, std::chrono::microseconds(1500)}};
    TempDir dir("store");
    int index = 0;
    for (const auto &round : rounds) {
        SCOPED_TRACE("round " + std::to_string(index) + ", kill after step " + std::to_string(round.killAfterStep));
        const auto path = dir / ("runs-" + std::to_string(index++) + ".db");
        const auto killed = runAndKill(path, round.killAfterStep, round.delay);
        ASSERT_GT(killed.run, 0);

        auto store = RunStore::open(path);
        expectIntact(path);
        const auto record = store.run(killed.run);
        ASSERT_TRUE(record);
        EXPECT_EQ(record->status, RunStatus::Interrupted);
        EXPECT_FALSE(record->finished.empty());
        EXPECT_EQ(record->configJson, R"({"steps": "forever"})");

        // Every step up to the last one reported is there, for every key, without gaps; steps
        // committed after the last report may be there too, but whole.
        const auto first = store.metric(killed.run, keyName(0));
        ASSERT_GT(static_cast<int64_t>(first.size()), killed.lastReported);
        for (int k = 0; k < kKeysPerStep; ++k) {
            const auto points = store.metric(killed.run, keyName(k));
            ASSERT_EQ(points.size(), first.size()) << keyName(k) << ": a batch was committed in part";
            for (size_t i = 0; i < points.size(); ++i) {
                ASSERT_EQ(points[i].step, static_cast<int64_t>(i)) << keyName(k) << ": gap";
                ASSERT_DOUBLE_EQ(points[i].value, 1.0 / static_cast<double>(static_cast<int64_t>(i) + k + 1));
            }
        }
    }
}

// Killed before or while opening, migrating or creating its run: the file still opens.
TEST(RunStoreKillSafety, KilledWhileOpeningLeavesAUsableFile)
{
    TempDir dir("store");
    int index = 0;
    for (int delayUs : {0, 100, 300, 1000, 3000}) {
        SCOPED_TRACE("killed after " + std::to_string(delayUs) + " us");
        const auto path = dir / ("runs-" + std::to_string(index++) + ".db");
        runAndKill(path, -1, std::chrono::microseconds(delayUs));

        auto store = RunStore::open(path);
        EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
        expectIntact(path);
        RawDb raw(path);
        EXPECT_EQ(raw.query("PRAGMA user_version"), std::to_string(RunStore::kSchemaVersion));
        for (const auto &run : store.listRuns())
            EXPECT_EQ(run.status, RunStatus::Interrupted);
        // And it takes new runs.
        const int64_t run = store.createRun("after", "{}", "m");
        store.appendMetrics(run, {{"loss", 0, 0.0, 1.0}});
        EXPECT_EQ(store.metric(run, "loss").size(), 1u);
    }
}
