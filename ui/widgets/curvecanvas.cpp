#include "ui/widgets/curvecanvas.h"

#include "ui/widgets/densegraph.h"

#include <cmath>

namespace ui {

CurveCanvas::CurveCanvas(QCPAxisRect *rect) : QCPLayerable(rect->parentPlot()), m_rect(rect) {}

void CurveCanvas::addGraph(DenseGraph *graph)
{
    graph->setOnCanvas(true);
    m_graphs.append(graph);
}

QRect CurveCanvas::clipRect() const
{
    return m_rect ? m_rect->rect() : QRect();
}

void CurveCanvas::render()
{
    const QRect area = m_rect ? m_rect->rect() : QRect();
    const double ratio = parentPlot()->bufferDevicePixelRatio();
    const QSize pixels(int(std::lround(area.width() * ratio)), int(std::lround(area.height() * ratio)));
    if (m_image.size() != pixels || m_image.devicePixelRatio() != ratio) {
        m_image = QImage(pixels, QImage::Format_ARGB32_Premultiplied);
        m_image.setDevicePixelRatio(ratio);
    }
    m_image.fill(Qt::transparent);
    m_renderedRect = area;
    if (area.isEmpty())
        return;
    for (const QPointer<DenseGraph> &graph : m_graphs) {
        if (graph)
            graph->render(m_image, area.topLeft());
    }
}

void CurveCanvas::draw(QCPPainter *painter)
{
    if (DenseGraph::isExport(*painter))
        return; // the graphs draw themselves
    if (!m_rect)
        return;
    if (m_renderedRect != m_rect->rect() || m_image.devicePixelRatio() != parentPlot()->bufferDevicePixelRatio())
        render(); // drawn without a layout first (nothing in MetricPlots does that; kept correct anyway)
    painter->drawImage(QPointF(m_renderedRect.topLeft()), m_image);
}

} // namespace ui
