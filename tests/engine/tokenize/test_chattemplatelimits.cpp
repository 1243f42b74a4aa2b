// Hostile chat templates (tokenizer_config.json is code from whoever published the model): each
// limit of engine/tokenize/jinja/jinjalimits.h turns what used to crash, hang or take all memory
// into an InvalidInput error that names the limit.

#include "engine/tokenize/chattemplate.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using engine::ErrorKind;
using engine::tokenize::ChatMessage;
using engine::tokenize::ChatTemplate;
using testing_support::expectError;

namespace {

const std::vector<ChatMessage> kMessages = {{"user", "hi"}, {"assistant", "hello"}};

std::string repeated(const std::string &unit, size_t times)
{
    std::string out;
    for (size_t i = 0; i < times; ++i)
        out += unit;
    return out;
}

void expectParseError(const std::string &source, const std::string &needle)
{
    expectError([&] { ChatTemplate::parse(source); }, ErrorKind::InvalidInput, needle);
}

void expectRenderError(const std::string &source, const std::string &needle)
{
    const auto chat = ChatTemplate::parse(source);
    expectError([&] { chat.render(kMessages, false, {}); }, ErrorKind::InvalidInput, needle);
}

std::string render(const std::string &source) { return ChatTemplate::parse(source).render(kMessages, false, {}); }

} // namespace

// Regression: 100,000 nested parentheses ran the parser's recursion out of stack (SIGSEGV in
// `tunebench train --preview`).
TEST(ChatTemplateLimits, DeepParenthesesAreRefusedNotACrash)
{
    expectParseError("{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}",
                     "chat template line 1:");
    expectParseError("{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}",
                     "expressions nest deeper than 256 levels");
}

TEST(ChatTemplateLimits, EveryRecursiveExpressionFormIsBounded)
{
    const std::vector<std::pair<std::string, std::string>> forms = {
        {"[", "]"}, {"{'a': ", "}"}, {"not ", ""}, {"-", ""}, {"x[", "]"}, {"f(", ")"}, {"1 if x else ", ""}};
    for (const auto &[open, close] : forms) {
        SCOPED_TRACE(open);
        expectParseError("{{ " + repeated(open, 100000) + "1" + repeated(close, 100000) + " }}",
                         "expressions nest deeper than 256 levels");
    }
}

// A long left-leaning chain recurses in the evaluator and the destructor, not in the parser.
TEST(ChatTemplateLimits, LongOperatorAndFilterChainsAreBounded)
{
    expectParseError("{{ 1" + repeated(" + 1", 100000) + " }}", "expressions nest deeper than 256 levels");
    expectParseError("{{ 'a'" + repeated("|trim", 100000) + " }}", "expressions nest deeper than 256 levels");
    expectParseError("{{ x" + repeated(".a", 100000) + " }}", "expressions nest deeper than 256 levels");
}

TEST(ChatTemplateLimits, NestingJustUnderTheLimitStillWorks)
{
    EXPECT_EQ(render("{{ " + repeated("(", 200) + "1" + repeated(")", 200) + " }}"), "1");
    EXPECT_EQ(render("{{ 0" + repeated(" + 1", 200) + " }}"), "200");
    EXPECT_EQ(render(repeated("{% if true %}", 200) + "x" + repeated("{% endif %}", 200)), "x");
}

TEST(ChatTemplateLimits, DeeplyNestedBlocksAreRefused)
{
    expectParseError(repeated("{% if true %}", 100000), "blocks nest deeper than 256 levels");
    expectParseError(repeated("{% for m in messages %}", 100000), "blocks nest deeper than 256 levels");
}

TEST(ChatTemplateLimits, ValuesNestedByALoopAreRefused)
{
    expectRenderError("{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}",
                      "values nest deeper than 256 levels");
}

// Python prints a namespace that holds itself as `...`; repr() here recursed until the stack ran out.
TEST(ChatTemplateLimits, NamespaceThatHoldsItselfIsRefusedWhenPrinted)
{
    expectRenderError("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}", "values nest deeper than 256 levels");
    // Not printed, it renders (and the cycle is broken afterwards: LeakSanitizer checks in the fuzzer).
    EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.self = ns %}ok"), "ok");
}

TEST(ChatTemplateLimits, NestedLoopsStopAtTheIterationLimit)
{
    expectRenderError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                      "for loops run more than 1000000 iterations");
}

TEST(ChatTemplateLimits, OutputAndStringsStopAt16MiB)
{
    expectRenderError("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "the rendered text grows past 16 MiB");
    expectRenderError("{{ 'x' * 20000000 }}", "a string grows past 16 MiB");
    expectRenderError("{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                      "a string grows past 16 MiB");
    expectRenderError("{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                      "a string grows past 16 MiB");
    expectRenderError("{{ ('x' * 1000000).replace('', 'abcdefghijklmnopqrstuvwxyz') }}", "a string grows past 16 MiB");
    expectRenderError("{{ (['x' * 1000000] * 20) | join }}", "a string grows past 16 MiB");
    expectRenderError("{{ [[1]] | tojson(indent=1000000000) }}", "indent over 64");
}

TEST(ChatTemplateLimits, ListsStopAtAMillionItems)
{
    expectRenderError("{{ [1] * 2000000 }}", "a list grows past 1048576 items");
    expectRenderError("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                      "a list grows past 1048576 items");
}

// Each string under the limits, but 100,000 copies of a 10 MB one is a terabyte.
TEST(ChatTemplateLimits, TextBuiltInOneRenderingIsBounded)
{
    expectRenderError("{% set ns = namespace(l=[]) %}{% set big = 'x' * 10000000 %}"
                      "{% for i in range(100000) %}{% set ns.l = ns.l + [big] %}{% endfor %}",
                      "MiB of text in one rendering");
}

// Found by fuzz_chat_template: a float literal past double's range made std::stod throw
// std::out_of_range out of ChatTemplate::parse. Python reads 1e999 as inf.
TEST(ChatTemplateLimits, FloatLiteralsPastDoubleAreInfinityAsInPython)
{
    EXPECT_EQ(render("{{ 445766449547e644966449 }} {{ -1e999 }} {{ 1e-999 }}"), "inf -inf 0.0");
}

// Casting a double past int64 is undefined behaviour (UBSan); Python would make a big integer.
TEST(ChatTemplateLimits, IntOfAHugeFloatIsAnOverflowError)
{
    expectRenderError("{{ 1e300 | int }}", "integer overflow");
    expectRenderError("{{ '1e300' | int }}", "integer overflow");
    EXPECT_EQ(render("{{ -9.2e18 | int }} {{ '2.5' | int }}"), "-9200000000000000000 2");
}

// Found by fuzz_chat_template (a 10 s timeout): integer ** multiplied once per unit of the exponent.
TEST(ChatTemplateLimits, IntegerPowerTakesLogarithmicSteps)
{
    EXPECT_EQ(render("{{ 1 ** 5555555550 }} {{ (-1) ** 9223372036854775807 }} {{ 0 ** 4000000000 }}"), "1 -1 0");
    EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 3 ** 39 }} {{ 7 ** 0 }}"),
              "4611686018427387904 -9223372036854775808 4052555153018976267 1");
    expectRenderError("{{ 2 ** 63 }}", "integer overflow");
    expectRenderError("{{ 3 ** 5555555550 }}", "integer overflow");
}
