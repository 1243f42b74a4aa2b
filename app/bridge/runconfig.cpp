#include "app/bridge/runconfig.h"

#include <nlohmann/json.hpp>

#include <exception>
#include <stdexcept>

namespace app {
namespace {

using nlohmann::json;
using namespace engine::train;

/// One problem in the JSON, named by its key.
struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Reader {
public:
    explicit Reader(const json &object) : m_object(object) {}

    template<typename T, typename Check>
    void read(const char *key, T &target, Check isType, const char *typeName) const
    {
        const auto it = m_object.find(key);
        if (it == m_object.end() || it->is_null())
            return;
        if (!isType(*it))
            throw ConfigError(std::string("\"") + key + "\" must be " + typeName + " (got " + it->dump() + ")");
        target = it->get<T>();
    }
    void integer(const char *key, int64_t &target) const
    {
        read(key, target, [](const json &v) { return v.is_number_integer(); }, "an integer");
    }
    void integer(const char *key, int &target) const
    {
        read(key, target, [](const json &v) { return v.is_number_integer(); }, "an integer");
    }
    void unsignedInteger(const char *key, uint64_t &target) const
    {
        read(key, target, [](const json &v) { return v.is_number_unsigned(); }, "a non-negative integer");
    }
    void number(const char *key, double &target) const
    {
        read(key, target, [](const json &v) { return v.is_number(); }, "a number");
    }
    void boolean(const char *key, bool &target) const
    {
        read(key, target, [](const json &v) { return v.is_boolean(); }, "true or false");
    }
    void text(const char *key, std::string &target) const
    {
        read(key, target, [](const json &v) { return v.is_string(); }, "a string");
    }
    /// A string that must be one of `names`; returns its index, or -1 when the key is absent.
    int choice(const char *key, std::initializer_list<const char *> names) const
    {
        std::string value;
        text(key, value);
        const auto it = m_object.find(key);
        if (it == m_object.end() || it->is_null())
            return -1;
        int index = 0;
        std::string list;
        for (const char *name : names) {
            if (value == name)
                return index;
            list += (index ? ", " : "") + std::string(name);
            ++index;
        }
        throw ConfigError(std::string("\"") + key + "\" must be one of " + list + " (got \"" + value + "\")");
    }
    const json *object(const char *key) const
    {
        const auto it = m_object.find(key);
        return it == m_object.end() || it->is_null() ? nullptr : &*it;
    }

private:
    const json &m_object;
};

std::vector<std::string> stringList(const json &value, const char *key)
{
    if (!value.is_array())
        throw ConfigError(std::string("\"") + key + "\" must be a list of names");
    std::vector<std::string> names;
    for (const json &item : value) {
        if (!item.is_string())
            throw ConfigError(std::string("\"") + key + "\" must be a list of names (got " + item.dump() + ")");
        names.push_back(item.get<std::string>());
    }
    return names;
}

void readLora(const json &lora, engine::model::LoraSettings &settings)
{
    if (!lora.is_object())
        throw ConfigError("\"lora\" must be an object");
    const Reader r(lora);
    r.integer("r", settings.r);
    r.number("alpha", settings.alpha);
    r.number("dropout", settings.dropout);
    r.boolean("rslora", settings.rslora);
    if (const json *targets = r.object("target_modules")) {
        if (targets->is_string()) {
            settings.targets.clear();
            settings.targetRegex = targets->get<std::string>();
        } else {
            settings.targets = stringList(*targets, "target_modules");
            settings.targetRegex.clear();
        }
    }
    if (const json *modules = r.object("modules_to_save"))
        settings.modulesToSave = stringList(*modules, "modules_to_save");
}

void readTraining(const json &t, TrainingParams &p)
{
    if (!t.is_object())
        throw ConfigError("\"training\" must be an object");
    const Reader r(t);
    r.text("model", p.modelPath);
    r.text("data", p.dataPath);
    r.text("tokenizer", p.tokenizerPath);
    r.integer("steps", p.steps);
    r.number("learning_rate", p.learningRate);
    r.integer("warmup_steps", p.warmupSteps);
    r.number("min_learning_rate_ratio", p.minLearningRateRatio);
    r.integer("batch_size", p.batchSize);
    r.integer("sequence_length", p.sequenceLength);
    r.number("weight_decay", p.weightDecay);
    r.number("grad_clip_norm", p.gradClipNorm);
    r.integer("threads", p.threads);
    r.text("device", p.device);
    if (const auto it = t.find("device_map"); it != t.end()) {
        p.autoDeviceMap = false;
        p.devicePlacement.clear();
        if (it->is_string() && it->get<std::string>() == "auto") {
            p.autoDeviceMap = true;
        } else if (it->is_array()) {
            for (const json &entry : *it) {
                if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_string())
                    throw ConfigError("\"device_map\" entries must be [module, device] pairs (got " + entry.dump() + ")");
                p.devicePlacement.emplace_back(entry[0].get<std::string>(), entry[1].get<std::string>());
            }
        } else if (!it->is_null()) {
            throw ConfigError("\"device_map\" must be \"auto\", a list of [module, device] pairs or null (got " + it->dump() + ")");
        }
    }
    r.unsignedInteger("seed", p.seed);
    r.boolean("save_model", p.saveModel);
    if (const int method = r.choice("method", {"full", "lora"}); method >= 0)
        p.method = method == 1 ? TrainingMethod::Lora : TrainingMethod::Full;
    if (const json *lora = r.object("lora"))
        readLora(*lora, p.lora);
    if (const int optimizer = r.choice("optimizer", {"adamw", "sgd"}); optimizer >= 0)
        p.optimizer = optimizer == 1 ? OptimizerKind::Sgd : OptimizerKind::AdamW;
    r.number("momentum", p.momentum);
    if (const int schedule = r.choice("schedule", {"constant", "linear", "cosine"}); schedule >= 0)
        p.schedule = schedule == 0 ? ScheduleKind::Constant : schedule == 1 ? ScheduleKind::Linear : ScheduleKind::Cosine;
    r.integer("epochs", p.epochs);
    r.integer("grad_accumulation", p.gradAccumulation);
    r.boolean("gradient_checkpointing", p.gradientCheckpointing);
    if (const int precision = r.choice("precision", {"fp32", "bf16", "fp16"}); precision >= 0)
        p.precision = precision == 1 ? Precision::Bf16 : precision == 2 ? Precision::Fp16 : Precision::Fp32;
    r.text("eval_data", p.evalDataPath);
    r.number("val_fraction", p.valFraction);
    r.integer("eval_every", p.evalEvery);
    r.integer("eval_batches", p.evalBatches);
    r.integer("save_every", p.saveEvery);
    r.integer("keep_checkpoints", p.keepCheckpoints);
    if (const int nonFinite = r.choice("on_non_finite_loss", {"stop", "skip"}); nonFinite >= 0)
        p.nonFinite = nonFinite == 1 ? NonFinitePolicy::Skip : NonFinitePolicy::Stop;
    r.boolean("inspect_guard", p.inspectGuard);
    if (const int badLines = r.choice("bad_lines", {"stop", "skip"}); badLines >= 0)
        p.skipBadLines = badLines == 1;
    r.text("sample_prompt", p.samplePrompt);
    r.integer("sample_tokens", p.sampleTokens);
}

} // namespace

bool readTrainingSettings(const QString &text, const TrainingParams &base, TrainingParams *out, QString *error)
{
    try {
        const json config = json::parse(text.toStdString());
        if (!config.is_object())
            throw ConfigError("the settings must be a JSON object");
        TrainingParams params = base;
        readTraining(config.contains("training") ? config["training"] : config, params);
        *out = std::move(params);
        return true;
    } catch (const json::exception &e) {
        if (error)
            *error = QStringLiteral("the settings are not valid JSON: %1").arg(QString::fromStdString(e.what()));
    } catch (const std::exception &e) {
        if (error)
            *error = QStringLiteral("the settings cannot be read: %1").arg(QString::fromStdString(e.what()));
    }
    return false;
}

QString settingsJson(const TrainingParams &params, SettingsScope scope, QString *error)
{
    try {
        json settings = params.toJson();
        settings.erase("threads");
        settings.erase("device_map");
        if (scope == SettingsScope::Preset) {
            for (const char *key : {"model", "data", "tokenizer", "eval_data", "device", "sample_prompt"})
                settings.erase(key);
        }
        settings["warmup_steps"] = params.warmupSteps;
        settings["eval_batches"] = params.evalBatches;
        settings["sample_tokens"] = params.sampleTokens;
        return QString::fromStdString(settings.dump());
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return {};
    }
}

} // namespace app
