#pragma once
// The Plan page's device columns: one column per device (GPU 0, GPU 1, cpu, disk), each with its
// title and budget, a stacked memory bar (weights / gradients / optimizer / activations / overhead /
// free, proportional to bytes, labels inside when they fit, a red overflow mark past the budget), a
// verdict line, and the module blocks placed on the device. Dragging a block onto another column asks
// for the move (moduleMoveRequested); the widget never moves blocks itself: the page re-plans and
// calls setData() again. Everything is painted in one paintEvent, so setData() is cheap.
//
// How to use:
//   ui::DeviceColumnsData data;
//   ui::DeviceColumn gpu;
//   gpu.id = "0"; gpu.title = "GPU 0"; gpu.subtitle = "Tesla T4"; gpu.budget = 15 * GiB;
//   gpu.bytes[ui::MemoryKind::Weights] = 11 * GiB;
//   gpu.modules.append({"model.layers.0", "model.layers.0..13", 5 * GiB, "14 decoder layers"});
//   data.devices = {gpu, cpu, disk};
//   columns->setData(data);
//   connect(columns, &ui::DeviceColumnsWidget::moduleMoveRequested, page, &Page::moveModule);

#include <QList>
#include <QRect>
#include <QString>
#include <QVector>
#include <QWidget>

#include <array>

namespace ui {

/// The kinds of memory a bar shows, bottom to top; Free is what is left of the budget.
enum class MemoryKind { Weights = 0, Gradients, Optimizer, Activations, Overhead, Free };
/// Number of kinds that are used memory (all but Free).
inline constexpr int kUsedMemoryKinds = 5;

/// Bytes per used kind (index with MemoryKind; Free is computed from the budget).
struct MemoryBreakdown {
    std::array<qint64, kUsedMemoryKinds> values{};

    qint64 &operator[](MemoryKind kind) { return values[std::size_t(kind)]; }
    qint64 operator[](MemoryKind kind) const { return values[std::size_t(kind)]; }
    /// Sum of the used kinds.
    qint64 total() const;
};

/// One block in a column's module list: a module, or a collapsed range of layers.
struct DeviceModuleBlock {
    QString module;  ///< what moduleMoveRequested names: "model.layers.0" (for a range: its first module)
    QString label;   ///< what is shown: "model.layers.0..13"; empty = module
    qint64 bytes = 0; ///< size of the block on this device
    QString detail;  ///< extra tooltip line ("14 decoder layers"), optional
};

/// One device column.
struct DeviceColumn {
    QString id;       ///< what moduleMoveRequested names as the target: "0", "cuda:1", "cpu", "disk"
    QString title;    ///< "GPU 0"
    QString subtitle; ///< "Tesla T4" (optional)
    qint64 budget = 0; ///< bytes the plan may use; <= 0 = unlimited (no free segment, never overflows)
    MemoryBreakdown bytes;
    QList<DeviceModuleBlock> modules;

    /// Used bytes (all kinds but Free).
    qint64 used() const { return bytes.total(); }
    /// Used minus budget when over budget, else 0.
    qint64 overflow() const;
};

/// What the widget shows.
struct DeviceColumnsData {
    QList<DeviceColumn> devices;
};

/// Labels the blocks that have none by their module name without the dotted prefix every nested block
/// shares ("model.layers.12" -> "layers.12", "transformer.h.3" -> "h.3"; a top-level "lm_head" stays):
/// a narrow column then shows the part that tells blocks apart. Names stay whole when shortening would
/// make two labels equal.
void labelBlocksWithoutSharedPrefix(DeviceColumnsData &data);

/// The device columns (see the top of this file).
class DeviceColumnsWidget : public QWidget {
    Q_OBJECT

public:
    explicit DeviceColumnsWidget(QWidget *parent = nullptr);

    /// Replaces what is shown. Cheap (no child widgets): lays out rectangles and schedules a repaint.
    void setData(const DeviceColumnsData &data);
    const DeviceColumnsData &data() const { return m_data; }

    /// The colour of a memory kind for the current palette.
    QColor kindColor(MemoryKind kind) const;
    /// Display name of a kind ("weights", ..., "free").
    static QString kindName(MemoryKind kind);
    /// "fits (3.2 GiB free)" / "does not fit by 1.3 GiB" / "unlimited" for a column.
    static QString verdictText(const DeviceColumn &column);

    // Geometry, in widget coordinates (for tests and for the page's own overlays).
    /// The whole column of device `index`.
    QRect columnRect(int index) const;
    /// The full bar (all segments) of device `index`.
    QRect barRect(int index) const;
    /// One segment of device `index`'s bar (empty when the kind has no bytes).
    QRect segmentRect(int index, MemoryKind kind) const;
    /// The block `block` of device `index`'s module list.
    QRect blockRect(int index, int block) const;
    /// Whether device `index` draws its overflow mark (used > budget).
    bool overflowMarked(int index) const;
    /// The device column under `pos`, or -1.
    int columnAt(const QPoint &pos) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    /// The user dropped the block of `module` onto the column of device `toDevice` (its id).
    void moduleMoveRequested(const QString &module, const QString &toDevice);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    bool event(QEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    struct ColumnLayout {
        QRect column, title, bar, verdict, list;
        std::array<QRect, kUsedMemoryKinds + 1> segments{}; ///< per MemoryKind, Free last
        QRect overflowMark;                                  ///< above the budget line; empty when none
        int budgetLineY = -1;                                ///< y of the budget inside the bar; -1 = none
        QVector<QRect> blocks;
    };
    struct Hit {
        int column = -1;
        int block = -1;                       ///< >= 0: a module block
        int segment = -1;                     ///< >= 0: a MemoryKind segment
        bool overflow = false;                ///< the overflow mark
    };

    void relayout();
    Hit hitTest(const QPoint &pos) const;
    QString toolTipFor(const Hit &hit) const;
    void cancelDrag();
    void paintLegend(QPainter &painter);
    void paintColumn(QPainter &painter, int index, const QRect &exposed);
    void paintDragGhost(QPainter &painter);

    DeviceColumnsData m_data;
    QVector<ColumnLayout> m_layout;
    QRect m_legend;
    int m_listRowHeight = 22;

    // Drag state: pressed on a block, then moved past the drag distance.
    int m_pressColumn = -1;
    int m_pressBlock = -1;
    QPoint m_pressPos;
    QPoint m_dragPos;
    bool m_dragging = false;
    int m_dropColumn = -1;
};

} // namespace ui
