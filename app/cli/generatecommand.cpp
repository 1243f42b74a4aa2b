// `tunebench generate`: text from a saved model, streamed as it is generated.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/error.h"
#include "engine/infer/inference.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <iostream>

namespace app::cli {
namespace {

class GenerateCommand : public Command {
public:
    explicit GenerateCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("generate", commandSummary("generate"));
        auto &r = m_request;
        m_command->add_option("--model", r.modelPath, "Model folder (config.json + weights + tokenizer)")
            ->required()
            ->check(CLI::ExistingDirectory);
        m_command->add_option("--prompt", r.prompt, "Prompt text")->required();
        m_command->add_option("--adapter", r.adapterPath, "PEFT LoRA adapter folder to apply")->check(CLI::ExistingDirectory);
        m_command->add_option("--max-new-tokens", r.maxNewTokens, "Most tokens to generate")->capture_default_str();
        m_command->add_option("--temperature", r.temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
        m_command->add_option("--top-k", r.topK, "Keep the k most likely tokens (0 = off)")->capture_default_str();
        m_command->add_option("--top-p", r.topP, "Nucleus sampling threshold (1 = off)")->capture_default_str();
        m_command->add_option("--seed", r.seed, "Random seed for sampling")->capture_default_str();
        m_command->add_flag("!--no-eos-stop", r.stopAtEos, "Keep generating after the end-of-sequence token");
        m_command->add_option("--threads", r.threads, "CPU threads (0 = all cores)");
        m_command->add_option("--device", r.device, "Device to generate on: cpu, cuda or cuda:N")->capture_default_str();
        m_command->add_flag("--json", m_json, "Print one JSON object at the end instead of streaming");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([this] {
            std::function<void(const std::string &)> stream;
            if (!m_json) {
                std::fputs(m_request.prompt.c_str(), stdout);
                stream = [](const std::string &piece) {
                    std::fputs(piece.c_str(), stdout);
                    std::fflush(stdout);
                };
            }
            const engine::infer::GenerateResult result = engine::infer::generate(m_request, stream);
            if (m_json) {
                nlohmann::json out = {{"prompt_ids", result.promptIds}, {"ids", result.newIds}, {"text", result.text},
                                      {"stop_reason", result.stopReason}};
                std::cout << out.dump() << "\n";
            } else {
                std::printf("\n");
                std::fprintf(stderr, "tunebench: %zu tokens (%s)\n", result.newIds.size(), result.stopReason.c_str());
            }
            return static_cast<int>(ExitOk);
        });
    }

private:
    CLI::App *m_command = nullptr;
    engine::infer::GenerateRequest m_request;
    bool m_json = false;
};

} // namespace

std::unique_ptr<Command> makeGenerateCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<GenerateCommand>(app);
}

} // namespace app::cli
