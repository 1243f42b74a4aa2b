#include "app/cli/commandlist.h"

#include <array>

namespace app::cli {

namespace {

constexpr std::array kCommands{
    CommandInfo{"train", "Train a model on a text corpus (headless, with a progress bar)"},
    CommandInfo{"runs", "List and show the runs kept in the run database"},
    CommandInfo{"tokenize", "Encode text into token ids (or decode ids) with a model's tokenizer"},
    CommandInfo{"score", "Log-probabilities of tokens under a saved model"},
    CommandInfo{"generate", "Generate text with a saved model"},
    CommandInfo{"doctor", "Show the libtorch, CUDA, GPUs, threads and BLAS in use, and the matmul rate measured now against the CPU's"},
    CommandInfo{"plan", "Device map and training memory of a model on given devices"},
    CommandInfo{"inspect", "Record one training step and diagnose backward failures and NaNs"},
    CommandInfo{"record", "Run your Python training program under the recorder: the line that broke backward"},
    CommandInfo{"export", "Export a run's training result: a PEFT adapter or a merged model"},
    CommandInfo{"launch", "Run `tunebench train` as N data-parallel ranks on this machine (like torchrun --standalone)"},
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
