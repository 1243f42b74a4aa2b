#pragma once

#include <QPalette>
#include <QString>

#include <string>

namespace ui {

/// How the GUI starts.
struct ApplicationOptions {
    std::string storePath; ///< run database from a flag; empty = the preference, the setting, else the XDG default
    bool startDemo = false; ///< open the Train page and start training the demo at once
};

/// Creates the QApplication, shows the main window and runs the event loop; returns its exit code.
int runApplication(int &argc, char **argv, const ApplicationOptions &options = {});

/// The colours of the whole application: the system's palette, or a light or dark one of our own.
enum class Theme { System, Light, Dark };

/// "system" / "light" / "dark" (as kept in the settings).
QString themeName(Theme theme);
/// The theme of a name; System for anything else.
Theme themeFromName(const QString &name);
/// Light: Fusion's standard palette. Dark: the same roles in dark greys with a blue highlight.
QPalette themePalette(Theme theme);
/// Sets the application palette (System: back to the platform's, following its changes). Widgets that
/// draw with their own colours (plots) get a PaletteChange event and redraw.
void applyTheme(Theme theme);
/// The theme applied last (System until applyTheme is called).
Theme currentTheme();

} // namespace ui
