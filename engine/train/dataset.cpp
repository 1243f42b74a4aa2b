#include "engine/train/dataset.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/tokenize/chattemplate.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/textcorpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>

namespace engine::train {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

// Placeholders the chat template writes for bos/eos: they become the ids, not their spelling.
const std::string kBosMark = "\x01tunebench-bos\x01";
const std::string kEosMark = "\x01tunebench-eos\x01";

/// One example before it becomes a row: ids and whether each id is a target.
struct Example {
    std::vector<int64_t> ids;
    std::vector<bool> target;
    std::vector<int64_t> labelOf; ///< the target's label (pre-tokenized data may label another id); empty = ids
};

DataFormat formatOf(const json &record)
{
    if (record.contains("input_ids"))
        return DataFormat::TokenIds;
    if (record.contains("messages"))
        return DataFormat::Messages;
    if (record.contains("prompt") || record.contains("completion"))
        return DataFormat::PromptCompletion;
    if (record.contains("text"))
        return DataFormat::JsonlText;
    throw invalidInput("has none of the fields text, prompt + completion, messages, input_ids");
}

std::string stringField(const json &record, const char *key)
{
    const auto it = record.find(key);
    if (it == record.end())
        throw invalidInput(std::string("has no field '") + key + "'");
    if (!it->is_string())
        throw invalidInput(std::string("field '") + key + "' is not a string");
    return it->get<std::string>();
}

struct Record {
    size_t line = 0;
    json value;
};

/// The records of a JSONL file; malformed lines stop (naming the line) or are skipped and counted.
std::vector<Record> readJsonl(const fs::path &path, BadLinePolicy policy, int64_t &skipped)
{
    const std::string text = readFile(path);
    std::vector<Record> records;
    size_t begin = 0;
    size_t line = 0;
    while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos)
            end = text.size();
        ++line;
        const std::string_view content = std::string_view(text).substr(begin, end - begin);
        begin = end + 1;
        if (content.find_first_not_of(" \t\r") == std::string_view::npos)
            continue;
        // Too deep a line counts as malformed (copying it later would recurse once per level).
        const bool tooDeep = jsonNesting(content) > kMaxJsonNesting;
        json value = tooDeep ? json(json::value_t::discarded) : json::parse(content, nullptr, false);
        if (value.is_discarded() || !value.is_object()) {
            if (policy == BadLinePolicy::Skip) {
                ++skipped;
                continue;
            }
            const std::string what = tooDeep ? "JSON nests deeper than " + std::to_string(kMaxJsonNesting) + " levels"
                                     : value.is_discarded() ? "not valid JSON"
                                                            : "not a JSON object";
            throw invalidInput(path.string() + " line " + std::to_string(line) + ": " + what
                               + " (skip such lines with --bad-lines skip)");
        }
        records.push_back({line, std::move(value)});
    }
    return records;
}

std::vector<int64_t> encode(const tokenize::Tokenizer &tokenizer, const std::string &text)
{
    std::vector<int64_t> ids;
    for (int id : tokenizer.encode(text))
        ids.push_back(id);
    return ids;
}

/// Text whose characters in `targets` ([begin, end) ranges) are learned. The bos/eos marks become their ids;
/// each mark-free chunk is tokenized whole (as a tokenizer sees the text), and a boundary between learned and
/// unlearned text falls where the chunk's tokens stop agreeing with those of the text before the boundary,
/// so that no artificial word start is inserted at the boundary.
void appendText(Example &example, const std::string &text, const std::vector<std::pair<size_t, size_t>> &targets,
                const tokenize::Tokenizer &tokenizer)
{
    auto learnedAt = [&](size_t pos) {
        for (const auto &[begin, end] : targets) {
            if (pos >= begin && pos < end)
                return true;
        }
        return false;
    };
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t bos = text.find(kBosMark, pos);
        const size_t eos = text.find(kEosMark, pos);
        const size_t mark = std::min(bos, eos);
        const size_t chunkEnd = mark == std::string::npos ? text.size() : mark;
        if (chunkEnd > pos) {
            const std::string chunk = text.substr(pos, chunkEnd - pos);
            const std::vector<int64_t> ids = encode(tokenizer, chunk);
            // Boundaries inside the chunk where learning switches on or off.
            std::vector<size_t> cuts;
            for (size_t c = pos + 1; c < chunkEnd; ++c) {
                if (learnedAt(c) != learnedAt(c - 1))
                    cuts.push_back(c);
            }
            size_t from = 0;
            size_t segmentStart = pos;
            for (size_t c = 0; c <= cuts.size(); ++c) {
                size_t to = ids.size();
                if (c < cuts.size()) {
                    const std::vector<int64_t> prefix = encode(tokenizer, text.substr(pos, cuts[c] - pos));
                    to = from;
                    while (to < std::min(prefix.size(), ids.size()) && prefix[to] == ids[to])
                        ++to;
                }
                const bool learned = learnedAt(segmentStart);
                for (size_t i = from; i < to; ++i) {
                    example.ids.push_back(ids[i]);
                    example.target.push_back(learned);
                }
                from = to;
                if (c < cuts.size())
                    segmentStart = cuts[c];
            }
        }
        if (mark == std::string::npos)
            break;
        const int id = mark == bos ? tokenizer.bosId() : tokenizer.eosId();
        if (id >= 0) {
            example.ids.push_back(id);
            example.target.push_back(learnedAt(mark));
        }
        pos = mark + (mark == bos ? kBosMark.size() : kEosMark.size());
    }
}

void pack(const std::vector<int64_t> &stream, int64_t width, TokenRows &rows)
{
    rows.rows = static_cast<int64_t>(stream.size()) / width;
    rows.ids.assign(stream.begin(), stream.begin() + rows.rows * width);
    rows.labels.resize(static_cast<size_t>(rows.rows * (width - 1)));
    for (int64_t r = 0; r < rows.rows; ++r) {
        for (int64_t t = 0; t + 1 < width; ++t)
            rows.labels[static_cast<size_t>(r * (width - 1) + t)] = rows.ids[static_cast<size_t>(r * width + t + 1)];
    }
    rows.labelledTokens = rows.rows * (width - 1);
}

void addRow(const Example &example, int64_t width, int64_t padId, TokenRows &rows)
{
    const auto length = static_cast<int64_t>(example.ids.size());
    if (length > width)
        ++rows.truncated;
    const int64_t kept = std::min(length, width);
    int64_t labelled = 0;
    for (int64_t j = 1; j < kept; ++j)
        labelled += example.target[static_cast<size_t>(j)] ? 1 : 0;
    if (labelled == 0) {
        ++rows.nothingToLearn;
        return;
    }
    for (int64_t j = 0; j < width; ++j)
        rows.ids.push_back(j < kept ? example.ids[static_cast<size_t>(j)] : padId);
    for (int64_t t = 0; t + 1 < width; ++t) {
        const int64_t j = t + 1;
        const bool target = j < kept && example.target[static_cast<size_t>(j)];
        const int64_t label = example.labelOf.empty() ? example.ids[static_cast<size_t>(std::min(j, kept - 1))]
                                                      : example.labelOf[static_cast<size_t>(std::min(j, kept - 1))];
        rows.labels.push_back(target ? label : kIgnoreLabel);
    }
    rows.labelledTokens += labelled;
    ++rows.rows;
}

} // namespace

const char *dataFormatName(DataFormat format)
{
    switch (format) {
    case DataFormat::Text:
        return "text";
    case DataFormat::JsonlText:
        return "jsonl text";
    case DataFormat::PromptCompletion:
        return "prompt/completion";
    case DataFormat::Messages:
        return "chat messages";
    case DataFormat::TokenIds:
        break;
    }
    return "token ids";
}

bool isJsonl(const fs::path &path)
{
    const std::string ext = path.extension().string();
    return ext == ".jsonl" || ext == ".json" || ext == ".ndjson";
}

struct DatasetFile::Content {
    fs::path path;
    bool jsonl = false;
    std::string text;             ///< plain text
    std::vector<Record> records;  ///< JSONL
    int64_t skippedBadLines = 0;
};

DatasetFile::DatasetFile(const fs::path &path, BadLinePolicy badLines) : m_content(std::make_unique<Content>())
{
    m_content->path = path;
    m_content->jsonl = isJsonl(path);
    if (m_content->jsonl)
        m_content->records = readJsonl(path, badLines, m_content->skippedBadLines);
    else
        m_content->text = readCorpusText(path);
}

DatasetFile::~DatasetFile() = default;

std::string datasetText(const fs::path &path) { return DatasetFile(path, BadLinePolicy::Skip).trainingText(); }

std::string DatasetFile::trainingText() const
{
    if (!m_content->jsonl)
        return m_content->text;
    std::string text;
    for (const Record &r : m_content->records) {
        auto add = [&](const json &v) {
            if (v.is_string() && !v.get<std::string>().empty())
                text += v.get<std::string>() + "\n\n";
        };
        add(r.value.value("text", json()));
        add(r.value.value("prompt", json()));
        add(r.value.value("completion", json()));
        if (const auto it = r.value.find("messages"); it != r.value.end() && it->is_array()) {
            for (const auto &m : *it)
                add(m.is_object() ? m.value("content", json()) : json());
        }
    }
    return text;
}

ChatTemplateSource readChatTemplate(const fs::path &modelFolder)
{
    ChatTemplateSource source;
    const fs::path file = modelFolder / "tokenizer_config.json";
    if (!fs::exists(file))
        return source;
    const std::string text = readFile(file);
    checkJsonNesting(text, file.string());
    const json config = json::parse(text, nullptr, false);
    if (!config.is_object())
        throw invalidInput(file.string() + ": not a JSON object");
    if (const auto it = config.find("chat_template"); it != config.end() && it->is_string())
        source.source = it->get<std::string>();
    auto token = [&](const char *key) {
        const auto it = config.find(key);
        if (it == config.end())
            return std::string();
        if (it->is_string())
            return it->get<std::string>();
        if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
            return (*it)["content"].get<std::string>();
        return std::string();
    };
    source.bosToken = token("bos_token");
    source.eosToken = token("eos_token");
    return source;
}

std::optional<TokenRows> loadDataset(const fs::path &path, const tokenize::Tokenizer *tokenizer,
                                     int64_t vocabSize, const DatasetOptions &options, const JobControl &control)
{
    return loadDataset(DatasetFile(path, options.badLines), tokenizer, vocabSize, options, control);
}

std::optional<TokenRows> loadDataset(const DatasetFile &file, const tokenize::Tokenizer *tokenizer,
                                     int64_t vocabSize, const DatasetOptions &options, const JobControl &control)
{
    TokenRows rows;
    rows.width = options.sequenceLength + 1;
    const DatasetFile::Content &content = *file.m_content;
    const std::string where = content.path.string();
    if (!content.jsonl) {
        if (!tokenizer)
            throw invalidInput(where + ": plain text needs a tokenizer");
        std::vector<int32_t> ids = tokenizeCorpus(content.text, *tokenizer, tokenizer->eosId(), control);
        if (control.cancelRequested())
            return std::nullopt;
        rows.examples = 1;
        rows.tokens = static_cast<int64_t>(ids.size());
        pack(std::vector<int64_t>(ids.begin(), ids.end()), rows.width, rows);
    } else {
        const std::vector<Record> &records = content.records;
        rows.skippedBadLines = content.skippedBadLines;
        if (records.empty())
            throw invalidInput(where + " holds no JSON records");
        auto lineError = [&](const Record &r, const std::string &what) {
            return invalidInput(where + " line " + std::to_string(r.line) + ": " + what);
        };
        try {
            rows.format = formatOf(records.front().value);
        } catch (const Error &e) {
            throw lineError(records.front(), e.what());
        }
        if (rows.format != DataFormat::TokenIds && !tokenizer)
            throw invalidInput(where + ": " + dataFormatName(rows.format) + " data needs a tokenizer");
        std::optional<tokenize::ChatTemplate> chat;
        if (rows.format == DataFormat::Messages) {
            if (options.chatTemplate.empty()) {
                throw invalidInput(where + " holds chat messages, but the model has no chat template "
                                           "(tokenizer_config.json's chat_template)");
            }
            chat = tokenize::ChatTemplate::parse(options.chatTemplate);
        }
        const int64_t padId = tokenizer && tokenizer->eosId() >= 0 ? tokenizer->eosId() : 0;
        std::vector<int64_t> stream; // JsonlText: packed like plain text
        for (const Record &r : records) {
            if (control.cancelRequested())
                return std::nullopt;
            DataFormat format;
            try {
                format = formatOf(r.value);
            } catch (const Error &e) {
                throw lineError(r, e.what());
            }
            if (format != rows.format) {
                throw lineError(r, std::string("is ") + dataFormatName(format) + " but the file began with "
                                       + dataFormatName(rows.format) + " records");
            }
            ++rows.examples;
            Example example;
            try {
                switch (format) {
                case DataFormat::JsonlText: {
                    for (int64_t id : encode(*tokenizer, stringField(r.value, "text")))
                        stream.push_back(id);
                    if (tokenizer->eosId() >= 0)
                        stream.push_back(tokenizer->eosId());
                    continue;
                }
                case DataFormat::PromptCompletion: {
                    const std::string prompt = stringField(r.value, "prompt");
                    const std::string completion = stringField(r.value, "completion");
                    if (tokenizer->bosId() >= 0) {
                        example.ids.push_back(tokenizer->bosId());
                        example.target.push_back(false);
                    }
                    appendText(example, prompt + completion, {{prompt.size(), prompt.size() + completion.size()}}, *tokenizer);
                    if (tokenizer->eosId() >= 0 && !completion.empty()) {
                        example.ids.push_back(tokenizer->eosId());
                        example.target.push_back(true);
                    }
                    break;
                }
                case DataFormat::Messages: {
                    const json &list = r.value.at("messages");
                    if (!list.is_array() || list.empty())
                        throw invalidInput("field 'messages' must be a non-empty list");
                    std::vector<tokenize::ChatMessage> messages;
                    for (const auto &m : list) {
                        if (!m.is_object())
                            throw invalidInput("every message must be an object with role and content");
                        messages.push_back({stringField(m, "role"), stringField(m, "content")});
                    }
                    const std::map<std::string, std::string> special = {{"bos_token", kBosMark}, {"eos_token", kEosMark}};
                    const std::string text = chat->render(messages, false, special);
                    appendText(example, text, tokenize::assistantSpans(*chat, messages, special), *tokenizer);
                    break;
                }
                case DataFormat::TokenIds: {
                    const json &ids = r.value.at("input_ids");
                    if (!ids.is_array() || ids.empty())
                        throw invalidInput("field 'input_ids' must be a non-empty list of token ids");
                    const json labels = r.value.value("labels", json());
                    if (!labels.is_null() && (!labels.is_array() || labels.size() != ids.size()))
                        throw invalidInput("field 'labels' must be a list as long as input_ids");
                    for (size_t i = 0; i < ids.size(); ++i) {
                        if (!ids[i].is_number_integer() || ids[i].get<int64_t>() < 0 || ids[i].get<int64_t>() >= vocabSize)
                            throw invalidInput("input_ids[" + std::to_string(i) + "] = " + ids[i].dump()
                                               + " is not a token id below the vocabulary size " + std::to_string(vocabSize));
                        const int64_t label = labels.is_null() ? ids[i].get<int64_t>() : labels[i].get<int64_t>();
                        if (label != kIgnoreLabel && (label < 0 || label >= vocabSize))
                            throw invalidInput("labels[" + std::to_string(i) + "] = " + std::to_string(label)
                                               + " is neither -100 nor a token id below " + std::to_string(vocabSize));
                        example.ids.push_back(ids[i].get<int64_t>());
                        example.target.push_back(label != kIgnoreLabel);
                        example.labelOf.push_back(label);
                    }
                    break;
                }
                case DataFormat::Text:
                    break;
                }
            } catch (const Error &e) {
                throw lineError(r, e.what());
            } catch (const json::exception &e) {
                throw lineError(r, e.what());
            }
            rows.tokens += static_cast<int64_t>(example.ids.size());
            addRow(example, rows.width, padId, rows);
        }
        if (rows.format == DataFormat::JsonlText) {
            rows.tokens = static_cast<int64_t>(stream.size());
            pack(stream, rows.width, rows);
        }
    }
    if (rows.rows == 0) {
        if (rows.nothingToLearn > 0)
            throw invalidInput(where + ": none of its " + std::to_string(rows.examples)
                               + " examples has anything to learn within the sequence length (empty completions, or "
                                 "prompts longer than --seq-len)");
        throw invalidInput(where + " is too short: it has " + std::to_string(rows.tokens) + " tokens, and one training sequence needs "
                           + std::to_string(rows.width) + " (sequence length + 1)");
    }
    return rows;
}

} // namespace engine::train
