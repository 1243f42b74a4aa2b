#pragma once
// The tokenizer interface of the engine, and the factory that reads a model's tokenizer files.
//
// How to use:
//   auto tokenizer = engine::tokenize::loadTokenizer("models/llama-3");   // folder or file
//   std::vector<int> ids = tokenizer->encode("Hello", /*addSpecialTokens=*/true);
//   std::string text = tokenizer->decode(ids, /*skipSpecialTokens=*/true);
//
// A folder is read as Hugging Face does: tokenizer.json when present, else tokenizer.model
// (SentencePiece), plus tokenizer_config.json beside it for bos/eos and add_bos/eos_token.
// Encodings equal those of Hugging Face tokenizers (`tokenizer(text, add_special_tokens=...)`).

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace engine::tokenize {

/// A loaded tokenizer. Immutable after loading: every method is const and thread-safe.
class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    /// Token ids of UTF-8 `text`. With `addSpecialTokens`, adds what Hugging Face's
    /// add_special_tokens=True adds (e.g. bos for Llama). Throws Error(InvalidInput) for invalid UTF-8.
    virtual std::vector<int> encode(std::string_view text, bool addSpecialTokens = false) const = 0;
    /// Text of `ids`; special tokens are dropped with `skipSpecialTokens`. Throws Error(InvalidInput)
    /// for ids outside the vocabulary.
    virtual std::string decode(const std::vector<int> &ids, bool skipSpecialTokens = false) const = 0;

    /// Number of ids (the highest id + 1, added tokens included).
    virtual int vocabSize() const = 0;
    /// Beginning-of-sequence id, or -1 when the tokenizer has none.
    virtual int bosId() const = 0;
    /// End-of-sequence id, or -1 when the tokenizer has none.
    virtual int eosId() const = 0;
    /// The id of a token string (as stored in the vocabulary), or -1.
    virtual int tokenToId(std::string_view token) const = 0;
    /// The token string of an id; throws Error(InvalidInput) outside the vocabulary.
    virtual std::string idToToken(int id) const = 0;
    /// True for special tokens (those decode drops with skipSpecialTokens).
    virtual bool isSpecial(int id) const = 0;
    /// What was loaded, for people: e.g. "tokenizer.json (BPE, 128256 tokens)".
    virtual std::string description() const = 0;
};

/// Loads a tokenizer from a model folder (tokenizer.json preferred, else tokenizer.model), a
/// tokenizer.json file or a SentencePiece .model file. Throws Error(Io) when nothing is there to
/// read, Error(InvalidInput) naming the file and the field when a file is malformed or unsupported.
std::unique_ptr<Tokenizer> loadTokenizer(const std::filesystem::path &pathOrFolder);

/// The file loadTokenizer reads for `pathOrFolder` (a folder's tokenizer.json, else its tokenizer.model).
/// Throws as loadTokenizer does when there is none.
std::filesystem::path tokenizerFile(const std::filesystem::path &pathOrFolder);

/// True when `folder` holds tokenizer.json or tokenizer.model.
bool holdsTokenizer(const std::filesystem::path &folder);

/// What a saved model or adapter carries of the tokenizer loadTokenizer reads for `pathOrFolder`:
/// its file, then the tokenizer_config.json and special_tokens_map.json beside it when they exist
/// (bos/eos settings, the chat template).
std::vector<std::filesystem::path> tokenizerFiles(const std::filesystem::path &pathOrFolder);

} // namespace engine::tokenize
