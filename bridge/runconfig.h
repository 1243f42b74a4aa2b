#pragma once
// Training settings as JSON text and back, for the Qt side: a stored run's config ({"training": {...},
// "model": ...} as the trainer writes it) read into settings ("clone this run's settings"), the
// Train page's presets and the form kept between sessions. The rules are the settings' one
// declaration (engine/train/settingschema.h); this only crosses between QString and JSON.

#include "engine/train/settingschema.h"

#include <QString>

namespace bridge {

/// Reads the settings of `scope` from `json` (a run's config, whose "training" object holds them, or a
/// bare settings object) into a copy of `base`; absent keys keep `base`'s value. Returns false with
/// one message naming the key (and that key in *field, when asked) when the JSON is malformed or a key
/// has the wrong type or an unknown value.
bool readTrainingSettings(const QString &json, engine::train::SettingScope scope, const engine::train::TrainingParams &base,
                          engine::train::TrainingParams *out, QString *error, QString *field = nullptr);

/// The settings of `scope` as compact JSON text.
QString settingsJson(const engine::train::TrainingParams &params, engine::train::SettingScope scope);

} // namespace bridge
