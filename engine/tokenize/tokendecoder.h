#pragma once
// The "decoder" of a tokenizer.json: turns token strings back into text. Supported: Sequence,
// ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, BPEDecoder.

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace engine::tokenize {

/// One step of decoding: token strings in, token strings out (HF's decode_chain).
class TokenDecoder {
public:
    virtual ~TokenDecoder() = default;
    virtual std::vector<std::string> decodeChain(std::vector<std::string> tokens) const = 0;
};

/// Builds the decoder described by `config` (null gives nullptr). Throws Error(InvalidInput)
/// naming `where` (the file) and `path` (the field) for unknown types and malformed fields.
std::unique_ptr<TokenDecoder> makeTokenDecoder(const nlohmann::json &config, const std::string &where,
                                               const std::string &path = "decoder");

} // namespace engine::tokenize
