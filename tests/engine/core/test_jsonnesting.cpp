// engine/core/jsonnesting.h: the cap on how deeply JSON from outside may nest, and the readers that
// apply it. nlohmann::json's copy and dump() recurse once per level: in a release build a config.json
// of 100,000 nested brackets (200 KB) crashed wherever a reader copied or printed it.

#include "engine/core/jsonnesting.h"
#include "engine/io/safetensorsheader.h"
#include "engine/io/shardindex.h"
#include "engine/model/deviceplacement.h"
#include "engine/plan/planmodel.h"
#include "engine/store/runfolder.h"
#include "engine/tokenize/hftokenizer.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using engine::ErrorKind;
using testing_support::expectError;

namespace {

/// {"key": [[[...1...]]]} with `depth` brackets.
std::string deepJson(const std::string &key, size_t depth)
{
    return "{\"" + key + "\": " + std::string(depth, '[') + "1" + std::string(depth, ']') + "}";
}

constexpr size_t kDeep = 200000; // past where copying crashes an 8 MiB stack (~70,000 levels)
const char *const kNeedle = "JSON nests deeper than 256 levels";

void writeFile(const std::filesystem::path &path, const std::string &text)
{
    std::ofstream(path, std::ios::binary) << text;
}

} // namespace

TEST(JsonNesting, CountsArraysAndObjectsNotBracketsInStrings)
{
    EXPECT_EQ(engine::jsonNesting("1"), 0);
    EXPECT_EQ(engine::jsonNesting(R"({"a": [1, {"b": []}]})"), 4);
    EXPECT_EQ(engine::jsonNesting(R"({"a": "[[[[{{{{", "b": "\"[[["})"), 1);
    EXPECT_EQ(engine::jsonNesting("[[]][[]]"), 2);
    // Stops counting one level past the limit: the answer only has to say "too deep".
    EXPECT_EQ(engine::jsonNesting(std::string(1000, '['), 10), 11);
}

TEST(JsonNesting, LimitIsNamedInTheError)
{
    engine::checkJsonNesting(deepJson("a", 255), "ok.json");
    expectError([] { engine::checkJsonNesting(deepJson("a", 257), "deep.json"); }, ErrorKind::InvalidInput,
                "deep.json: JSON nests deeper than 256 levels");
}

// Each reader refuses such text before parsing, naming the limit, instead of leaving the value to
// the first copy or dump() that would run out of stack.
TEST(JsonNesting, DeepConfigJsonIsRefused)
{
    testing_support::TempDir dir("deepconfig");
    writeFile(dir / "config.json", deepJson("model_type", kDeep));
    expectError([&] { engine::plan::planModelFromPath(dir.path()); }, ErrorKind::InvalidInput, kNeedle);
}

TEST(JsonNesting, DeepTokenizerJsonIsRefused)
{
    expectError([] { engine::tokenize::HfTokenizer::fromText(deepJson("model", kDeep), "", "tokenizer.json", ""); },
                ErrorKind::InvalidInput, kNeedle);
}

TEST(JsonNesting, DeepShardIndexIsRefused)
{
    expectError([] { engine::io::parseShardIndex(deepJson("weight_map", kDeep), "/m", "/m/model.safetensors.index.json"); },
                ErrorKind::InvalidInput, kNeedle);
}

TEST(JsonNesting, DeepSafetensorsHeaderIsRefused)
{
    const std::string header = deepJson("__metadata__", kDeep);
    expectError([&] { engine::io::parseSafetensorsHeader(header, 8 + header.size(), "model.safetensors"); },
                ErrorKind::InvalidInput, kNeedle);
}

TEST(JsonNesting, DeepDevicePlacementIsRefused)
{
    expectError([] { engine::model::DevicePlacement::fromJson(deepJson("model.layers.0", kDeep), "--device-map"); },
                ErrorKind::InvalidInput, kNeedle);
}

// The run store's readers keep their contract (malformed: defaults, no marker), without the crash.
TEST(JsonNesting, DeepStoredRunConfigReadsAsMalformed)
{
    const auto config = engine::store::parseRunConfig(deepJson("training", kDeep));
    EXPECT_TRUE(config.training.empty());
    testing_support::TempDir dir("deepmarker");
    writeFile(dir / engine::store::kRunMarker, deepJson("run_id", kDeep));
    EXPECT_FALSE(engine::store::readRunMarker(dir.path()).has_value());
}
