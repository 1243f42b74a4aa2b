#include "ui/widgets/densegraph.h"

#include <cmath>

namespace ui {

void DenseGraph::drawLinePlot(QCPPainter *painter, const QVector<QPointF> &lines) const
{
    QPen pen = painter->pen();
    if (pen.style() != Qt::SolidLine || painter->modes().testFlag(QCPPainter::pmVectorized)
        || painter->modes().testFlag(QCPPainter::pmNoCaching)) {
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
