// `tunebench score`: log-probabilities of a token sequence under a saved model.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/error.h"
#include "engine/infer/inference.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace app::cli {
namespace {

class ScoreCommand : public Command {
public:
    explicit ScoreCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("score", commandSummary("score"));
        m_command->footer("Prints log p(ids[t+1] | ids[0..t]) for t = 0..n-2, computed in float32.\n"
                          "--text is tokenized with the model folder's tokenizer, special tokens added as\n"
                          "Hugging Face's tokenizer(text) does.");
        m_command->add_option("--model", m_request.modelPath, "Model folder (config.json + safetensors)")
            ->required()
            ->check(CLI::ExistingDirectory);
        auto *ids = m_command->add_option("--ids", m_ids, "Token ids, e.g. 1,2,3");
        auto *text = m_command->add_option("--text", m_text, "Text to tokenize and score");
        ids->excludes(text);
        m_command->add_option("--adapter", m_request.adapterPath, "PEFT LoRA adapter folder to apply")
            ->check(CLI::ExistingDirectory);
        m_command->add_option("--threads", m_request.threads, "CPU threads (0 = all cores)");
        m_command->add_option("--device", m_request.device, "Device to score on: cpu, cuda or cuda:N")->capture_default_str();
        m_command->add_flag("--json", m_json, "Print one JSON object");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([this] {
            engine::infer::ScoreRequest request = m_request;
            if (!m_ids.empty())
                request.ids = parseIdList(m_ids, "--ids");
            else if (m_command->count("--text"))
                request.text = m_text;
            else
                throw engine::invalidInput("give --ids or --text");
            const engine::infer::ScoreResult result = engine::infer::score(request);
            if (m_json) {
                nlohmann::json out = {{"ids", result.ids}, {"logprobs", result.logprobs},
                                      {"mean_loss", result.meanLoss}, {"perplexity", result.perplexity}};
                std::cout << out.dump() << "\n";
            } else {
                std::printf("%zu tokens, %zu scored\nmean loss %.4f nats/token, perplexity %.3f\n", result.ids.size(),
                            result.logprobs.size(), result.meanLoss, result.perplexity);
            }
            return static_cast<int>(ExitOk);
        });
    }

private:
    CLI::App *m_command = nullptr;
    engine::infer::ScoreRequest m_request;
    std::string m_ids;
    std::string m_text;
    bool m_json = false;
};

} // namespace

std::unique_ptr<Command> makeScoreCommand(CLI::App &app, const GlobalOptions &) { return std::make_unique<ScoreCommand>(app); }

} // namespace app::cli
