#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
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
