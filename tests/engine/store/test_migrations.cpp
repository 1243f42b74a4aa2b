// Schema versions: a fresh file is at kSchemaVersion, a newer file is refused with a clear
// message, and a file that is not a tunebench database is an I/O error, never a crash.

#include "engine/core/error.h"
#include "engine/store/runstore.h"
#include "storetestutil.h"
#include "support/tempdir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

using namespace engine::store;
using engine::ErrorKind;
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
