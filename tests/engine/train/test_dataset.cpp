// Training data formats (engine/train/dataset.h): packed text, prompt/completion with the loss on the
// completion, chat messages through a chat template with the loss on assistant turns, pre-tokenized ids
// with labels, and the bad input each format can bring.

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jobcontrol.h"
#include "engine/tokenize/sentencepiecetokenizer.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/dataset.h"
#include "support/bytelevelfolder.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace fs = std::filesystem;
using engine::ErrorKind;
using engine::train::kIgnoreLabel;
using engine::train::loadDataset;
using engine::train::TokenRows;
using testing_support::expectError;

namespace {

class DatasetTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = new testing_support::TempDir("dataset");
        testing_support::writeCorpusSlice(s_dir->path() / "corpus.txt", 60'000);
        engine::tokenize::SentencePieceTrainOptions options;
        options.vocabSize = 300;
        options.threads = 1;
        engine::tokenize::SentencePieceTokenizer::train(s_dir->path() / "corpus.txt", s_dir->path() / "sp.model", options);
        s_tokenizer = engine::tokenize::loadTokenizer(s_dir->path() / "sp.model").release();
    }
    static void TearDownTestSuite()
    {
        delete s_tokenizer;
        delete s_dir;
    }

    static fs::path write(const std::string &name, const std::string &text)
    {
        const fs::path path = s_dir->path() / name;
        std::ofstream(path) << text;
        return path;
    }

    static TokenRows load(const fs::path &path, int64_t seqLen, engine::train::DatasetOptions options = {})
    {
        options.sequenceLength = seqLen;
        engine::JobControl control;
        return *loadDataset(path, s_tokenizer, 512, options, control);
    }

    static std::vector<int> learned(const TokenRows &rows, int64_t row)
    {
        std::vector<int> ids;
        for (int64_t t = 0; t + 1 < rows.width; ++t) {
            const int64_t label = rows.labels[static_cast<size_t>(row * (rows.width - 1) + t)];
            if (label != kIgnoreLabel)
                ids.push_back(static_cast<int>(label));
        }
        return ids;
    }

    static testing_support::TempDir *s_dir;
    static engine::tokenize::Tokenizer *s_tokenizer;
};

testing_support::TempDir *DatasetTest::s_dir = nullptr;
engine::tokenize::Tokenizer *DatasetTest::s_tokenizer = nullptr;

} // namespace

TEST_F(DatasetTest, PlainTextAndJsonlTextArePackedWithEveryTargetLearned)
{
    const TokenRows text = load(s_dir->path() / "corpus.txt", 32);
    EXPECT_EQ(text.format, engine::train::DataFormat::Text);
    ASSERT_GT(text.rows, 10);
    EXPECT_EQ(text.labelledTokens, text.rows * 32);
    // Targets are the next ids of the same row.
    for (int64_t t = 0; t < 32; ++t)
        EXPECT_EQ(text.labels[static_cast<size_t>(t)], text.ids[static_cast<size_t>(t + 1)]);

    const fs::path jsonl = write("docs.jsonl", "{\"text\": \"Call me Ishmael. Some years ago.\"}\n\n{\"text\": \"Never mind how long precisely.\"}\n");
    const TokenRows docs = load(jsonl, 8);
    EXPECT_EQ(docs.format, engine::train::DataFormat::JsonlText);
    EXPECT_EQ(docs.examples, 2);
    const int64_t expected = static_cast<int64_t>(s_tokenizer->encode("Call me Ishmael. Some years ago.").size()
                                                  + s_tokenizer->encode("Never mind how long precisely.").size() + 2);
    EXPECT_EQ(docs.tokens, expected);
    EXPECT_EQ(docs.rows, expected / 9);
}

TEST_F(DatasetTest, PromptCompletionLearnsTheCompletionAndItsEosOnly)
{
    const fs::path path = write("pc.jsonl", "{\"prompt\": \"Question: who is Ahab?\\nAnswer:\", \"completion\": \" the captain\"}\n"
                                            "{\"prompt\": \"Name the ship.\", \"completion\": \" the Pequod\"}\n");
    const TokenRows rows = load(path, 40);
    EXPECT_EQ(rows.format, engine::train::DataFormat::PromptCompletion);
    ASSERT_EQ(rows.rows, 2);
    EXPECT_EQ(rows.truncated, 0);
    // The example is tokenized whole; what is learned decodes to the completion, then eos.
    const std::string prompt = "Question: who is Ahab?\nAnswer:";
    const std::vector<int> whole = s_tokenizer->encode(prompt + " the captain");
    std::vector<int> got = learned(rows, 0);
    ASSERT_GE(got.size(), 2u);
    EXPECT_EQ(got.back(), s_tokenizer->eosId());
    got.pop_back();
    EXPECT_EQ(s_tokenizer->decode(got, /*skipSpecialTokens=*/true), "the captain");
    EXPECT_TRUE(std::equal(got.begin(), got.end(), whole.end() - static_cast<std::ptrdiff_t>(got.size())))
        << "the completion's tokens are those of the whole text, not of the completion alone";
    // The row starts with bos and the whole example, and is padded after the eos without targets.
    EXPECT_EQ(rows.ids[0], s_tokenizer->bosId());
    for (size_t i = 0; i < whole.size(); ++i)
        EXPECT_EQ(rows.ids[i + 1], whole[i]) << i;
    EXPECT_EQ(learned(rows, 1).size() + got.size() + 1, static_cast<size_t>(rows.labelledTokens));

    // Too long for the row: truncated and counted; a prompt that fills the row leaves nothing to learn.
    const std::string longPrompt(400, 'a');
    const fs::path cut = write("cut.jsonl", "{\"prompt\": \"Hi\", \"completion\": \"" + std::string(300, 'b') + "\"}\n"
                                            "{\"prompt\": \"" + longPrompt + "\", \"completion\": \" x\"}\n"
                                            "{\"prompt\": \"Hi\", \"completion\": \"\"}\n");
    const TokenRows trimmed = load(cut, 16);
    EXPECT_EQ(trimmed.rows, 1);
    EXPECT_EQ(trimmed.truncated, 2);
    EXPECT_EQ(trimmed.nothingToLearn, 2);
    const fs::path none = write("none.jsonl", "{\"prompt\": \"Hi\", \"completion\": \"\"}\n");
    expectError([&] { load(none, 16); }, ErrorKind::InvalidInput, "none of its 1 examples has anything to learn");
}

TEST_F(DatasetTest, ChatMessagesLearnTheAssistantTurnsThroughTheTemplate)
{
    // Words the tiny vocabulary knows; each turn ends with eos_token, which must become the eos id.
    const std::string chatml = "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + ' ' + eos_token }}{% endfor %}"
                               "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}";
    const fs::path path = write("chat.jsonl", nlohmann::json({{"messages", {{{"role", "user"}, {"content", "Who is Ahab?"}},
                                                                           {{"role", "assistant"}, {"content", "The captain."}}}}})
                                                      .dump()
                                                  + "\n");
    engine::train::DatasetOptions options;
    expectError([&] { load(path, 64, options); }, ErrorKind::InvalidInput, "no chat template");
    options.chatTemplate = chatml;
    const TokenRows rows = load(path, 64, options);
    EXPECT_EQ(rows.format, engine::train::DataFormat::Messages);
    ASSERT_EQ(rows.rows, 1);
    // The assistant's text and its end-of-turn (eos), nothing of the user's.
    std::vector<int> got = learned(rows, 0);
    ASSERT_GE(got.size(), 2u);
    EXPECT_EQ(got.back(), s_tokenizer->eosId());
    got.pop_back();
    EXPECT_EQ(s_tokenizer->decode(got, /*skipSpecialTokens=*/true), "The captain. ") << "the text and the space the template writes before eos";
    EXPECT_EQ(rows.ids[0], s_tokenizer->encode("user: Who is Ahab? ")[0]) << "no bos: the template writes none";
}

TEST_F(DatasetTest, ChatMarkersOfATokenizerJsonBecomeTheirSpecialTokenIds)
{
    // A ChatML model whose tokenizer is a tokenizer.json alone (as Qwen2 and Llama 3 ship): the template
    // writes <|im_start|> and <|im_end|> as text, and each must become its one added-token id, never the
    // bytes of its spelling; the assistant's turn is learned up to and including its <|im_end|>.
    const fs::path folder = s_dir->path() / "chatml-model";
    const std::string chatml = engine::readFile(fs::path(TUNEBENCH_TEST_DATA) / "chattemplate" / "chatml.jinja");
    ASSERT_FALSE(chatml.empty());
    testing_support::writeByteLevelTokenizer(folder, {"<|im_start|>", "<|im_end|>"}, "<|im_end|>", chatml);
    const auto tokenizer = engine::tokenize::loadTokenizer(folder);
    ASSERT_EQ(tokenizer->tokenToId("<|im_start|>"), 256);
    ASSERT_EQ(tokenizer->tokenToId("<|im_end|>"), 257);

    const fs::path path = write("chatml.jsonl", nlohmann::json({{"messages", {{{"role", "user"}, {"content", "Who is Ahab?"}},
                                                                             {{"role", "assistant"}, {"content", "The captain."}}}}})
                                                        .dump()
                                                    + "\n");
    engine::train::DatasetOptions options;
    options.sequenceLength = 256;
    options.chatTemplate = engine::train::readChatTemplate(folder).source;
    ASSERT_EQ(options.chatTemplate, chatml);
    engine::JobControl control;
    const TokenRows rows = *loadDataset(path, tokenizer.get(), 258, options, control);
    ASSERT_EQ(rows.rows, 1);
    const std::vector<int64_t> ids(rows.ids.begin(), rows.ids.begin() + rows.width);
    EXPECT_EQ(ids.front(), 256) << "the default system turn opens with <|im_start|>";
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 256), 3) << "system, user and assistant turns";
    // Three turns, each closed by <|im_end|> and a newline; after the last newline only padding follows.
    const auto lastNewline = std::find(ids.rbegin(), ids.rend(), int64_t('\n')).base();
    EXPECT_EQ(std::count(ids.begin(), lastNewline, 257), 3);
    EXPECT_TRUE(std::all_of(lastNewline, ids.end(), [](int64_t id) { return id == 257; })) << "eos padding";
    // No byte of a marker's spelling: '<' and '|' appear nowhere in the conversation's own text.
    EXPECT_EQ(std::count(ids.begin(), ids.end(), int64_t('<')), 0);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), int64_t('|')), 0);

    std::vector<int> got = learned(rows, 0);
    ASSERT_GE(got.size(), 2u);
    EXPECT_EQ(std::count(got.begin(), got.end(), 256), 0) << "the assistant header is the template's, not learned";
    EXPECT_EQ(tokenizer->decode(got), "The captain.<|im_end|>\n") << "the reply, its end-of-turn and the template's newline";
}

TEST_F(DatasetTest, PreTokenizedIdsKeepTheirLabels)
{
    const fs::path path = write("ids.jsonl", "{\"input_ids\": [5, 6, 7, 8, 9], \"labels\": [-100, -100, 7, 8, 9]}\n"
                                             "{\"input_ids\": [10, 11, 12]}\n");
    const TokenRows rows = load(path, 4);
    EXPECT_EQ(rows.format, engine::train::DataFormat::TokenIds);
    ASSERT_EQ(rows.rows, 2);
    EXPECT_EQ(learned(rows, 0), (std::vector<int>{7, 8, 9}));
    EXPECT_EQ(learned(rows, 1), (std::vector<int>{11, 12}));
    EXPECT_EQ(rows.truncated, 0);

    expectError([&] { load(write("big.jsonl", "{\"input_ids\": [1, 9999]}\n"), 4); }, ErrorKind::InvalidInput,
                "big.jsonl line 1: input_ids[1] = 9999 is not a token id below the vocabulary size 512");
    expectError([&] { load(write("lab.jsonl", "{\"input_ids\": [1, 2], \"labels\": [1]}\n"), 4); }, ErrorKind::InvalidInput,
                "as long as input_ids");
}

// Regression: a JSONL line of 200,000 nested brackets crashed the reader (nlohmann::json copies recurse).
TEST_F(DatasetTest, DeeplyNestedLineIsRefusedOrSkipped)
{
    const std::string deep = "{\"text\": " + std::string(200000, '[') + std::string(200000, ']') + "}\n";
    const fs::path path = write("deep.jsonl", deep + "{\"text\": \"Call me Ishmael, and Ishmael it is. Some years ago.\"}\n");
    expectError([&] { load(path, 8); }, ErrorKind::InvalidInput, "deep.jsonl line 1: JSON nests deeper than 256 levels");
    engine::train::DatasetOptions skip;
    skip.badLines = engine::train::BadLinePolicy::Skip;
    EXPECT_EQ(load(path, 8, skip).skippedBadLines, 1);
}

TEST_F(DatasetTest, MalformedLinesNameTheLineOrAreSkippedAndCounted)
{
    const fs::path path = write("bad.jsonl", "{\"text\": \"Call me Ishmael, and Ishmael it is. Some years ago.\"}\n"
                                             "{\"text\": broken\n"
                                             "{\"text\": \"Never mind how long precisely, having little money.\"}\n");
    expectError([&] { load(path, 8); }, ErrorKind::InvalidInput, "bad.jsonl line 2: not valid JSON");
    engine::train::DatasetOptions skip;
    skip.badLines = engine::train::BadLinePolicy::Skip;
    const TokenRows rows = load(path, 8, skip);
    EXPECT_EQ(rows.skippedBadLines, 1);
    EXPECT_EQ(rows.examples, 2);
    expectError([&] { load(write("mixed.jsonl", "{\"text\": \"a b c d e f g h i j k\"}\n{\"prompt\": \"a\", \"completion\": \"b\"}\n"), 4); },
                ErrorKind::InvalidInput, "mixed.jsonl line 2: is prompt/completion but the file began with jsonl text records");
    expectError([&] { load(write("unknown.jsonl", "{\"question\": \"a\"}\n"), 4); }, ErrorKind::InvalidInput,
                "unknown.jsonl line 1: has none of the fields text, prompt + completion, messages, input_ids");
    expectError([&] { load(write("type.jsonl", "{\"prompt\": 3, \"completion\": \"b\"}\n"), 4); }, ErrorKind::InvalidInput,
                "field 'prompt' is not a string");
}
