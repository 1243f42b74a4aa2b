#pragma once
// A QCPGraph for curves of thousands of points per plot width. QCustomPlot draws a solid line one
// QPainter::drawLine call per segment (its phFastPolylines path; a single drawPolyline is far slower
// for antialiased wide pens); this graph hands the same segments to the painter in one drawLines
// call. Without antialiasing (the draft redraws while the view moves) every line is drawn 1 px wide,
// with a cosmetic pen. Dashed lines and vector export (PDF, SVG) keep QCustomPlot's own path.
//
//   auto *graph = new ui::DenseGraph(xAxis, yAxis); // registered with the axes' plot, as addGraph does

#include "ui/widgets/qcustomplotinclude.h"

#include <QLine>
#include <QVector>

namespace ui {

class DenseGraph : public QCPGraph {
public:
    DenseGraph(QCPAxis *keyAxis, QCPAxis *valueAxis) : QCPGraph(keyAxis, valueAxis) {}

protected:
    void drawLinePlot(QCPPainter *painter, const QVector<QPointF> &lines) const override;

private:
    mutable QVector<QLineF> m_segments; ///< reused between draws
    mutable QVector<QLine> m_pixelSegments;
};

} // namespace ui
