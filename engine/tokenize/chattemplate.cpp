#include "engine/tokenize/chattemplate.h"

#include "engine/core/error.h"
#include "engine/tokenize/jinja/jinjainterpreter.h"
#include "engine/tokenize/jinja/jinjalexer.h"
#include "engine/tokenize/jinja/jinjaparser.h"
#include "engine/tokenize/utf8.h"

namespace engine::tokenize {

struct ChatTemplate::Parsed {
    explicit Parsed(std::string normalized) : source(std::move(normalized)), locator(source) {}
    std::string source;
    jinja::SourceLocator locator;
    jinja::Body body;
};

namespace {

void requireUtf8(const std::string &text, const std::string &what)
{
    const size_t bad = utf8::firstInvalid(text);
    if (bad != std::string::npos)
        throw invalidInput(what + " is not valid UTF-8 (byte " + std::to_string(bad) + ")");
}

} // namespace

ChatTemplate ChatTemplate::parse(const std::string &source)
{
    requireUtf8(source, "chat template");
    auto parsed = std::make_shared<Parsed>(jinja::normalizeSource(source));
    const std::vector<jinja::Token> tokens = jinja::lex(parsed->source, parsed->locator);
    parsed->body = jinja::parse(tokens, parsed->locator);
    ChatTemplate result;
    result.m_parsed = std::move(parsed);
    return result;
}

std::string ChatTemplate::render(const std::vector<ChatMessage> &messages, bool addGenerationPrompt,
                                 const std::map<std::string, std::string> &specialTokens) const
{
    std::vector<jinja::Value> items;
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string where = "chat message " + std::to_string(i);
        requireUtf8(messages[i].role, where + " role");
        requireUtf8(messages[i].content, where + " content");
        items.push_back(jinja::makeDict({{"role", jinja::Value(messages[i].role)},
                                         {"content", jinja::Value(messages[i].content)}}));
    }
    std::vector<std::pair<std::string, jinja::Value>> variables;
    for (const auto &[name, value] : specialTokens) {
        requireUtf8(value, "chat template variable '" + name + "'");
        variables.emplace_back(name, jinja::Value(value));
    }
    variables.emplace_back("messages", jinja::makeList(std::move(items)));
    variables.emplace_back("add_generation_prompt", jinja::Value(addGenerationPrompt));
    return jinja::render(m_parsed->body, variables, m_parsed->locator);
}

std::vector<std::pair<size_t, size_t>> assistantSpans(const ChatTemplate &chatTemplate,
                                                      const std::vector<ChatMessage> &messages,
                                                      const std::map<std::string, std::string> &specialTokens)
{
    const std::string whole = chatTemplate.render(messages, false, specialTokens);
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t i = 0; i < messages.size(); ++i) {
        if (messages[i].role != "assistant")
            continue;
        const std::vector<ChatMessage> before(messages.begin(), messages.begin() + static_cast<long>(i));
        const std::vector<ChatMessage> through(messages.begin(), messages.begin() + static_cast<long>(i) + 1);
        const std::string prefix = chatTemplate.render(before, true, specialTokens);
        const std::string full = chatTemplate.render(through, false, specialTokens);
        if (full.compare(0, prefix.size(), prefix) != 0 || prefix.size() > full.size())
            throw invalidInput("chat template is not incremental: rendering messages 0.." + std::to_string(i) +
                               " does not start with the rendering of messages before " + std::to_string(i) +
                               " plus the generation prompt, so assistant message " + std::to_string(i) +
                               " cannot be located");
        if (whole.compare(0, full.size(), full) != 0 || full.size() > whole.size())
            throw invalidInput("chat template is not incremental: the whole conversation's rendering does not start "
                               "with the rendering of messages 0.." + std::to_string(i) +
                               " (the template renders an assistant turn differently once later messages follow, as "
                               "Qwen3's drops the <think> part of earlier turns; split the conversation so that each "
                               "ends at the assistant turn to train on)");
        spans.emplace_back(prefix.size(), full.size());
    }
    return spans;
}

} // namespace engine::tokenize
