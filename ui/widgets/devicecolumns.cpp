#include "ui/widgets/devicecolumns.h"

#include "ui/widgets/widgetstyle.h"

#include <QApplication>
#include <QEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QPainterPath>
#include <QSet>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace ui {

namespace {

constexpr int kMargin = 8;       // around everything
constexpr int kColumnGap = 12;   // between columns
constexpr int kPadding = 8;      // inside a column
constexpr int kMinColumnWidth = 170;
constexpr int kBarHeight = 260;
constexpr int kBlockGap = 3;

/// Drawing order of the segments, bottom to top.
constexpr std::array<MemoryKind, kUsedMemoryKinds + 1> kAllKinds{
    MemoryKind::Weights, MemoryKind::Gradients, MemoryKind::Optimizer,
    MemoryKind::Activations, MemoryKind::Overhead, MemoryKind::Free};

QString percentOf(qint64 part, qint64 whole)
{
    if (whole <= 0)
        return {};
    return QStringLiteral("%1%").arg(100.0 * double(part) / double(whole), 0, 'f', 1);
}

// The container ("model.", "transformer.") that every dotted name starts with; "" when they differ.
// Only the first component: "layers.12" keeps the part that says what the number counts.
QString sharedContainerPrefix(const QStringList &names)
{
    QString prefix;
    for (const QString &name : names) {
        const qsizetype dot = name.indexOf(QLatin1Char('.'));
        if (dot < 0)
            continue;
        if (prefix.isEmpty())
            prefix = name.left(dot + 1);
        else if (!name.startsWith(prefix))
            return {};
    }
    return prefix;
}

// A numbered block keeps its end ("…layers.12": the number tells blocks apart); a name its start
// ("word_embe…": the start says what it is).
Qt::TextElideMode elisionOf(const QString &label)
{
    return !label.isEmpty() && label.back().isDigit() ? Qt::ElideLeft : Qt::ElideRight;
}

} // namespace

void labelBlocksWithoutSharedPrefix(DeviceColumnsData &data)
{
    QStringList names;
    for (const DeviceColumn &column : data.devices)
        for (const DeviceModuleBlock &block : column.modules)
            names << block.module;
    const QString prefix = sharedContainerPrefix(names);
    if (prefix.isEmpty())
        return;
    QStringList shortNames;
    for (const QString &name : names)
        shortNames << (name.startsWith(prefix) ? name.mid(prefix.size()) : name);
    if (QSet<QString>(shortNames.begin(), shortNames.end()).size() != names.size())
        return;
    for (DeviceColumn &column : data.devices)
        for (DeviceModuleBlock &block : column.modules)
            if (block.label.isEmpty() && block.module.startsWith(prefix))
                block.label = block.module.mid(prefix.size());
}

qint64 MemoryBreakdown::total() const
{
    qint64 sum = 0;
    for (qint64 v : values)
        sum += std::max<qint64>(v, 0);
    return sum;
}

qint64 DeviceColumn::overflow() const
{
    if (budget <= 0)
        return 0;
    return std::max<qint64>(used() - budget, 0);
}

DeviceColumnsWidget::DeviceColumnsWidget(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent, false);
    relayout();
}

void DeviceColumnsWidget::setData(const DeviceColumnsData &data)
{
    m_data = data;
    // A move in progress whose block went away is cancelled; its indices would be stale.
    if (m_pressColumn >= 0)
        cancelDrag();
    relayout();
    updateGeometry();
    update();
}

QColor DeviceColumnsWidget::kindColor(MemoryKind kind) const
{
    const bool dark = isDark(palette().color(QPalette::Window));
    switch (kind) {
    case MemoryKind::Weights: return dark ? QColor(0x6f, 0x9c, 0xd6) : QColor(0x3f, 0x6f, 0xb0);
    case MemoryKind::Gradients: return dark ? QColor(0xf5, 0xa2, 0x4b) : QColor(0xe8, 0x84, 0x1f);
    case MemoryKind::Optimizer: return dark ? QColor(0xc3, 0x96, 0xd9) : QColor(0x8e, 0x5c, 0xa8);
    case MemoryKind::Activations: return dark ? QColor(0x6c, 0xc7, 0xbd) : QColor(0x2a, 0x9d, 0x8f);
    case MemoryKind::Overhead: return dark ? QColor(0x9a, 0x9a, 0xa0) : QColor(0x8a, 0x8a, 0x90);
    case MemoryKind::Free: return palette().color(QPalette::Base);
    }
    return {};
}

QString DeviceColumnsWidget::kindName(MemoryKind kind)
{
    switch (kind) {
    case MemoryKind::Weights: return tr("weights");
    case MemoryKind::Gradients: return tr("gradients");
    case MemoryKind::Optimizer: return tr("optimizer");
    case MemoryKind::Activations: return tr("activations");
    case MemoryKind::Overhead: return tr("overhead");
    case MemoryKind::Free: return tr("free");
    }
    return {};
}

QString DeviceColumnsWidget::verdictText(const DeviceColumn &column)
{
    if (column.budget <= 0)
        return tr("fits (no limit)");
    if (const qint64 over = column.overflow(); over > 0)
        return tr("does not fit by %1").arg(formatBytes(over));
    return tr("fits (%1 free)").arg(formatBytes(column.budget - column.used()));
}

QRect DeviceColumnsWidget::columnRect(int index) const
{
    return index >= 0 && index < m_layout.size() ? m_layout[index].column : QRect();
}

QRect DeviceColumnsWidget::barRect(int index) const
{
    return index >= 0 && index < m_layout.size() ? m_layout[index].bar : QRect();
}

QRect DeviceColumnsWidget::segmentRect(int index, MemoryKind kind) const
{
    return index >= 0 && index < m_layout.size() ? m_layout[index].segments[std::size_t(kind)] : QRect();
}

QRect DeviceColumnsWidget::blockRect(int index, int block) const
{
    if (index < 0 || index >= m_layout.size() || block < 0 || block >= m_layout[index].blocks.size())
        return {};
    return m_layout[index].blocks[block];
}

bool DeviceColumnsWidget::overflowMarked(int index) const
{
    return index >= 0 && index < m_layout.size() && !m_layout[index].overflowMark.isEmpty();
}

int DeviceColumnsWidget::columnAt(const QPoint &pos) const
{
    for (int i = 0; i < m_layout.size(); ++i)
        if (m_layout[i].column.contains(pos))
            return i;
    return -1;
}

QSize DeviceColumnsWidget::minimumSizeHint() const
{
    const int n = std::max<int>(1, int(m_data.devices.size()));
    int maxBlocks = 0;
    for (const DeviceColumn &c : m_data.devices)
        maxBlocks = std::max<int>(maxBlocks, int(c.modules.size()));
    const QFontMetrics fm(font());
    const int line = fm.height();
    const int height = kMargin + (line + 8) + kMargin                       // legend
                     + kPadding + 2 * line + 6 + kBarHeight + 6 + line + 10 // title, bar, verdict
                     + line + 4 + maxBlocks * (m_listRowHeight + kBlockGap) + kPadding + kMargin;
    return {2 * kMargin + n * kMinColumnWidth + (n - 1) * kColumnGap, height};
}

QSize DeviceColumnsWidget::sizeHint() const
{
    const QSize min = minimumSizeHint();
    const int n = std::max<int>(1, int(m_data.devices.size()));
    return {std::max(min.width(), 2 * kMargin + n * 220 + (n - 1) * kColumnGap), min.height()};
}

void DeviceColumnsWidget::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    relayout();
}

void DeviceColumnsWidget::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
        relayout();
        updateGeometry();
    }
    if (event->type() == QEvent::PaletteChange)
        update();
}

void DeviceColumnsWidget::relayout()
{
    const QFontMetrics fm(font());
    const int line = fm.height();
    m_listRowHeight = line + 8;
    m_legend = QRect(kMargin, kMargin, std::max(0, width() - 2 * kMargin), line + 8);

    const int n = int(m_data.devices.size());
    m_layout.resize(n);
    if (n == 0)
        return;
    const int available = width() - 2 * kMargin - (n - 1) * kColumnGap;
    const int columnWidth = std::max(kMinColumnWidth, available / n);
    const int top = m_legend.bottom() + 1 + kMargin;
    const int bottom = std::max(height() - kMargin, minimumSizeHint().height() - kMargin);

    for (int i = 0; i < n; ++i) {
        const DeviceColumn &device = m_data.devices[i];
        ColumnLayout &l = m_layout[i];
        const int x = kMargin + i * (columnWidth + kColumnGap);
        l.column = QRect(x, top, columnWidth, bottom - top);
        const int innerX = x + kPadding;
        const int innerW = columnWidth - 2 * kPadding;
        l.title = QRect(innerX, top + kPadding, innerW, 2 * line + 2);
        l.bar = QRect(innerX, l.title.bottom() + 1 + 6, innerW, kBarHeight);
        l.verdict = QRect(innerX, l.bar.bottom() + 1 + 6, innerW, line + 4);
        l.list = QRect(innerX, l.verdict.bottom() + 1 + 6, innerW, l.column.bottom() - l.verdict.bottom() - 6 - kPadding);

        // Bar scale: the budget, or the used bytes when they exceed it (the overflow shows above the
        // budget line). Boundaries come from cumulative sums so that segments never leave gaps.
        const qint64 used = device.used();
        const qint64 budget = device.budget > 0 ? device.budget : 0;
        const qint64 scale = std::max<qint64>({budget, used, 1});
        const double pxPerByte = double(l.bar.height()) / double(scale);
        qint64 cumulative = 0;
        int previousY = l.bar.bottom() + 1;
        for (MemoryKind kind : kAllKinds) {
            qint64 bytes = 0;
            if (kind == MemoryKind::Free)
                bytes = budget > used ? budget - used : 0;
            else
                bytes = std::max<qint64>(device.bytes[kind], 0);
            QRect &segment = l.segments[std::size_t(kind)];
            if (bytes == 0) {
                segment = QRect();
                continue;
            }
            cumulative += bytes;
            const int y = l.bar.bottom() + 1 - int(std::lround(double(cumulative) * pxPerByte));
            segment = QRect(l.bar.left(), y, l.bar.width(), previousY - y);
            previousY = y;
        }
        l.budgetLineY = -1;
        l.overflowMark = QRect();
        if (budget > 0) {
            l.budgetLineY = l.bar.bottom() + 1 - int(std::lround(double(budget) * pxPerByte));
            if (used > budget)
                l.overflowMark = QRect(l.bar.left(), l.bar.top(), l.bar.width(), std::max(2, l.budgetLineY - l.bar.top()));
        }

        l.blocks.resize(device.modules.size());
        int y = l.list.top() + line + 4; // below the "Modules" caption
        for (int b = 0; b < device.modules.size(); ++b) {
            l.blocks[b] = QRect(innerX, y, innerW, m_listRowHeight);
            y += m_listRowHeight + kBlockGap;
        }
    }
}

DeviceColumnsWidget::Hit DeviceColumnsWidget::hitTest(const QPoint &pos) const
{
    Hit hit;
    hit.column = columnAt(pos);
    if (hit.column < 0)
        return hit;
    const ColumnLayout &l = m_layout[hit.column];
    for (int b = 0; b < l.blocks.size(); ++b)
        if (l.blocks[b].contains(pos)) {
            hit.block = b;
            return hit;
        }
    if (l.overflowMark.contains(pos) && pos.y() < l.budgetLineY) {
        hit.overflow = true;
        return hit;
    }
    for (std::size_t s = 0; s < l.segments.size(); ++s)
        if (l.segments[s].contains(pos)) {
            hit.segment = int(s);
            return hit;
        }
    return hit;
}

QString DeviceColumnsWidget::toolTipFor(const Hit &hit) const
{
    if (hit.column < 0)
        return {};
    const DeviceColumn &device = m_data.devices[hit.column];
    const QString name = device.subtitle.isEmpty() ? device.title : device.title + QStringLiteral(" (") + device.subtitle + QLatin1Char(')');
    if (hit.block >= 0) {
        const DeviceModuleBlock &block = device.modules[hit.block];
        QStringList lines{block.label.isEmpty() ? block.module : block.label};
        if (!block.label.isEmpty() && !block.label.contains(QStringLiteral("..")) && block.label != block.module)
            lines << block.module; // the full name, as the device map and the module tree write it
        lines << QStringLiteral("%1 (%2)").arg(formatBytes(block.bytes), formatExactBytes(block.bytes));
        if (!block.detail.isEmpty())
            lines << block.detail;
        lines << tr("Drag onto another device to move it there.");
        return lines.join(QLatin1Char('\n'));
    }
    if (hit.overflow)
        return tr("%1: over budget by %2 (%3)").arg(name, formatBytes(device.overflow()), formatExactBytes(device.overflow()));
    if (hit.segment >= 0) {
        const auto kind = MemoryKind(hit.segment);
        const qint64 bytes = kind == MemoryKind::Free ? device.budget - device.used() : device.bytes[kind];
        QString text = tr("%1: %2\n%3 (%4)").arg(name, kindName(kind), formatBytes(bytes), formatExactBytes(bytes));
        if (device.budget > 0)
            text += tr("\n%1 of the budget").arg(percentOf(bytes, device.budget));
        return text;
    }
    QString text = tr("%1\nused %2 (%3)").arg(name, formatBytes(device.used()), formatExactBytes(device.used()));
    if (device.budget > 0)
        text += tr("\nbudget %1 (%2)").arg(formatBytes(device.budget), formatExactBytes(device.budget));
    else
        text += tr("\nno budget limit");
    return text;
}

bool DeviceColumnsWidget::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QString text = m_dragging ? QString() : toolTipFor(hitTest(help->pos()));
        if (text.isEmpty()) {
            QToolTip::hideText();
            event->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    return QWidget::event(event);
}

void DeviceColumnsWidget::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton) {
        QWidget::mousePressEvent(event);
        return;
    }
    const Hit hit = hitTest(event->position().toPoint());
    if (hit.block >= 0) {
        m_pressColumn = hit.column;
        m_pressBlock = hit.block;
        m_pressPos = event->position().toPoint();
        m_dragPos = m_pressPos;
        event->accept();
        return;
    }
    QWidget::mousePressEvent(event);
}

void DeviceColumnsWidget::mouseMoveEvent(QMouseEvent *event)
{
    const QPoint pos = event->position().toPoint();
    if (m_pressColumn < 0) {
        // Hover: an open hand over blocks says they can be dragged.
        const Hit hit = hitTest(pos);
        if (hit.block >= 0)
            setCursor(Qt::OpenHandCursor);
        else
            unsetCursor();
        return;
    }
    if (!m_dragging && (pos - m_pressPos).manhattanLength() >= QApplication::startDragDistance()) {
        m_dragging = true;
        setCursor(Qt::ClosedHandCursor);
    }
    if (m_dragging) {
        m_dragPos = pos;
        const int column = columnAt(pos);
        m_dropColumn = column == m_pressColumn ? -1 : column;
        update();
    }
}

void DeviceColumnsWidget::mouseReleaseEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton || m_pressColumn < 0) {
        QWidget::mouseReleaseEvent(event);
        return;
    }
    const QPoint pos = event->position().toPoint();
    const bool dragged = m_dragging;
    const int from = m_pressColumn;
    const int block = m_pressBlock;
    cancelDrag();
    if (!dragged)
        return;
    const int to = columnAt(pos);
    if (to < 0 || to == from || from >= m_data.devices.size() || block >= m_data.devices[from].modules.size())
        return;
    Q_EMIT moduleMoveRequested(m_data.devices[from].modules[block].module, m_data.devices[to].id);
}

void DeviceColumnsWidget::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Escape && m_pressColumn >= 0) {
        cancelDrag();
        event->accept();
        return;
    }
    QWidget::keyPressEvent(event);
}

void DeviceColumnsWidget::cancelDrag()
{
    m_pressColumn = -1;
    m_pressBlock = -1;
    m_dragging = false;
    m_dropColumn = -1;
    unsetCursor();
    update();
}

void DeviceColumnsWidget::paintEvent(QPaintEvent *event)
{
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing, true);
    paintLegend(painter);
    for (int i = 0; i < m_layout.size(); ++i)
        if (m_layout[i].column.intersects(event->rect()))
            paintColumn(painter, i, event->rect());
    if (m_data.devices.isEmpty()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(rect().adjusted(0, m_legend.bottom(), 0, 0), Qt::AlignCenter, tr("No devices to show."));
    }
    if (m_dragging)
        paintDragGhost(painter);
}

void DeviceColumnsWidget::paintLegend(QPainter &painter)
{
    const QFontMetrics fm(font());
    const int swatch = fm.height() - 4;
    int x = m_legend.left();
    const int y = m_legend.top() + (m_legend.height() - swatch) / 2;
    const QColor text = palette().color(QPalette::WindowText);
    const QColor border = palette().color(QPalette::Mid);
    for (MemoryKind kind : kAllKinds) {
        const QRect box(x, y, swatch, swatch);
        painter.setPen(QPen(border, 1));
        painter.setBrush(kindColor(kind));
        painter.drawRoundedRect(QRectF(box).adjusted(0.5, 0.5, -0.5, -0.5), 2, 2);
        x += swatch + 4;
        const QString name = kindName(kind);
        painter.setPen(text);
        painter.drawText(QRect(x, m_legend.top(), fm.horizontalAdvance(name) + 2, m_legend.height()), Qt::AlignVCenter | Qt::AlignLeft, name);
        x += fm.horizontalAdvance(name) + 14;
    }
    // The overflow mark's key, in red.
    const QColor alarm = alarmColor(palette().color(QPalette::Window));
    const QRect box(x, y, swatch, swatch);
    painter.setPen(QPen(alarm, 1));
    painter.setBrush(QBrush(alarm, Qt::BDiagPattern));
    painter.drawRect(QRectF(box).adjusted(0.5, 0.5, -0.5, -0.5));
    x += swatch + 4;
    const QString over = tr("over budget");
    painter.setPen(text);
    painter.drawText(QRect(x, m_legend.top(), fm.horizontalAdvance(over) + 2, m_legend.height()), Qt::AlignVCenter | Qt::AlignLeft, over);
}

void DeviceColumnsWidget::paintColumn(QPainter &painter, int index, const QRect &exposed)
{
    const DeviceColumn &device = m_data.devices[index];
    const ColumnLayout &l = m_layout[index];
    const QPalette pal = palette();
    const QColor window = pal.color(QPalette::Window);
    const QColor text = pal.color(QPalette::WindowText);
    const QColor alarm = alarmColor(window);
    const QFontMetrics fm(font());
    const bool over = device.overflow() > 0;

    // Column card; the drop target of a drag is outlined in the highlight colour.
    const bool dropTarget = m_dragging && m_dropColumn == index;
    QColor card = pal.color(QPalette::AlternateBase);
    if (dropTarget) {
        card = pal.color(QPalette::Highlight);
        card.setAlpha(40);
    }
    painter.setPen(QPen(dropTarget ? pal.color(QPalette::Highlight) : (over ? alarm : pal.color(QPalette::Mid)), dropTarget || over ? 2 : 1));
    painter.setBrush(card);
    painter.drawRoundedRect(QRectF(l.column).adjusted(1, 1, -1, -1), 6, 6);

    // Title: name (bold), then subtitle and budget.
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.setPen(text);
    const QRect titleLine(l.title.left(), l.title.top(), l.title.width(), fm.height());
    painter.drawText(titleLine, Qt::AlignLeft | Qt::AlignVCenter, QFontMetrics(bold).elidedText(device.title, Qt::ElideRight, titleLine.width()));
    painter.setFont(font());
    QString sub = device.budget > 0 ? tr("budget %1").arg(formatBytes(device.budget)) : tr("no limit");
    if (!device.subtitle.isEmpty())
        sub = device.subtitle + QStringLiteral(" · ") + sub;
    painter.setPen(pal.color(QPalette::PlaceholderText));
    painter.drawText(titleLine.translated(0, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(sub, Qt::ElideRight, titleLine.width()));

    // The bar: segments bottom to top, labels inside when they fit.
    painter.save();
    QPainterPath clip;
    clip.addRoundedRect(QRectF(l.bar), 4, 4);
    painter.setClipPath(clip);
    painter.fillRect(l.bar, pal.color(QPalette::Base));
    for (MemoryKind kind : kAllKinds) {
        const QRect segment = l.segments[std::size_t(kind)];
        if (segment.isEmpty())
            continue;
        const QColor fill = kindColor(kind);
        painter.fillRect(segment, fill);
        if (segment.top() > l.bar.top()) {
            painter.setPen(QPen(pal.color(QPalette::Base), 1));
            painter.drawLine(segment.left(), segment.top(), segment.right(), segment.top());
        }
        const qint64 bytes = kind == MemoryKind::Free ? device.budget - device.used() : device.bytes[kind];
        const QString name = kindName(kind);
        const QString size = formatBytes(bytes);
        painter.setPen(kind == MemoryKind::Free ? pal.color(QPalette::PlaceholderText) : textColorOn(fill));
        const QRect inner = segment.adjusted(4, 1, -4, -1);
        if (inner.height() >= 2 * fm.height() && fm.horizontalAdvance(name) <= inner.width() && fm.horizontalAdvance(size) <= inner.width())
            painter.drawText(inner, Qt::AlignCenter, name + QLatin1Char('\n') + size);
        else if (inner.height() >= fm.height() && fm.horizontalAdvance(name + QLatin1Char(' ') + size) <= inner.width())
            painter.drawText(inner, Qt::AlignCenter, name + QLatin1Char(' ') + size);
        else if (inner.height() >= fm.height() && fm.horizontalAdvance(size) <= inner.width())
            painter.drawText(inner, Qt::AlignCenter, size);
    }
    if (device.budget <= 0 && device.used() == 0) {
        painter.setPen(pal.color(QPalette::PlaceholderText));
        painter.drawText(l.bar, Qt::AlignCenter, tr("empty\nno limit"));
    }
    if (!l.overflowMark.isEmpty()) {
        // Past the budget: red hatch over what does not fit, and its amount.
        QColor wash = alarm;
        wash.setAlpha(70);
        painter.fillRect(l.overflowMark, wash);
        painter.fillRect(l.overflowMark, QBrush(alarm, Qt::BDiagPattern));
        const QString label = tr("+%1 over").arg(formatBytes(device.overflow()));
        if (l.overflowMark.height() >= fm.height() + 2) {
            const QRect pill(l.overflowMark.center().x() - fm.horizontalAdvance(label) / 2 - 5, l.overflowMark.top() + (l.overflowMark.height() - fm.height() - 2) / 2,
                             fm.horizontalAdvance(label) + 10, fm.height() + 2);
            painter.setPen(Qt::NoPen);
            painter.setBrush(alarm);
            painter.drawRoundedRect(pill, 4, 4);
            painter.setPen(textColorOn(alarm));
            painter.drawText(pill, Qt::AlignCenter, label);
        }
    }
    painter.restore();
    painter.setBrush(Qt::NoBrush);
    painter.setPen(QPen(pal.color(QPalette::Mid), 1));
    painter.drawRoundedRect(QRectF(l.bar).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
    if (!l.overflowMark.isEmpty()) {
        // The budget line, with a marker on both sides so it reads even over dark segments.
        painter.setPen(QPen(alarm, 2));
        painter.drawLine(l.bar.left() - 4, l.budgetLineY, l.bar.right() + 4, l.budgetLineY);
        painter.setPen(QPen(alarm, 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRoundedRect(QRectF(l.bar).adjusted(1, 1, -1, -1), 4, 4);
    }

    // Verdict.
    painter.setFont(bold);
    painter.setPen(over ? alarm : okColor(window));
    painter.drawText(l.verdict, Qt::AlignLeft | Qt::AlignVCenter, QFontMetrics(bold).elidedText(verdictText(device), Qt::ElideRight, l.verdict.width()));
    painter.setFont(font());

    // Module list.
    painter.setPen(pal.color(QPalette::PlaceholderText));
    const QRect caption(l.list.left(), l.list.top(), l.list.width(), fm.height());
    painter.drawText(caption, Qt::AlignLeft | Qt::AlignVCenter,
                     device.modules.isEmpty()      ? tr("no modules")
                     : device.modules.size() == 1 ? tr("1 module block")
                                                  : tr("%1 module blocks").arg(device.modules.size()));
    const QColor blockFill = kindColor(MemoryKind::Weights);
    for (int b = 0; b < l.blocks.size(); ++b) {
        const DeviceModuleBlock &block = device.modules[b];
        const QRect r = l.blocks[b];
        if (!r.intersects(exposed))
            continue; // in a scroll area only the visible blocks are drawn
        const bool lifted = m_dragging && m_pressColumn == index && m_pressBlock == b;
        QColor fill = blockFill;
        fill.setAlpha(lifted ? 40 : 110);
        painter.setPen(QPen(blockFill, 1, lifted ? Qt::DashLine : Qt::SolidLine));
        painter.setBrush(fill);
        painter.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
        painter.setPen(text);
        const QString size = formatBytes(block.bytes);
        const int sizeWidth = fm.horizontalAdvance(size);
        const QRect inner = r.adjusted(6, 0, -6, 0);
        painter.drawText(inner, Qt::AlignRight | Qt::AlignVCenter, size);
        const QString label = block.label.isEmpty() ? block.module : block.label;
        painter.drawText(inner.adjusted(0, 0, -sizeWidth - 8, 0), Qt::AlignLeft | Qt::AlignVCenter,
                         fm.elidedText(label, elisionOf(label), inner.width() - sizeWidth - 8));
    }
}

void DeviceColumnsWidget::paintDragGhost(QPainter &painter)
{
    if (m_pressColumn < 0 || m_pressColumn >= m_data.devices.size() || m_pressBlock >= m_data.devices[m_pressColumn].modules.size())
        return;
    const DeviceModuleBlock &block = m_data.devices[m_pressColumn].modules[m_pressBlock];
    const QRect source = m_layout[m_pressColumn].blocks[m_pressBlock];
    const QRect ghost = source.translated(m_dragPos - m_pressPos);
    QColor fill = palette().color(QPalette::Highlight);
    fill.setAlpha(200);
    painter.setPen(QPen(palette().color(QPalette::Highlight), 1));
    painter.setBrush(fill);
    painter.drawRoundedRect(QRectF(ghost).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
    painter.setPen(palette().color(QPalette::HighlightedText));
    const QFontMetrics fm(font());
    const QString label = block.label.isEmpty() ? block.module : block.label;
    painter.drawText(ghost.adjusted(6, 0, -6, 0), Qt::AlignLeft | Qt::AlignVCenter,
                     fm.elidedText(label + QStringLiteral("  ") + formatBytes(block.bytes), Qt::ElideMiddle, ghost.width() - 12));
}

} // namespace ui
