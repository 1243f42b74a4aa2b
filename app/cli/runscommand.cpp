// `tunebench runs list|show|metrics|plot`: the runs kept in the run store.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"

#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/core/settings.h"
#include "engine/core/textutil.h"
#include "engine/report/lossplot.h"
#include "engine/store/runstore.h"
#include "engine/store/runfolder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace app::cli {
namespace {

class RunsCommand : public Command {
public:
    RunsCommand(CLI::App &app, const GlobalOptions &globals) : m_globals(globals)
    {
        m_command = app.add_subcommand("runs", commandSummary("runs"));
        m_command->require_subcommand(1);
        m_list = m_command->add_subcommand("list", "List runs, newest first");
        m_list->add_flag("--json", m_json, "Print JSON instead of a table");
        m_show = m_command->add_subcommand("show", "Show one run: settings, events, artifacts, last metrics");
        m_show->add_option("run", m_showRun, "Run id, or the run's output folder")->required();
        m_show->add_flag("--json", m_json, "Print JSON");
        m_metrics = m_command->add_subcommand("metrics", "Every step's values of a run's metrics, for scripts and comparisons");
        m_metrics->add_option("run", m_run, "Run id, or the run's output folder")->required();
        m_metrics->add_option("--key", m_keys, "Metric to print (e.g. loss, eval/loss, train/grad_norm); repeatable; default all");
        auto *json = m_metrics->add_flag("--json", m_json, "Print {\"key\": [{\"step\", \"value\", \"wall_time\"}, ...]}, values exactly as stored");
        m_metrics->add_flag("--csv", m_csv, "Print key,step,wall_time,value lines")->excludes(json);
        m_plot = m_command->add_subcommand("plot", "Draw a run's curve (raw and smoothed, eval loss as points) to PNG, SVG or PDF");
        m_plot->add_option("run", m_plotRun, "Run id, or the run's output folder")->required();
        m_plot->add_option("--output", m_plotOutput, "Picture to write: .png, .svg or .pdf")->required();
        m_plot->add_option("--key", m_plotKey, "Metric to draw")->capture_default_str();
        m_plot->add_option("--smoothing", m_plotOptions.smoothing, "Debiased moving-average weight in [0, 1) (0 = none)")
            ->capture_default_str();
        m_plot->add_option("--width", m_plotOptions.width, "Width in pixels")->capture_default_str();
        m_plot->add_option("--height", m_plotOptions.height, "Height in pixels")->capture_default_str();
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        try {
            std::string path = m_globals.storePath;
            if (path.empty())
                path = engine::loadSettings().effectiveStorePath().string();
            auto store = engine::store::RunStore::open(path);
            if (m_metrics->parsed())
                return metrics(store, path);
            if (m_plot->parsed())
                return plot(store, path);
            return m_show->parsed() ? show(store, path) : list(store);
        } catch (const engine::Error &e) {
            std::fprintf(stderr, "tunebench: %s\n", e.what());
            return ExitFailed;
        }
    }

private:
    struct Summary {
        int64_t steps = 0;
        double lastLoss = 0;
        bool hasLoss = false;
    };

    static Summary summarize(engine::store::RunStore &store, int64_t run)
    {
        Summary s;
        const auto loss = store.metric(run, "train/loss");
        if (!loss.empty()) {
            s.steps = loss.back().step;
            s.lastLoss = loss.back().value;
            s.hasLoss = true;
        }
        return s;
    }

    int list(engine::store::RunStore &store)
    {
        const auto runs = store.listRuns();
        if (m_json) {
            nlohmann::json out = nlohmann::json::array();
            for (const auto &r : runs) {
                const Summary s = summarize(store, r.id);
                out.push_back({{"id", r.id}, {"name", r.name}, {"status", engine::store::runStatusName(r.status)},
                               {"created", r.created}, {"finished", r.finished}, {"model", r.model},
                               {"steps", s.steps}, {"last_loss", s.hasLoss ? nlohmann::json(s.lastLoss) : nlohmann::json()}});
            }
            std::cout << out.dump(2) << "\n";
            return ExitOk;
        }
        if (runs.empty()) {
            std::printf("no runs yet in %s\n", store.path().c_str());
            return ExitOk;
        }
        std::printf("%5s  %-11s  %7s  %9s  %-20s  %s\n", "ID", "STATUS", "STEPS", "LOSS", "CREATED", "NAME");
        for (const auto &r : runs) {
            const Summary s = summarize(store, r.id);
            char loss[32] = "-";
            if (s.hasLoss)
                std::snprintf(loss, sizeof loss, "%.4f", s.lastLoss);
            std::printf("%5lld  %-11s  %7lld  %9s  %-20s  %s\n", static_cast<long long>(r.id),
                        engine::store::runStatusName(r.status), static_cast<long long>(s.steps), loss, r.created.c_str(),
                        r.name.c_str());
        }
        std::printf("(%zu run%s in %s)\n", runs.size(), runs.size() == 1 ? "" : "s", store.path().c_str());
        return ExitOk;
    }

    int show(engine::store::RunStore &store, const std::string &path)
    {
        m_runId = engine::store::resolveRunId(m_showRun, path);
        const auto run = store.run(m_runId);
        if (!run) {
            std::fprintf(stderr, "tunebench: no run %lld in %s\n", static_cast<long long>(m_runId), store.path().c_str());
            return ExitFailed;
        }
        const Summary s = summarize(store, run->id);
        nlohmann::json out = {{"id", run->id}, {"name", run->name}, {"status", engine::store::runStatusName(run->status)},
                              {"created", run->created}, {"finished", run->finished}, {"model", run->model},
                              {"notes", run->notes}, {"steps", s.steps}};
        engine::checkJsonNesting(run->configJson, "run " + std::to_string(run->id) + "'s stored config");
        out["config"] = nlohmann::json::parse(run->configJson, nullptr, false);
        if (s.hasLoss)
            out["last_loss"] = s.lastLoss;
        out["metrics"] = store.metricKeys(run->id);
        for (const auto &e : store.events(run->id))
            out["events"].push_back({{"time", e.time}, {"level", engine::logLevelName(e.level)}, {"text", e.text}});
        for (const auto &a : store.artifacts(run->id))
            out["artifacts"].push_back({{"kind", a.kind}, {"path", a.path}});
        if (m_json) {
            std::cout << out.dump(2) << "\n";
            return ExitOk;
        }
        std::printf("run %lld: %s\n  status:   %s\n  model:    %s\n  created:  %s\n  finished: %s\n  steps:    %lld\n",
                    static_cast<long long>(run->id), run->name.c_str(), engine::store::runStatusName(run->status),
                    run->model.c_str(), run->created.c_str(), run->finished.empty() ? "-" : run->finished.c_str(),
                    static_cast<long long>(s.steps));
        if (s.hasLoss)
            std::printf("  loss:     %.4f\n", s.lastLoss);
        if (out.contains("events")) {
            std::printf("events:\n");
            for (const auto &e : out["events"])
                std::printf("  %s  %-7s  %s\n", e["time"].get<std::string>().c_str(), e["level"].get<std::string>().c_str(),
                            e["text"].get<std::string>().c_str());
        }
        if (out.contains("artifacts")) {
            std::printf("artifacts:\n");
            for (const auto &a : out["artifacts"])
                std::printf("  %-10s  %s\n", a["kind"].get<std::string>().c_str(), a["path"].get<std::string>().c_str());
        }
        std::printf("settings:\n%s\n", out["config"].dump(2).c_str());
        return ExitOk;
    }

    int metrics(engine::store::RunStore &store, const std::string &path)
    {
        const int64_t id = engine::store::resolveRunId(m_run, path);
        if (!store.run(id)) {
            std::fprintf(stderr, "tunebench: no run %lld in %s\n", static_cast<long long>(id), store.path().c_str());
            return ExitFailed;
        }
        const std::vector<std::string> stored = store.metricKeys(id);
        // (name as asked, key as stored): "loss" is train/loss, a full key is itself.
        std::vector<std::pair<std::string, std::string>> keys;
        for (const auto &asked : m_keys) {
            std::string found;
            for (const std::string &candidate : {asked, "train/" + asked}) {
                if (std::find(stored.begin(), stored.end(), candidate) != stored.end()) {
                    found = candidate;
                    break;
                }
            }
            if (found.empty()) {
                const std::string list = engine::joined(stored);
                std::fprintf(stderr, "tunebench: run %lld has no metric '%s' (it has: %s)\n", static_cast<long long>(id),
                             asked.c_str(), list.empty() ? "none" : list.c_str());
                return ExitFailed;
            }
            keys.emplace_back(asked, found);
        }
        if (keys.empty()) {
            for (const auto &k : stored)
                keys.emplace_back(k, k);
        }
        if (m_json) {
            nlohmann::json out = nlohmann::json::object();
            for (const auto &[name, key] : keys) {
                nlohmann::json points = nlohmann::json::array();
                for (const auto &p : store.metric(id, key))
                    points.push_back({{"step", p.step}, {"value", p.value}, {"wall_time", p.wallTime}});
                out[name] = points;
            }
            std::cout << out.dump() << "\n";
        } else if (m_csv) {
            std::printf("key,step,wall_time,value\n");
            for (const auto &[name, key] : keys) {
                for (const auto &p : store.metric(id, key))
                    std::printf("%s,%lld,%.17g,%.17g\n", name.c_str(), static_cast<long long>(p.step), p.wallTime, p.value);
            }
        } else {
            for (const auto &[name, key] : keys) {
                const auto points = store.metric(id, key);
                std::printf("%s (%zu values)\n", name.c_str(), points.size());
                for (const auto &p : points)
                    std::printf("  %8lld  %.6g\n", static_cast<long long>(p.step), p.value);
            }
        }
        return ExitOk;
    }

    int plot(engine::store::RunStore &store, const std::string &path)
    {
        engine::report::plotFormatFor(m_plotOutput); // a bad extension is refused before anything is read
        const int64_t id = engine::store::resolveRunId(m_plotRun, path);
        const auto run = store.run(id);
        if (!run)
            throw engine::invalidInput("no run " + std::to_string(id) + " in " + store.path().string());
        std::vector<engine::report::CurvePoint> curve;
        for (const auto &p : store.metric(id, m_plotKey))
            curve.push_back({static_cast<double>(p.step), p.value});
        if (curve.empty()) {
            const std::string list = engine::joined(store.metricKeys(id));
            throw engine::invalidInput("run " + std::to_string(id) + " has no metric '" + m_plotKey + "' (it has: "
                                       + (list.empty() ? "none" : list) + ")");
        }
        if (m_plotKey == "train/loss") {
            for (const auto &p : store.metric(id, "eval/loss"))
                m_plotOptions.evalCurve.push_back({static_cast<double>(p.step), p.value});
        }
        m_plotOptions.title = "run " + std::to_string(id) + ": " + run->name + (m_plotKey == "train/loss" ? "" : " (" + m_plotKey + ")");
        engine::report::writeLossPlot(m_plotOutput, curve, m_plotOptions);
        std::printf("%s\n", m_plotOutput.c_str());
        return ExitOk;
    }

    const GlobalOptions &m_globals;
    CLI::App *m_command = nullptr;
    CLI::App *m_plot = nullptr;
    std::string m_plotRun;
    std::string m_plotOutput;
    std::string m_plotKey = "train/loss";
    engine::report::LossPlotOptions m_plotOptions;
    CLI::App *m_metrics = nullptr;
    std::string m_run;
    std::vector<std::string> m_keys;
    bool m_csv = false;
    CLI::App *m_list = nullptr;
    CLI::App *m_show = nullptr;
    int64_t m_runId = 0;
    std::string m_showRun;
    bool m_json = false;
};

} // namespace

std::unique_ptr<Command> makeRunsCommand(CLI::App &app, const GlobalOptions &globals)
{
    return std::make_unique<RunsCommand>(app, globals);
}

} // namespace app::cli
