#pragma once
// Hugging Face chat templates (tokenizer_config.json's "chat_template"): a Jinja2 interpreter for
// the subset chat templates use, rendering the way transformers' apply_chat_template(tokenize=False)
// does (trim_blocks and lstrip_blocks on, raise_exception and strftime_now globals, a tojson that
// does not escape HTML), plus the assistant spans a trainer computes loss on.
//
// How to use:
//   const auto chat = ChatTemplate::parse(config["chat_template"]);   // throws on bad syntax
//   std::string text = chat.render(messages, /*addGenerationPrompt=*/false,
//                                  {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
//   for (auto [begin, end] : assistantSpans(chat, messages, tokens)) ... // text[begin, end)
//
// Supported: {{ }}, {% %}, {# #}, whitespace control (-, +); if/elif/else, for (with else, an `if`
// filter, tuple unpacking, loop.index/index0/revindex/first/last/length/previtem/nextitem/cycle),
// break/continue, set (names, tuples, ns.attr, {% set x %}...{% endset %}), {% generation %};
// literals, ~ + - * / // % **, comparisons, and/or/not, in/not in, `a if c else b`, subscripts,
// slices, attributes; filters trim length count upper lower title capitalize tojson default(d)
// first last join replace list string int float abs reverse items selectattr rejectattr map; tests
// defined undefined none string number integer float boolean true false mapping sequence iterable
// callable odd even divisibleby eq/equalto ne lt le gt ge in; str methods strip lstrip rstrip
// startswith endswith split upper lower title capitalize replace join; dict methods items keys
// values get; globals raise_exception namespace range strftime_now.
// Refused with an error naming line:column: macros, call/filter blocks, include/import/extends,
// raw, recursive loops, other filters and tests, *args, printf-style %, non-string dict keys.

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace engine::tokenize {

/// One message of a conversation, as the template sees it: {"role": ..., "content": ...}.
struct ChatMessage {
    std::string role;
    std::string content;
};

/// A parsed chat template; immutable and cheap to copy, so one instance may render on any thread.
class ChatTemplate {
public:
    /// Parses once; throws engine::Error(InvalidInput) naming line:column and what is wrong for bad
    /// syntax (unclosed tag or string, unknown filter, ...) or unsupported constructs.
    static ChatTemplate parse(const std::string &source);

    /// Renders as transformers' apply_chat_template(tokenize=False): the variables are `messages`,
    /// `add_generation_prompt` and each entry of `specialTokens` (bos_token, eos_token, ...) as a
    /// string. raise_exception(msg) in the template throws Error(InvalidInput) carrying msg; so do
    /// runtime errors (with line:column) and text that is not valid UTF-8.
    std::string render(const std::vector<ChatMessage> &messages, bool addGenerationPrompt,
                       const std::map<std::string, std::string> &specialTokens) const;

private:
    ChatTemplate() = default; // only parse() makes one, so every instance holds a template
    struct Parsed;
    std::shared_ptr<const Parsed> m_parsed;
};

/// Byte spans [begin, end) of render(messages, false, specialTokens) that hold assistant turns, the
/// way LLaMA-Factory/TRL-style trainers find them without {% generation %} markers: for assistant
/// message i the span runs from the end of render(messages[:i], add_generation_prompt=true) to the
/// end of render(messages[:i+1], false), so it includes the end-of-turn text the template writes
/// after the content. Throws Error(InvalidInput) when a rendering is not a prefix of the next one
/// (the template is not incremental, so no span can be trusted).
std::vector<std::pair<size_t, size_t>> assistantSpans(const ChatTemplate &chatTemplate,
                                                      const std::vector<ChatMessage> &messages,
                                                      const std::map<std::string, std::string> &specialTokens);

} // namespace engine::tokenize
