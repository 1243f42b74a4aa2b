#include "ui/widgets/versiontimeline.h"

#include "ui/widgets/widgetstyle.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace ui {

namespace {

constexpr int kRulerHeight = 30;
constexpr double kMaxPxPerOp = 80.0;
constexpr double kMarkSize = 12.0;
constexpr double kHitRadius = 8.0;

/// A "nice" tick step (1, 2 or 5 × 10^k ops) at least `minOps` wide.
int tickStep(double minOps)
{
    double base = 1;
    while (true) {
        for (double m : {1.0, 2.0, 5.0})
            if (m * base >= minOps)
                return int(m * base);
        base *= 10;
        if (base > 1e9)
            return int(base);
    }
}

QString trackTitle(const VersionTrack &track)
{
    if (track.name.isEmpty())
        return track.shape;
    return track.name + QStringLiteral("  ") + track.shape;
}

QString trackSubtitle(const VersionTrack &track)
{
    QString text = track.dtype;
    if (!track.producer.isEmpty()) {
        const QString from = track.producerOp >= 0 ? QObject::tr("from %1 (op %2)").arg(track.producer).arg(track.producerOp)
                                                   : QObject::tr("from %1").arg(track.producer);
        text = text.isEmpty() ? from : text + QStringLiteral(" · ") + from;
    }
    return text;
}

} // namespace

VersionTimelineWidget::VersionTimelineWidget(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    fitAll();
}

void VersionTimelineWidget::setData(const VersionTimelineData &data)
{
    m_data = data;
    m_selectedOp = -1;
    m_rowOffset = 0;
    fitAll();
    updateGeometry();
}

void VersionTimelineWidget::setSelectedOp(int opIndex)
{
    m_selectedOp = opIndex;
    update();
}

int VersionTimelineWidget::labelWidth() const
{
    return std::clamp(width() * 3 / 10, 180, 320);
}

int VersionTimelineWidget::rowHeight() const
{
    return 2 * fontMetrics().height() + 16;
}

QRect VersionTimelineWidget::tracksArea() const
{
    const int left = labelWidth();
    return QRect(left, kRulerHeight, std::max(1, width() - left), std::max(1, height() - kRulerHeight));
}

double VersionTimelineWidget::minPxPerOp() const
{
    // Fitting everything, with half an op of room at both ends so the end marks are not clipped.
    return double(tracksArea().width()) / double(std::max(m_data.opCount, 1));
}

double VersionTimelineWidget::visibleLast() const
{
    return m_first + tracksArea().width() / m_pxPerOp;
}

double VersionTimelineWidget::xForOp(double op) const
{
    return tracksArea().left() + (op - m_first) * m_pxPerOp;
}

double VersionTimelineWidget::opAt(double x) const
{
    return m_first + (x - tracksArea().left()) / m_pxPerOp;
}

QRect VersionTimelineWidget::trackRect(int track) const
{
    const int h = rowHeight();
    return QRect(0, kRulerHeight + track * h - m_rowOffset, width(), h);
}

QPointF VersionTimelineWidget::markCenter(int track, int event) const
{
    if (track < 0 || track >= m_data.tracks.size() || event < 0 || event >= m_data.tracks[track].events.size())
        return {};
    const QRect row = trackRect(track);
    return {xForOp(m_data.tracks[track].events[event].opIndex), row.top() + row.height() * 0.5 + 4};
}

void VersionTimelineWidget::fitAll()
{
    m_fitted = true;
    m_pxPerOp = minPxPerOp();
    m_first = -0.5;
    update();
}

void VersionTimelineWidget::clampView()
{
    m_pxPerOp = std::clamp(m_pxPerOp, minPxPerOp(), std::max(kMaxPxPerOp, minPxPerOp()));
    const double visibleOps = tracksArea().width() / m_pxPerOp;
    const double lo = -0.5;
    const double hi = std::max(lo, double(std::max(m_data.opCount, 1)) - 0.5 - visibleOps);
    m_first = std::clamp(m_first, lo, hi);
    const int content = int(m_data.tracks.size()) * rowHeight();
    m_rowOffset = std::clamp(m_rowOffset, 0, std::max(0, content - tracksArea().height()));
}

void VersionTimelineWidget::setVisibleRange(double first, double last)
{
    if (last <= first)
        return;
    m_fitted = false;
    m_pxPerOp = tracksArea().width() / (last - first);
    m_first = first;
    clampView();
    update();
}

void VersionTimelineWidget::zoom(double factor, double anchorX)
{
    const double anchorOp = opAt(anchorX);
    m_fitted = false;
    m_pxPerOp *= factor;
    clampView();
    m_first = anchorOp - (anchorX - tracksArea().left()) / m_pxPerOp;
    clampView();
    update();
}

void VersionTimelineWidget::scrollRows(int dy)
{
    m_rowOffset += dy;
    clampView();
    update();
}

QSize VersionTimelineWidget::sizeHint() const
{
    return {900, kRulerHeight + std::max<int>(3, int(m_data.tracks.size())) * rowHeight() + 4};
}

QSize VersionTimelineWidget::minimumSizeHint() const
{
    return {400, kRulerHeight + rowHeight() * 2};
}

void VersionTimelineWidget::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    if (m_fitted) {
        m_pxPerOp = minPxPerOp();
        m_first = -0.5;
    }
    clampView();
}

VersionTimelineWidget::MarkRef VersionTimelineWidget::markAt(const QPointF &pos) const
{
    MarkRef best;
    if (!tracksArea().contains(pos.toPoint()))
        return best;
    double bestDistance = kHitRadius;
    for (int t = 0; t < m_data.tracks.size(); ++t) {
        const QRect row = trackRect(t);
        if (pos.y() < row.top() || pos.y() > row.bottom())
            continue;
        for (int e = 0; e < m_data.tracks[t].events.size(); ++e) {
            const QPointF d = markCenter(t, e) - pos;
            const double distance = std::hypot(d.x(), d.y());
            if (distance <= bestDistance) {
                bestDistance = distance;
                best = {t, e};
            }
        }
    }
    return best;
}

QColor VersionTimelineWidget::eventColor(const VersionEvent &event) const
{
    const QColor window = palette().color(QPalette::Window);
    if (event.conflict)
        return alarmColor(window);
    const bool dark = isDark(window);
    switch (event.kind) {
    case VersionEventKind::SavedForBackward: return dark ? QColor(0x6f, 0x9c, 0xd6) : QColor(0x3f, 0x6f, 0xb0);
    case VersionEventKind::InplaceWrite: return dark ? QColor(0xf5, 0xa2, 0x4b) : QColor(0xd9, 0x77, 0x06);
    case VersionEventKind::UsedInBackward: return dark ? QColor(0x6c, 0xc7, 0xbd) : QColor(0x2a, 0x9d, 0x8f);
    }
    return {};
}

QString VersionTimelineWidget::toolTipFor(const MarkRef &mark) const
{
    const VersionTrack &track = m_data.tracks[mark.track];
    const VersionEvent &event = track.events[mark.event];
    QStringList lines;
    switch (event.kind) {
    case VersionEventKind::SavedForBackward:
        lines << tr("Saved for backward by %1 (op %2) at version %3").arg(event.op).arg(event.opIndex).arg(event.version);
        break;
    case VersionEventKind::InplaceWrite:
        lines << tr("In-place write by %1 (op %2): now version %3").arg(event.op).arg(event.opIndex).arg(event.version);
        break;
    case VersionEventKind::UsedInBackward:
        lines << tr("Used in backward by %1 (op %2), expecting version %3").arg(event.op).arg(event.opIndex).arg(event.version);
        break;
    }
    if (!event.module.isEmpty())
        lines << tr("module: %1").arg(event.module);
    lines << tr("tensor: %1 %2").arg(trackTitle(track), track.dtype);
    if (!event.detail.isEmpty())
        lines << event.detail;
    if (event.conflict)
        lines << tr("Part of the conflict: this write changed a value saved for backward.");
    return lines.join(QLatin1Char('\n'));
}

bool VersionTimelineWidget::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        QString text;
        if (const MarkRef mark = markAt(help->pos()); mark.track >= 0) {
            text = toolTipFor(mark);
        } else if (help->pos().x() < labelWidth()) {
            for (int t = 0; t < m_data.tracks.size(); ++t)
                if (trackRect(t).contains(help->pos()) && help->pos().y() >= kRulerHeight)
                    text = trackTitle(m_data.tracks[t]) + QLatin1Char('\n') + trackSubtitle(m_data.tracks[t]);
        }
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

void VersionTimelineWidget::wheelEvent(QWheelEvent *event)
{
    const QPoint delta = event->angleDelta();
    if (event->modifiers() & Qt::ControlModifier) {
        const int dy = delta.y() != 0 ? delta.y() : delta.x();
        zoom(std::pow(1.0015, dy), event->position().x());
    } else if ((event->modifiers() & Qt::ShiftModifier) || delta.x() != 0) {
        const int d = delta.x() != 0 ? delta.x() : delta.y();
        m_fitted = false;
        m_first -= d / 2.0 / m_pxPerOp;
        clampView();
        update();
    } else {
        const int content = int(m_data.tracks.size()) * rowHeight();
        if (content > tracksArea().height()) {
            scrollRows(-delta.y() / 2);
        } else {
            m_fitted = false;
            m_first -= delta.y() / 2.0 / m_pxPerOp;
            clampView();
            update();
        }
    }
    event->accept();
}

void VersionTimelineWidget::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton) {
        QWidget::mousePressEvent(event);
        return;
    }
    m_pressPos = event->position();
    m_pressOnMark = markAt(m_pressPos).track >= 0;
    m_panning = !m_pressOnMark && tracksArea().contains(m_pressPos.toPoint());
    m_pressFirst = m_first;
    m_pressRowOffset = m_rowOffset;
    if (m_panning)
        setCursor(Qt::ClosedHandCursor);
    event->accept();
}

void VersionTimelineWidget::mouseMoveEvent(QMouseEvent *event)
{
    const QPointF pos = event->position();
    if (m_panning) {
        m_fitted = false;
        m_first = m_pressFirst - (pos.x() - m_pressPos.x()) / m_pxPerOp;
        m_rowOffset = m_pressRowOffset - int(pos.y() - m_pressPos.y());
        clampView();
        update();
        return;
    }
    if (markAt(pos).track >= 0)
        setCursor(Qt::PointingHandCursor);
    else
        unsetCursor();
}

void VersionTimelineWidget::mouseReleaseEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton) {
        QWidget::mouseReleaseEvent(event);
        return;
    }
    const bool wasPanning = m_panning;
    m_panning = false;
    unsetCursor();
    if (wasPanning || !m_pressOnMark)
        return;
    m_pressOnMark = false;
    const MarkRef mark = markAt(event->position());
    if (mark.track < 0)
        return;
    m_selectedOp = m_data.tracks[mark.track].events[mark.event].opIndex;
    update();
    Q_EMIT opSelected(m_selectedOp);
}

void VersionTimelineWidget::keyPressEvent(QKeyEvent *event)
{
    const double centre = tracksArea().center().x();
    const double panStep = tracksArea().width() / 8.0 / m_pxPerOp;
    switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom(1.25, centre); break;
    case Qt::Key_S:
    case Qt::Key_Minus: zoom(1 / 1.25, centre); break;
    case Qt::Key_A:
    case Qt::Key_Left:
        m_fitted = false;
        m_first -= panStep;
        clampView();
        update();
        break;
    case Qt::Key_D:
    case Qt::Key_Right:
        m_fitted = false;
        m_first += panStep;
        clampView();
        update();
        break;
    case Qt::Key_Home: fitAll(); break;
    default: QWidget::keyPressEvent(event); return;
    }
    event->accept();
}

void VersionTimelineWidget::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    painter.setRenderHint(QPainter::Antialiasing, true);

    const QRect area = tracksArea();
    // Backward pass: a shaded band behind the tracks.
    if (m_data.backwardStart >= 0) {
        const double x0 = std::max<double>(area.left(), xForOp(m_data.backwardStart - 0.5));
        if (x0 < area.right()) {
            QColor shade = palette().color(QPalette::Mid);
            shade.setAlpha(35);
            painter.fillRect(QRectF(x0, area.top(), area.right() - x0 + 1, area.height()), shade);
        }
    }
    for (int t = 0; t < m_data.tracks.size(); ++t) {
        const QRect row = trackRect(t);
        if (row.bottom() < kRulerHeight || row.top() > height())
            continue;
        paintTrack(painter, t);
    }
    if (m_selectedOp >= 0) {
        const double x = xForOp(m_selectedOp);
        if (x >= area.left() && x <= area.right()) {
            painter.setPen(QPen(palette().color(QPalette::Highlight), 1.5));
            painter.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
        }
    }
    paintRuler(painter);
    if (m_data.tracks.isEmpty()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(area, Qt::AlignCenter, tr("No tensor versions recorded."));
    }
}

void VersionTimelineWidget::paintRuler(QPainter &painter)
{
    const QPalette pal = palette();
    const QRect ruler(0, 0, width(), kRulerHeight);
    painter.fillRect(ruler, pal.color(QPalette::Window));
    painter.setPen(QPen(pal.color(QPalette::Mid), 1));
    painter.drawLine(0, kRulerHeight - 1, width(), kRulerHeight - 1);

    // Legend in the corner above the labels.
    const QFontMetrics fm = fontMetrics();
    double x = 8;
    const double cy = kRulerHeight / 2.0;
    const std::array<std::pair<VersionEventKind, QString>, 3> keys{{{VersionEventKind::SavedForBackward, tr("saved")},
                                                                   {VersionEventKind::InplaceWrite, tr("write")},
                                                                   {VersionEventKind::UsedInBackward, tr("backward use")}}};
    for (const auto &[kind, name] : keys) {
        VersionEvent sample;
        sample.kind = kind;
        paintMark(painter, sample, QPointF(x + kMarkSize / 2, cy), false);
        x += kMarkSize + 4;
        painter.setPen(pal.color(QPalette::WindowText));
        painter.drawText(QPointF(x, cy + fm.ascent() / 2.0 - 1), name);
        x += fm.horizontalAdvance(name) + 10;
    }

    const QRect area = tracksArea();
    painter.save();
    painter.setClipRect(QRect(area.left(), 0, area.width(), kRulerHeight));
    const int step = tickStep(70.0 / m_pxPerOp);
    const int firstTick = int(std::ceil(std::max(0.0, m_first) / step)) * step;
    painter.setPen(pal.color(QPalette::WindowText));
    for (int op = firstTick; op < m_data.opCount && op <= visibleLast(); op += step) {
        const double tx = xForOp(op);
        painter.setPen(QPen(pal.color(QPalette::Mid), 1));
        painter.drawLine(QPointF(tx, kRulerHeight - 7), QPointF(tx, kRulerHeight - 1));
        painter.setPen(pal.color(QPalette::WindowText));
        painter.drawText(QPointF(tx + 3, kRulerHeight - 9), QString::number(op));
    }
    if (m_data.backwardStart >= 0) {
        const double bx = xForOp(m_data.backwardStart - 0.5);
        if (bx >= area.left() && bx <= area.right()) {
            painter.setPen(QPen(pal.color(QPalette::PlaceholderText), 1, Qt::DashLine));
            painter.drawLine(QPointF(bx, 0), QPointF(bx, kRulerHeight));
        }
        QFont italic = font();
        italic.setItalic(true);
        painter.setFont(italic);
        painter.setPen(pal.color(QPalette::PlaceholderText));
        const double labelX = std::max<double>(bx + 4, area.left() + 4);
        if (labelX < area.right() - 60)
            painter.drawText(QPointF(labelX, fm.ascent() + 2), tr("backward"));
        if (bx > area.left() + 60)
            painter.drawText(QPointF(std::max<double>(area.left(), xForOp(-0.5)) + 4, fm.ascent() + 2), tr("forward"));
        painter.setFont(font());
    }
    painter.restore();
    painter.setPen(QPen(pal.color(QPalette::Mid), 1));
    painter.drawLine(area.left(), 0, area.left(), height());
}

void VersionTimelineWidget::paintTrack(QPainter &painter, int t)
{
    const VersionTrack &track = m_data.tracks[t];
    const QPalette pal = palette();
    const QRect row = trackRect(t);
    const QRect area = tracksArea();
    const QFontMetrics fm = fontMetrics();
    const bool conflicted = std::any_of(track.events.begin(), track.events.end(), [](const VersionEvent &e) { return e.conflict; });
    const QColor alarm = alarmColor(pal.color(QPalette::Window));

    painter.save();
    painter.setClipRect(QRect(0, kRulerHeight, width(), height() - kRulerHeight));
    // Label column.
    QRect label(0, row.top(), area.left(), row.height());
    painter.fillRect(label, pal.color(QPalette::Window));
    if (conflicted)
        painter.fillRect(QRect(0, row.top(), 3, row.height()), alarm);
    QFont bold = font();
    bold.setBold(true);
    painter.setFont(bold);
    painter.setPen(conflicted ? alarm : pal.color(QPalette::WindowText));
    const QRect textRect = label.adjusted(10, 6, -8, -6);
    painter.drawText(QRect(textRect.left(), textRect.top(), textRect.width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                     QFontMetrics(bold).elidedText(trackTitle(track), Qt::ElideRight, textRect.width()));
    painter.setFont(font());
    painter.setPen(pal.color(QPalette::PlaceholderText));
    painter.drawText(QRect(textRect.left(), textRect.top() + fm.height() + 2, textRect.width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                     fm.elidedText(trackSubtitle(track), Qt::ElideRight, textRect.width()));
    painter.setPen(QPen(pal.color(QPalette::Midlight), 1));
    painter.drawLine(0, row.bottom(), width(), row.bottom());

    // Track area.
    painter.setClipRect(area);
    if (conflicted) {
        QColor tint = alarm;
        tint.setAlpha(22);
        painter.fillRect(QRect(area.left(), row.top(), area.width(), row.height() - 1), tint);
    }
    const double cy = row.top() + row.height() * 0.5 + 4;
    int lastOp = track.producerOp >= 0 ? track.producerOp : 0;
    for (const VersionEvent &e : track.events)
        lastOp = std::max(lastOp, e.opIndex);
    const double start = xForOp(track.producerOp >= 0 ? track.producerOp : -0.5);
    const double end = xForOp(lastOp);

    // Lifetime with version bands: v0 from the producer to the first write, v1 to the next, ...
    QList<const VersionEvent *> writes;
    for (const VersionEvent &e : track.events)
        if (e.kind == VersionEventKind::InplaceWrite)
            writes.append(&e);
    std::sort(writes.begin(), writes.end(), [](const VersionEvent *a, const VersionEvent *b) { return a->opIndex < b->opIndex; });
    double bandStart = start;
    int version = writes.isEmpty() ? 0 : std::max(0, writes.front()->version - 1);
    QColor band = pal.color(QPalette::Mid);
    for (int i = 0; i <= writes.size(); ++i) {
        const double bandEnd = i < writes.size() ? xForOp(writes[i]->opIndex) : std::max(end, bandStart);
        QColor fill = band;
        fill.setAlpha(i % 2 == 0 ? 70 : 120);
        painter.setPen(Qt::NoPen);
        painter.setBrush(fill);
        painter.drawRect(QRectF(bandStart, cy - 4, std::max(1.0, bandEnd - bandStart), 8));
        const QString text = QStringLiteral("v%1").arg(version);
        if (bandEnd - bandStart > fm.horizontalAdvance(text) + 20) {
            painter.setPen(pal.color(QPalette::PlaceholderText));
            painter.drawText(QPointF((bandStart + bandEnd) / 2 - fm.horizontalAdvance(text) / 2.0, cy + 6 + fm.ascent()), text);
        }
        if (i < writes.size()) {
            version = writes[i]->version;
            bandStart = bandEnd;
        }
    }

    paintConflictLinks(painter, t);

    // Marks, then short labels above them: the conflict's labels first, the others where they do not
    // collide with a label already placed; labels stay inside the track area.
    for (const VersionEvent &event : track.events) {
        const QPointF c(xForOp(event.opIndex), cy);
        if (c.x() >= area.left() - kMarkSize && c.x() <= area.right() + kMarkSize)
            paintMark(painter, event, c, event.opIndex == m_selectedOp);
    }
    QList<int> order(track.events.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (track.events[a].conflict != track.events[b].conflict)
            return track.events[a].conflict;
        return track.events[a].opIndex < track.events[b].opIndex;
    });
    QList<QRectF> placed;
    for (int e : order) {
        const VersionEvent &event = track.events[e];
        const double x = xForOp(event.opIndex);
        if (x < area.left() || x > area.right())
            continue;
        QString text;
        switch (event.kind) {
        case VersionEventKind::SavedForBackward: text = tr("saved v%1").arg(event.version); break;
        case VersionEventKind::InplaceWrite: text = QStringLiteral("%1 → v%2").arg(event.op).arg(event.version); break;
        case VersionEventKind::UsedInBackward: text = tr("needs v%1").arg(event.version); break;
        }
        const double w = fm.horizontalAdvance(text);
        const double tx = std::clamp(x - w / 2.0, double(area.left()) + 2, double(area.right()) - w - 2);
        const QRectF box(tx - 3, cy - kMarkSize / 2 - 4 - fm.ascent(), w + 6, fm.height());
        if (std::any_of(placed.begin(), placed.end(), [&](const QRectF &r) { return r.intersects(box); }))
            continue;
        placed.append(box);
        painter.setPen(event.conflict ? alarm : pal.color(QPalette::Text));
        painter.drawText(QPointF(tx, cy - kMarkSize / 2 - 4), text);
    }
    painter.restore();
}

void VersionTimelineWidget::paintConflictLinks(QPainter &painter, int t)
{
    // Join the conflict's marks in op order: saved → overwritten → backward needs the old version.
    const VersionTrack &track = m_data.tracks[t];
    QList<const VersionEvent *> chain;
    for (const VersionEvent &e : track.events)
        if (e.conflict)
            chain.append(&e);
    if (chain.size() < 2)
        return;
    std::sort(chain.begin(), chain.end(), [](const VersionEvent *a, const VersionEvent *b) { return a->opIndex < b->opIndex; });
    const QRect row = trackRect(t);
    const double cy = row.top() + row.height() * 0.5 + 4;
    const QColor alarm = alarmColor(palette().color(QPalette::Window));
    for (int i = 0; i + 1 < chain.size(); ++i) {
        const double x0 = xForOp(chain[i]->opIndex);
        const double x1 = xForOp(chain[i + 1]->opIndex);
        QPainterPath path(QPointF(x0, cy + kMarkSize / 2));
        const double dip = std::min(row.height() * 0.5 - kMarkSize / 2 - 2, 6 + (x1 - x0) * 0.08);
        path.cubicTo(QPointF(x0, cy + kMarkSize / 2 + dip), QPointF(x1, cy + kMarkSize / 2 + dip), QPointF(x1, cy + kMarkSize / 2));
        const bool toUse = chain[i + 1]->kind == VersionEventKind::UsedInBackward;
        painter.setPen(QPen(alarm, 1.6, toUse ? Qt::DashLine : Qt::SolidLine));
        painter.setBrush(Qt::NoBrush);
        painter.drawPath(path);
    }
}

void VersionTimelineWidget::paintMark(QPainter &painter, const VersionEvent &event, const QPointF &c, bool selected)
{
    const QColor fill = eventColor(event);
    const double r = kMarkSize / 2;
    QPen pen(selected ? palette().color(QPalette::Highlight) : fill.darker(140), selected ? 2.5 : 1.2);
    painter.setPen(pen);
    painter.setBrush(fill);
    switch (event.kind) {
    case VersionEventKind::SavedForBackward: painter.drawEllipse(c, r, r); break;
    case VersionEventKind::InplaceWrite: {
        const QPointF diamond[4] = {{c.x(), c.y() - r - 1}, {c.x() + r + 1, c.y()}, {c.x(), c.y() + r + 1}, {c.x() - r - 1, c.y()}};
        painter.drawPolygon(diamond, 4);
        break;
    }
    case VersionEventKind::UsedInBackward: painter.drawRect(QRectF(c.x() - r + 1, c.y() - r + 1, 2 * r - 2, 2 * r - 2)); break;
    }
    if (event.conflict) {
        painter.setBrush(Qt::NoBrush);
        painter.setPen(QPen(fill, 1.2));
        painter.drawEllipse(c, r + 4, r + 4);
    }
}

} // namespace ui
