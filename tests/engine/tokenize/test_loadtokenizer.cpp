// loadTokenizer's choice of file, and SentencePiece behind the Tokenizer interface.

#include "engine/core/atomicfile.h"
#include "engine/tokenize/sentencepiecetokenizer.h"
#include "engine/tokenize/tokenizer.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using engine::tokenize::loadTokenizer;

namespace {

/// A tiny SentencePiece model (bos 1, eos 2), trained once for the suite.
class SentencePieceFolder : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = new testing_support::TempDir("loadtokenizer");
        engine::writeFileAtomically(s_dir->path() / "corpus.txt",
                                    "the cat sat on the mat\nthe dog ate the cat\nhello world\nhello there\n");
        engine::tokenize::SentencePieceTrainOptions options;
        options.vocabSize = 300;
        options.threads = 1;
        fs::create_directories(s_dir->path() / "model");
        engine::tokenize::SentencePieceTokenizer::train(s_dir->path() / "corpus.txt",
                                                        s_dir->path() / "model" / "tokenizer.model", options);
    }
    static void TearDownTestSuite()
    {
        delete s_dir;
        s_dir = nullptr;
    }
    static fs::path model() { return s_dir->path() / "model"; }
    static inline testing_support::TempDir *s_dir = nullptr;
};

} // namespace

TEST_F(SentencePieceFolder, AddsBosLikeLlamaTokenizer)
{
    fs::remove(model() / "tokenizer_config.json");
    const auto tokenizer = loadTokenizer(model());
    EXPECT_NE(tokenizer->description().find("SentencePiece"), std::string::npos);
    const auto plain = tokenizer->encode("hello the cat");
    const auto special = tokenizer->encode("hello the cat", true);
    ASSERT_EQ(special.size(), plain.size() + 1);
    EXPECT_EQ(special.front(), tokenizer->bosId());
    EXPECT_EQ(tokenizer->bosId(), 1);
    EXPECT_EQ(tokenizer->eosId(), 2);
    EXPECT_EQ(tokenizer->decode(plain), "hello the cat");
    EXPECT_EQ(tokenizer->decode(special, true), "hello the cat");
    EXPECT_EQ(tokenizer->decode(special), "<s>hello the cat");
    EXPECT_TRUE(tokenizer->isSpecial(1));
    EXPECT_EQ(tokenizer->tokenToId("<s>"), 1);
    EXPECT_EQ(tokenizer->idToToken(2), "</s>");
}

TEST_F(SentencePieceFolder, ConfigTurnsBosOffAndEosOn)
{
    engine::writeFileAtomically(model() / "tokenizer_config.json", R"({"add_bos_token": false, "add_eos_token": true})");
    const auto tokenizer = loadTokenizer(model() / "tokenizer.model");
    const auto special = tokenizer->encode("the dog", true);
    EXPECT_EQ(special, [&] { auto ids = tokenizer->encode("the dog"); ids.push_back(2); return ids; }());
    fs::remove(model() / "tokenizer_config.json");
}

TEST_F(SentencePieceFolder, FolderPrefersTokenizerJson)
{
    const fs::path both = s_dir->path() / "both";
    fs::create_directories(both);
    fs::copy_file(model() / "tokenizer.model", both / "tokenizer.model", fs::copy_options::overwrite_existing);
    fs::copy_file(fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / "bytelevel" / "tokenizer.json", both / "tokenizer.json",
                  fs::copy_options::overwrite_existing);
    const auto tokenizer = loadTokenizer(both);
    EXPECT_NE(tokenizer->description().find("tokenizer.json"), std::string::npos);
    EXPECT_EQ(tokenizer->vocabSize(), 20);
}

TEST(LoadTokenizer, ConfigFileIsNotATokenizer)
{
    testing_support::expectError(
        [] { loadTokenizer(fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / "bytelevel" / "tokenizer_config.json"); },
        engine::ErrorKind::InvalidInput, "tokenizer_config.json holds tokenizer settings");
}
