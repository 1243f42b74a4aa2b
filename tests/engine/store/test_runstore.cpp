// Round trips through the run store: runs, metrics, events, artifacts, notes and statuses, the
// metric index, and a second connection reading while the first writes.

#include "engine/core/error.h"
#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <regex>
#include <thread>

using namespace engine::store;
using engine::ErrorKind;
using engine::LogLevel;
using storetest::RawDb;
using testing_support::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

std::vector<int64_t> stepsOf(const std::vector<MetricPoint> &points)
{
    std::vector<int64_t> steps;
    for (const auto &point : points)
        steps.push_back(point.step);
    return steps;
}

bool isIso8601Utc(const std::string &text)
{
    static const std::regex pattern(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
    return std::regex_match(text, pattern);
}

/// A fresh store file, open, with a raw sqlite3 connection beside it for looking at the file.
struct StoreWithRawView {
    TempDir dir{"store"};
    std::filesystem::path path = dir / "runs.db";
    RunStore store = RunStore::open(path);
    RawDb raw{path};
};

} // namespace

TEST(RunStore, CreatesParentFoldersAndTheFile)
{
    TempDir dir("store");
    const auto path = dir / "a/b/c/runs.db";
    auto store = RunStore::open(path);
    EXPECT_TRUE(std::filesystem::exists(path));
    EXPECT_EQ(store.path(), path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
}

TEST(RunStore, RunRoundTrip)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t id = store.createRun("demo", R"({"lr": 0.001})", "llama");
    auto record = store.run(id);
    ASSERT_TRUE(record);
    EXPECT_EQ(record->id, id);
    EXPECT_EQ(record->name, "demo");
    EXPECT_EQ(record->configJson, R"({"lr": 0.001})");
    EXPECT_EQ(record->model, "llama");
    EXPECT_EQ(record->status, RunStatus::Running); // owned by this live process
    EXPECT_TRUE(isIso8601Utc(record->created)) << record->created;
    EXPECT_EQ(record->finished, "");
    EXPECT_EQ(record->notes, "");

    store.setNotes(id, "first try, lr too high?");
    store.finishRun(id, RunStatus::Succeeded);
    record = store.run(id);
    ASSERT_TRUE(record);
    EXPECT_EQ(record->notes, "first try, lr too high?");
    EXPECT_EQ(record->status, RunStatus::Succeeded);
    EXPECT_TRUE(isIso8601Utc(record->finished)) << record->finished;
    EXPECT_GE(record->finished, record->created);

    EXPECT_FALSE(store.run(id + 1000));
}

TEST(RunStore, EmptyConfigIsStoredAsEmptyObjectAndBadJsonIsRefused)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t id = store.createRun("no config", "", "gpt2");
    EXPECT_EQ(store.run(id)->configJson, "{}");
    try {
        store.createRun("bad", "{not json", "gpt2");
        FAIL() << "bad JSON accepted";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_THAT(e.what(), HasSubstr("not valid JSON"));
    }
}

TEST(RunStore, EveryStatusRoundTrips)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    for (auto status : {RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled, RunStatus::Interrupted}) {
        const int64_t id = store.createRun(runStatusName(status), "{}", "m");
        store.finishRun(id, status);
        EXPECT_EQ(store.run(id)->status, status);
        EXPECT_EQ(parseRunStatus(runStatusName(status)), status);
    }
    EXPECT_EQ(parseRunStatus("running"), RunStatus::Running);
    EXPECT_EQ(parseRunStatus("bogus"), std::nullopt);
}

TEST(RunStore, FinishWithRunningOrUnknownRunIsInvalidInput)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t id = store.createRun("r", "{}", "m");
    try {
        store.finishRun(id, RunStatus::Running);
        FAIL();
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    }
    for (auto action : std::vector<std::function<void()>>{
             [&] { store.finishRun(id + 99, RunStatus::Failed); },
             [&] { store.setNotes(id + 99, "x"); },
             [&] { store.appendMetrics(id + 99, {{"loss", 1, 0.5, 1.0}}); },
             [&] { store.addEvent(id + 99, LogLevel::Info, "x"); },
             [&] { store.addArtifact(id + 99, "checkpoint", "/x"); },
         }) {
        try {
            action();
            FAIL() << "unknown run accepted";
        } catch (const engine::Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_THAT(e.what(), HasSubstr("no run with id " + std::to_string(id + 99)));
            EXPECT_THAT(e.what(), HasSubstr((dir / "runs.db").string()));
        }
    }
    // The failed batch left nothing behind and the statements are still usable.
    store.appendMetrics(id, {{"loss", 1, 0.5, 1.0}});
    EXPECT_EQ(store.metric(id, "loss").size(), 1u);
}

TEST(RunStore, ListRunsNewestFirst)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t a = store.createRun("a", "{}", "m");
    const int64_t b = store.createRun("b", "{}", "m");
    const int64_t c = store.createRun("c", "{}", "m");
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[0].id, c);
    EXPECT_EQ(runs[1].id, b);
    EXPECT_EQ(runs[2].id, a);
    EXPECT_EQ(runs[0].name, "c");
}

TEST(RunStore, MetricsComeBackInStepOrderEvenWhenAppendedOutOfOrder)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t run = store.createRun("r", "{}", "m");
    const int64_t other = store.createRun("other", "{}", "m");
    store.appendMetrics(run, {{"train/loss", 3, 3.5, 0.3}, {"train/loss", 1, 1.5, 0.9}, {"lr", 1, 1.5, 1e-3}});
    store.appendMetrics(run, {{"train/loss", 2, 2.5, 0.5}, {"train/loss", 0, 0.5, 1.2}});
    store.appendMetrics(other, {{"train/loss", 1, 0.1, 42.0}});
    store.appendMetrics(run, {});

    const auto loss = store.metric(run, "train/loss");
    EXPECT_THAT(stepsOf(loss), ElementsAre(0, 1, 2, 3));
    EXPECT_DOUBLE_EQ(loss[0].value, 1.2);
    EXPECT_DOUBLE_EQ(loss[0].wallTime, 0.5);
    EXPECT_DOUBLE_EQ(loss[3].value, 0.3);
    EXPECT_DOUBLE_EQ(loss[3].wallTime, 3.5);
    EXPECT_THAT(store.metricKeys(run), ElementsAre("lr", "train/loss"));
    EXPECT_THAT(store.metricKeys(other), ElementsAre("train/loss"));
    EXPECT_TRUE(store.metric(run, "missing").empty());
}

TEST(RunStore, NanAndInfinityValuesSurvive)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t run = store.createRun("r", "{}", "m");
    const double inf = std::numeric_limits<double>::infinity();
    store.appendMetrics(run, {{"loss", 1, 1.0, std::nan("")}, {"loss", 2, 2.0, inf}, {"loss", 3, 3.0, -inf}});
    const auto loss = store.metric(run, "loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_TRUE(std::isnan(loss[0].value));
    EXPECT_EQ(loss[1].value, inf);
    EXPECT_EQ(loss[2].value, -inf);
}

TEST(RunStore, SameStepWrittenTwiceKeepsTheLastValue)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t run = store.createRun("r", "{}", "m");
    store.appendMetrics(run, {{"loss", 5, 5.0, 1.0}});
    store.appendMetrics(run, {{"loss", 5, 9.0, 0.7}}); // e.g. re-logged after resuming
    const auto loss = store.metric(run, "loss");
    ASSERT_EQ(loss.size(), 1u);
    EXPECT_DOUBLE_EQ(loss[0].value, 0.7);
    EXPECT_DOUBLE_EQ(loss[0].wallTime, 9.0);
}

TEST(RunStore, EventsAndArtifactsRoundTripInOrder)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t run = store.createRun("r", "{}", "m");
    store.addEvent(run, LogLevel::Info, "started");
    store.addEvent(run, LogLevel::Warning, "loss spiked at step 40");
    store.addEvent(run, LogLevel::Error, "NaN in layer 3");
    store.addEvent(run, LogLevel::Debug, "détails ünïcode ✓");
    store.addArtifact(run, "checkpoint", "/runs/r/step-100");
    store.addArtifact(run, "loss_plot", "/runs/r/loss.png");

    const auto events = store.events(run);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].level, LogLevel::Info);
    EXPECT_EQ(events[0].text, "started");
    EXPECT_EQ(events[1].level, LogLevel::Warning);
    EXPECT_EQ(events[2].level, LogLevel::Error);
    EXPECT_EQ(events[3].level, LogLevel::Debug);
    EXPECT_EQ(events[3].text, "détails ünïcode ✓");
    EXPECT_TRUE(isIso8601Utc(events[0].time)) << events[0].time;

    const auto artifacts = store.artifacts(run);
    ASSERT_EQ(artifacts.size(), 2u);
    EXPECT_EQ(artifacts[0].kind, "checkpoint");
    EXPECT_EQ(artifacts[0].path, "/runs/r/step-100");
    EXPECT_EQ(artifacts[1].kind, "loss_plot");
    EXPECT_TRUE(store.events(run + 1).empty());
    EXPECT_TRUE(store.artifacts(run + 1).empty());
}

TEST(RunStore, DataSurvivesReopening)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    int64_t run = 0;
    {
        auto store = RunStore::open(path);
        run = store.createRun("kept", "{}", "m");
        store.appendMetrics(run, {{"loss", 1, 1.0, 0.5}});
        store.finishRun(run, RunStatus::Cancelled);
    }
    auto store = RunStore::open(path);
    EXPECT_EQ(store.run(run)->status, RunStatus::Cancelled);
    EXPECT_EQ(store.metric(run, "loss").size(), 1u);
}

TEST(RunStore, IsMoveOnly)
{
    static_assert(!std::is_copy_constructible_v<RunStore>);
    static_assert(std::is_nothrow_move_constructible_v<RunStore>);
    TempDir dir("store");
    auto first = RunStore::open(dir / "runs.db");
    const int64_t run = first.createRun("r", "{}", "m");
    RunStore second = std::move(first);
    second.appendMetrics(run, {{"loss", 1, 1.0, 0.5}});
    auto third = RunStore::open(dir / "other.db");
    third = std::move(second);
    EXPECT_EQ(third.metric(run, "loss").size(), 1u);
}

TEST(RunStore, PragmasAreSet)
{
    StoreWithRawView opened;
    RawDb &raw = opened.raw;
    EXPECT_EQ(raw.query("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"),
              "artifacts\nevents\nmetrics\nruns");
}

TEST(RunStore, MetricQueryUsesTheRunKeyStepIndex)
{
    StoreWithRawView opened;
    RawDb &raw = opened.raw;
    EXPECT_EQ(raw.query("SELECT group_concat(name) FROM pragma_index_info('metrics_run_key_step')"), "run,key,step");
    const std::string plan =
        raw.query("EXPLAIN QUERY PLAN SELECT step, wall_time, value FROM metrics WHERE run = 1 AND key = 'loss' ORDER BY step");
    EXPECT_THAT(plan, HasSubstr("metrics_run_key_step"));
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("TEMP B-TREE"))); // the index gives the order, no sort
    const std::string keysPlan = raw.query("EXPLAIN QUERY PLAN SELECT DISTINCT key FROM metrics WHERE run = 1 ORDER BY key");
    EXPECT_THAT(keysPlan, HasSubstr("metrics_run_key_step"));
}

// A second connection (as another process or the UI thread would hold) reads while the first
// writes: it never blocks, and it sees whole batches only.
TEST(RunStoreConcurrency, SecondConnectionReadsWhileFirstWrites)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    auto writerStore = RunStore::open(path);
    auto reader = RunStore::open(path);
    const int64_t run = writerStore.createRun("live", "{}", "m");
    constexpr int kSteps = 300;
    constexpr int kKeys = 4;

    std::atomic<bool> done{false};
    std::string writerError;
    std::thread writer([&] {
        try {
            for (int step = 0; step < kSteps; ++step) {
                std::vector<MetricSample> batch;
                for (int k = 0; k < kKeys; ++k)
                    batch.push_back({"k" + std::to_string(k), step, step * 0.1, step * 1.0 + k});
                writerStore.appendMetrics(run, batch);
            }
        } catch (const std::exception &e) {
            writerError = e.what();
        }
        done = true;
    });

    RawDb raw(path);
    int reads = 0;
    size_t lastSeen = 0;
    while (!done) {
        const auto k0 = reader.metric(run, "k0");
        EXPECT_GE(k0.size(), lastSeen); // never goes backwards
        // One statement reads one snapshot: it holds whole batches only.
        const int rows = std::stoi(raw.query("SELECT count(*) FROM metrics"));
        EXPECT_EQ(rows % kKeys, 0) << rows;
        for (size_t i = 0; i < k0.size(); ++i)
            ASSERT_EQ(k0[i].step, static_cast<int64_t>(i));
        lastSeen = k0.size();
        ++reads;
    }
    writer.join();
    EXPECT_EQ(writerError, "");
    EXPECT_GT(reads, 0);
    EXPECT_EQ(reader.metric(run, "k0").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(reader.metric(run, "k3").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(reader.listRuns().size(), 1u);
}
