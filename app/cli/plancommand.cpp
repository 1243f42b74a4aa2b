// `tunebench plan`: where every layer of a model goes on the given devices, and whether training fits.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/modelcommandsupport.h"

#include "engine/core/atomicfile.h"
#include "engine/core/byteunits.h"
#include "engine/core/error.h"
#include "engine/core/textutil.h"
#include "engine/core/format.h"
#include "engine/plan/advisor.h"
#include "engine/plan/catalog.h"
#include "engine/plan/devicemapjson.h"
#include "engine/plan/planner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

namespace app::cli {
namespace {

using namespace engine::plan;
using engine::formatBytes;

std::vector<std::string> splitList(const std::string &text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a != std::string::npos)
            out.push_back(item.substr(a, b - a + 1));
    }
    return out;
}

std::string cell(int64_t bytes) { return bytes == 0 ? "-" : formatBytes(bytes); }

// `plan --list-models`: the catalog as a table, or with --json as a list of objects.
void printCatalog(bool asJson)
{
    const std::vector<CatalogEntry> entries = listCatalog();
    if (asJson) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const CatalogEntry &e : entries) {
            list.push_back({{"name", e.name}, {"display_name", e.displayName}, {"repo_id", e.repoId},
                            {"model_type", e.modelType}, {"parameters", e.parameters},
                            {"parameters_published", e.parametersPublished}});
        }
        std::cout << list.dump() << "\n";
        return;
    }
    std::printf("%-16s %-28s %-10s %s\n", "name", "repo id", "type", "parameters");
    for (const CatalogEntry &e : entries)
        std::printf("%-16s %-28s %-10s %s\n", e.name.c_str(), e.repoId.c_str(), e.modelType.c_str(),
                    e.parametersPublished.c_str());
    std::printf("\nPlan one with: tunebench plan --model NAME --max-memory ... (configs only; no weights are downloaded)\n");
}

// Per run of layers with one window: what training's eager attention keeps and what a long generation caches.
void printAttention(const Plan &plan)
{
    if (plan.attention.empty())
        return;
    std::printf("\n%s:\n", attentionHeadline(plan.settings).c_str());
    for (const AttentionSpan &a : plan.attention)
        std::printf("  %s\n", attentionText(a).c_str());
    if (const std::string note = attentionCacheNote(plan.attention); !note.empty())
        std::printf("  (%s)\n", note.c_str());
}

void printTable(const Plan &plan)
{
    const PlanSettings &s = plan.settings;
    std::string what = "weights only";
    if (s.train != TrainMode::None) {
        what = std::string(s.train == TrainMode::Lora ? "LoRA r=" + std::to_string(s.loraRank) : "full fine-tuning")
            + ", batch " + std::to_string(s.batchSize) + " x " + std::to_string(s.sequenceLength) + " tokens"
            + (s.checkpointing ? ", checkpointing" : "");
    }
    std::printf("%s model, %s, strategy %s, dtype %s: %s\n", plan.modelType.c_str(), what.c_str(),
                strategyName(s.strategy), s.dtype.empty() ? "as stored" : s.dtype.c_str(),
                plan.fits ? "FITS" : plan.memoryFits ? "INVALID (see the lint's errors)" : "DOES NOT FIT");
    for (const std::string &w : plan.warnings)
        std::printf("warning: %s\n", w.c_str());
    std::printf("\n%-6s %11s %11s %10s %10s %10s %11s %10s %10s %11s  %s\n", "device", "budget", "weights", "lora",
                "gradients", "optimizer", "activations", "logits", "overhead", "peak", "verdict");
    for (const DeviceUsage &u : plan.usage) {
        if (u.peakBytes == 0 && u.device.kind == DeviceKind::Disk)
            continue;
        const MemoryBreakdown &m = u.memory;
        std::printf("%-6s %11s %11s %10s %10s %10s %11s %10s %10s %11s  %s\n", deviceLabel(u.device).c_str(),
                    u.device.budget > 0 ? formatBytes(u.device.budget).c_str() : "-", cell(m.weights).c_str(),
                    cell(m.lora).c_str(), cell(m.gradients).c_str(), cell(m.optimizer).c_str(),
                    cell(m.activations).c_str(), cell(m.logits).c_str(), cell(m.overhead).c_str(),
                    cell(u.peakBytes).c_str(), u.verdict.c_str());
    }
    if (!plan.peak.device.empty())
        std::printf("\npeak: %s, %s, %s\n", plan.peak.device.c_str(), phaseName(plan.peak.phase),
                    formatBytes(plan.peak.bytes).c_str());
    printAttention(plan);
    std::printf("\ndevice map:\n");
    for (const Placement &p : plan.deviceMap)
        std::printf("  %s\n", p.explanation.c_str());
    if (!plan.lint.empty()) {
        std::printf("\nlint:\n");
        for (const LintFinding &f : plan.lint)
            std::printf("  [%s] %s: %s\n      fix: %s\n", f.severity.c_str(), f.id.c_str(), f.message.c_str(), f.fix.c_str());
    }
}

// The flags of one piece of advice, as they are typed: --train lora --checkpointing --batch-size 2.
std::string adviceFlags(const nlohmann::ordered_json &changes)
{
    std::string out;
    for (const auto &[flag, value] : changes.items()) {
        out += (out.empty() ? "--" : " --") + flag;
        if (!value.is_boolean())
            out += " " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return out;
}

nlohmann::ordered_json adviceJson(const std::vector<Advice> &advice)
{
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Advice &a : advice)
        list.push_back({{"changes", a.changes},
                        {"verdict", a.plan.fits ? "fits" : "does_not_fit"},
                        {"peak", a.plan.peak.bytes},
                        {"peak_device", !a.plan.peak.device.empty() && std::isdigit(static_cast<unsigned char>(a.plan.peak.device[0]))
                                            ? nlohmann::ordered_json(std::stoi(a.plan.peak.device))
                                            : nlohmann::ordered_json(a.plan.peak.device)}, // as device_map: 0, 1, "cpu"
                        {"peak_phase", phaseName(a.plan.peak.phase)},
                        {"why", a.why}});
    return list;
}

void printAdvice(const Plan &plan, const std::vector<Advice> &advice)
{
    std::printf("\nadvice:\n");
    if (advice.empty()) {
        std::printf("  %s\n", plan.fits ? "none: no larger batch fits"
                                        : "none: no change tunebench can train (LoRA, rank, checkpointing, batch, "
                                          "sequence length, bf16) makes this fit; give more budget");
        return;
    }
    for (const Advice &a : advice)
        std::printf("  %s\n      %s\n", adviceFlags(a.changes).c_str(), a.why.c_str());
}

class PlanCommand : public Command {
public:
    explicit PlanCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("plan", commandSummary("plan"));
        m_command->footer(
            "Budgets: --max-memory 0=15GiB,1=15GiB,cpu=13GiB[,disk=...] (integers are bytes; KB/MB/GB are powers of\n"
            "10, KiB/MiB/GiB of 2). Weights-only plans equal Accelerate's infer_auto_device_map. Training plans add\n"
            "gradients, AdamW state, activations, logits and runtime memory: per GPU that holds a layer (--gpu-overhead,\n"
            "1 GiB) and on the CPU (the process itself, 256 MiB). One accounting places and judges: a module goes to\n"
            "the next device only when the device's peak over the step (forward, backward or optimizer step, as the\n"
            "table shows it) would pass its budget with it; trainable layers never go to disk (read-only there).\n"
            "A lint error (bf16 on a T4, tied weights split, trainable weights on disk) makes the plan invalid.\n"
            "Catalog: --model also takes the name of a well-known config shipped with tunebench (--list-models),\n"
            "planned without downloading anything; a folder of the same name wins.\n"
            "Examples:\n"
            "  tunebench plan --model chatglm-6b --max-memory 0=15GiB,1=15GiB,cpu=13GiB --dtype float16 \\\n"
            "      --train lora --lora-r 32 --lora-targets query_key_value --batch-size 3\n"
            "  tunebench plan --model DIR --max-memory 0=24GB,cpu=64GB --json --output device_map.json\n"
            "  tunebench plan --model DIR --import device_map.json");
        m_command->add_option("--model", m_model, "Model folder, config.json, or a catalog name (see --list-models)");
        m_command->add_flag("--list-models", m_listModels,
                            "List the catalog of well-known configs (name, repo id, type, parameters); with --json, a list");
        m_command->add_option("--max-memory", m_maxMemory, "Budgets: 0=15GiB,1=15GiB,cpu=13GiB[,disk=...]");
        m_command->add_option("--strategy", m_strategy, "sequential | balanced | balanced_low_0 | auto (default)");
        m_command->add_option("--no-split", m_noSplit, "Classes never split (CLASS[,CLASS...] or none; default: the decoder layer)");
        m_command->add_flag("--fallback-allocation", m_settings.fallbackAllocation,
                            "As Accelerate's infer_auto_device_map(fallback_allocation=True): a device that the next "
                            "module does not fit first takes a later module that does");
        m_command->add_option("--dtype", m_dtype,
                              "The load dtype, as from_pretrained(torch_dtype=...): float16 | bfloat16 | float32; every "
                              "floating weight counts at its size (a float16 checkpoint loaded in float32: 4 bytes), so "
                              "the maps equal Accelerate's on the model loaded that way (default: each tensor as stored)");
        m_command->add_option("--train", m_train, "none (default) | lora | full");
        m_command->add_option("--lora-r", m_settings.loraRank, "LoRA rank (default 8)");
        m_command->add_option("--lora-alpha", m_settings.loraAlpha,
                              "LoRA alpha for the exported script (default 16, as train; no effect on memory)");
        m_command->add_option("--lora-targets", m_loraTargets, "Modules LoRA adapts, e.g. q_proj,v_proj");
        m_command->add_option("--lora-dropout", m_settings.loraDropout,
                              "LoRA dropout (default 0.05, as train): above 0 each adapted layer keeps its dropped input");
        m_command->add_option("--gpu-overhead", m_gpuOverhead,
                              "Runtime memory per GPU outside the tensors (CUDA context, cuBLAS workspace, allocator) "
                              "counted inside its budget in training plans: a size such as 1.5GiB, or 0 (default 1GiB)");
        m_command->add_option("--batch-size", m_settings.batchSize, "Sequences per step (default 8)");
        m_command->add_option("--seq-len", m_settings.sequenceLength, "Tokens per sequence (default 128)");
        m_command->add_flag("--checkpointing", m_settings.checkpointing, "Gradient checkpointing per decoder layer");
        m_command->add_flag("--json", m_json, "Print one JSON object");
        m_command->add_flag("--advise", m_advise,
                            "Training plans: when the plan does not fit, the nearest plans that do (LoRA, rank, "
                            "checkpointing, batch with accumulation, sequence length, bf16), each as the flags that "
                            "give it; when it fits, the largest batch that fits. With --json: an \"advice\" list");
        m_command->add_option("--output", m_output, "Write the device map for Accelerate (JSON with max_memory; a .py snippet beside it)");
        m_command->add_option("--import", m_import, "Validate a device map JSON against the model");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        return reportingErrors([this] {
            if (m_listModels) {
                if (m_command->count("--model"))
                    throw engine::invalidInput("--list-models lists the catalog: give it without --model");
                printCatalog(m_json);
                return static_cast<int>(ExitOk);
            }
            if (!m_command->count("--model"))
                throw engine::invalidInput("--model is required: a model folder, a config.json or a catalog name "
                                           "(tunebench plan --list-models)");
            PlanSettings settings = m_settings;
            settings.strategy = parseStrategy(m_strategy, "--strategy");
            settings.train = parseTrainMode(m_train, "--train");
            settings.dtype = m_dtype;
            planDtypeBytes(settings.dtype);
            if (m_command->count("--no-split"))
                settings.noSplit = m_noSplit == "none" ? std::vector<std::string>{} : splitList(m_noSplit);
            if (!m_loraTargets.empty())
                settings.loraTargets = splitList(m_loraTargets);
            checkSettings(settings);
            std::optional<int64_t> gpuOverhead;
            if (m_command->count("--gpu-overhead"))
                gpuOverhead = engine::trimWhitespace(m_gpuOverhead) == "0" ? 0 : engine::parseByteSize(m_gpuOverhead, "--gpu-overhead");
            auto applyOverhead = [&](std::vector<DeviceSpec> &specs) {
                for (DeviceSpec &d : specs)
                    if (d.isGpu() && gpuOverhead)
                        d.overheadBytes = *gpuOverhead;
            };

            ResolvedModel resolved = resolvePlanModel(m_model);
            const std::string loaderName = resolved.loaderName;
            const Planner planner(std::move(resolved.model));
            std::vector<DeviceSpec> devices;
            std::vector<std::string> notes;
            if (m_command->count("--max-memory")) {
                devices = parseMaxMemory(m_maxMemory);
                applyOverhead(devices);
            } else if (m_import.empty()) {
                throw engine::invalidInput("--max-memory is required: give budgets such as 0=15GiB,1=15GiB,cpu=13GiB");
            }
            if (!devices.empty() && findDevice(devices, "cpu") < 0) {
                DeviceSpec cpu;
                cpu.kind = DeviceKind::Cpu;
                cpu.name = "CPU RAM";
                cpu.budget = availableRamBudget();
                cpu.overheadBytes = kDefaultCpuOverheadBytes;
                const auto at = std::find_if(devices.begin(), devices.end(), [](const DeviceSpec &d) { return !d.isGpu(); });
                devices.insert(at, cpu);
                notes.push_back("--max-memory has no cpu budget: using 80 % of the RAM available now ("
                                + formatBytes(cpu.budget) + "), as Accelerate does");
            }

            Plan plan;
            if (!m_import.empty()) {
                Plan imported = importDeviceMap(readDeviceMapFile(m_import), m_import, devices, settings);
                imported.modelType = planner.model().tree.modelType;
                applyOverhead(imported.devices);
                imported.warnings = planner.modelWarnings(settings);
                plan = planner.revalidate(imported);
            } else {
                plan = planner.plan(devices, settings);
                bool placedInMemory = false;
                for (const Placement &p : plan.deviceMap)
                    placedInMemory = placedInMemory || p.device != "disk";
                if (!placedInMemory && !plan.minimums.empty()) {
                    std::string minimums;
                    for (const std::string &m : plan.minimums)
                        minimums += (minimums.empty() ? "" : "; ") + m;
                    throw engine::invalidInput("--max-memory: the budgets are too small for any layer (everything would go to "
                                               "disk): " + minimums);
                }
            }
            for (const std::string &n : notes)
                plan.warnings.push_back(n);

            if (!m_output.empty()) {
                engine::writeFileAtomically(m_output, exportJson(plan).dump(2) + "\n");
                std::filesystem::path snippet = m_output;
                snippet.replace_extension(".py");
                engine::writeFileAtomically(snippet, pythonSnippet(plan, loaderName));
            }
            std::vector<Advice> advice;
            if (m_advise) {
                if (settings.train == TrainMode::None)
                    throw engine::invalidInput("--advise needs a training plan (--train lora or --train full)");
                advice = advise(planner, plan.devices, settings);
            }
            if (m_json) {
                nlohmann::ordered_json out = planJson(plan);
                if (m_advise)
                    out["advice"] = adviceJson(advice);
                std::cout << out.dump() << "\n";
            } else {
                printTable(plan);
                if (m_advise)
                    printAdvice(plan, advice);
                if (!m_output.empty())
                    std::printf("\nwrote %s and %s\n", m_output.c_str(),
                                std::filesystem::path(m_output).replace_extension(".py").c_str());
            }
            return static_cast<int>(ExitOk);
        });
    }

private:
    CLI::App *m_command = nullptr;
    PlanSettings m_settings;
    std::string m_model, m_maxMemory, m_strategy = "auto", m_noSplit, m_dtype, m_train = "none", m_loraTargets;
    std::string m_output, m_import, m_gpuOverhead;
    bool m_json = false, m_advise = false;
    bool m_listModels = false;
};

} // namespace

std::unique_ptr<Command> makePlanCommand(CLI::App &app, const GlobalOptions &) { return std::make_unique<PlanCommand>(app); }

} // namespace app::cli
