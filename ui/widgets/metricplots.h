#pragma once
// Stacked metric plots that share one x axis: one plot per metric (eval/X joins the plot of train/X,
// memory/* join the first memory plot), one colour per run in every plot, the raw values drawn light
// and the debiased moving average (computed once over every point) drawn strong. What is drawn is a
// min/max-keeping decimation of the visible x range at about 2 buckets per pixel, recomputed when the
// range or the width changes, so a million points draw fast and no spike disappears.
//
//   auto *plots = new ui::MetricPlots(parent);
//   plots->setRuns({{runId, "lr 3e-4", started, {{"train/loss", points}, {"eval/loss", evalPoints}}}});
//   plots->appendPoints(runId, "train/loss", newPoints);   // live follow
//
// Zoom with the mouse wheel (x), pan by dragging, double-click to see everything again. Hovering shows
// the nearest original point (run, metric, step, value, time). UI thread only.

#include "engine/store/runstore.h"
#include "engine/report/metriccurve.h"

#include <QColor>
#include <QDateTime>
#include <QElapsedTimer>
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

class QCPAxisRect;
class QCPGraph;
class QCPItemText;
class QCPItemTracer;
class QCPLegend;
class QCPMarginGroup;
class QComboBox;
class QCustomPlot;
class QLabel;
class QMenu;
class QMouseEvent;
class QSlider;
class QTimer;
class QToolButton;

namespace ui {

using engine::report::MetricCurve;

/// One run's curves, as read from the run store.
struct RunCurves {
    qint64 runId = 0;
    QString label;
    QDateTime started; ///< when the run started; wall-time x is started + MetricPoint::wallTime
    std::map<std::string, std::vector<engine::store::MetricPoint>> metrics; ///< by key, in step order
};

class MetricPlots : public QWidget {
    Q_OBJECT

public:
    using RunCurves = ui::RunCurves;

    enum class XAxis { Step, WallTime, RelativeTime };

    /// The point under the mouse, as stored (not as drawn).
    struct HoverPoint {
        bool valid = false;
        qint64 runId = 0;
        QString runLabel;
        QString key;
        qint64 step = 0;
        double wallTime = 0; ///< seconds since the run started
        double value = 0;
    };

    explicit MetricPlots(QWidget *parent = nullptr);
    ~MetricPlots() override;

    /// The keys shown by default: loss (with eval loss in the same plot), learning rate, gradient norm,
    /// tokens/s, CPU memory.
    static QStringList defaultMetrics();

    /// Replaces every run (and their colours, in this order) and shows everything.
    void setRuns(const QList<RunCurves> &runs);
    /// Appends points (in step order, after the ones already there) to one run's metric, for live
    /// following; the view follows the newest step unless the user zoomed elsewhere. Unknown runs are
    /// ignored. Cheap: the plot redraws at most once per event-loop turn, however many calls, and waits
    /// twice the last redraw's time before the next, so slow redraws never starve the window.
    void appendPoints(qint64 runId, const std::string &key, const std::vector<engine::store::MetricPoint> &points);
    /// Which metrics to plot, top to bottom. An eval/X key shares the plot of train/X when both are
    /// shown, and memory/* keys share one plot; keys no run has show an empty plot.
    void setShownMetrics(const QStringList &keys);
    QStringList shownMetrics() const { return m_shownKeys; }
    /// What the empty plot says: without runs (`noRuns`), and for a plot none of the runs has points
    /// for (`noData`, %1 = its keys).
    void setPlaceholderTexts(const QString &noRuns, const QString &noData);
    /// How many points one run's metric holds (0 for an unknown run or key).
    int pointCount(qint64 runId, const QString &key) const;
    /// The newest finite value of the moving average of one run's metric at the current smoothing
    /// (over every point); NaN when it has no finite point.
    double lastSmoothedValue(qint64 runId, const QString &key);
    /// The shown keys, then every other key some run has (what the Metrics menu offers).
    QStringList availableMetrics() const;
    void setXAxis(XAxis axis);
    XAxis xAxis() const { return m_xAxis; }
    /// Log scale for the plot that shows `key`.
    void setLogY(const QString &key, bool log);
    bool logY(const QString &key) const;
    /// Weight of the debiased moving average, in [0, 1); 0 = none.
    void setSmoothing(double weight);
    double smoothing() const { return m_smoothing; }
    /// Shows [lower, upper] of the current x axis (steps, seconds, or seconds since the epoch).
    void setVisibleXRange(double lower, double upper);
    /// Everything again: the whole x range, each plot's y fitted (what a double-click does).
    void resetView();

    /// Saves the plots as .png, .svg or .pdf (by extension). On failure returns false, sets `error`
    /// naming the path and the cause, and leaves no file (written to a temporary name, then renamed).
    bool exportImage(const QString &path, QString *error);
    /// Writes run,metric,step,wall_time,value for every stored point of the shown metrics of every run,
    /// with the same failure rule as exportImage.
    bool exportCsv(const QString &path, QString *error);

    /// Whether each redraw decimates its curves and draws its plots on several threads (ui::parallelFor;
    /// default on). Off for the benchmark's side-by-side measurement and the test that both give the same
    /// lines and pictures.
    void setParallelRefresh(bool on) { m_parallelRefresh = on; }

    // For tests and the Runs page.
    QCustomPlot *plot() const { return m_plot; }
    int plotCount() const { return int(m_panels.size()); }
    QCPAxisRect *axisRect(int plotIndex) const;
    /// The plot index showing `key`, or -1.
    int plotIndexOf(const QString &key) const;
    QCPLegend *legend() const { return m_legend; }
    /// The drawn raw / smoothed graph of one run's metric (null when not shown, or not smoothed).
    QCPGraph *rawGraph(qint64 runId, const QString &key) const;
    QCPGraph *smoothedGraph(qint64 runId, const QString &key) const;
    QColor runColor(qint64 runId) const;
    const HoverPoint &hoverPoint() const { return m_hover; }
    QString hoverText() const { return m_hoverText; }

protected:
    void changeEvent(QEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    struct Run;
    struct Panel;
    struct GraphRef;

    /// The run with this id, or null.
    Run *findRun(qint64 runId) const;
    void buildToolbar();
    void rebuildPlots();
    void applyPalette();
    void styleGraphs();
    void updateLogMenu();
    void updateMetricsMenu();
    void applyXAxisTicker();
    void refreshVisible(bool fitY);
    /// work(i) for each i in [0, n): on several threads (parallelFor), or in order on this one while
    /// parallel refresh is off.
    void forEachItem(int n, const std::function<void(int)> &work) const;
    void fitY(Panel &panel);
    void onBeforeReplot();
    void onAfterLayout();
    void onXRangeChanged(QCPAxisRect *source);
    void onMouseMove(QMouseEvent *event);
    void hideHover();
    void requestReplot();
    /// Back to full quality (antialiased curves) after the wheel's draft redraws; no redraw here.
    void endDraft();
    void scheduleLiveReplot();
    void setXRangeProgrammatic(double lower, double upper);
    void dataXRange(double &lower, double &upper, bool &found) const;
    void showExportImageDialog();
    void showExportCsvDialog();

    double keyOffset(const Run &run) const;
    MetricCurve::X curveAxis() const;

    QCustomPlot *m_plot = nullptr;
    QCPLegend *m_legend = nullptr;
    QCPMarginGroup *m_margins = nullptr; ///< lines the plots' left and right edges up
    QComboBox *m_xAxisCombo = nullptr;
    QToolButton *m_metricsButton = nullptr;
    QMenu *m_metricsMenu = nullptr;
    QToolButton *m_logButton = nullptr;
    QMenu *m_logMenu = nullptr;
    QSlider *m_smoothingSlider = nullptr;
    QLabel *m_smoothingLabel = nullptr;

    std::vector<std::unique_ptr<Run>> m_runs;
    std::vector<std::unique_ptr<Panel>> m_panels;
    QStringList m_shownKeys;
    std::map<QString, bool> m_logKeys; ///< log-y choice by key, kept across rebuilds
    XAxis m_xAxis = XAxis::Step;
    double m_smoothing = 0.8;
    bool m_smoothingDirty = false;
    bool m_viewDirty = true;
    bool m_parallelRefresh = true;
    bool m_exporting = false; ///< an export draws: the canvases need not render
    QString m_noRunsText;
    QString m_noDataText;
    QTimer *m_liveReplot = nullptr; ///< the next live redraw, when the last one was slow
    QTimer *m_draftEnd = nullptr;   ///< ends the wheel's draft redraws (see eventFilter)
    bool m_draft = false;
    int m_draftBackup = 0; ///< QCustomPlot::notAntialiasedElements() before the draft
    QElapsedTimer m_replotClock;    ///< started when a redraw starts
    QElapsedTimer m_sinceReplot;    ///< started when a redraw ends
    double m_lastReplotMs = 0;
    bool m_followX = true; ///< the x range tracks the newest point (until the user zooms or pans)
    bool m_syncingX = false; ///< copying one plot's x range to the others
    int m_programmatic = 0; ///< > 0 while this class changes axis ranges itself
    HoverPoint m_hover;
    QString m_hoverText;
};

} // namespace ui
