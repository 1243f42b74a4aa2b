#include "engine/train/textcorpus.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/tokenize/tokenizer.h"

#include <algorithm>
#include <cctype>

namespace engine::train {

std::string readCorpusText(const std::filesystem::path &path)
{
    std::string text;
    try {
        text = readFile(path);
    } catch (const Error &e) {
        throw Error(e.kind(), std::string("corpus ") + e.what());
    }
    const bool blank = std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
    if (blank)
        throw invalidInput("corpus " + path.string() + " is empty: it holds no text to train on");
    return text;
}

std::vector<int32_t> tokenizeCorpus(const std::string &text, const tokenize::Tokenizer &tokenizer,
                                    int eosId, const JobControl &control)
{
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3);
    size_t begin = 0;
    int paragraphs = 0;
    while (begin < text.size()) {
        size_t end = text.find("\n\n", begin);
        if (end == std::string::npos)
            end = text.size();
        // Paragraph without its leading newlines; blank runs produce nothing.
        size_t first = begin;
        while (first < end && text[first] == '\n')
            ++first;
        if (first < end) {
            for (int id : tokenizer.encode(std::string_view(text).substr(first, end - first)))
                ids.push_back(id);
            if (eosId >= 0)
                ids.push_back(eosId);
        }
        begin = end + 2;
        if (++paragraphs % 256 == 0 && control.cancelRequested())
            return {};
    }
    return ids;
}

uint64_t contentHash(const std::string &bytes)
{
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : bytes) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    return hash;
}

} // namespace engine::train
