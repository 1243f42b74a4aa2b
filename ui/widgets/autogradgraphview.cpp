#include "ui/widgets/autogradgraphview.h"

#include "ui/widgets/graphlayout.h"
#include "ui/widgets/widgetstyle.h"

#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsPolygonItem>
#include <QGraphicsScene>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QStyleOptionGraphicsItem>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace ui {

namespace {

constexpr double kPadX = 10;
constexpr double kRadius = 6;
constexpr double kMinNodeWidth = 120;

/// Header colour of a node by what its forward op did (Netron colours layers by category).
QColor categoryColor(const QString &name, bool dark)
{
    const auto pick = [dark](QColor light, QColor darkVariant) { return dark ? darkVariant : light; };
    if (name.startsWith(QLatin1String("AccumulateGrad")))
        return pick(QColor(0x4f, 0x7a, 0x3a), QColor(0x6a, 0x99, 0x4e));
    static const char *const matmul[] = {"Mm", "Bmm", "Addmm", "Matmul", "Linear", "Baddbmm", "Conv", "Embedding"};
    for (const char *m : matmul)
        if (name.startsWith(QLatin1String(m)))
            return pick(QColor(0x33, 0x5c, 0x8a), QColor(0x4a, 0x78, 0xb0));
    static const char *const activation[] = {"Softmax", "Gelu", "Silu", "Relu", "Tanh", "Sigmoid", "Exp", "Log", "Rsqrt", "Pow", "NativeLayerNorm", "Norm"};
    for (const char *a : activation)
        if (name.startsWith(QLatin1String(a)))
            return pick(QColor(0x8a, 0x4b, 0x2e), QColor(0xb0, 0x67, 0x45));
    static const char *const shape[] = {"View", "Reshape", "Unsafe", "Transpose", "Permute", "Expand", "Unsqueeze", "Squeeze",
                                        "Cat", "Select", "Slice", "Copy", "Clone", "T", "Split", "Index"};
    for (const char *s : shape)
        if (name.startsWith(QLatin1String(s)))
            return pick(QColor(0x5e, 0x60, 0x66), QColor(0x76, 0x78, 0x80));
    return pick(QColor(0x2a, 0x7a, 0x73), QColor(0x3c, 0x9c, 0x93));
}

} // namespace

/// One node: a rounded box with a coloured header (name, detail) and a row per saved tensor.
class AutogradNodeItem : public QGraphicsItem {
public:
    enum { Type = UserType + 1 };

    AutogradNodeItem(const AutogradNode &node, const QFont &font) : m_node(node), m_font(font)
    {
        const QFontMetricsF fm(m_font);
        QFont bold = m_font;
        bold.setBold(true);
        const QFontMetricsF bfm(bold);
        m_line = fm.height();
        double width = bfm.horizontalAdvance(node.name);
        if (!node.detail.isEmpty())
            width = std::max(width, fm.horizontalAdvance(node.detail));
        for (const AutogradSavedTensor &s : node.saved)
            width = std::max(width, fm.horizontalAdvance(rowText(s)));
        m_headerHeight = m_line + 8 + (node.detail.isEmpty() ? 0 : m_line);
        const double height = m_headerHeight + (node.saved.isEmpty() ? 0 : 4 + node.saved.size() * (m_line + 4) + 2);
        m_size = QSizeF(std::max(kMinNodeWidth, std::ceil(width + 2 * kPadX)), std::ceil(height));
        setFlag(ItemIsSelectable, false);
        setAcceptHoverEvents(true);
        setCursor(Qt::PointingHandCursor);
        setToolTip(toolTip());
    }

    int type() const override { return Type; }
    int id() const { return m_node.id; }
    QSizeF size() const { return m_size; }
    void setSelectedNode(bool selected)
    {
        m_selected = selected;
        update();
    }
    QRectF boundingRect() const override { return QRectF(-m_size.width() / 2 - 3, -m_size.height() / 2 - 3, m_size.width() + 6, m_size.height() + 6); }

    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override
    {
        const QPalette pal = widget ? widget->palette() : QPalette();
        const bool dark = isDark(pal.color(QPalette::Window));
        const QColor alarm = alarmColor(pal.color(QPalette::Window));
        const QRectF box(-m_size.width() / 2, -m_size.height() / 2, m_size.width(), m_size.height());
        painter->setRenderHint(QPainter::Antialiasing, true);

        QPainterPath outline;
        outline.addRoundedRect(box, kRadius, kRadius);
        painter->fillPath(outline, pal.color(QPalette::Base));
        // Header band.
        const QColor header = m_node.failing ? alarm : categoryColor(m_node.name, dark);
        painter->save();
        painter->setClipPath(outline);
        painter->fillRect(QRectF(box.left(), box.top(), box.width(), m_headerHeight), header);
        painter->restore();

        QFont bold = m_font;
        bold.setBold(true);
        painter->setFont(bold);
        painter->setPen(textColorOn(header));
        painter->drawText(QRectF(box.left() + kPadX, box.top() + 4, box.width() - 2 * kPadX, m_line), Qt::AlignLeft | Qt::AlignVCenter, m_node.name);
        painter->setFont(m_font);
        if (!m_node.detail.isEmpty()) {
            QColor sub = textColorOn(header);
            sub.setAlphaF(0.8);
            painter->setPen(sub);
            painter->drawText(QRectF(box.left() + kPadX, box.top() + 4 + m_line, box.width() - 2 * kPadX, m_line), Qt::AlignLeft | Qt::AlignVCenter, m_node.detail);
        }
        double y = box.top() + m_headerHeight + 4;
        for (const AutogradSavedTensor &s : m_node.saved) {
            const QRectF row(box.left() + 3, y - 1, box.width() - 6, m_line + 2);
            if (s.conflict) {
                QColor tint = alarm;
                tint.setAlpha(45);
                painter->setPen(QPen(alarm, 1.2));
                painter->setBrush(tint);
                painter->drawRoundedRect(row, 3, 3);
            }
            painter->setPen(s.conflict ? alarm : pal.color(QPalette::Text));
            painter->drawText(QRectF(box.left() + kPadX, y, box.width() - 2 * kPadX, m_line), Qt::AlignLeft | Qt::AlignVCenter, rowText(s));
            y += m_line + 4;
        }
        // Outline: red and thick for the failing node, the highlight colour when selected.
        painter->setBrush(Qt::NoBrush);
        QColor border = m_node.failing ? alarm : pal.color(QPalette::Mid);
        double width = m_node.failing ? 2.5 : 1.0;
        if (m_selected) {
            border = pal.color(QPalette::Highlight);
            width = 3.0;
        }
        painter->setPen(QPen(border, width));
        painter->drawRoundedRect(box, kRadius, kRadius);
        if (m_selected && m_node.failing) {
            painter->setPen(QPen(alarm, 1.5));
            painter->drawRoundedRect(box.adjusted(-3, -3, 3, 3), kRadius + 2, kRadius + 2);
        }
        Q_UNUSED(option);
    }

private:
    static QString rowText(const AutogradSavedTensor &s)
    {
        const QString prefix = s.conflict ? QStringLiteral("\u26a0 ") : QString();
        return prefix + (s.name.isEmpty() ? s.description : s.name + QStringLiteral(": ") + s.description);
    }
    QString toolTip() const
    {
        QStringList lines{m_node.name};
        if (!m_node.detail.isEmpty())
            lines << m_node.detail;
        if (m_node.opIndex >= 0)
            lines << QObject::tr("created by forward op %1").arg(m_node.opIndex);
        for (const AutogradSavedTensor &s : m_node.saved)
            lines << QObject::tr("saved %1").arg(rowText(s));
        if (m_node.failing)
            lines << QObject::tr("Backward failed here.");
        return lines.join(QLatin1Char('\n'));
    }

    AutogradNode m_node;
    QFont m_font;
    QSizeF m_size;
    double m_line = 0;
    double m_headerHeight = 0;
    bool m_selected = false;
};

AutogradGraphView::AutogradGraphView(QWidget *parent) : QGraphicsView(parent)
{
    setScene(new QGraphicsScene(this));
    setRenderHint(QPainter::Antialiasing, true);
    setRenderHint(QPainter::TextAntialiasing, true);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setBackgroundBrush(palette().color(QPalette::Base));
}

AutogradGraphView::~AutogradGraphView() = default;

void AutogradGraphView::setData(const AutogradGraphData &data)
{
    m_data = data;
    m_selected = -1;
    rebuild();
    fitGraph();
}

void AutogradGraphView::rebuild()
{
    scene()->clear();
    m_items.clear();
    m_edgeCount = 0;
    setBackgroundBrush(palette().color(QPalette::Base));

    GraphLayoutInput input;
    QHash<int, int> indexOf;
    QVector<AutogradNodeItem *> items;
    for (const AutogradNode &node : m_data.nodes) {
        if (indexOf.contains(node.id))
            continue; // ids are unique; a duplicate is ignored rather than drawn twice
        auto *item = new AutogradNodeItem(node, font());
        indexOf.insert(node.id, int(items.size()));
        items.append(item);
        input.nodeSizes.append(item->size());
        m_items.insert(node.id, item);
    }
    for (const AutogradEdge &edge : m_data.edges)
        if (indexOf.contains(edge.from) && indexOf.contains(edge.to))
            input.edges.append({indexOf.value(edge.from), indexOf.value(edge.to)});

    const GraphLayout layout = layoutLayeredGraph(input);
    m_graphviz = layout.graphviz;

    QColor edgeColor = palette().color(QPalette::Text);
    edgeColor.setAlphaF(0.55);
    for (const GraphLayoutEdge &edge : layout.edges) {
        if (edge.path.isEmpty())
            continue;
        auto *path = scene()->addPath(edge.path, QPen(edgeColor, 1.3));
        path->setZValue(0);
        // Arrowhead at the edge's end, pointing into the next node.
        const QLineF a = edge.arrow;
        if (a.length() > 0) {
            const QPointF tip = a.p2();
            const QPointF dir = (tip - a.p1()) / a.length();
            const QPointF base = tip - dir * 9.0;
            const QPointF normal(-dir.y(), dir.x());
            if (QLineF(edge.path.currentPosition(), base).length() > 0.5) {
                QPainterPath stem(edge.path.currentPosition());
                stem.lineTo(base);
                scene()->addPath(stem, QPen(edgeColor, 1.3))->setZValue(0);
            }
            auto *head = scene()->addPolygon(QPolygonF({tip, base + normal * 4.5, base - normal * 4.5}), QPen(edgeColor, 1), edgeColor);
            head->setZValue(0);
        }
        ++m_edgeCount;
    }
    for (int i = 0; i < items.size(); ++i) {
        items[i]->setPos(layout.centers[i]);
        items[i]->setZValue(1);
        scene()->addItem(items[i]);
    }
    scene()->setSceneRect(scene()->itemsBoundingRect().adjusted(-24, -24, 24, 24));
    if (m_selected >= 0 && m_items.contains(m_selected))
        m_items.value(m_selected)->setSelectedNode(true);
}

void AutogradGraphView::fitGraph()
{
    m_autoFit = true;
    resetTransform();
    const QRectF r = scene()->sceneRect();
    if (r.isEmpty())
        return;
    const QRectF view = viewport()->rect();
    const double s = std::min({1.0, view.width() / r.width(), view.height() / r.height()});
    scale(s, s);
    centerOn(r.center());
    // A graph taller than the view at 1:1 starts at its top (the loss), where one reads from.
    if (s >= 1.0 || r.height() * s > view.height())
        verticalScrollBar()->setValue(verticalScrollBar()->minimum());
}

void AutogradGraphView::setSelectedNode(int id)
{
    if (AutogradNodeItem *old = m_items.value(m_selected))
        old->setSelectedNode(false);
    m_selected = m_items.contains(id) ? id : -1;
    if (AutogradNodeItem *item = m_items.value(m_selected))
        item->setSelectedNode(true);
}

void AutogradGraphView::centerOnNode(int id)
{
    if (AutogradNodeItem *item = m_items.value(id))
        centerOn(item);
}

QRectF AutogradGraphView::nodeRect(int id) const
{
    AutogradNodeItem *item = m_items.value(id);
    if (!item)
        return {};
    const QSizeF s = item->size();
    return QRectF(item->pos() - QPointF(s.width() / 2, s.height() / 2), s);
}

void AutogradGraphView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::LeftButton) {
        for (QGraphicsItem *item : items(event->position().toPoint()))
            if (auto *node = qgraphicsitem_cast<AutogradNodeItem *>(item)) {
                setSelectedNode(node->id());
                Q_EMIT nodeSelected(node->id());
                event->accept();
                return;
            }
    }
    QGraphicsView::mousePressEvent(event);
}

void AutogradGraphView::wheelEvent(QWheelEvent *event)
{
    if (event->modifiers() & Qt::ControlModifier) {
        const double factor = std::pow(1.0015, event->angleDelta().y());
        const double current = transform().m11();
        const double next = std::clamp(current * factor, 0.05, 4.0);
        scale(next / current, next / current);
        m_autoFit = false;
        event->accept();
        return;
    }
    QGraphicsView::wheelEvent(event);
}

void AutogradGraphView::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Home) {
        fitGraph();
        event->accept();
        return;
    }
    QGraphicsView::keyPressEvent(event);
}

void AutogradGraphView::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    if (m_autoFit)
        fitGraph();
}

void AutogradGraphView::changeEvent(QEvent *event)
{
    QGraphicsView::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange)
        rebuild();
}

} // namespace ui
