#pragma once
// Training data as fixed-length rows of token ids with labels, from plain text or JSONL. Torch-free.
//
// Formats (a .jsonl / .json file is JSONL, anything else plain text):
//   plain text                     paragraphs tokenized, eos after each, packed into windows
//   {"text": ...}                  the same, one record a document
//   {"prompt": ..., "completion"}  one row per example; loss on the completion (and its eos) only
//   {"messages": [{"role", "content"}, ...]}
//                                  the model's chat template (tokenizer_config.json) renders it; loss
//                                  on the assistant turns
//   {"input_ids": [...], "labels": [...]}   pre-tokenized; labels optional (-100 = ignored)
// Rows are `width` = sequence length + 1 ids: inputs are ids[0..T), targets ids[1..T] where the
// label is not -100. Examples longer than a row are truncated (and counted); shorter ones padded.

#include "engine/core/jobcontrol.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace engine::tokenize {
class Tokenizer;
}

namespace engine::train {

constexpr int64_t kIgnoreLabel = -100;

enum class DataFormat { Text, JsonlText, PromptCompletion, Messages, TokenIds };

/// "text", "jsonl text", "prompt/completion", "chat messages", "token ids".
const char *dataFormatName(DataFormat format);

/// What to do with a malformed JSONL line.
enum class BadLinePolicy { Stop, Skip };

struct DatasetOptions {
    int64_t sequenceLength = 128;
    BadLinePolicy badLines = BadLinePolicy::Stop;
    std::string chatTemplate;   ///< Jinja source for "messages"; empty = refuse chat data
    std::string bosToken;       ///< for the template's bos_token
    std::string eosToken;       ///< for the template's eos_token
};

struct TokenRows {
    DataFormat format = DataFormat::Text;
    int64_t rows = 0;
    int64_t width = 0;            ///< sequence length + 1
    std::vector<int64_t> ids;     ///< rows * width
    std::vector<int64_t> labels;  ///< rows * (width - 1): the target of position t, or kIgnoreLabel
    int64_t examples = 0;         ///< records read (documents for packed text)
    int64_t tokens = 0;           ///< token ids before packing / truncation
    int64_t truncated = 0;        ///< examples cut at the row length
    int64_t skippedBadLines = 0;  ///< malformed lines skipped (BadLinePolicy::Skip)
    int64_t nothingToLearn = 0;   ///< examples dropped because no label survived (empty completion, truncated away)
    int64_t labelledTokens = 0;   ///< targets that count in the loss
};

/// Whether `path` is read as JSONL.
bool isJsonl(const std::filesystem::path &path);

/// A data file read once: its text (plain text) or its parsed JSONL records, so that the tokenizer's
/// training text and the token rows come from one read and one parse of a large file.
class DatasetFile {
public:
    /// Reads `path`. JSONL lines are parsed under `badLines`: a malformed line stops (Error(InvalidInput)
    /// naming the file and line) or is skipped and counted. Error(Io) when unreadable.
    DatasetFile(const std::filesystem::path &path, BadLinePolicy badLines);
    ~DatasetFile();
    /// The text a tokenizer would be trained on: the file itself (plain text) or every record's text
    /// (text, prompt + completion, message contents) one per paragraph. Empty for pre-tokenized data.
    std::string trainingText() const;

private:
    friend std::optional<TokenRows> loadDataset(const DatasetFile &, const tokenize::Tokenizer *, int64_t,
                                                const DatasetOptions &, const JobControl &);
    struct Content; // dataset.cpp
    std::unique_ptr<Content> m_content;
};

/// DatasetFile(path, BadLinePolicy::Skip).trainingText().
std::string datasetText(const std::filesystem::path &path);

/// Tokenizes a data file into rows. Throws Error(InvalidInput) naming the file and line for a record of
/// no known format, mixed formats, chat data without a template, ids outside the vocabulary, and data
/// that gives no row with anything to learn. Returns std::nullopt when cancelled. (options.badLines
/// applied when the file was read.)
std::optional<TokenRows> loadDataset(const DatasetFile &file, const tokenize::Tokenizer *tokenizer,
                                     int64_t vocabSize, const DatasetOptions &options, const JobControl &control);

/// Reads `path` (DatasetFile with options.badLines) and tokenizes it as above.
std::optional<TokenRows> loadDataset(const std::filesystem::path &path, const tokenize::Tokenizer *tokenizer,
                                     int64_t vocabSize, const DatasetOptions &options, const JobControl &control);

/// The chat template (and bos/eos token strings) of a model folder's tokenizer_config.json; empty when
/// it has none.
struct ChatTemplateSource {
    std::string source;
    std::string bosToken;
    std::string eosToken;
};
ChatTemplateSource readChatTemplate(const std::filesystem::path &modelFolder);

} // namespace engine::train
