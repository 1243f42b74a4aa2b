// `tunebench tokenize`: encodes text with a model's tokenizer (or decodes ids), as Hugging Face
// tokenizers would, for checking what a model sees.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/tokenize/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace app::cli {
namespace {

/// "1,2, 3" or "1 2 3" → ids; throws Error(InvalidInput) naming the bad entry.
std::vector<int> parseIds(const std::string &text)
{
    std::vector<int> ids;
    std::string current;
    auto flush = [&] {
        if (current.empty())
            return;
        size_t used = 0;
        long long value = -1;
        try {
            value = std::stoll(current, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != current.size() || value < 0 || value > INT32_MAX)
            throw engine::invalidInput("--decode: \"" + current + "\" is not a token id (a whole number 0 or more)");
        ids.push_back(static_cast<int>(value));
        current.clear();
    };
    for (const char c : text) {
        if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '[' || c == ']')
            flush();
        else
            current += c;
    }
    flush();
    return ids;
}

class TokenizeCommand : public Command {
public:
    explicit TokenizeCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("tokenize", commandSummary("tokenize"));
        m_command->footer("PATH is a model folder (tokenizer.json preferred, else tokenizer.model), a tokenizer.json\n"
                          "or a SentencePiece tokenizer.model. Ids equal Hugging Face's tokenizer(text)[\"input_ids\"]\n"
                          "with add_special_tokens=False, or =True with --add-special.");
        m_command->add_option("--tokenizer", m_tokenizerPath, "Model folder, tokenizer.json or tokenizer.model")->required();
        auto *text = m_command->add_option("--text", m_text, "Text to encode");
        auto *file = m_command->add_option("--file", m_file, "UTF-8 text file to encode");
        auto *decode = m_command->add_option("--decode", m_decode, "Token ids to decode, e.g. 1,2,3");
        text->excludes(file)->excludes(decode);
        file->excludes(decode);
        m_command->add_flag("--add-special", m_addSpecial,
                            "Add special tokens (e.g. bos) as add_special_tokens=True does");
        m_command->add_flag("--skip-special", m_skipSpecial, "With --decode: leave special tokens out of the text");
        m_command->add_flag("--json", m_json, "Print JSON: {\"ids\": [...]} (or {\"text\": ...} with --decode)");
        m_textGiven = text;
        m_fileGiven = file;
        m_decodeGiven = decode;
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        if (!*m_textGiven && !*m_fileGiven && !*m_decodeGiven) {
            std::fprintf(stderr, "tunebench: tokenize needs --text, --file or --decode (see --help)\n");
            return ExitUsage;
        }
        try {
            const auto tokenizer = engine::tokenize::loadTokenizer(m_tokenizerPath);
            if (*m_decodeGiven) {
                const std::string text = tokenizer->decode(parseIds(m_decode), m_skipSpecial);
                if (m_json)
                    std::printf("%s\n", nlohmann::json{{"text", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
                else
                    std::printf("%s\n", text.c_str());
                return ExitOk;
            }
            std::string text = m_text;
            if (*m_fileGiven) {
                std::error_code ec;
                if (!std::filesystem::is_regular_file(m_file, ec))
                    throw engine::ioError("text file " + m_file + " does not exist or is not a file");
                text = engine::readFile(m_file);
            }
            const std::vector<int> ids = tokenizer->encode(text, m_addSpecial);
            if (m_json) {
                std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
            } else {
                std::string line;
                for (size_t i = 0; i < ids.size(); ++i)
                    line += (i ? " " : "") + std::to_string(ids[i]);
                std::printf("%s\n%zu tokens (%s)\n", line.c_str(), ids.size(), tokenizer->description().c_str());
            }
            return ExitOk;
        } catch (const engine::Error &e) {
            std::fprintf(stderr, "tunebench: %s\n", e.what());
            return ExitFailed;
        }
    }

private:
    CLI::App *m_command = nullptr;
    CLI::Option *m_textGiven = nullptr;
    CLI::Option *m_fileGiven = nullptr;
    CLI::Option *m_decodeGiven = nullptr;
    std::string m_tokenizerPath;
    std::string m_text;
    std::string m_file;
    std::string m_decode;
    bool m_addSpecial = false;
    bool m_skipSpecial = false;
    bool m_json = false;
};

} // namespace

std::unique_ptr<Command> makeTokenizeCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<TokenizeCommand>(app);
}

} // namespace app::cli
