#include "ui/widgets/curveraster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ui {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// How far outside the image a coordinate may lie before it is clamped: far enough that no line
/// crossing the image moves by a visible amount, near enough that nothing overflows.
constexpr double kFar = 1e6;

/// floor() for the clamped coordinates (|v| <= kFar + the image): std::floor is a library call on
/// baseline x86-64, and this runs for every point.
inline int floorToInt(double v)
{
    const int truncated = int(v);
    return truncated - (v < truncated ? 1 : 0);
}

/// Each channel of the premultiplied pixel `x` times a / 255, rounded (a in 0..255).
inline quint32 byteMul(quint32 x, quint32 a)
{
    quint32 t = (x & 0xff00ffu) * a;
    t = ((t + ((t >> 8) & 0xff00ffu) + 0x800080u) >> 8) & 0xff00ffu;
    x = ((x >> 8) & 0xff00ffu) * a;
    x = (x + ((x >> 8) & 0xff00ffu) + 0x800080u) & 0xff00ff00u;
    return x | t;
}

/// The y range of the line in each pixel column, [lo, hi]; empty while lo > hi.
class ColumnSpans {
public:
    explicit ColumnSpans(int width) : m_lo(size_t(width), kInf), m_hi(size_t(width), -kInf), m_width(width) {}

    int width() const { return m_width; }
    bool empty(int c) const { return m_lo[size_t(c)] > m_hi[size_t(c)]; }
    double lo(int c) const { return m_lo[size_t(c)]; }
    double hi(int c) const { return m_hi[size_t(c)]; }
    void clear(int c)
    {
        m_lo[size_t(c)] = kInf;
        m_hi[size_t(c)] = -kInf;
    }
    void add(int c, double a, double b)
    {
        // Written so that the compiler emits minsd/maxsd: noisy data makes every branch a coin toss.
        const double low = a < b ? a : b;
        const double high = a < b ? b : a;
        double &lo = m_lo[size_t(c)];
        double &hi = m_hi[size_t(c)];
        lo = low < lo ? low : lo;
        hi = high > hi ? high : hi;
    }

    /// The segment p-q (clamped coordinates) in every column it crosses. (rasterizeCurve keeps segments
    /// within one column, and those into the next, to itself: these cross several, or go back.)
    void addSegment(QPointF p, QPointF q)
    {
        if (q.x() < p.x())
            std::swap(p, q);
        const double x0 = p.x(), x1 = q.x();
        if (x1 < 0 || x0 >= m_width)
            return;
        const int firstColumn = floorToInt(x0);
        const int lastColumn = floorToInt(x1);
        if (firstColumn == lastColumn) { // within one column
            add(firstColumn, p.y(), q.y());
            return;
        }
        // Straight, so over x in [c, c+1) its ends there bound it.
        const double slope = (q.y() - p.y()) / (x1 - x0);
        const int first = std::max(0, firstColumn);
        const int last = std::min(m_width - 1, lastColumn);
        double enter = p.y() + slope * (std::max(x0, double(first)) - x0);
        for (int c = first; c <= last; ++c) {
            const double leave = x1 < c + 1 ? q.y() : p.y() + slope * (c + 1 - x0);
            add(c, enter, leave);
            enter = leave;
        }
    }

private:
    std::vector<double> m_lo, m_hi;
    int m_width;
};

/// Leaves out the columns that fall in the dashes' gaps, measuring the line's length column by column
/// (a column's share: its step across and the rise within it or from the column before).
void applyDashes(ColumnSpans &spans, const QVector<double> &dashes)
{
    double period = 0;
    for (const double length : dashes)
        period += std::max(0.0, length);
    if (dashes.size() < 2 || !(period > 0))
        return;
    double along = 0;
    double previousMid = std::numeric_limits<double>::quiet_NaN();
    for (int c = 0; c < spans.width(); ++c) {
        if (spans.empty(c)) {
            previousMid = std::numeric_limits<double>::quiet_NaN();
            continue;
        }
        const double mid = (spans.lo(c) + spans.hi(c)) / 2;
        const double rise = std::max(spans.hi(c) - spans.lo(c), std::isnan(previousMid) ? 0.0 : std::abs(mid - previousMid));
        const double length = std::hypot(1.0, std::min(rise, 4.0 * kFar));
        double phase = std::fmod(along + length / 2, period);
        bool on = true;
        for (const double dash : dashes) {
            if (phase < dash)
                break;
            phase -= std::max(0.0, dash);
            on = !on;
        }
        along = std::fmod(along + length, period);
        previousMid = mid;
        if (!on)
            spans.clear(c);
    }
}

} // namespace

void rasterizeCurve(QImage &image, const QVector<QPointF> &points, const CurvePen &pen)
{
    const int width = image.width();
    const int height = image.height();
    if (width <= 0 || height <= 0 || points.isEmpty() || pen.color.alpha() == 0
        || image.format() != QImage::Format_ARGB32_Premultiplied)
        return;

    const auto finite = [](const QPointF &p) { return std::isfinite(p.x()) && std::isfinite(p.y()); };
    const auto clamped = [&](const QPointF &p) {
        return QPointF(std::clamp(p.x(), -kFar, width + kFar), std::clamp(p.y(), -kFar, height + kFar));
    };
    ColumnSpans spans(width);
    // One pass: each finite point joins the one before it when that one is finite too; a run of one
    // finite point between gaps is a dot. Most segments of a dense curve stay inside one pixel column:
    // those only widen the extent of the column the line is in (`column`, [lo, hi]), which goes into
    // `spans` when the line leaves it.
    QPointF previous;
    bool joined = false; // the previous point was finite
    int column = 0;
    double lo = kInf, hi = -kInf;
    const auto widen = [&](double y) {
        lo = y < lo ? y : lo; // selects (minsd/maxsd), not branches
        hi = y > hi ? y : hi;
    };
    const auto leaveColumn = [&] {
        if (lo <= hi && column >= 0 && column < width)
            spans.add(column, lo, hi);
        lo = kInf;
        hi = -kInf;
    };
    for (const QPointF &point : points) {
        if (!finite(point)) {
            leaveColumn();
            joined = false;
            continue;
        }
        const QPointF current = clamped(point);
        const int c = floorToInt(current.x());
        if (joined && c == column + 1) {
            // Into the next column (the usual way out of one): the line crosses x = c at `edge`, in both.
            const double slope = (current.y() - previous.y()) / (current.x() - previous.x());
            const double edge = previous.y() + slope * (c - previous.x());
            widen(edge);
            leaveColumn();
            column = c;
            widen(edge);
        } else if (!joined || c != column) {
            leaveColumn();
            if (joined)
                spans.addSegment(previous, current); // across several columns, or back
            column = c;
        }
        widen(current.y());
        previous = current;
        joined = true;
    }
    leaveColumn();
    applyDashes(spans, pen.dashes);

    // A pen of w device pixels: each column's rows widened by w - 1, and w columns wide (the union of
    // the spans around it, so a translucent pixel is still blended once).
    const int penWidth = std::max(1, pen.width);
    const int before = (penWidth - 1) / 2;
    const int after = penWidth - 1 - before;
    const quint32 source = qPremultiply(pen.color.rgba());
    const quint32 keep = 255u - qAlpha(source);
    uchar *bits = image.bits();
    const qsizetype stride = image.bytesPerLine();
    for (int c = 0; c < width; ++c) {
        double lo = kInf, hi = -kInf;
        for (int k = std::max(0, c - after); k <= std::min(width - 1, c + before); ++k) {
            if (!spans.empty(k)) {
                lo = std::min(lo, spans.lo(k));
                hi = std::max(hi, spans.hi(k));
            }
        }
        if (lo > hi)
            continue;
        const int top = std::max(0, floorToInt(lo) - before);
        const int bottom = std::min(height - 1, floorToInt(hi) + after);
        uchar *pixel = bits + top * stride + c * qsizetype(sizeof(quint32));
        const uchar *const stop = bits + bottom * stride + c * qsizetype(sizeof(quint32));
        if (keep == 0) {
            for (; pixel <= stop; pixel += stride)
                *reinterpret_cast<quint32 *>(pixel) = source;
        } else {
            for (; pixel <= stop; pixel += stride)
                *reinterpret_cast<quint32 *>(pixel) = source + byteMul(*reinterpret_cast<quint32 *>(pixel), keep);
        }
    }
}

} // namespace ui
