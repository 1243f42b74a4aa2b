#include "engine/tokenize/hftokenizer.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/tokenize/addedvocabulary.h"
#include "engine/tokenize/bpemodel.h"
#include "engine/tokenize/jsonfields.h"
#include "engine/tokenize/normalizer.h"
#include "engine/tokenize/pretokenizer.h"
#include "engine/tokenize/tokendecoder.h"
#include "engine/tokenize/utf8.h"

#include <nlohmann/json.hpp>

#include <unordered_set>

namespace engine::tokenize {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json parseJson(const std::string &text, const std::string &where)
{
    checkJsonNesting(text, where);
    try {
        return json::parse(text);
    } catch (const json::exception &e) { // parse_error, and out_of_range for a number like 1e400
        throw invalidInput(where + " is not valid JSON (" + std::string(e.what()) + ")");
    }
}

std::vector<std::pair<std::string, std::string>> readMerges(const json &model, const std::string &where)
{
    std::vector<std::pair<std::string, std::string>> merges;
    const auto it = model.find("merges");
    if (it == model.end() || it->is_null())
        return merges;
    if (!it->is_array())
        throw invalidInput(fields::at(where, "model.merges") + " is not a list");
    merges.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
        const json &merge = (*it)[i];
        const std::string field = "model.merges[" + std::to_string(i) + "]";
        if (merge.is_string()) {
            // "a b": exactly one space (as HF tokenizers requires).
            const std::string &line = merge.get_ref<const std::string &>();
            const size_t space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
                throw invalidInput(fields::at(where, field) + " \"" + line + "\" is not two tokens separated by one space");
            merges.emplace_back(line.substr(0, space), line.substr(space + 1));
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
        } else {
            throw invalidInput(fields::at(where, field) + " is neither \"a b\" nor [\"a\", \"b\"]");
        }
    }
    return merges;
}

std::unique_ptr<BpeModel> readModel(const json &root, const std::string &where)
{
    const auto it = root.find("model");
    if (it == root.end() || !it->is_object())
        throw invalidInput(fields::at(where, "model") + " is missing or not an object");
    const json &model = *it;
    std::string type = fields::optionalString(model, "type", "", where, "model");
    if (type.empty())
        type = model.contains("merges") ? "BPE" : "(none)";
    if (type != "BPE")
        throw invalidInput(fields::at(where, "model.type") + ": \"" + type +
                           "\" models are not supported; tunebench reads BPE tokenizer.json files "
                           "(and SentencePiece tokenizer.model files)");
    const auto vocabIt = model.find("vocab");
    if (vocabIt == model.end() || !vocabIt->is_object())
        throw invalidInput(fields::at(where, "model.vocab") + " is missing or not an object of token: id");
    std::unordered_map<std::string, int> vocab;
    vocab.reserve(vocabIt->size());
    for (const auto &[token, id] : vocabIt->items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            throw invalidInput(fields::at(where, "model.vocab") + ": the id of \"" + token + "\" is not a non-negative integer");
        vocab.emplace(token, id.get<int>());
    }
    BpeOptions options;
    if (const auto unk = model.find("unk_token"); unk != model.end() && unk->is_string())
        options.unkToken = unk->get<std::string>();
    options.continuingSubwordPrefix = fields::optionalString(model, "continuing_subword_prefix", "", where, "model");
    options.endOfWordSuffix = fields::optionalString(model, "end_of_word_suffix", "", where, "model");
    options.fuseUnk = fields::optionalBool(model, "fuse_unk", false, where, "model");
    options.byteFallback = fields::optionalBool(model, "byte_fallback", false, where, "model");
    options.ignoreMerges = fields::optionalBool(model, "ignore_merges", false, where, "model");
    return std::make_unique<BpeModel>(std::move(vocab), readMerges(model, where), std::move(options), where);
}

std::vector<AddedToken> readAddedTokens(const json &root, const std::string &where)
{
    std::vector<AddedToken> tokens;
    const auto it = root.find("added_tokens");
    if (it == root.end() || it->is_null())
        return tokens;
    if (!it->is_array())
        throw invalidInput(fields::at(where, "added_tokens") + " is not a list");
    for (size_t i = 0; i < it->size(); ++i) {
        const json &entry = (*it)[i];
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        if (!entry.is_object())
            throw invalidInput(fields::at(where, path) + " is not an object");
        AddedToken token;
        token.content = fields::requireString(entry, "content", where, path);
        const auto id = entry.find("id");
        if (id == entry.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > INT32_MAX)
            throw invalidInput(fields::at(where, path + ".id") + " is missing or not a non-negative integer");
        token.id = id->get<int>();
        token.special = fields::optionalBool(entry, "special", false, where, path);
        token.singleWord = fields::optionalBool(entry, "single_word", false, where, path);
        token.lstrip = fields::optionalBool(entry, "lstrip", false, where, path);
        token.rstrip = fields::optionalBool(entry, "rstrip", false, where, path);
        token.normalized = fields::optionalBool(entry, "normalized", !token.special, where, path);
        tokens.push_back(std::move(token));
    }
    return tokens;
}

/// A token named in tokenizer_config.json: "text" or {"content": "text", ...}; empty when absent.
std::string configToken(const json &config, const char *key)
{
    const auto it = config.find(key);
    if (it == config.end())
        return {};
    if (it->is_string())
        return it->get<std::string>();
    if (it->is_object()) {
        const auto content = it->find("content");
        if (content != it->end() && content->is_string())
            return content->get<std::string>();
    }
    return {};
}

/// Simple English detokenization artifacts (transformers' clean_up_tokenization).
std::string cleanUpTokenization(std::string text)
{
    static const std::pair<const char *, const char *> rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (const auto &[from, to] : rules) {
        const std::string_view needle(from);
        std::string out;
        size_t last = 0;
        for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, last)) {
            out.append(text, last, pos - last);
            out += to;
            last = pos + needle.size();
        }
        out.append(text, last, std::string::npos);
        text = std::move(out);
    }
    return text;
}

} // namespace

struct HfTokenizer::Impl {
    std::string where;
    std::unique_ptr<Normalizer> normalizer;
    std::unique_ptr<PreTokenizer> preTokenizer;
    std::unique_ptr<BpeModel> model;
    std::unique_ptr<TokenDecoder> decoder;
    AddedVocabulary added;
    std::vector<int> prefix; ///< ids the post-processor puts before the text
    std::vector<int> suffix; ///< ids it puts after
    std::vector<std::string> idToToken;
    std::vector<bool> hasToken;
    std::unordered_set<int> special;
    int bos = -1;
    int eos = -1;
    bool cleanUpSpaces = false;
    bool byteLevel = false;

    int tokenToId(std::string_view token) const
    {
        const int added = this->added.idOf(token);
        return added >= 0 ? added : model->tokenToId(token);
    }

    /// The ids a post-processor entry {"id": name, "ids": [...]} or a token name stands for.
    void readPostProcessor(const json &config, const std::string &path)
    {
        if (config.is_null())
            return;
        const std::string type = fields::typeOf(config, where, path);
        if (type == "ByteLevel")
            return;
        if (type == "Sequence") {
            const auto it = config.find("processors");
            if (it == config.end() || !it->is_array())
                throw invalidInput(fields::at(where, path + ".processors") + " is missing or not a list");
            for (size_t i = 0; i < it->size(); ++i)
                readPostProcessor((*it)[i], path + ".processors[" + std::to_string(i) + "]");
            return;
        }
        if (type == "TemplateProcessing") {
            readTemplate(config, path);
            return;
        }
        if (type == "BertProcessing" || type == "RobertaProcessing") {
            auto idOf = [&](const char *key) {
                const auto it = config.find(key);
                if (it == config.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer())
                    throw invalidInput(fields::at(where, path + "." + key) + " is not [token, id]");
                return (*it)[1].get<int>();
            };
            prefix = {idOf("cls")};
            suffix = {idOf("sep")};
            return;
        }
        throw invalidInput(fields::at(where, path + ".type") + ": post-processor \"" + type +
                           "\" is not supported (supported: TemplateProcessing, ByteLevel, BertProcessing, "
                           "RobertaProcessing, Sequence)");
    }

    void readTemplate(const json &config, const std::string &path)
    {
        const auto single = config.find("single");
        if (single == config.end() || !single->is_array())
            throw invalidInput(fields::at(where, path + ".single") + " is missing or not a list");
        const json specialTokens = config.value("special_tokens", json::object());
        prefix.clear();
        suffix.clear();
        bool seenSequence = false;
        for (size_t i = 0; i < single->size(); ++i) {
            const json &item = (*single)[i];
            const std::string itemPath = path + ".single[" + std::to_string(i) + "]";
            if (item.contains("Sequence")) {
                seenSequence = true;
                continue;
            }
            const auto token = item.find("SpecialToken");
            if (token == item.end() || !token->is_object())
                throw invalidInput(fields::at(where, itemPath) + " is neither a Sequence nor a SpecialToken");
            const std::string name = fields::requireString(*token, "id", where, itemPath + ".SpecialToken");
            std::vector<int> ids;
            const auto entry = specialTokens.find(name);
            if (entry != specialTokens.end() && entry->contains("ids") && (*entry)["ids"].is_array()) {
                for (const json &id : (*entry)["ids"])
                    ids.push_back(id.get<int>());
            } else if (const int id = tokenToId(name); id >= 0) {
                ids.push_back(id);
            } else {
                throw invalidInput(fields::at(where, itemPath + ".SpecialToken.id") + ": \"" + name +
                                   "\" is neither in special_tokens nor in the vocabulary");
            }
            auto &target = seenSequence ? suffix : prefix;
            target.insert(target.end(), ids.begin(), ids.end());
        }
    }

    void readConfig(const json &config, const std::string &configWhere)
    {
        cleanUpSpaces = fields::optionalBool(config, "clean_up_tokenization_spaces", false, configWhere, "");
        auto resolve = [&](const char *key) {
            const std::string name = configToken(config, key);
            if (name.empty())
                return -1;
            const int id = tokenToId(name);
            if (id < 0)
                throw invalidInput(fields::at(configWhere, key) + ": \"" + name + "\" is not in " + where);
            return id;
        };
        bos = resolve("bos_token");
        eos = resolve("eos_token");
        for (const char *key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
            if (const int id = resolve(key); id >= 0)
                special.insert(id);
        }
        if (const auto extra = config.find("additional_special_tokens"); extra != config.end() && extra->is_array()) {
            for (const json &token : *extra) {
                const auto content = token.is_object() ? token.find("content") : token.end();
                const std::string name = token.is_string() ? token.get<std::string>()
                                         : content != token.end() && content->is_string() ? content->get<std::string>()
                                                                                          : std::string();
                if (const int id = tokenToId(name); id >= 0)
                    special.insert(id);
            }
        }
        // Like transformers' update_post_processor: explicit add_bos/eos_token rebuild the template.
        const bool hasAddBos = config.contains("add_bos_token") && config["add_bos_token"].is_boolean();
        const bool hasAddEos = config.contains("add_eos_token") && config["add_eos_token"].is_boolean();
        if (hasAddBos || hasAddEos) {
            const bool addBos = hasAddBos && config["add_bos_token"].get<bool>();
            const bool addEos = hasAddEos && config["add_eos_token"].get<bool>();
            if (addBos && bos < 0)
                throw invalidInput(fields::at(configWhere, "add_bos_token") + " is true but there is no bos_token");
            if (addEos && eos < 0)
                throw invalidInput(fields::at(configWhere, "add_eos_token") + " is true but there is no eos_token");
            prefix = addBos ? std::vector<int>{bos} : std::vector<int>{};
            suffix = addEos ? std::vector<int>{eos} : std::vector<int>{};
        }
    }

    void buildIdTable()
    {
        int maxId = -1;
        for (const auto &[token, id] : model->vocab())
            maxId = std::max(maxId, id);
        for (const AddedToken &token : added.tokens())
            maxId = std::max(maxId, token.id);
        idToToken.assign(static_cast<size_t>(maxId + 1), std::string());
        hasToken.assign(static_cast<size_t>(maxId + 1), false);
        for (const auto &[token, id] : model->vocab()) {
            idToToken[id] = token;
            hasToken[id] = true;
        }
        for (const AddedToken &token : added.tokens()) {
            idToToken[token.id] = token.content;
            hasToken[token.id] = true;
            if (token.special)
                special.insert(token.id);
        }
    }

    void encodeText(std::string_view text, std::vector<int> &ids) const
    {
        std::vector<PreToken> words;
        for (const auto &section : added.split(text, false)) {
            if (section.id >= 0) {
                ids.push_back(section.id);
                continue;
            }
            const bool sectionAtStart = section.text.data() == text.data();
            const std::string normalized = normalizer ? normalizer->normalize(section.text) : std::string(section.text);
            for (const auto &piece : added.split(normalized, true)) {
                if (piece.id >= 0) {
                    ids.push_back(piece.id);
                    continue;
                }
                if (piece.text.empty())
                    continue;
                words.clear();
                words.push_back({std::string(piece.text), sectionAtStart && piece.text.data() == normalized.data()});
                if (preTokenizer)
                    preTokenizer->apply(words);
                for (const PreToken &word : words)
                    model->tokenize(word.text, ids);
            }
        }
    }
};

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::filesystem::path &tokenizerJson, std::filesystem::path tokenizerConfig)
{
    std::error_code ec;
    if (!fs::exists(tokenizerJson, ec))
        throw ioError("tokenizer file " + tokenizerJson.string() + " does not exist");
    if (fs::is_directory(tokenizerJson, ec))
        throw ioError("tokenizer file " + tokenizerJson.string() + " is a folder, not a file");
    const std::string text = readFile(tokenizerJson);
    if (tokenizerConfig.empty())
        tokenizerConfig = tokenizerJson.parent_path() / "tokenizer_config.json";
    std::string configText;
    if (fs::is_regular_file(tokenizerConfig, ec))
        configText = readFile(tokenizerConfig);
    return fromText(text, configText, tokenizerJson.string(), tokenizerConfig.string());
}

std::unique_ptr<HfTokenizer> HfTokenizer::fromText(const std::string &jsonText, const std::string &configText,
                                                   const std::string &where, const std::string &configWhere)
{
    const json root = parseJson(jsonText, where);
    if (!root.is_object())
        throw invalidInput(where + " is not a tokenizer.json (the top level is not an object)");
    auto impl = std::make_unique<Impl>();
    impl->where = where;
    impl->model = readModel(root, where);
    impl->added = AddedVocabulary(readAddedTokens(root, where));
    impl->normalizer = makeNormalizer(root.value("normalizer", json()), where);
    impl->preTokenizer = makePreTokenizer(root.value("pre_tokenizer", json()), where);
    impl->decoder = makeTokenDecoder(root.value("decoder", json()), where);
    impl->buildIdTable();
    impl->readPostProcessor(root.value("post_processor", json()), "post_processor");
    if (!configText.empty()) {
        const json config = parseJson(configText, configWhere);
        if (!config.is_object())
            throw invalidInput(configWhere + " is not a tokenizer_config.json (the top level is not an object)");
        impl->readConfig(config, configWhere);
    } else {
        impl->bos = impl->prefix.size() == 1 ? impl->prefix.front() : -1;
        impl->eos = impl->suffix.size() == 1 ? impl->suffix.front() : -1;
    }
    const json preTokenizer = root.value("pre_tokenizer", json());
    impl->byteLevel = preTokenizer.dump().find("\"ByteLevel\"") != std::string::npos;
    return std::unique_ptr<HfTokenizer>(new HfTokenizer(std::move(impl)));
}

std::vector<int> HfTokenizer::encode(std::string_view text, bool addSpecialTokens) const
{
    if (const size_t bad = utf8::firstInvalid(text); bad != std::string_view::npos)
        throw invalidInput("the text to tokenize is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
    std::vector<int> ids;
    ids.reserve(text.size() / 3 + 4);
    if (addSpecialTokens)
        ids.insert(ids.end(), m_impl->prefix.begin(), m_impl->prefix.end());
    m_impl->encodeText(text, ids);
    if (addSpecialTokens)
        ids.insert(ids.end(), m_impl->suffix.begin(), m_impl->suffix.end());
    return ids;
}

std::string HfTokenizer::decode(const std::vector<int> &ids, bool skipSpecialTokens) const
{
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const int id : ids) {
        if (skipSpecialTokens && isSpecial(id))
            continue;
        tokens.push_back(idToToken(id));
    }
    std::string text;
    if (m_impl->decoder) {
        for (const std::string &part : m_impl->decoder->decodeChain(std::move(tokens)))
            text += part;
    } else {
        for (size_t i = 0; i < tokens.size(); ++i)
            text += (i ? " " : "") + tokens[i];
    }
    return m_impl->cleanUpSpaces ? cleanUpTokenization(std::move(text)) : text;
}

int HfTokenizer::vocabSize() const { return static_cast<int>(m_impl->idToToken.size()); }
int HfTokenizer::bosId() const { return m_impl->bos; }
int HfTokenizer::eosId() const { return m_impl->eos; }
int HfTokenizer::tokenToId(std::string_view token) const { return m_impl->tokenToId(token); }

std::string HfTokenizer::idToToken(int id) const
{
    if (id < 0 || id >= vocabSize() || !m_impl->hasToken[static_cast<size_t>(id)])
        throw invalidInput("token id " + std::to_string(id) + " is not in the vocabulary of " + m_impl->where +
                           " (0.." + std::to_string(vocabSize() - 1) + ")");
    return m_impl->idToToken[static_cast<size_t>(id)];
}

bool HfTokenizer::isSpecial(int id) const { return m_impl->special.contains(id); }

std::string HfTokenizer::description() const
{
    return "tokenizer.json (BPE, " + std::string(m_impl->byteLevel ? "byte-level, " : "") + std::to_string(vocabSize()) +
           " tokens) " + m_impl->where;
}

} // namespace engine::tokenize
