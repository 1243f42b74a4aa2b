// `tunebench inspect`: record one step (forward + backward) and say why backward failed or where a
// NaN began: a built-in scenario, a TorchScript module with saved inputs, or a model folder.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/error.h"
#include "engine/inspect/inspector.h"
#include "engine/inspect/inspectionoutput.h"
#include "engine/inspect/tracefile.h"

#include <cmath>
#include <iostream>

namespace app::cli {
namespace {

class InspectCommand : public Command {
public:
    explicit InspectCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("inspect", commandSummary("inspect"));
        std::string scenarios;
        for (const std::string &name : engine::inspect::scenarioNames())
            scenarios += "  " + name + ": " + engine::inspect::scenarioDescription(name) + "\n";
        m_command->footer("Give one of --scenario, --torchscript (with --inputs), --model (with --data), --trace FILE.\n"
                          "Exit code 0 when the inspection ran, whatever it found; see \"status\" in --json.\n"
                          "Scenarios:\n" + scenarios);
        auto *scenario = m_command->add_option("--scenario", m_scenario, "A built-in scenario (see below)");
        auto *script = m_command->add_option("--torchscript", m_torchScript, "A TorchScript module (torch.jit.save)");
        auto *inputs = m_command->add_option("--inputs", m_inputs, "Its inputs: a torch.save([t1, t2, ...]) file");
        m_command->add_option("--method", m_method, "The method to call (default forward)");
        auto *model = m_command->add_option("--model", m_model, "A model folder (config.json [+ weights, tokenizer]) or a LoRA adapter folder over its base");
        auto *data = m_command->add_option("--data", m_data, "A text file (its first tokens make the step), or the batch.safetensors a run saved when its loss was not finite");
        m_command->add_option("--seq-len", m_options.sequenceLength, "--model: tokens per step (default 32)")
            ->check(CLI::Range(1, 4096));
        m_command->add_option("--max-record-mib", m_maxRecordMib, "Memory bound of the recording in MiB (default 64)")
            ->check(CLI::PositiveNumber);
        m_command->add_flag("--verify-fix", m_verifyFix, "--scenario: rerun the step with the fix applied");
        m_command->add_flag("--json", m_json, "Print one JSON object");
        // --trace FILE reads a trace a recorder wrote; --trace alone (the older meaning) puts the op trace
        // into --json's output.
        auto *trace = m_command->add_option("--trace", m_traceFile,
                                            "FILE: diagnose a trace the Python recorder wrote (tunebench record; "
                                            "docs/trace-format.md); alone, with --json: include the op trace, storages "
                                            "and saved tensors")
                          ->expected(0, 1);
        scenario->excludes(script)->excludes(model);
        m_traceOption = trace;
        script->excludes(model)->needs(inputs);
        inputs->needs(script);
        model->needs(data);
        data->needs(model);
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([this] {
            m_options.maxRecordBytes = static_cast<int64_t>(std::llround(m_maxRecordMib * 1024.0 * 1024.0));
            engine::inspect::InspectionReport report;
            const bool traceFile = m_traceOption->count() > 0 && !m_traceFile.empty();
            const bool withOps = m_traceOption->count() > 0 && m_traceFile.empty();
            if (traceFile && (!m_scenario.empty() || !m_torchScript.empty() || !m_model.empty()))
                throw engine::invalidInput("--trace FILE reads a recorded trace: give it without --scenario, "
                                           "--torchscript or --model");
            if (traceFile) {
                if (m_verifyFix)
                    throw engine::invalidInput("--verify-fix reruns a built-in scenario; a trace of your program says "
                                               "what to change and where instead");
                report = engine::inspect::inspectTraceFile(m_traceFile);
            } else if (!m_scenario.empty()) {
                report = m_verifyFix ? engine::inspect::verifyFix(m_scenario, m_options)
                                     : engine::inspect::inspectScenario(m_scenario, m_options);
            } else if (m_verifyFix) {
                throw engine::invalidInput("--verify-fix works with --scenario only");
            } else if (!m_torchScript.empty()) {
                report = engine::inspect::inspectTorchScript(m_torchScript, m_inputs, m_method, m_options);
            } else if (!m_model.empty()) {
                report = engine::inspect::inspectModelFolder(m_model, m_data, m_options);
            } else {
                throw engine::invalidInput("give --scenario NAME, --torchscript FILE --inputs FILE, --model DIR "
                                           "--data FILE, or --trace FILE");
            }
            if (m_json)
                std::cout << engine::inspect::reportToJson(report, withOps).dump() << "\n";
            else
                std::cout << engine::inspect::reportToText(report);
            return static_cast<int>(ExitOk);
        });
    }

private:
    CLI::App *m_command = nullptr;
    std::string m_scenario, m_torchScript, m_inputs, m_method = "forward", m_model, m_data;
    double m_maxRecordMib = 64;
    std::string m_traceFile;
    CLI::Option *m_traceOption = nullptr;
    bool m_verifyFix = false, m_json = false;
    engine::inspect::InspectOptions m_options;
};

} // namespace

std::unique_ptr<Command> makeInspectCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<InspectCommand>(app);
}

} // namespace app::cli
