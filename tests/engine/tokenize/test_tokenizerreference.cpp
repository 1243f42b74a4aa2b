// Encodings and decodings of real tokenizer.json files compared with the reference implementation
// (transformers.js' tokenizers, npm @lenml/tokenizers 3.7.2) over tests/data/tokenize/multilingual.txt.
// The reference's output is kept in tests/data/tokenize/reference/<tokenizer>/expected*.json with each
// tokenizer cut down to what the corpus reaches (README.md there: the sources, and make_reference.py,
// which regenerates them with Node.js and checks that the cut changes nothing); the test needs neither
// Node.js nor the network, so it always runs.

#include "engine/core/atomicfile.h"
#include "engine/tokenize/hftokenizer.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kReference = fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / "reference";

/// The corpus: one text per line with \n \r \t \\ escapes, plus the whole file as one text.
std::vector<std::string> corpus()
{
    const std::string file = engine::readFile(fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / "multilingual.txt");
    std::vector<std::string> texts;
    std::istringstream lines(file);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.starts_with("# "))
            continue;
        std::string text;
        for (size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
                const char c = line[++i];
                text += c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
            } else {
                text += line[i];
            }
        }
        texts.push_back(text);
    }
    texts.push_back(file);
    return texts;
}

std::string idsText(const std::vector<int> &ids)
{
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i)
            s += ' ';
        s += std::to_string(ids[i]);
    }
    return s;
}

/// Compares our tokenizer with the reference's stored output on the corpus: `name` is the folder under
/// tests/data/tokenize/reference, `expectedFile` the reference's output there, `postProcessor` a file whose
/// JSON replaces the tokenizer's post_processor before loading (as make_reference.py did for the reference).
void compareWithReference(const std::string &name, const std::string &expectedFile = "expected.json",
                          const fs::path &postProcessor = {})
{
    const fs::path folder = kReference / name;
    fs::path tokenizerJson = folder / "tokenizer.json";
    const fs::path configJson = folder / "tokenizer_config.json";
    ASSERT_TRUE(fs::exists(tokenizerJson)) << tokenizerJson;

    const testing_support::TempDir dir("tokenizer-reference-" + name);
    if (!postProcessor.empty()) {
        json root = json::parse(engine::readFile(tokenizerJson));
        root["post_processor"] = json::parse(engine::readFile(postProcessor));
        tokenizerJson = dir / "tokenizer.json";
        engine::writeFileAtomically(tokenizerJson, root.dump());
    }

    const std::vector<std::string> texts = corpus();
    const json results = json::parse(engine::readFile(folder / expectedFile)).at("results");
    ASSERT_EQ(results.size(), texts.size()) << "the corpus changed since " << expectedFile
                                            << " was made: run tests/data/tokenize/reference/make_reference.py";

    const auto tokenizer = engine::tokenize::HfTokenizer::load(tokenizerJson, configJson);
    int matched = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const json &expected = results[i];
        const auto plain = tokenizer->encode(texts[i], false);
        const auto special = tokenizer->encode(texts[i], true);
        const std::string decoded = tokenizer->decode(plain, false);
        const std::string decodedSkip = tokenizer->decode(special, true);
        const bool ok = plain == expected["plain"].get<std::vector<int>>() &&
                        special == expected["special"].get<std::vector<int>>() &&
                        decoded == expected["decoded"].get<std::string>() &&
                        decodedSkip == expected["decodedSkip"].get<std::string>();
        if (ok) {
            ++matched;
            continue;
        }
        const std::string shown = texts[i].size() > 200 ? texts[i].substr(0, 200) + "..." : texts[i];
        ADD_FAILURE() << name << " text " << i << " [" << shown << "]\n"
                      << "  encode:        " << idsText(plain) << "\n  reference:     "
                      << idsText(expected["plain"].get<std::vector<int>>()) << "\n  encode+special: " << idsText(special)
                      << "\n  reference:     " << idsText(expected["special"].get<std::vector<int>>())
                      << "\n  decode:    [" << decoded << "]\n  reference: [" << expected["decoded"].get<std::string>()
                      << "]\n  decode(skip special): [" << decodedSkip << "]\n  reference:            ["
                      << expected["decodedSkip"].get<std::string>() << "]";
    }
    std::printf("%s: %d of %zu texts match the reference (encode, encode with special tokens, decode)\n",
                name.c_str(), matched, texts.size());
    EXPECT_EQ(matched, static_cast<int>(texts.size()));
}

} // namespace

TEST(TokenizerReference, Llama3ByteLevel) { compareWithReference("llama3"); }

// Meta's current Llama 3 tokenizer.json adds <|begin_of_text|> with a TemplateProcessing.
TEST(TokenizerReference, Llama3WithBosTemplate)
{
    compareWithReference("llama3", "expected-bos.json", kReference / "llama3" / "bos-post-processor.json");
}

TEST(TokenizerReference, Qwen3ByteLevelNfc) { compareWithReference("qwen3"); }

TEST(TokenizerReference, Llama2StyleByteFallback) { compareWithReference("llama2"); }

// Gemma 3: SentencePiece-style BPE without a prefix space, byte fallback, <start_of_turn> among
// thousands of added tokens.
TEST(TokenizerReference, Gemma3ByteFallbackNoPrefixSpace) { compareWithReference("gemma3"); }
