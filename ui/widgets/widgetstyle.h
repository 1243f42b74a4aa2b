#pragma once
// Small helpers the custom-painted widgets share: byte counts for people, and colours that read on
// both light and dark palettes.

#include <QColor>
#include <QPalette>
#include <QString>

namespace ui {

/// "512 B", "3.0 KiB", "1.3 GiB" (binary units, one decimal above bytes).
QString formatBytes(qint64 bytes);
/// "13,476,839,424 bytes" (grouped with the current locale).
QString formatExactBytes(qint64 bytes);
/// Black or white, whichever reads better on `background`.
QColor textColorOn(const QColor &background);
/// True when `window` is a dark colour (dark theme).
bool isDark(const QColor &window);
/// The red used for conflicts and overflow, tuned for the theme of `window`.
QColor alarmColor(const QColor &window);
/// The green used for "fits"/"ok" verdict text, tuned for the theme of `window`.
QColor okColor(const QColor &window);
/// The dark theme's palette (Preferences > Theme > Dark; the pictures and benchmarks in dark).
QPalette darkPalette();

} // namespace ui
