#pragma once
// The Inspect page's autograd graph, drawn like Netron: the backward graph (nodes = autograd nodes
// such as "BmmBackward0", edges = their next_edges, pointing down from the loss towards the leaves)
// laid out by graphviz's dot in clean layers, each node a rounded box with its saved tensors as rows.
// The failing node and its saved tensor are drawn in red. Clicking a node selects it and emits
// nodeSelected; Ctrl+wheel zooms, dragging pans, Home fits the graph.
//
// How to use:
//   ui::AutogradGraphData data;
//   ui::AutogradNode bmm;
//   bmm.id = 1; bmm.name = "BmmBackward0"; bmm.failing = true;
//   bmm.saved = {{"mat2", "[32, 64, 128] float16 saved v0, now v1", true}};
//   data.nodes = {sum, bmm};
//   data.edges = {{0, 1}};                                   // SumBackward0 -> BmmBackward0
//   view->setData(data);
//   connect(view, &ui::AutogradGraphView::nodeSelected, page, &Page::showNode);

#include <QGraphicsView>
#include <QHash>
#include <QList>
#include <QString>

namespace ui {

/// A tensor a node saved for its backward.
struct AutogradSavedTensor {
    QString name;        ///< "self", "mat2", "result"
    QString description; ///< "[32, 64, 128] float16 v0 (now v1)"
    bool conflict = false; ///< the saved tensor whose version changed: drawn in red
};

/// One autograd node.
struct AutogradNode {
    int id = 0;       ///< caller's id, echoed by nodeSelected (unique)
    QString name;     ///< "BmmBackward0", "AccumulateGrad"
    QString detail;   ///< second line: forward op and module ("aten::bmm · layers.0.self_attn"), optional
    bool failing = false; ///< the node whose backward raised: drawn in red
    QList<AutogradSavedTensor> saved;
    int opIndex = -1; ///< forward op that created it (for the page's click-through), -1 = none
};

/// An edge from a node to one of its next_edges.
struct AutogradEdge {
    int from = 0; ///< node id
    int to = 0;   ///< node id
};

/// What the view shows.
struct AutogradGraphData {
    QList<AutogradNode> nodes;
    QList<AutogradEdge> edges;
};

class AutogradNodeItem;

/// The autograd graph view (see the top of this file).
class AutogradGraphView : public QGraphicsView {
    Q_OBJECT

public:
    explicit AutogradGraphView(QWidget *parent = nullptr);
    ~AutogradGraphView() override;

    /// Replaces the graph, lays it out and fits it into view. Edges naming unknown ids are skipped.
    void setData(const AutogradGraphData &data);
    const AutogradGraphData &data() const { return m_data; }

    /// Selects node `id` (no signal); -1 = none.
    void setSelectedNode(int id);
    int selectedNode() const { return m_selected; }
    /// Scrolls so that node `id` is in the middle.
    void centerOnNode(int id);
    /// Fits the whole graph (never magnifying past 1:1); it keeps fitting on resizes until the user zooms.
    void fitGraph();

    /// Scene rectangle of node `id` (empty when unknown).
    QRectF nodeRect(int id) const;
    /// Whether the last layout came from graphviz (false: the fallback layering).
    bool laidOutByGraphviz() const { return m_graphviz; }
    /// Number of edges drawn.
    int edgeCount() const { return m_edgeCount; }

Q_SIGNALS:
    /// The user clicked node `id`.
    void nodeSelected(int id);

protected:
    void mousePressEvent(QMouseEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void changeEvent(QEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void rebuild();

    AutogradGraphData m_data;
    QHash<int, AutogradNodeItem *> m_items;
    int m_selected = -1;
    bool m_graphviz = false;
    int m_edgeCount = 0;
    bool m_autoFit = true; ///< refit on resize (until the user zooms)
};

} // namespace ui
