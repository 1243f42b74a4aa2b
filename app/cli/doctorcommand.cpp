// `tunebench doctor`: which libtorch, CUDA and devices this tunebench runs on, its threads and BLAS,
// and the matrix-multiply rate measured now against what the CPU can do. When Debian's OpenBLAS runs
// generic kernels on a CPU with faster ones, it says so; `--try-blas-core` measures and checks the
// faster kernels in a child process, and `--use-blas-core` keeps them as a setting (never silently).

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/blascheck.h"
#include "engine/core/error.h"
#include "engine/core/settings.h"
#include "engine/core/systeminfo.h"
#include "engine/core/threads.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

namespace app::cli {
namespace {

std::string gflops(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.0f GFLOP/s", value);
    return buffer;
}

/// OpenBLAS core names are single words ("SkylakeX", "Haswell", "Zen"); anything else goes nowhere near an environment.
std::string checkedCoreName(const std::string &name, const char *flag)
{
    if (name.empty() || name.size() > 32
        || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) != 0; })) {
        throw engine::invalidInput(std::string(flag) + " \"" + name
                                   + "\": give an OpenBLAS core name such as SkylakeX, Haswell or Zen (letters and digits)");
    }
    return name;
}

/// The matmul check run by a fresh tunebench with OPENBLAS_CORETYPE=core (it is read when OpenBLAS loads).
nlohmann::json probeWithCore(const std::string &core)
{
    // This executable's own path (in the shell popen starts, /proc/self/exe would be the shell).
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        throw engine::ioError("cannot find this tunebench executable (/proc/self/exe): " + ec.message());
    std::string quoted = "'";
    for (const char c : self.string())
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    const std::string command = "OPENBLAS_CORETYPE=" + core + " " + quoted + " doctor --matmul-probe 2>/dev/null";
    FILE *pipe = popen(command.c_str(), "r");
    if (!pipe)
        throw engine::ioError("could not start a tunebench process to measure the " + core + " kernels");
    std::string out;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
        out.append(buffer, n);
    const int status = pclose(pipe);
    const nlohmann::json result = nlohmann::json::parse(out, nullptr, false);
    if (status != 0 || !result.is_object() || !result.contains("matmul")) {
        throw engine::invalidInput("the " + core + " kernels did not run on this CPU (the probe exited with status "
                                   + std::to_string(status) + "): do not use them");
    }
    return result;
}

class DoctorCommand : public Command {
public:
    explicit DoctorCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("doctor", commandSummary("doctor"));
        m_command->add_flag("--json", m_json, "Print one JSON object");
        m_command->add_flag("--no-matmul", m_noMatmul, "Skip measuring the matmul rate (about a second)");
        m_command->add_option("--try-blas-core", m_tryCore,
                              "Measure and check OpenBLAS's kernels for this core type (OPENBLAS_CORETYPE, e.g. "
                              "SkylakeX) in a fresh process, beside the kernels in use");
        m_command->add_option("--use-blas-core", m_useCore,
                              "Check those kernels, then keep them for every tunebench process (a setting); off = "
                              "OpenBLAS's own choice again");
        m_command->add_flag("--matmul-probe", m_probe, "Print the matmul check as JSON (what --try-blas-core runs)")
            ->group(""); // internal
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([&]() -> int {
            engine::Settings settings = engine::loadSettings();
            engine::applyThreadCount(settings.threads); // the thread count every job uses
            const engine::CpuFeatures cpu = engine::cpuFeatures();
            if (m_probe) {
                const engine::MatmulCheck check = engine::checkMatmul();
                std::printf("%s\n", engine::blasCheckJson(cpu, engine::blasInfo(cpu), &check).dump().c_str());
                return ExitOk;
            }
            if (!m_useCore.empty())
                return useCore(settings, cpu);
            if (!m_tryCore.empty())
                return tryCore(checkedCoreName(m_tryCore, "--try-blas-core"), cpu);

            const engine::SystemInfo info = engine::systemInfo();
            const engine::BlasInfo blas = engine::blasInfo(cpu);
            std::optional<engine::MatmulCheck> check;
            if (!m_noMatmul)
                check = engine::checkMatmul();
            if (m_json) {
                nlohmann::json j = engine::systemInfoJson(info);
                j.update(engine::blasCheckJson(cpu, blas, check ? &*check : nullptr));
                j["blas_core_setting"] = settings.blasCoreType;
                std::printf("%s\n", j.dump(2).c_str());
                return ExitOk;
            }
            std::fputs(engine::describeSystem(info).c_str(), stdout);
            char mhz[32];
            std::snprintf(mhz, sizeof mhz, "%.0f MHz", cpu.mhz);
            std::printf("cpu       %s (%s, %s)\n", cpu.model.empty() ? "unknown" : cpu.model.c_str(), cpu.vector().c_str(), mhz);
            if (blas.openblas) {
                std::printf("openblas  %s; kernels %s%s\n", blas.config.c_str(), blas.coreName.c_str(),
                            blas.coreTypeEnv.empty() ? ""
                                : (" (OPENBLAS_CORETYPE=" + blas.coreTypeEnv
                                   + (settings.blasCoreType == blas.coreTypeEnv ? ", from the setting blas_core_type" : "")
                                   + ")").c_str());
            }
            if (check) {
                const double peak = engine::cpuPeakGflops(cpu, check->threads);
                std::printf("matmul    %s (%dx%d fp32, %d thread%s, results %s) of ~%s this CPU can reach (%.0f %%)\n",
                            gflops(check->gflops).c_str(), check->n, check->n, check->threads, check->threads == 1 ? "" : "s",
                            check->correct ? "correct" : "WRONG", gflops(peak).c_str(), 100.0 * check->gflops / peak);
            }
            if (!blas.suggestedCore.empty()) {
                std::printf("advice    OpenBLAS runs its %s kernels on this %s CPU; its %s kernels are made for it.\n"
                            "          Measure and check them: tunebench doctor --try-blas-core %s\n"
                            "          Keep them (a setting; every tunebench process then starts with them): "
                            "tunebench doctor --use-blas-core %s\n",
                            blas.coreName.c_str(), cpu.vector().c_str(), blas.suggestedCore.c_str(),
                            blas.suggestedCore.c_str(), blas.suggestedCore.c_str());
            }
            return ExitOk;
        });
    }

private:
    /// Both kernels side by side; returns the candidate's check.
    nlohmann::json compare(const std::string &core, const engine::CpuFeatures &cpu)
    {
        const engine::MatmulCheck now = engine::checkMatmul();
        const nlohmann::json candidate = probeWithCore(core);
        const nlohmann::json &m = candidate["matmul"];
        std::printf("kernels in use (%s): %s, results %s\n", engine::blasInfo(cpu).coreName.c_str(),
                    gflops(now.gflops).c_str(), now.correct ? "correct" : "WRONG");
        std::printf("%s kernels: %s, results %s (largest relative error %.2g), %s in use\n", core.c_str(),
                    gflops(m["gflops"].get<double>()).c_str(), m["correct"].get<bool>() ? "correct" : "WRONG",
                    m["max_relative_error"].get<double>(), candidate["openblas"]["core"].get<std::string>().c_str());
        return candidate;
    }

    int tryCore(const std::string &core, const engine::CpuFeatures &cpu)
    {
        const nlohmann::json candidate = compare(core, cpu);
        if (!candidate["matmul"]["correct"].get<bool>()) {
            std::printf("do not use them: their results are wrong on this CPU\n");
            return ExitOk;
        }
        std::printf("to keep them: tunebench doctor --use-blas-core %s\n", core.c_str());
        return ExitOk;
    }

    int useCore(engine::Settings &settings, const engine::CpuFeatures &cpu)
    {
        if (m_useCore == "off") {
            settings.blasCoreType.clear();
            engine::saveSettings(settings);
            std::printf("OpenBLAS chooses its own kernels again (setting blas_core_type cleared in %s)\n",
                        engine::settingsPath().c_str());
            return ExitOk;
        }
        const std::string core = checkedCoreName(m_useCore, "--use-blas-core");
        const nlohmann::json candidate = compare(core, cpu);
        if (!candidate["matmul"]["correct"].get<bool>())
            throw engine::invalidInput("the " + core + " kernels give wrong results on this CPU: the setting is unchanged");
        settings.blasCoreType = core;
        engine::saveSettings(settings);
        std::printf("every tunebench process now starts with OPENBLAS_CORETYPE=%s (setting blas_core_type in %s; "
                    "tunebench doctor --use-blas-core off undoes it)\n",
                    core.c_str(), engine::settingsPath().c_str());
        return ExitOk;
    }

    CLI::App *m_command = nullptr;
    bool m_json = false;
    bool m_noMatmul = false;
    bool m_probe = false;
    std::string m_tryCore;
    std::string m_useCore;
};

} // namespace

std::unique_ptr<Command> makeDoctorCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<DoctorCommand>(app);
}

} // namespace app::cli
