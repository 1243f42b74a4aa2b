// What fuzzing the readers found (tests/fuzz, scripts/fuzz.sh), one regression test per finding:
// the input, reduced, and the clean error it now gets.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/planmodel.h"
#include "engine/tokenize/hftokenizer.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using engine::ErrorKind;
using testing_support::expectError;

// fuzz_model_config: a number too large for a double is json::out_of_range, not parse_error, and
// escaped the config reader as a bare nlohmann exception.
TEST(FuzzFindings, ConfigJsonWithANumberPastDoubleIsInvalidInput)
{
    testing_support::TempDir dir("hugenumber");
    std::ofstream(dir / "config.json") << R"({"model_type": "llama", "rope_theta": 10000001e308})";
    expectError([&] { engine::plan::planModelFromPath(dir.path()); }, ErrorKind::InvalidInput, "invalid JSON");
}

TEST(FuzzFindings, TokenizerJsonWithANumberPastDoubleIsInvalidInput)
{
    expectError([] { engine::tokenize::HfTokenizer::fromText(R"({"model": 1e400})", "", "tokenizer.json", ""); },
                ErrorKind::InvalidInput, "tokenizer.json is not valid JSON");
}

// fuzz_device_map: "cuda:" and a hundred digits made std::stoi throw std::out_of_range.
TEST(FuzzFindings, DeviceMapWithAHugeCudaIndexIsInvalidInput)
{
    const auto document = nlohmann::ordered_json::parse(R"({"model.layers.0": "cuda:13333333333333333333333"})");
    expectError([&] { engine::plan::importDeviceMap(document, "map.json", {}, {}); }, ErrorKind::InvalidInput,
                "map.json");
}
