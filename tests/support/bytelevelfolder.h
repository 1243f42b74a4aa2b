#pragma once
// A Hugging Face byte-level BPE tokenizer written into a folder, as Llama 3, Qwen2 and GPT-2 models ship
// theirs (tokenizer.json + tokenizer_config.json, no tokenizer.model): the 256 byte symbols as ids
// 0..255 (no merges), then `specials` as added special tokens (ids 256, 257, ...), and a
// tokenizer_config.json naming the eos token and, when given, a chat template.

#include <filesystem>
#include <string>
#include <vector>

namespace testing_support {

void writeByteLevelTokenizer(const std::filesystem::path &folder, const std::vector<std::string> &specials,
                             const std::string &eosToken, const std::string &chatTemplate = {});

} // namespace testing_support
