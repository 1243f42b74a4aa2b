#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

TEST(Settings, MissingFileGivesDefaults)
{
    const engine::Settings s = engine::loadSettings("/nonexistent/tunebench/settings.json");
    EXPECT_TRUE(s.storePath.empty());
    EXPECT_EQ(s.threads, 0);
    EXPECT_EQ(s.effectiveThreads(), engine::hardwareThreads());
    EXPECT_EQ(s.effectiveStorePath(), engine::defaultStorePath());
}

TEST(Settings, RoundTrip)
{
    const fs::path file = fs::temp_directory_path() / ("tunebench-settings-" + std::to_string(::getpid()) + ".json");
    engine::Settings s;
    s.storePath = "/tmp/somewhere/runs.sqlite3";
    s.threads = 3;
    engine::saveSettings(s, file);
    const engine::Settings back = engine::loadSettings(file);
    EXPECT_EQ(back.storePath, s.storePath);
    EXPECT_EQ(back.threads, 3);
    EXPECT_EQ(back.effectiveStorePath(), fs::path(s.storePath));
    fs::remove(file);
}

TEST(Settings, CorruptFileNamesFileAndField)
{
    const fs::path file = fs::temp_directory_path() / ("tunebench-settings-bad-" + std::to_string(::getpid()) + ".json");
    engine::writeFileAtomically(file, "{\"threads\": -2}");
    try {
        engine::loadSettings(file);
        FAIL() << "expected an error";
    } catch (const engine::Error &e) {
        EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos);
    }
    engine::writeFileAtomically(file, "{not json");
    EXPECT_THROW(engine::loadSettings(file), engine::Error);
    fs::remove(file);
}

TEST(Paths, FollowXdgVariables)
{
    ::setenv("XDG_DATA_HOME", "/tmp/xdg-data", 1);
    EXPECT_EQ(engine::dataDir(), fs::path("/tmp/xdg-data/tunebench"));
    EXPECT_EQ(engine::defaultStorePath(), fs::path("/tmp/xdg-data/tunebench/runs.sqlite3"));
    ::setenv("XDG_DATA_HOME", "relative/not/allowed", 1);
    EXPECT_NE(engine::dataDir(), fs::path("relative/not/allowed/tunebench"));
    ::unsetenv("XDG_DATA_HOME");
}

TEST(Paths, DemoCorpusIsBundled)
{
    EXPECT_TRUE(fs::exists(engine::demoCorpusPath())) << engine::demoCorpusPath();
}
