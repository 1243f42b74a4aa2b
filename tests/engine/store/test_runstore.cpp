// Round trips through the run store: runs, metrics, events, artifacts, notes, names, tags and
// statuses, the table summaries, deleting a run (and only the folder tunebench made for it), the
// metric index, and a second connection reading while the first writes.

#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/store/runqueries.h"
#include "engine/store/runfolder.h"
#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include <atomic>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
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
              "artifacts\nevents\nmetrics\nrun_tags\nruns");
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

TEST(RunStore, RenameTrimsAndRefusesAnEmptyName)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t id = store.createRun("before", "{}", "m");
    store.renameRun(id, "  after  ");
    EXPECT_EQ(store.run(id)->name, "after");
    for (const std::string name : {"", "   "}) {
        try {
            store.renameRun(id, name);
            ADD_FAILURE() << "accepted the name \"" << name << "\"";
        } catch (const engine::Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_THAT(e.what(), HasSubstr("cannot be empty"));
        }
    }
    EXPECT_EQ(store.run(id)->name, "after");
    try {
        store.renameRun(id + 5, "x");
        ADD_FAILURE();
    } catch (const engine::Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("no run with id " + std::to_string(id + 5)));
    }
}

TEST(RunStore, TagsAreASetListedWithTheRun)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t a = store.createRun("a", "{}", "m");
    const int64_t b = store.createRun("b", "{}", "m");
    store.addTag(a, "lora");
    store.addTag(a, " baseline ");
    store.addTag(a, "lora"); // already there
    store.addTag(b, "lora");
    EXPECT_THAT(store.tags(a), ElementsAre("baseline", "lora"));
    store.removeTag(a, "lora");
    store.removeTag(a, "never-had-it");
    EXPECT_THAT(store.tags(a), ElementsAre("baseline"));
    store.setTags(b, {"z", "y", "z"});
    EXPECT_THAT(store.run(b)->tags, ElementsAre("y", "z"));

    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_THAT(runs[0].tags, ElementsAre("y", "z"));
    EXPECT_THAT(runs[1].tags, ElementsAre("baseline"));

    for (const std::string &bad : std::vector<std::string>{"", "two words", "a,b", std::string(65, 'x')}) {
        try {
            store.addTag(a, bad);
            ADD_FAILURE() << "accepted the tag \"" << bad << "\"";
        } catch (const engine::Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_THAT(e.what(), HasSubstr("tag \"" + bad + "\""));
        }
    }
    // A bad tag in a set changes nothing.
    EXPECT_THROW(store.setTags(a, {"fine", "not fine"}), engine::Error);
    EXPECT_THAT(store.tags(a), ElementsAre("baseline"));
    store.setTags(a, {});
    EXPECT_TRUE(store.tags(a).empty());
    EXPECT_THROW(store.addTag(b + 10, "x"), engine::Error);
    EXPECT_THROW(store.setTags(b + 10, {}), engine::Error);
}

TEST(RunStore, SummariesGiveStepsBestEvalLossDurationAndMethod)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const int64_t lora = store.createRun("lora", R"({"training": {"method": "lora", "steps": 9}})", "llama");
    store.appendMetrics(lora, {{"train/loss", 7, 7.0, 1.5}, {"train/loss", 3, 3.0, 2.5}, {"eval/loss", 3, 3.1, 2.75},
                               {"eval/loss", 7, 7.1, 2.25}, {"eval/loss", 5, 5.1, std::nan("")}, {"lr", 20, 20, 1e-3}});
    store.finishRun(lora, RunStatus::Succeeded);
    const int64_t full = store.createRun("full", R"({"method": "full"})", "gpt2"); // still running, no metrics
    const int64_t broken = store.createRun("broken", "{}", "m");
    store.finishRun(broken, RunStatus::Failed);
    opened.raw.exec("UPDATE runs SET created = '2026-03-01T10:00:00Z', finished = '2026-03-01T11:30:05Z' WHERE id = " +
                    std::to_string(lora));
    opened.raw.exec("UPDATE runs SET config = 'not json {' WHERE id = " + std::to_string(broken));
    store.addTag(lora, "best");

    const auto summaries = store.listRunSummaries();
    ASSERT_EQ(summaries.size(), 3u);
    std::map<int64_t, RunSummary> byId;
    for (const auto &summary : summaries)
        byId[summary.run.id] = summary;
    const RunSummary &l = byId.at(lora);
    EXPECT_EQ(l.run.name, "lora");
    EXPECT_EQ(l.run.model, "llama");
    EXPECT_THAT(l.run.tags, ElementsAre("best"));
    EXPECT_EQ(l.steps, 7);                // the last train/loss step, not lr's
    EXPECT_EQ(l.bestEvalLoss, 2.25);      // NaN skipped
    EXPECT_EQ(l.durationSeconds, 5405);
    EXPECT_EQ(l.method, "lora");
    const RunSummary &f = byId.at(full);
    EXPECT_EQ(f.run.status, RunStatus::Running);
    EXPECT_FALSE(f.steps);
    EXPECT_FALSE(f.bestEvalLoss);
    EXPECT_GE(f.durationSeconds, 0);
    EXPECT_LT(f.durationSeconds, 24 * 3600); // counted to now, not to some epoch
    EXPECT_EQ(f.method, "full");
    EXPECT_EQ(byId.at(broken).method, ""); // a damaged config does not break the list
    EXPECT_EQ(byId.at(broken).run.status, RunStatus::Failed);
}

TEST(RunStore, SummariesAreAnsweredFromTheMetricIndexWithoutScanningMetrics)
{
    StoreWithRawView opened;
    const std::string plan = opened.raw.query("EXPLAIN QUERY PLAN " + std::string(engine::store::kRunSummariesSql));
    EXPECT_THAT(plan, HasSubstr("metrics_run_key_step"));
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("SCAN metrics"))) << plan;
}

TEST(RunStore, MetricAfterAStepReturnsOnlyTheNewValues)
{
    TempDir dir("store");
    auto store = RunStore::open(dir / "runs.db");
    const int64_t run = store.createRun("r", "{}", "m");
    store.appendMetrics(run, {{"loss", 1, 1, 3.0}, {"loss", 2, 2, 2.0}, {"loss", 3, 3, 1.0}});
    EXPECT_THAT(stepsOf(store.metric(run, "loss", 1)), ElementsAre(2, 3));
    EXPECT_TRUE(store.metric(run, "loss", 3).empty());
    EXPECT_THAT(stepsOf(store.metric(run, "loss", -1)), ElementsAre(1, 2, 3));
}

TEST(RunStore, MetricsSinceACursorReturnsOnlyWhatWasWrittenLater)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const int64_t a = store.createRun("a", "{}", "m");
    const int64_t b = store.createRun("b", "{}", "m");
    store.appendMetrics(a, {{"loss", 1, 1, 3.0}, {"loss", 2, 2, 2.0}});
    int64_t cursor = store.metricsCursor();
    EXPECT_TRUE(store.metricsSince(cursor).empty());
    store.appendMetrics(b, {{"loss", 1, 1, 9.0}});
    store.appendMetrics(a, {{"loss", 3, 3, 1.0}, {"lr", 3, 3, 1e-3}});
    const auto rows = store.metricsSince(cursor);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].run, b);
    EXPECT_EQ(rows[1].run, a);
    EXPECT_EQ(rows[1].sample.key, "loss");
    EXPECT_EQ(rows[1].sample.step, 3);
    EXPECT_DOUBLE_EQ(rows[1].sample.value, 1.0);
    EXPECT_EQ(rows[2].sample.key, "lr");
    EXPECT_TRUE(store.metricsSince(cursor).empty());
    const std::string plan = opened.raw.query("EXPLAIN QUERY PLAN SELECT rowid, run, key, step, wall_time, value FROM metrics"
                                              " WHERE rowid > 5 ORDER BY rowid");
    EXPECT_THAT(plan, HasSubstr("rowid>?")) << plan; // a range of the table, not a scan
}

TEST(RunStore, DataVersionChangesWhenAnotherConnectionCommits)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const int64_t before = store.dataVersion();
    store.createRun("own write", "{}", "m");
    EXPECT_EQ(store.dataVersion(), before);
    auto other = RunStore::open(opened.path);
    other.createRun("someone else", "{}", "m");
    EXPECT_NE(store.dataVersion(), before);
}

namespace {

void writeMarker(const std::filesystem::path &folder, int64_t run, const std::filesystem::path &storePath)
{
    std::filesystem::create_directories(folder);
    std::ofstream(folder / kRunMarker) << R"({"run_id": )" << run << R"(, "store": ")" << storePath.string()
                                              << "\"}\n";
    std::ofstream(folder / "loss.png") << "png";
}

} // namespace

TEST(RunStore, DeleteRemovesTheRunWithItsRowsAndKeepsItsFolder)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const auto folder = opened.dir / "out-a";
    const int64_t a = store.createRun("a", R"({"output_dir": ")" + folder.string() + R"("})", "m");
    const int64_t b = store.createRun("b", "{}", "m");
    for (int64_t run : {a, b}) {
        store.appendMetrics(run, {{"train/loss", 1, 1, 2.0}, {"train/loss", 2, 2, 1.0}});
        store.addEvent(run, LogLevel::Info, "started");
        store.addArtifact(run, "loss_plot", (folder / "loss.png").string());
        store.addTag(run, "t");
    }
    writeMarker(folder, a, opened.path);

    try {
        store.deleteRun(a); // this live process owns it: still running
        ADD_FAILURE() << "deleted a running run";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_THAT(e.what(), HasSubstr("still running"));
    }
    store.finishRun(a, RunStatus::Succeeded);
    store.deleteRun(a);
    EXPECT_FALSE(store.run(a));
    for (const char *table : {"metrics", "events", "artifacts", "run_tags"}) {
        EXPECT_EQ(opened.raw.query("SELECT count(*) FROM " + std::string(table) + " WHERE run = " + std::to_string(a)), "0")
            << table;
        EXPECT_EQ(opened.raw.query("SELECT count(*) FROM " + std::string(table) + " WHERE run = " + std::to_string(b)),
                  table == std::string("metrics") ? "2" : "1")
            << table;
    }
    EXPECT_TRUE(std::filesystem::exists(folder / "loss.png")) << "the files stay unless asked";
    EXPECT_THROW(store.deleteRun(a), engine::Error);
}

TEST(RunStore, DeleteWithTheFolderRemovesOnlyAFolderTunebenchMadeForThatRun)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const auto ours = opened.dir / "ours";
    const auto otherStores = opened.dir / "other-store";
    const auto unmarked = opened.dir / "unmarked";
    const auto config = [](const std::filesystem::path &folder) {
        return R"({"output_dir": ")" + folder.string() + R"("})";
    };
    const int64_t a = store.createRun("a", config(ours), "m");
    const int64_t b = store.createRun("b", config(otherStores), "m");
    const int64_t c = store.createRun("c", config(unmarked), "m");
    for (int64_t run : {a, b, c})
        store.finishRun(run, RunStatus::Succeeded);
    writeMarker(ours, a, opened.path);
    writeMarker(otherStores, b, opened.dir / "somewhere-else.db");
    std::filesystem::create_directories(unmarked);
    std::ofstream(unmarked / "precious.txt") << "x";

    EXPECT_EQ(store.createdRunFolder(a), ours);
    EXPECT_EQ(store.createdRunFolder(b), std::nullopt);
    EXPECT_EQ(store.createdRunFolder(c), std::nullopt);

    store.deleteRun(a, RunFolderAction::Delete);
    store.deleteRun(b, RunFolderAction::Delete);
    store.deleteRun(c, RunFolderAction::Delete);
    EXPECT_FALSE(std::filesystem::exists(ours));
    EXPECT_TRUE(std::filesystem::exists(otherStores / "loss.png"));
    EXPECT_TRUE(std::filesystem::exists(unmarked / "precious.txt"));
    EXPECT_TRUE(store.listRuns().empty());
}

// Where a run's files are: the output_dir it was given; else output_root/<id> (the runs folder beside
// the database it was recorded in, so that a database chosen elsewhere keeps its runs with it); else,
// for records from before output_root, the data folder's runs/<id>, where they were written.
TEST(RunStore, RunFolderFollowsOutputDirThenOutputRootThenTheOldDefault)
{
    StoreWithRawView opened;
    RunStore &store = opened.store;
    const auto given = opened.dir / "given";
    const int64_t a = store.createRun("a", R"({"output_dir": ")" + given.string() + R"("})", "m");
    const int64_t b = store.createRun("b", R"({"output_root": ")" + engine::store::runsFolderBeside(opened.path).string() + R"("})", "m");
    const int64_t c = store.createRun("c", "{}", "m");
    EXPECT_EQ(store.runFolder(a), given);
    EXPECT_EQ(store.runFolder(b), std::filesystem::absolute(opened.path).parent_path() / "runs" / std::to_string(b));
    EXPECT_EQ(store.runFolder(c), engine::dataDir() / "runs" / std::to_string(c));
    EXPECT_TRUE(store.runFolder(c + 100).empty()) << "an unknown run";
    EXPECT_EQ(engine::store::runsFolderBeside("relative/runs.sqlite3"),
              std::filesystem::current_path() / "relative" / "runs");
}

// A second connection (as another process or the UI thread would hold) reads while the first writes:
// the writer's thread stops inside each batch's open transaction (the store's hook) until the reader has
// read, so every read provably overlaps a write. The reader never blocks (WAL) and sees the batches
// committed before, whole, and nothing of the open one.
TEST(RunStoreConcurrency, SecondConnectionReadsWhileFirstWrites)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    auto writerStore = RunStore::open(path);
    auto reader = RunStore::open(path);
    const int64_t run = writerStore.createRun("live", "{}", "m");
    constexpr int kSteps = 30;
    constexpr int kKeys = 4;

    std::mutex mutex;
    std::condition_variable turn;
    int open = -1;   // the step whose batch waits uncommitted, -1 none
    int read = -1;   // the last step the reader has read during
    bool finished = false; // the writer's thread has returned (an error ends it early)
    writerStore.setBeforeMetricsCommit([&] {
        std::unique_lock lock(mutex);
        ++open;
        turn.notify_all();
        turn.wait(lock, [&] { return read == open; });
    });
    std::string writerError;
    std::thread writer([&] {
        try {
            for (int step = 0; step < kSteps; ++step) {
                std::vector<MetricSample> batch;
                for (int k = 0; k < kKeys; ++k) {
                    std::string key = "k"; // not "k" + to_string: GCC 12 warns falsely (-Wrestrict) at -O3
                    key += std::to_string(k);
                    batch.push_back({key, step, step * 0.1, step * 1.0 + k});
                }
                writerStore.appendMetrics(run, batch);
            }
        } catch (const std::exception &e) {
            writerError = e.what();
        }
        const std::lock_guard lock(mutex);
        finished = true;
        turn.notify_all();
    });

    RawDb raw(path);
    int readsDuringWrites = 0;
    for (int step = 0; step < kSteps; ++step) {
        {
            std::unique_lock lock(mutex);
            turn.wait(lock, [&] { return open == step || finished; });
            if (open != step)
                break;
        }
        // Batch `step` is inserted and not committed: steps 0 .. step-1 are visible, whole.
        const auto k0 = reader.metric(run, "k0");
        EXPECT_EQ(k0.size(), static_cast<size_t>(step)) << "during batch " << step;
        for (size_t i = 0; i < k0.size(); ++i)
            EXPECT_EQ(k0[i].step, static_cast<int64_t>(i));
        EXPECT_EQ(reader.metric(run, "k3").size(), static_cast<size_t>(step));
        EXPECT_EQ(raw.query("SELECT count(*) FROM metrics"), std::to_string(step * kKeys)) << "during batch " << step;
        ++readsDuringWrites;
        {
            const std::lock_guard lock(mutex);
            read = step;
        }
        turn.notify_all();
    }
    writer.join();
    EXPECT_EQ(writerError, "");
    EXPECT_EQ(readsDuringWrites, kSteps) << "the hook did not hold every batch open";
    EXPECT_EQ(reader.metric(run, "k0").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(reader.metric(run, "k3").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(reader.listRuns().size(), 1u);
}
