// tunebench-gui: the desktop workbench. It links Qt and the engine's torch-free parts only, so its
// window appears before libtorch is loaded; the engine module (libtorch with it) loads on the engine
// thread right after the first paint (bridge/enginejobs.h). `tunebench` (front.cpp) execs it when
// run with no command (or --demo) and a display.

#include "engine/core/settings.h"
#include "ui/application.h"

#include <cstdlib>
#include <string>
#include <string_view>

namespace {

/// The blas_core_type setting (`tunebench doctor --use-blas-core`). OpenBLAS reads OPENBLAS_CORETYPE when
/// it loads, which here is when the engine module loads, after main: setting it now is enough (the
/// headless commands start again with it instead, app/main.cpp). An environment that sets it wins; a
/// settings file that cannot be read is the main window's to report.
void applyBlasCoreSetting()
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return;
    try {
        if (const std::string core = engine::loadSettings().blasCoreType; !core.empty())
            setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    } catch (...) {
    }
}

} // namespace

int main(int argc, char **argv)
{
    applyBlasCoreSetting();
    ui::ApplicationOptions options;
    options.startDemo = argc == 2 && std::string_view(argv[1]) == "--demo";
    return ui::runApplication(argc, argv, options);
}
