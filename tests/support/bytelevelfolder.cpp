#include "support/bytelevelfolder.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace testing_support {
namespace {

/// GPT-2's printable stand-in for a byte (bytes_to_unicode): printable Latin-1 bytes are themselves,
/// the others 256, 257, ... in byte order; as UTF-8.
std::string byteSymbol(int byte)
{
    auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); };
    int code = byte;
    if (!printable(byte)) {
        code = 256;
        for (int b = 0; b < byte; ++b)
            code += printable(b) ? 0 : 1;
    }
    std::string out;
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return out;
}

} // namespace

void writeByteLevelTokenizer(const std::filesystem::path &folder, const std::vector<std::string> &specials,
                             const std::string &eosToken, const std::string &chatTemplate)
{
    using nlohmann::json;
    json vocab = json::object();
    for (int byte = 0; byte < 256; ++byte)
        vocab[byteSymbol(byte)] = byte;
    json added = json::array();
    for (size_t i = 0; i < specials.size(); ++i) {
        added.push_back({{"id", 256 + static_cast<int>(i)}, {"content", specials[i]}, {"single_word", false},
                         {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
    }
    const json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    const json tokenizer = {
        {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
        {"normalizer", nullptr}, {"pre_tokenizer", byteLevel}, {"post_processor", byteLevel}, {"decoder", byteLevel},
        {"model",
         {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", json::array()}}}};
    json config = {{"eos_token", eosToken}, {"bos_token", nullptr}, {"clean_up_tokenization_spaces", false},
                   {"tokenizer_class", "PreTrainedTokenizerFast"}};
    if (!chatTemplate.empty())
        config["chat_template"] = chatTemplate;
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "tokenizer.json") << tokenizer.dump(1);
    std::ofstream(folder / "tokenizer_config.json") << config.dump(1);
}

} // namespace testing_support
