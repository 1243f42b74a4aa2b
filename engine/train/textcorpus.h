#pragma once
// Reading a text corpus and turning it into one stream of token ids for next-token training.

#include "engine/core/jobcontrol.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace engine::tokenize {
class Tokenizer;
}

namespace engine::train {

/// Reads a UTF-8 text corpus. Throws Error(Io) when it is missing or unreadable and
/// Error(InvalidInput) when it is empty or holds only whitespace; both name the path.
std::string readCorpusText(const std::filesystem::path &path);

/// Tokenizes paragraph by paragraph (split at blank lines), appending eosId after each paragraph
/// when eosId >= 0. Returns an empty vector if cancel was requested meanwhile.
std::vector<int32_t> tokenizeCorpus(const std::string &text, const tokenize::Tokenizer &tokenizer,
                                    int eosId, const JobControl &control);

/// 64-bit FNV-1a of the bytes, for cache keys.
uint64_t contentHash(const std::string &bytes);

} // namespace engine::train
