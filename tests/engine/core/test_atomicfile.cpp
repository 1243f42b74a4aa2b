#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

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

namespace {

int filesIn(const fs::path &folder)
{
    int count = 0;
    for ([[maybe_unused]] const auto &entry : fs::directory_iterator(folder))
        ++count;
    return count;
}

} // namespace

// A file written by name (as an image or PDF library writes): published whole, or not at all.
TEST(AtomicFile, AWriterByNameIsPublishedWholeOrNotAtAll)
{
    using testing_support::expectError;
    const TempDir dir("atomic-writer");
    const fs::path file = dir / "plot.svg";
    engine::writeFileAtomically(file, [](const fs::path &temporary) { std::ofstream(temporary) << "<svg/>"; });
    EXPECT_EQ(engine::readFile(file), "<svg/>");

    // A writer that fails: the old file stays, no temporary is left, the error names the file and why.
    auto failing = [&] {
        engine::writeFileAtomically(file, [](const fs::path &temporary) {
            std::ofstream(temporary) << "half";
            throw std::runtime_error("the SVG writer could not start");
        });
    };
    expectError(failing, engine::ErrorKind::Io, "cannot write " + file.string());
    expectError(failing, engine::ErrorKind::Io, "the SVG writer could not start");
    EXPECT_EQ(engine::readFile(file), "<svg/>");
    // A writer that wrote nothing has failed too.
    expectError([&] { engine::writeFileAtomically(file, [](const fs::path &) {}); }, engine::ErrorKind::Io,
                "nothing was written");
    EXPECT_EQ(engine::readFile(file), "<svg/>");
    EXPECT_EQ(filesIn(dir.path()), 1);
}

TEST(AtomicFile, AFileTheUserChoseNeedsItsFolder)
{
    using testing_support::expectError;
    const TempDir dir("atomic-refuse");
    auto write = [](const fs::path &temporary) { std::ofstream(temporary) << "x"; };
    expectError([&] { engine::writeFileAtomically(dir / "missing" / "m.csv", write, engine::MissingFolders::Refuse); },
                engine::ErrorKind::Io, "the folder " + (dir / "missing").string() + " does not exist");
    EXPECT_FALSE(fs::exists(dir / "missing"));
    expectError([&] { engine::writeFileAtomically(dir.path(), write, engine::MissingFolders::Refuse); },
                engine::ErrorKind::Io, "it is a folder");
    // The default makes the run's own folders.
    engine::writeFileAtomically(dir / "made" / "m.csv", write);
    EXPECT_EQ(engine::readFile(dir / "made" / "m.csv"), "x");
}

namespace {

/// The pid of a process that has ended (a child, reaped): no process runs under it now.
pid_t endedPid()
{
    const pid_t child = ::fork();
    if (child == 0)
        ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

void touch(const std::filesystem::path &path, bool folder)
{
    if (folder) {
        std::filesystem::create_directories(path);
        std::ofstream(path / "model.safetensors") << "half";
    } else {
        std::ofstream(path) << "half";
    }
}

} // namespace

// What a killed writer left (its pid runs no more) goes when the same name is written next; a running
// writer's files, and other names' leftovers, stay.
TEST(StagedFolder, RemovesWhatKilledWritersOfTheSameNameLeft)
{
    TempDir dir("leftovers");
    const std::string dead = std::to_string(endedPid());
    const std::string alive = std::to_string(::getppid());
    touch(dir / (".model.partial-" + dead), true);
    touch(dir / (".model.partial-" + dead + ".old"), true);
    touch(dir / (".model.partial-" + alive), true);
    touch(dir / (".adapter.partial-" + dead), true);
    touch(dir / (".config.json.tmp-" + dead + "-12345"), false);
    touch(dir / (".config.json.tmp-" + alive + "-12345"), false);

    {
        engine::StagedFolder staged(dir / "model");
        std::ofstream(staged.path() / "model.safetensors") << "whole";
        staged.commit();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / (".model.partial-" + dead)));
    EXPECT_FALSE(std::filesystem::exists(dir / (".model.partial-" + dead + ".old")));
    EXPECT_TRUE(std::filesystem::exists(dir / (".model.partial-" + alive)));
    EXPECT_TRUE(std::filesystem::exists(dir / (".adapter.partial-" + dead)));

    engine::writeFileAtomically(dir / "config.json", "{}");
    EXPECT_FALSE(std::filesystem::exists(dir / (".config.json.tmp-" + dead + "-12345")));
    EXPECT_TRUE(std::filesystem::exists(dir / (".config.json.tmp-" + alive + "-12345")));
}

// Replacing swaps the folders: the target holds the new files, nothing of the old one stays beside it.
TEST(StagedFolder, ReplacingLeavesTheNewFolderAndNothingElse)
{
    TempDir dir("replace");
    for (const char *version : {"one", "two", "three"}) {
        engine::StagedFolder staged(dir / "adapter");
        std::ofstream(staged.path() / "version") << version;
        staged.commit(/*replace=*/true);
        EXPECT_EQ(engine::readFile(dir / "adapter" / "version"), version);
    }
    int entries = 0;
    for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir.path()))
        ++entries;
    EXPECT_EQ(entries, 1);
}
