#pragma once
// One plot's curves as one image: the DenseGraphs of an axis rect, drawn in the order added into an
// image the size of the rect, which the canvas then shows in their place on its layer. render() only
// reads the graphs, their axes and the plot's settings, so the canvases of stacked plots render on
// several threads at once (MetricPlots does it right after each layout, when the axes' ranges and the
// rects' places are final); the UI thread then only copies the images. Exports (PDF, SVG, toPixmap)
// skip the canvas: each graph draws itself there, as vectors.
//
//   auto *canvas = new ui::CurveCanvas(rect); // on the plot's current layer: create it before the graphs
//   canvas->addGraph(graph);                  // each DenseGraph of the rect, bottom to top
//   canvas->render();                         // after the layout, on any thread

#include "ui/widgets/qcustomplotinclude.h"

#include <QImage>
#include <QList>
#include <QPointer>
#include <QRect>

namespace ui {

class DenseGraph;

class CurveCanvas : public QCPLayerable {
public:
    explicit CurveCanvas(QCPAxisRect *rect);

    /// Draws `graph` on this canvas from now on, above the ones added before.
    void addGraph(DenseGraph *graph);
    /// Draws every graph into the image, for the rect's place now and the plot's device pixel ratio.
    void render();
    /// What the last render() drew (for tests).
    const QImage &image() const { return m_image; }

protected:
    QRect clipRect() const override;
    void applyDefaultAntialiasingHint(QCPPainter *) const override {}
    void draw(QCPPainter *painter) override;

private:
    QPointer<QCPAxisRect> m_rect;
    QList<QPointer<DenseGraph>> m_graphs;
    QImage m_image;
    QRect m_renderedRect; ///< the rect's place when the image was drawn
};

} // namespace ui
