#include "app/cli/commandlist.h"

#include <array>

namespace app::cli {

namespace {

constexpr std::array kCommands{
    CommandInfo{"train", "Train a model on a text corpus (headless, with a progress bar)", true},
    CommandInfo{"runs", "List and show the runs kept in the run database", false},
    CommandInfo{"tokenize", "Encode text into token ids (or decode ids) with a model's tokenizer", false},
    CommandInfo{"score", "Log-probabilities of tokens under a saved model", true},
    CommandInfo{"generate", "Generate text with a saved model", true},
    CommandInfo{"doctor", "Show the libtorch, CUDA, GPUs, threads and BLAS in use, and the matmul rate measured now against the CPU's", true},
    CommandInfo{"plan", "Device map and training memory of a model on given devices", false},
    CommandInfo{"inspect", "Record one training step and diagnose backward failures and NaNs", true},
    CommandInfo{"export", "Export a run's training result: a PEFT adapter or a merged model", true},
    CommandInfo{"launch", "Run `tunebench train` as N data-parallel ranks on this machine (like torchrun --standalone)", true},
};

} // namespace

std::span<const CommandInfo> commandList() { return kCommands; }

const char *commandSummary(std::string_view name)
{
    for (const CommandInfo &command : kCommands) {
        if (name == command.name)
            return command.summary;
    }
    return "";
}

} // namespace app::cli
