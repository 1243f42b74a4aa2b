// `tunebench tokenize`, run as a user would: a child process per command.

#include "engine/core/atomicfile.h"
#include "support/cliprocess.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>


namespace fs = std::filesystem;

namespace {

using testing_support::ProcessResult;

fs::path fixture(const std::string &name) { return fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / name; }

class TokenizeCli : public ::testing::Test {
protected:
    void SetUp() override { m_dir = std::make_unique<testing_support::TempDir>("tokenizecli"); }

    ProcessResult run(const std::vector<std::string> &args)
    {
        return testing_support::runProcess(TUNEBENCH_CLI, args, m_dir->path());
    }

    std::unique_ptr<testing_support::TempDir> m_dir;
};

} // namespace

TEST_F(TokenizeCli, EncodesToJson)
{
    const auto r = run({"tokenize", "--tokenizer", fixture("bytelevel").string(), "--text", "hello world!", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(R"({"ids": [12, 17, 0]})")) << r.out;
}

TEST_F(TokenizeCli, AddSpecialAddsBosLikeHuggingFace)
{
    const auto tokenizerJson = (fixture("spbytefallback") / "tokenizer.json").string();
    const auto plain = run({"tokenize", "--tokenizer", tokenizerJson, "--text", "hi there", "--json"});
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    EXPECT_EQ(nlohmann::json::parse(plain.out)["ids"], nlohmann::json::parse("[266, 269, 270]"));
    const auto special = run({"tokenize", "--tokenizer", tokenizerJson, "--text", "hi there", "--json", "--add-special"});
    ASSERT_EQ(special.exitCode, 0) << special.err;
    EXPECT_EQ(nlohmann::json::parse(special.out)["ids"], nlohmann::json::parse("[1, 266, 269, 270]"));
}

TEST_F(TokenizeCli, ReadableOutputAndFileInput)
{
    engine::writeFileAtomically(m_dir->path() / "in.txt", "hello world!");
    const auto r = run({"tokenize", "--tokenizer", fixture("bytelevel").string(), "--file", (m_dir->path() / "in.txt").string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "12 17 0");
    EXPECT_NE(r.out.find("3 tokens"), std::string::npos) << r.out;
}

TEST_F(TokenizeCli, DecodesIds)
{
    const auto r = run({"tokenize", "--tokenizer", fixture("spbytefallback").string(), "--decode", "1,266,269,270"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "<s> hi there\n");
    const auto skip = run({"tokenize", "--tokenizer", fixture("spbytefallback").string(), "--decode", "1,266,269,270",
                           "--skip-special"});
    EXPECT_EQ(skip.out, "hi there\n");
}

TEST_F(TokenizeCli, BadInputFailsWithOneMessage)
{
    const fs::path dir = m_dir->path();
    engine::writeFileAtomically(dir / "corrupt.json", "{\"model\": [");
    engine::writeFileAtomically(dir / "wordpiece.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--tokenizer", (dir / "nowhere").string(), "--text", "x"}, "nowhere does not exist"},
        {{"--tokenizer", (dir / "corrupt.json").string(), "--text", "x"}, "corrupt.json is not valid JSON"},
        {{"--tokenizer", (dir / "wordpiece.json").string(), "--text", "x"}, "wordpiece.json: field model.type"},
        {{"--tokenizer", fixture("bytelevel").string(), "--file", (dir / "missing.txt").string()}, "missing.txt"},
        {{"--tokenizer", fixture("bytelevel").string(), "--decode", "1,x"}, "\"x\" is not a token id"},
        {{"--tokenizer", fixture("bytelevel").string(), "--decode", "999"}, "token id 999"},
    };
    for (const auto &[args, needle] : cases) {
        std::vector<std::string> full{"tokenize"};
        full.insert(full.end(), args.begin(), args.end());
        const auto r = run(full);
        EXPECT_EQ(r.exitCode, 1) << needle << ": " << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
    const auto none = run({"tokenize", "--tokenizer", fixture("bytelevel").string()});
    EXPECT_EQ(none.exitCode, 2) << none.err;
}
