#pragma once
// One declaration per training setting: its key (the JSON name), `tunebench train` flag, kind, default
// (TrainingParams' member initialiser), range or choices, label, help and group. The settings stored
// with a run, the CLI's options, Copy as CLI Command, `--resume`, the presets and the Train page's
// fields all read this table. Adding a setting is one entry in settingschema.cpp (plus its member in
// TrainingParams and its use in the trainer). Torch-free and Qt-free.
//
// How to use:
//   for (const SettingSpec &s : trainingSettings())       // in the table's order (the form's order)
//       show(s.label, s.text(params));
//   settingSpec("learning_rate").setText(params, "3e-4");  // throws Error(InvalidInput), field()
//                                                           // "learning_rate", when it is no number
//   nlohmann::json stored = settingsToJson(params);         // as stored with a run
//   readSettingsJson(stored, SettingScope::All, params);   // and back; absent keys keep their value
//   validateSettings(params);                              // ranges and rules; Error::field() names the setting

#include "engine/train/trainingparams.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine::train {

/// What a setting holds, which decides its JSON type, its text and the field that edits it.
enum class SettingKind {
    Text,      ///< free text (a run name, a prompt); JSON string
    Path,      ///< a file or folder; JSON string ("" = none)
    Integer,   ///< JSON integer
    Number,    ///< JSON number
    Switch,    ///< JSON true / false; on the command line a bare flag (--checkpointing; --no-save turns off)
               ///< or, with `choices` {off, on}, a flag with a word (--guard on)
    Choice,    ///< one of `choices`; JSON string
    Names,     ///< a list of names; JSON array, comma-separated as text
    Modules,   ///< PEFT's target_modules: a list of names (JSON array) or a regular expression (JSON string)
    DeviceMap, ///< JSON "auto", [[module, device], ...] or null; on the command line "auto" or a map file
};

/// Where the Train page shows a setting (its tab, or a box inside one).
enum class SettingGroup { Basics, Lora, Optimizer, Evaluation, Checkpoints, Hardware, DataParallel };

/// "Basics", "LoRA", "Optimizer", "Evaluation", "Checkpoints and output", "Hardware", "Data parallel".
const char *settingGroupTitle(SettingGroup group);

struct SettingChoice {
    std::string value; ///< as JSON and the command line write it ("cosine")
    std::string label; ///< as the Train page shows it ("Cosine decay")
};

/// The values validateSettings accepts (Integer and Number).
struct SettingRange {
    double low = 0;
    double high = 0;
    bool lowExcluded = false; ///< the value must be greater than `low` (a learning rate of 0 trains nothing)
};

/// A value that means something other than its number ("-1: 10 % of the steps", "0: off").
struct SpecialValue {
    double value = 0;
    std::string text;
};

/// Which settings a JSON object holds or is read for.
enum class SettingScope {
    All,    ///< everything stored with a run
    Form,   ///< the Train page kept between sessions: all but this machine's threads and device map
    Preset, ///< a preset: the hyperparameters only (no paths, devices, threads, sample prompt)
};

struct SettingSpec {
    std::string key;   ///< the JSON name; "lora.r" is "r" inside the object "lora"
    std::string flag;  ///< `tunebench train`'s flag ("--lr"); empty when the command line has none
    SettingKind kind = SettingKind::Text;
    std::string label; ///< the Train page's label, and the setting's name in messages ("Learning rate")
    std::string help;  ///< one line: the flag's help and the field's tooltip
    SettingGroup group = SettingGroup::Basics;
    std::optional<SettingRange> range;    ///< Integer and Number
    std::vector<SettingChoice> choices;   ///< Choice: every value; Switch: {off, on} words; Text: suggestions
    std::optional<SpecialValue> special;  ///< the field shows this text at this value
    std::string unit;                     ///< shown after the value in the field (" tokens")
    std::string placeholder;              ///< what an empty Text or Path field means ("the bundled corpus")
    double step = 1;                      ///< the field's step (Number)
    int decimals = 0;                     ///< Number: digits the field shows; 0 = as many as the value needs
    bool negatedFlag = false;             ///< Switch: the flag turns it off (--no-save)
    bool folder = false;                  ///< Path: a folder (else a file)
    bool resumable = false;               ///< `train --resume RUN` may change it (steps, checkpoints, evaluation)
    bool preset = true;                   ///< presets keep it (hyperparameters, not paths or devices)
    bool stored = true;                   ///< stored with the run (the name and output folder are the run's own)
    bool machine = false;                 ///< about this machine (threads, device map): not kept with the form
    /// Whether the setting matters for these settings (LoRA's for a LoRA run, momentum for SGD): Copy as
    /// CLI leaves it out otherwise, and the form disables its field. Null = always.
    bool (*applies)(const TrainingParams &) = nullptr;

    nlohmann::json (*get)(const TrainingParams &) = nullptr;
    /// Sets a value already checked against the kind's JSON type and the choices.
    void (*set)(TrainingParams &, const nlohmann::json &) = nullptr;

    bool appliesTo(const TrainingParams &params) const { return !applies || applies(params); }
    /// The value as JSON (as stored).
    nlohmann::json valueOf(const TrainingParams &params) const { return get(params); }
    /// Checks `value` against the kind's JSON type and the choices, then sets it. Error(InvalidInput)
    /// with this key, naming it: "\"batch_size\" must be an integer (got \"eight\")".
    void setJson(TrainingParams &params, const nlohmann::json &value) const;
    /// The value as the command line and the form write it ("0.003", "q_proj,v_proj", "on", "auto").
    std::string text(const TrainingParams &params) const;
    /// Reads `text` as the command line gives it (a Switch without words: "true" / "false"; a DeviceMap:
    /// "auto" or a map file). Error(InvalidInput) with this key, naming the flag and what it expected.
    void setText(TrainingParams &params, const std::string &text) const;
    /// The name in messages: the label, lowercased unless it starts with an acronym ("learning rate",
    /// "LoRA rank").
    std::string messageName() const;
};

/// Every training setting, in the form's order.
const std::vector<SettingSpec> &trainingSettings();
/// The setting of `key`; throws Error(Internal) for an unknown key (a programming error).
const SettingSpec &settingSpec(std::string_view key);
/// The setting of a `tunebench train` flag ("--lr"); nullptr when none has it.
const SettingSpec *settingOfFlag(std::string_view flag);

/// The settings as stored with a run: every stored setting, LoRA's only for a LoRA run ("lora": null
/// otherwise), the data-parallel ones only in a data-parallel run.
nlohmann::json settingsToJson(const TrainingParams &params);
/// The settings of `scope` as JSON: a preset, or the form to fill again next session.
nlohmann::json settingsToJson(const TrainingParams &params, SettingScope scope);
/// Reads the settings of `scope` from `json` (a run's stored settings, a preset) into `params`: a key
/// that is absent or null keeps its value, other keys (a run's facts: world_size) are ignored. A value
/// of the wrong type or an unknown choice throws Error(InvalidInput) naming the key (field() = key).
void readSettingsJson(const nlohmann::json &json, SettingScope scope, TrainingParams &params);

/// Every rule the settings must meet before a job starts: each range, then the rules between settings
/// (warmup within the steps, eval data or a validation fraction, fp16 on a GPU, threads on this machine,
/// LoRA targets). Throws Error(InvalidInput) whose field() is the setting to change.
void validateSettings(const TrainingParams &params);

/// `tunebench train` with the flags that give `params` (those away from their defaults, the ones that
/// apply), as separate words: "tunebench", ["--db", storePath,] "train", "--steps", "42", ...
/// `deviceMapFile` names a file holding params.devicePlacement (a map given to the run).
std::vector<std::string> trainCommandWords(const TrainingParams &params, const std::string &deviceMapFile = {});

/// A number as the shortest text that reads back to the same double ("0.003", "2e-05").
std::string shortestNumber(double value);

} // namespace engine::train
