// AutogradGraphView, offscreen: graphviz lays out every node at its own place in layers, edges point
// down, clicking a node selects it.

#include "widgetsamples.h"

#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/graphlayout.h"

#include <QSet>
#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

TEST(AutogradGraphView, GraphvizLaysOutEveryNodeApartAndInLayers)
{
    ui::AutogradGraphView view;
    view.resize(900, 700);
    const ui::AutogradGraphData data = uitest::kvCacheGraph();
    view.setData(data);
    EXPECT_TRUE(view.laidOutByGraphviz());
    EXPECT_EQ(view.edgeCount(), data.edges.size());

    QSet<QPair<int, int>> positions;
    QVector<QRectF> rects;
    for (const ui::AutogradNode &node : data.nodes) {
        const QRectF r = view.nodeRect(node.id);
        ASSERT_FALSE(r.isEmpty()) << node.id;
        positions.insert({qRound(r.center().x()), qRound(r.center().y())});
        rects.append(r);
    }
    EXPECT_EQ(positions.size(), data.nodes.size()) << "distinct positions";
    for (int i = 0; i < rects.size(); ++i)
        for (int j = i + 1; j < rects.size(); ++j)
            EXPECT_FALSE(rects[i].intersects(rects[j])) << "nodes " << i << " and " << j << " overlap";
    // Edges point down: every node sits below the nodes that feed it (a DAG, so dot keeps them ranked).
    for (const ui::AutogradEdge &edge : data.edges)
        EXPECT_LT(view.nodeRect(edge.from).center().y(), view.nodeRect(edge.to).center().y()) << edge.from << " -> " << edge.to;
    // Saved tensor rows make a node taller.
    EXPECT_GT(view.nodeRect(uitest::kKvCacheFailingNode).height(), view.nodeRect(0).height());
}

TEST(AutogradGraphView, ClickingANodeSelectsIt)
{
    ui::AutogradGraphView view;
    view.resize(1000, 900);
    view.setData(uitest::kvCacheGraph());
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    QSignalSpy selected(&view, &ui::AutogradGraphView::nodeSelected);

    view.centerOnNode(uitest::kKvCacheFailingNode);
    const QPoint at = view.mapFromScene(view.nodeRect(uitest::kKvCacheFailingNode).center());
    ASSERT_TRUE(view.viewport()->rect().contains(at));
    QTest::mouseClick(view.viewport(), Qt::LeftButton, {}, at);
    ASSERT_EQ(selected.count(), 1);
    EXPECT_EQ(selected[0][0].toInt(), uitest::kKvCacheFailingNode);
    EXPECT_EQ(view.selectedNode(), uitest::kKvCacheFailingNode);

    // Empty space: no selection signal.
    const QPoint corner = view.mapFromScene(view.sceneRect().topLeft() + QPointF(2, 2));
    QTest::mouseClick(view.viewport(), Qt::LeftButton, {}, corner);
    EXPECT_EQ(selected.count(), 1);
}

TEST(AutogradGraphView, UnknownEdgesAndEmptyGraphsAreHarmless)
{
    ui::AutogradGraphView view;
    ui::AutogradNode sum;
    sum.id = 5;
    sum.name = QStringLiteral("SumBackward0");
    view.setData({.nodes = {sum}, .edges = {{5, 99}, {99, 5}}});
    EXPECT_EQ(view.edgeCount(), 0);
    EXPECT_FALSE(view.nodeRect(5).isEmpty());
    view.setData({});
    EXPECT_TRUE(view.nodeRect(5).isEmpty());
}

TEST(GraphLayout, FallbackLayeringRanksByLongestPath)
{
    ui::GraphLayoutInput input;
    input.nodeSizes = {{100, 30}, {100, 30}, {100, 30}, {100, 30}};
    input.edges = {{0, 1}, {1, 2}, {0, 2}, {0, 3}};
    const ui::GraphLayout layout = ui::layoutLayeredGraphSimple(input);
    EXPECT_FALSE(layout.graphviz);
    EXPECT_LT(layout.centers[0].y(), layout.centers[1].y());
    EXPECT_LT(layout.centers[1].y(), layout.centers[2].y()) << "2 is below 1, not beside it";
    EXPECT_DOUBLE_EQ(layout.centers[1].y(), layout.centers[3].y());
    EXPECT_NE(layout.centers[1].x(), layout.centers[3].x());
}
