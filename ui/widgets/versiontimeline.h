#pragma once
// The Inspect page's version timeline, drawn like a Perfetto track view: one row per tensor storage
// (label: shape, dtype, the op that produced it), x = op index in the recorded trace. Marks show when
// a tensor was saved for backward (by which op, at which version), written in place (op, module, new
// version) and used in backward; the conflicting save and write (and the use that fails) are drawn in
// red and joined. Ctrl+wheel zooms around the cursor, wheel/Shift+wheel and dragging pan, Home fits
// everything; clicking a mark selects its op (opSelected).
//
// How to use:
//   ui::VersionTimelineData data;
//   data.opCount = 120;
//   data.backwardStart = 80;
//   ui::VersionTrack cache;
//   cache.name = "k_cache"; cache.shape = "[1, 32, 64, 128]"; cache.dtype = "float16";
//   cache.producer = "aten::zeros"; cache.producerOp = 3;
//   cache.events = {{ui::VersionEventKind::SavedForBackward, 41, "aten::bmm", "model.layers.0.self_attn", 0, true, {}},
//                   {ui::VersionEventKind::InplaceWrite, 57, "aten::copy_", "model.layers.0.self_attn", 1, true, {}}};
//   data.tracks = {cache};
//   timeline->setData(data);
//   connect(timeline, &ui::VersionTimelineWidget::opSelected, page, &Page::showOp);

#include <QList>
#include <QString>
#include <QVector>
#include <QWidget>

namespace ui {

/// What happened to a tensor at one op.
enum class VersionEventKind {
    SavedForBackward, ///< an op saved it for its backward (at `version`)
    InplaceWrite,     ///< an op wrote it in place (bumping it to `version`)
    UsedInBackward,   ///< a backward node unpacked it (expecting `version`)
};

/// One mark on a track.
struct VersionEvent {
    VersionEventKind kind = VersionEventKind::SavedForBackward;
    int opIndex = 0;      ///< x: the op's index in the trace
    QString op;           ///< "aten::bmm", "aten::copy_", "BmmBackward0"
    QString module;       ///< module path of the op ("model.layers.0.self_attn"), may be empty
    int version = 0;      ///< saved: version saved; write: new version; use: version expected
    bool conflict = false; ///< part of the conflict: drawn in red and joined to the other conflict marks
    QString detail;       ///< extra tooltip text, optional
};

/// One row: a tensor storage and its events.
struct VersionTrack {
    QString name;         ///< "k_cache", "attn_weights" (optional; shown before the shape)
    QString shape;        ///< "[1, 32, 64, 128]"
    QString dtype;        ///< "float16"
    QString producer;     ///< the op that produced it ("aten::cat"); empty for inputs and parameters
    int producerOp = -1;  ///< its op index; -1 = alive from the start
    QList<VersionEvent> events;
};

/// What the widget shows.
struct VersionTimelineData {
    int opCount = 0;       ///< ops in the trace (x runs over [0, opCount))
    int backwardStart = -1; ///< first op index of the backward pass (shaded); -1 = none recorded
    QList<VersionTrack> tracks;
};

/// The version timeline (see the top of this file).
class VersionTimelineWidget : public QWidget {
    Q_OBJECT

public:
    explicit VersionTimelineWidget(QWidget *parent = nullptr);

    /// Replaces what is shown and fits the whole trace into view. Clears the selection.
    void setData(const VersionTimelineData &data);
    const VersionTimelineData &data() const { return m_data; }

    /// Marks `opIndex` as selected (a vertical line) without emitting opSelected; -1 = none.
    void setSelectedOp(int opIndex);
    int selectedOp() const { return m_selectedOp; }

    /// Shows ops [first, last] (fractions allowed); clamped to the trace and to the zoom limits.
    void setVisibleRange(double first, double last);
    /// The op coordinate at the left edge of the tracks.
    double visibleFirst() const { return m_first; }
    /// The op coordinate at the right edge of the tracks.
    double visibleLast() const;
    /// Zooms by `factor` (> 1 = in) keeping the op under x = `anchorX` in place.
    void zoom(double factor, double anchorX);
    /// Shows the whole trace.
    void fitAll();

    // Geometry, in widget coordinates (for tests and overlays).
    /// x of op coordinate `op`.
    double xForOp(double op) const;
    /// Op coordinate at x.
    double opAt(double x) const;
    /// The row of track `track` (label and events).
    QRect trackRect(int track) const;
    /// Centre of mark `event` of track `track`.
    QPointF markCenter(int track, int event) const;
    /// The area where tracks are drawn (right of the labels, below the ruler).
    QRect tracksArea() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    /// The user clicked a mark of op `opIndex`.
    void opSelected(int opIndex);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    bool event(QEvent *event) override;

private:
    struct MarkRef {
        int track = -1;
        int event = -1;
    };

    int labelWidth() const;
    int rowHeight() const;
    double minPxPerOp() const;
    void clampView();
    void scrollRows(int dy);
    MarkRef markAt(const QPointF &pos) const;
    QString toolTipFor(const MarkRef &mark) const;
    QColor eventColor(const VersionEvent &event) const;
    void paintRuler(QPainter &painter);
    void paintTrack(QPainter &painter, int track);
    void paintMark(QPainter &painter, const VersionEvent &event, const QPointF &center, bool selected);
    void paintConflictLinks(QPainter &painter, int track);

    VersionTimelineData m_data;
    double m_first = -0.5;   ///< op coordinate at the tracks' left edge
    double m_pxPerOp = 1.0;  ///< zoom
    bool m_fitted = true;    ///< follow resizes by fitting again
    int m_rowOffset = 0;     ///< vertical scroll in pixels
    int m_selectedOp = -1;

    bool m_panning = false;
    bool m_pressOnMark = false;
    QPointF m_pressPos;
    double m_pressFirst = 0;
    int m_pressRowOffset = 0;
};

} // namespace ui
