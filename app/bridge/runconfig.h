#pragma once
// Training settings as JSON and back: a stored run's config (what the trainer writes with createRun:
// {"training": TrainingParams::toJson(), "model": ..., ...}) read back into settings for "clone this
// run's settings", and the Train page's presets, kept in the same form.

#include "engine/train/trainingparams.h"

#include <QString>

namespace app {

/// Reads settings from `json`: a run's config ({"training": {...}, ...}) or a bare training object (a
/// preset). Keys that are absent keep their value in `base`; paths of the run's own output
/// (output_dir) and the run name are not taken. Returns false with one message naming the key when
/// the JSON is malformed or a key has the wrong type or an unknown value.
bool readTrainingSettings(const QString &json, const engine::train::TrainingParams &base,
                          engine::train::TrainingParams *out, QString *error);

/// What settingsJson keeps.
enum class SettingsScope {
    /// A preset: the hyperparameters only, without what belongs to the data or the machine (paths,
    /// device map, threads, device, the sample prompt).
    Preset,
    /// The whole form, to fill it again next session: everything but threads and the device map.
    Form,
};

/// The settings as TrainingParams::toJson() writes them, cut to `scope`, keeping warmup_steps -1 (10 %
/// of the steps) as it is, plus eval_batches and sample_tokens, which a run's config leaves out.
/// Empty with *error set when the settings cannot be written (a device name that is not one).
QString settingsJson(const engine::train::TrainingParams &params, SettingsScope scope, QString *error = nullptr);

} // namespace app
