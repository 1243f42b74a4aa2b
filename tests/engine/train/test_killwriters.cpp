// SIGKILL at random points of tunebench's file writers: checkpoints, the final model and adapter that a
// run saves (and replaces when resumed), and plan exports. After each kill, tunebench's own readers
// (killwriter verify-...) accept what is there, and it is the last version the writer finished or the
// one it was writing, whole: never a mix, never nothing once something was written. The next writer
// removes what killed ones left (hidden partial folders and temporary files).
//
// The writer (killwriter.cpp) runs in its own process, writing version after version forever and
// printing "wrote N" after each; this test picks the moment to kill from a seeded generator: after the
// writer finished a version, a random delay of up to twice the time one version took, so the kill
// lands anywhere in writing, publishing or pruning. Nothing here is timed: every kill point must pass.

#include "support/cliprocess.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using testing_support::ChildProcess;
using testing_support::TempDir;

/// The numbers N of the "wrote N" lines the writer has printed so far.
std::vector<int64_t> reported(const fs::path &outFile)
{
    std::ifstream in(outFile);
    std::vector<int64_t> versions;
    std::string word;
    int64_t n = 0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        if (fields >> word >> n && word == "wrote")
            versions.push_back(n);
    }
    return versions;
}

/// The pids in the names of hidden leftovers (".name.partial-PID...", ".name.tmp-PID-...") in `dir`.
std::set<long> leftoverPids(const fs::path &dir)
{
    std::set<long> pids;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        for (const char *marker : {".partial-", ".tmp-"}) {
            const auto at = name.find(marker);
            if (name.front() == '.' && at != std::string::npos)
                pids.insert(std::strtol(name.c_str() + at + std::string(marker).size(), nullptr, 10));
        }
    }
    return pids;
}

struct Killed {
    pid_t pid = -1;
    int64_t lastReported = 0; ///< the last version the writer said it finished
};

/// Starts `killwriter mode target`, waits until it has finished `versions` versions, sleeps a random
/// delay of up to twice the time the last one took, and kills it with SIGKILL.
Killed startAndKill(const std::string &mode, const fs::path &target, const fs::path &logs, int round, int versions,
                    std::mt19937 &random)
{
    const ChildProcess child =
        testing_support::spawnProcess(KILLWRITER, {mode, target.string()}, logs, mode + "-" + std::to_string(round));
    Killed killed;
    killed.pid = child.pid;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::minutes(2); // a hung writer fails, it does not hang the suite
    auto previous = Clock::now();
    std::chrono::microseconds lastDuration{1000};
    size_t seen = 0;
    while (Clock::now() < deadline) {
        const auto now = reported(child.outFile);
        if (now.size() > seen) {
            const auto at = Clock::now();
            if (seen > 0)
                lastDuration = std::chrono::duration_cast<std::chrono::microseconds>(at - previous);
            previous = at;
            seen = now.size();
        }
        if (static_cast<int>(seen) >= versions)
            break;
        int status = 0;
        if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
            std::ifstream out(child.outFile), err(child.errFile);
            ADD_FAILURE() << "the writer ended by itself: " << out.rdbuf() << err.rdbuf();
            killed.pid = -1;
            return killed;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    EXPECT_GE(static_cast<int>(seen), versions) << "the writer did not finish " << versions << " versions";
    std::uniform_int_distribution<int64_t> delay(0, 2 * lastDuration.count());
    std::this_thread::sleep_for(std::chrono::microseconds(delay(random)));
    ::kill(child.pid, SIGKILL);
    const auto result = testing_support::finishProcess(child);
    EXPECT_EQ(result.exitCode, 128 + SIGKILL) << "the writer was not killed: " << result.err;
    const auto all = reported(child.outFile);
    killed.lastReported = all.empty() ? 0 : all.back();
    return killed;
}

/// `killwriter verify-<mode> target`: the version the readers find there.
int64_t verifiedVersion(const std::string &mode, const fs::path &target, const fs::path &logs, int round)
{
    const auto result = testing_support::runProcess(KILLWRITER, {"verify-" + mode, target.string()}, logs,
                                                    "verify-" + mode + "-" + std::to_string(round));
    EXPECT_EQ(result.exitCode, 0) << "a reader refused what the killed writer left: " << result.out << result.err;
    std::istringstream fields(result.out);
    std::string word;
    int64_t version = -1;
    fields >> word >> version;
    EXPECT_EQ(word, "version") << result.out;
    return version;
}

/// Kills `mode`'s writer in `rounds` rounds over the same target; checks each time what is left.
void killRepeatedly(const std::string &mode, const std::string &targetName)
{
    TempDir dir("kill-" + mode);
    const fs::path target = dir / targetName;
    const fs::path logs = dir / "logs";
    fs::create_directories(logs);
    const fs::path folder = mode == "plan" ? dir.path() : target;
    std::mt19937 random(20261207);
    std::set<long> deadWriters;
    int roundsLeavingPartials = 0;
    int64_t before = 0; // the version the readers found after the previous kill
    constexpr int kRounds = 8;
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE(mode + ", round " + std::to_string(round));
        const Killed killed = startAndKill(mode, target, logs, round, 1 + round % 3, random);
        ASSERT_GT(killed.pid, 0);
        // What the writers before this one left was removed by it (it finished a version, so it made
        // its staging folder or temporary file, and with it removed the dead writers' ones).
        const std::set<long> left = leftoverPids(folder);
        for (const long pid : left)
            EXPECT_EQ(deadWriters.count(pid), 0u) << "a leftover of killed writer " << pid << " is still there";
        roundsLeavingPartials += left.count(killed.pid) > 0 ? 1 : 0;
        deadWriters.insert(killed.pid);

        const int64_t found = verifiedVersion(mode, target, logs, round);
        // The checkpoint writer numbers on from what it found (as a resumed run); the others restart at 1.
        const int64_t last = killed.lastReported;
        EXPECT_TRUE(found == last || found == last + 1)
            << "found version " << found << " after the writer finished " << last << " (before it: " << before << ")";
        before = found;
    }
    // The kills landed inside writes (a partial folder or temporary file left), not only between them.
    EXPECT_GT(roundsLeavingPartials, 0) << "no kill landed while a version was being written";
}

} // namespace

TEST(KillWriters, ACheckpointIsWholeOrAbsentAndEveryCheckpointReadsBack)
{
    killRepeatedly("checkpoint", "checkpoints");
}

TEST(KillWriters, TheSavedModelIsTheOldOrTheNewOneWhenReplaced)
{
    killRepeatedly("model", "run");
}

TEST(KillWriters, TheSavedAdapterIsTheOldOrTheNewOneWhenReplaced)
{
    killRepeatedly("adapter", "run");
}

TEST(KillWriters, APlanExportIsTheOldOrTheNewFile)
{
    killRepeatedly("plan", "device_map.json");
}
