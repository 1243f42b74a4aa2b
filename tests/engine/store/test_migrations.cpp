// Schema versions: a fresh file is at kSchemaVersion, a version-1 file upgrades in place keeping its
// runs (or, if the upgrade fails, stays whole at version 1), a newer file is refused with a clear
// message and left byte for byte as it was, a locked or read-only file gives one clear message and
// loses nothing, and a file that is not a tunebench database is an I/O error, never a crash.

#include "engine/core/error.h"
#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>

using namespace engine::store;
using engine::ErrorKind;
using storetest::fileBytes;
using storetest::ObeyFilePermissions;
using storetest::RawDb;
using testing_support::TempDir;
using ::testing::HasSubstr;

namespace {

engine::Error openError(const std::filesystem::path &path)
{
    try {
        RunStore::open(path);
    } catch (const engine::Error &e) {
        return e;
    } catch (const std::exception &e) {
        ADD_FAILURE() << "not an engine::Error: " << e.what();
        return engine::Error(ErrorKind::Internal, e.what());
    }
    ADD_FAILURE() << "opened " << path;
    return engine::Error(ErrorKind::Internal, "opened");
}

void writeBytes(const std::filesystem::path &path, const std::string &bytes)
{
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

/// A version-1 file as an older tunebench left it (WAL): two finished runs with metrics, an event and
/// an artifact.
void writeVersion1File(const std::filesystem::path &path)
{
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA journal_mode = WAL"), "wal");
    raw.exec(storetest::kSchemaVersion1Sql);
    raw.exec("INSERT INTO runs (name, created, finished, status, config, model, notes) VALUES"
             " ('old lora', '2026-01-02T10:00:00Z', '2026-01-02T10:05:00Z', 'succeeded',"
             "  '{\"training\": {\"method\": \"lora\"}}', 'llama', 'kept notes'),"
             " ('old full', '2026-01-03T10:00:00Z', '2026-01-03T11:00:00Z', 'failed', '{}', 'gpt', '')");
    raw.exec("INSERT INTO metrics (run, key, step, wall_time, value) VALUES"
             " (1, 'train/loss', 1, 0.5, 2.5), (1, 'train/loss', 2, 1.0, 2.0), (1, 'eval/loss', 2, 1.1, 2.2),"
             " (2, 'train/loss', 1, 0.5, 9.0)");
    raw.exec("INSERT INTO events (run, time, level, text) VALUES (1, '2026-01-02T10:00:00Z', 'info', 'started')");
    raw.exec("INSERT INTO artifacts (run, kind, path) VALUES (1, 'loss_plot', '/runs/1/loss.png')");
}

} // namespace

TEST(RunStoreMigrations, FreshFileIsAtTheCurrentVersion)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    RunStore::open(path);
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA user_version"), std::to_string(RunStore::kSchemaVersion));
}

TEST(RunStoreMigrations, OpeningTwiceDoesNotMigrateAgain)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    int64_t run = 0;
    {
        auto store = RunStore::open(path);
        run = store.createRun("r", "{}", "m");
    }
    auto store = RunStore::open(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    EXPECT_TRUE(store.run(run));
}

TEST(RunStoreMigrations, NewerSchemaIsRefusedNamingPathAndVersions)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    RunStore::open(path);
    {
        RawDb raw(path);
        raw.exec("PRAGMA user_version = " + std::to_string(RunStore::kSchemaVersion + 7));
    }
    const auto error = openError(path);
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
    EXPECT_THAT(error.what(), HasSubstr("version " + std::to_string(RunStore::kSchemaVersion + 7)));
    EXPECT_THAT(error.what(), HasSubstr("up to version " + std::to_string(RunStore::kSchemaVersion)));
    // Refusing did not touch it.
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA user_version"), std::to_string(RunStore::kSchemaVersion + 7));
}

TEST(RunStoreMigrations, GarbageFileIsAnIoErrorNamingThePath)
{
    TempDir dir("store");
    std::mt19937 random(1234);
    std::string noise(8192, '\0');
    for (auto &byte : noise)
        byte = static_cast<char>(random());
    const std::vector<std::pair<std::string, std::string>> files = {
        {"noise.db", noise},
        {"text.db", "this is not a database at all\n"},
        {"header-only.db", std::string("SQLite format 3\0", 16) + std::string(84, '\xff')},
    };
    for (const auto &[name, bytes] : files) {
        const auto path = dir / name;
        writeBytes(path, bytes);
        const auto error = openError(path);
        EXPECT_EQ(error.kind(), ErrorKind::Io) << name << ": " << error.what();
        EXPECT_THAT(error.what(), HasSubstr(path.string()));
    }
}

TEST(RunStoreMigrations, OtherProgramsDatabaseIsAnIoError)
{
    TempDir dir("store");
    const auto path = dir / "someone-else.db";
    {
        RawDb raw(path);
        raw.exec("CREATE TABLE songs (title TEXT)");
    }
    const auto error = openError(path);
    EXPECT_EQ(error.kind(), ErrorKind::Io);
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
    EXPECT_THAT(error.what(), HasSubstr("not a tunebench run database"));
}

TEST(RunStoreMigrations, UncreatableFolderIsAnIoError)
{
    TempDir dir("store");
    writeBytes(dir / "plain-file", "x");
    const auto path = dir / "plain-file/sub/runs.db";
    const auto error = openError(path);
    EXPECT_EQ(error.kind(), ErrorKind::Io);
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
}

TEST(RunStoreMigrations, Version1FileUpgradesInPlaceAndKeepsItsRunsAndMetrics)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    writeVersion1File(path);

    auto store = RunStore::open(path);
    EXPECT_EQ(store.schemaVersion(), 2);
    {
        RawDb raw(path);
        EXPECT_EQ(raw.query("PRAGMA user_version"), "2");
        EXPECT_EQ(raw.query("PRAGMA journal_mode"), "wal");
        EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE name = 'run_tags'"), "1");
    }
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].name, "old full");
    EXPECT_EQ(runs[0].status, RunStatus::Failed);
    EXPECT_EQ(runs[1].name, "old lora");
    EXPECT_EQ(runs[1].notes, "kept notes");
    EXPECT_TRUE(runs[1].tags.empty());
    const auto loss = store.metric(runs[1].id, "train/loss");
    ASSERT_EQ(loss.size(), 2u);
    EXPECT_DOUBLE_EQ(loss[1].value, 2.0);
    EXPECT_EQ(store.events(runs[1].id).size(), 1u);
    EXPECT_EQ(store.artifacts(runs[1].id).size(), 1u);

    // What version 2 adds works on the upgraded runs.
    store.addTag(runs[1].id, "baseline");
    EXPECT_EQ(store.run(runs[1].id)->tags, std::vector<std::string>{"baseline"});
    const auto summaries = store.listRunSummaries();
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_EQ(summaries[1].steps, 2);
    EXPECT_EQ(summaries[1].bestEvalLoss, 2.2);
    EXPECT_EQ(summaries[1].method, "lora");
    EXPECT_EQ(summaries[1].durationSeconds, 300);
}

TEST(RunStoreMigrations, AFailedUpgradeLeavesTheVersion1FileWhole)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    writeVersion1File(path);
    {
        // An index with the name version 2 creates after its table: the upgrade fails half-way.
        RawDb raw(path);
        raw.exec("CREATE INDEX run_tags_tag ON runs (model)");
    }
    const auto error = openError(path);
    EXPECT_EQ(error.kind(), ErrorKind::Io);
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
    EXPECT_THAT(error.what(), HasSubstr("from schema version 1 to 2"));
    EXPECT_THAT(error.what(), HasSubstr("still at version 1"));
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA user_version"), "1");
    EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE name = 'run_tags'"), "0"); // rolled back
    EXPECT_EQ(raw.query("SELECT count(*) FROM runs"), "2");
    EXPECT_EQ(raw.query("SELECT count(*) FROM metrics"), "4");
}

TEST(RunStoreMigrations, NewerSchemaIsRefusedAndTheFileIsNotTouched)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    {
        auto store = RunStore::open(path);
        store.createRun("from the future", "{}", "m");
    }
    {
        // As a newer tunebench might leave it: a rollback journal (so that switching it to WAL, or
        // any write, would change the file's bytes) and a higher version.
        RawDb raw(path);
        EXPECT_EQ(raw.query("PRAGMA journal_mode = DELETE"), "delete");
        raw.exec("PRAGMA user_version = " + std::to_string(RunStore::kSchemaVersion + 1));
    }
    const std::string before = fileBytes(path);
    ASSERT_FALSE(before.empty());
    const auto error = openError(path);
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
    EXPECT_THAT(error.what(), HasSubstr("nothing was changed"));
    EXPECT_EQ(fileBytes(path), before);
    EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
    RawDb raw(path);
    EXPECT_EQ(raw.query("PRAGMA journal_mode"), "delete");
}

TEST(RunStoreMigrations, ALockedFileOpensForReadingAndAWriteSaysItIsLocked)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    int64_t run = 0;
    {
        auto store = RunStore::open(path);
        run = store.createRun("kept", "{}", "m");
        store.finishRun(run, RunStatus::Succeeded);
        store.addTag(run, "keep");
    }
    RawDb other(path);
    other.exec("BEGIN IMMEDIATE"); // another process holds the write lock
    other.exec("INSERT INTO events (run, time, level, text) VALUES (1, 'now', 'info', 'uncommitted')");

    auto store = RunStore::open(path, OpenOptions{.busyTimeoutMs = 50});
    EXPECT_FALSE(store.isReadOnly());
    ASSERT_EQ(store.listRuns().size(), 1u); // reading goes on (WAL)
    const std::string before = fileBytes(path);
    const std::vector<std::function<void()>> writes = {
        [&] { store.renameRun(run, "renamed"); },
        [&] { store.setNotes(run, "notes"); },
        [&] { store.setTags(run, {"a", "b"}); },
        [&] { store.deleteRun(run); },
    };
    for (const auto &write : writes) {
        try {
            write();
            ADD_FAILURE() << "wrote to a locked database";
        } catch (const engine::Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Io);
            EXPECT_THAT(e.what(), HasSubstr(path.string()));
            EXPECT_THAT(e.what(), HasSubstr("locked by another process"));
            EXPECT_THAT(e.what(), HasSubstr("nothing was changed"));
        }
    }
    EXPECT_EQ(fileBytes(path), before);
    other.exec("ROLLBACK");
    const auto record = store.run(run);
    ASSERT_TRUE(record);
    EXPECT_EQ(record->name, "kept");
    EXPECT_EQ(record->notes, "");
    EXPECT_EQ(record->tags, std::vector<std::string>{"keep"});
}

TEST(RunStoreMigrations, ALockedVersion1FileIsNotUpgradedAndSaysItIsLocked)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    writeVersion1File(path);
    RawDb other(path);
    other.exec("BEGIN IMMEDIATE");
    other.exec("UPDATE runs SET notes = 'mid-write' WHERE id = 2");
    const std::string before = fileBytes(path);
    try {
        RunStore::open(path, OpenOptions{.busyTimeoutMs = 50});
        ADD_FAILURE() << "upgraded a locked file";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_THAT(e.what(), HasSubstr("locked by another process"));
        EXPECT_THAT(e.what(), HasSubstr("still at version 1"));
    }
    EXPECT_EQ(fileBytes(path), before);
    other.exec("ROLLBACK");
    EXPECT_EQ(other.query("PRAGMA user_version"), "1");
}

TEST(RunStoreMigrations, AReadOnlyFileOpensForReadingAndAWriteSaysItIsReadOnly)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    int64_t run = 0;
    {
        auto store = RunStore::open(path);
        run = store.createRun("kept", "{}", "m");
        store.appendMetrics(run, {{"train/loss", 1, 0.1, 2.0}});
        store.finishRun(run, RunStatus::Succeeded);
    }
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                           std::filesystem::perms::others_read);
    const std::string before = fileBytes(path);
    {
        ObeyFilePermissions asAUser;
        ASSERT_TRUE(ObeyFilePermissions::cannotWrite(path)) << "the test needs a file this process cannot write";
        auto store = RunStore::open(path);
        EXPECT_TRUE(store.isReadOnly());
        ASSERT_EQ(store.listRunSummaries().size(), 1u);
        EXPECT_EQ(store.listRunSummaries()[0].steps, 1);
        for (const auto &write : std::vector<std::function<void()>>{
                 [&] { store.renameRun(run, "renamed"); },
                 [&] { store.addTag(run, "x"); },
                 [&] { store.deleteRun(run); },
             }) {
            try {
                write();
                ADD_FAILURE() << "wrote to a read-only database";
            } catch (const engine::Error &e) {
                EXPECT_EQ(e.kind(), ErrorKind::Io);
                EXPECT_THAT(e.what(), HasSubstr(path.string()));
                EXPECT_THAT(e.what(), HasSubstr("read-only"));
            }
        }
        EXPECT_EQ(store.run(run)->name, "kept");
    }
    EXPECT_EQ(fileBytes(path), before);
}

TEST(RunStoreMigrations, AReadOnlyVersion1FileIsRefusedClearly)
{
    TempDir dir("store");
    const auto path = dir / "runs.db";
    writeVersion1File(path);
    std::filesystem::permissions(path, std::filesystem::perms::owner_read);
    const std::string before = fileBytes(path);
    {
        ObeyFilePermissions asAUser;
        ASSERT_TRUE(ObeyFilePermissions::cannotWrite(path));
        const auto error = openError(path);
        EXPECT_EQ(error.kind(), ErrorKind::Io);
        EXPECT_THAT(error.what(), HasSubstr("read-only"));
        EXPECT_THAT(error.what(), HasSubstr("schema version 1"));
        EXPECT_THAT(error.what(), HasSubstr("nothing was changed"));
    }
    EXPECT_EQ(fileBytes(path), before);
}
