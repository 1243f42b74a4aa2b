// `tunebench doctor`: which libtorch, CUDA and devices this tunebench runs on, and its threads and BLAS.

#include "app/cli/command.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/settings.h"
#include "engine/core/systeminfo.h"
#include "engine/core/threads.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace app::cli {
namespace {

class DoctorCommand : public Command {
public:
    explicit DoctorCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("doctor", "Show the libtorch, CUDA, GPUs, threads and BLAS in use");
        m_command->add_flag("--json", m_json, "Print one JSON object");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([&] {
            engine::applyThreadCount(engine::loadSettings().threads); // the thread count every job uses
            const engine::SystemInfo info = engine::systemInfo();
            if (m_json)
                std::printf("%s\n", engine::systemInfoJson(info).dump(2).c_str());
            else
                std::fputs(engine::describeSystem(info).c_str(), stdout);
            return ExitOk;
        });
    }

private:
    CLI::App *m_command = nullptr;
    bool m_json = false;
};

} // namespace

std::unique_ptr<Command> makeDoctorCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<DoctorCommand>(app);
}

} // namespace app::cli
