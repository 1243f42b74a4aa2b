#pragma once
// The `tunebench train` command that runs a job with given settings headless: the Train page's
// "Copy as CLI Command". The words come from the settings' one declaration
// (engine/train/settingschema.h: trainCommandWords); here they become a shell line.

#include "engine/train/trainingparams.h"

#include <QString>
#include <QStringList>

namespace bridge {

/// The words of the command, "tunebench" first: `tunebench [--db STORE] train --flag value ...`.
/// deviceMapFile: the file that holds params.devicePlacement (see writeDeviceMapFile); used only when
/// the placement is not empty.
QStringList trainCommandLine(const engine::train::TrainingParams &params, const QString &deviceMapFile = {});

/// The words joined for a POSIX shell: a word with characters the shell would read is single-quoted.
QString shellCommand(const QStringList &words);

/// Writes `placement` as Accelerate's device-map JSON to a file named after its content in the
/// cache folder (for `--device-map FILE`) and returns its path; empty with *error set when it
/// cannot be written.
QString writeDeviceMapFile(const std::vector<std::pair<std::string, std::string>> &placement, QString *error = nullptr);

} // namespace bridge
