#include "engine/train/settingschema.h"

#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/core/textutil.h"
#include "engine/core/threads.h"
#include "engine/model/deviceplacement.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <regex>
#include <sstream>

namespace engine::train {

using nlohmann::json;

namespace {

using TP = TrainingParams;

bool isLora(const TP &p) { return p.method == TrainingMethod::Lora; }
bool isSgd(const TP &p) { return p.optimizer == OptimizerKind::Sgd; }

// Each setting's value reads and writes through one accessor; the const read goes through the same
// function, so a setting names its member once.
#define TB_ACCESS(expr) [](TP &p) -> auto & { return expr; }

template<typename Access>
auto &readThrough(Access access, const TP &p)
{
    return access(const_cast<TP &>(p));
}

/// Integer and Number settings over int, int64_t, uint64_t or double members.
template<typename Access>
SettingSpec numeric(SettingKind kind, const char *key, const char *flag, Access access)
{
    SettingSpec s;
    s.key = key;
    s.flag = flag;
    s.kind = kind;
    s.get = [](const TP &p) { return json(readThrough(Access{}, p)); };
    s.set = [](TP &p, const json &value) {
        auto &target = Access{}(p);
        target = value.get<std::remove_reference_t<decltype(target)>>();
    };
    return s;
}

template<typename Access>
SettingSpec integer(const char *key, const char *flag, Access access)
{
    return numeric(SettingKind::Integer, key, flag, access);
}

template<typename Access>
SettingSpec number(const char *key, const char *flag, Access access)
{
    return numeric(SettingKind::Number, key, flag, access);
}

template<typename Access>
SettingSpec text(SettingKind kind, const char *key, const char *flag, Access)
{
    SettingSpec s;
    s.key = key;
    s.flag = flag;
    s.kind = kind;
    s.get = [](const TP &p) { return json(readThrough(Access{}, p)); };
    s.set = [](TP &p, const json &value) { Access{}(p) = value.get<std::string>(); };
    return s;
}

template<typename Access>
SettingSpec toggle(const char *key, const char *flag, Access)
{
    SettingSpec s;
    s.key = key;
    s.flag = flag;
    s.kind = SettingKind::Switch;
    s.get = [](const TP &p) { return json(readThrough(Access{}, p)); };
    s.set = [](TP &p, const json &value) { Access{}(p) = value.get<bool>(); };
    return s;
}

/// A Choice over an enum (or bool) member; `names` lists (value, JSON name, label) in the field's order.
template<typename T>
struct Named {
    T value;
    const char *name;
    const char *label;
};

template<typename Access, typename T, size_t N>
SettingSpec choice(const char *key, const char *flag, Access, const std::array<Named<T>, N> &names)
{
    // The table lives in a static of this instantiation (one per setting: each Access is its own type).
    static std::array<Named<T>, N> table;
    table = names;
    SettingSpec s;
    s.key = key;
    s.flag = flag;
    s.kind = SettingKind::Choice;
    for (const auto &entry : names)
        s.choices.push_back({entry.name, entry.label});
    s.get = [](const TP &p) {
        const T current = readThrough(Access{}, p);
        for (const auto &entry : table) {
            if (entry.value == current)
                return json(entry.name);
        }
        return json(table.front().name);
    };
    s.set = [](TP &p, const json &value) {
        const std::string name = value.get<std::string>();
        for (const auto &entry : table) {
            if (name == entry.name)
                Access{}(p) = entry.value;
        }
    };
    return s;
}

/// Builder-style tails, so that each table row reads as one declaration.
struct Row {
    SettingSpec spec;
    Row &label(const char *text) { spec.label = text; return *this; }
    Row &help(const char *text) { spec.help = text; return *this; }
    Row &group(SettingGroup g) { spec.group = g; return *this; }
    Row &range(double low, double high, bool lowExcluded = false) { spec.range = SettingRange{low, high, lowExcluded}; return *this; }
    Row &special(double value, const char *text) { spec.special = SpecialValue{value, text}; return *this; }
    Row &unit(const char *text) { spec.unit = text; return *this; }
    Row &placeholder(const char *text) { spec.placeholder = text; return *this; }
    Row &step(double value, int decimals) { spec.step = value; spec.decimals = decimals; return *this; }
    Row &words(const char *off, const char *on) { spec.choices = {{off, off}, {on, on}}; return *this; }
    Row &suggest(std::vector<SettingChoice> values) { spec.choices = std::move(values); return *this; }
    Row &negated() { spec.negatedFlag = true; return *this; }
    Row &folder() { spec.folder = true; return *this; }
    Row &resumable() { spec.resumable = true; return *this; }
    Row &notInPreset() { spec.preset = false; return *this; }
    Row &notStored() { spec.stored = false; spec.preset = false; return *this; }
    Row &machine() { spec.machine = true; spec.preset = false; return *this; }
    Row &appliesWhen(bool (*predicate)(const TP &)) { spec.applies = predicate; return *this; }
};

Row row(SettingSpec spec) { return Row{std::move(spec)}; }

constexpr double kMaxSteps = 100'000'000;

std::vector<SettingSpec> buildTable()
{
    using G = SettingGroup;
    std::vector<Row> rows;
    auto add = [&rows](Row r) { rows.push_back(std::move(r)); };

    // Basics
    add(row(text(SettingKind::Text, "name", "--name", TB_ACCESS(p.runName)))
            .label("Run name").help("Run name (default: model and corpus names)").placeholder("From the model and data names")
            .group(G::Basics).notStored());
    add(row(text(SettingKind::Path, "model", "--model", TB_ACCESS(p.modelPath)))
            .label("Model").help("Model folder with config.json, or a config.json file (default: the built-in demo "
                                 "model, LLaMA architecture, ~2 M parameters, freshly initialised)")
            .placeholder("Built-in demo model (LLaMA, 2 M parameters)").group(G::Basics).folder().notInPreset());
    add(row(text(SettingKind::Path, "data", "--data", TB_ACCESS(p.dataPath)))
            .label("Data").help("Training data: a UTF-8 text corpus, or JSONL with text / prompt+completion / messages / "
                                "input_ids (default: the bundled demo corpus)")
            .placeholder("Bundled demo corpus (Moby-Dick)").group(G::Basics).notInPreset());
    add(row(text(SettingKind::Path, "tokenizer", "--tokenizer", TB_ACCESS(p.tokenizerPath)))
            .label("Tokenizer").help("tokenizer.json, tokenizer.model or a folder with one (default: the model folder's, "
                                     "tokenizer.json first; else a SentencePiece tokenizer trained on the corpus)")
            .placeholder("The model's, else trained on the data").group(G::Basics).notInPreset());
    add(row(choice("method", "--method", TB_ACCESS(p.method),
                   std::array<Named<TrainingMethod>, 2>{{{TrainingMethod::Full, "full", "Full fine-tuning"},
                                                         {TrainingMethod::Lora, "lora", "LoRA (adapters on a frozen base)"}}}))
            .label("Method").help("full (every weight) or lora (adapters on a frozen base; needs a model with weights)")
            .group(G::Basics));
    add(row(integer("steps", "--steps", TB_ACCESS(p.steps)))
            .label("Steps").help("Optimizer steps to run (unless epochs are set)").group(G::Basics).range(1, kMaxSteps)
            .resumable());
    add(row(number("learning_rate", "--lr", TB_ACCESS(p.learningRate)))
            .label("Learning rate").help("Peak learning rate (after the warmup)").group(G::Basics).range(0, 10, true)
            .step(0.0005, 0));
    add(row(integer("batch_size", "--batch-size", TB_ACCESS(p.batchSize)))
            .label("Batch size").help("Sequences per micro-batch").group(G::Basics).range(1, 65536));
    add(row(integer("sequence_length", "--seq-len", TB_ACCESS(p.sequenceLength)))
            .label("Sequence length").help("Tokens per training sequence").group(G::Basics).range(2, 1 << 20)
            .unit(" tokens"));

    // LoRA
    add(row(integer("lora.r", "--lora-r", TB_ACCESS(p.lora.r)))
            .label("LoRA rank").help("LoRA rank r").group(G::Lora).range(1, 65536).appliesWhen(isLora));
    add(row(number("lora.alpha", "--lora-alpha", TB_ACCESS(p.lora.alpha)))
            .label("LoRA alpha").help("LoRA alpha: the update is scaled by alpha / r (alpha / sqrt(r) with rsLoRA)")
            .group(G::Lora).range(0, 1e6, true).step(1, 2).appliesWhen(isLora));
    add(row(number("lora.dropout", "--lora-dropout", TB_ACCESS(p.lora.dropout)))
            .label("LoRA dropout").help("Dropout on the adapters' input, in [0, 1)").group(G::Lora).range(0, 0.999999)
            .step(0.05, 2).appliesWhen(isLora));
    {
        SettingSpec targets;
        targets.key = "lora.target_modules";
        targets.flag = "--lora-targets";
        targets.kind = SettingKind::Modules;
        targets.get = [](const TP &p) { return p.lora.targetModulesJson(); };
        targets.set = [](TP &p, const json &value) {
            p.lora.targets.clear();
            p.lora.targetRegex.clear();
            if (value.is_string())
                p.lora.targetRegex = value.get<std::string>();
            else
                p.lora.targets = value.get<std::vector<std::string>>();
        };
        add(row(std::move(targets))
                .label("LoRA targets").help("Modules to adapt: names as PEFT matches them (q_proj,v_proj) or a regex "
                                            "over the full module name")
                .group(G::Lora).appliesWhen(isLora));
    }
    {
        SettingSpec modules;
        modules.key = "lora.modules_to_save";
        modules.flag = "--modules-to-save";
        modules.kind = SettingKind::Names;
        modules.get = [](const TP &p) { return json(p.lora.modulesToSave); };
        modules.set = [](TP &p, const json &value) { p.lora.modulesToSave = value.get<std::vector<std::string>>(); };
        add(row(std::move(modules))
                .label("Modules to save").help("Modules trained in full and saved in the adapter, e.g. lm_head (PEFT "
                                               "modules_to_save)")
                .placeholder("None").group(G::Lora).appliesWhen(isLora));
    }
    add(row(toggle("lora.rslora", "--rslora", TB_ACCESS(p.lora.rslora)))
            .label("Rank-stabilised (rsLoRA: alpha / sqrt(r))").help("Scale alpha / sqrt(r) (rank-stabilised LoRA)")
            .group(G::Lora).appliesWhen(isLora));

    // Optimizer
    add(row(choice("optimizer", "--optimizer", TB_ACCESS(p.optimizer),
                   std::array<Named<OptimizerKind>, 2>{{{OptimizerKind::AdamW, "adamw", "AdamW"},
                                                        {OptimizerKind::Sgd, "sgd", "SGD with momentum"}}}))
            .label("Optimizer").help("adamw, or sgd (with --momentum)").group(G::Optimizer));
    add(row(number("momentum", "--momentum", TB_ACCESS(p.momentum)))
            .label("Momentum").help("SGD's momentum, in [0, 1) (AdamW does not use it)").group(G::Optimizer)
            .range(0, 0.999999).step(0.01, 3).appliesWhen(isSgd));
    add(row(choice("schedule", "--schedule", TB_ACCESS(p.schedule),
                   std::array<Named<ScheduleKind>, 3>{{{ScheduleKind::Cosine, "cosine", "Cosine decay"},
                                                       {ScheduleKind::Linear, "linear", "Linear decay"},
                                                       {ScheduleKind::Constant, "constant", "Constant"}}}))
            .label("Schedule").help("The learning rate after the warmup: constant, linear or cosine").group(G::Optimizer));
    add(row(integer("warmup_steps", "--warmup", TB_ACCESS(p.warmupSteps)))
            .label("Warmup steps").help("Steps of linear warmup to the peak learning rate (-1: 10 % of the steps)")
            .group(G::Optimizer).range(-1, kMaxSteps).special(-1, "10 % of the steps"));
    add(row(number("min_learning_rate_ratio", "--min-lr-ratio", TB_ACCESS(p.minLearningRateRatio)))
            .label("Min learning rate ratio").help("The decay ends at this fraction of the peak learning rate")
            .group(G::Optimizer).range(0, 1).step(0.05, 3));
    add(row(number("weight_decay", "--weight-decay", TB_ACCESS(p.weightDecay)))
            .label("Weight decay").help("AdamW's decoupled weight decay (not on norms and biases)").group(G::Optimizer)
            .range(0, 10).step(0.01, 4));
    add(row(number("grad_clip_norm", "--grad-clip", TB_ACCESS(p.gradClipNorm)))
            .label("Gradient clip").help("Clip the gradient norm to this (0 = off; the norm is still measured)")
            .group(G::Optimizer).range(0, 1e9).special(0, "off").step(0.1, 3));
    add(row(integer("grad_accumulation", "--grad-accum", TB_ACCESS(p.gradAccumulation)))
            .label("Gradient accumulation").help("Micro-batches of the batch size per optimizer step").group(G::Optimizer)
            .range(1, 65536));
    add(row(integer("epochs", "--epochs", TB_ACCESS(p.epochs)))
            .label("Epochs").help("Passes over the data; sets the number of steps (0 = use the steps)")
            .group(G::Optimizer).range(0, 1'000'000).special(0, "use the steps").resumable());
    add(row(integer("seed", "--seed", TB_ACCESS(p.seed)))
            .label("Seed").help("Random seed (initialisation, data order, dropout)").group(G::Optimizer)
            .range(0, 18446744073709551615.0));

    // Evaluation
    add(row(text(SettingKind::Path, "eval_data", "--eval-data", TB_ACCESS(p.evalDataPath)))
            .label("Eval data").help("A second data file for eval loss and perplexity").placeholder("None: hold out a fraction")
            .group(G::Evaluation).notInPreset());
    add(row(number("val_fraction", "--val-fraction", TB_ACCESS(p.valFraction)))
            .label("Validation fraction").help("Fraction of the data held out for eval loss and perplexity (0 = none)")
            .group(G::Evaluation).range(0, 0.5).step(0.05, 2));
    add(row(integer("eval_every", "--eval-every", TB_ACCESS(p.evalEvery)))
            .label("Eval every").help("Evaluate every N steps (and at the end; 0 = at the end only)").group(G::Evaluation)
            .range(0, kMaxSteps).special(0, "at the end").unit(" steps").resumable());
    add(row(integer("eval_batches", "--eval-batches", TB_ACCESS(p.evalBatches)))
            .label("Eval batches").help("Batches per evaluation (0 = the whole eval set)").group(G::Evaluation)
            .range(0, kMaxSteps).special(0, "the whole eval set").resumable());
    add(row(text(SettingKind::Text, "sample_prompt", "--sample", TB_ACCESS(p.samplePrompt)))
            .label("Sample prompt").help("Generate a greedy sample of this prompt before and after training")
            .placeholder("No sample").group(G::Evaluation).notInPreset().resumable());
    add(row(integer("sample_tokens", "--sample-tokens", TB_ACCESS(p.sampleTokens)))
            .label("Sample tokens").help("New tokens of that sample").group(G::Evaluation).range(1, 4096).unit(" tokens")
            .resumable());

    // Checkpoints and output
    add(row(integer("save_every", "--save-every", TB_ACCESS(p.saveEvery)))
            .label("Save every").help("Write a checkpoint every N steps (0 = only when the run stops; one is always "
                                       "written then)")
            .group(G::Checkpoints).range(0, kMaxSteps).special(0, "at stop only").unit(" steps").resumable());
    add(row(integer("keep_checkpoints", "--keep", TB_ACCESS(p.keepCheckpoints)))
            .label("Keep checkpoints").help("Keep the last K checkpoints (0 = all)").group(G::Checkpoints).range(0, 1'000'000)
            .special(0, "all").resumable());
    add(row(text(SettingKind::Path, "output_dir", "--output", TB_ACCESS(p.outputDir)))
            .label("Output").help("Folder for the run's files: checkpoints, plot, model or adapter (default: runs/<id> "
                                  "beside the run database)")
            .placeholder("The run's own folder").group(G::Checkpoints).folder().notStored());
    add(row(toggle("save_model", "--no-save", TB_ACCESS(p.saveModel)))
            .label("Save the trained model or adapter").help("Do not save the trained model or adapter").negated()
            .group(G::Checkpoints).resumable());
    add(row(choice("bad_lines", "--bad-lines", TB_ACCESS(p.skipBadLines),
                   std::array<Named<bool>, 2>{{{false, "stop", "stop the run"}, {true, "skip", "skip and count"}}}))
            .label("Bad lines").help("A malformed JSONL line stops the run or is skipped and counted").group(G::Checkpoints));
    add(row(choice("on_non_finite_loss", "--on-nan", TB_ACCESS(p.nonFinite),
                   std::array<Named<NonFinitePolicy>, 2>{{{NonFinitePolicy::Stop, "stop", "stop the run"},
                                                          {NonFinitePolicy::Skip, "skip", "skip the step"}}}))
            .label("NaN loss").help("A non-finite loss or gradient stops the run or skips the step").group(G::Checkpoints)
            .resumable());
    add(row(toggle("inspect_guard", "--guard", TB_ACCESS(p.inspectGuard)))
            .label("Guard each step for the inspector")
            .help("The inspector's guard on every step: an in-place write that would break backward stops the run "
                  "before backward and keeps the step for `tunebench inspect`")
            .words("off", "on").group(G::Checkpoints).resumable());

    // Hardware
    add(row(integer("threads", "--threads", TB_ACCESS(p.threads)))
            .label("Threads").help("CPU threads for the math (0 = all cores; default: the threads setting)")
            .group(G::Hardware).range(0, 4096).special(0, "all cores").machine().resumable());
    add(row(text(SettingKind::Text, "device", "--device", TB_ACCESS(p.device)))
            .label("Device").help("Where the model trains: cpu, cuda or cuda:N")
            .suggest({{"cpu", "cpu"}, {"cuda", "cuda"}}).group(G::Hardware).notInPreset());
    {
        SettingSpec map;
        map.key = "device_map";
        map.flag = "--device-map";
        map.kind = SettingKind::DeviceMap;
        map.get = [](const TP &p) { return p.autoDeviceMap ? json("auto") : p.devicePlacementJson(); };
        map.set = [](TP &p, const json &value) {
            p.autoDeviceMap = value.is_string();
            p.devicePlacement.clear();
            if (value.is_array()) {
                for (const json &entry : value)
                    p.devicePlacement.emplace_back(entry[0].get<std::string>(), entry[1].get<std::string>());
            }
        };
        add(row(std::move(map))
                .label("Device map")
                .help("Accelerate device map JSON (e.g. from `tunebench plan --output`): load the model's weights onto "
                      "cpu / disk / cuda:N per module and train across them; auto = plan this run on this machine's GPUs "
                      "and RAM")
                .group(G::Hardware).machine());
    }
    add(row(choice("precision", "--precision", TB_ACCESS(p.precision),
                   std::array<Named<Precision>, 3>{{{Precision::Fp32, "fp32", "fp32"},
                                                    {Precision::Bf16, "bf16", "bf16 (autocast)"},
                                                    {Precision::Fp16, "fp16", "fp16 (autocast, loss scaling; CUDA)"}}}))
            .label("Precision").help("fp32, bf16 (autocast, CPU or CUDA) or fp16 (autocast with loss scaling, CUDA); "
                                     "weights and optimizer state stay fp32")
            .group(G::Hardware));
    add(row(toggle("gradient_checkpointing", "--checkpointing", TB_ACCESS(p.gradientCheckpointing)))
            .label("Gradient checkpointing")
            .help("Recompute each decoder layer's activations in backward (less memory, about a third more compute)")
            .group(G::Hardware));

    // Data parallel (stored only for a data-parallel run; not on the form: a launcher sets up the ranks)
    add(row(number("dist_timeout", "--dist-timeout", TB_ACCESS(p.distributedTimeoutSeconds)))
            .label("Rank timeout").help("Data parallel (RANK/WORLD_SIZE from torchrun, srun or `tunebench launch`): "
                                        "seconds a rank waits for the others before the job fails")
            .group(G::DataParallel).range(1, 86'400).unit(" s").resumable());
    add(row(number("bucket_mb", "--ddp-bucket-mb", TB_ACCESS(p.bucketMegabytes)))
            .label("Gradient buckets").help("Data parallel: gradient bucket size in MB, each summed as soon as backward "
                                            "filled it (DDP's bucket_cap_mb); 0 = sum all after backward")
            .group(G::DataParallel).range(0, 65'536).unit(" MB").resumable());

    std::vector<SettingSpec> table;
    for (Row &r : rows)
        table.push_back(std::move(r.spec));
    return table;
}

#undef TB_ACCESS

std::string kindExpectation(SettingKind kind)
{
    switch (kind) {
    case SettingKind::Integer: return "an integer";
    case SettingKind::Number: return "a number";
    case SettingKind::Switch: return "true or false";
    case SettingKind::Names: return "a list of names";
    case SettingKind::Modules: return "a list of module names or a regular expression";
    case SettingKind::DeviceMap: return "\"auto\", a list of [module, device] pairs or null";
    case SettingKind::Text:
    case SettingKind::Path:
    case SettingKind::Choice: break;
    }
    return "a string";
}

bool isStringList(const json &value)
{
    return value.is_array() && std::all_of(value.begin(), value.end(), [](const json &v) { return v.is_string(); });
}

bool hasKindType(SettingKind kind, const json &value)
{
    switch (kind) {
    case SettingKind::Integer: return value.is_number_integer();
    case SettingKind::Number: return value.is_number();
    case SettingKind::Switch: return value.is_boolean();
    case SettingKind::Names: return isStringList(value);
    case SettingKind::Modules: return value.is_string() || isStringList(value);
    case SettingKind::DeviceMap:
        if (value.is_string())
            return value.get<std::string>() == "auto";
        return value.is_array() && std::all_of(value.begin(), value.end(), [](const json &entry) {
                   return entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string();
               });
    case SettingKind::Text:
    case SettingKind::Path:
    case SettingKind::Choice: return value.is_string();
    }
    return false;
}

std::string joinNames(const std::vector<std::string> &names)
{
    std::string text;
    for (const std::string &name : names)
        text += (text.empty() ? "" : ",") + name;
    return text;
}

std::vector<std::string> splitNames(const std::string &text)
{
    std::vector<std::string> names;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos)
            end = text.size();
        const std::string_view item = trimWhitespace(std::string_view(text).substr(pos, end - pos));
        if (!item.empty())
            names.emplace_back(item);
        pos = end + 1;
    }
    return names;
}

std::string showValue(double value)
{
    return value == std::floor(value) && std::fabs(value) < 1e15 ? std::to_string(static_cast<long long>(value))
                                                                   : shortestNumber(value);
}

/// Whether `spec` belongs to `scope` (and is stored at all).
bool inScope(const SettingSpec &spec, SettingScope scope)
{
    if (!spec.stored)
        return false;
    switch (scope) {
    case SettingScope::All: return true;
    case SettingScope::Form: return !spec.machine && spec.group != SettingGroup::DataParallel;
    case SettingScope::Preset: return spec.preset && spec.group != SettingGroup::DataParallel;
    }
    return false;
}

/// The JSON object `key` lives in ("lora.r": json["lora"]), and its name there.
std::pair<const json *, std::string> locate(const json &object, const std::string &key)
{
    const size_t dot = key.find('.');
    if (dot == std::string::npos)
        return {&object, key};
    const auto outer = object.find(key.substr(0, dot));
    if (outer == object.end() || outer->is_null())
        return {nullptr, {}};
    if (!outer->is_object())
        throw invalidSetting(key, "\"" + key.substr(0, dot) + "\" must be an object (got " + outer->dump() + ")");
    return {&*outer, key.substr(dot + 1)};
}

void place(json &object, const std::string &key, json value)
{
    const size_t dot = key.find('.');
    if (dot == std::string::npos)
        object[key] = std::move(value);
    else
        object[key.substr(0, dot)][key.substr(dot + 1)] = std::move(value);
}

} // namespace

const char *settingGroupTitle(SettingGroup group)
{
    switch (group) {
    case SettingGroup::Basics: return "Basics";
    case SettingGroup::Lora: return "LoRA";
    case SettingGroup::Optimizer: return "Optimizer";
    case SettingGroup::Evaluation: return "Evaluation";
    case SettingGroup::Checkpoints: return "Checkpoints and output";
    case SettingGroup::Hardware: return "Hardware";
    case SettingGroup::DataParallel: return "Data parallel";
    }
    return "";
}

std::string shortestNumber(double value)
{
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string SettingSpec::messageName() const
{
    if (label.size() >= 2 && std::isupper(static_cast<unsigned char>(label[0]))
        && std::islower(static_cast<unsigned char>(label[1])))
        return static_cast<char>(std::tolower(static_cast<unsigned char>(label[0]))) + label.substr(1);
    return label;
}

void SettingSpec::setJson(TrainingParams &params, const json &value) const
{
    if (!hasKindType(kind, value))
        throw invalidSetting(key, "\"" + key + "\" must be " + kindExpectation(kind) + " (got " + value.dump() + ")");
    if (kind == SettingKind::Choice) {
        const std::string name = value.get<std::string>();
        const bool known = std::any_of(choices.begin(), choices.end(), [&](const SettingChoice &c) { return c.value == name; });
        if (!known) {
            std::string list;
            for (const SettingChoice &c : choices)
                list += (list.empty() ? "" : ", ") + c.value;
            throw invalidSetting(key, "\"" + key + "\" must be one of " + list + " (got \"" + name + "\")");
        }
    }
    if (kind == SettingKind::Integer && key == "seed" && !value.is_number_unsigned() && value.get<int64_t>() < 0)
        throw invalidSetting(key, "\"seed\" must be a non-negative integer (got " + value.dump() + ")");
    set(params, value);
}

std::string SettingSpec::text(const TrainingParams &params) const
{
    const json value = get(params);
    switch (kind) {
    case SettingKind::Integer: return value.dump();
    case SettingKind::Number: return shortestNumber(value.get<double>());
    case SettingKind::Switch:
        return choices.size() == 2 ? choices[value.get<bool>() ? 1 : 0].value : (value.get<bool>() ? "true" : "false");
    case SettingKind::Names: return joinNames(value.get<std::vector<std::string>>());
    case SettingKind::Modules:
        return value.is_string() ? value.get<std::string>() : joinNames(value.get<std::vector<std::string>>());
    case SettingKind::DeviceMap:
        if (value.is_string())
            return "auto";
        return value.is_null() ? std::string() : std::to_string(value.size()) + " entries";
    case SettingKind::Text:
    case SettingKind::Path:
    case SettingKind::Choice: return value.get<std::string>();
    }
    return {};
}

void SettingSpec::setText(TrainingParams &params, const std::string &text) const
{
    const std::string shown = flag.empty() ? key : flag;
    auto refuse = [&](const std::string &expected) {
        return invalidSetting(key, shown + " " + (text.empty() ? "\"\"" : text) + ": expected " + expected);
    };
    switch (kind) {
    case SettingKind::Integer: {
        const std::string_view trimmed = trimWhitespace(text);
        if (key == "seed") {
            uint64_t value = 0;
            const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
            if (ec != std::errc() || end != trimmed.data() + trimmed.size() || trimmed.empty())
                throw refuse("a non-negative integer");
            set(params, json(value));
            return;
        }
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
        if (ec != std::errc() || end != trimmed.data() + trimmed.size() || trimmed.empty())
            throw refuse("an integer");
        if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
            // int members (threads) cannot hold it; the range check names the limit.
            if (key == "threads")
                throw refuse("an integer from 0 to " + std::to_string(hardwareThreads()));
        }
        set(params, json(value));
        return;
    }
    case SettingKind::Number: {
        const std::string trimmed(trimWhitespace(text));
        double value = 0;
        size_t used = 0;
        try {
            value = std::stod(trimmed, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (trimmed.empty() || used != trimmed.size())
            throw refuse("a number");
        set(params, json(value));
        return;
    }
    case SettingKind::Switch:
        if (choices.size() == 2) {
            if (text != choices[0].value && text != choices[1].value)
                throw refuse(choices[0].value + " or " + choices[1].value);
            set(params, json(text == choices[1].value));
        } else {
            if (text != "true" && text != "false")
                throw refuse("true or false");
            set(params, json(text == "true"));
        }
        return;
    case SettingKind::Choice:
        setJson(params, json(text));
        return;
    case SettingKind::Names:
        set(params, json(splitNames(text)));
        return;
    case SettingKind::Modules: {
        model::LoraSettings lora;
        lora.setTargetsFromText(text);
        set(params, lora.targetModulesJson());
        return;
    }
    case SettingKind::DeviceMap:
        if (text == "auto") {
            set(params, json("auto"));
        } else if (text.empty()) {
            set(params, json(nullptr));
        } else {
            try {
                set(params, devicePlacementJson(model::DevicePlacement::fromFile(text).entries));
            } catch (const Error &e) {
                throw invalidSetting(key, e.what());
            }
        }
        return;
    case SettingKind::Text:
    case SettingKind::Path:
        set(params, json(text));
        return;
    }
}

const std::vector<SettingSpec> &trainingSettings()
{
    static const std::vector<SettingSpec> table = buildTable();
    return table;
}

const SettingSpec &settingSpec(std::string_view key)
{
    for (const SettingSpec &spec : trainingSettings()) {
        if (spec.key == key)
            return spec;
    }
    throw Error(ErrorKind::Internal, "no training setting is called " + std::string(key));
}

const SettingSpec *settingOfFlag(std::string_view flag)
{
    for (const SettingSpec &spec : trainingSettings()) {
        if (spec.flag == flag)
            return &spec;
    }
    return nullptr;
}

json settingsToJson(const TrainingParams &params, SettingScope scope)
{
    json object = json::object();
    for (const SettingSpec &spec : trainingSettings()) {
        if (!inScope(spec, scope))
            continue;
        if (spec.group == SettingGroup::Lora && !isLora(params))
            continue; // "lora": null below
        if (spec.group == SettingGroup::DataParallel && !params.distributed.distributed())
            continue; // a single process's settings stay as they were before data parallelism
        place(object, spec.key, spec.get(params));
    }
    if (!isLora(params))
        object["lora"] = nullptr;
    return object;
}

json settingsToJson(const TrainingParams &params) { return settingsToJson(params, SettingScope::All); }

void readSettingsJson(const json &object, SettingScope scope, TrainingParams &params)
{
    if (!object.is_object())
        throw invalidInput("the settings must be a JSON object (got " + object.dump() + ")");
    TrainingParams read = params;
    for (const SettingSpec &spec : trainingSettings()) {
        if (!inScope(spec, scope))
            continue;
        const auto [holder, name] = locate(object, spec.key);
        if (!holder)
            continue;
        const auto it = holder->find(name);
        if (it == holder->end() || it->is_null())
            continue;
        spec.setJson(read, *it);
    }
    params = std::move(read);
}

void validateSettings(const TrainingParams &params)
{
    for (const SettingSpec &spec : trainingSettings()) {
        if (!spec.range || (spec.group == SettingGroup::Lora && !isLora(params)))
            continue;
        const json value = spec.get(params);
        const double v = value.get<double>();
        const SettingRange &r = *spec.range;
        const std::string shown = spec.kind == SettingKind::Integer ? value.dump() : shortestNumber(v);
        const std::string name = "setting " + spec.messageName() + " = " + shown;
        if (!std::isfinite(v))
            throw invalidSetting(spec.key, name + " must be a finite number");
        if (spec.key == "threads" && (v < 0 || v > hardwareThreads())) {
            const int cores = hardwareThreads();
            throw invalidSetting(spec.key, name + " is out of range: this machine has " + std::to_string(cores)
                                               + (cores == 1 ? " core" : " cores") + ", so use 1 to "
                                               + std::to_string(cores) + " (0 = all cores)");
        }
        if (r.lowExcluded && v <= r.low)
            throw invalidSetting(spec.key, name + " must be greater than " + showValue(r.low)
                                               + (r.high > r.low ? " and at most " + showValue(r.high) : ""));
        if (v < r.low || v > r.high) {
            throw invalidSetting(spec.key, name + " is out of range: it must be between " + showValue(r.low) + " and "
                                               + showValue(r.high));
        }
    }
    if (params.warmupSteps > params.steps)
        throw invalidSetting("warmup_steps", "setting warmup steps = " + std::to_string(params.warmupSteps)
                                                 + " is out of range: it must be between 0 and "
                                                 + std::to_string(params.steps) + " (the number of steps)");
    try {
        canonicalDeviceName(params.device, "setting device");
    } catch (const Error &e) {
        throw invalidSetting("device", e.what());
    }
    if (params.autoDeviceMap && !params.devicePlacement.empty())
        throw invalidSetting("device_map", "a device map is either planned (auto) or given, not both");
    if (!params.autoDeviceMap) { // a planned map is checked once the plan has chosen its devices
        std::vector<std::string> devices = {canonicalDeviceName(params.device, "setting device")};
        for (const auto &entry : params.devicePlacement)
            devices.push_back(entry.second);
        try {
            requireFp16Device(params.precision, devices);
        } catch (const Error &e) {
            throw invalidSetting("precision", e.what());
        }
    }
    if (!params.evalDataPath.empty() && params.valFraction > 0)
        throw invalidSetting("val_fraction", "give either an eval data file or a validation fraction, not both");
    if (isLora(params)) {
        const model::LoraSettings &lora = params.lora;
        if (lora.targetRegex.empty() && lora.targets.empty())
            throw invalidSetting("lora.target_modules", "LoRA needs target modules (e.g. q_proj,v_proj, or a regex)");
        if (!lora.targetRegex.empty()) {
            try {
                std::regex check(lora.targetRegex);
            } catch (const std::regex_error &e) {
                throw invalidSetting("lora.target_modules",
                                     "LoRA target regex \"" + lora.targetRegex + "\" does not compile: " + e.what());
            }
        }
        lora.validate(); // the same rules, as adapters read from disk are checked
    }
}

std::vector<std::string> trainCommandWords(const TrainingParams &params, const std::string &deviceMapFile)
{
    const TrainingParams defaults;
    std::vector<std::string> words{"tunebench"};
    if (!params.storePath.empty())
        words.insert(words.end(), {"--db", params.storePath});
    words.push_back("train");
    for (const SettingSpec &spec : trainingSettings()) {
        if (spec.flag.empty() || !spec.appliesTo(params))
            continue;
        const json value = spec.get(params);
        // The method is written out for LoRA even though "full" is the default: it says what the LoRA flags are for.
        if (value == spec.get(defaults) && !(spec.key == "method" && isLora(params)))
            continue;
        if (spec.kind == SettingKind::Switch && spec.choices.empty()) {
            if (value.get<bool>() != spec.negatedFlag)
                words.push_back(spec.flag);
            continue;
        }
        if (spec.kind == SettingKind::DeviceMap && !params.autoDeviceMap) {
            words.insert(words.end(), {spec.flag, deviceMapFile.empty() ? std::string("DEVICE_MAP.json") : deviceMapFile});
            continue;
        }
        words.insert(words.end(), {spec.flag, spec.text(params)});
    }
    if (!params.resumeFrom.empty())
        words.insert(words.end(), {"--resume", params.resumeFrom});
    return words;
}

} // namespace engine::train
