#pragma once
// Layered layout of a directed graph with graphviz's dot (the only file that includes graphviz's
// headers, whose macros would clash with Qt's). Falls back to a simple longest-path layering when the
// dot plugin cannot be loaded, and says so.
//
// How to use:
//   ui::GraphLayoutInput in{.nodeSizes = {{120, 40}, {120, 40}}, .edges = {{0, 1}}};
//   ui::GraphLayout out = ui::layoutLayeredGraph(in);   // out.centers[i], out.edges[j].path

#include <QLineF>
#include <QPainterPath>
#include <QPair>
#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QVector>

namespace ui {

/// Nodes (by index, with their size in pixels) and directed edges (from, to).
struct GraphLayoutInput {
    QVector<QSizeF> nodeSizes;
    QVector<QPair<int, int>> edges;
    double nodeGap = 28;  ///< horizontal gap between nodes of one rank (px)
    double rankGap = 44;  ///< vertical gap between ranks (px)
};

/// One routed edge: its curve and the arrowhead's direction (p1 → p2, p2 the tip).
struct GraphLayoutEdge {
    QPainterPath path;
    QLineF arrow;
};

/// Positions in pixels, y down, top-left of the drawing near (0, 0).
struct GraphLayout {
    QVector<QPointF> centers;       ///< per node
    QVector<GraphLayoutEdge> edges; ///< per input edge
    QRectF bounds;                  ///< of all nodes and edges
    bool graphviz = false;          ///< laid out by dot (false: the fallback layering)
    QString note;                   ///< why the fallback was used
};

/// Lays out the graph top to bottom (edges point down), sources on top.
GraphLayout layoutLayeredGraph(const GraphLayoutInput &input);
/// The fallback alone: longest-path ranks, nodes centred per rank, straight edges.
GraphLayout layoutLayeredGraphSimple(const GraphLayoutInput &input);

} // namespace ui
