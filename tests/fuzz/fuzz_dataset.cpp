// Training data as `train --preview` and the Train page's preview read it: plain text or JSONL
// (text, prompt/completion, chat messages through a chat template, token ids), tokenized into rows.
// The first input byte picks the file kind and the bad-line policy; the rest is the file.

#include "engine/core/jobcontrol.h"
#include "engine/tokenize/hftokenizer.h"
#include "engine/train/dataset.h"
#include "fuzzsupport.h"

#include <filesystem>

namespace {

const engine::tokenize::Tokenizer &tokenizer()
{
    static const auto instance =
        engine::tokenize::HfTokenizer::load(std::filesystem::path(TUNEBENCH_TEST_DATA) / "tokenize/bytelevel/tokenizer.json");
    return *instance;
}

// ChatML, the template most chat datasets meet.
const char *const kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace engine::train;
    if (size < 1)
        return 0;
    const bool jsonl = (data[0] & 1) != 0;
    const BadLinePolicy badLines = (data[0] & 2) != 0 ? BadLinePolicy::Skip : BadLinePolicy::Stop;
    const auto path = fuzz::writeScratch(jsonl ? "data.jsonl" : "data.txt", fuzz::asText(data + 1, size - 1));
    DatasetOptions options;
    options.sequenceLength = (data[0] & 4) != 0 ? 8 : 64;
    options.badLines = badLines;
    options.chatTemplate = (data[0] & 8) != 0 ? kChatMl : "";
    options.bosToken = "<s>";
    options.eosToken = "</s>";
    fuzz::expectCleanError([&] {
        const DatasetFile file(path, badLines);
        file.trainingText();
        engine::JobControl control;
        loadDataset(file, &tokenizer(), tokenizer().vocabSize(), options, control);
    });
    return 0;
}
