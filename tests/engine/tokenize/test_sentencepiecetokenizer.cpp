#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/tokenize/sentencepiecetokenizer.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

namespace fs = std::filesystem;
using engine::tokenize::SentencePieceTokenizer;
using engine::tokenize::SentencePieceTrainOptions;
using testing_support::expectError;
using testing_support::TempDir;

namespace {

/// Trains once on the first 200 KB of the demo corpus (about a second), in a folder with a space.
class TrainedTokenizer : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_root.emplace("tokenize");
        s_dir = *s_root / "with space";
        fs::create_directories(s_dir);
        const std::string text = engine::readFile(engine::demoCorpusPath());
        ASSERT_GT(text.size(), 200000u);
        engine::writeFileAtomically(s_dir / "corpus, part 1.txt", text.substr(0, 200000));
        SentencePieceTrainOptions options;
        options.vocabSize = 512;
        SentencePieceTokenizer::train(s_dir / "corpus, part 1.txt", s_dir / "tokenizer.model", options);
    }
    static void TearDownTestSuite() { s_root.reset(); }

    static inline std::optional<TempDir> s_root;
    static inline fs::path s_dir;
};

} // namespace

TEST_F(TrainedTokenizer, WritesOnlyTheModelFile)
{
    EXPECT_TRUE(fs::is_regular_file(s_dir / "tokenizer.model"));
    int entries = 0;
    for ([[maybe_unused]] const auto &entry : fs::directory_iterator(s_dir))
        ++entries;
    EXPECT_EQ(entries, 2) << "expected only the corpus and tokenizer.model (no .vocab, no temporaries)";
}

TEST_F(TrainedTokenizer, RoundTripIsExact)
{
    const auto tokenizer = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    const std::vector<std::string> texts = {
        "Call me Ishmael.",
        "Hello, world! (Really?) \"Yes\" -- 'no'; a:b/c\\d",
        "In 1851, 42 whales weighed 3.14159 tons.",
        "multiple   spaces  between    words",
        "  leading and trailing spaces  ",
        " ",
        "",
        "line one\nline two\n\n\ttabbed\r\n",
        "caf\xc3\xa9 \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\xb3 na\xc3\xafve",
        "<s> and </s> are plain text here, not control tokens",
    };
    for (const auto &text : texts) {
        const auto ids = tokenizer.encode(text);
        EXPECT_EQ(tokenizer.decode(ids), text) << "for [" << text << "]";
        for (const int id : ids) {
            EXPECT_GE(id, 0);
            EXPECT_LT(id, tokenizer.vocabSize());
        }
    }
}

TEST_F(TrainedTokenizer, SpaceMarkInTheInputDecodesAsASpace)
{
    // A known limit shared with LLaMA's tokenizer: U+2581 is SentencePiece's own whitespace mark.
    const auto tokenizer = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("a\xe2\x96\x81" "b")), "a b");
}

TEST_F(TrainedTokenizer, UnseenCharactersUseByteFallbackNotUnk)
{
    const auto tokenizer = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    const std::string text = "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\xb3"; // 日本 🐳: not in Moby-Dick
    const auto ids = tokenizer.encode(text);
    for (const int id : ids)
        EXPECT_NE(id, 0) << "unknown token in the encoding of an unseen character";
    EXPECT_EQ(tokenizer.pieceOf(ids.back()), "<0xB3>");
}

TEST_F(TrainedTokenizer, SpecialIdsAndVocabSize)
{
    const auto tokenizer = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    EXPECT_EQ(tokenizer.pieceOf(0), "<unk>");
    EXPECT_EQ(tokenizer.bosId(), 1);
    EXPECT_EQ(tokenizer.pieceOf(1), "<s>");
    EXPECT_EQ(tokenizer.eosId(), 2);
    EXPECT_EQ(tokenizer.pieceOf(2), "</s>");
    EXPECT_EQ(tokenizer.padId(), -1);
    EXPECT_GT(tokenizer.vocabSize(), 259); // 3 meta pieces + 256 byte pieces + merges
    EXPECT_LE(tokenizer.vocabSize(), 512);
    // Merges were learned: common words take far fewer tokens than bytes.
    const std::string common = "the whale and the ship";
    EXPECT_LT(tokenizer.encode(common).size(), common.size() / 2);
}

TEST_F(TrainedTokenizer, LoadedFileGivesIdenticalEncodings)
{
    const auto first = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    auto second = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    SentencePieceTokenizer moved = std::move(second);
    const std::string text = "It is not down in any map; true places never are.";
    EXPECT_EQ(first.encode(text), moved.encode(text));
    EXPECT_EQ(first.vocabSize(), moved.vocabSize());
}

TEST_F(TrainedTokenizer, OutOfRangeIdsAreRejected)
{
    const auto tokenizer = SentencePieceTokenizer::load(s_dir / "tokenizer.model");
    expectError([&] { tokenizer.decode({5, tokenizer.vocabSize()}); }, engine::ErrorKind::InvalidInput, "token id");
    expectError([&] { tokenizer.pieceOf(-1); }, engine::ErrorKind::InvalidInput, "token id -1");
}

TEST(SentencePieceTokenizer, UnigramTrains)
{
    const TempDir dir("tokenize-unigram");
    const std::string text = engine::readFile(engine::demoCorpusPath());
    engine::writeFileAtomically(dir / "corpus.txt", text.substr(0, 100000));
    SentencePieceTrainOptions options;
    options.vocabSize = 600;
    options.modelType = "unigram";
    SentencePieceTokenizer::train(dir / "corpus.txt", dir / "u.model", options);
    const auto tokenizer = SentencePieceTokenizer::load(dir / "u.model");
    const std::string sample = "Whale ahoy!  \xc3\xa9\n";
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(sample)), sample);
}

TEST(SentencePieceTokenizer, TinyCorpusGivesFewerPiecesThanAsked)
{
    const TempDir dir("tokenize-tiny");
    engine::writeFileAtomically(dir / "tiny.txt", "the cat sat on the mat\nthe dog ate the cat\nhello world\n");
    SentencePieceTrainOptions options;
    options.vocabSize = 2048;
    options.maxSentences = 10; // below SentencePiece's minimum sample of 101 lines: rounded up
    options.threads = 1;
    SentencePieceTokenizer::train(dir / "tiny.txt", dir / "tiny.model", options);
    const auto tokenizer = SentencePieceTokenizer::load(dir / "tiny.model");
    EXPECT_LT(tokenizer.vocabSize(), 2048);
    EXPECT_GT(tokenizer.vocabSize(), 259);
    EXPECT_EQ(tokenizer.decode(tokenizer.encode("the cat, the dog!")), "the cat, the dog!");
}

TEST(SentencePieceTokenizer, TrainingErrorsNameTheCorpus)
{
    const TempDir dir("tokenize-errors");
    SentencePieceTrainOptions options;
    options.vocabSize = 512;
    expectError([&] { SentencePieceTokenizer::train(dir / "missing.txt", dir / "m.model", options); },
                engine::ErrorKind::Io, "missing.txt");
    engine::writeFileAtomically(dir / "empty.txt", "");
    expectError([&] { SentencePieceTokenizer::train(dir / "empty.txt", dir / "m.model", options); },
                engine::ErrorKind::InvalidInput, "empty.txt");
    engine::writeFileAtomically(dir / "blank.txt", "  \n\n\t \r\n");
    expectError([&] { SentencePieceTokenizer::train(dir / "blank.txt", dir / "m.model", options); },
                engine::ErrorKind::InvalidInput, "blank.txt");
    // Too many distinct characters for the vocabulary: SentencePiece's own message comes through.
    std::string manyChars;
    for (char32_t c = 0x4E00; c < 0x4E00 + 400; ++c) {
        manyChars += static_cast<char>(0xE0 | (c >> 12));
        manyChars += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        manyChars += static_cast<char>(0x80 | (c & 0x3F));
    }
    engine::writeFileAtomically(dir / "han.txt", manyChars + "\n");
    expectError([&] { SentencePieceTokenizer::train(dir / "han.txt", dir / "m.model", options); },
                engine::ErrorKind::InvalidInput, "Vocabulary size");
    options.modelType = "wordpiece";
    expectError([&] { SentencePieceTokenizer::train(dir / "han.txt", dir / "m.model", options); },
                engine::ErrorKind::InvalidInput, "wordpiece");
    EXPECT_FALSE(fs::exists(dir / "m.model"));
}

TEST(SentencePieceTokenizer, LoadErrorsNameTheFile)
{
    const TempDir dir("tokenize-load");
    expectError([&] { SentencePieceTokenizer::load(dir / "nothing.model"); }, engine::ErrorKind::Io, "nothing.model");
    engine::writeFileAtomically(dir / "text.model", "this is not a protobuf, just some text\n");
    expectError([&] { SentencePieceTokenizer::load(dir / "text.model"); }, engine::ErrorKind::InvalidInput,
                "text.model");
    engine::writeFileAtomically(dir / "empty.model", "");
    expectError([&] { SentencePieceTokenizer::load(dir / "empty.model"); }, engine::ErrorKind::InvalidInput,
                "empty.model");
}
