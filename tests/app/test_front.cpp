// The front executable (`tunebench`, app/front.cpp): it links no libtorch, answers --help,
// --version, runs, tokenize and plan itself, opens the GUI through tunebench-gui (no libtorch until
// its window is up) and hands every other command to tunebench-full.

#include "support/cliprocess.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string commandOutput(const std::string &command)
{
    std::string out;
    FILE *pipe = ::popen(command.c_str(), "r");
    if (!pipe)
        return out;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
        out.append(buffer, n);
    ::pclose(pipe);
    return out;
}

std::string neededEntries(const std::string &binary) { return commandOutput("readelf -d '" + binary + "'"); }

/// `text` with every occurrence of `binary` (CLI11's "Usage: BINARY ...") replaced by "tunebench".
std::string usageless(std::string text, const std::string &binary)
{
    for (size_t at = text.find(binary); at != std::string::npos; at = text.find(binary, at))
        text.replace(at, binary.size(), "tunebench");
    return text;
}

class FrontTest : public ::testing::Test {
protected:
    void SetUp() override { testing_support::isolateXdgDirs(m_dir.path()); }

    testing_support::ProcessResult front(const std::vector<std::string> &args, const std::string &tag)
    {
        return testing_support::runProcess(TUNEBENCH_CLI, args, m_dir.path(), tag);
    }
    testing_support::ProcessResult full(const std::vector<std::string> &args, const std::string &tag)
    {
        return testing_support::runProcess(TUNEBENCH_CLI_FULL, args, m_dir.path(), tag);
    }

    testing_support::TempDir m_dir{"front"};
};

TEST_F(FrontTest, LinksNoLibtorchWhileTheFullBinaryDoes)
{
    const std::string frontNeeded = neededEntries(TUNEBENCH_CLI);
    const std::string fullNeeded = neededEntries(TUNEBENCH_CLI_FULL);
    ASSERT_NE(frontNeeded.find("NEEDED"), std::string::npos) << "readelf printed nothing for " << TUNEBENCH_CLI;
    EXPECT_EQ(frontNeeded.find("libtorch"), std::string::npos) << frontNeeded;
    EXPECT_EQ(frontNeeded.find("libc10"), std::string::npos) << frontNeeded;
    EXPECT_NE(fullNeeded.find("libtorch"), std::string::npos) << fullNeeded;
}

TEST_F(FrontTest, VersionAndHelpAreTheFullBinarys)
{
    const auto frontVersion = front({"--version"}, "fv");
    const auto fullVersion = full({"--version"}, "v");
    EXPECT_EQ(frontVersion.exitCode, 0);
    EXPECT_NE(frontVersion.out.find("libtorch"), std::string::npos) << frontVersion.out;
    EXPECT_EQ(frontVersion.out, fullVersion.out);

    const auto frontHelp = front({"--help"}, "fh");
    const auto fullHelp = full({"--help"}, "h");
    EXPECT_EQ(frontHelp.exitCode, 0);
    for (const char *command : {"train", "runs", "tokenize", "score", "generate", "doctor", "plan", "inspect", "export", "launch"})
        EXPECT_NE(frontHelp.out.find(std::string("  ") + command + " "), std::string::npos) << command << "\n" << frontHelp.out;
    EXPECT_EQ(usageless(frontHelp.out, TUNEBENCH_CLI), usageless(fullHelp.out, TUNEBENCH_CLI_FULL));
}

TEST_F(FrontTest, TorchCommandsAndErrorsComeFromTheFullBinary)
{
    // train --help is tunebench-full's own (the front knows no train options).
    const auto frontTrain = front({"train", "--help"}, "ft");
    EXPECT_EQ(frontTrain.exitCode, 0);
    EXPECT_NE(frontTrain.out.find("--lora-r"), std::string::npos) << frontTrain.out;
    // The front passes its argv on unchanged, so the usage line names the front.
    EXPECT_EQ(usageless(frontTrain.out, TUNEBENCH_CLI), usageless(full({"train", "--help"}, "t").out, TUNEBENCH_CLI_FULL));
    // A global option before the command does not hide it.
    const auto withDb = front({"--db", (m_dir.path() / "x.sqlite3").string(), "train", "--steps", "zero"}, "fdb");
    EXPECT_NE(withDb.exitCode, 0) << withDb.err;
    EXPECT_NE(withDb.err.find("--steps"), std::string::npos) << withDb.err;
    // The front's own commands parse as tunebench-full's do: the same usage error, the same status.
    const auto plan = front({"plan", "--no-such-flag"}, "fp");
    const auto fullPlan = full({"plan", "--no-such-flag"}, "p");
    EXPECT_NE(plan.exitCode, 0);
    EXPECT_FALSE(plan.err.empty());
    EXPECT_EQ(plan.exitCode, fullPlan.exitCode);
    EXPECT_EQ(plan.err, fullPlan.err);
}

TEST_F(FrontTest, AMissingFullBinaryIsOneClearError)
{
    const fs::path lonely = m_dir.path() / "bin" / "tunebench";
    fs::create_directories(lonely.parent_path());
    fs::copy_file(TUNEBENCH_CLI, lonely);
    const auto version = testing_support::runProcess(lonely.string(), {"--version"}, m_dir.path(), "lv");
    EXPECT_EQ(version.exitCode, 0) << "the front answers --version alone";
    const auto train = testing_support::runProcess(lonely.string(), {"train", "--help"}, m_dir.path(), "lt");
    EXPECT_EQ(train.exitCode, 1);
    EXPECT_NE(train.err.find("cannot run"), std::string::npos) << train.err;
    EXPECT_NE(train.err.find("tunebench-full"), std::string::npos) << train.err;
}

#ifdef TUNEBENCH_GUI_BINARY
TEST_F(FrontTest, TheGuiLinksNoLibtorchAndItsEngineModuleExportsOneSymbol)
{
    const std::string guiNeeded = neededEntries(TUNEBENCH_GUI_BINARY);
    ASSERT_NE(guiNeeded.find("NEEDED"), std::string::npos) << "readelf printed nothing for " << TUNEBENCH_GUI_BINARY;
    EXPECT_NE(guiNeeded.find("libQt6Widgets"), std::string::npos) << guiNeeded;
    EXPECT_EQ(guiNeeded.find("libtorch"), std::string::npos) << guiNeeded;
    EXPECT_EQ(guiNeeded.find("libc10"), std::string::npos) << guiNeeded;
    EXPECT_NE(neededEntries(TUNEBENCH_ENGINE_MODULE_FILE).find("libtorch"), std::string::npos);
    // Nor any torch symbol: a torch type's typeinfo that libtorch 1.13 lets the compiler emit inline
    // (catching c10::Error) is an undefined reference with libtorch 2.x (Debian 13).
    for (const std::string &binary : {std::string(TUNEBENCH_GUI_BINARY), std::string(TUNEBENCH_CLI)}) {
        const std::string symbols = commandOutput("nm -C '" + binary + "' | grep -E ' (c10|at|torch)::' | head -n 5");
        EXPECT_EQ(symbols, "") << binary;
    }
    // The engine parts linked into the module stay inside it: only its entry point is exported.
    const std::string exported =
        commandOutput("nm -D --defined-only -C '" + std::string(TUNEBENCH_ENGINE_MODULE_FILE) + "'");
    EXPECT_NE(exported.find("tunebench_engine_jobs"), std::string::npos) << exported;
    EXPECT_EQ(exported.find("engine::"), std::string::npos) << exported;
}

TEST_F(FrontTest, TheGuiWindowIsUpBeforeLibtorchLoadsAndTheEngineThenLoads)
{
    // runProcess clears the display variables; env sets the offscreen platform and the start-up probe
    // (the window prints a line after its first paint, another when the engine module has loaded, and quits).
    const auto gui = testing_support::runProcess(
        "/usr/bin/env", {"QT_QPA_PLATFORM=offscreen", "TUNEBENCH_STARTUP_PROBE=1", TUNEBENCH_CLI}, m_dir.path(), "gui");
    EXPECT_EQ(gui.exitCode, 0) << gui.err;
    EXPECT_EQ(gui.out, "window shown (libtorch not loaded)\nengine loaded\n") << gui.err;

    // A missing module: the window still opens, and the failure is one line naming the file.
    const auto broken = testing_support::runProcess(
        "/usr/bin/env",
        {"QT_QPA_PLATFORM=offscreen", "TUNEBENCH_STARTUP_PROBE=1", "TUNEBENCH_ENGINE_MODULE=/nonexistent/libengine.so",
         TUNEBENCH_CLI},
        m_dir.path(), "broken");
    EXPECT_EQ(broken.exitCode, 0) << broken.err;
    EXPECT_NE(broken.out.find("window shown (libtorch not loaded)\nengine failed: cannot load the engine "
                              "(/nonexistent/libengine.so)"),
              std::string::npos)
        << broken.out;
}
#endif

} // namespace
