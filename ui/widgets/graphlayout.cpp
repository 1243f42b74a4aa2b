#include "ui/widgets/graphlayout.h"

#include <algorithm>
#include <cstdio>
#include <string>

// graphviz last: its headers define macros (MIN, MAX, ROUND, ...).
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

namespace ui {

namespace {

/// graphviz 2.x takes `char *` for strings it never writes; keep the buffers alive for the call.
struct CString {
    std::string text;
    explicit CString(std::string s) : text(std::move(s)) {}
    char *get() { return text.data(); }
};

void setAttribute(void *object, const char *name, const std::string &value)
{
    CString n(name);
    CString v(value);
    CString empty("");
    agsafeset(object, n.get(), v.get(), empty.get());
}

std::string inches(double px)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4f", px / 72.0); // 1 px = 1 pt
    return buffer;
}

QPointF arrowBase(const QLineF &line, double length)
{
    if (line.length() <= 0)
        return line.p1();
    QLineF l = line;
    l.setLength(std::max(0.0, line.length() - length));
    return l.p2();
}

} // namespace

GraphLayout layoutLayeredGraph(const GraphLayoutInput &input)
{
    const int n = int(input.nodeSizes.size());
    if (n == 0)
        return {};
    GVC_t *gvc = gvContext();
    if (!gvc) {
        GraphLayout fallback = layoutLayeredGraphSimple(input);
        fallback.note = QStringLiteral("graphviz could not start");
        return fallback;
    }
    CString graphName("autograd");
    Agraph_t *g = agopen(graphName.get(), Agdirected, nullptr);
    setAttribute(g, "rankdir", "TB");
    setAttribute(g, "nodesep", inches(input.nodeGap));
    setAttribute(g, "ranksep", inches(input.rankGap));
    setAttribute(g, "splines", "spline");

    QVector<Agnode_t *> nodes(n);
    for (int i = 0; i < n; ++i) {
        CString name(std::string("n").append(std::to_string(i)));
        nodes[i] = agnode(g, name.get(), 1);
        setAttribute(nodes[i], "shape", "box");
        setAttribute(nodes[i], "fixedsize", "true");
        setAttribute(nodes[i], "label", "");
        setAttribute(nodes[i], "width", inches(input.nodeSizes[i].width()));
        setAttribute(nodes[i], "height", inches(input.nodeSizes[i].height()));
    }
    QVector<Agedge_t *> edges(input.edges.size(), nullptr);
    for (int e = 0; e < input.edges.size(); ++e) {
        const auto [from, to] = input.edges[e];
        if (from < 0 || from >= n || to < 0 || to >= n)
            continue;
        CString name(std::string("e").append(std::to_string(e))); // named: parallel edges stay separate
        edges[e] = agedge(g, nodes[from], nodes[to], name.get(), 1);
    }

    GraphLayout out;
    if (gvLayout(gvc, g, "dot") != 0) {
        agclose(g);
        gvFreeContext(gvc);
        out = layoutLayeredGraphSimple(input);
        out.note = QStringLiteral("graphviz's dot layout is not available");
        return out;
    }
    const boxf bb = GD_bb(g);
    const double top = bb.UR.y;
    const auto toQt = [&](pointf p) { return QPointF(p.x - bb.LL.x, top - p.y); };
    out.graphviz = true;
    out.centers.resize(n);
    for (int i = 0; i < n; ++i)
        out.centers[i] = toQt(ND_coord(nodes[i]));
    out.edges.resize(input.edges.size());
    for (int e = 0; e < input.edges.size(); ++e) {
        Agedge_t *edge = edges[e];
        if (!edge || !ED_spl(edge) || ED_spl(edge)->size == 0)
            continue;
        const bezier &bz = ED_spl(edge)->list[0];
        if (bz.size < 1)
            continue;
        QPainterPath path(toQt(bz.list[0]));
        for (int i = 1; i + 2 < bz.size; i += 3)
            path.cubicTo(toQt(bz.list[i]), toQt(bz.list[i + 1]), toQt(bz.list[i + 2]));
        QLineF arrow;
        if (bz.eflag)
            arrow = QLineF(toQt(bz.list[bz.size - 1]), toQt(bz.ep));
        else if (bz.size >= 2)
            arrow = QLineF(toQt(bz.list[bz.size - 2]), toQt(bz.list[bz.size - 1]));
        out.edges[e] = {path, arrow};
    }
    out.bounds = QRectF(0, 0, bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y);
    gvFreeLayout(gvc, g);
    agclose(g);
    gvFreeContext(gvc);
    return out;
}

GraphLayout layoutLayeredGraphSimple(const GraphLayoutInput &input)
{
    const int n = int(input.nodeSizes.size());
    GraphLayout out;
    out.centers.resize(n);
    out.edges.resize(input.edges.size());
    if (n == 0)
        return out;
    // Longest path from the sources (Bellman-Ford style relaxation, bounded by n passes so cycles
    // cannot loop forever).
    QVector<int> rank(n, 0);
    for (int pass = 0; pass < n; ++pass) {
        bool changed = false;
        for (const auto &[from, to] : input.edges)
            if (from >= 0 && from < n && to >= 0 && to < n && from != to && rank[to] < rank[from] + 1 && rank[from] + 1 < n) {
                rank[to] = rank[from] + 1;
                changed = true;
            }
        if (!changed)
            break;
    }
    const int ranks = *std::max_element(rank.begin(), rank.end()) + 1;
    QVector<QVector<int>> members(ranks);
    for (int i = 0; i < n; ++i)
        members[rank[i]].append(i);
    double widest = 0;
    QVector<double> rowWidth(ranks, 0), rowHeight(ranks, 0);
    for (int r = 0; r < ranks; ++r) {
        for (int i : members[r]) {
            rowWidth[r] += input.nodeSizes[i].width();
            rowHeight[r] = std::max(rowHeight[r], input.nodeSizes[i].height());
        }
        rowWidth[r] += input.nodeGap * std::max<qsizetype>(0, members[r].size() - 1);
        widest = std::max(widest, rowWidth[r]);
    }
    double y = 0;
    for (int r = 0; r < ranks; ++r) {
        double x = (widest - rowWidth[r]) / 2;
        for (int i : members[r]) {
            out.centers[i] = QPointF(x + input.nodeSizes[i].width() / 2, y + rowHeight[r] / 2);
            x += input.nodeSizes[i].width() + input.nodeGap;
        }
        y += rowHeight[r] + input.rankGap;
    }
    for (int e = 0; e < input.edges.size(); ++e) {
        const auto [from, to] = input.edges[e];
        if (from < 0 || from >= n || to < 0 || to >= n)
            continue;
        const QPointF a = out.centers[from] + QPointF(0, input.nodeSizes[from].height() / 2);
        const QPointF b = out.centers[to] - QPointF(0, input.nodeSizes[to].height() / 2);
        QPainterPath path(a);
        path.lineTo(arrowBase(QLineF(a, b), 8));
        out.edges[e] = {path, QLineF(arrowBase(QLineF(a, b), 8), b)};
    }
    out.bounds = QRectF(0, 0, widest, std::max(0.0, y - input.rankGap));
    return out;
}

} // namespace ui
