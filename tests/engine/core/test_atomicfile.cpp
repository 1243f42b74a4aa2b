#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using testing_support::TempDir;

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries)
{
    const TempDir dir("atomic");
    const fs::path file = dir / "sub" / "out.txt";
    engine::writeFileAtomically(file, "first");
    EXPECT_EQ(engine::readFile(file), "first");
    engine::writeFileAtomically(file, std::string(100000, 'x'));
    EXPECT_EQ(engine::readFile(file).size(), 100000u);
    int entries = 0;
    for ([[maybe_unused]] const auto &entry : fs::directory_iterator(dir / "sub"))
        ++entries;
    EXPECT_EQ(entries, 1) << "temporary files left behind";
}

TEST(AtomicFile, UnwritableTargetIsAnIoErrorNamingThePath)
{
    const TempDir dir("atomic-fail");
    const fs::path blocker = dir / "blocker";
    std::ofstream(blocker) << "a file where a folder should be";
    try {
        engine::writeFileAtomically(blocker / "out.txt", "x");
        FAIL() << "expected an error";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("blocker"), std::string::npos) << e.what();
    }
}

TEST(AtomicFile, ReadingAMissingFileNamesIt)
{
    try {
        engine::readFile("/nonexistent/tunebench/file.txt");
        FAIL() << "expected an error";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/tunebench/file.txt"), std::string::npos);
    }
}

TEST(StagedFolder, AppearsWholeOnCommitAndLeavesNothingWhenAbandoned)
{
    testing_support::TempDir dir("staged");
    const fs::path target = dir.path() / "out";
    {
        engine::StagedFolder staged(target);
        engine::writeFileAtomically(staged.path() / "a.txt", "one");
        EXPECT_FALSE(fs::exists(target)) << "nothing is visible before commit";
    } // abandoned: an error or a cancel
    EXPECT_FALSE(fs::exists(target));
    ASSERT_TRUE(fs::is_empty(dir.path())) << "the partial folder is removed";

    {
        engine::StagedFolder staged(target);
        engine::writeFileAtomically(staged.path() / "a.txt", "one");
        staged.commit();
    }
    EXPECT_EQ(engine::readFile(target / "a.txt"), "one");
    {
        engine::StagedFolder staged(target);
        engine::writeFileAtomically(staged.path() / "b.txt", "two");
        testing_support::expectError([&] { staged.commit(); }, engine::ErrorKind::Io, "exists");
        staged.commit(/*replace=*/true);
    }
    EXPECT_FALSE(fs::exists(target / "a.txt")) << "replaced whole";
    EXPECT_EQ(engine::readFile(target / "b.txt"), "two");
    size_t entries = 0;
    for ([[maybe_unused]] const auto &entry : fs::directory_iterator(dir.path()))
        ++entries;
    EXPECT_EQ(entries, 1u) << "no partial or old folder is left beside it";
}
