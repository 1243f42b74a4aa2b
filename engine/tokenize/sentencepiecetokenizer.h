#pragma once
// SentencePiece tokenizer (tokenizer.model), through libsentencepiece. Torch-free.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace engine::tokenize {

/// Options for training a tokenizer on a text corpus.
struct SentencePieceTrainOptions {
    int vocabSize = 2048;          ///< upper bound; a small corpus may give fewer pieces
    std::string modelType = "bpe"; ///< "bpe" or "unigram"
    int64_t maxSentences = 200000; ///< lines sampled from the corpus
    int threads = 0;               ///< 0 = all cores
};

/// A loaded SentencePiece model. Move-only; encode/decode are const and thread-safe.
class SentencePieceTokenizer {
public:
    /// Loads a tokenizer.model file. Throws Error(Io) if unreadable, Error(InvalidInput) if not a model.
    static SentencePieceTokenizer load(const std::filesystem::path &modelFile);
    /// Trains on the text file `corpus` and writes `outputModel` (a .model file) atomically.
    /// Throws Error(InvalidInput) naming the corpus when it is missing, empty or unusable.
    static void train(const std::filesystem::path &corpus, const std::filesystem::path &outputModel,
                      const SentencePieceTrainOptions &options);

    SentencePieceTokenizer(SentencePieceTokenizer &&) noexcept;
    SentencePieceTokenizer &operator=(SentencePieceTokenizer &&) noexcept;
    ~SentencePieceTokenizer();

    std::vector<int> encode(std::string_view text) const;
    std::string decode(const std::vector<int> &ids) const;
    int vocabSize() const;
    int bosId() const; ///< -1 when the model has none
    int eosId() const; ///< -1 when the model has none
    int padId() const; ///< -1 when the model has none
    std::string pieceOf(int id) const;

private:
    struct Impl;
    explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace engine::tokenize
