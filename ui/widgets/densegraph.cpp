#include "ui/widgets/densegraph.h"

#include "ui/widgets/curveraster.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ui {
namespace {

/// coord -> widget pixel along one axis, as QCPAxis::coordToPixel computes it, with the axis' range and
/// place read once (a call per point costs more than the rest of a line's drawing).
class AxisMap {
public:
    explicit AxisMap(const QCPAxis &axis)
        : m_log(axis.scaleType() == QCPAxis::stLogarithmic)
    {
        const QCPRange range = axis.range();
        const double lower = m_log ? std::log(range.lower) : range.lower;
        const double upper = m_log ? std::log(range.upper) : range.upper;
        const double from = axis.coordToPixel(range.lower);
        const double to = axis.coordToPixel(range.upper);
        m_scale = upper != lower ? (to - from) / (upper - lower) : 0.0;
        m_offset = from - m_scale * lower;
    }
    /// NaN for what the axis cannot show (a value <= 0 on a log axis): a gap in the line.
    double operator()(double coord) const
    {
        if (m_log)
            return coord > 0 ? m_offset + m_scale * std::log(coord) : std::numeric_limits<double>::quiet_NaN();
        return m_offset + m_scale * coord;
    }

private:
    bool m_log;
    double m_scale = 0;
    double m_offset = 0;
};

} // namespace

bool DenseGraph::isExport(const QCPPainter &painter)
{
    return painter.modes().testFlag(QCPPainter::pmVectorized) || painter.modes().testFlag(QCPPainter::pmNoCaching);
}

bool DenseGraph::antialiasedNow() const
{
    if (parentPlot()->notAntialiasedElements().testFlag(QCP::aePlottables))
        return false;
    return parentPlot()->antialiasedElements().testFlag(QCP::aePlottables) || antialiased();
}

double DenseGraph::selectTest(const QPointF &pos, bool onlySelectable, QVariant *details) const
{
    return m_onCanvas ? -1.0 : QCPGraph::selectTest(pos, onlySelectable, details);
}

void DenseGraph::draw(QCPPainter *painter)
{
    if (m_onCanvas && !isExport(*painter))
        return; // the canvas shows it
    QCPGraph::draw(painter);
}

void DenseGraph::render(QImage &image, const QPoint &origin)
{
    QCPAxis *key = keyAxis();
    QCPAxis *value = valueAxis();
    if (!realVisibility() || !key || !value || key->orientation() != Qt::Horizontal || key->range().size() <= 0
        || data()->isEmpty() || lineStyle() != lsLine)
        return;
    const double ratio = image.devicePixelRatio();
    if (antialiasedNow()) {
        // Antialiased: QCustomPlot's own drawing (with this class' drawLinePlot), into the image.
        QCPPainter painter(&image);
        painter.translate(-QPointF(origin));
        applyDefaultAntialiasingHint(&painter);
        QCPGraph::draw(&painter);
        return;
    }
    // Without antialiasing: one pixel wide (as QCustomPlot draws while the view is dragged), a span per
    // pixel column, then the marks.
    const AxisMap toX(*key);
    const AxisMap toY(*value);
    const QSharedPointer<QCPGraphDataContainer> container = data(); // once: each data() call is two atomics
    QVector<QPointF> points(container->size());
    QPointF *out = points.data();
    for (auto it = container->constBegin(), end = container->constEnd(); it != end; ++it, ++out)
        *out = QPointF((toX(it->key) - origin.x()) * ratio, (toY(it->value) - origin.y()) * ratio);
    CurvePen line{pen().color(), std::max(1, int(std::lround(ratio))), {}};
    for (const qreal dash : pen().dashPattern()) // in pen widths
        line.dashes.append(dash * std::max(1.0, pen().widthF()) * ratio);
    rasterizeCurve(image, points, line);
    if (!scatterStyle().isNone()) {
        QVector<QPointF> marks;
        getScatters(&marks, QCPDataRange(0, dataCount()));
        QCPPainter painter(&image);
        painter.translate(-QPointF(origin));
        drawScatterPlot(&painter, marks, scatterStyle());
    }
}

void DenseGraph::drawLinePlot(QCPPainter *painter, const QVector<QPointF> &lines) const
{
    QPen pen = painter->pen();
    if (pen.style() != Qt::SolidLine || isExport(*painter)) {
        QCPGraph::drawLinePlot(painter, lines);
        return;
    }
    if (pen.color().alpha() == 0 || lines.size() < 2)
        return;
    applyDefaultAntialiasingHint(painter);
    // A cosmetic (1 px) pen is the raster engine's fast path: QCustomPlot uses it for 1 px lines, and this
    // graph for every line drawn without antialiasing, i.e. the draft while a drag pans or the wheel zooms.
    if (qFuzzyCompare(pen.widthF(), 1.0) || !painter->antialiasing()) {
        pen.setWidth(0);
        painter->setPen(pen);
    }
    // One segment per pair of finite neighbours: a NaN point (a gap in the data) ends a run of segments, as
    // in QCustomPlot's drawPolyline. Without antialiasing in whole pixels, as QCPPainter::drawLine draws.
    const auto drawSegments = [&](auto &segments, auto toSegment) {
        const auto finite = [](const QPointF &p) { return std::isfinite(p.x()) && std::isfinite(p.y()); };
        segments.clear();
        segments.reserve(lines.size());
        for (qsizetype i = 1; i < lines.size(); ++i) {
            if (finite(lines[i - 1]) && finite(lines[i]))
                segments.append(toSegment(QLineF(lines[i - 1], lines[i])));
        }
        painter->drawLines(segments);
    };
    if (painter->antialiasing())
        drawSegments(m_segments, [](const QLineF &line) { return line; });
    else
        drawSegments(m_pixelSegments, [](const QLineF &line) { return line.toLine(); });
}

} // namespace ui
