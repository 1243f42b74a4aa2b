#include "engine/tokenize/sentencepieceadapter.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/tokenize/utf8.h"

#include <nlohmann/json.hpp>

namespace engine::tokenize {

SentencePieceAdapter::SentencePieceAdapter(SentencePieceTokenizer model, std::filesystem::path file)
    : m_model(std::move(model)), m_file(std::move(file))
{
    const int size = m_model.vocabSize();
    m_pieceIds.reserve(static_cast<size_t>(size));
    for (int id = 0; id < size; ++id)
        m_pieceIds.emplace(m_model.pieceOf(id), id);
}

std::unique_ptr<SentencePieceAdapter> SentencePieceAdapter::load(const std::filesystem::path &modelFile)
{
    auto adapter = std::unique_ptr<SentencePieceAdapter>(
        new SentencePieceAdapter(SentencePieceTokenizer::load(modelFile), modelFile));
    const std::filesystem::path configFile = modelFile.parent_path() / "tokenizer_config.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(configFile, ec)) {
        nlohmann::json config;
        const std::string configText = readFile(configFile);
        checkJsonNesting(configText, configFile.string());
        try {
            config = nlohmann::json::parse(configText);
        } catch (const nlohmann::json::exception &e) { // parse_error, and out_of_range for 1e400
            throw invalidInput(configFile.string() + " is not valid JSON (" + std::string(e.what()) + ")");
        }
        auto flag = [&](const char *key, bool fallback) {
            const auto it = config.find(key);
            if (it == config.end() || it->is_null())
                return fallback;
            if (!it->is_boolean())
                throw invalidInput(configFile.string() + ": field " + key + " is not true or false");
            return it->get<bool>();
        };
        if (config.is_object()) {
            adapter->m_addBos = flag("add_bos_token", true);
            adapter->m_addEos = flag("add_eos_token", false);
        }
    }
    if (adapter->m_addBos && adapter->bosId() < 0)
        adapter->m_addBos = false;
    if (adapter->m_addEos && adapter->eosId() < 0)
        adapter->m_addEos = false;
    return adapter;
}

std::vector<int> SentencePieceAdapter::encode(std::string_view text, bool addSpecialTokens) const
{
    if (const size_t bad = utf8::firstInvalid(text); bad != std::string_view::npos)
        throw invalidInput("the text to tokenize is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
    std::vector<int> ids;
    if (addSpecialTokens && m_addBos)
        ids.push_back(bosId());
    const std::vector<int> body = m_model.encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    if (addSpecialTokens && m_addEos)
        ids.push_back(eosId());
    return ids;
}

std::string SentencePieceAdapter::decode(const std::vector<int> &ids, bool skipSpecialTokens) const
{
    // SentencePiece decodes control pieces (bos, eos, pad) as nothing; like LlamaTokenizer, show
    // them as their text unless asked to skip them.
    std::string text;
    std::vector<int> run;
    for (const int id : ids) {
        if (id < 0 || id >= vocabSize())
            throw invalidInput("token id " + std::to_string(id) + " is not in the vocabulary of " + m_file.string() +
                               " (0.." + std::to_string(vocabSize() - 1) + ")");
        if (!isSpecial(id)) {
            run.push_back(id);
            continue;
        }
        if (!run.empty()) {
            text += m_model.decode(run);
            run.clear();
        }
        if (!skipSpecialTokens)
            text += m_model.pieceOf(id);
    }
    if (!run.empty())
        text += m_model.decode(run);
    return text;
}

int SentencePieceAdapter::vocabSize() const { return m_model.vocabSize(); }
int SentencePieceAdapter::bosId() const { return m_model.bosId(); }
int SentencePieceAdapter::eosId() const { return m_model.eosId(); }

int SentencePieceAdapter::tokenToId(std::string_view token) const
{
    const auto it = m_pieceIds.find(std::string(token));
    return it == m_pieceIds.end() ? -1 : it->second;
}

std::string SentencePieceAdapter::idToToken(int id) const { return m_model.pieceOf(id); }

bool SentencePieceAdapter::isSpecial(int id) const
{
    return id >= 0 && (id == m_model.bosId() || id == m_model.eosId() || id == m_model.padId());
}

std::string SentencePieceAdapter::description() const
{
    return "SentencePiece model (" + std::to_string(vocabSize()) + " tokens) " + m_file.string();
}

} // namespace engine::tokenize
