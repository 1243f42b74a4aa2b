#include "ui/widgets/metricplots.h"

#include "engine/core/atomicfile.h"
#include "engine/core/format.h"
#include "engine/report/metriccurve.h"
#include "ui/widgets/curvecanvas.h"
#include "ui/widgets/densegraph.h"
#include "ui/widgets/parallelfor.h"
#include "ui/widgets/qcustomplotinclude.h"
#include "ui/widgets/widgetstyle.h"

#include <QAction>
#include <QComboBox>
#include <QCursor>
#include <QDir>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMenu>
#include <QTimer>
#include <QMessageBox>
#include <QMouseEvent>
#include <QScopedValueRollback>
#include <QSlider>
#include <QSvgGenerator>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>

namespace ui {
namespace {

using engine::report::XYSeries;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kHoverRadiusPx = 40;
/// How long after the last wheel step the plots redraw at full quality (antialiased).
constexpr int kDraftMs = 150;
/// The least room per evaluation point, in pixels, for its points to be marked.
constexpr int kMarkSpacingPx = 8;

/// How a metric is drawn: its plot title, whether it is smoothed, and the unit it is shown in.
struct MetricStyle {
    QString title;
    bool smoothed = true;
    double scale = 1;    ///< drawn value = stored value * scale
    bool bytes = false;  ///< the stored value is a byte count
};

MetricStyle styleFor(const QString &key)
{
    if (key == QLatin1String("train/loss") || key == QLatin1String("eval/loss"))
        return {QObject::tr("Loss"), !key.startsWith(QLatin1String("eval/")), 1, false};
    if (key == QLatin1String("train/learning_rate"))
        return {QObject::tr("Learning rate"), false, 1, false};
    if (key == QLatin1String("train/grad_norm"))
        return {QObject::tr("Gradient norm"), true, 1, false};
    if (key == QLatin1String("train/tokens_per_second"))
        return {QObject::tr("Tokens/s"), true, 1, false};
    if (key.startsWith(QLatin1String("memory/")))
        return {QObject::tr("Memory (GiB)"), false, 1.0 / (1024.0 * 1024.0 * 1024.0), true};
    if (key == QLatin1String("system/cpu_percent"))
        return {QObject::tr("CPU (% of a core)"), true, 1, false};
    if (key == QLatin1String("system/ram_available"))
        return {QObject::tr("RAM available (GiB)"), false, 1.0 / (1024.0 * 1024.0 * 1024.0), true};
    if (key.startsWith(QLatin1String("eval/")))
        return {key, false, 1, false};
    return {key, true, 1, false};
}

/// The key of the plot that `key` joins among `shown`: eval/X goes with train/X, memory/* with the
/// first memory key; anything else is its own plot.
QString plotKeyFor(const QString &key, const QStringList &shown)
{
    if (key.startsWith(QLatin1String("eval/"))) {
        const QString train = QStringLiteral("train/") + key.mid(5);
        if (shown.contains(train))
            return train;
    }
    if (key.startsWith(QLatin1String("memory/"))) {
        for (const QString &other : shown) {
            if (other.startsWith(QLatin1String("memory/")))
                return other;
        }
    }
    return key;
}

/// Distinct, colour-blind-friendly hues (Tableau 10, reordered so the first few differ most).
QColor runPaletteColor(int index, bool dark)
{
    static const QRgb colours[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0xb07aa1,
                                   0x76b7b2, 0x9c755f, 0xff9da7, 0xedc948, 0xbab0ac};
    constexpr int count = int(sizeof(colours) / sizeof(colours[0]));
    QColor colour = QColor::fromRgb(colours[index % count]);
    if (index >= count) // a second round: shift the hue a little so that runs 1 and 11 differ
        colour = QColor::fromHsl((colour.hslHue() + 18 * (index / count)) % 360, colour.hslSaturation(),
                                 colour.lightness());
    return dark ? colour.lighter(125) : colour.darker(105);
}

QString exactNumber(double value)
{
    return QLocale::c().toString(value, 'g', QLocale::FloatingPointShortest);
}

/// engine::writeFileAtomically for a Qt writer that answers false with a reason: an export never
/// creates folders, and its error is one line naming the file.
bool exportAtomically(const QString &path, const std::function<bool(const QString &temporary, QString *why)> &write,
                      QString *error)
{
    try {
        engine::writeFileAtomically(
            std::filesystem::path(QFile::encodeName(path).toStdString()),
            [&](const std::filesystem::path &temporary) {
                QString why;
                if (!write(QFile::decodeName(temporary.c_str()), &why))
                    throw std::runtime_error(why.isEmpty() ? std::string("the file could not be written") : why.toStdString());
            },
            engine::MissingFolders::Refuse);
        return true;
    } catch (const std::exception &e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
}

void appendCsvField(std::string &line, const QString &text)
{
    const QByteArray utf8 = text.toUtf8();
    if (!utf8.contains(',') && !utf8.contains('"') && !utf8.contains('\n') && !utf8.contains('\r')) {
        line.append(utf8.constData(), size_t(utf8.size()));
        return;
    }
    line.push_back('"');
    for (const char c : utf8) {
        if (c == '"')
            line.push_back('"');
        line.push_back(c);
    }
    line.push_back('"');
}

/// The shortest text that reads back as `value` exactly; whole numbers without an exponent.
void appendCsvNumber(std::string &line, double value)
{
    char buffer[64];
    const auto result = std::abs(value) < 1e15 && value == std::trunc(value)
                            ? std::to_chars(buffer, buffer + sizeof(buffer), static_cast<long long>(value))
                            : std::to_chars(buffer, buffer + sizeof(buffer), value);
    line.append(buffer, result.ptr);
}

} // namespace

struct MetricPlots::GraphRef {
    QCPGraph *raw = nullptr;
    QCPGraph *smooth = nullptr;
    MetricStyle style;
    bool eval = false;      ///< marked points: evaluations are sparse
    bool secondary = false; ///< not the plot's first key: dashed
    QCPScatterStyle marker; ///< an evaluation's mark, drawn while the shown points stand apart
};

struct MetricPlots::Run {
    qint64 id = 0;
    QString label;
    QDateTime started;
    double startEpoch = 0; ///< started, in seconds since the epoch (the wall-time x offset)
    QColor color;
    std::map<std::string, MetricCurve> curves;
    std::map<std::string, GraphRef> graphs; ///< the shown keys
};

struct MetricPlots::Panel {
    QStringList keys; ///< the first one names the plot
    QCPAxisRect *rect = nullptr;
    QCPItemTracer *tracer = nullptr;
    QCPItemText *hint = nullptr;
    QCPItemText *keyNote = nullptr; ///< which line is which when a plot holds several keys
    std::unique_ptr<CurveCanvas> canvas; ///< draws the plot's graphs, in the graphs' place on the layer
    int decimatedWidth = -1;
};

MetricPlots::MetricPlots(QWidget *parent) : QWidget(parent)
{
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("metricCustomPlot"));
    m_plot->setMinimumSize(360, 260);
    m_plot->setMouseTracking(true);
    m_plot->setAutoAddPlottableToLegend(false);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels);
    if (QCPLayer *overlay = m_plot->layer(QStringLiteral("overlay")))
        overlay->setMode(QCPLayer::lmBuffered); // the hover marker redraws alone
    m_plot->installEventFilter(this);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    buildToolbar();
    layout->addWidget(m_plot, 1);

    connect(m_plot, &QCustomPlot::beforeReplot, this, &MetricPlots::onBeforeReplot);
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] {
        m_lastReplotMs = m_replotClock.isValid() ? double(m_replotClock.nsecsElapsed()) / 1e6 : 0.0;
        m_sinceReplot.start();
    });
    m_liveReplot = new QTimer(this);
    m_liveReplot->setSingleShot(true);
    connect(m_liveReplot, &QTimer::timeout, this, &MetricPlots::requestReplot);
    m_draftEnd = new QTimer(this);
    m_draftEnd->setSingleShot(true);
    m_draftEnd->setInterval(kDraftMs);
    connect(m_draftEnd, &QTimer::timeout, this, [this] {
        endDraft();
        requestReplot(); // the full-quality picture of where the wheel stopped
    });
    connect(m_plot, &QCustomPlot::afterLayout, this, &MetricPlots::onAfterLayout);
    connect(m_plot, &QCustomPlot::mouseMove, this, &MetricPlots::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent *) { resetView(); });

    m_noRunsText = tr("Select runs to see their curves here.");
    m_noDataText = tr("No %1 in these runs");
    m_shownKeys = defaultMetrics();
    rebuildPlots();
    resetView();
}

MetricPlots::~MetricPlots() = default;

QStringList MetricPlots::defaultMetrics()
{
    return {QStringLiteral("train/loss"),          QStringLiteral("eval/loss"),
            QStringLiteral("train/learning_rate"), QStringLiteral("train/grad_norm"),
            QStringLiteral("train/tokens_per_second"), QStringLiteral("memory/cpu")};
}

void MetricPlots::buildToolbar()
{
    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(4, 2, 4, 0);
    bar->setSpacing(6);

    auto *xLabel = new QLabel(tr("X axis"), this);
    m_xAxisCombo = new QComboBox(this);
    m_xAxisCombo->setObjectName(QStringLiteral("xAxisCombo"));
    m_xAxisCombo->addItem(tr("Step"), int(XAxis::Step));
    m_xAxisCombo->addItem(tr("Wall time"), int(XAxis::WallTime));
    m_xAxisCombo->addItem(tr("Relative time"), int(XAxis::RelativeTime));
    m_xAxisCombo->setToolTip(tr("What the horizontal axis counts: steps, the time of day, or the time since each run started"));
    xLabel->setBuddy(m_xAxisCombo);
    connect(m_xAxisCombo, &QComboBox::activated, this,
            [this](int index) { setXAxis(XAxis(m_xAxisCombo->itemData(index).toInt())); });

    m_logButton = new QToolButton(this);
    m_logButton->setObjectName(QStringLiteral("logYButton"));
    m_logButton->setText(tr("Log y"));
    m_logButton->setToolTip(tr("A logarithmic vertical axis, per plot"));
    m_logButton->setPopupMode(QToolButton::InstantPopup);
    m_logMenu = new QMenu(m_logButton);
    m_logButton->setMenu(m_logMenu);

    m_metricsButton = new QToolButton(this);
    m_metricsButton->setObjectName(QStringLiteral("metricsButton"));
    m_metricsButton->setText(tr("Metrics"));
    m_metricsButton->setToolTip(tr("Which of the runs' metrics to plot"));
    m_metricsButton->setPopupMode(QToolButton::InstantPopup);
    m_metricsMenu = new QMenu(m_metricsButton);
    m_metricsMenu->setObjectName(QStringLiteral("metricsMenu"));
    m_metricsButton->setMenu(m_metricsMenu);
    connect(m_metricsMenu, &QMenu::aboutToShow, this, &MetricPlots::updateMetricsMenu);

    auto *smoothingText = new QLabel(tr("Smoothing"), this);
    m_smoothingSlider = new QSlider(Qt::Horizontal, this);
    m_smoothingSlider->setObjectName(QStringLiteral("smoothingSlider"));
    m_smoothingSlider->setRange(0, 999);
    m_smoothingSlider->setSingleStep(10);
    m_smoothingSlider->setPageStep(100);
    m_smoothingSlider->setValue(int(std::lround(m_smoothing * 1000)));
    m_smoothingSlider->setMinimumWidth(60); // grows to 140 where there is room: the page must fit a laptop
    m_smoothingSlider->setMaximumWidth(140);
    m_smoothingSlider->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_smoothingSlider->setToolTip(tr("Weight of the debiased moving average, computed over every point"));
    smoothingText->setBuddy(m_smoothingSlider);
    m_smoothingLabel = new QLabel(this);
    m_smoothingLabel->setObjectName(QStringLiteral("smoothingValue"));
    m_smoothingLabel->setMinimumWidth(m_smoothingLabel->fontMetrics().horizontalAdvance(QStringLiteral("0.000")));
    m_smoothingLabel->setText(QString::number(m_smoothing, 'f', 3));
    connect(m_smoothingSlider, &QSlider::valueChanged, this, [this](int value) { setSmoothing(value / 1000.0); });

    auto *resetButton = new QToolButton(this);
    resetButton->setObjectName(QStringLiteral("resetViewButton"));
    resetButton->setText(tr("Show all"));
    resetButton->setToolTip(tr("The whole x range, each plot fitted (or double-click a plot)"));
    connect(resetButton, &QToolButton::clicked, this, &MetricPlots::resetView);

    // One Export button with a menu: two buttons side by side made every page with plots wider than a
    // 1366-px laptop screen.
    auto *exportButton = new QToolButton(this);
    exportButton->setObjectName(QStringLiteral("exportButton"));
    exportButton->setText(tr("Export"));
    exportButton->setToolTip(tr("Save the plots as PNG, SVG or PDF, or their points as CSV"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    auto *exportMenu = new QMenu(exportButton);
    QAction *imageAction = exportMenu->addAction(tr("Image (PNG, SVG, PDF)…"), this, &MetricPlots::showExportImageDialog);
    imageAction->setObjectName(QStringLiteral("exportImageAction"));
    imageAction->setToolTip(tr("Save the plots as PNG, SVG or PDF"));
    QAction *csvAction = exportMenu->addAction(tr("Data (CSV)…"), this, &MetricPlots::showExportCsvDialog);
    csvAction->setObjectName(QStringLiteral("exportCsvAction"));
    csvAction->setToolTip(tr("Save every stored point of the shown metrics as CSV"));
    exportButton->setMenu(exportMenu);

    for (QToolButton *button : {m_metricsButton, m_logButton, resetButton, exportButton})
        button->setAutoRaise(true);

    bar->addWidget(xLabel);
    bar->addWidget(m_xAxisCombo);
    bar->addWidget(m_metricsButton);
    bar->addWidget(m_logButton);
    bar->addSpacing(8);
    bar->addWidget(smoothingText);
    bar->addWidget(m_smoothingSlider);
    bar->addWidget(m_smoothingLabel);
    bar->addStretch(1);
    bar->addWidget(resetButton);
    bar->addWidget(exportButton);
    static_cast<QVBoxLayout *>(layout())->addLayout(bar);
}

void MetricPlots::setRuns(const QList<RunCurves> &runs)
{
    hideHover();
    m_runs.clear();
    for (const RunCurves &source : runs) {
        auto run = std::make_unique<Run>();
        run->id = source.runId;
        run->label = source.label.isEmpty() ? tr("run %1").arg(source.runId) : source.label;
        run->started = source.started;
        run->startEpoch = source.started.isValid() ? double(source.started.toMSecsSinceEpoch()) / 1000.0 : 0.0;
        for (const auto &[key, points] : source.metrics) {
            run->curves[key].assign(points);
        }
        m_runs.push_back(std::move(run));
    }
    rebuildPlots();
    resetView();
}

void MetricPlots::appendPoints(qint64 runId, const std::string &key, const std::vector<engine::store::MetricPoint> &points)
{
    if (points.empty())
        return;
    Run *found = findRun(runId);
    if (!found)
        return;
    Run &run = *found;
    double oldMax = 0, oldMin = 0;
    bool hadData = false;
    dataXRange(oldMin, oldMax, hadData);
    MetricCurve &curve = run.curves[key];
    for (const engine::store::MetricPoint &point : points)
        curve.append(double(point.step), point.wallTime, point.value); // smoothed once at the next replot
    if (run.graphs.count(key) == 0)
        return;
    for (const auto &panel : m_panels)
        panel->hint->setVisible(false);
    if (m_followX) {
        double lower = 0, upper = 0;
        bool any = false;
        dataXRange(lower, upper, any);
        const QCPRange shown = m_panels.empty() ? QCPRange() : m_panels.front()->rect->axis(QCPAxis::atBottom)->range();
        if (!hadData || shown.lower <= oldMin)
            setXRangeProgrammatic(lower, upper); // everything: keep showing everything
        else
            setXRangeProgrammatic(shown.lower + (upper - shown.upper), upper); // slide the window
    }
    m_viewDirty = true;
    scheduleLiveReplot();
}

void MetricPlots::scheduleLiveReplot()
{
    // Live points arrive many times a second; a redraw of many long runs can take longer than that.
    // Leave the event loop at least twice the last redraw's time between redraws, so the window keeps
    // answering (a third of the time drawing at worst) and the plot still follows.
    if (m_liveReplot->isActive())
        return;
    const double waitMs = m_sinceReplot.isValid() ? 2.0 * m_lastReplotMs - double(m_sinceReplot.elapsed()) : 0.0;
    if (waitMs <= 1.0)
        requestReplot();
    else
        m_liveReplot->start(int(std::ceil(waitMs)));
}

void MetricPlots::setPlaceholderTexts(const QString &noRuns, const QString &noData)
{
    m_noRunsText = noRuns;
    m_noDataText = noData;
    rebuildPlots();
    requestReplot();
}

MetricPlots::Run *MetricPlots::findRun(qint64 runId) const
{
    for (const auto &run : m_runs) {
        if (run->id == runId)
            return run.get();
    }
    return nullptr;
}

int MetricPlots::pointCount(qint64 runId, const QString &key) const
{
    const Run *run = findRun(runId);
    if (!run)
        return 0;
    const auto curve = run->curves.find(key.toStdString());
    return curve == run->curves.end() ? 0 : int(curve->second.size());
}

double MetricPlots::lastSmoothedValue(qint64 runId, const QString &key)
{
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    Run *run = findRun(runId);
    if (!run)
        return kNone;
    const auto curve = run->curves.find(key.toStdString());
    if (curve == run->curves.end() || curve->second.empty())
        return kNone;
    const std::vector<double> &smoothed = curve->second.smoothed(m_smoothing);
    // The newest finite average (a non-finite value is a gap that does not move it).
    for (auto it = smoothed.rbegin(); it != smoothed.rend(); ++it) {
        if (std::isfinite(*it))
            return *it;
    }
    return kNone;
}

QStringList MetricPlots::availableMetrics() const
{
    QStringList keys = m_shownKeys;
    for (const auto &run : m_runs) {
        for (const auto &[key, curve] : run->curves) {
            const QString name = QString::fromStdString(key);
            if (!keys.contains(name))
                keys << name;
        }
    }
    return keys;
}

void MetricPlots::updateMetricsMenu()
{
    m_metricsMenu->clear();
    for (const QString &key : availableMetrics()) {
        QAction *action = m_metricsMenu->addAction(key);
        action->setObjectName(QStringLiteral("metric:") + key);
        action->setCheckable(true);
        action->setChecked(m_shownKeys.contains(key));
        connect(action, &QAction::toggled, this, [this, key](bool shown) {
            QStringList keys = m_shownKeys;
            if (shown)
                keys << key;
            else
                keys.removeAll(key);
            setShownMetrics(keys);
        });
    }
    m_metricsMenu->addSeparator();
    connect(m_metricsMenu->addAction(tr("Default metrics")), &QAction::triggered, this,
            [this] { setShownMetrics(defaultMetrics()); });
}

void MetricPlots::setShownMetrics(const QStringList &keys)
{
    QStringList unique;
    for (const QString &key : keys) {
        if (!key.isEmpty() && !unique.contains(key))
            unique << key;
    }
    if (unique == m_shownKeys)
        return;
    m_shownKeys = unique;
    hideHover();
    QCPRange range;
    const bool keepRange = !m_panels.empty() && !m_followX;
    if (keepRange)
        range = m_panels.front()->rect->axis(QCPAxis::atBottom)->range();
    rebuildPlots();
    if (keepRange) {
        setXRangeProgrammatic(range.lower, range.upper);
        requestReplot();
    } else {
        resetView();
    }
}

void MetricPlots::setXAxis(XAxis axis)
{
    const int index = m_xAxisCombo->findData(int(axis));
    if (index >= 0 && index != m_xAxisCombo->currentIndex())
        m_xAxisCombo->setCurrentIndex(index);
    if (axis == m_xAxis)
        return;
    m_xAxis = axis;
    hideHover();
    applyXAxisTicker();
    resetView();
}

void MetricPlots::setLogY(const QString &key, bool log)
{
    m_logKeys[plotKeyFor(key, m_shownKeys)] = log;
    const int index = plotIndexOf(key);
    if (index < 0)
        return;
    Panel &panel = *m_panels[size_t(index)];
    QCPAxis *axis = panel.rect->axis(QCPAxis::atLeft);
    if (log) {
        axis->setScaleType(QCPAxis::stLogarithmic);
        axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        axis->setNumberFormat(QStringLiteral("eb"));
        axis->setNumberPrecision(0);
    } else {
        axis->setScaleType(QCPAxis::stLinear);
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        axis->setNumberFormat(QStringLiteral("gb"));
        axis->setNumberPrecision(6);
    }
    // The menu's check mark (not a rebuild: this may run inside that action's own signal).
    const QString actionName = QStringLiteral("logY:") + panel.keys.front();
    for (QAction *action : m_logMenu->actions()) {
        if (action->objectName() == actionName) {
            const QSignalBlocker blocker(action);
            action->setChecked(log);
        }
    }
    m_viewDirty = true;
    requestReplot();
}

bool MetricPlots::logY(const QString &key) const
{
    const int index = plotIndexOf(key);
    if (index < 0)
        return false;
    return m_panels[size_t(index)]->rect->axis(QCPAxis::atLeft)->scaleType() == QCPAxis::stLogarithmic;
}

void MetricPlots::setSmoothing(double weight)
{
    weight = std::clamp(weight, 0.0, 0.999);
    const int position = int(std::lround(weight * 1000));
    if (m_smoothingSlider->value() != position) {
        const QSignalBlocker blocker(m_smoothingSlider);
        m_smoothingSlider->setValue(position);
    }
    m_smoothingLabel->setText(QString::number(weight, 'f', 3));
    if (weight == m_smoothing)
        return;
    m_smoothing = weight; // each curve recomputes its average at the next replot
    m_viewDirty = true;
    requestReplot();
}

void MetricPlots::setVisibleXRange(double lower, double upper)
{
    if (!std::isfinite(lower) || !std::isfinite(upper))
        return;
    if (lower > upper)
        std::swap(lower, upper);
    double dataLower = 0, dataUpper = 0;
    bool found = false;
    dataXRange(dataLower, dataUpper, found);
    m_followX = !found || upper >= dataUpper;
    setXRangeProgrammatic(lower, upper);
    requestReplot();
}

void MetricPlots::resetView()
{
    double lower = 0, upper = 1;
    bool found = false;
    dataXRange(lower, upper, found);
    if (!found) {
        lower = m_xAxis == XAxis::WallTime ? double(QDateTime::currentSecsSinceEpoch()) - 3600 : 0;
        upper = lower + (m_xAxis == XAxis::Step ? 100 : 3600);
    }
    m_followX = true;
    setXRangeProgrammatic(lower, upper);
    m_viewDirty = true;
    requestReplot();
}

// ---- building the plots ---------------------------------------------------------------------------

void MetricPlots::rebuildPlots()
{
    hideHover();
    m_plot->clearItems();
    m_plot->clearPlottables();
    m_plot->plotLayout()->clear(); // deletes the axis rects and the legend (row)
    m_plot->plotLayout()->simplify();
    m_legend = nullptr;
    m_panels.clear();
    for (auto &run : m_runs)
        run->graphs.clear();

    // Group the shown keys into plots, in the order the plots first appear.
    std::vector<QStringList> groups;
    std::map<QString, size_t> groupOf;
    for (const QString &key : m_shownKeys) {
        const QString plotKey = plotKeyFor(key, m_shownKeys);
        auto it = groupOf.find(plotKey);
        if (it == groupOf.end()) {
            it = groupOf.emplace(plotKey, groups.size()).first;
            groups.emplace_back();
        }
        QStringList &group = groups[it->second];
        if (key == plotKey)
            group.prepend(key);
        else
            group.append(key);
    }

    QCPLayoutGrid *layout = m_plot->plotLayout();
    layout->setRowSpacing(4);
    // The legend in its own row above the plots, left-aligned (a stretching empty cell beside it).
    auto *legendRow = new QCPLayoutGrid;
    layout->addElement(0, 0, legendRow);
    m_legend = new QCPLegend;
    legendRow->addElement(0, 0, m_legend);
    legendRow->addElement(0, 1, new QCPLayoutElement(m_plot));
    legendRow->setColumnStretchFactor(0, 0.001);
    legendRow->setColumnStretchFactor(1, 1);
    m_legend->setLayer(QStringLiteral("legend"));
    m_legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_legend->setWrap(6);
    m_legend->setRowSpacing(0);
    m_legend->setColumnSpacing(14);
    m_legend->setMargins(QMargins(6, 2, 6, 0));
    m_legend->setIconSize(22, 10);
    m_legend->setVisible(false);
    layout->setRowStretchFactor(0, 0.001);

    delete m_margins; // empty now: its plots are gone
    m_margins = new QCPMarginGroup(m_plot);
    QCPMarginGroup *margins = m_margins;
    for (size_t index = 0; index < groups.size(); ++index) {
        auto panel = std::make_unique<Panel>();
        panel->keys = groups[index];
        panel->rect = new QCPAxisRect(m_plot);
        layout->addElement(int(index) + 1, 0, panel->rect);
        layout->setRowStretchFactor(int(index) + 1, index == 0 && groups.size() > 2 ? 2.0 : 1.0);
        panel->rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
        panel->rect->setRangeDrag(Qt::Horizontal);
        panel->rect->setRangeZoom(Qt::Horizontal);
        QCPAxis *xAxis = panel->rect->axis(QCPAxis::atBottom);
        QCPAxis *yAxis = panel->rect->axis(QCPAxis::atLeft);
        panel->rect->setRangeDragAxes(xAxis, yAxis);
        panel->rect->setRangeZoomAxes(xAxis, yAxis);
        panel->rect->setRangeZoomFactor(0.85);
        const bool bottom = index + 1 == groups.size();
        xAxis->setTickLabels(bottom);
        yAxis->setLabel(styleFor(panel->keys.front()).title);
        yAxis->setNumberFormat(QStringLiteral("gb"));
        xAxis->grid()->setVisible(true);
        for (QCPAxis *axis : {xAxis, yAxis})
            axis->grid()->setLayer(QStringLiteral("grid"));
        QCPAxisRect *rect = panel->rect;
        connect(xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this,
                [this, rect](const QCPRange &) { onXRangeChanged(rect); });

        panel->tracer = new QCPItemTracer(m_plot);
        panel->tracer->setLayer(QStringLiteral("overlay"));
        panel->tracer->setClipAxisRect(rect);
        panel->tracer->position->setAxes(xAxis, yAxis);
        panel->tracer->setStyle(QCPItemTracer::tsCircle);
        panel->tracer->setSize(9);
        panel->tracer->setVisible(false);
        panel->tracer->setSelectable(false);

        panel->hint = new QCPItemText(m_plot);
        panel->hint->setClipAxisRect(rect);
        panel->hint->position->setType(QCPItemPosition::ptAxisRectRatio);
        panel->hint->position->setAxisRect(rect);
        panel->hint->position->setCoords(0.5, 0.5);
        panel->hint->setSelectable(false);
        panel->hint->setText(m_runs.empty() ? (index == 0 ? m_noRunsText : QString())
                                            : m_noDataText.arg(panel->keys.join(QStringLiteral(", "))));

        if (panel->keys.size() > 1) {
            panel->keyNote = new QCPItemText(m_plot);
            panel->keyNote->setClipAxisRect(rect);
            panel->keyNote->position->setType(QCPItemPosition::ptAxisRectRatio);
            panel->keyNote->position->setAxisRect(rect);
            panel->keyNote->position->setCoords(0.0, 0.0);
            panel->keyNote->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
            panel->keyNote->setPadding(QMargins(6, 3, 6, 3));
            panel->keyNote->setSelectable(false);
            QStringList parts;
            for (const QString &key : panel->keys) {
                const QString mark = key.startsWith(QLatin1String("eval/")) ? QStringLiteral("●")
                                     : key == panel->keys.front()               ? QStringLiteral("━")
                                                                                : QStringLiteral("╌");
                parts << QStringLiteral("%1 %2").arg(mark, key);
            }
            panel->keyNote->setText(parts.join(QStringLiteral("   ")));
        }
        panel->canvas = std::make_unique<CurveCanvas>(rect); // above the texts, where the graphs go
        m_panels.push_back(std::move(panel));
    }

    // Graphs: every raw line under every smoothed one, so the strong lines read on top.
    for (int pass = 0; pass < 2; ++pass) {
        for (auto &run : m_runs) {
            for (const auto &panel : m_panels) {
                QCPAxis *xAxis = panel->rect->axis(QCPAxis::atBottom);
                QCPAxis *yAxis = panel->rect->axis(QCPAxis::atLeft);
                const auto newGraph = [&] { // on the plot's canvas, above the ones before it
                    auto *graph = new DenseGraph(xAxis, yAxis);
                    graph->setName(run->label);
                    panel->canvas->addGraph(graph);
                    return graph;
                };
                for (const QString &key : panel->keys) {
                    GraphRef &ref = run->graphs[key.toStdString()];
                    if (pass == 0) {
                        ref.style = styleFor(key);
                        ref.eval = key.startsWith(QLatin1String("eval/"));
                        ref.secondary = key != panel->keys.front() && !ref.eval;
                        ref.raw = newGraph();
                    } else if (ref.style.smoothed) {
                        ref.smooth = newGraph();
                    }
                }
            }
        }
    }
    // The legend: one entry per run, its line in the first plot.
    if (!m_panels.empty()) {
        const std::string first = m_panels.front()->keys.front().toStdString();
        for (auto &run : m_runs) {
            const GraphRef &ref = run->graphs[first];
            (ref.smooth ? ref.smooth : ref.raw)->addToLegend(m_legend);
        }
    }
    m_legend->setVisible(!m_runs.empty());

    // A plot's key and y scale survive the rebuild.
    for (const auto &panel : m_panels) {
        const auto log = m_logKeys.find(panel->keys.front());
        if (log != m_logKeys.end() && log->second)
            setLogY(panel->keys.front(), true);
    }
    for (const auto &panel : m_panels) {
        bool anyData = false;
        for (const auto &run : m_runs) {
            for (const QString &key : panel->keys) {
                const auto curve = run->curves.find(key.toStdString());
                anyData = anyData || (curve != run->curves.end() && !curve->second.empty());
            }
        }
        panel->hint->setVisible(!anyData);
    }
    applyXAxisTicker();
    updateLogMenu();
    applyPalette();
    m_viewDirty = true;
}

void MetricPlots::applyXAxisTicker()
{
    for (size_t index = 0; index < m_panels.size(); ++index) {
        QCPAxis *axis = m_panels[index]->rect->axis(QCPAxis::atBottom);
        const bool bottom = index + 1 == m_panels.size();
        switch (m_xAxis) {
        case XAxis::Step: {
            auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
            ticker->setTickStep(1.0);
            ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
            axis->setTicker(ticker);
            axis->setNumberFormat(QStringLiteral("f"));
            axis->setNumberPrecision(0);
            axis->setLabel(bottom ? tr("Step") : QString());
            break;
        }
        case XAxis::WallTime: {
            auto ticker = QSharedPointer<QCPAxisTickerDateTime>::create();
            ticker->setDateTimeFormat(QStringLiteral("HH:mm:ss\nd MMM"));
            axis->setTicker(ticker);
            axis->setLabel(bottom ? tr("Time") : QString());
            break;
        }
        case XAxis::RelativeTime: {
            auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
            ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
            ticker->setFieldWidth(QCPAxisTickerTime::tuHours, 1);
            axis->setTicker(ticker);
            axis->setLabel(bottom ? tr("Time since the run started (h:mm:ss)") : QString());
            break;
        }
        }
    }
}

void MetricPlots::updateLogMenu()
{
    m_logMenu->clear();
    for (const auto &panel : m_panels) {
        const QString key = panel->keys.front();
        QAction *action = m_logMenu->addAction(styleFor(key).title);
        action->setObjectName(QStringLiteral("logY:") + key);
        action->setCheckable(true);
        action->setChecked(panel->rect->axis(QCPAxis::atLeft)->scaleType() == QCPAxis::stLogarithmic);
        connect(action, &QAction::toggled, this, [this, key](bool on) { setLogY(key, on); });
    }
    m_logButton->setEnabled(!m_panels.empty());
}

void MetricPlots::applyPalette()
{
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QColor base = pal.color(QPalette::Base);
    QColor axisColor = text;
    axisColor.setAlpha(170);
    QColor grid = pal.color(QPalette::Mid);
    grid.setAlpha(isDark(pal.color(QPalette::Window)) ? 110 : 80);
    QColor placeholder = pal.color(QPalette::PlaceholderText);

    m_plot->setBackground(base);
    for (const auto &panel : m_panels) {
        panel->rect->setBackground(base);
        for (QCPAxis *axis : panel->rect->axes()) {
            axis->setBasePen(QPen(axisColor, 1));
            axis->setTickPen(QPen(axisColor, 1));
            axis->setSubTickPen(QPen(axisColor, 1));
            axis->setTickLabelColor(text);
            axis->setLabelColor(text);
            axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
            axis->grid()->setZeroLinePen(QPen(grid, 1));
        }
        panel->hint->setColor(placeholder);
        if (panel->keyNote) {
            panel->keyNote->setColor(text);
            QColor note = base;
            note.setAlpha(200);
            panel->keyNote->setBrush(note);
        }
        panel->tracer->setBrush(base);
    }
    if (m_legend) {
        m_legend->setBrush(Qt::NoBrush);
        m_legend->setBorderPen(Qt::NoPen);
        m_legend->setTextColor(text);
    }
    styleGraphs();
    requestReplot();
}

void MetricPlots::styleGraphs()
{
    const bool dark = isDark(palette().color(QPalette::Window));
    const QColor base = palette().color(QPalette::Base);
    for (size_t index = 0; index < m_runs.size(); ++index) {
        Run &run = *m_runs[index];
        run.color = runPaletteColor(int(index), dark);
        for (auto &[key, ref] : run.graphs) {
            const Qt::PenStyle style = ref.secondary ? Qt::DashLine : Qt::SolidLine;
            if (ref.eval) {
                ref.raw->setPen(QPen(run.color, 1.6, Qt::DashLine));
                ref.marker = QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(run.color, 1.6), base, 6);
                ref.raw->setScatterStyle(ref.marker);
                ref.raw->setAntialiased(true);
                ref.raw->setAntialiasedScatters(true);
            } else if (ref.smooth) {
                QColor light = run.color;
                light.setAlpha(dark ? 55 : 65);
                ref.raw->setPen(QPen(light, 1, style));
                ref.raw->setAntialiased(false);
                ref.smooth->setPen(QPen(run.color, 2, style));
                ref.smooth->setAntialiased(true);
            } else {
                ref.raw->setPen(QPen(run.color, 1.6, style));
                ref.raw->setAntialiased(true);
            }
        }
    }
    for (const auto &panel : m_panels)
        panel->tracer->setPen(QPen(palette().color(QPalette::WindowText), 1.5));
}

void MetricPlots::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

void MetricPlots::endDraft()
{
    m_draftEnd->stop();
    if (!m_draft)
        return;
    m_draft = false;
    m_plot->setNotAntialiasedElements(QCP::AntialiasedElements(m_draftBackup));
}

bool MetricPlots::eventFilter(QObject *watched, QEvent *event)
{
    // While the wheel zooms, curves redraw without antialiasing (as QCustomPlot does while a drag pans),
    // and kDraftMs after the last step once more with it.
    if (watched == m_plot && event->type() == QEvent::Wheel) {
        if (!m_draft) {
            m_draft = true;
            m_draftBackup = int(m_plot->notAntialiasedElements());
            m_plot->setNotAntialiasedElements(m_plot->notAntialiasedElements() | QCP::aePlottables | QCP::aeScatters);
        }
        m_draftEnd->start();
    }
    // The tooltip's own window takes the pointer and sends a Leave: only leaving the plot counts.
    if (watched == m_plot && event->type() == QEvent::Leave
        && !m_plot->rect().contains(m_plot->mapFromGlobal(QCursor::pos())))
        hideHover();
    return QWidget::eventFilter(watched, event);
}

// ---- what is drawn --------------------------------------------------------------------------------

QCPAxisRect *MetricPlots::axisRect(int plotIndex) const
{
    return plotIndex >= 0 && plotIndex < plotCount() ? m_panels[size_t(plotIndex)]->rect : nullptr;
}

int MetricPlots::plotIndexOf(const QString &key) const
{
    for (size_t index = 0; index < m_panels.size(); ++index) {
        if (m_panels[index]->keys.contains(key))
            return int(index);
    }
    return -1;
}

QCPGraph *MetricPlots::rawGraph(qint64 runId, const QString &key) const
{
    const Run *run = findRun(runId);
    if (!run)
        return nullptr;
    const auto ref = run->graphs.find(key.toStdString());
    return ref == run->graphs.end() ? nullptr : ref->second.raw;
}

QCPGraph *MetricPlots::smoothedGraph(qint64 runId, const QString &key) const
{
    const Run *run = findRun(runId);
    if (!run)
        return nullptr;
    const auto ref = run->graphs.find(key.toStdString());
    return ref == run->graphs.end() ? nullptr : ref->second.smooth;
}

QColor MetricPlots::runColor(qint64 runId) const
{
    const Run *run = findRun(runId);
    return run ? run->color : QColor();
}

double MetricPlots::keyOffset(const Run &run) const
{
    return m_xAxis == XAxis::WallTime ? run.startEpoch : 0.0;
}

MetricCurve::X MetricPlots::curveAxis() const
{
    return m_xAxis == XAxis::Step ? MetricCurve::X::Step : MetricCurve::X::Time;
}

void MetricPlots::dataXRange(double &lower, double &upper, bool &found) const
{
    lower = kInf;
    upper = -kInf;
    for (const auto &run : m_runs) {
        const double offset = keyOffset(*run);
        for (const auto &[key, ref] : run->graphs) {
            const auto curve = run->curves.find(key);
            if (curve == run->curves.end() || curve->second.empty())
                continue;
            const auto &x = curve->second.x(curveAxis());
            lower = std::min(lower, x.front() + offset);
            upper = std::max(upper, x.back() + offset);
        }
    }
    found = lower <= upper;
    if (!found) {
        lower = 0;
        upper = 1;
    }
}

void MetricPlots::setXRangeProgrammatic(double lower, double upper)
{
    if (m_panels.empty())
        return;
    if (!(upper > lower)) {
        const double pad = m_xAxis == XAxis::Step ? 1.0 : 10.0;
        lower -= pad;
        upper += pad;
    }
    ++m_programmatic;
    m_panels.front()->rect->axis(QCPAxis::atBottom)->setRange(lower, upper);
    --m_programmatic;
    m_viewDirty = true;
}

void MetricPlots::onXRangeChanged(QCPAxisRect *source)
{
    if (m_syncingX)
        return;
    m_syncingX = true;
    const QCPRange range = source->axis(QCPAxis::atBottom)->range();
    for (const auto &panel : m_panels) {
        if (panel->rect != source)
            panel->rect->axis(QCPAxis::atBottom)->setRange(range);
    }
    m_syncingX = false;
    m_viewDirty = true;
    if (m_programmatic == 0) { // the user zoomed or panned: follow new points only at the right edge
        double lower = 0, upper = 0;
        bool found = false;
        dataXRange(lower, upper, found);
        m_followX = !found || range.upper >= upper;
    }
}

void MetricPlots::requestReplot()
{
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlots::forEachItem(int n, const std::function<void(int)> &work) const
{
    if (m_parallelRefresh) {
        parallelFor(n, work);
        return;
    }
    for (int i = 0; i < n; ++i)
        work(i);
}

void MetricPlots::refreshVisible(bool fit)
{
    if (m_panels.empty())
        return;
    const QCPRange range = m_panels.front()->rect->axis(QCPAxis::atBottom)->range();
    const MetricCurve::X axis = curveAxis();

    // One job per line to draw: its curve decimated to the view. The curves are brought up to date first
    // (prepare changes them); the decimations only read them, so they run in parallel.
    struct Job {
        size_t panel = 0;
        const GraphRef *ref = nullptr;
        const MetricCurve *curve = nullptr;
        bool smooth = false;
        double offset = 0;
        int buckets = 1;
        bool log = false;
        QVector<QCPGraphData> data;
        double low = kInf, high = -kInf;
    };
    std::vector<Job> jobs;
    for (size_t p = 0; p < m_panels.size(); ++p) {
        Panel &panel = *m_panels[p];
        // One bucket per pixel column: its first, lowest, highest and last points draw the column's whole
        // vertical extent and its joins to the columns beside it (two per column drew the same pixels).
        const int buckets = std::max(1, panel.rect->width());
        panel.decimatedWidth = panel.rect->width();
        const bool log = panel.rect->axis(QCPAxis::atLeft)->scaleType() == QCPAxis::stLogarithmic;
        for (auto &run : m_runs) {
            const double offset = keyOffset(*run);
            for (const QString &qkey : panel.keys) {
                const std::string key = qkey.toStdString();
                const auto refIt = run->graphs.find(key);
                if (refIt == run->graphs.end())
                    continue;
                const GraphRef &ref = refIt->second;
                const auto curveIt = run->curves.find(key);
                if (curveIt == run->curves.end() || curveIt->second.empty()) {
                    ref.raw->data()->clear();
                    if (ref.smooth)
                        ref.smooth->data()->clear();
                    continue;
                }
                MetricCurve &curve = curveIt->second;
                curve.prepare(axis, ref.smooth ? std::optional<double>(m_smoothing) : std::nullopt);
                for (const bool smooth : {false, true}) {
                    if (!smooth || ref.smooth)
                        jobs.push_back({p, &ref, &curve, smooth, offset, buckets, log, {}, kInf, -kInf});
                }
            }
        }
    }

    const auto decimate = [&](int index) {
        Job &job = jobs[size_t(index)];
        const XYSeries shown =
            job.curve->visible(axis, job.smooth, range.lower - job.offset, range.upper - job.offset, job.buckets);
        const size_t n = shown.x.size();
        job.data.resize(qsizetype(n));
        QCPGraphData *out = job.data.data();
        const double offset = job.offset;
        const double scale = job.ref->style.scale;
        double low = kInf, high = -kInf;
        for (size_t i = 0; i < n; ++i) {
            const double x = shown.x[i] + offset;
            const double value = shown.y[i] * scale;
            out[i].key = x; // (fields, not QCPGraphData's constructor: that is a call into the library per point)
            out[i].value = value;
            // The y fit: finite values in the view (positive ones on a log axis).
            const bool counts = x >= range.lower && x <= range.upper && std::isfinite(value) && (!job.log || value > 0);
            low = counts && value < low ? value : low;
            high = counts && value > high ? value : high;
        }
        job.low = low;
        job.high = high;
    };
    forEachItem(int(jobs.size()), decimate);

    std::vector<double> lows(m_panels.size(), kInf), highs(m_panels.size(), -kInf);
    for (Job &job : jobs) {
        QCPGraph *graph = job.smooth ? job.ref->smooth : job.ref->raw;
        const qsizetype points = job.data.size();
        graph->data()->set(job.data, true);
        // Marks only where they stand apart (a 6 px circle each 8 px at most): thousands of
        // overlapping circles show nothing the line does not, and cost most of a redraw.
        if (job.ref->eval)
            graph->setScatterStyle(points * kMarkSpacingPx <= m_panels[job.panel]->rect->width() ? job.ref->marker : QCPScatterStyle());
        lows[job.panel] = std::min(lows[job.panel], job.low);
        highs[job.panel] = std::max(highs[job.panel], job.high);
    }

    if (fit) {
        for (size_t p = 0; p < m_panels.size(); ++p) {
            const double low = lows[p], high = highs[p];
            QCPAxis *yAxis = m_panels[p]->rect->axis(QCPAxis::atLeft);
            const bool log = yAxis->scaleType() == QCPAxis::stLogarithmic;
            if (!(low <= high)) {
                yAxis->setRange(log ? QCPRange(0.1, 10) : QCPRange(0, 1));
            } else if (log) {
                const double ratio = std::max(high / low, 1.0 + 1e-9);
                const double pad = std::pow(ratio, 0.06);
                yAxis->setRange(low / (pad > 1.0001 ? pad : 1.5), high * (pad > 1.0001 ? pad : 1.5));
            } else {
                const double span = high - low;
                const double pad = span > 0 ? span * 0.06 : std::max(std::abs(high) * 0.05, 1e-9);
                yAxis->setRange(low - pad, high + pad);
            }
        }
    }
    m_viewDirty = false;
}

void MetricPlots::onBeforeReplot()
{
    m_replotClock.start();
    if (m_xAxis == XAxis::WallTime && !m_panels.empty()) {
        // Seconds on the ticks only when the view is short; the date only when it spans days.
        const QCPRange range = m_panels.front()->rect->axis(QCPAxis::atBottom)->range();
        const bool days = QDateTime::fromSecsSinceEpoch(qint64(range.lower)).date()
                          != QDateTime::fromSecsSinceEpoch(qint64(range.upper)).date();
        const QString time = range.size() > 4 * 3600 ? QStringLiteral("HH:mm") : QStringLiteral("HH:mm:ss");
        const QString format = days ? time + QStringLiteral("\nd MMM") : time;
        for (const auto &panel : m_panels) {
            if (auto ticker = panel->rect->axis(QCPAxis::atBottom)->ticker().dynamicCast<QCPAxisTickerDateTime>())
                ticker->setDateTimeFormat(format);
        }
    }
    if (m_viewDirty)
        refreshVisible(true);
}

void MetricPlots::onAfterLayout()
{
    // Short plots get fewer y ticks, so their labels do not run into each other. The ticks of this
    // redraw are made already (before the layout): a changed count redraws once more.
    bool ticksChanged = false;
    for (const auto &panel : m_panels) {
        const int ticks = std::clamp(panel->rect->height() / 30, 3, 5);
        const QSharedPointer<QCPAxisTicker> ticker = panel->rect->axis(QCPAxis::atLeft)->ticker();
        if (ticker->tickCount() != ticks) {
            ticker->setTickCount(ticks);
            ticksChanged = true;
        }
    }
    if (ticksChanged)
        requestReplot();
    // A new width needs a new decimation; the y fit stays (min/max are kept at any width).
    for (const auto &panel : m_panels) {
        if (panel->rect->width() != panel->decimatedWidth) {
            refreshVisible(false);
            break;
        }
    }
    // The axes and the plots' places are final now: each plot's curves into its image, the plots on
    // several threads (an export draws the graphs itself, as vectors).
    if (m_exporting)
        return;
    const auto render = [this](int index) { m_panels[size_t(index)]->canvas->render(); };
    forEachItem(int(m_panels.size()), render);
}

// ---- hover ----------------------------------------------------------------------------------------

void MetricPlots::hideHover()
{
    m_hover = HoverPoint();
    m_hoverText.clear();
    bool wasVisible = false;
    for (const auto &panel : m_panels) {
        wasVisible = wasVisible || panel->tracer->visible();
        panel->tracer->setVisible(false);
    }
    if (wasVisible) {
        QToolTip::hideText();
        if (QCPLayer *overlay = m_plot->layer(QStringLiteral("overlay")))
            overlay->replot();
    }
}

void MetricPlots::onMouseMove(QMouseEvent *event)
{
    if (event->buttons() != Qt::NoButton) {
        hideHover();
        return;
    }
    const QPointF pos = event->position();
    QCPAxisRect *rect = m_plot->axisRectAt(pos);
    const auto panelIt = std::find_if(m_panels.begin(), m_panels.end(), [&](const auto &p) { return p->rect == rect; });
    if (!rect || panelIt == m_panels.end() || !rect->rect().contains(pos.toPoint())) {
        hideHover();
        return;
    }
    Panel &panel = **panelIt;
    QCPAxis *xAxis = rect->axis(QCPAxis::atBottom);
    QCPAxis *yAxis = rect->axis(QCPAxis::atLeft);

    double best = double(kHoverRadiusPx) * kHoverRadiusPx;
    const Run *bestRun = nullptr;
    const MetricCurve *bestCurve = nullptr;
    QString bestKey;
    size_t bestIndex = 0;
    double bestScale = 1;
    for (const auto &run : m_runs) {
        const double offset = keyOffset(*run);
        for (const QString &key : panel.keys) {
            const auto refIt = run->graphs.find(key.toStdString());
            const auto curveIt = run->curves.find(key.toStdString());
            if (refIt == run->graphs.end() || curveIt == run->curves.end() || curveIt->second.empty())
                continue;
            const MetricCurve &curve = curveIt->second;
            const std::vector<double> &x = curve.x(curveAxis());
            // The original points within a few pixels, plus the nearest one on each side.
            double window = 4;
            size_t begin = 0, end = 0;
            for (;;) {
                double a = xAxis->pixelToCoord(pos.x() - window) - offset;
                double b = xAxis->pixelToCoord(pos.x() + window) - offset;
                if (a > b)
                    std::swap(a, b);
                begin = size_t(std::lower_bound(x.begin(), x.end(), a) - x.begin());
                end = size_t(std::upper_bound(x.begin(), x.end(), b) - x.begin());
                if (end - begin <= 50000 || window <= 0.5)
                    break;
                window /= 4;
            }
            if (begin > 0)
                --begin;
            if (end < x.size())
                ++end;
            for (size_t i = begin; i < end; ++i) {
                const double value = curve.values()[i] * refIt->second.style.scale;
                if (!std::isfinite(value))
                    continue;
                const double dx = xAxis->coordToPixel(x[i] + offset) - pos.x();
                const double dy = yAxis->coordToPixel(value) - pos.y();
                const double distance = dx * dx + dy * dy;
                if (distance < best) {
                    best = distance;
                    bestRun = run.get();
                    bestCurve = &curve;
                    bestKey = key;
                    bestIndex = i;
                    bestScale = refIt->second.style.scale;
                }
            }
        }
    }
    if (!bestRun) {
        hideHover();
        return;
    }

    for (const auto &other : m_panels)
        other->tracer->setVisible(other.get() == &panel);
    m_hover.valid = true;
    m_hover.runId = bestRun->id;
    m_hover.runLabel = bestRun->label;
    m_hover.key = bestKey;
    m_hover.step = qint64(bestCurve->steps()[bestIndex]);
    m_hover.wallTime = bestCurve->times()[bestIndex];
    m_hover.value = bestCurve->values()[bestIndex];
    panel.tracer->position->setCoords(bestCurve->x(curveAxis())[bestIndex] + keyOffset(*bestRun), m_hover.value * bestScale);
    QPen tracerPen(bestRun->color, 2);
    panel.tracer->setPen(tracerPen);

    const MetricStyle style = styleFor(bestKey);
    const QString value = style.bytes ? QStringLiteral("%1 (%2)").arg(formatBytes(qint64(m_hover.value)),
                                                                      formatExactBytes(qint64(m_hover.value)))
                                      : exactNumber(m_hover.value);
    QString time = QString::fromStdString(engine::formatDuration(m_hover.wallTime));
    if (bestRun->started.isValid())
        time += QStringLiteral(" · ")
                + bestRun->started.addMSecs(qint64(std::llround(m_hover.wallTime * 1000)))
                      .toLocalTime()
                      .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
    m_hoverText = QStringLiteral("%1\n%2\n%3\n%4\n%5")
                      .arg(bestRun->label, bestKey, tr("step %1").arg(m_hover.step), tr("value %1").arg(value),
                           tr("time %1").arg(time));
    const QString html = QStringLiteral("<b style='color:%1'>■</b> <b>%2</b><br/>%3<br/>%4 <b>%5</b><br/>%6 %7<br/>%8 %9")
                             .arg(bestRun->color.name(), bestRun->label.toHtmlEscaped(), bestKey.toHtmlEscaped(),
                                  tr("value"), value.toHtmlEscaped(), tr("step"), QString::number(m_hover.step),
                                  tr("time"), time.toHtmlEscaped());
    QToolTip::showText(m_plot->mapToGlobal(pos.toPoint() + QPoint(14, 14)), html, m_plot);
    if (QCPLayer *overlay = m_plot->layer(QStringLiteral("overlay")))
        overlay->replot();
}

// ---- export ---------------------------------------------------------------------------------------

bool MetricPlots::exportImage(const QString &path, QString *error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg") && suffix != QLatin1String("pdf")) {
        if (error)
            *error = tr("Cannot export the plots to %1: the name must end in .png, .svg or .pdf")
                         .arg(QDir::toNativeSeparators(path));
        return false;
    }
    hideHover();
    endDraft(); // an export is drawn at full quality, even right after a wheel step
    m_plot->replot(QCustomPlot::rpImmediateRefresh); // the decimation for the current view and size
    int width = m_plot->width();
    int height = m_plot->height();
    if (width < 100 || height < 100) { // never shown: a sensible page
        width = 1000;
        height = 700;
    }
    const QScopedValueRollback exporting(m_exporting, true);
    return exportAtomically(
        path,
        [&](const QString &temporary, QString *why) {
            if (suffix == QLatin1String("png"))
                return m_plot->savePng(temporary, width, height, 2.0);
            if (suffix == QLatin1String("pdf"))
                return m_plot->savePdf(temporary, width, height, QCP::epNoCosmetic, QStringLiteral("tunebench"),
                                       tr("Training metrics"));
            QSvgGenerator generator;
            generator.setFileName(temporary);
            generator.setSize(QSize(width, height));
            generator.setViewBox(QRect(0, 0, width, height));
            generator.setTitle(tr("Training metrics"));
            generator.setDescription(tr("Made by tunebench"));
            QCPPainter painter;
            if (!painter.begin(&generator)) {
                *why = tr("the SVG writer could not start");
                return false;
            }
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
            m_plot->toPainter(&painter, width, height);
            return painter.end();
        },
        error);
}

bool MetricPlots::exportCsv(const QString &path, QString *error)
{
    return exportAtomically(
        path,
        [&](const QString &temporary, QString *why) {
            QFile file(temporary);
            if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
                *why = file.errorString();
                return false;
            }
            std::string chunk = "run,metric,step,wall_time,value\n";
            auto flush = [&] {
                const bool ok = file.write(chunk.data(), qint64(chunk.size())) == qint64(chunk.size());
                chunk.clear();
                return ok;
            };
            for (const auto &run : m_runs) {
                for (const QString &key : m_shownKeys) {
                    const auto curve = run->curves.find(key.toStdString());
                    if (curve == run->curves.end())
                        continue;
                    const MetricCurve &c = curve->second;
                    for (size_t i = 0; i < c.size(); ++i) {
                        appendCsvField(chunk, run->label);
                        chunk.push_back(',');
                        appendCsvField(chunk, key);
                        chunk.push_back(',');
                        appendCsvNumber(chunk, c.steps()[i]);
                        chunk.push_back(',');
                        appendCsvNumber(chunk, c.times()[i]);
                        chunk.push_back(',');
                        appendCsvNumber(chunk, c.values()[i]);
                        chunk.push_back('\n');
                        if (chunk.size() > (1 << 20) && !flush()) {
                            *why = file.errorString();
                            return false;
                        }
                    }
                }
            }
            if (!flush() || !file.flush()) {
                *why = file.errorString();
                return false;
            }
            file.close();
            return file.error() == QFileDevice::NoError;
        },
        error);
}

void MetricPlots::showExportImageDialog()
{
    QString filter;
    QString path = QFileDialog::getSaveFileName(this, tr("Export plots"), QStringLiteral("metrics.png"),
                                                tr("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)"), &filter);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += filter.contains(QLatin1String("svg")) ? QStringLiteral(".svg")
                : filter.contains(QLatin1String("pdf")) ? QStringLiteral(".pdf")
                                                        : QStringLiteral(".png");
    QString error;
    if (!exportImage(path, &error))
        QMessageBox::warning(this, tr("Export plots"), error);
}

void MetricPlots::showExportCsvDialog()
{
    QString path = QFileDialog::getSaveFileName(this, tr("Export data"), QStringLiteral("metrics.csv"),
                                                tr("CSV file (*.csv)"));
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".csv");
    QString error;
    if (!exportCsv(path, &error))
        QMessageBox::warning(this, tr("Export data"), error);
}

} // namespace ui
