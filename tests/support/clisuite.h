#pragma once
// The shared setting of the CLI test suites: one temporary folder per suite with the XDG folders
// isolated in it, a slice of the demo corpus (corpus.txt) and the tiny model config (tiny/).
//
//   class TrainCliTest : public testing_support::CliSuite<TrainCliTest> {
//   public:
//       static constexpr const char *kName = "traincli";       // the folder's name
//       static constexpr size_t kCorpusBytes = 100'000;
//   };
//   ... dir() / "tiny", db() (dir()/runs.sqlite3)

#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace testing_support {

template <typename Suite> class CliSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = new TempDir(Suite::kName);
        isolateXdgDirs(s_dir->path());
        writeCorpusSlice(s_dir->path() / "corpus.txt", Suite::kCorpusBytes);
        writeTinyConfig(s_dir->path() / "tiny");
    }
    static void TearDownTestSuite()
    {
        delete s_dir;
        s_dir = nullptr;
    }

    static std::filesystem::path dir() { return s_dir->path(); }
    /// The suite's default run database.
    static std::string db() { return (dir() / "runs.sqlite3").string(); }

    inline static TempDir *s_dir = nullptr; ///< one per suite (per Suite type)
};

} // namespace testing_support
