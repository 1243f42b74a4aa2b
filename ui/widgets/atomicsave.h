#pragma once
// Saving a file the way exports must: into a temporary file beside the target, renamed over it only
// once written whole, so a failure leaves no file (and an existing one untouched).

#include <QString>

#include <functional>

namespace ui {

/// Calls write(temporaryPath, &why) to fill a new temporary file in the folder of `path`, then renames
/// it to `path` (mode 0644). On failure (no such folder, a folder that cannot be written, `write`
/// returning false or writing nothing, the rename) removes the temporary file, sets `error` to one line
/// naming `path` and the cause, and returns false.
bool saveAtomically(const QString &path, const std::function<bool(const QString &temporaryPath, QString *why)> &write,
                    QString *error);

} // namespace ui
