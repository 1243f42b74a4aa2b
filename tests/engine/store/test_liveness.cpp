// Liveness of runs: a Running run whose owner (pid + start time) is gone reads as Interrupted; a
// run owned by this live process stays Running.

#include "engine/store/processliveness.h"
#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

using namespace engine::store;
using storetest::RawDb;
using testing_support::TempDir;

namespace {

constexpr int64_t kNoSuchPid = 999'999'999; // above any pid_max (at most 2^22)

void setOwner(const std::filesystem::path &path, int64_t run, int64_t pid, std::optional<int64_t> start)
{
    RawDb raw(path);
    raw.exec("UPDATE runs SET owner_pid = " + std::to_string(pid) +
             ", owner_start = " + (start ? std::to_string(*start) : std::string("NULL")) +
             " WHERE id = " + std::to_string(run));
}

} // namespace

TEST(ProcessLiveness, ThisProcessIsAliveWithItsStartTime)
{
    const auto self = currentProcess();
    EXPECT_EQ(self.pid, ::getpid());
    ASSERT_TRUE(self.startTime);
    EXPECT_GT(*self.startTime, 0u);
    EXPECT_EQ(processStartTime(self.pid), self.startTime);
    EXPECT_TRUE(isProcessAlive(self));
    EXPECT_FALSE(isProcessAlive({self.pid, *self.startTime + 1}));
    EXPECT_FALSE(isProcessAlive({kNoSuchPid, 1}));
    EXPECT_FALSE(isProcessAlive({0, std::nullopt}));
}

TEST(ProcessLiveness, ZombieAndReapedChildrenAreGone)
{
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
        ::_exit(0);
    // Until reaped the child is a zombie: its /proc entry remains but it runs no more. waitid with
    // WNOWAIT returns once it has exited and leaves it unreaped (no polling, no guess of how long).
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
    EXPECT_FALSE(processStartTime(child));
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_FALSE(processStartTime(child));
}

TEST(RunStoreReconcile, RunOfMissingPidBecomesInterrupted)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    auto store = RunStore::open(path);
    const int64_t dead = store.createRun("dead", "{}", "m");
    const int64_t alive = store.createRun("alive", "{}", "m");
    setOwner(path, dead, kNoSuchPid, 12345);

    EXPECT_EQ(store.reconcileInterrupted(), 1);
    EXPECT_EQ(store.reconcileInterrupted(), 0);
    const auto deadRecord = store.run(dead);
    EXPECT_EQ(deadRecord->status, RunStatus::Interrupted);
    EXPECT_FALSE(deadRecord->finished.empty());
    EXPECT_EQ(store.run(alive)->status, RunStatus::Running);
}

TEST(RunStoreReconcile, ReusedPidWithOtherStartTimeIsNotTheOwner)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    auto store = RunStore::open(path);
    const int64_t run = store.createRun("r", "{}", "m");
    // Same pid as ours (alive), but the run was started by an earlier process that had this pid.
    setOwner(path, run, ::getpid(), static_cast<int64_t>(*currentProcess().startTime) - 1);
    EXPECT_EQ(store.run(run)->status, RunStatus::Interrupted); // run() reconciles first
}

TEST(RunStoreReconcile, OpenAndListRunsReconcile)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    int64_t first = 0;
    int64_t second = 0;
    {
        auto store = RunStore::open(path);
        first = store.createRun("first", "{}", "m");
        second = store.createRun("second", "{}", "m");
    }
    setOwner(path, first, kNoSuchPid, 1);
    {
        auto store = RunStore::open(path); // open reconciles
        RawDb raw(path);
        EXPECT_EQ(raw.query("SELECT status FROM runs WHERE id = " + std::to_string(first)), "interrupted");
        EXPECT_EQ(raw.query("SELECT status FROM runs WHERE id = " + std::to_string(second)), "running");

        setOwner(path, second, kNoSuchPid, std::nullopt); // recorded where /proc was missing
        const auto runs = store.listRuns();
        ASSERT_EQ(runs.size(), 2u);
        for (const auto &run : runs)
            EXPECT_EQ(run.status, RunStatus::Interrupted) << run.name;
    }
}

TEST(RunStoreReconcile, FinishedRunsAreLeftAlone)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    auto store = RunStore::open(path);
    const int64_t run = store.createRun("r", "{}", "m");
    store.finishRun(run, RunStatus::Succeeded);
    setOwner(path, run, kNoSuchPid, 1);
    EXPECT_EQ(store.reconcileInterrupted(), 0);
    EXPECT_EQ(store.run(run)->status, RunStatus::Succeeded);
}
