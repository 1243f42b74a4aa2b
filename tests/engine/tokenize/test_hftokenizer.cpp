// tokenizer.json loading and encoding on small hand-written fixtures (tests/data/tokenize/*), whose
// expected ids were worked out by hand from the merge ranks (see the comments).

#include "engine/core/atomicfile.h"
#include "engine/tokenize/hftokenizer.h"
#include "engine/tokenize/tokenizer.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using engine::ErrorKind;
using engine::tokenize::loadTokenizer;
using testing_support::expectError;

namespace {

fs::path fixture(const std::string &name) { return fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / name; }

using Ids = std::vector<int>;

} // namespace

TEST(HfTokenizer, ByteLevelBpeMergesByRank)
{
    const auto tokenizer = loadTokenizer(fixture("bytelevel"));
    // "hello": h e (rank 0), l l (1), ll o (2), he llo (3) -> "hello"; " world" -> "Ġworld".
    EXPECT_EQ(tokenizer->encode("hello world!"), (Ids{12, 17, 0}));
    EXPECT_EQ(tokenizer->decode({12, 17, 0}), "hello world!");
    EXPECT_EQ(tokenizer->vocabSize(), 20);
    EXPECT_EQ(tokenizer->tokenToId("\xC4\xA0world"), 17);
    EXPECT_EQ(tokenizer->idToToken(12), "hello");
    EXPECT_EQ(tokenizer->tokenToId("nothing"), -1);
}

TEST(HfTokenizer, ByteLevelSpecialTokensAreSplitOutAndSkippable)
{
    const auto tokenizer = loadTokenizer(fixture("bytelevel") / "tokenizer.json");
    const Ids ids = tokenizer->encode("hello<|endoftext|>\n");
    EXPECT_EQ(ids, (Ids{12, 19, 18}));
    EXPECT_EQ(tokenizer->decode(ids), "hello<|endoftext|>\n");
    EXPECT_EQ(tokenizer->decode(ids, true), "hello\n");
    EXPECT_TRUE(tokenizer->isSpecial(19));
    EXPECT_EQ(tokenizer->bosId(), -1);
    EXPECT_EQ(tokenizer->eosId(), 19);
    // The post-processor is ByteLevel: add_special_tokens adds nothing (as for GPT-2).
    EXPECT_EQ(tokenizer->encode("hello", true), (Ids{12}));
}

TEST(HfTokenizer, ByteLevelCharacterOutsideTheVocabularyIsDroppedWithoutUnk)
{
    // HF tokenizers drops characters it cannot encode when the model has no unk_token.
    const auto tokenizer = loadTokenizer(fixture("bytelevel"));
    EXPECT_EQ(tokenizer->encode("hz"), (Ids{3}));
}

TEST(HfTokenizer, SentencePieceStyleMergesListForm)
{
    const auto tokenizer = loadTokenizer(fixture("spbytefallback"));
    // "▁hi▁there": ▁ h (0), ▁h i (1), h e (2), ▁ t (3), ▁t he (4), r e (5) -> ▁hi ▁the re.
    EXPECT_EQ(tokenizer->encode("hi there"), (Ids{266, 269, 270}));
    EXPECT_EQ(tokenizer->encode("hi there", true), (Ids{1, 266, 269, 270}));
    EXPECT_EQ(tokenizer->decode({266, 269, 270}), "hi there");
    EXPECT_EQ(tokenizer->decode({1, 266}), "<s> hi");
    EXPECT_EQ(tokenizer->decode({1, 266}, true), "hi");
    EXPECT_EQ(tokenizer->bosId(), 1);
    EXPECT_EQ(tokenizer->eosId(), 2);
}

TEST(HfTokenizer, SentencePieceStyleByteFallback)
{
    const auto tokenizer = loadTokenizer(fixture("spbytefallback"));
    // 你 = E4 BD A0 is not in the vocabulary: its bytes <0xE4> <0xBD> <0xA0> are ids 3 + byte.
    const Ids ids = tokenizer->encode("hi \xE4\xBD\xA0");
    EXPECT_EQ(ids, (Ids{266, 259, 3 + 0xE4, 3 + 0xBD, 3 + 0xA0}));
    EXPECT_EQ(tokenizer->decode(ids), "hi \xE4\xBD\xA0");
    // An incomplete byte sequence decodes to one U+FFFD per byte, as HF's ByteFallback does.
    EXPECT_EQ(tokenizer->decode({266, 3 + 0xE4, 3 + 0xBD}), "hi\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(HfTokenizer, AddedTokenBehaviours)
{
    const auto tokenizer = loadTokenizer(fixture("addedtokens"));
    // "Hi " | <|user|> (lstrip/rstrip swallow the spaces) | "ABC abcd xyz ab", lowercased; then the
    // normalized single-word token "abc" matches "abc" but not inside "abcd". ignore_merges takes
    // "Ġab" whole from the vocabulary; "Ġxyz" has three unknown characters fused into one <unk>.
    const std::string text = "Hi <|user|>  ABC abcd xyz ab";
    const Ids plain{9, 12, 13, 4, 5, 3, 10, 4, 0, 15};
    EXPECT_EQ(tokenizer->encode(text), plain);
    Ids withEos = plain;
    withEos.push_back(14); // add_eos_token: true in tokenizer_config.json
    EXPECT_EQ(tokenizer->encode(text, true), withEos);
    EXPECT_EQ(tokenizer->decode(plain), "hi<|user|>abc abcd <unk> ab");
    EXPECT_EQ(tokenizer->decode(withEos, true), "hiabc abcd <unk> ab");
    EXPECT_FALSE(tokenizer->isSpecial(13));
    EXPECT_EQ(tokenizer->eosId(), 14);
}

TEST(HfTokenizer, EmptyAndWhitespaceText)
{
    const auto tokenizer = loadTokenizer(fixture("spbytefallback"));
    EXPECT_TRUE(tokenizer->encode("").empty());
    EXPECT_EQ(tokenizer->encode("", true), (Ids{1}));
    EXPECT_EQ(tokenizer->decode({}), "");
}

TEST(HfTokenizer, ErrorsNameTheFileAndTheField)
{
    const testing_support::TempDir dir("hftokenizer-errors");
    expectError([&] { loadTokenizer(dir / "missing"); }, ErrorKind::Io, "missing");
    expectError([&] { loadTokenizer(dir.path()); }, ErrorKind::Io, "neither tokenizer.json nor tokenizer.model");

    engine::writeFileAtomically(dir / "corrupt.json", "{\"model\": {\"type\": \"BPE\",");
    expectError([&] { loadTokenizer(dir / "corrupt.json"); }, ErrorKind::InvalidInput, "corrupt.json is not valid JSON");

    engine::writeFileAtomically(dir / "wordpiece.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
    expectError([&] { loadTokenizer(dir / "wordpiece.json"); }, ErrorKind::InvalidInput,
                "wordpiece.json: field model.type: \"WordPiece\"");
    engine::writeFileAtomically(dir / "unigram.json", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
    expectError([&] { loadTokenizer(dir / "unigram.json"); }, ErrorKind::InvalidInput, "\"Unigram\" models are not supported");

    engine::writeFileAtomically(dir / "badmerge.json",
                                R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})");
    expectError([&] { loadTokenizer(dir / "badmerge.json"); }, ErrorKind::InvalidInput,
                "badmerge.json: field model.merges[0]");
    engine::writeFileAtomically(dir / "badregex.json",
                                R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                                    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"}})");
    expectError([&] { loadTokenizer(dir / "badregex.json"); }, ErrorKind::InvalidInput,
                "badregex.json: field pre_tokenizer.pattern.Regex");
    engine::writeFileAtomically(dir / "badnorm.json",
                                R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                                    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Precompiled"}]}})");
    expectError([&] { loadTokenizer(dir / "badnorm.json"); }, ErrorKind::InvalidInput,
                "normalizer.normalizers[0].type: normalizer \"Precompiled\" is not supported");

    const auto tokenizer = loadTokenizer(fixture("bytelevel"));
    expectError([&] { tokenizer->decode({12, 99}); }, ErrorKind::InvalidInput, "token id 99");
    expectError([&] { tokenizer->encode("bad \xFF utf-8"); }, ErrorKind::InvalidInput, "not valid UTF-8 (at byte 4)");
}

TEST(HfTokenizer, NormalizersFromIcu)
{
    const testing_support::TempDir dir("hftokenizer-nfkc");
    // Vocabulary of single characters; NFKC turns "ﬁ" into "fi" and "①" into "1".
    engine::writeFileAtomically(dir / "tokenizer.json", R"({
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"},
        "decoder": null,
        "model": {"type": "BPE", "vocab": {"f": 0, "i": 1, "1": 2, "fi": 3, "é": 4}, "merges": [["f", "i"]]}})");
    const auto tokenizer = loadTokenizer(dir.path());
    EXPECT_EQ(tokenizer->encode("\xEF\xAC\x81 \xE2\x91\xA0 FI e\xCC\x81"), (Ids{3, 2, 3, 4}));
    EXPECT_EQ(tokenizer->decode({3, 2}), "fi 1"); // no decoder: tokens joined by spaces
}
