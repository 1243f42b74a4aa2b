#pragma once

#include <string>

namespace ui {

/// How the GUI starts.
struct ApplicationOptions {
    std::string storePath; ///< run database from a flag; empty = the setting, else the XDG default
    bool startDemo = false; ///< open the Train page and start training the demo at once
};

/// Creates the QApplication, shows the main window and runs the event loop; returns its exit code.
int runApplication(int &argc, char **argv, const ApplicationOptions &options = {});

} // namespace ui
