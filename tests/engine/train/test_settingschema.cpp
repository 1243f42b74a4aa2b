// The training settings' one declaration (engine/train/settingschema.h): every setting round-trips
// through the stored JSON and through the command line's text, errors name their setting, and the
// table itself is consistent (unique keys and flags, defaults inside their ranges).

#include "engine/core/error.h"
#include "engine/model/deviceplacement.h"
#include "engine/train/settingschema.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

namespace {

using engine::train::SettingKind;
using engine::train::SettingScope;
using engine::train::SettingSpec;
using engine::train::TrainingParams;
using nlohmann::json;

/// A value of `spec` other than the one `p` holds, inside its range: what a user could set.
json otherValue(const SettingSpec &spec, const TrainingParams &p)
{
    const json now = spec.valueOf(p);
    switch (spec.kind) {
    case SettingKind::Integer: {
        const double high = spec.range ? std::min(spec.range->high, 1e6) : 1e6;
        int64_t candidate = now.get<int64_t>() + 3;
        if (candidate > high)
            candidate = now.get<int64_t>() - 1;
        if (spec.key == "threads")
            candidate = now.get<int64_t>() == 1 ? 0 : 1; // this machine may have one core
        if (spec.key == "warmup_steps")
            candidate = 7; // within the steps
        return json(candidate);
    }
    case SettingKind::Number: {
        double candidate = now.get<double>() * 0.5 + 0.0125;
        if (spec.range && candidate > spec.range->high)
            candidate = spec.range->low + (spec.range->high - spec.range->low) / 3;
        return json(candidate);
    }
    case SettingKind::Switch: return json(!now.get<bool>());
    case SettingKind::Choice:
        for (const auto &choice : spec.choices) {
            if (json(choice.value) != now)
                return json(choice.value);
        }
        break;
    case SettingKind::Names: return json::array({"lm_head", "model.embed_tokens"});
    case SettingKind::Modules: return json::array({"q_proj", "k_proj", "o_proj"});
    case SettingKind::DeviceMap:
        return json::array({json::array({"model.embed_tokens", "cpu"}), json::array({"model.layers.0", "disk"})});
    case SettingKind::Text:
    case SettingKind::Path: return json(std::string("it's a \"value\" with spaces, ") + spec.key);
    }
    ADD_FAILURE() << "no other value for " << spec.key;
    return now;
}

/// Settings with every setting away from its default (LoRA on, so that LoRA's settings count; SGD, so
/// that momentum does).
TrainingParams everythingChanged()
{
    TrainingParams p;
    p.method = engine::train::TrainingMethod::Lora;
    p.optimizer = engine::train::OptimizerKind::Sgd;
    p.distributed.worldSize = 2; // so that the data-parallel settings are stored too
    p.distributed.rank = 0;
    for (const SettingSpec &spec : engine::train::trainingSettings()) {
        if (spec.key == "method" || spec.key == "optimizer")
            continue;
        spec.setJson(p, otherValue(spec, p));
    }
    return p;
}

TEST(SettingSchema, KeysAndFlagsAreUniqueAndEverySettingIsDescribed)
{
    std::set<std::string> keys, flags;
    for (const SettingSpec &spec : engine::train::trainingSettings()) {
        EXPECT_TRUE(keys.insert(spec.key).second) << "duplicate key " << spec.key;
        if (!spec.flag.empty()) {
            EXPECT_TRUE(flags.insert(spec.flag).second) << "duplicate flag " << spec.flag;
            EXPECT_EQ(spec.flag.rfind("--", 0), 0u) << spec.flag;
            EXPECT_EQ(engine::train::settingOfFlag(spec.flag), &spec);
        }
        EXPECT_FALSE(spec.label.empty()) << spec.key;
        EXPECT_FALSE(spec.help.empty()) << spec.key;
        EXPECT_NE(spec.get, nullptr) << spec.key;
        EXPECT_NE(spec.set, nullptr) << spec.key;
        if (spec.kind == SettingKind::Choice) {
            EXPECT_GE(spec.choices.size(), 2u) << spec.key;
        }
        if (spec.kind == SettingKind::Integer || spec.kind == SettingKind::Number) {
            EXPECT_TRUE(spec.range.has_value()) << spec.key << " has no range";
        }
        EXPECT_EQ(&engine::train::settingSpec(spec.key), &spec);
    }
    // The flags users and scripts already type keep their names.
    for (const char *flag : {"--model", "--data", "--tokenizer", "--steps", "--lr", "--warmup", "--min-lr-ratio",
                             "--batch-size", "--seq-len", "--weight-decay", "--grad-clip", "--threads", "--device",
                             "--device-map", "--seed", "--name", "--output", "--no-save", "--method", "--lora-r",
                             "--lora-alpha", "--lora-dropout", "--lora-targets", "--rslora", "--modules-to-save",
                             "--optimizer", "--momentum", "--schedule", "--epochs", "--grad-accum", "--precision",
                             "--checkpointing", "--eval-data", "--val-fraction", "--eval-every", "--eval-batches",
                             "--save-every", "--keep", "--sample", "--sample-tokens", "--bad-lines", "--on-nan",
                             "--guard", "--dist-timeout", "--ddp-bucket-mb"})
        EXPECT_NE(engine::train::settingOfFlag(flag), nullptr) << flag;
    EXPECT_THROW(engine::train::settingSpec("no_such_setting"), engine::Error);
}

TEST(SettingSchema, DefaultsLieInTheirRanges)
{
    const TrainingParams defaults;
    EXPECT_NO_THROW(engine::train::validateSettings(defaults));
    for (const SettingSpec &spec : engine::train::trainingSettings()) {
        if (!spec.range)
            continue;
        const double v = spec.valueOf(defaults).get<double>();
        EXPECT_TRUE(v >= spec.range->low && v <= spec.range->high) << spec.key << " = " << v;
        if (spec.special) {
            EXPECT_EQ(spec.special->value, spec.range->low) << spec.key << ": a field shows its special value at its minimum";
        }
    }
}

// JSON -> params -> JSON: every stored setting comes back as it was.
TEST(SettingSchema, EverySettingRoundTripsThroughTheStoredJson)
{
    const TrainingParams changed = everythingChanged();
    const json stored = engine::train::settingsToJson(changed);
    TrainingParams read;
    read.distributed = changed.distributed;
    engine::train::readSettingsJson(stored, SettingScope::All, read);
    EXPECT_EQ(engine::train::settingsToJson(read), stored);
    for (const SettingSpec &spec : engine::train::trainingSettings()) {
        if (!spec.stored)
            continue;
        EXPECT_EQ(spec.valueOf(read), spec.valueOf(changed)) << spec.key;
        EXPECT_NE(spec.valueOf(read), spec.valueOf(TrainingParams{})) << spec.key << " was not changed by the test";
    }
    // The regex form of the LoRA targets too.
    TrainingParams regex = changed;
    regex.lora.setTargetsFromText(".*\\.(q|v)_proj");
    TrainingParams back;
    engine::train::readSettingsJson(engine::train::settingsToJson(regex), SettingScope::All, back);
    EXPECT_EQ(back.lora.targetRegex, ".*\\.(q|v)_proj");
    EXPECT_TRUE(back.lora.targets.empty());
}

// The stored JSON keeps the shape runs already in databases have (LoRA nested, null for full runs).
TEST(SettingSchema, StoredJsonKeepsItsShape)
{
    TrainingParams full;
    const json stored = engine::train::settingsToJson(full);
    EXPECT_TRUE(stored.at("lora").is_null());
    EXPECT_FALSE(stored.contains("dist_timeout")) << "a single process stores no data-parallel settings";
    EXPECT_FALSE(stored.contains("name"));
    EXPECT_FALSE(stored.contains("output_dir"));
    EXPECT_EQ(stored.at("learning_rate"), 3e-3);
    EXPECT_EQ(stored.at("inspect_guard"), true);
    EXPECT_EQ(stored.at("bad_lines"), "stop");
    EXPECT_EQ(stored.at("on_non_finite_loss"), "stop");
    EXPECT_TRUE(stored.at("device_map").is_null());
    TrainingParams lora;
    lora.method = engine::train::TrainingMethod::Lora;
    const json withLora = engine::train::settingsToJson(lora);
    EXPECT_EQ(withLora.at("lora").at("r"), 8);
    EXPECT_EQ(withLora.at("lora").at("target_modules"), json::array({"q_proj", "v_proj"}));
    lora.autoDeviceMap = true;
    EXPECT_EQ(engine::train::settingsToJson(lora).at("device_map"), "auto");
}

// A run stored before this schema (its JSON as the trainer wrote it then) reads back.
TEST(SettingSchema, ARunStoredEarlierReadsBack)
{
    const json old = json::parse(R"({"model":"m","data":"d.txt","tokenizer":"","steps":40,"learning_rate":0.002,
        "warmup_steps":4,"min_learning_rate_ratio":0.1,"batch_size":4,"sequence_length":64,"weight_decay":0.1,
        "grad_clip_norm":1.0,"threads":2,"device":"cpu","device_map":[["model","cpu"]],"seed":7,"save_model":true,
        "method":"lora","lora":{"r":4,"alpha":8.0,"dropout":0.0,"rslora":false,"target_modules":["q_proj"],
        "modules_to_save":[]},"optimizer":"adamw","momentum":0.9,"schedule":"linear","epochs":0,"grad_accumulation":2,
        "gradient_checkpointing":false,"precision":"fp32","eval_data":"","val_fraction":0.05,"eval_every":10,
        "eval_batches":0,"save_every":0,"keep_checkpoints":3,"on_non_finite_loss":"skip","inspect_guard":false,
        "bad_lines":"skip","sample_prompt":"","sample_tokens":40,"world_size":2,"launcher":"torchrun",
        "wall_seconds":12.5})");
    TrainingParams p;
    engine::train::readSettingsJson(old, SettingScope::All, p);
    EXPECT_EQ(p.steps, 40);
    EXPECT_EQ(p.lora.r, 4);
    EXPECT_EQ(p.lora.targets, std::vector<std::string>{"q_proj"});
    EXPECT_EQ(p.schedule, engine::train::ScheduleKind::Linear);
    EXPECT_EQ(p.nonFinite, engine::train::NonFinitePolicy::Skip);
    EXPECT_TRUE(p.skipBadLines);
    EXPECT_FALSE(p.inspectGuard);
    EXPECT_EQ(p.seed, 7u);
    ASSERT_EQ(p.devicePlacement.size(), 1u);
    EXPECT_EQ(p.devicePlacement[0].second, "cpu");
}

// Command line text -> params -> Copy as CLI's words -> the same params.
TEST(SettingSchema, EverySettingRoundTripsThroughTheCommandLine)
{
    const TrainingParams changed = everythingChanged();
    testing_support::TempDir dir("schema-cli");
    const std::string mapFile = (dir / "map.json").string();
    std::ofstream(mapFile) << engine::model::DevicePlacement{changed.devicePlacement}.toJson();
    const std::vector<std::string> words = engine::train::trainCommandWords(changed, mapFile);
    ASSERT_GE(words.size(), 2u);
    EXPECT_EQ(words[0], "tunebench");
    EXPECT_EQ(words[1], "train");
    TrainingParams parsed;
    parsed.distributed = changed.distributed;
    std::set<std::string> seen;
    for (size_t i = 2; i < words.size(); ++i) {
        const SettingSpec *spec = engine::train::settingOfFlag(words[i]);
        ASSERT_NE(spec, nullptr) << "unknown flag " << words[i];
        seen.insert(spec->key);
        if (spec->kind == SettingKind::Switch && spec->choices.empty()) {
            spec->setJson(parsed, json(!spec->negatedFlag));
            continue;
        }
        ASSERT_LT(i + 1, words.size()) << words[i] << " has no value";
        spec->setText(parsed, words[++i]);
    }
    for (const SettingSpec &spec : engine::train::trainingSettings()) {
        if (spec.flag.empty())
            continue;
        EXPECT_TRUE(seen.count(spec.key)) << spec.flag << " is missing from " << words.size() << " words";
        EXPECT_EQ(spec.valueOf(parsed), spec.valueOf(changed)) << spec.flag;
    }
}

TEST(SettingSchema, SettingsAtTheirDefaultsAndOnesThatDoNotApplyAreLeftOut)
{
    TrainingParams p;
    EXPECT_EQ(engine::train::trainCommandWords(p), (std::vector<std::string>{"tunebench", "train"}));
    p.lora.r = 32;   // LoRA's settings without LoRA
    p.momentum = 0.5; // momentum without SGD
    EXPECT_EQ(engine::train::trainCommandWords(p), (std::vector<std::string>{"tunebench", "train"}));
    p.method = engine::train::TrainingMethod::Lora;
    p.storePath = "/tmp/runs.sqlite3";
    EXPECT_EQ(engine::train::trainCommandWords(p),
              (std::vector<std::string>{"tunebench", "--db", "/tmp/runs.sqlite3", "train", "--method", "lora", "--lora-r", "32"}));
}

TEST(SettingSchema, BadTextIsRefusedNamingTheFlagAndTheSetting)
{
    TrainingParams p;
    auto refused = [&](const char *key, const std::string &text) -> std::string {
        try {
            engine::train::settingSpec(key).setText(p, text);
        } catch (const engine::Error &e) {
            EXPECT_EQ(e.field(), key);
            EXPECT_EQ(e.kind(), engine::ErrorKind::InvalidInput);
            return e.what();
        }
        ADD_FAILURE() << key << " took " << text;
        return {};
    };
    EXPECT_EQ(refused("steps", "eight"), "--steps eight: expected an integer");
    EXPECT_EQ(refused("steps", "8.5"), "--steps 8.5: expected an integer");
    EXPECT_EQ(refused("learning_rate", "fast"), "--lr fast: expected a number");
    EXPECT_EQ(refused("learning_rate", "1e-3x"), "--lr 1e-3x: expected a number");
    EXPECT_EQ(refused("seed", "-1"), "--seed -1: expected a non-negative integer");
    EXPECT_EQ(refused("inspect_guard", "maybe"), "--guard maybe: expected off or on");
    EXPECT_NE(refused("method", "qlora").find("must be one of full, lora"), std::string::npos);
    EXPECT_NE(refused("device_map", "/nonexistent/map.json").find("/nonexistent/map.json"), std::string::npos);
    EXPECT_EQ(p.steps, TrainingParams{}.steps) << "a refused value changes nothing";
}

TEST(SettingSchema, BadJsonIsRefusedNamingTheKey)
{
    TrainingParams p;
    auto refused = [&](const json &object) -> std::pair<std::string, std::string> {
        try {
            engine::train::readSettingsJson(object, SettingScope::All, p);
        } catch (const engine::Error &e) {
            return {e.what(), e.field()};
        }
        ADD_FAILURE() << "took " << object.dump();
        return {};
    };
    const auto [message, field] = refused({{"steps", "eight"}});
    EXPECT_EQ(message, "\"steps\" must be an integer (got \"eight\")");
    EXPECT_EQ(field, "steps");
    EXPECT_EQ(refused({{"schedule", "warm"}}).second, "schedule");
    EXPECT_EQ(refused({{"lora", {{"r", 2.5}}}}).second, "lora.r");
    EXPECT_EQ(refused({{"lora", "big"}}).second, "lora.r");
    EXPECT_EQ(refused({{"device_map", json({"model", "cpu"})}}).second, "device_map");
    EXPECT_EQ(refused({{"seed", -3}}).second, "seed");
    EXPECT_THROW(engine::train::readSettingsJson(json::array(), SettingScope::All, p), engine::Error);
    // One bad key leaves the others untouched.
    EXPECT_EQ(refused({{"batch_size", 2}, {"steps", "eight"}}).second, "steps");
    EXPECT_EQ(p.batchSize, TrainingParams{}.batchSize);
}

TEST(SettingSchema, ScopesKeepWhatTheySay)
{
    TrainingParams p = everythingChanged();
    const json preset = engine::train::settingsToJson(p, SettingScope::Preset);
    for (const char *key : {"model", "data", "tokenizer", "eval_data", "device", "sample_prompt", "threads", "device_map",
                            "dist_timeout", "name", "output_dir"})
        EXPECT_FALSE(preset.contains(key)) << key;
    EXPECT_TRUE(preset.contains("learning_rate"));
    const json form = engine::train::settingsToJson(p, SettingScope::Form);
    for (const char *key : {"threads", "device_map", "dist_timeout"})
        EXPECT_FALSE(form.contains(key)) << key;
    for (const char *key : {"model", "data", "sample_prompt", "device"})
        EXPECT_TRUE(form.contains(key)) << key;
    // Reading a preset leaves what it does not hold.
    TrainingParams target;
    target.modelPath = "mine";
    target.threads = 1;
    engine::train::readSettingsJson(engine::train::settingsToJson(p, SettingScope::All), SettingScope::Preset, target);
    EXPECT_EQ(target.modelPath, "mine");
    EXPECT_EQ(target.threads, 1);
    EXPECT_EQ(target.learningRate, p.learningRate);
}

TEST(SettingSchema, ValidationNamesTheSettingToChange)
{
    auto fieldOf = [](const TrainingParams &p) -> std::string {
        try {
            engine::train::validateSettings(p);
        } catch (const engine::Error &e) {
            return e.field();
        }
        return "(valid)";
    };
    TrainingParams p;
    p.learningRate = 0;
    EXPECT_EQ(fieldOf(p), "learning_rate");
    p = {};
    p.warmupSteps = p.steps + 1;
    EXPECT_EQ(fieldOf(p), "warmup_steps");
    p = {};
    p.momentum = 1.5;
    EXPECT_EQ(fieldOf(p), "momentum");
    p = {};
    p.valFraction = 0.1;
    p.evalDataPath = "eval.txt";
    EXPECT_EQ(fieldOf(p), "val_fraction");
    p = {};
    p.precision = engine::train::Precision::Fp16;
    EXPECT_EQ(fieldOf(p), "precision");
    p = {};
    p.threads = 100000;
    EXPECT_EQ(fieldOf(p), "threads");
    p = {};
    p.device = "tpu";
    EXPECT_EQ(fieldOf(p), "device");
    p = {};
    p.method = engine::train::TrainingMethod::Lora;
    p.lora.r = 0;
    EXPECT_EQ(fieldOf(p), "lora.r");
    p.lora.r = 8;
    p.lora.targets.clear();
    EXPECT_EQ(fieldOf(p), "lora.target_modules");
    p.lora.targetRegex = "(unclosed";
    EXPECT_EQ(fieldOf(p), "lora.target_modules");
    p = {};
    p.lora.r = 0; // LoRA's settings do not matter to a full fine-tune
    EXPECT_EQ(fieldOf(p), "(valid)");
    p = {};
    p.weightDecay = std::nan("");
    EXPECT_EQ(fieldOf(p), "weight_decay");
}

TEST(SettingSchema, MessagesReadAsBefore)
{
    TrainingParams p;
    p.momentum = 1.5;
    try {
        engine::train::validateSettings(p);
        FAIL();
    } catch (const engine::Error &e) {
        EXPECT_EQ(std::string(e.what()), "setting momentum = 1.5 is out of range: it must be between 0 and 0.999999");
    }
    p = {};
    p.learningRate = 0;
    try {
        engine::train::validateSettings(p);
        FAIL();
    } catch (const engine::Error &e) {
        EXPECT_EQ(std::string(e.what()), "setting learning rate = 0 must be greater than 0 and at most 10");
    }
}

} // namespace
