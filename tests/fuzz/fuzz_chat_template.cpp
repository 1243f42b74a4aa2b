// Chat templates (tokenizer_config.json's "chat_template", Jinja code from whoever published the
// model): lexing, parsing and rendering with a conversation, and the assistant spans the trainer
// computes loss on.

#include "engine/tokenize/chattemplate.h"
#include "fuzzsupport.h"

#include <map>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using engine::tokenize::ChatMessage;
    static const std::vector<ChatMessage> messages = {
        {"system", "Be brief."}, {"user", "Hi {{ there }}"}, {"assistant", "Hello!"}, {"user", "2+2?"}, {"assistant", "4"}};
    static const std::map<std::string, std::string> tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    const std::string source(fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        const auto chat = engine::tokenize::ChatTemplate::parse(source);
        fuzz::expectCleanError([&] { chat.render(messages, true, tokens); });
        fuzz::expectCleanError([&] { engine::tokenize::assistantSpans(chat, messages, tokens); });
    });
    return 0;
}
