#pragma once
// A QCPGraph for curves of thousands of points per plot width. On screen it is drawn by its plot's
// CurveCanvas (ui/widgets/curvecanvas.h): render() draws it into the canvas' image, off the UI thread,
// and its own draw() then leaves the screen to the canvas. Without antialiasing (the raw lines, and
// every line while the view moves) its line is rasterizeCurve's column spans; antialiased, QPainter's
// segments in one drawLines call (QCustomPlot draws one drawLine per segment, its phFastPolylines path;
// a single drawPolyline is far slower for wide antialiased pens). Dashed lines and exports (PDF, SVG,
// toPixmap) take QCustomPlot's own path. A DenseGraph on no canvas draws itself, as any QCPGraph.
//
//   auto *graph = new ui::DenseGraph(xAxis, yAxis); // registered with the axes' plot, as addGraph does
//   canvas->addGraph(graph);                          // drawn by the canvas from now on

#include "ui/widgets/qcustomplotinclude.h"

#include <QImage>
#include <QLine>
#include <QVector>

namespace ui {

class DenseGraph : public QCPGraph {
public:
    DenseGraph(QCPAxis *keyAxis, QCPAxis *valueAxis) : QCPGraph(keyAxis, valueAxis) {}

    /// On a canvas, draw() leaves the screen to it (exports still draw the graph itself).
    void setOnCanvas(bool on) { m_onCanvas = on; }
    bool onCanvas() const { return m_onCanvas; }

    /// Draws the line and its marks into `image` (Format_ARGB32_Premultiplied, its device pixel ratio the
    /// plot's), whose top-left pixel shows the widget point `origin`, with the antialiasing the plot's
    /// settings give it now. Reads this graph, its axes and its plot's settings only, so graphs of
    /// different axes render on different threads at once (while the UI thread waits for them).
    void render(QImage &image, const QPoint &origin);

    /// On a canvas, -1 (not here): QCustomPlot asks every graph under the mouse for each wheel step and
    /// press, to find who takes the event, and a curve of thousands of points answers slowly; a canvas'
    /// graphs take no mouse events (MetricPlots finds the point under the mouse itself).
    double selectTest(const QPointF &pos, bool onlySelectable, QVariant *details = nullptr) const override;

    /// Whether `painter` draws an export (PDF, SVG: vectorized; toPixmap: no caching), where graphs draw
    /// themselves with QCustomPlot's own path rather than through a canvas' image.
    static bool isExport(const QCPPainter &painter);

protected:
    void draw(QCPPainter *painter) override;
    void drawLinePlot(QCPPainter *painter, const QVector<QPointF> &lines) const override;

private:
    /// Whether the plot's settings draw this graph's line antialiased now, as
    /// QCPLayerable::applyAntialiasingHint decides for plottables.
    bool antialiasedNow() const;

    bool m_onCanvas = false;
    mutable QVector<QLineF> m_segments; ///< reused between draws
    mutable QVector<QLine> m_pixelSegments;
};

} // namespace ui
