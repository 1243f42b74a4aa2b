#pragma once
// The BPE model of a tokenizer.json: vocabulary, ranked merges, unknown-token and byte-fallback
// handling, as Hugging Face tokenizers' models/bpe implements them.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engine::tokenize {

/// Settings of a BPE model (the fields of tokenizer.json's "model" besides vocab and merges).
struct BpeOptions {
    std::optional<std::string> unkToken;
    std::string continuingSubwordPrefix;
    std::string endOfWordSuffix;
    bool fuseUnk = false;
    bool byteFallback = false;
    bool ignoreMerges = false;
};

/// Byte-pair encoding of single pre-tokenized words. tokenize() is const and thread-safe; results
/// are cached per word.
class BpeModel {
public:
    /// `merges` are (left, right) pairs in rank order. Throws Error(InvalidInput) starting with
    /// `where` when a merge names a token that is not in the vocabulary.
    BpeModel(std::unordered_map<std::string, int> vocab, const std::vector<std::pair<std::string, std::string>> &merges,
             BpeOptions options, const std::string &where);

    /// Appends the ids of `word` to `out`.
    void tokenize(std::string_view word, std::vector<int> &out) const;

    /// The id of a vocabulary entry, or -1.
    int tokenToId(std::string_view token) const;
    const std::unordered_map<std::string, int> &vocab() const { return m_vocab; }

private:
    std::vector<int> mergeWord(std::string_view word) const;

    struct PairHash {
        size_t operator()(uint64_t key) const { return std::hash<uint64_t>()(key * 0x9E3779B97F4A7C15ull); }
    };
    struct Merge {
        int rank;
        int newId;
    };

    std::unordered_map<std::string, int> m_vocab;
    std::unordered_map<uint64_t, Merge, PairHash> m_merges; // (left id << 32 | right id) -> merge
    BpeOptions m_options;
    int m_unkId = -1;
    std::vector<int> m_byteIds; // id of "<0xXX>" per byte, -1 when absent (byte fallback)

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int>> m_cache;
};

} // namespace engine::tokenize
