// tokenizer.json: loading (model, normalizers, pre-tokenizers with their regexes, added tokens,
// decoders) and then encoding and decoding a few strings with what was loaded.

#include "engine/tokenize/hftokenizer.h"
#include "fuzzsupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        const auto tokenizer = engine::tokenize::HfTokenizer::fromText(text, "", "tokenizer.json", "tokenizer_config.json");
        for (const char *sample : {"Hello world", "  two  spaces\n\ttab", "Grüße, 世界! 123 <s></s>", "", "\xf0\x9f\x98\x80"}) {
            const std::vector<int> ids = tokenizer->encode(sample, true);
            tokenizer->decode(ids, false);
            tokenizer->decode(ids, true);
        }
        tokenizer->decode({0, 1, 2, -1, 1 << 30}, false);
    });
    return 0;
}
