// The metric plots under load, offscreen: 8 overlaid runs of 1 M points each.
//   build/bench/ui_plot_bench [--runs N] [--points N] [--seconds S] [--loss-only] [--beside 'COMMAND']
//   build/bench/ui_plot_bench --screenshot plots.png [--dark]   (three sample runs, then exits)
// Prints, against the targets of issue 10:
//   open      setRuns of one run of N points + the first draw (median of 5), target <= 300 ms
//   redraw    replot + paint while the wheel zooms and a drag pans (50 replots): median and p95,
//             target median <= 16 ms; with the curves decimated and drawn on one thread and in parallel,
//             twice each, and where the time goes (decimation, drawing the curves, the rest)
//   latency   how late a 10 ms timer fires (beyond its due time) while a timer appends points at a
//             training-like rate (25 flushes/s of 4 steps, every shown metric, the view following):
//             p50 / p99 / max, target p99 <= 50 ms
// No asserts: numbers only. "all metrics" gives each run every default metric at N points. --beside runs a
// shell command for the whole measurement (e.g. a training run, niced 5 as the GUI's engine thread runs
// one: --beside 'nice -n 5 build/app/tunebench train --threads 1 --steps 100000 --output /tmp/beside'),
// stopped at the end: the plots' numbers with the machine's cores shared as they are while a run trains.

#include "ui/widgets/metricplots.h"
#include "ui/widgets/qcustomplotinclude.h"
#include "ui/widgets/widgetstyle.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QProcess>
#include <QScopeGuard>
#include <QThread>
#include <QTimer>
#include <QWheelEvent>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using engine::store::MetricPoint;

struct Options {
    int runs = 8;
    int points = 1'000'000;
    double seconds = 6;
    bool lossOnly = false;
    QString screenshot;
    bool dark = false;
    QString beside;
};

double nowMs()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double percentile(std::vector<double> values, double p)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const double rank = p / 100.0 * double(values.size() - 1);
    const size_t low = size_t(std::floor(rank));
    const size_t high = std::min(values.size() - 1, low + 1);
    return values[low] + (values[high] - values[low]) * (rank - double(low));
}

QStringList benchMetrics(bool lossOnly)
{
    return lossOnly ? QStringList{QStringLiteral("train/loss")} : ui::MetricPlots::defaultMetrics();
}

/// A loss-like curve with noise and rare spikes; other metrics get their own shapes.
std::vector<MetricPoint> makeCurve(const std::string &key, int n, unsigned seed, int firstStep = 0)
{
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<MetricPoint> out;
    out.reserve(size_t(n));
    const bool eval = key.rfind("eval/", 0) == 0;
    const int every = eval ? 500 : 1;
    for (int i = firstStep; i < firstStep + n * every; i += every) {
        const double t = i * 1e-5;
        double v = 0;
        if (key == "train/learning_rate")
            v = 3e-4 * std::max(0.05, 1 - t / 12);
        else if (key == "train/tokens_per_second")
            v = 6000 + 400 * unit(random);
        else if (key == "memory/cpu")
            v = 2.0e9 + 1e8 * std::sin(t) + 1e7 * unit(random);
        else
            v = 0.8 + 2.0 / (1 + t) + 0.4 * unit(random) + (unit(random) < 1e-5 ? 20 : 0);
        out.push_back({i, 0.05 * i, v});
    }
    return out;
}

ui::RunCurves makeRun(qint64 id, int n, bool lossOnly)
{
    ui::RunCurves run;
    run.runId = id;
    run.label = QStringLiteral("run %1").arg(id);
    run.started = QDateTime::currentDateTimeUtc().addSecs(-3600 * id);
    for (const QString &key : benchMetrics(lossOnly)) {
        const std::string k = key.toStdString();
        run.metrics[k] = makeCurve(k, k.rfind("eval/", 0) == 0 ? std::max(1, n / 500) : n, unsigned(id * 31 + k.size()));
    }
    return run;
}

void measureOpen(const Options &options)
{
    std::vector<double> times;
    // As the Runs page hands them over: read once, passed by reference (not copied inside the timing).
    const QList<ui::RunCurves> runs{makeRun(1, options.points, options.lossOnly)};
    for (int round = 0; round < 5; ++round) {
        ui::MetricPlots plots;
        plots.resize(1400, 900);
        plots.show();
        QCoreApplication::processEvents();
        const double start = nowMs();
        plots.setRuns(runs);
        plots.plot()->replot(QCustomPlot::rpImmediateRefresh);
        plots.repaint();
        times.push_back(nowMs() - start);
    }
    std::printf("open      1 run x %d points (%s): median %.1f ms, min %.1f ms  (target <= 300 ms)\n", options.points,
                options.lossOnly ? "loss" : "all default metrics", percentile(times, 50),
                *std::min_element(times.begin(), times.end()));
}

/// Where a replot's time goes, from QCustomPlot's signals: before the layout (the curves decimated to the
/// view: MetricPlots' beforeReplot slot runs first), the layout and what MetricPlots does after it (each
/// plot's curves drawn into its image), the layers drawn into the paint buffer (axes, grid, the images
/// copied), and the widget painted.
struct Phases {
    double start = 0, beforeLayout = 0, afterLayout = 0, afterReplot = 0;
    std::vector<double> curves, layout, layers, paint;
    void attach(QCustomPlot *plot, QObject *context)
    {
        // Queued after MetricPlots' own slots (connected first), so each stamp includes them.
        QObject::connect(plot, &QCustomPlot::beforeReplot, context, [this] { beforeLayout = nowMs(); });
        QObject::connect(plot, &QCustomPlot::afterLayout, context, [this] { afterLayout = nowMs(); });
        QObject::connect(plot, &QCustomPlot::afterReplot, context, [this] { afterReplot = nowMs(); });
    }
    void begin()
    {
        start = nowMs();
        beforeLayout = afterLayout = afterReplot = 0;
    }
    void end()
    {
        if (!(beforeLayout > 0 && afterLayout > 0 && afterReplot > 0))
            return; // no replot in this step
        const double done = nowMs();
        curves.push_back(beforeLayout - start);
        layout.push_back(afterLayout - beforeLayout);
        layers.push_back(afterReplot - afterLayout);
        paint.push_back(done - afterReplot);
    }
};

void measureRedraw(ui::MetricPlots &plots, const char *label)
{
    QCustomPlot *plot = plots.plot();
    QCPAxisRect *rect = plots.axisRect(0);
    std::vector<double> times;
    QObject context;
    Phases phases;
    phases.attach(plot, &context);
    // 25 wheel steps in around the middle (QCustomPlot replots inside the wheel event).
    const QPointF at = rect->center();
    for (int i = 0; i < 25; ++i) {
        QWheelEvent wheel(at, plot->mapToGlobal(at), QPoint(), QPoint(0, i < 20 ? 120 : -120), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        const double start = nowMs();
        phases.begin();
        QApplication::sendEvent(plot, &wheel);
        plot->repaint();
        times.push_back(nowMs() - start);
        phases.end();
    }
    // 25 drag moves to the left (the replot is queued: run it, then paint).
    QPointF pos = at;
    QMouseEvent press(QEvent::MouseButtonPress, pos, plot->mapToGlobal(pos), Qt::LeftButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &press);
    for (int i = 0; i < 25; ++i) {
        pos += QPointF(-12, 0);
        QMouseEvent move(QEvent::MouseMove, pos, plot->mapToGlobal(pos), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
        const double start = nowMs();
        phases.begin();
        QApplication::sendEvent(plot, &move);
        QCoreApplication::processEvents();
        plot->repaint();
        times.push_back(nowMs() - start);
        phases.end();
    }
    QMouseEvent release(QEvent::MouseButtonRelease, pos, plot->mapToGlobal(pos), Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &release);
    // And the whole view once more (every point of every run in range).
    plots.resetView();
    const double start = nowMs();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    plot->repaint();
    const double whole = nowMs() - start;
    std::printf("redraw    %-9s %zu replots while zooming and panning: median %.1f ms, p95 %.1f ms, max %.1f ms; "
                "whole view %.1f ms  (target median <= 16 ms)\n",
                label, times.size(), percentile(times, 50), percentile(times, 95), *std::max_element(times.begin(), times.end()),
                whole);
    std::printf("          of which (medians): curves decimated %.1f ms, layout + curves drawn %.1f ms, layers drawn "
                "%.1f ms, widget painted %.1f ms\n",
                percentile(phases.curves, 50), percentile(phases.layout, 50), percentile(phases.layers, 50),
                percentile(phases.paint, 50));
}

void measureLatency(ui::MetricPlots &plots, const Options &options, const QStringList &keys)
{
    std::vector<double> latencies;
    std::vector<double> flushTimes;
    int nextStep = options.points * 1;
    // A 10 ms timer: how late each firing comes after the previous one's due time is how long the
    // event loop could not answer (Qt drops the firings it missed, so a blocked loop shows as one
    // long gap, not as many short ones).
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(10);
    double lastFire = -1;
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const double now = nowMs();
        if (lastFire >= 0)
            latencies.push_back(std::max(0.0, now - lastFire - 10.0));
        lastFire = now;
    });
    // What the UI's metrics buffer delivers while a run trains: 4 steps per flush, 25 flushes per second.
    QTimer trainer;
    trainer.setInterval(40);
    QObject::connect(&trainer, &QTimer::timeout, [&] {
        const double start = nowMs();
        for (const QString &key : keys) {
            const std::string k = key.toStdString();
            if (k.rfind("eval/", 0) == 0)
                continue;
            plots.appendPoints(1, k, makeCurve(k, 4, unsigned(nextStep), nextStep));
        }
        nextStep += 4;
        flushTimes.push_back(nowMs() - start);
    });
    probe.start();
    trainer.start();
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < qint64(options.seconds * 1000))
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    probe.stop();
    trainer.stop();
    std::printf("latency   %zu probes over %.0f s while appending (%d steps added): p50 %.1f ms, p99 %.1f ms, max %.1f ms; "
                "append call median %.2f ms  (target p99 <= 50 ms)\n",
                latencies.size(), options.seconds, nextStep - options.points, percentile(latencies, 50),
                percentile(latencies, 99), latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()),
                percentile(flushTimes, 50));
}

/// Three fine-tuning runs of 3000 steps (different learning rates), every default metric.
QList<ui::RunCurves> sampleRuns()
{
    QList<ui::RunCurves> runs;
    const double rates[] = {3e-4, 1e-3, 1e-4};
    for (int r = 0; r < 3; ++r) {
        std::mt19937 random(unsigned(r + 1));
        std::normal_distribution<double> noise(0, 1);
        ui::RunCurves run;
        run.runId = r + 1;
        run.label = QStringLiteral("lora lr %1").arg(rates[r], 0, 'g', 2);
        run.started = QDateTime(QDate(2026, 11, 29), QTime(9 + r, 15, 0));
        const double speed = 1.0 + r * 0.2;
        const double pace = std::log10(rates[r] / 1e-4) + 1; // how fast the loss falls
        for (int step = 0; step < 3000; ++step) {
            const double wall = step * 0.42 * speed;
            const double warmup = std::min(1.0, step / 100.0);
            const double lr = rates[r] * warmup * (0.5 + 0.5 * std::cos(M_PI * step / 3000.0));
            const double loss = 1.55 + 1.9 * std::exp(-step * pace / 700.0) + 0.12 * noise(random)
                                + (r == 1 && step == 1800 ? 2.4 : 0);
            run.metrics["train/loss"].push_back({step, wall, loss});
            run.metrics["train/learning_rate"].push_back({step, wall, lr});
            run.metrics["train/grad_norm"].push_back(
                {step, wall, 0.9 + 2.5 * std::exp(-step / 400.0) + 0.25 * std::abs(noise(random)) + (r == 1 && step == 1800 ? 9 : 0)});
            run.metrics["train/tokens_per_second"].push_back({step, wall, 6100 / speed + 180 * noise(random)});
            run.metrics["memory/cpu"].push_back({step, wall, (2.1 + 0.25 * r) * 1073741824.0 + 2e7 * noise(random)});
            if (step % 200 == 0 || step == 2999)
                run.metrics["eval/loss"].push_back({step, wall, 1.62 + 1.8 * std::exp(-step * pace / 700.0) + 0.01 * r});
        }
        runs.append(run);
    }
    return runs;
}

int screenshot(const Options &options)
{
    ui::MetricPlots plots;
    if (options.dark) {
        const QPalette dark = ui::darkPalette();
        QApplication::setPalette(dark);
        plots.setPalette(dark);
    }
    plots.resize(1100, 860);
    plots.setRuns(sampleRuns());
    plots.show();
    QCoreApplication::processEvents();
    plots.plot()->replot(QCustomPlot::rpImmediateRefresh);
    if (!plots.grab().save(options.screenshot)) {
        std::fprintf(stderr, "ui_plot_bench: cannot write %s\n", qPrintable(options.screenshot));
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "ui_plot_bench: %s needs a value\n", arg.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--runs")
            options.runs = std::max(1, std::atoi(next()));
        else if (arg == "--points")
            options.points = std::max(10, std::atoi(next()));
        else if (arg == "--seconds")
            options.seconds = std::max(1.0, std::atof(next()));
        else if (arg == "--loss-only")
            options.lossOnly = true;
        else if (arg == "--screenshot")
            options.screenshot = QString::fromLocal8Bit(next());
        else if (arg == "--dark")
            options.dark = true;
        else if (arg == "--beside")
            options.beside = QString::fromLocal8Bit(next());
        else {
            std::fprintf(stderr, "usage: ui_plot_bench [--runs N] [--points N] [--seconds S] [--loss-only] [--beside 'COMMAND'] | "
                                 "--screenshot PNG [--dark]\n");
            return 2;
        }
    }
    QApplication app(argc, argv);
    if (!options.screenshot.isEmpty())
        return screenshot(options);
    QProcess beside;
    if (!options.beside.isEmpty()) {
        beside.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        beside.setStandardOutputFile(QProcess::nullDevice());
        beside.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("exec ") + options.beside});
        if (!beside.waitForStarted()) {
            std::fprintf(stderr, "ui_plot_bench: cannot start %s\n", qPrintable(options.beside));
            return 1;
        }
        QThread::sleep(3); // past its start-up, into its steady work
        std::printf("beside: %s (pid %lld)\n", qPrintable(options.beside), beside.processId());
    }
    const auto stopBeside = qScopeGuard([&] {
        if (beside.state() != QProcess::NotRunning) {
            beside.terminate();
            if (!beside.waitForFinished(5000))
                beside.kill();
            beside.waitForFinished(2000);
        }
    });
    const QStringList keys = benchMetrics(options.lossOnly);
    std::printf("ui_plot_bench: %d runs x %d points, %s, window 1400x900, platform %s\n", options.runs, options.points,
                options.lossOnly ? "train/loss only" : "every default metric (5 stacked plots)",
                qPrintable(QGuiApplication::platformName()));

    measureOpen(options);

    QList<ui::RunCurves> runs;
    for (int id = 1; id <= options.runs; ++id)
        runs.append(makeRun(id, options.points, options.lossOnly));
    ui::MetricPlots plots;
    plots.resize(1400, 900);
    plots.show();
    QCoreApplication::processEvents();
    double start = nowMs();
    plots.setRuns(runs);
    plots.setShownMetrics(keys);
    plots.plot()->replot(QCustomPlot::rpImmediateRefresh);
    plots.repaint();
    std::printf("open      %d runs overlaid: %.1f ms\n", options.runs, nowMs() - start);
    runs.clear();

    // Decimation on one thread and on the pool, alternating, twice: the ratio is measured side by side.
    for (int round = 0; round < 2; ++round) {
        for (const bool parallel : {false, true}) {
            plots.setParallelRefresh(parallel);
            plots.resetView();
            QCoreApplication::processEvents();
            measureRedraw(plots, parallel ? "parallel" : "serial");
        }
    }
    plots.resetView();
    QCoreApplication::processEvents();
    measureLatency(plots, options, keys);
    return 0;
}
