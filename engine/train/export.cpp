#include "engine/train/export.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/model/configfields.h"
#include "engine/model/pretrained.h"
#include "engine/store/runfolder.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/checkpoint.h"
#include "engine/train/tokenizersource.h"

#include <nlohmann/json.hpp>

namespace engine::train {
namespace fs = std::filesystem;
namespace {

bool isAdapter(const fs::path &folder)
{
    return fs::exists(folder / "adapter_config.json") && fs::exists(folder / "adapter_model.safetensors");
}

void copyInto(const fs::path &from, const fs::path &to, const std::string &name)
{
    if (fs::exists(from / name))
        writeFileAtomically(to / name, readFile(from / name));
}

/// The tokenizer files of `from` (tokenizerFiles), when it holds a tokenizer (a run on pre-tokenized data has none).
void copyTokenizer(const fs::path &from, const fs::path &to)
{
    if (tokenize::holdsTokenizer(from))
        saveTokenizerFiles(tokenize::tokenizerFiles(from), to);
}

} // namespace

ExportResult exportRun(const fs::path &runFolder, ExportKind kind, const fs::path &target)
{
    if (fs::exists(target))
        throw invalidInput("export target " + target.string() + " exists; choose a new folder");
    if (!fs::is_directory(runFolder))
        throw invalidInput("run folder " + runFolder.string() + " does not exist");
    ExportResult result;
    result.folder = target;
    // The final save, else the newest checkpoint.
    fs::path source;
    if (isAdapter(runFolder / "adapter"))
        source = runFolder / "adapter";
    else if (model::holdsWeights(runFolder / "model"))
        source = runFolder / "model";
    else if (const auto all = store::listCheckpoints(runFolder); !all.empty())
        source = all.back().second;
    else
        throw invalidInput("run folder " + runFolder.string() + " holds nothing to export (no adapter/, model/ or checkpoint)");
    result.source = source;
    const bool lora = isAdapter(source);
    // The tokenizer the run trained with sits beside the final save; a checkpoint's run folder has none.
    const fs::path tokenizerFrom = tokenize::holdsTokenizer(source) ? source : runFolder / (lora ? "adapter" : "model");

    StagedFolder staged(target);
    if (kind == ExportKind::Peft) {
        if (!lora) {
            throw invalidInput("run folder " + runFolder.string()
                               + " holds a full fine-tune (every weight trained): there is no adapter to export; use --merged");
        }
        copyInto(source, staged.path(), "adapter_config.json");
        copyInto(source, staged.path(), "adapter_model.safetensors");
        copyTokenizer(tokenizerFrom, staged.path());
    } else if (lora) {
        const std::string configText = readFile(source / "adapter_config.json");
        checkJsonNesting(configText, (source / "adapter_config.json").string());
        const auto config = nlohmann::json::parse(configText, nullptr, false);
        const std::string base = model::configfields::stringOrEmpty(config, "base_model_name_or_path");
        if (base.empty() || !model::holdsWeights(base)) {
            throw invalidInput((source / "adapter_config.json").string() + ": base_model_name_or_path \"" + base
                               + "\" is not a model folder with weights here; the merged model needs the base");
        }
        model::LlamaForCausalLM model = model::loadPretrained(base);
        model::applyPeftLoraAdapter(model, source);
        model::savePretrained(model, staged.path());
        copyTokenizer(tokenize::holdsTokenizer(tokenizerFrom) ? tokenizerFrom : fs::path(base), staged.path());
    } else {
        model::LlamaForCausalLM model = model::loadPretrained(source);
        model::savePretrained(model, staged.path());
        copyTokenizer(tokenizerFrom, staged.path());
    }
    staged.commit();
    return result;
}

} // namespace engine::train
